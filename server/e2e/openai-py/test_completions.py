"""The official OpenAI Python SDK's legacy completions (client.completions)
against a live Parley gateway's /v1/completions: a string prompt, a list of
prompts (one choice per prompt, in order), streaming with usage, logprobs and
the fields Parley refuses by name."""
import openai
import pytest

MODEL = "sim-small"


def test_string_prompt(client):
    r = client.completions.create(model=MODEL, prompt="Say hello", max_tokens=8, seed=3, user="py-user")
    assert r.object == "text_completion" and r.id.startswith("cmpl-") and r.model == MODEL
    assert len(r.choices) == 1
    c = r.choices[0]
    assert c.index == 0 and c.text and c.finish_reason in ("stop", "length") and c.logprobs is None
    assert r.usage.prompt_tokens > 0 and 0 < r.usage.completion_tokens <= 8
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_default_max_tokens(client):
    r = client.completions.create(model=MODEL, prompt="Tell me a long story")
    assert r.usage.completion_tokens <= 16


def test_list_prompt(client):
    r = client.completions.create(model=MODEL, prompt=["One", "Two", "Three"], max_tokens=4, n=2)
    assert [c.index for c in r.choices] == list(range(6))
    assert all(c.text for c in r.choices)
    assert 0 < r.usage.completion_tokens <= 6 * 4
    single = client.completions.create(model=MODEL, prompt="One", max_tokens=4)
    assert r.usage.prompt_tokens > single.usage.prompt_tokens


def test_streamed(client):
    chunks = list(client.completions.create(model=MODEL, prompt=["Hello", "Bye"], max_tokens=5, stream=True,
                                            stream_options={"include_usage": True}))
    texts = {0: "", 1: ""}
    finishes = {}
    for ch in chunks[:-1]:
        assert ch.object == "text_completion"
        for c in ch.choices:
            texts[c.index] += c.text
            if c.finish_reason:
                finishes[c.index] = c.finish_reason
    assert texts[0] and texts[1] and set(finishes) == {0, 1}
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    assert len({ch.id for ch in chunks}) == 1


def test_logprobs(client):
    r = client.completions.create(model=MODEL, prompt="Hello", max_tokens=4, logprobs=2)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 4
    assert "".join(lp.tokens) == r.choices[0].text
    assert all(1 <= len(top) <= 2 for top in lp.top_logprobs)
    assert lp.text_offset[0] == 0


@pytest.mark.parametrize("field,kw", [("suffix", {"suffix": "end"}), ("best_of", {"best_of": 3}), ("echo", {"echo": True})])
def test_refused_by_name(client, field, kw):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL, prompt="x", max_tokens=2, **kw)
    assert e.value.param == field
