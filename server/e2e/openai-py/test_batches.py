"""The Batch API (/v1/batches) through the official openai SDK: upload a
JSONL file with purpose batch, create, poll to completed, read the output
and error files (each custom_id answered once), list, cancel, and a
malformed file that fails validation with its line numbers."""
import io
import json
import os
import time

import openai
import pytest


def _jsonl(lines):
    return io.BytesIO(("\n".join(json.dumps(x) for x in lines) + "\n").encode())


def _chat(custom_id, text, **extra):
    body = {"model": "sim-small", "max_tokens": 8, "messages": [{"role": "user", "content": text}]}
    body.update(extra)
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def _wait(client, batch_id, timeout=60):
    deadline = time.time() + timeout
    while True:
        b = client.batches.retrieve(batch_id)
        if b.status in ("completed", "failed", "expired", "cancelled"):
            return b
        assert time.time() < deadline, f"batch still {b.status}"
        time.sleep(0.1)


def test_batch_runs_and_writes_output_and_error_files(client):
    lines = [_chat(f"req-{i}", f"Question {i}") for i in range(20)]
    lines.append(_chat("too-long", "hi", max_tokens=10**6))
    f = client.files.create(file=("requests.jsonl", _jsonl(lines)), purpose="batch")
    assert f.purpose == "batch"
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h",
                              metadata={"job": "sdk"})
    assert b.object == "batch" and b.status == "validating" and b.metadata == {"job": "sdk"}
    b = _wait(client, b.id)
    assert b.status == "completed", b
    assert b.request_counts.total == 21 and b.request_counts.completed == 20 and b.request_counts.failed == 1
    assert b.in_progress_at and b.finalizing_at and b.completed_at and b.expires_at

    out = [json.loads(x) for x in client.files.content(b.output_file_id).text.splitlines()]
    assert sorted(x["custom_id"] for x in out) == sorted(f"req-{i}" for i in range(20))
    for x in out:
        assert x["id"].startswith("batch_req_") and x["error"] is None
        assert x["response"]["status_code"] == 200
        assert x["response"]["body"]["object"] == "chat.completion"
        assert x["response"]["body"]["choices"][0]["message"]["role"] == "assistant"
    errs = [json.loads(x) for x in client.files.content(b.error_file_id).text.splitlines()]
    assert [x["custom_id"] for x in errs] == ["too-long"]
    assert errs[0]["response"]["status_code"] == 400 and "max_tokens" in json.dumps(errs[0]["response"]["body"])
    assert client.files.retrieve(b.output_file_id).purpose == "batch_output"

    assert b.id in [x.id for x in client.batches.list(limit=10)]


def test_batch_embeddings(client):
    lines = [{"custom_id": f"e{i}", "method": "POST", "url": "/v1/embeddings",
              "body": {"model": "sim-embed", "input": f"text {i}"}} for i in range(5)]
    f = client.files.create(file=("emb.jsonl", _jsonl(lines)), purpose="batch")
    b = _wait(client, client.batches.create(input_file_id=f.id, endpoint="/v1/embeddings", completion_window="24h").id)
    assert b.status == "completed" and b.request_counts.completed == 5
    out = [json.loads(x) for x in client.files.content(b.output_file_id).text.splitlines()]
    assert all(len(x["response"]["body"]["data"][0]["embedding"]) > 0 for x in out)


def test_malformed_file_fails_validation(client):
    bad = [_chat("a", "hi"), _chat("a", "again"),
           {"custom_id": "b", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "no-such-model"}}]
    f = client.files.create(file=("bad.jsonl", _jsonl(bad)), purpose="batch")
    b = _wait(client, client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h").id)
    assert b.status == "failed" and b.failed_at and b.output_file_id is None
    got = {(e.code, e.line) for e in b.errors.data}
    assert got == {("duplicate_custom_id", 2), ("model_not_found", 3)}


def test_cancel_and_errors(client):
    f = client.files.create(file=("one.jsonl", _jsonl([_chat("x", "hi")])), purpose="batch")
    with pytest.raises(openai.BadRequestError) as e:
        client.batches.create(input_file_id=f.id, endpoint="/v1/images/generations", completion_window="24h")
    assert "endpoint" in str(e.value)
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_does_not_exist")
    b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    try:
        c = client.batches.cancel(b.id)
        assert c.status in ("cancelling", "cancelled")
        end = _wait(client, b.id)
        assert end.status == "cancelled" and end.cancelled_at
    except openai.BadRequestError:
        assert _wait(client, b.id).status == "completed"  # it ended before the cancel arrived


def test_expired_batch_reports_expired_lines():
    url, key = os.environ.get("PARLEY_EXPIRING_URL"), os.environ.get("PARLEY_EXPIRING_KEY")
    if not url or not key:
        pytest.skip("PARLEY_EXPIRING_URL is not set: run via `go test ./server/e2e/ -run TestOfficialOpenAIPythonSDK`")
    client = openai.OpenAI(base_url=url.rstrip("/") + "/v1", api_key=key, max_retries=0)
    lines = [_chat(f"late-{i}", "Tell me a long story.", max_tokens=64) for i in range(40)]
    f = client.files.create(file=("late.jsonl", _jsonl(lines)), purpose="batch")
    b = _wait(client, client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h").id)
    assert b.status == "expired" and b.expired_at, b
    errs = [json.loads(x) for x in client.files.content(b.error_file_id).text.splitlines()]
    expired = [e for e in errs if e["error"] and e["error"]["code"] == "batch_expired"]
    assert expired and all(e["response"] is None for e in expired)
    answered = b.request_counts.completed
    assert answered + len(errs) == 40 and b.request_counts.failed == len(errs)
