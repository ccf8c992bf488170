import asyncio
import json
import os
import re
import subprocess
import sys
import time

import pytest

from parley_client import AsyncParley, Code, ConnectError, Parley, prompt, retry_after, tool_calls, tool_result, user_text
from parley.v1 import chat_connect, model_pb2
from parley.v1.chat_pb2 import CompleteRequest, CompleteStreamRequest
from parley.v1.common_pb2 import FinishReason, ResponseFormat, ResponseFormatType, Tool, ToolChoice, ToolChoiceMode

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def test_readme_examples(parley_server):
    blocks = re.findall(r"```python\n(.*?)```", open(README).read(), re.S)
    assert len(blocks) == 6  # streaming, files, vector stores, projects and memory, batches, tools
    env = {**os.environ, "PARLEY_URL": parley_server["url"], "PARLEY_API_KEY": parley_server["key"]}
    for code in blocks:
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert len(run.stdout.strip()) > 20, run.stdout


@pytest.mark.parametrize("protocol", ["connect", "grpc"])
def test_stream(parley_server, protocol):
    p = Parley(parley_server["url"], api_key=parley_server["key"], protocol=protocol)
    events = list(p.complete_stream(prompt("sim-small", f"hello over {protocol}")))
    assert events[0].HasField("started")
    assert events[-1].finished.finish_reason == 1  # FINISH_REASON_STOP
    assert "".join(e.delta.text for e in events)


def test_async_stream(parley_server):
    async def run():
        p = AsyncParley(parley_server["url"], api_key=parley_server["key"])
        return [t async for t in p.stream_text("sim-small", "async hello")]

    assert "".join(asyncio.run(run()))


def _text(message):
    return "".join(p.text for p in message.parts if p.HasField("text"))


WEATHER_PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
GET_WEATHER = Tool(name="get_weather", description="The current weather in a city.", parameters=WEATHER_PARAMS)


def test_tools(parley_server):
    p = Parley(parley_server["url"], api_key=parley_server["key"])
    messages = [user_text("What's the weather in Paris?")]
    req = dict(model="sim-small", messages=messages, tools=[GET_WEATHER],
               tool_choice=ToolChoice(mode=ToolChoiceMode.TOOL_CHOICE_MODE_REQUIRED))

    res = p.chat.complete(CompleteRequest(**req))
    assert res.finish_reason == FinishReason.FINISH_REASON_TOOL_CALLS
    assert [c.finish_reason for c in res.choices] == [FinishReason.FINISH_REASON_TOOL_CALLS]
    calls = [part.tool_call for part in res.message.parts if part.HasField("tool_call")]
    assert len(calls) == 1 and calls[0].name == "get_weather" and calls[0].id
    args = json.loads(calls[0].arguments)
    assert set(WEATHER_PARAMS["required"]) <= args.keys(), calls[0].arguments
    assert isinstance(args["city"], str) and args["unit"] in ("celsius", "fahrenheit")

    # The same request streamed: the call's pieces, assembled by index, are the same call.
    events = list(p.complete_stream(CompleteStreamRequest(**req)))
    assert events[-1].finished.finish_reason == FinishReason.FINISH_REASON_TOOL_CALLS
    assert not "".join(e.delta.text for e in events)
    assert tool_calls(events) == calls

    # Send the call and its result back: the answer quotes the result.
    result = json.dumps({"city": args["city"], "temperature": 21, "unit": args["unit"], "conditions": "sunny"})
    answer = p.chat.complete(CompleteRequest(model="sim-small", tools=[GET_WEATHER],
                                             messages=[*messages, res.message, tool_result(calls[0].id, result)]))
    assert answer.finish_reason == FinishReason.FINISH_REASON_STOP
    assert result in _text(answer.message), _text(answer.message)


def test_json_schema(parley_server):
    p = Parley(parley_server["url"], api_key=parley_server["key"])
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
                       "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    res = p.chat.complete(CompleteRequest(
        model="sim-small", messages=[user_text("Describe a person.")],
        response_format=ResponseFormat(type=ResponseFormatType.RESPONSE_FORMAT_TYPE_JSON_SCHEMA, name="person",
                                       schema=schema, strict=True)))
    assert res.finish_reason == FinishReason.FINISH_REASON_STOP
    doc = json.loads(_text(res.message))
    assert {"name", "age"} <= doc.keys(), _text(res.message)
    assert isinstance(doc["name"], str) and isinstance(doc["age"], int) and 0 <= doc["age"] <= 150


def test_session_cookie(parley_server):
    import urllib.request
    import json

    req = urllib.request.Request(parley_server["url"] + "/parley.v1.AuthService/SignUp", method="POST",
                                 data=json.dumps({"email": "py-cookie@example.com", "password": "cookie-password-1"}).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as res:
        session = re.search(r"Session_id=([^;]+)", res.headers["set-cookie"]).group(1)
    p = Parley(parley_server["url"], session=session)
    me = p.auth.get_me(__import__("parley.v1.auth_pb2", fromlist=["x"]).GetMeRequest())
    assert me.user.email == "py-cookie@example.com"


def test_errors(parley_server):
    p = Parley(parley_server["url"], api_key="pk_nope")
    with pytest.raises(ConnectError) as e:
        p.models.list_models(model_pb2.ListModelsRequest())
    assert e.value.code == Code.UNAUTHENTICATED
    assert retry_after(e.value) is None
    # The login throttle answers resource_exhausted with RetryInfo.
    from parley.v1 import auth_pb2
    anon = Parley(parley_server["url"])
    err = None
    for _ in range(40):
        try:
            anon.auth.login(auth_pb2.LoginRequest(email="nobody@example.com", password="wrong-password-1"))
        except ConnectError as ex:
            if ex.code == Code.RESOURCE_EXHAUSTED:
                err = ex
                break
    assert err is not None and retry_after(err) > 0


def test_streaming_overhead(parley_server, capsys):
    n = 30
    raw = chat_connect.ChatServiceClientSync(parley_server["url"])
    headers = {"authorization": f"Bearer {parley_server['key']}"}
    t0 = time.perf_counter()
    raw_events = sum(1 for _ in range(n) for _ in raw.complete_stream(prompt("sim-small", "measure"), headers=headers))
    raw_s = time.perf_counter() - t0
    p = Parley(parley_server["url"], api_key=parley_server["key"])
    t0 = time.perf_counter()
    sdk_events = sum(1 for _ in range(n) for _ in p.complete_stream(prompt("sim-small", "measure")))
    sdk_s = time.perf_counter() - t0
    assert raw_events == sdk_events
    with capsys.disabled():
        print(f"\nstreaming {n} answers ({raw_events} events): raw {raw_s*1000:.1f} ms ({raw_s/raw_events*1e6:.1f} µs/event), "
              f"SDK {sdk_s*1000:.1f} ms ({sdk_s/sdk_events*1e6:.1f} µs/event)")
