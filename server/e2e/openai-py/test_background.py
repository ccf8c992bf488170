"""Background responses through the official openai SDK: create with
background=True returns queued, retrieve polls to completed with the
output, cancel answers with the response, and background without store is
refused."""
import time

import openai
import pytest


def test_background_response_polls_to_completed(client):
    r = client.responses.create(model="sim-small", input="Say something.", background=True, max_output_tokens=20)
    assert r.background is True and r.status in ("queued", "in_progress", "completed", "incomplete")
    deadline = time.time() + 30
    while r.status in ("queued", "in_progress"):
        assert time.time() < deadline, r.status
        time.sleep(0.05)
        r = client.responses.retrieve(r.id)
    assert r.status in ("completed", "incomplete") and r.output_text and r.usage.output_tokens > 0
    c = client.responses.cancel(r.id)  # already ended: returned as it ended
    assert c.id == r.id and c.status == r.status


def test_background_requires_store(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="sim-small", input="hi", background=True, store=False)
    assert "background" in str(e.value)


def test_background_stream_resumes(client):
    stream = client.responses.create(model="sim-small", input="Tell me a story.", background=True, stream=True,
                                     max_output_tokens=40)
    seen, rid = [], None
    for ev in stream:
        seen.append(ev)
        if ev.type == "response.created":
            rid = ev.response.id
        if ev.type == "response.output_text.delta" and len(seen) >= 5:
            break
    stream.close()
    last = seen[-1].sequence_number
    rest = list(client.responses.retrieve(rid, stream=True, starting_after=last))
    assert rest[0].sequence_number == last + 1
    assert rest[-1].type in ("response.completed", "response.incomplete")
    text = "".join(e.delta for e in seen + rest if e.type == "response.output_text.delta")
    final = client.responses.retrieve(rid)
    deadline = time.time() + 10
    while final.status in ("queued", "in_progress") and time.time() < deadline:
        time.sleep(0.05)
        final = client.responses.retrieve(rid)
    assert final.output_text == text
