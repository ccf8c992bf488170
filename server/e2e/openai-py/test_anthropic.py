"""The official Anthropic Python SDK, unchanged, against a live Parley gateway's
Messages API (/v1/messages, /v1/messages/count_tokens): whole and streamed
messages, a tool_use round trip, token counting and typed errors.

The SDK's base_url is the gateway's root (it adds /v1/messages itself) and its
api_key a Parley key, sent as x-api-key. "sim-small" calls a tool when
tool_choice is any or names it, and answers a tool result by quoting it."""
import anthropic
import pytest

MODEL = "sim-small"

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a location.",
    "input_schema": {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["location"],
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="session")
def root(base_url):
    return base_url.removesuffix("/v1")


@pytest.fixture(scope="session")
def claude(root, key):
    return anthropic.Anthropic(base_url=root, api_key=key, max_retries=0)


def test_create(claude):
    m = claude.messages.create(model=MODEL, max_tokens=40, system="You are terse.",
                               messages=[{"role": "user", "content": "Hello"}], metadata={"user_id": "py-user"})
    assert m.id.startswith("msg_") and m.type == "message" and m.role == "assistant" and m.model == MODEL
    assert [b.type for b in m.content] == ["text"] and m.content[0].text
    assert m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None
    assert m.usage.input_tokens > 0 and 0 < m.usage.output_tokens <= 40
    assert m.usage.cache_read_input_tokens is not None


def test_max_tokens_stop_reason(claude):
    m = claude.messages.create(model=MODEL, max_tokens=3, messages=[{"role": "user", "content": "Tell me a story"}])
    assert m.stop_reason == "max_tokens" and m.usage.output_tokens == 3


def test_stream_text(claude):
    with claude.messages.stream(model=MODEL, max_tokens=30, messages=[{"role": "user", "content": "Hello"}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text and final.content[0].type == "text" and final.content[0].text == text
    assert final.stop_reason in ("end_turn", "max_tokens")
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0


def test_stream_events(claude):
    with claude.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "Hello"}], stream=True) as s:
        kinds = [ev.type for ev in s]
    assert kinds[0] == "message_start" and kinds[1] == "content_block_start"
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(kinds[2:-3]) == {"content_block_delta"}


def test_tool_use_round_trip(claude):
    with claude.messages.stream(model=MODEL, max_tokens=200, messages=ASK, tools=[WEATHER],
                                tool_choice={"type": "any"}) as s:
        for _ in s:
            pass
        final = s.get_final_message()
    assert final.stop_reason == "tool_use"
    uses = [b for b in final.content if b.type == "tool_use"]
    assert len(uses) == 1, final.content
    use = uses[0]
    assert use.name == "get_weather" and use.id
    assert isinstance(use.input, dict) and isinstance(use.input.get("location"), str)

    # The result goes back as a tool_result block; the model answers with it.
    follow = ASK + [
        {"role": "assistant", "content": final.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18°C and sunny"}]},
    ]
    answer = claude.messages.create(model=MODEL, max_tokens=200, messages=follow, tools=[WEATHER])
    assert answer.stop_reason in ("end_turn", "max_tokens")
    assert answer.content[0].type == "text" and "18°C and sunny" in answer.content[0].text


def test_named_tool_non_streamed(claude):
    m = claude.messages.create(model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "Hi"}], tools=[WEATHER],
                               tool_choice={"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True})
    assert m.stop_reason == "tool_use"
    assert [b.type for b in m.content] == ["tool_use"]
    assert m.content[0].name == "get_weather" and isinstance(m.content[0].input, dict)


def test_count_tokens(claude):
    kw = dict(model=MODEL, system="You are terse.", messages=ASK, tools=[WEATHER])
    n = claude.messages.count_tokens(**kw).input_tokens
    assert n > 0
    m = claude.messages.create(max_tokens=5, tool_choice={"type": "none"}, **kw)
    assert m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) == n
    # Tools are part of the prompt.
    assert claude.messages.count_tokens(model=MODEL, system="You are terse.", messages=ASK).input_tokens < n


def test_bad_key(root):
    bad = anthropic.Anthropic(base_url=root, api_key="pk_wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as e:
        bad.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert e.value.status_code == 401 and e.value.type == "authentication_error"


def test_unknown_model(claude):
    with pytest.raises(anthropic.NotFoundError) as e:
        claude.messages.create(model="no-such-model", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert e.value.type == "not_found_error"
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.count_tokens(model="no-such-model", messages=[{"role": "user", "content": "x"}])


def test_empty_balance(root, broke_key):
    # Anthropic answers a balance too low with 400 invalid_request_error.
    sent = []
    http = anthropic.DefaultHttpxClient(event_hooks={"request": [lambda req: sent.append(req.url)]})
    broke = anthropic.Anthropic(base_url=root, api_key=broke_key, max_retries=2, http_client=http)
    with pytest.raises(anthropic.BadRequestError) as e:
        broke.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert e.value.type == "invalid_request_error" and "credit balance is too low" in e.value.message
    assert len(sent) == 1
    with pytest.raises(anthropic.BadRequestError):
        with broke.messages.stream(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]) as s:
            for _ in s:
                pass
    # Counting costs nothing, so it works at any balance.
    assert broke.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "x"}]).input_tokens > 0


def test_unsupported_field_named(claude):
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}],
                               extra_body={"top_k": 5})
    assert "top_k" in e.value.message
