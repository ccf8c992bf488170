"""The official OpenAI Python SDK and langchain-openai, unchanged, against a
live Parley gateway: tools (non-streamed, streamed, follow-up, auto mode),
structured output, n, logprobs, models, errors and harmless defaults.

Every test is a real call. The gateway's "sim-small" model calls a tool when
tool_choice is "required" or names a function, or in auto mode when the last
user message names a tool; after tool results it answers with text; with
json_object / json_schema its content is JSON valid against the schema."""
import json
from typing import Optional

import openai
import pytest
from pydantic import BaseModel

MODEL = "sim-small"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a location.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current local time for a location.",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def weather_args(call):
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert call.id
    args = json.loads(call.function.arguments)
    assert isinstance(args, dict)
    assert isinstance(args.get("location"), str), args
    if "unit" in args:
        assert args["unit"] in ("celsius", "fahrenheit"), args
    return args


# --- tools -------------------------------------------------------------------


def test_tool_call(client):
    r = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER], tool_choice="required")
    c = r.choices[0]
    assert c.finish_reason == "tool_calls"
    assert c.message.role == "assistant"
    assert c.message.tool_calls, c.message
    weather_args(c.message.tool_calls[0])
    assert r.usage and r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_tool_call_streamed(client):
    # The SDK's stream helper accumulates tool-call deltas itself.
    with client.chat.completions.stream(model=MODEL, messages=ASK, tools=[WEATHER], tool_choice="required",
                                        stream_options={"include_usage": True}) as s:
        for _ in s:
            pass
        final = s.get_final_completion()
    c = final.choices[0]
    assert c.finish_reason == "tool_calls"
    helper_args = weather_args(c.message.tool_calls[0])
    assert final.usage and final.usage.completion_tokens > 0

    # The same by hand: arguments arrive in pieces, keyed by index.
    stream = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER], tool_choice="required",
                                            stream=True, stream_options={"include_usage": True})
    calls, finish, usage = {}, None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            for d in ch.delta.tool_calls or []:
                acc = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                if d.id:
                    acc["id"] = d.id
                if d.function and d.function.name:
                    acc["name"] += d.function.name
                if d.function and d.function.arguments:
                    acc["arguments"] += d.function.arguments
            if ch.finish_reason:
                finish = ch.finish_reason
    assert finish == "tool_calls"
    assert usage and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert calls[0]["id"] and calls[0]["name"] == "get_weather", calls
    assert json.loads(calls[0]["arguments"]) == helper_args


def test_tool_follow_up(client):
    first = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER], tool_choice="required")
    msg = first.choices[0].message
    messages = ASK + [
        {"role": "assistant", "content": msg.content, "tool_calls": [tc.model_dump() for tc in msg.tool_calls]},
        *[{"role": "tool", "tool_call_id": tc.id, "content": "Sunny, 21 degrees"} for tc in msg.tool_calls],
    ]
    r = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER])
    c = r.choices[0]
    assert c.finish_reason == "stop"
    assert not c.message.tool_calls
    assert "Sunny, 21 degrees" in c.message.content, c.message.content  # the tool result reached the model


def test_auto_mode(client):
    r = client.chat.completions.create(
        model=MODEL, tools=[WEATHER], messages=[{"role": "user", "content": "What is the weather in Paris? use get_weather"}])
    assert r.choices[0].finish_reason == "tool_calls"
    weather_args(r.choices[0].message.tool_calls[0])

    r = client.chat.completions.create(model=MODEL, tools=[WEATHER], messages=[{"role": "user", "content": "Tell me a joke."}])
    assert r.choices[0].finish_reason == "stop"
    assert not r.choices[0].message.tool_calls
    assert r.choices[0].message.content


def test_parallel_tool_calls(client):
    ask = [{"role": "user", "content": "Use get_weather and get_time for Paris"}]
    r = client.chat.completions.create(model=MODEL, messages=ask, tools=[WEATHER, TIME])
    assert sorted(tc.function.name for tc in r.choices[0].message.tool_calls) == ["get_time", "get_weather"]
    assert len({tc.id for tc in r.choices[0].message.tool_calls}) == 2
    r = client.chat.completions.create(model=MODEL, messages=ask, tools=[WEATHER, TIME], parallel_tool_calls=False)
    assert len(r.choices[0].message.tool_calls) == 1


def test_named_tool_choice(client):
    r = client.chat.completions.create(model=MODEL, messages=ASK, tools=[TIME, WEATHER],
                                       tool_choice={"type": "function", "function": {"name": "get_weather"}})
    calls = r.choices[0].message.tool_calls
    assert calls and all(tc.function.name == "get_weather" for tc in calls)


# --- structured output ---------------------------------------------------------


class Address(BaseModel):
    city: str
    country: str


class Person(BaseModel):
    name: str
    age: int
    address: Address
    tags: list[str]
    nickname: Optional[str]


def check_person(p):
    assert isinstance(p, Person), p
    assert isinstance(p.name, str) and isinstance(p.age, int)
    assert isinstance(p.address, Address) and isinstance(p.address.city, str)
    assert isinstance(p.tags, list) and all(isinstance(t, str) for t in p.tags)
    assert p.nickname is None or isinstance(p.nickname, str)


def test_parse_pydantic(client):
    r = client.chat.completions.parse(model=MODEL, response_format=Person,
                                      messages=[{"role": "user", "content": "Invent a person."}])
    assert r.choices[0].finish_reason == "stop"
    check_person(r.choices[0].message.parsed)


