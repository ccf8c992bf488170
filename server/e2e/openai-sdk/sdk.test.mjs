// The official OpenAI Node SDK against a live Parley gateway, unchanged:
// PARLEY_URL, PARLEY_KEY (funded) and PARLEY_BROKE_KEY (no balance) come
// from server/e2e/openai_sdk_test.go, which starts the gateway.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";

const baseURL = process.env.PARLEY_URL + "/v1";
const client = new OpenAI({ baseURL, apiKey: process.env.PARLEY_KEY, maxRetries: 0 });

test("streams a completion with usage", async () => {
  const stream = await client.chat.completions.create({
    model: "sim-small",
    messages: [{ role: "user", content: "Hello from the OpenAI SDK" }],
    max_tokens: 20,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let usage = null;
  let deltas = 0;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) {
      text += chunk.choices[0].delta.content;
      deltas++;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(text.length > 0, "no text streamed");
  assert.ok(usage, "no usage chunk");
  assert.equal(usage.completion_tokens, deltas);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
});

test("non-stream completion", async () => {
  const res = await client.chat.completions.create({
    model: "sim-small",
    messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
    max_completion_tokens: 10,
  });
  assert.equal(res.object, "chat.completion");
  assert.ok(res.choices[0].message.content.length > 0);
});

test("lists models", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes("sim-small"), ids.join(","));
});

test("a bad key is an AuthenticationError", async () => {
  const bad = new OpenAI({ baseURL, apiKey: "pk_not_a_key", maxRetries: 0 });
  await assert.rejects(
    bad.chat.completions.create({ model: "sim-small", messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401,
  );
});

test("an unknown model is a NotFoundError", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404,
  );
});

test("an empty balance is a RateLimitError with insufficient_quota", async () => {
  const broke = new OpenAI({ baseURL, apiKey: process.env.PARLEY_BROKE_KEY, maxRetries: 0 });
  await assert.rejects(
    broke.chat.completions.create({ model: "sim-small", messages: [{ role: "user", content: "x" }], stream: true }),
    (e) => e instanceof OpenAI.RateLimitError && e.status === 429 && e.code === "insufficient_quota",
  );
});

const weatherParams = {
  type: "object",
  properties: {
    location: { type: "string", description: "City name" },
    unit: { type: "string", enum: ["celsius", "fahrenheit"] },
  },
  required: ["location"],
};

test("runTools calls both functions and ends with text", async () => {
  const calls = { get_weather: 0, get_time: 0 };
  const runner = client.chat.completions.runTools({
    model: "sim-small",
    messages: [{ role: "user", content: "Use get_weather and get_time for Paris" }],
    tools: [
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "Current weather for a location.",
          parameters: weatherParams,
          parse: JSON.parse,
          function: async (args) => {
            calls.get_weather++;
            assert.equal(typeof args.location, "string");
            return { location: args.location, sky: "sunny", celsius: 21 };
          },
        },
      },
      {
        type: "function",
        function: {
          name: "get_time",
          description: "Current local time for a location.",
          parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
          parse: JSON.parse,
          function: async (args) => {
            calls.get_time++;
            assert.equal(typeof args.location, "string");
            return { location: args.location, time: "14:05" };
          },
        },
      },
    ],
  });
  const content = await runner.finalContent();
  assert.equal(typeof content, "string");
  assert.ok(content.includes("sunny") && content.includes("14:05"), `the tool results did not reach the model: ${content}`);
  assert.ok(calls.get_weather >= 1 && calls.get_time >= 1, JSON.stringify(calls));
  const msgs = runner.messages;
  const toolCallIds = new Map();
  for (const m of msgs) {
    if (m.role === "assistant") for (const tc of m.tool_calls ?? []) toolCallIds.set(tc.id, tc.function.name);
  }
  const answered = msgs.filter((m) => m.role === "tool").map((m) => toolCallIds.get(m.tool_call_id));
  assert.ok(answered.includes("get_weather") && answered.includes("get_time"), JSON.stringify(msgs));
  assert.ok(msgs.filter((m) => m.role === "assistant").length >= 2, "expected a tool-call turn and an answer turn");
  assert.equal(msgs.at(-1).role, "assistant");
});

test("a streamed tool call, accumulated by the stream helper", async () => {
  const stream = client.chat.completions.stream({
    model: "sim-small",
    messages: [{ role: "user", content: "What is the weather in Paris?" }],
    tools: [{ type: "function", function: { name: "get_weather", parameters: weatherParams } }],
    tool_choice: "required",
    stream_options: { include_usage: true },
  });
  let argDeltas = 0;
  let usage = null;
  stream.on("tool_calls.function.arguments.delta", () => argDeltas++);
  stream.on("chunk", (chunk) => {
    if (chunk.usage) usage = chunk.usage;
  });
  const done = await stream.finalChatCompletion();
  const choice = done.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.ok(call.id);
  assert.equal(call.function.name, "get_weather");
  assert.equal(typeof JSON.parse(call.function.arguments).location, "string");
  assert.ok(argDeltas >= 1);
  assert.ok(usage && usage.completion_tokens > 0, "no usage chunk");
});

test("retrieves a model", async () => {
  const m = await client.models.retrieve("sim-small");
  assert.equal(m.id, "sim-small");
  assert.equal(m.object, "model");
  await assert.rejects(client.models.retrieve("nope"), (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});
