import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CoderResult } from "../src/nodes/coder/types.js";
import { runGraph } from "../src/index.js";
import { cleanEnv, ROOT } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAIServer } from "./helpers/mock-openai.js";
import type { ApprovalRequest } from "../src/runtime/approval.js";
import type { RunEvent } from "../src/runtime/events.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

const FIXTURES = join(ROOT, "tests/fixtures/coder");
/** A git repository (nothing committed) with an untracked README.md. */
const workspace = (): Workspace => tempWorkspace({ git: "init", files: { "README.md": "# demo\n" } });

async function mockServer(): Promise<MockOpenAIServer> {
  const server = await startMockOpenAI();
  onCleanup(() => server.close());
  return server;
}

/** The text of every message of a recorded chat-completion request. */
const requestText = (body: { messages: Array<{ content: unknown }> }): string => body.messages.map((m) => JSON.stringify(m.content)).join("\n");

describe("coder node (in-process API)", () => {
  it("compresses older turns when the history passes the token budget, and loads AGENTS.md into the prompt", async () => {
    const ws = workspace();
    writeFileSync(join(ws.dir, "AGENTS.md"), "Always run the tests. RULE-MARKER\n");
    writeFileSync(join(ws.dir, "a.txt"), `${"alpha-content ".repeat(150)}\n`);
    writeFileSync(join(ws.dir, "b.txt"), "bravo-content\n");
    const server = await mockServer();
    server.enqueue(
      { toolCalls: [{ name: "read_file", args: { path: "a.txt" } }] },
      { toolCalls: [{ name: "read_file", args: { path: "b.txt" } }] },
      { text: "SUMMARY-TEXT: read a.txt, it repeats alpha-content." },
      { text: "done" },
    );
    const events: RunEvent[] = [];
    const outcome = await runGraph({
      graph: join(FIXTURES, "compress.yaml"), task: "read the files", workspace: ws.dir, db: ws.db,
      model: "openai:gpt-test", approval: "auto", env: cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
      onEvent: (event) => events.push(event),
    });
    // The compression is an event of its own, and the summary (for the model) does not stream to the user.
    const compression = events.find((e) => e.type === "compression");
    expect(compression).toMatchObject({ type: "compression", node: "coder", removedMessages: 2 });
    expect(events.some((e) => e.type === "message" && `${e.delta ?? ""}${e.content ?? ""}`.includes("SUMMARY-TEXT"))).toBe(false);
    const deltas = events.filter((e) => e.type === "message" && e.delta !== undefined);
    expect(events.indexOf(compression!)).toBeLessThan(events.indexOf(deltas.at(-1)!));
    expect(outcome.status, outcome.error).toBe("finished");
    expect(server.requests).toHaveLength(4);
    const [first, , summarise, last] = server.requests.map((r) => r.body as { messages: Array<{ role: string; content: unknown }> });
    expect(first!.messages[0]!.role).toBe("system");
    expect(JSON.stringify(first!.messages[0]!.content)).toContain("RULE-MARKER");
    expect(requestText(summarise!)).toContain("alpha-content");
    const finalText = requestText(last!);
    expect(finalText).toContain("[Summary of earlier work]");
    expect(finalText).toContain("SUMMARY-TEXT");
    expect(finalText).not.toContain("alpha-content alpha-content");
    expect(finalText).toContain("bravo-content");
    expect(finalText).toContain("read the files");
    expect((outcome.state.outputs.coder as CoderResult).status).toBe("success");
  });

  it("an 'always' answer adds a rule for the thread: the next call it covers does not ask, and the prompt said what it covers", async () => {
    const ws = workspace();
    const asked: ApprovalRequest[] = [];
    const outcome = await runGraph({
      graph: "coder", task: "log twice", workspace: ws.dir, db: ws.db, env: {},
      model: `scripted:${join(FIXTURES, "always.script.yaml")}`,
      askApproval: async (request) => {
        asked.push(request);
        return { decision: "always" };
      },
    });
    expect(outcome.status, outcome.error).toBe("finished");
    // A command that writes (here by redirection) is allowed again only exactly; `ls` with any read-only options.
    expect(asked.map((r) => [(r.args as { command: string }).command, r.always])).toEqual([
      ["echo first >> log.txt", "exactly `echo first >> log.txt`, for the rest of this thread"],
      ["echo second >> log.txt", "exactly `echo second >> log.txt`, for the rest of this thread"],
      ["ls -a", "`ls` with read-only options, for the rest of this thread"],
    ]);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("first\nfirst\nsecond\n");
    expect(outcome.state.sessionRules).toHaveLength(3);
  });

  it("a Coder alone that reaches max_steps ends the run by that limit (exit 4), not as finished", async () => {
    const ws = workspace();
    const events: RunEvent[] = [];
    const outcome = await runGraph({
      graph: join(FIXTURES, "step-limit.yaml"), task: "t", workspace: ws.dir, db: ws.db, env: {}, approval: "auto",
      model: `scripted:${join(FIXTURES, "step-limit.script.yaml")}`,
      onEvent: (event) => events.push(event),
    });
    expect(outcome).toMatchObject({ status: "limited", exitCode: 4 });
    expect(outcome.error).toMatch(/the Coder reached its step limit \(max_steps 2 of node "coder"\) before finishing: raise it in .*step-limit\.yaml/);
    expect(events.filter((e) => e.type === "tool_call").map((e) => (e as { name: string }).name)).toEqual(["list_dir", "read_file"]);
    expect(events.at(-1)).toMatchObject({ type: "run_finished", status: "limited", outcome: "limited", exitCode: 4, reason: outcome.error });
    expect(outcome.state.outputs.coder).toBeUndefined();
  });

  it("a Coder inside a loop that reaches max_steps hands a step-limit failure to the Judge instead", async () => {
    const ws = workspace();
    const outcome = await runGraph({
      graph: join(ROOT, "tests/fixtures/looper/failures.yaml"), task: "list the files", workspace: ws.dir, db: ws.db, env: {}, approval: "auto",
      model: `scripted:${join(ROOT, "tests/fixtures/looper/failures.script.yaml")}`,
    });
    expect(outcome.status, outcome.error).toBe("finished");
    const log = outcome.state.messages.map((m) => String(m.content)).join("\n");
    expect(log).toMatch(/coder failed \(step_limit\)/);
  });

  it.each([
    ["truncated JSON", '{"path":"a.txt","contents":"hello wor', /not valid JSON: .+; send them again as one JSON object/],
    ["text that is not JSON", "path=a.txt contents=hello", /not valid JSON: .+; send them again as one JSON object/],
    ["a JSON array", '["a.txt","hello world"]', /not valid JSON: they are an array, not an object; send them again/],
  ])("tool call arguments that are %s never run: the model is answered with invalid_arguments", async (_, args, said) => {
    const ws = workspace();
    const server = await mockServer();
    server.enqueue(
      { text: "Writing.", toolCalls: [{ id: "call_bad", name: "write_file", args }] },
      { text: "I could not write a.txt: my arguments were not valid JSON." },
    );
    const events: RunEvent[] = [];
    const outcome = await runGraph({
      graph: "coder", task: "write a.txt", workspace: ws.dir, db: ws.db, approval: "auto",
      model: "openai:gpt-test", env: cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
      onEvent: (event) => events.push(event),
    });
    expect(outcome.status, outcome.error).toBe("finished");
    expect(existsSync(join(ws.dir, "a.txt"))).toBe(false);
    expect(server.requests).toHaveLength(2);
    // The next request answers the call: the assistant message names it, and a tool message carries the error.
    const messages = (server.requests[1]!.body as { messages: Array<Record<string, any>> }).messages;
    const assistant = messages.find((m) => m.role === "assistant");
    expect(assistant?.tool_calls).toEqual([{ id: "call_bad", type: "function", function: { name: "write_file", arguments: "{}" } }]);
    const answer = messages.find((m) => m.role === "tool");
    expect(answer?.tool_call_id).toBe("call_bad");
    expect(answer?.content).toMatch(/^Error \(invalid_arguments\): the arguments of write_file are not valid JSON: /);
    expect(answer?.content).toMatch(said);
    // Shown and logged like any other call; the Coder reports what the model said, not a write.
    expect(events.filter((e) => e.type === "tool_call")).toMatchObject([{ id: "call_bad", name: "write_file", args }]);
    expect(events.filter((e) => e.type === "tool_result")).toMatchObject([{ id: "call_bad", ok: false }]);
    const result = outcome.state.outputs.coder as CoderResult;
    expect(result.toolCalls).toMatchObject([{ id: "call_bad", name: "write_file", ok: false, errorKind: "invalid_arguments" }]);
    expect(result.filesChanged).toEqual([]);
  });

  it("a Coder alone whose scripted model runs out fails the run (exit 1) with the reason, not a crash and not 'finished'", async () => {
    const ws = workspace();
    const outcome = await runGraph({
      graph: "coder", task: "t", workspace: ws.dir, db: ws.db, env: {}, approval: "auto",
      model: `scripted:${join(ROOT, "tests/fixtures/engine/durable.script.yaml")}`,
    });
    expect(outcome).toMatchObject({ status: "failed", exitCode: 1 });
    expect(outcome.error).toMatch(/^node "coder" failed: scripted model exhausted: no response left for node "coder"/);
  });

  it("a call of an unknown tool or with arguments its tool refuses is answered before the policy: never asked about, even in ask mode", async () => {
    const ws = workspace();
    const script = join(ws.root, "checks.script.yaml");
    writeFileSync(
      script,
      [
        "responses:",
        '  - { node: coder, tool_calls: [ { name: delete_everything, args: { path: "." } } ] }',
        '  - { node: coder, tool_calls: [ { name: docs__search, args: { q: "x" } } ] }',
        '  - { node: coder, tool_calls: [ { name: write_file, args: { path: "notes.txt", content: "typo in the key" } } ] }',
        '  - { node: coder, tool_calls: [ { name: shell, args: { command: "touch made", timeout_ms: "soon" } } ] }',
        '  - { node: coder, content: "gave up" }',
        "",
      ].join("\n"),
    );
    const events: RunEvent[] = [];
    const outcome = await runGraph({ graph: "coder", task: "t", workspace: ws.dir, db: ws.db, env: {}, approval: "ask", model: `scripted:${script}`, onEvent: (event) => events.push(event) });
    expect(outcome.status, outcome.error).toBe("finished");
    const results = events.filter((event) => event.type === "tool_result");
    expect(results.map((event) => [event.name, event.notRun])).toEqual([
      ["delete_everything", "tool_not_found"],
      ["docs__search", "tool_not_found"],
      ["write_file", "invalid_arguments"],
      ["shell", "invalid_arguments"],
    ]);
    expect(results[0]!.result).toMatch(/^unknown tool "delete_everything"; available tools: read_file, /);
    expect(results[2]!.result).toMatch(/^invalid arguments for write_file: contents: /);
    expect(existsSync(join(ws.dir, "notes.txt"))).toBe(false);
    expect(existsSync(join(ws.dir, "made"))).toBe(false);
  });

  it("a streak of eight reads warns the model in the eighth result; the same error three times in a row ends the turn with repeated_error", async () => {
    const ws = workspace();
    const server = await mockServer();
    for (let i = 0; i < 8; i++) server.enqueue({ toolCalls: [{ name: "glob", args: { pattern: `src${i}/**/*.ts` } }] });
    for (let i = 0; i < 3; i++) server.enqueue({ toolCalls: [{ name: "read_file", args: { path: "missing.txt", limit: i + 1 } }] });
    const outcome = await runGraph({
      graph: "coder", task: "t", workspace: ws.dir, db: ws.db, approval: "auto",
      model: "openai:gpt-test", env: cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }),
    });
    // The warning reached the model with the eighth result, not before.
    const lastTool = (index: number) => (server.requests[index]!.body as { messages: { role: string; content: string }[] }).messages.filter((m) => m.role === "tool").at(-1)!.content;
    expect(lastTool(7)).not.toMatch(/in a row without a change/);
    expect(lastTool(8)).toMatch(/that makes 8 reads, searches and listings in a row without a change or a command/);
    expect(server.requests).toHaveLength(11);
    // Alone, the Coder's failure fails the run (in a loop, the Judge gets it as the Coder's result).
    expect(outcome).toMatchObject({ status: "failed", exitCode: 1 });
    expect(outcome.error).toMatch(/the Coder failed \(repeated_error\): the same error 3 times in a row from read_file \(file_not_found: /);
  });

  it("a running command's output comes as tool_output events while it runs, redacted; the model's call is announced as it starts", async () => {
    const ws = workspace();
    const script = join(ws.root, "live.script.yaml");
    // A file of the repository that holds a secret of loopgraph's environment: what is shown live is redacted too.
    writeFileSync(join(ws.dir, "leak.txt"), "s3cret-live-value\n");
    const command = "echo first; cat leak.txt >&2; until [ -e go ]; do sleep 0.05; done; echo second";
    writeFileSync(script, ["responses:", `  - { node: coder, tool_calls: [ { name: shell, args: { command: ${JSON.stringify(command)} } } ] }`, '  - { node: coder, content: "done" }', ""].join("\n"));
    const events: RunEvent[] = [];
    const outcome = await runGraph({
      graph: "coder", task: "t", workspace: ws.dir, db: ws.db, approval: "auto", model: `scripted:${script}`,
      env: { LIVE_SECRET_TOKEN: "s3cret-live-value" },
      onEvent: (event) => {
        events.push(event);
        // The command waits for this file: "first" must have been seen before it can finish.
        if (event.type === "tool_output" && event.text.includes("first")) writeFileSync(join(ws.dir, "go"), "");
      },
    });
    expect(outcome.status, outcome.error).toBe("finished");
    const kinds = events.filter((event) => event.type.startsWith("tool_")).map((event) => event.type);
    expect(kinds[0]).toBe("tool_call_started");
    expect(kinds[1]).toBe("tool_call");
    expect(kinds.at(-1)).toBe("tool_result");
    const outputs = events.filter((event) => event.type === "tool_output");
    expect(outputs.map((event) => `${event.stream}:${event.text}`).join("")).toMatch(/stdout:first\n.*stdout:second\n/s);
    expect(outputs.some((event) => event.stream === "stderr" && event.text.includes("[redacted]"))).toBe(true);
    expect(JSON.stringify(events)).not.toContain("s3cret-live-value");
  });

  it("ask mode offers only read tools and refuses every other call before the policy, in every approval mode: nothing is written, run or asked", async () => {
    for (const approval of ["ask", "auto-edit", "auto", "deny"] as const) {
      const ws = workspace();
      const server = await mockServer();
      server.enqueue(
        { toolCalls: [{ name: "write_file", args: { path: "new.txt", contents: "x" } }] },
        { toolCalls: [{ name: "shell", args: { command: "touch ran" } }] },
        { toolCalls: [{ name: "edit_file", args: { path: "README.md", old_string: "demo", new_string: "changed" } }] },
        { toolCalls: [{ name: "read_file", args: { path: "README.md" } }] },
        { text: "It is a demo README." },
      );
      const events: RunEvent[] = [];
      const outcome = await runGraph({
        graph: "coder", task: "what is this?", workspace: ws.dir, db: ws.db, approval, mode: "ask",
        model: "openai:gpt-test", env: cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }), onEvent: (event) => events.push(event),
      });
      expect(outcome.status, `${approval}: ${outcome.error}`).toBe("finished");
      const offered = (server.requests[0]!.body as { tools: { function: { name: string } }[] }).tools.map((tool) => tool.function.name);
      expect(offered).toEqual(["read_file", "list_dir", "glob", "grep", "task"]);
      const results = events.filter((event) => event.type === "tool_result");
      expect(results.map((event) => [event.name, event.ok, event.notRun])).toEqual([
        ["write_file", false, "blocked"],
        ["shell", false, "blocked"],
        ["edit_file", false, "blocked"],
        ["read_file", true, undefined],
      ]);
      expect(results[0]!.result).toBe("write_file is not available in ask mode: ask mode only reads: answer from what the read-only tools show, and say what would need changing");
      expect(existsSync(join(ws.dir, "new.txt")) || existsSync(join(ws.dir, "ran"))).toBe(false);
      expect(readFileSync(join(ws.dir, "README.md"), "utf8")).toBe("# demo\n");
      expect(JSON.stringify(server.requests[0]!.body)).toMatch(/# Mode: ask/);
    }
  });
});
