"""Vector stores and file_search through the official openai SDK: files,
vector_stores.create with file_ids, files.upload_and_poll,
file_batches.upload_and_poll, search with filters, responses.create with the
file_search tool (results included, file_citation annotations parsed), and
the cascade of deletes."""
import io
import time

import openai
import pytest

LAUNCH = b"# Launch plan\n\nThe launch of the Parley gateway is on Tuesday the 14th at 10:00 in Lisbon.\n"
BUDGET = b"# Budget\n\nThe marketing budget for the quarter is forty thousand euros, approved by finance.\n"
HIRING = b"# Hiring\n\nWe are hiring two backend engineers and one designer before the summer.\n"


def wait_completed(client, vs_id, timeout=30):
    deadline = time.time() + timeout
    while True:
        vs = client.vector_stores.retrieve(vs_id)
        if vs.status == "completed" or time.time() > deadline:
            return vs
        time.sleep(0.1)


def test_vector_store_flow(client):
    launch = client.files.create(file=("launch.md", io.BytesIO(LAUNCH)), purpose="assistants")
    vs = client.vector_stores.create(name="company", file_ids=[launch.id], metadata={"team": "ops"},
                                     expires_after={"anchor": "last_active_at", "days": 7})
    assert vs.object == "vector_store" and vs.name == "company" and vs.metadata == {"team": "ops"}
    assert vs.file_counts.total == 1 and vs.expires_after.days == 7 and vs.expires_at is not None
    vs = wait_completed(client, vs.id)
    assert vs.status == "completed" and vs.file_counts.completed == 1 and vs.usage_bytes == len(LAUNCH)

    # One more file, uploaded and polled, with attributes.
    budget = client.vector_stores.files.upload_and_poll(
        vector_store_id=vs.id, file=("budget.md", io.BytesIO(BUDGET)), attributes={"dept": "finance", "year": 2025})
    assert budget.status == "completed" and budget.last_error is None and budget.attributes == {"dept": "finance", "year": 2025}
    # Two more in a batch, with a static chunking strategy.
    batch = client.vector_stores.file_batches.upload_and_poll(
        vs.id, files=[("hiring.md", io.BytesIO(HIRING)), ("launch-copy.md", io.BytesIO(LAUNCH))],
        chunking_strategy={"type": "static", "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 20}})
    assert batch.object == "vector_store.files_batch" and batch.status == "completed"
    assert batch.file_counts.completed == 2 and batch.file_counts.total == 2
    in_batch = client.vector_stores.file_batches.list_files(batch.id, vector_store_id=vs.id)
    assert len(in_batch.data) == 2 and all(f.chunking_strategy.static.max_chunk_size_tokens == 100 for f in in_batch.data)
    files = client.vector_stores.files.list(vs.id, filter="completed")
    assert len(files.data) == 4
    assert client.vector_stores.retrieve(vs.id).file_counts.completed == 4

    # Search: the passage with the words comes first; a filter keeps only
    # the files whose attributes match, before the top results are chosen.
    page = client.vector_stores.search(vs.id, query="marketing budget finance", max_num_results=3)
    assert page.data[0].filename == "budget.md" and page.data[0].file_id == budget.id
    assert "forty thousand euros" in page.data[0].content[0].text and 0 < page.data[0].score <= 1
    # The ranking is hybrid (vector and BM25, fused); hybrid_search weighs
    # them, and lexical alone finds only the passages with the words.
    lexical = client.vector_stores.search(vs.id, query="Lisbon", ranking_options={
        "hybrid_search": {"embedding_weight": 0, "text_weight": 1}})
    assert sorted(r.filename for r in lexical.data) == ["launch-copy.md", "launch.md"] and lexical.data[0].score == 1
    vector = client.vector_stores.search(vs.id, query="Lisbon", ranking_options={
        "hybrid_search": {"embedding_weight": 1, "text_weight": 0}})
    assert len(vector.data) == 4 and all(-1 <= r.score <= 1 for r in vector.data)
    with pytest.raises(openai.BadRequestError) as e:
        client.vector_stores.search(vs.id, query="x", ranking_options={"hybrid_search": {"embedding_weight": 0, "text_weight": 0}})
    assert e.value.body["param"] == "ranking_options.hybrid_search"
    only = client.vector_stores.search(vs.id, query="launch in Lisbon",
                                       filters={"type": "eq", "key": "dept", "value": "finance"})
    assert [r.file_id for r in only.data] == [budget.id]
    compound = client.vector_stores.search(vs.id, query="budget", filters={"type": "and", "filters": [
        {"type": "eq", "key": "dept", "value": "finance"}, {"type": "gte", "key": "year", "value": 2026}]})
    assert compound.data == []
    # Attributes change, and the search follows at once.
    client.vector_stores.files.update(file_id=budget.id, vector_store_id=vs.id, attributes={"dept": "finance", "year": 2026})
    compound = client.vector_stores.search(vs.id, query="budget", filters={"type": "and", "filters": [
        {"type": "eq", "key": "dept", "value": "finance"}, {"type": "gte", "key": "year", "value": 2026}]})
    assert [r.file_id for r in compound.data] == [budget.id]

    # file_search in a response: the call item with its results, and the
    # answer's citations parsed as file_citation annotations.
    r = client.responses.create(model="sim-small", input="When is the launch in Lisbon?", max_output_tokens=200,
                                tools=[{"type": "file_search", "vector_store_ids": [vs.id], "max_num_results": 2}],
                                include=["file_search_call.results"])
    call = next(o for o in r.output if o.type == "file_search_call")
    assert call.status == "completed" and call.queries and 1 <= len(call.results) <= 2
    assert call.results[0].filename in ("launch.md", "launch-copy.md")
    msg = next(o for o in r.output if o.type == "message")
    cites = [a for a in msg.content[0].annotations if a.type == "file_citation"]
    assert cites and cites[0].file_id in {f.id for f in files.data} and cites[0].filename.endswith(".md")
    # Without include, the call carries no results.
    r = client.responses.create(model="sim-small", input="budget?", max_output_tokens=20,
                                tools=[{"type": "file_search", "vector_store_ids": [vs.id]}])
    call = next(o for o in r.output if o.type == "file_search_call")
    assert call.results is None

    # Removing a file takes it out of the search; deleting a file takes it
    # out of every store; deleting the store makes it not found.
    client.vector_stores.files.delete(file_id=budget.id, vector_store_id=vs.id)
    assert budget.id not in [x.file_id for x in client.vector_stores.search(vs.id, query="marketing budget finance").data]
    client.files.delete(launch.id)
    assert launch.id not in [f.id for f in client.vector_stores.files.list(vs.id).data]
    assert launch.id not in [x.file_id for x in client.vector_stores.search(vs.id, query="launch Lisbon").data]
    d = client.vector_stores.delete(vs.id)
    assert d.deleted is True and d.id == vs.id
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.retrieve(vs.id)
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.search(vs.id, query="launch")


def test_vector_store_errors(client, broke_key, base_url):
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.create(name="x", file_ids=["0190d5a8-0000-7000-8000-000000000000"])
    with pytest.raises(openai.BadRequestError) as e:
        client.vector_stores.create(name="x", chunking_strategy={"type": "static", "static": {
            "max_chunk_size_tokens": 50, "chunk_overlap_tokens": 10}})
    assert "chunking_strategy" in e.value.body["param"]
    vs = client.vector_stores.create(name="empty")
    with pytest.raises(openai.BadRequestError) as e:
        client.vector_stores.search(vs.id, query="x", filters={"type": "gt", "key": "year", "value": "soon"})
    assert e.value.body["param"].startswith("filters")
    with pytest.raises(openai.BadRequestError) as e:
        client.vector_stores.search(vs.id, query="x", max_num_results=51)
    assert e.value.body["param"] == "max_num_results"
    # Another user's store is not found, never forbidden.
    other = openai.OpenAI(base_url=base_url, api_key=broke_key, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        other.vector_stores.retrieve(vs.id)
    with pytest.raises(openai.NotFoundError):
        other.vector_stores.search(vs.id, query="x")
    client.vector_stores.delete(vs.id)
