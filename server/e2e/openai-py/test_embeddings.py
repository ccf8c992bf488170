"""Embeddings through the official openai SDK and langchain-openai."""
import math

import openai
from langchain_openai import OpenAIEmbeddings


def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_embeddings_create_list_dimensions_base64(client):
    # The SDK asks for base64 by default and decodes it itself.
    res = client.embeddings.create(model="sim-embed", input=["the white rabbit", "a white rabbit ran", "quarterly revenue"])
    assert [d.index for d in res.data] == [0, 1, 2]
    v = [d.embedding for d in res.data]
    assert len(v[0]) == 512
    assert abs(cos(v[0], v[0]) - 1) < 1e-5
    assert cos(v[0], v[1]) > cos(v[0], v[2])
    assert res.usage.prompt_tokens > 0 and res.usage.total_tokens == res.usage.prompt_tokens

    short = client.embeddings.create(model="sim-embed", input="the white rabbit", dimensions=64, encoding_format="float")
    assert len(short.data[0].embedding) == 64


def test_embeddings_errors(client):
    try:
        client.embeddings.create(model="sim-small", input="x")
        raise AssertionError("a chat model embedded")
    except openai.BadRequestError as e:
        assert e.body["param"] == "model"
    try:
        client.embeddings.create(model="nope", input="x")
        raise AssertionError("an unknown model embedded")
    except openai.NotFoundError:
        pass


def test_langchain_openai_embeddings(base_url, key):
    # check_embedding_ctx_length=False sends text: by default LangChain sends
    # token ids of its own tokenizer, which Parley refuses by name.
    emb = OpenAIEmbeddings(model="sim-embed", base_url=base_url, api_key=key, check_embedding_ctx_length=False)
    docs = emb.embed_documents(["the white rabbit", "quarterly revenue"])
    q = emb.embed_query("white rabbit")
    assert len(docs) == 2 and len(q) == 512
    assert cos(q, docs[0]) > cos(q, docs[1])
