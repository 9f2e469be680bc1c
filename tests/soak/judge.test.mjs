// The soak's verdicts bite: made-up answers with one fault each are found
// out, good ones pass. No stack needed: node --test tests/soak/
import { test } from "node:test";
import assert from "node:assert/strict";
import { judge, leaks, plan } from "./soak.mjs";
import { UPSTREAM_KEY } from "../integration/harness.mjs";

const J = JSON.stringify;
const json = (status, obj, expect, more = {}) =>
  ({ status, ctype: "application/json", requestId: "req_1", text: J(obj), json: obj, expect, ...more });
const sse = (text, expect) => ({ status: 200, ctype: "text/event-stream; charset=utf-8", text, expect });
const chat = (content) => ({ id: "chatcmpl-1", object: "chat.completion", created: 1, model: "m",
  choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: "stop" }] });
const chunk = (content) => `data: ${J({ id: "c", object: "chat.completion.chunk", created: 1, model: "m",
  choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }] })}\n\n`;
const err = { error: { message: "boom", type: "server_error", param: null, code: null } };
const echo = { api: "chat", ok: [200], echo: "echo: hi" };

test("a good answer, error and stream pass", () => {
  assert.equal(judge(json(200, chat("echo: hi"), echo)).outcome, "ok");
  assert.equal(judge(json(502, err, { api: "chat", ok: [502] })).outcome, "error");
  assert.equal(judge(sse(chunk("echo: hi") + "data: [DONE]\n\n", { ...echo, stream: true })).outcome, "ok");
  assert.equal(judge(sse(chunk("a") + `data: ${J(err)}\n\n`, { api: "chat", stream: true, ok: [200], mustErrEnd: true })).outcome, "error-end");
});

test("wrong text, wrong shape, wrong status, no request id, a bad error are malformed", () => {
  const bad = [
    json(200, chat("echo: ho"), echo),
    json(200, { object: "chat.completion" }, echo),
    json(500, err, echo),
    json(500, err, { api: "chat", ok: [500] }, { requestId: null }),
    json(502, { error: { message: "x" } }, { api: "chat", ok: [502] }),
    { status: 500, ctype: "text/html", text: "<html>500</html>", expect: echo },
  ];
  for (const rec of bad) assert.equal(judge(rec).outcome, "abnormal", rec.text);
});

test("streams must end: [DONE] or an error for Chat; in order, with an end event, for Responses", () => {
  assert.equal(judge(sse(chunk("echo: hi"), { ...echo, stream: true })).outcome, "abnormal");
  assert.equal(judge(sse(`data: ${J(err)}\n\n`, { ...echo, stream: true })).outcome, "abnormal", "an error where none may be");
  const ev = (type, seq) => `event: ${type}\ndata: ${J({ type, sequence_number: seq, code: "x", message: "m", param: null })}\n\n`;
  const resp = { api: "resp", stream: true, ok: [200], mustErrEnd: true };
  assert.equal(judge(sse(ev("error", 0), resp)).outcome, "error-end");
  assert.equal(judge(sse(ev("error", 3), resp)).outcome, "abnormal", "sequence numbers start at 0");
});

test("secrets and internal addresses are found anywhere; lighttpd's DTD link is not one", () => {
  assert.deepEqual(leaks({ ctype: "application/json", text: `{"x":"${UPSTREAM_KEY}"}` }), [UPSTREAM_KEY]);
  assert.deepEqual(leaks({ ctype: "application/json", text: "at http://127.0.0.1:9/v1" }), ["127.0.0.1", "http://"]);
  assert.deepEqual(leaks({ ctype: "text/html", text: '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd"' }), []);
});

test("the plan is the seed's: same seed, same plan; N requests' worth", () => {
  assert.deepEqual(plan(500, 7), plan(500, 7));
  assert.notDeepEqual(plan(500, 7), plan(500, 8));
  const cost = { sbx: 3, "local-sbx": 3, "local-ci": 3 };
  assert.equal(plan(500, 7).reduce((a, o) => a + (cost[o.kind] ?? 1), 0), 500);
});

test("background responses: queued when created, an error exactly when failed, background set", () => {
  const resp = (more) => ({ id: "resp_1", object: "response", created_at: 1, status: "queued", background: true,
    completed_at: null, error: null, incomplete_details: null, instructions: null, max_output_tokens: null,
    max_tool_calls: null, model: "m", output: [], parallel_tool_calls: true, previous_response_id: null,
    reasoning: { effort: null, summary: null }, service_tier: "auto", store: true, temperature: 1,
    text: { format: { type: "text" } }, tool_choice: "auto", tools: [], top_p: 1, truncation: "disabled",
    usage: null, user: null, metadata: {}, ...more });
  const failed = { status: "failed", error: { code: "server_error", message: "gone" } };
  const create = { api: "bg", ok: [200], queued: true }, get = { api: "bg", ok: [200] };
  assert.equal(judge(json(200, resp(), create)).outcome, "ok");
  assert.equal(judge(json(200, resp(failed), get)).outcome, "ok");
  assert.equal(judge(json(200, resp({ status: "cancelled" }), get)).outcome, "ok");
  const bad = [
    json(200, resp({ status: "in_progress" }), create),
    json(200, resp({ background: false }), get),
    json(200, resp({ status: "failed" }), get),
    json(200, resp({ ...failed, error: { message: "no code" } }), get),
    json(200, resp({ status: "completed", error: failed.error }), get),
    json(200, resp({ status: "done" }), get),
  ];
  for (const rec of bad) assert.equal(judge(rec).outcome, "abnormal", rec.text);
});
