// code_interpreter through the loop: the fake upstream is scripted to call
// the code tool; the code really runs (e2b fake, local sandbox).
import { test, describe, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";
import { startStack, KEYS, sseEvents, eventually } from "./harness.mjs";
import { validate } from "./schema.mjs";

const CI = [{ type: "code_interpreter", container: { type: "auto" } }];
const WEATHER_R = { type: "function", name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } };
const WEATHER_C = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } };

for (const tool of ["e2b", "local"]) {
  describe(`interception with the ${tool} sandbox`, () => {
    let stack, client;

    before(async () => {
      stack = await startStack({ sandboxes: true, interceptionTool: tool });
      client = new OpenAI({ apiKey: KEYS.alice, baseURL: stack.url("/v1"), maxRetries: 0 });
    });
    after(async () => { await stack?.stop(); });
    beforeEach(async () => {
      await stack.resetFake();
      await stack.fakeHook("e2b", "faults", {});
      // Each test starts without the containers earlier ones kept.
      for (const s of (await stack.call("GET", "/v1/sandboxes")).json.data)
        await stack.call("DELETE", `/v1/sandboxes/${s.id}`);
    });

    async function upstreamBodies(model) {
      return (await stack.fakeRequests()).filter((q) => q.body?.model === model).map((q) => q.body);
    }
    // What is left: a Responses answer's container, kept for its
    // conversation's follow-ups (container_reuse's default), and nothing
    // else; a Chat request's or a failed one's own sandbox is deleted
    // (just after its answer).
    async function noSandboxLeft(r) {
      const kept = [...new Set((r?.output ?? []).filter((o) => o.type === "code_interpreter_call").map((o) => o.container_id))];
      await eventually(async () => {
        const l = await stack.call("GET", "/v1/sandboxes");
        assert.deepEqual(l.json.data.map((s) => s.id), kept, "no sandbox row left but the conversation's");
        if (tool === "e2b") {
          const s = await stack.fakeHook("e2b", "stats");
          assert.equal(s.live.length, kept.length);
          assert.equal(s.creates, s.deletes + kept.length);
        }
      });
    }

    test("Responses: the product of the first six primes, through the SDK", async () => {
      const r = await client.responses.create({ model: "ci-primes", input: "Multiply the first six primes.", tools: CI });
      validate("Response", r);
      assert.match(r.output_text, /30030/);
      const ci = r.output.find((o) => o.type === "code_interpreter_call");
      assert.equal(ci.status, "completed");
      assert.equal(ci.code, "print(2*3*5*7*11*13)");
      assert.match(ci.container_id, /^cntr_[0-9a-f]{32}$/);
      assert.equal(ci.outputs, null, "outputs only when include asks");
      assert.deepEqual(r.output.map((o) => o.type), ["code_interpreter_call", "message"]);
      assert.deepEqual(r.tools, CI, "tools echo what the client sent");
      const bodies = await upstreamBodies("ci-primes");
      assert.equal(bodies.length, 2);
      for (const b of bodies) {
        assert.ok(!b.tools.some((t) => t.type === "code_interpreter"), "no native tool upstream");
        assert.equal(b.tools[0].name, "litellm_code_execution");
        assert.equal(b.stream, true);
      }
      const out = bodies[1].input.find((i) => i.type === "function_call_output");
      assert.match(out.output, /30030/);
      assert.ok(bodies[1].input.some((i) => i.type === "function_call"), "the turn is replayed as it came");
      // Usage adds up over both turns (the fake: 10 and 20 input tokens).
      assert.equal(r.usage.input_tokens, 30);
      assert.equal(r.usage.output_tokens, 5 + 6);
      assert.equal(r.usage.total_tokens, 30 + 11);
      await noSandboxLeft(r);
    });

    test("Chat: 30030 in content, internal calls hidden, usage summed", async () => {
      const r = await client.chat.completions.create({ model: "ci-primes", messages: [{ role: "user", content: "primes" }], tools: CI });
      validate("CreateChatCompletionResponse", r);
      assert.match(r.choices[0].message.content, /30030/);
      assert.equal(r.choices[0].message.tool_calls, undefined);
      assert.equal(r.choices[0].finish_reason, "stop");
      const reqs = (await stack.fakeRequests()).filter((q) => q.body?.model === "ci-primes");
      const usages = reqs.map((q) => JSON.parse(q.response_body.split("\n\n").filter((c) => c.includes('"usage":{')).pop().slice(6)).usage);
      assert.equal(r.usage.prompt_tokens, usages.reduce((a, u) => a + u.prompt_tokens, 0));
      assert.equal(r.usage.completion_tokens, usages.reduce((a, u) => a + u.completion_tokens, 0));
      const second = reqs[1].body.messages;
      assert.equal(second.at(-1).role, "tool");
      assert.match(second.at(-1).content, /30030/);
      await noSandboxLeft();
    });

    test("include code_interpreter_call.outputs: logs and the state across two rounds", async () => {
      const r = await client.responses.create({ model: "ci-two", input: "go", tools: CI, include: ["code_interpreter_call.outputs"] });
      const calls = r.output.filter((o) => o.type === "code_interpreter_call");
      assert.equal(calls.length, 2);
      assert.equal(calls[0].container_id, calls[1].container_id, "one sandbox per request");
      assert.deepEqual(calls[1].outputs, [{ type: "logs", logs: "43\n" }]);
      assert.match(r.output_text, /43/);
      const first = (await upstreamBodies("ci-two"))[0];
      assert.ok(!(first.include ?? []).includes("code_interpreter_call.outputs"), "not sent upstream");
      await noSandboxLeft(r);
    });

    test("a raising cell: the call is completed and the answer mentions the error", async () => {
      const r = await client.responses.create({ model: "ci-raise", input: "divide", tools: CI, include: ["code_interpreter_call.outputs"] });
      const ci = r.output.find((o) => o.type === "code_interpreter_call");
      assert.equal(ci.status, "completed");
      assert.match(ci.outputs[0].logs, /ZeroDivisionError/);
      assert.match(r.output_text, /ZeroDivisionError/);
      await noSandboxLeft(r);
    });

    test("an endless caller ends with 200 after N + 1 upstream calls, the last with tool_choice none", async () => {
      const r = await client.chat.completions.create({ model: "ci-endless", messages: [{ role: "user", content: "loop" }], tools: CI });
      assert.match(r.choices[0].message.content, /gave up after 3/);
      const bodies = await upstreamBodies("ci-endless");
      assert.equal(bodies.length, 4, "max_agentic_loops = 3 for this model");
      assert.equal(bodies[3].tool_choice, "none");
      assert.ok(bodies.slice(0, 3).every((b) => b.tool_choice !== "none"));
      await noSandboxLeft();
    });

    test("an identical repeat ends the loop early", async () => {
      const r = await client.responses.create({ model: "ci-repeat", input: "again", tools: CI });
      assert.match(r.output_text, /stopped repeating/);
      const bodies = await upstreamBodies("ci-repeat");
      assert.equal(bodies.length, 3, "call, identical call, then tool_choice none");
      assert.equal(bodies[2].tool_choice, "none");
    });

    test("a forced code choice is sent first, then dropped; control fields never go upstream", async () => {
      const r = await client.responses.create({
        model: "ci-primes", input: "x", tools: CI, tool_choice: { type: "code_interpreter" },
        // @ts-ignore: forged loop state a client must not be able to set
        _agentic_loop_depth: 7, max_agentic_loops: 99, _code_interpreter_interception_active: true,
      });
      assert.match(r.output_text, /30030/);
      const bodies = await upstreamBodies("ci-primes");
      assert.deepEqual(bodies[0].tool_choice, { type: "function", name: "litellm_code_execution" });
      assert.equal(bodies[1].tool_choice, undefined);
      for (const b of bodies)
        for (const k of Object.keys(b)) assert.ok(!k.startsWith("_") && k !== "max_agentic_loops", k);
      assert.deepEqual(r.tool_choice, { type: "code_interpreter" });
    });

    test("bad arguments get a clear message and nothing runs", async () => {
      const r = await client.responses.create({ model: "ci-badargs", input: "x", tools: CI });
      assert.match(r.output_text, /code/);
      const ci = r.output.find((o) => o.type === "code_interpreter_call");
      assert.equal(ci.code, null);
    });

    test("a client function call comes back to the client with the code already run", async () => {
      const r = await client.responses.create({ model: "ci-clientfn", input: "weather", tools: [...CI, WEATHER_R] });
      const fc = r.output.find((o) => o.type === "function_call");
      assert.equal(fc.name, "get_weather");
      assert.ok(r.output.some((o) => o.type === "code_interpreter_call"));
      const c = await client.chat.completions.create({ model: "ci-clientfn", messages: [{ role: "user", content: "w" }], tools: [...CI, WEATHER_C] });
      assert.equal(c.choices[0].finish_reason, "tool_calls");
      assert.deepEqual(c.choices[0].message.tool_calls.map((t) => t.function.name), ["get_weather"]);
      await noSandboxLeft(r);
    });

    test("upstream 429 → 429, nothing left", async () => {
      await assert.rejects(client.responses.create({ model: "fault-429", input: "x", tools: CI }), (e) => e.status === 429);
      await noSandboxLeft();
    });

    test("reasoning items are kept for the client and replayed upstream; store:false asks for them encrypted", async () => {
      const r = await client.responses.create({ model: "ci-reason", input: "think", tools: CI, store: false });
      assert.deepEqual(r.output.map((o) => o.type), ["reasoning", "code_interpreter_call", "reasoning", "message"]);
      const bodies = await upstreamBodies("ci-reason");
      assert.ok(bodies[0].include.includes("reasoning.encrypted_content"));
      const replayed = bodies[1].input.find((i) => i.type === "reasoning");
      assert.ok(replayed, "reasoning replayed on the follow-up");
      assert.match(replayed.encrypted_content, /^enc_/);
      assert.equal(r.usage.output_tokens_details.reasoning_tokens, 4, "details add up too");
    });

    test("a second request replaying the first's output continues", async () => {
      const user = { role: "user", content: "Multiply the first six primes." };
      const r1 = await client.responses.create({ model: "ci-primes", input: [user], tools: CI, include: ["code_interpreter_call.outputs"] });
      await stack.resetFake();
      const r2 = await client.responses.create({ model: "ci-primes", input: [user, ...r1.output, { role: "user", content: "Again?" }], tools: CI });
      assert.match(r2.output_text, /30030/);
      const first = (await upstreamBodies("ci-primes"))[0];
      assert.ok(!first.input.some((i) => i.type === "code_interpreter_call"), "no native item upstream");
      const ci = r1.output.find((o) => o.type === "code_interpreter_call");
      const fc = first.input.find((i) => i.type === "function_call");
      // sandgate holds the call: the upstream gets the pair it saw, with
      // its own call id, never sandgate's item id.
      assert.notEqual(fc.call_id, ci.id);
      assert.match(fc.call_id, /^call_/);
      assert.deepEqual(JSON.parse(fc.arguments), { code: "print(2*3*5*7*11*13)" });
      const fo = first.input.find((i) => i.type === "function_call_output");
      assert.equal(fo.call_id, fc.call_id);
      assert.equal(fo.output, "30030\n");
    });

    test("previous_response_id continues; unknown or another key's id → 400", async () => {
      const r1 = await client.responses.create({ model: "ci-primes", input: "primes", tools: CI });
      const upstreamLast = (await stack.fakeRequests()).filter((q) => q.body?.model === "ci-primes").at(-1);
      const upstreamId = JSON.parse(upstreamLast.response_body.split("\n\n").find((b) => b.includes("response.completed")).split("data: ")[1]).response.id;
      await stack.resetFake();
      const r2 = await client.responses.create({ model: "ci-primes", previous_response_id: r1.id, input: "again", tools: CI });
      assert.equal(r2.previous_response_id, r1.id, "the client's own id is echoed");
      assert.equal((await upstreamBodies("ci-primes"))[0].previous_response_id, upstreamId);
      await assert.rejects(client.responses.create({ model: "ci-primes", previous_response_id: "resp_nope", input: "x", tools: CI }),
        (e) => e.status === 400 && e.code === "previous_response_not_found");
      const bob = new OpenAI({ apiKey: KEYS.bob, baseURL: stack.url("/v1"), maxRetries: 0 });
      await assert.rejects(bob.responses.create({ model: "ci-primes", previous_response_id: r1.id, input: "x", tools: CI }),
        (e) => e.status === 400 && e.code === "previous_response_not_found");
    });

    if (tool === "e2b") {
      test("a sandbox that cannot be created → 502 naming the tool, nothing left", async () => {
        await stack.fakeHook("e2b", "faults", { create_status: 500, count: 1 });
        await assert.rejects(client.responses.create({ model: "ci-primes", input: "x", tools: CI }),
          (e) => e.status === 502 && /e2b/.test(e.message));
        await noSandboxLeft();
      });

      // Once "The interception loop failed." (500): a provider that says
      // the sandbox is gone when given a file, or stops answering, in a
      // new sandbox too.
      for (const [what, fault] of [["cannot take the request's files", { files_status: 404 }],
        ["stops answering, and its replacement too", { execute_status: 502 }]]) {
        test(`a sandbox that ${what} → 502 naming the tool, no retry, no address, nothing left`, async () => {
          const file = await client.files.create({ file: await toFile(Buffer.from("a,b\n"), "in.csv"), purpose: "user_data" });
          const body = { model: "ci-primes", input: "x", tools: [{ type: "code_interpreter", container: { type: "auto", file_ids: [file.id] } }] };
          await stack.fakeHook("e2b", "faults", { ...fault, count: 10 });
          const r = await stack.call("POST", "/v1/responses", body);
          assert.equal(r.status, 502, r.text);
          assert.equal(r.headers.get("x-should-retry"), "false");
          validate("ErrorResponse", r.json);
          assert.match(r.json.error.message, /^Sandbox tool e2b: /);
          assert.doesNotMatch(r.text, /https?:|127\.0\.0\.1|interception loop/);
          const s = await stack.call("POST", "/v1/responses", { ...body, stream: true });
          const failed = sseEvents(s.text).filter((e) => e.event === "error").map((e) => JSON.parse(e.data));
          assert.equal(failed.length, 1, s.text.slice(-500));
          assert.match(failed[0].message, /^Sandbox tool e2b: /);
          await stack.fakeHook("e2b", "faults", {});
          await noSandboxLeft();
          await client.files.delete(file.id);
        });
      }
    }
  });
}