def test_json_object(client):
    r = client.chat.completions.create(model=MODEL, response_format={"type": "json_object"},
                                       messages=[{"role": "user", "content": "Describe Paris as JSON."}])
    assert isinstance(json.loads(r.choices[0].message.content), dict)


# --- n, logprobs ------------------------------------------------------------------


def test_n(client):
    r = client.chat.completions.create(model=MODEL, n=2, messages=[{"role": "user", "content": "Hi"}], max_tokens=10)
    assert sorted(c.index for c in r.choices) == [0, 1]
    assert all(c.message.content for c in r.choices)
    assert all(c.finish_reason in ("stop", "length") for c in r.choices)


def test_n_streamed(client):
    stream = client.chat.completions.create(model=MODEL, n=2, messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=10, stream=True)
    text, finish = {}, {}
    for chunk in stream:
        for ch in chunk.choices:
            text[ch.index] = text.get(ch.index, "") + (ch.delta.content or "")
            if ch.finish_reason:
                assert ch.index not in finish, "two finish_reasons for one choice"
                finish[ch.index] = ch.finish_reason
    assert sorted(text) == [0, 1] and all(text.values()), text
    assert sorted(finish) == [0, 1], finish


def test_logprobs(client):
    r = client.chat.completions.create(model=MODEL, logprobs=True, top_logprobs=2, max_tokens=12,
                                       messages=[{"role": "user", "content": "Hi"}])
    c = r.choices[0]
    content = c.logprobs.content
    assert content
    for lp in content:
        assert isinstance(lp.token, str)
        assert lp.logprob <= 0
        assert len(lp.top_logprobs) == 2
        assert all(t.logprob <= 0 for t in lp.top_logprobs)
    assert "".join(lp.token for lp in content) == c.message.content


# --- models, errors -------------------------------------------------------------


def test_models_retrieve(client):
    assert client.models.retrieve(MODEL).id == MODEL
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("nope")


def test_unknown_path(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.get("/nope", cast_to=object)
    assert e.value.status_code == 404
    err = e.value.response.json()["error"]
    assert isinstance(err["message"], str) and err["message"]
    assert "type" in err


def test_insufficient_quota_not_retried(base_url, broke_key):
    sent = []
    http = openai.DefaultHttpxClient(event_hooks={"request": [lambda req: sent.append(req.url)]})
    broke = openai.OpenAI(base_url=base_url, api_key=broke_key, max_retries=2, http_client=http)
    with pytest.raises(openai.RateLimitError) as e:
        broke.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    assert e.value.status_code == 429
    assert e.value.code == "insufficient_quota"
    assert e.value.response.headers.get("x-should-retry") == "false"
    assert len(sent) == 1, f"the SDK retried: {len(sent)} requests"


def test_harmless_defaults(client):
    # Parley is deliberately lenient here: OpenAI itself answers 400 to an empty
    # `tools` list and to `stream_options` without `stream`, but clients and
    # frameworks send both, so the gateway accepts them.
    hi = [{"role": "user", "content": "Hi"}]
    client.chat.completions.create(model=MODEL, messages=hi, store=False, metadata={"suite": "openai-py"})
    client.chat.completions.create(model=MODEL, messages=hi, tools=[WEATHER], parallel_tool_calls=True)
    client.chat.completions.create(model=MODEL, messages=hi, logprobs=False, n=1)
    client.chat.completions.create(model=MODEL, messages=hi, tools=[])
    client.chat.completions.create(model=MODEL, messages=hi, stream_options={"include_usage": True})


# --- langchain-openai --------------------------------------------------------------


@pytest.fixture(scope="module")
def llm(base_url, key):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=base_url, api_key=key, model=MODEL, max_retries=0, use_responses_api=False)


def _lc_weather_tool():
    from langchain_core.tools import tool

    @tool
    def get_weather(location: str, unit: Optional[str] = None) -> str:
        """Current weather for a location."""
        return f"Sunny in {location}"

    return get_weather


ASK_TOOL = "What is the weather in Paris? Use get_weather."


def test_langchain_bind_tools(llm):
    from langchain_core.messages import HumanMessage, ToolMessage

    get_weather = _lc_weather_tool()
    model = llm.bind_tools([get_weather])
    human = HumanMessage(ASK_TOOL)
    ai = model.invoke([human])
    assert ai.tool_calls, ai
    call = ai.tool_calls[0]
    assert call["name"] == "get_weather"
    assert isinstance(call["args"], dict) and isinstance(call["args"].get("location"), str), call
    tool_msg = get_weather.invoke(call)
    assert isinstance(tool_msg, ToolMessage)
    answer = model.invoke([human, ai, tool_msg])
    assert not answer.tool_calls
    assert isinstance(answer.content, str) and "Sunny in" in answer.content, answer.content


def test_langchain_bind_tools_stream(llm):
    model = llm.bind_tools([_lc_weather_tool()])
    gathered, chunks = None, 0
    for chunk in model.stream(ASK_TOOL):
        chunks += 1
        gathered = chunk if gathered is None else gathered + chunk
    assert gathered.tool_call_chunks, gathered
    assert gathered.tool_calls and gathered.tool_calls[0]["name"] == "get_weather"
    assert isinstance(gathered.tool_calls[0]["args"].get("location"), str)


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_langchain_structured_output(llm, method):
    p = llm.with_structured_output(Person, method=method).invoke("Invent a person.")
    check_person(p)
