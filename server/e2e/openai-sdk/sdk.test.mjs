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
    client.chat.completions.create({ model: "gpt-nope", messages: [{ role: "user", content: "x" }] }),
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
