/**
 * The Coder's capabilities end to end: each through `loopgraph run … --json` (a real process),
 * with a scripted model or the mock OpenAI server on 127.0.0.1 when the test reads what the
 * model was sent.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { cleanEnv, parseEvents, runCli, trustIn } from "./helpers/cli.js";
import { finalState, run, startRun, type RunSpec } from "./helpers/e2e.js";
import { startMockOpenAI, type MockOpenAIServer } from "./helpers/mock-openai.js";
import { hasScript, runAtTerminal } from "./helpers/terminal.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

/** A workspace (no git repository: no snapshots to take) with a README.md. */
const workspace = (): Workspace => tempWorkspace({ files: { "README.md": "# demo\n" } });

/** One scripted answer of the Coder: a call of `name` with `args`. */
const call = (name: string, args: Record<string, unknown>) => ({ node: "coder", tool_calls: [{ name, args }] });

/** A scripted-model file of these responses in the test's folder, beside the workspace. */
function scriptFile(ws: Workspace, name: string, responses: object[]): string {
  const script = join(ws.root, name);
  writeFileSync(script, stringify({ responses }));
  return script;
}

/** The mock OpenAI server, closed when the test ends, and the CLI's environment that points the `openai:` provider at it. */
async function mockServer(): Promise<{ server: MockOpenAIServer; env: NodeJS.ProcessEnv }> {
  const server = await startMockOpenAI();
  onCleanup(() => server.close());
  return { server, env: cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url }) };
}

/** A Coder run (`coder` graph unless told) of the mock server's model. */
const openaiRun = (thread: string, more: Partial<RunSpec> = {}): RunSpec => ({
  graph: "coder",
  task: "t",
  thread,
  model: "openai:gpt-test",
  ...more,
});

type ChatBody = { messages: { role: string; content: unknown }[]; tools?: { function: { name: string } }[] };
const bodyOf = (server: MockOpenAIServer, index: number): ChatBody => server.requests[index]!.body as ChatBody;
/** The last tool result the model was sent in request `index`. */
const lastToolResult = (server: MockOpenAIServer, index: number): string =>
  String(
    bodyOf(server, index)
      .messages.filter((m) => m.role === "tool")
      .at(-1)!.content,
  );

/** The errorKind of each call the Coder logged (its output in the run's last checkpoint). */
async function errorKinds(db: string, thread: string): Promise<(string | undefined)[]> {
  const { outputs } = await finalState<{ outputs: { coder: { toolCalls: { errorKind?: string }[] } } }>(db, thread);
  return outputs.coder.toolCalls.map((entry) => entry.errorKind);
}

type Event = Record<string, unknown>;
const ofType = (events: Event[], type: string): Event[] => events.filter((event) => event.type === type);

