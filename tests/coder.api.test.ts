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
import { settingsOf } from "../src/config/environment-settings.js";

const FIXTURES = join(ROOT, "tests/fixtures/coder");
/** A git repository (nothing committed) with an untracked README.md. */
const workspace = (): Workspace => tempWorkspace({ git: "init", files: { "README.md": "# demo\n" } });

async function mockServer(): Promise<MockOpenAIServer> {
  const server = await startMockOpenAI();
  onCleanup(() => server.close());
  return server;
}

/** The text of every message of a recorded chat-completion request. */
const requestText = (body: { messages: Array<{ content: unknown }> }): string =>
  body.messages.map((m) => JSON.stringify(m.content)).join("\n");

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
      graph: join(FIXTURES, "compress.yaml"),
      task: "read the files",
      workspace: ws.dir,
      db: ws.db,
      model: "openai:gpt-test",
      approval: "auto",
      settings: settingsOf(cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url })),
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
      graph: "coder",
      task: "log twice",
      workspace: ws.dir,
      db: ws.db,
      settings: settingsOf({}),
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
      graph: join(FIXTURES, "step-limit.yaml"),
      task: "t",
      workspace: ws.dir,
      db: ws.db,
      settings: settingsOf({}),
      approval: "auto",
      model: `scripted:${join(FIXTURES, "step-limit.script.yaml")}`,
      onEvent: (event) => events.push(event),
    });
    expect(outcome).toMatchObject({ status: "limited", exitCode: 4 });
    expect(outcome.error).toMatch(
      /the Coder reached its step limit \(max_steps 2 of node "coder"\) before finishing: raise it in .*step-limit\.yaml/,
    );
    expect(events.filter((e) => e.type === "tool_call").map((e) => (e as { name: string }).name)).toEqual(["list_dir", "read_file"]);
    expect(events.at(-1)).toMatchObject({
      type: "run_finished",
      status: "limited",
      outcome: "limited",
      exitCode: 4,
      reason: outcome.error,
    });
    expect(outcome.state.outputs.coder).toBeUndefined();
  });

  it("a Coder inside a loop that reaches max_steps hands a step-limit failure to the Judge instead", async () => {
    const ws = workspace();
    const outcome = await runGraph({
      graph: join(ROOT, "tests/fixtures/looper/failures.yaml"),
      task: "list the files",
      workspace: ws.dir,
      db: ws.db,
      settings: settingsOf({}),
      approval: "auto",
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
      graph: "coder",
      task: "write a.txt",
      workspace: ws.dir,
      db: ws.db,
      approval: "auto",
      model: "openai:gpt-test",
      settings: settingsOf(cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url })),
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
      graph: "coder",
      task: "t",
      workspace: ws.dir,
      db: ws.db,
      settings: settingsOf({}),
      approval: "auto",
      model: `scripted:${join(ROOT, "tests/fixtures/engine/durable.script.yaml")}`,
    });
    expect(outcome).toMatchObject({ status: "failed", exitCode: 1 });
    expect(outcome.error).toMatch(/^node "coder" failed: scripted model exhausted: no response left for node "coder"/);
  });
});
