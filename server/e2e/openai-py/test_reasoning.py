"""A model that reasons, through the official SDKs: the gateway under test is
set by server/e2e/reasoning_test.go (TestReasoningThroughPythonSDKs), whose
upstream streams reasoning_content before the answer. Skipped in the other
runs of this directory, whose gateway has no such model."""
import os

import anthropic
import pytest


@pytest.fixture(scope="module")
def model():
    m = os.environ.get("PARLEY_REASONING_MODEL")
    if not m:
        pytest.skip("PARLEY_REASONING_MODEL is not set: run via `go test ./server/e2e/ -run TestReasoningThroughPythonSDKs`")
    return m


THOUGHT = os.environ.get("PARLEY_REASONING_THOUGHT", "")
ANSWER = os.environ.get("PARLEY_REASONING_ANSWER", "")


@pytest.fixture(scope="module")
def claude(base_url, key):
    return anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key=key, max_retries=0)


def test_anthropic_thinking_block(claude, model):
    m = claude.messages.create(model=model, max_tokens=1000, thinking={"type": "enabled", "budget_tokens": 1024},
                               messages=[{"role": "user", "content": "hi"}])
    assert [b.type for b in m.content] == ["thinking", "text"]
    assert m.content[0].thinking == THOUGHT and m.content[0].signature
    assert m.content[1].text == ANSWER


def test_anthropic_thinking_streamed(claude, model):
    with claude.messages.stream(model=model, max_tokens=1000, thinking={"type": "adaptive"},
                                messages=[{"role": "user", "content": "hi"}]) as s:
        thinking = "".join(e.thinking for e in s if e.type == "thinking")
        final = s.get_final_message()
    assert thinking == THOUGHT
    assert final.content[0].type == "thinking" and final.content[0].thinking == THOUGHT
    assert final.content[0].signature
    assert final.content[1].text == ANSWER


def test_anthropic_models_list(claude, model):
    ids = [m.id for m in claude.models.list()]
    assert model in ids


def test_responses_reasoning_item(client, model):
    r = client.responses.create(model=model, input="hi", reasoning={"effort": "low"})
    kinds = [o.type for o in r.output]
    assert kinds == ["reasoning", "message"]
    assert r.output[0].content[0].type == "reasoning_text" and r.output[0].content[0].text == THOUGHT
    assert r.output_text == ANSWER
    got = client.responses.retrieve(r.id)
    assert got.output[0].content[0].text == THOUGHT


def test_responses_reasoning_streamed(client, model):
    deltas = []
    with client.responses.stream(model=model, input="hi") as s:
        for e in s:
            if e.type == "response.reasoning_text.delta":
                deltas.append(e.delta)
        final = s.get_final_response()
    assert "".join(deltas) == THOUGHT
    assert final.output[0].type == "reasoning" and final.output[0].content[0].text == THOUGHT
    assert final.output_text == ANSWER


def test_chat_completions_reasoning_content(client, model):
    c = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], reasoning_effort="high")
    msg = c.choices[0].message
    assert msg.content == ANSWER
    assert msg.model_extra["reasoning_content"] == THOUGHT
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], stream=True)
    thought = "".join((ch.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for ch in stream if ch.choices)
    assert thought == THOUGHT