describe("the Coder's capabilities through the CLI (loopgraph run --json)", () => {
  it("a call of an unknown tool or with arguments its tool refuses is answered before the policy: --approval ask without a terminal never pauses for it", async () => {
    const ws = workspace();
    const script = scriptFile(ws, "checks.script.yaml", [
      call("delete_everything", { path: "." }),
      call("docs__search", { q: "x" }),
      call("write_file", { path: "notes.txt", content: "typo in the key" }),
      call("shell", { command: "touch made", timeout_ms: "soon" }),
      { node: "coder", content: "gave up" },
    ]);
    const result = await run(ws, { graph: "coder", task: "t", thread: "checks", script, approval: "ask" });
    // Finished (0), not paused for an approval (3).
    expect(result.code, result.stderr).toBe(0);
    const events = parseEvents(result.stdout);
    expect(ofType(events, "interrupt")).toEqual([]);
    const results = ofType(events, "tool_result");
    expect(results.map((event) => [event.name, event.ok, event.notRun])).toEqual([
      ["delete_everything", false, "tool_not_found"],
      ["docs__search", false, "tool_not_found"],
      ["write_file", false, "invalid_arguments"],
      ["shell", false, "invalid_arguments"],
    ]);
    expect(results[0]!.result).toMatch(/^unknown tool "delete_everything"; available tools: read_file, /);
    expect(results[2]!.result).toMatch(/^invalid arguments for write_file: contents: /);
    expect(results[3]!.result).toMatch(/^invalid arguments for shell: timeout_ms: /);
    expect(existsSync(join(ws.dir, "notes.txt"))).toBe(false);
    expect(existsSync(join(ws.dir, "made"))).toBe(false);
  });

  it("a streak of five reads before anything was written warns the model in the fifth result; the same error three times in a row fails a Coder alone with repeated_error (exit 1)", async () => {
    const ws = workspace();
    const { server, env } = await mockServer();
    for (let i = 0; i < 5; i++) server.enqueue({ toolCalls: [{ name: "glob", args: { pattern: `src${i}/**/*.ts` } }] });
    for (let i = 0; i < 3; i++) server.enqueue({ toolCalls: [{ name: "read_file", args: { path: "missing.txt", limit: i + 1 } }] });
    const result = await run(ws, openaiRun("streak", { approval: "auto" }), { env });
    expect(server.requests).toHaveLength(8);
    // The warning reached the model with the fifth result, not before.
    expect(lastToolResult(server, 4)).toMatch(/^No files match/);
    expect(lastToolResult(server, 4)).not.toMatch(/in a row/);
    expect(lastToolResult(server, 5)).toMatch(
      /that makes 5 reads, searches and listings in a row, and nothing written yet\. Stop reading and create now/,
    );
    // Alone, the Coder's failure fails the run and says why.
    expect(result.code, result.stderr).toBe(1);
    const reason = /the Coder failed \(repeated_error\): the same error 3 times in a row from read_file \(file_not_found: /;
    expect(parseEvents(result.stdout).at(-1)).toMatchObject({
      type: "run_finished",
      status: "failed",
      exitCode: 1,
      reason: expect.stringMatching(reason),
    });
  });

  it("a Coder that keeps answering with its plan unfinished is sent back twice, then ends honestly (exit 4, plan unfinished); its complexity and findings are in --json, inspect and a recorded replay", async () => {
    const ws = workspace();
    const script = scriptFile(ws, "unfinished.script.yaml", [
      {
        node: "coder",
        tool_calls: [
          { name: "save_finding", args: { finding: "README.md is the only file" } },
          {
            name: "todo_write",
            args: {
              items: [
                { content: "split the README", status: "pending" },
                { content: "link the parts", status: "pending" },
              ],
            },
          },
        ],
      },
      { node: "coder", content: "done" },
      { node: "coder", content: "done, really" },
      { node: "coder", content: "done, I said" },
    ]);
    const result = await run(ws, {
      graph: "coder",
      task: "Refactor the README into sections",
      thread: "unfinished",
      script,
      approval: "auto",
    });
    expect(result.code, result.stderr).toBe(4);
    const events = parseEvents(result.stdout);
    expect(ofType(events, "complexity")).toEqual([
      expect.objectContaining({ node: "coder", level: "complex", indicators: ['"refactor" (complex)', "short task (5 words)"] }),
    ]);
    expect(ofType(events, "plan_check").map((event) => [event.check, event.of, event.open])).toEqual([
      [1, 2, ["split the README", "link the parts"]],
      [2, 2, ["split the README", "link the parts"]],
    ]);
    expect(events.at(-1)).toMatchObject({
      type: "run_finished",
      status: "limited",
      exitCode: 4,
      reason:
        "the Coder failed (plan_unfinished): plan unfinished: 2 of 2 items not done after 2 plan checks (split the README; link the parts)",
    });
    // The Coder's own steps (inspect --nested) hold the analysis, the finding and the two checks.
    const inspected = JSON.parse((await runCli(["inspect", "unfinished", "--nested", "--json", "--db", ws.db])).stdout) as {
      nested: { node: string; checkpoints: { changes: { path: string; value?: unknown }[] }[] }[];
    };
    const changes = inspected.nested.find((timeline) => timeline.node === "coder")!.checkpoints.flatMap((checkpoint) => checkpoint.changes);
    expect(changes).toContainEqual(expect.objectContaining({ path: "complexity", value: expect.objectContaining({ level: "complex" }) }));
    expect(changes).toContainEqual(expect.objectContaining({ path: "findings", value: ["README.md is the only file"] }));
    expect(changes.filter((change) => change.path === "planChecks").map((change) => change.value)).toEqual([1, 2]);
    // A recorded replay goes the same way, to the same end.
    const replayed = await runCli(["replay", "unfinished", "--recorded", "--json", "--db", ws.db]);
    expect(replayed.code, replayed.stderr).toBe(4);
    expect(JSON.parse(replayed.stdout.trim().split("\n").at(-1)!)).toMatchObject({ divergences: [] });
  });

  it("in a loop, a Coder that fails with repeated_error hands the failure to the Judge, whose model reads it", async () => {
    const ws = workspace();
    const { server, env } = await mockServer();
    for (let i = 0; i < 3; i++) server.enqueue({ toolCalls: [{ name: "read_file", args: { path: "missing.txt", limit: i + 1 } }] });
    server.enqueue({ text: '{"decision": "terminate", "reason": "missing.txt does not exist"}' });
    const result = await run(ws, openaiRun("loop", { graph: "coder-review", approval: "auto", extra: ["--max-rounds", "1"] }), { env });
    expect(server.requests).toHaveLength(4);
    // The failed turn goes straight to the Judge (no review): its request shows the Coder's failure.
    const judge = JSON.stringify(bodyOf(server, 3).messages);
    expect(judge).toContain("## Coder result");
    expect(judge).toMatch(/status: failure\\nfailure: repeated_error: the same error 3 times in a row from read_file \(file_not_found: /);
    const events = parseEvents(result.stdout);
    expect(ofType(events, "node_started").map((event) => event.node)).toEqual(["looper", "coder", "looper", "judge", "looper"]);
    // The Judge ended the loop on a failed turn: the run failed, with the Judge's reason.
    expect(result.code, result.stderr).toBe(1);
    expect(events.at(-1)).toMatchObject({
      type: "run_finished",
      status: "failed",
      exitCode: 1,
      reason: "the Judge ended the loop after the Coder failed: missing.txt does not exist",
    });
  });

  it("a running command's output streams as tool_output events while it runs, redacted; the call is announced as it starts, before it is made", async () => {
    const ws = workspace();
    // A file of the repository that holds a secret of loopgraph's environment: what is shown live is redacted too.
    const secret = "s3cret-live-value";
    writeFileSync(join(ws.dir, "leak.txt"), `${secret}\n`);
    const command = "echo first; cat leak.txt >&2; until [ -e go ]; do sleep 0.05; done; echo second";
    const script = scriptFile(ws, "live.script.yaml", [call("shell", { command }), { node: "coder", content: "done" }]);
    const running = startRun(
      ws,
      { graph: "coder", task: "t", thread: "live", script, approval: "auto" },
      { env: cleanEnv({ LIVE_SECRET_TOKEN: secret }) },
    );
    // The command waits for `go`: it cannot end before the test has read "first" from the CLI's stdout.
    await running.waitForEvent("tool_output", (line) => line.includes("first"));
    writeFileSync(join(ws.dir, "go"), "");
    const result = await running.done;
    expect(result.code, result.stderr).toBe(0);
    const events = parseEvents(result.stdout);
    const kinds = events.filter((event) => String(event.type).startsWith("tool_")).map((event) => event.type);
    expect(kinds[0]).toBe("tool_call_started");
    expect(kinds[1]).toBe("tool_call");
    expect(kinds.at(-1)).toBe("tool_result");
    const outputs = ofType(events, "tool_output");
    expect(outputs.map((event) => `${event.stream}:${event.text}`).join("")).toMatch(/stdout:first\n.*stdout:second\n/s);
    expect(outputs.some((event) => event.stream === "stderr" && String(event.text).includes("[redacted]"))).toBe(true);
    expect(result.stdout).not.toContain(secret);
    expect(result.stderr).not.toContain(secret);
  });

  it.skipIf(!hasScript)("at a terminal, the last lines of a running command show while it runs, then give way to its result", async () => {
    const ws = workspace();
    const command = "echo first; until [ -e go ]; do sleep 0.05; done; echo second";
    const script = scriptFile(ws, "live.script.yaml", [call("shell", { command }), { node: "coder", content: "done" }]);
    const { code, screen, answered } = await runAtTerminal(
      ws.dir,
      ws.db,
      [
        { after: "Allow?", send: "y\n" },
        // Shown while the command waits for `go`: the test opens it only then.
        { after: "│ first", send: () => writeFileSync(join(ws.dir, "go"), "") },
      ],
      script,
    );
    expect(code, screen).toBe(0);
    expect(answered).toBe(2);
    // Drawn under the call while it runs, redrawn as lines come, then erased: its result takes their place.
    expect(screen).toMatch(/⚙ shell .*\r\n {4}│ first\r\n/);
    // (A spinner line, drawn on a slow machine, may come between them: no line break.)
    expect(screen).toMatch(/ {4}│ first\r\n {4}│ second\r\n[^\n]*\x1b\[2A\r\x1b\[J {2}↳ exit code: 0\r\n/);
  });

  it("ask mode offers only read tools and refuses every other call before the policy, in every approval mode: no pause, nothing written or run", async () => {
    const approvals = ["ask", "auto-edit", "auto", "deny"] as const;
    const runs = await Promise.all(
      approvals.map(async (approval) => {
        const ws = workspace();
        const { server, env } = await mockServer();
        server.enqueue(
          { toolCalls: [{ name: "write_file", args: { path: "new.txt", contents: "x" } }] },
          { toolCalls: [{ name: "shell", args: { command: "touch ran" } }] },
          { toolCalls: [{ name: "edit_file", args: { path: "README.md", old_string: "demo", new_string: "changed" } }] },
          { toolCalls: [{ name: "read_file", args: { path: "README.md" } }] },
          { text: "It is a demo README." },
        );
        const result = await run(ws, openaiRun("ask", { task: "what is this?", approval, extra: ["--mode", "ask"] }), { env });
        return { approval, ws, server, result };
      }),
    );
    for (const { approval, ws, server, result } of runs) {
      expect(result.code, `${approval}: ${result.stderr}`).toBe(0);
      expect(
        bodyOf(server, 0).tools!.map((tool) => tool.function.name),
        approval,
      ).toEqual(["read_file", "list_dir", "glob", "grep", "task"]);
      expect(JSON.stringify(bodyOf(server, 0).messages[0]!.content), approval).toMatch(/# Mode: ask/);
      const events = parseEvents(result.stdout);
      expect(ofType(events, "interrupt"), approval).toEqual([]);
      const results = ofType(events, "tool_result");
      expect(
        results.map((event) => [event.name, event.ok, event.notRun]),
        approval,
      ).toEqual([
        ["write_file", false, "not_allowed"],
        ["shell", false, "not_allowed"],
        ["edit_file", false, "not_allowed"],
        ["read_file", true, undefined],
      ]);
      expect(results[0]!.result, approval).toBe(
        "write_file is not available in ask mode: ask mode only reads: answer from what the read-only tools show, and say what would need changing",
      );
      expect(existsSync(join(ws.dir, "new.txt")) || existsSync(join(ws.dir, "ran")), approval).toBe(false);
      expect(readFileSync(join(ws.dir, "README.md"), "utf8"), approval).toBe("# demo\n");
      expect(await errorKinds(ws.db, "ask"), approval).toEqual(["not_allowed", "not_allowed", "not_allowed", undefined]);
    }
  });

  it("edit_file needs its file read in this turn and unchanged on disk since: refused with not_read before a read and after a command changed it", async () => {
    const ws = tempWorkspace({ files: { "notes.txt": "start\n" } });
    const edit = (from: string, to: string) => call("edit_file", { path: "notes.txt", old_string: from, new_string: to });
    const script = scriptFile(ws, "read-first.script.yaml", [
      edit("start", "middle"),
      call("read_file", { path: "notes.txt" }),
      edit("start", "middle"),
      // Its own edit keeps the file as the Coder saw it: no read needed in between.
      edit("middle", "end"),
      call("shell", { command: "echo appended >> notes.txt" }),
      edit("end", "again"),
      { node: "coder", content: "done" },
    ]);
    const result = await run(ws, { graph: "coder", task: "t", thread: "read-first", script, approval: "auto" });
    expect(result.code, result.stderr).toBe(0);
    const results = ofType(parseEvents(result.stdout), "tool_result");
    expect(results.map((event) => [event.name, event.ok, event.errorKind ?? null])).toEqual([
      ["edit_file", false, "not_read"],
      ["read_file", true, null],
      ["edit_file", true, null],
      ["edit_file", true, null],
      ["shell", true, null],
      ["edit_file", false, "not_read"],
    ]);
    expect(results[0]!.result).toBe("notes.txt was not read in this turn: read it with read_file first, then edit it");
    expect(results[5]!.result).toBe(
      "notes.txt changed on disk since you read it: read it again with read_file, then edit the text as it is now",
    );
    expect(readFileSync(join(ws.dir, "notes.txt"), "utf8")).toBe("end\nappended\n");
    expect(await errorKinds(ws.db, "read-first")).toEqual(["not_read", undefined, undefined, undefined, undefined, "not_read"]);
  });

  it("the mode comes from the flag, else the project's config, else the coder node's mode:", async () => {
    const ws = workspace();
    const graph = join(ws.dir, "asker.yaml");
    writeFileSync(graph, "version: 1\nname: asker\nnodes:\n  coder: { kind: coder, mode: ask }\nedges:\n  - { from: START, to: coder }\n");
    const project = tempWorkspace({ files: { "README.md": "# demo\n", "loopgraph.yaml": "mode: plan\n" } });
    trustIn(project.dir);
    const [fromNode, fromFlag, fromConfig] = [await mockServer(), await mockServer(), await mockServer()];
    for (const { server } of [fromNode, fromFlag, fromConfig]) server.enqueue({ text: "done" });
    const results = await Promise.all([
      run(ws, openaiRun("node", { graph }), { env: fromNode.env }),
      run(ws, openaiRun("flag", { graph, extra: ["--mode", "agent"] }), { env: fromFlag.env }),
      run(project, openaiRun("config"), { env: fromConfig.env, cwd: project.dir }),
    ]);
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    const offered = ({ server }: { server: MockOpenAIServer }) => bodyOf(server, 0).tools!.map((tool) => tool.function.name);
    expect(offered(fromNode)).toEqual(["read_file", "list_dir", "glob", "grep", "task"]);
    expect(offered(fromFlag)).toContain("shell");
    expect(offered(fromConfig)).toEqual(["read_file", "list_dir", "glob", "grep", "todo_write", "save_finding", "task", "present_plan"]);
    expect(JSON.stringify(bodyOf(fromConfig.server, 0).messages[0]!.content)).toMatch(/# Mode: plan/);
  });
});
