"""The official OpenAI Python SDK's Responses API (client.responses) and
langchain-openai's ChatOpenAI(use_responses_api=True), unchanged, against a
live Parley gateway: whole and streamed responses, function calls sent back
as function_call_output, previous_response_id, retrieve / input_items /
delete, structured output with responses.parse, and what is refused.

The gateway's "sim-small" model calls a tool when tool_choice is "required"
or names a function, or in auto mode when the last user message names a
tool; after a tool's output it answers by quoting it; with a json_schema
text format its text is JSON valid against the schema."""
import json
from typing import Optional

import openai
import pytest
from pydantic import BaseModel

MODEL = "sim-small"

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a location.",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "City name"}},
        "required": ["location"],
        "additionalProperties": False,
    },
    "strict": True,
}


class Person(BaseModel):
    name: str
    age: int
    email: Optional[str]


def test_create(client):
    r = client.responses.create(model=MODEL, input="Tell me a story.", instructions="Be brief.",
                                metadata={"topic": "stories"}, user="end-user-1")
    assert r.object == "response" and r.id.startswith("resp_") and r.status == "completed"
    assert r.output_text and r.output[0].type == "message" and r.output[0].role == "assistant"
    assert r.instructions == "Be brief." and r.metadata == {"topic": "stories"} and r.store is True
    u = r.usage
    assert u.input_tokens > 0 and u.output_tokens > 0 and u.total_tokens == u.input_tokens + u.output_tokens
    assert u.input_tokens_details.cached_tokens >= 0 and u.output_tokens_details.reasoning_tokens == 0


def test_max_output_tokens_is_incomplete(client):
    r = client.responses.create(model=MODEL, input="Tell me a long story.", max_output_tokens=16)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 16 and r.output_text


def test_stream_helper(client):
    with client.responses.stream(model=MODEL, input="Tell me a story.") as stream:
        deltas = [ev.delta for ev in stream if ev.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert len(deltas) > 1 and "".join(deltas) == final.output_text
    assert final.status == "completed" and final.usage.output_tokens > 0


def test_stream_true(client):
    events = list(client.responses.create(model=MODEL, input="Tell me a story.", stream=True))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"], types
    assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"], types
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text and text == events[-1].response.output_text


def test_function_call_round_trip(client):
    r = client.responses.create(model=MODEL, input="What is the weather in Paris?", tools=[WEATHER],
                                tool_choice="required")
    calls = [o for o in r.output if o.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather" and calls[0].call_id, r.output
    assert isinstance(json.loads(calls[0].arguments)["location"], str)

    # Stored: the output goes back with previous_response_id.
    out = {"type": "function_call_output", "call_id": calls[0].call_id, "output": json.dumps({"temperature": 18})}
    answer = client.responses.create(model=MODEL, previous_response_id=r.id, tools=[WEATHER], input=[out])
    assert 'The get_weather tool returned: {"temperature": 18}' in answer.output_text
    assert answer.previous_response_id == r.id

    # Stateless: the caller sends the conversation, the model's output as it came.
    items = [{"role": "user", "content": "What is the weather in Paris?"}, *r.output, out]
    again = client.responses.create(model=MODEL, store=False, tools=[WEATHER], input=items)
    assert 'The get_weather tool returned: {"temperature": 18}' in again.output_text
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(again.id)


def test_stream_function_call(client):
    with client.responses.stream(model=MODEL, input="Weather in Oslo?", tools=[WEATHER],
                                 tool_choice={"type": "function", "name": "get_weather"}) as stream:
        deltas = [ev.delta for ev in stream if ev.type == "response.function_call_arguments.delta"]
        final = stream.get_final_response()
    call = final.output[0]
    assert call.type == "function_call" and call.arguments == "".join(deltas)
    assert call.parsed_arguments["location"]  # strict tool: the SDK parses its arguments


def test_previous_response_id(client):
    first = client.responses.create(model=MODEL, input="My name is Ada.")
    second = client.responses.create(model=MODEL, input="What is my name?", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    # The stored exchange is in the prompt.
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    items = client.responses.input_items.list(second.id, order="asc")
    texts = [c.text for item in items.data for c in item.content]
    assert texts == ["My name is Ada.", first.output_text, "What is my name?"], texts


def test_retrieve_and_delete(client):
    r = client.responses.create(model=MODEL, input="Remember this.", metadata={"k": "v"})
    got = client.responses.retrieve(r.id)
    assert got.id == r.id and got.output_text == r.output_text and got.metadata == {"k": "v"}
    assert got.usage.total_tokens == r.usage.total_tokens
    client.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=MODEL, input="And?", previous_response_id=r.id)
    assert e.value.param == "previous_response_id"


def test_parse_text_format(client):
    r = client.responses.parse(model=MODEL, input="Invent a person.", text_format=Person)
    p = r.output_parsed
    assert isinstance(p, Person) and isinstance(p.name, str) and isinstance(p.age, int)


def test_refused_by_name(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="hi", reasoning={"effort": "extreme"})
    assert e.value.param == "reasoning"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="hi", tools=[{"type": "web_search"}])
    assert e.value.param == "tools[0].type"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="hi", background=True, store=False)
    assert e.value.param == "background"


# --- langchain-openai over the Responses API -----------------------------------------


@pytest.fixture(scope="module")
def rllm(base_url, key):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=base_url, api_key=key, model=MODEL, max_retries=0, use_responses_api=True)


def test_langchain_responses_invoke(rllm):
    msg = rllm.invoke("Tell me a story.")
    assert msg.text and msg.response_metadata.get("id", "").startswith("resp_"), msg
    assert msg.usage_metadata["output_tokens"] > 0


def test_langchain_responses_bind_tools(rllm):
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool

    @tool
    def get_weather(location: str) -> str:
        """Current weather for a location."""
        return f"Sunny in {location}"

    model = rllm.bind_tools([get_weather])
    human = HumanMessage("What is the weather in Paris? Use get_weather.")
    ai = model.invoke([human])
    assert ai.tool_calls and ai.tool_calls[0]["name"] == "get_weather", ai
    assert isinstance(ai.tool_calls[0]["args"].get("location"), str)
    answer = model.invoke([human, ai, get_weather.invoke(ai.tool_calls[0])])
    assert not answer.tool_calls and "Sunny in" in answer.text, answer
