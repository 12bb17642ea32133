/**
 * The Cursor-parity acceptance criteria AC-01 … AC-13, and the capability matrix's git tools (C12): what a user of an editor's agent expects of
 * loopgraph's Coder, each a test named after its criterion, through the CLI (`loopgraph run coder
 * … --json`, a real process) on real files in a real git repository. The scripted model
 * (tests/fixtures/parity/) answers, or the mock OpenAI server on 127.0.0.1 where the test reads
 * what the model was sent (AC-04, AC-05, AC-11, AC-13). To keep the file cheap, the criteria that
 * one run can show share it: one agent-mode turn (AC-01, 02, 03, 06, 07, 08) and one thread of
 * approvals (AC-13, 04, 05), all in one workspace.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, git, parseEvents, ROOT, type CliResult } from "../helpers/cli.js";
import { finalState, gatedScript, recordedStatus, resume, resumeWith, run, startRun, type RunSpec } from "../helpers/e2e.js";
import { startMockOpenAI, type MockOpenAIServer } from "../helpers/mock-openai.js";
import { onCleanup, sharedWorkspace, tempWorkspace } from "../helpers/workspace.js";

const SCRIPTS = join(ROOT, "tests/fixtures/parity");
/** A run's first test may wait for several CLI processes on a loaded machine. */
const RUNS_TIMEOUT = 90_000;

const ws = sharedWorkspace({
  git: true,
  files: {
    "README.md": "# shop\n",
    "App.jsx": "export default function App() {\n  return <h1>Hello</h1>;\n}\n",
    "utils.js": "export const add = (a, b) => a + b;\n",
    "important.txt": "keep me\n",
  },
});

type Event = Record<string, unknown>;
const ofType = (events: Event[], type: string): Event[] => events.filter((event) => event.type === type);

/** The `tool_result` of the call of `name` whose arguments include `args`, and where the call came among the run's events. */
function resultOf(events: Event[], name: string, args: Record<string, unknown>): Event & { at: number } {
  const at = events.findIndex(
    (event) =>
      event.type === "tool_call" &&
      event.name === name &&
      Object.entries(args).every(([key, value]) => (event.args as Record<string, unknown>)[key] === value),
  );
  if (at === -1) throw new Error(`no ${name} call with ${JSON.stringify(args)}`);
  const result = events.find((event) => event.type === "tool_result" && event.id === events[at]!.id);
  if (!result) throw new Error(`the ${name} call with ${JSON.stringify(args)} has no result`);
  return { ...result, at };
}

const read = (path: string): string => readFileSync(join(ws.dir, path), "utf8");

/** The status of the Coder's result in the thread's last checkpoint. */
const coderStatus = async (thread: string): Promise<string> =>
  (await finalState<{ outputs: { coder: { status: string } } }>(ws.db, thread)).outputs.coder.status;

describe("one agent-mode turn (--approval auto): tools on real files, a real command, the policy", () => {
  let result: CliResult;
  let events: Event[];
  beforeAll(async () => {
    // A file beside the workspace, which no read may reach.
    writeFileSync(join(ws.root, "outside.txt"), "canary-beside-the-workspace\n");
    const script = join(SCRIPTS, "agent.script.yaml");
    result = await run(ws, { graph: "coder", task: "create hello.js and tidy up", thread: "agent", script, approval: "auto" });
    events = parseEvents(result.stdout);
  }, RUNS_TIMEOUT);

  it("AC-01 the agent creates a file: write_file makes hello.js, which prints Hello", () => {
    expect(result.code, result.stderr).toBe(0);
    expect(resultOf(events, "write_file", { path: "hello.js" })).toMatchObject({ ok: true });
    expect(read("hello.js")).toBe("console.log('Hello');\n");
  });

  it("AC-02 the agent reads a file, then edits it: read_file then edit_file add a comment to App.jsx", () => {
    const reading = resultOf(events, "read_file", { path: "App.jsx" });
    const editing = resultOf(events, "edit_file", { path: "App.jsx" });
    expect(reading).toMatchObject({ ok: true, result: expect.stringContaining("export default function App() {") });
    expect(editing).toMatchObject({ ok: true });
    expect(reading.at).toBeLessThan(editing.at);
    expect(read("App.jsx")).toBe("// The page's root component.\nexport default function App() {\n  return <h1>Hello</h1>;\n}\n");
  });

  it("AC-03 the agent runs a command: the shell tool runs `node --version` and its output comes back", () => {
    const version = resultOf(events, "shell", { command: "node --version" });
    expect(version).toMatchObject({ ok: true, result: expect.stringMatching(/^exit code: 0\n--- stdout ---\nv\d+\.\d+\.\d+\n$/) });
  });

  it("AC-06 a failed tool call is recovered: an edit whose old_string does not match returns an error, the corrected edit succeeds", async () => {
    const failed = resultOf(events, "edit_file", { path: "utils.js", old_string: "(a, b) => a - b" });
    const corrected = resultOf(events, "edit_file", { path: "utils.js", old_string: "(a, b) => a + b" });
    expect(failed).toMatchObject({
      ok: false,
      errorKind: "not_found",
      result: expect.stringMatching(/^old_string was not found in utils\.js/),
    });
    expect(corrected).toMatchObject({ ok: true });
    expect(failed.at).toBeLessThan(corrected.at);
    expect(read("utils.js")).toBe("export const add = (a, b) => Number(a) + Number(b);\n");
    // The failure was one step of the turn, not its end.
    expect(await coderStatus("agent")).toBe("success");
  });

  it("AC-07 a path outside the workspace is refused: reading /etc/passwd or ../outside.txt is blocked", () => {
    for (const path of ["/etc/passwd", "../outside.txt"]) {
      expect(resultOf(events, "read_file", { path }), path).toMatchObject({
        ok: false,
        notRun: "blocked",
        result: `Blocked by policy: ${path} is outside the workspace (${ws.dir}): use a path inside it`,
      });
    }
    expect(result.stdout).not.toContain("root:x:0:0");
    expect(result.stdout).not.toContain("canary-beside-the-workspace");
  });

  it("AC-08 a destructive command is refused by the policy and never runs: `echo hi > injected.txt; rm -rf /`", () => {
    expect(resultOf(events, "shell", { command: "echo hi > injected.txt; rm -rf /" })).toMatchObject({
      ok: false,
      notRun: "blocked",
      result: expect.stringMatching(/^Blocked by policy: `rm -rf \/`: /),
    });
    // Not even its harmless first part ran.
    expect(existsSync(join(ws.dir, "injected.txt"))).toBe(false);
  });
});

describe("a thread of approvals (--approval ask) on the mock OpenAI server, which records what the model is sent", () => {
  let server: MockOpenAIServer;
  let env: NodeJS.ProcessEnv;
  let first: CliResult;
  let approved: CliResult;
  let rejected: CliResult;
  /** Whether notes.txt existed when the first run had paused. */
  let writtenBeforeApproval: boolean;
  type Message = { role: string; content: unknown; tool_call_id?: string };
  const messagesOf = (request: number): Message[] => (server.requests[request]!.body as { messages: Message[] }).messages;
  const toolMessages = (request: number): Message[] => messagesOf(request).filter((message) => message.role === "tool");

  beforeAll(async () => {
    server = await startMockOpenAI();
    env = cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
    server.enqueue(
      {
        text: "Let me look around first.",
        toolCalls: [
          { name: "read_file", args: { path: "README.md" } },
          { name: "list_dir", args: {} },
          { name: "grep", args: { pattern: "Hello" } },
        ],
      },
      { toolCalls: [{ name: "write_file", args: { path: "notes.txt", contents: "approved\n" } }] },
      { toolCalls: [{ name: "shell", args: { command: "rm important.txt" } }] },
      { text: "Understood: I left important.txt alone." },
    );
    const spec: RunSpec = { graph: "coder", task: "take notes", thread: "approvals", model: "openai:gpt-test", approval: "ask" };
    first = await run(ws, spec, { env });
    writtenBeforeApproval = existsSync(join(ws.dir, "notes.txt"));
    approved = await resumeWith({ env }, ws, "approvals", "--approve", "--json");
    rejected = await resumeWith({ env }, ws, "approvals", "--reject", "keep important.txt", "--json");
  }, RUNS_TIMEOUT);

  it("AC-13 several tool calls in one model answer: all three run, and all three results reach the model in its next request", () => {
    // The three reads ran at once, so their results came in the order they ended; the model gets them in the order of its calls.
    const results = new Map(
      ofType(parseEvents(first.stdout), "tool_result")
        .slice(0, 3)
        .map((event) => [event.id, event]),
    );
    const sent = toolMessages(1);
    expect(sent.map((message) => [results.get(message.tool_call_id)?.name, results.get(message.tool_call_id)?.ok])).toEqual([
      ["read_file", true],
      ["list_dir", true],
      ["grep", true],
    ]);
    for (const message of sent) expect(message.content).toContain(results.get(message.tool_call_id)!.result);
    expect(sent[0]!.content).toContain("# shop");
  });

  it("AC-04 approval, accepted: a write in ask mode pauses the run (exit 3) until approved, then runs", () => {
    expect(first.code, first.stderr).toBe(3);
    expect(ofType(parseEvents(first.stdout), "interrupt")).toMatchObject([
      { reason: "input", value: { kind: "approval", tool: "write_file", args: { path: "notes.txt" } } },
    ]);
    expect(writtenBeforeApproval).toBe(false);
    expect(approved.code, approved.stderr).toBe(3);
    expect(ofType(parseEvents(approved.stdout), "tool_result")[0]).toMatchObject({ name: "write_file", ok: true });
    expect(read("notes.txt")).toBe("approved\n");
  });

  it("AC-05 approval, rejected: the call does not run, the model's next request carries the rejection and the agent goes on", () => {
    expect(ofType(parseEvents(approved.stdout), "interrupt")).toMatchObject([
      { value: { tool: "shell", args: { command: "rm important.txt" } } },
    ]);
    expect(rejected.code, rejected.stderr).toBe(0);
    const refusal = ofType(parseEvents(rejected.stdout), "tool_result")[0];
    expect(refusal).toMatchObject({ name: "shell", ok: false, notRun: "rejected" });
    expect(read("important.txt")).toBe("keep me\n");
    const told = toolMessages(3).at(-1)!;
    expect(told.tool_call_id).toBe(refusal!.id);
    expect(told.content).toMatch(/^Error \(rejected\): the user rejected this call: keep important\.txt\. Do not retry it as is\./);
    expect(parseEvents(rejected.stdout).at(-1)).toMatchObject({ type: "run_finished", status: "finished" });
  });
});

describe("limits, modes and a run in progress", () => {
  it("AC-09 a task that needs more than 30 steps ends at the Coder's step limit (25): exit 4, and the user is told why", async () => {
    // A plan of 32 items, one marked done per model call: 33 answers, of which 25 are taken.
    const items = Array.from({ length: 32 }, (_, i) => `step ${i + 1}`);
    const plan = (done: number) => ({
      node: "coder",
      tool_calls: [
        { name: "todo_write", args: { items: items.map((content, i) => ({ content, status: i < done ? "completed" : "pending" })) } },
      ],
    });
    const script = join(ws.root, "long-task.script.yaml");
    writeFileSync(script, stringify({ responses: [...items.map((_, i) => plan(i)), { node: "coder", content: "all done" }] }));
    const limited = await run(ws, { graph: "coder", task: "do all 32 steps", thread: "long", script, approval: "auto", json: false });
    expect(limited.code, limited.stderr).toBe(4);
    expect(limited.stderr).toMatch(
      /^■ ended by a limit .*: the Coder reached its step limit \(max_steps 25 of node "coder"\) before finishing/m,
    );
    expect(await recordedStatus(ws.db, "long")).toBe("limited");
    // The 25th model call marked 24 steps done; no 26th was made.
    expect(limited.stdout).toContain("Todo list updated (24/32 completed)");
    expect(limited.stdout).not.toContain("(25/32 completed)");
  });

  it("AC-11 ask mode is read-only: the model is offered no tool that writes or runs, and its writes are refused", async () => {
    const server = await startMockOpenAI();
    onCleanup(() => server.close());
    server.enqueue(
      { toolCalls: [{ name: "write_file", args: { path: "asked.txt", contents: "x" } }] },
      { toolCalls: [{ name: "edit_file", args: { path: "README.md", old_string: "shop", new_string: "changed" } }] },
      { toolCalls: [{ name: "shell", args: { command: "touch ran.txt" } }] },
      { text: "This is the shop's README." },
    );
    const env = cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: server.url });
    const spec: RunSpec = { graph: "coder", task: "what is this?", thread: "ask", model: "openai:gpt-test", approval: "auto" };
    const asked = await run(ws, { ...spec, extra: ["--mode", "ask"] }, { env });
    expect(asked.code, asked.stderr).toBe(0);
    const offered = (server.requests[0]!.body as { tools: { function: { name: string } }[] }).tools.map((tool) => tool.function.name);
    expect(offered).toEqual(["read_file", "list_dir", "glob", "grep", "task"]);
    expect(ofType(parseEvents(asked.stdout), "tool_result").map((event) => [event.name, event.notRun])).toEqual([
      ["write_file", "not_allowed"],
      ["edit_file", "not_allowed"],
      ["shell", "not_allowed"],
    ]);
    expect(existsSync(join(ws.dir, "asked.txt")) || existsSync(join(ws.dir, "ran.txt"))).toBe(false);
    expect(read("README.md")).toBe("# shop\n");
  });

  it("AC-12 a tool call is shown live: its events come as it starts, while it runs, before its result", async () => {
    const running = startRun(ws, {
      graph: "coder",
      task: "t",
      thread: "live",
      script: join(SCRIPTS, "live.script.yaml"),
      approval: "auto",
    });
    // The command runs until `go` exists: nothing of its result can be printed before the test makes it.
    const output = await running.waitForEvent("tool_output", (line) => line.includes("started"));
    const shown = running.lines.slice(0, output + 1).map((line) => JSON.parse(line) as Event);
    writeFileSync(join(ws.dir, "go"), "");
    const result = await running.done;
    expect(result.code, result.stderr).toBe(0);
    expect(shown.filter((event) => String(event.type).startsWith("tool_")).map((event) => event.type)).toEqual([
      "tool_call_started",
      "tool_call",
      "tool_output",
    ]);
    expect(ofType(parseEvents(result.stdout), "tool_result")).toMatchObject([{ name: "shell", ok: true }]);
  });

  it("AC-10 the user cancels: Ctrl-C stops the run at once (exit 130, the model's answer not awaited), and it resumes to the end", async () => {
    const { script, open } = gatedScript(ws, join(SCRIPTS, "cancel.script.yaml"));
    const running = startRun(ws, { graph: "coder", task: "write two files", thread: "cancel", script, approval: "auto" });
    await running.waitForEvent("tool_result", (line) => line.includes("cancel-first.txt"));
    // The model's next answer waits for a gate no one opens: only the interruption can end the run.
    const stopped = await running.kill("SIGINT");
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(parseEvents(stopped.stdout).at(-1)).toMatchObject({ type: "run_finished", status: "interrupted", exitCode: 130 });
    expect(await recordedStatus(ws.db, "cancel")).toBe("interrupted");
    expect(existsSync(join(ws.dir, "cancel-second.txt"))).toBe(false);
    open("gate-cancel");
    const resumed = await resume(ws, "cancel", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(read("cancel-first.txt") + read("cancel-second.txt")).toBe("first\nsecond\n");
  });
});

describe("the capability matrix's git tools (C12)", () => {
  it("C12 the agent commits its work when asked: git_commit makes one commit of it on the thread's branch, as the user, and leaves the base branch where it was", async () => {
    const repo = tempWorkspace({ git: true, files: { "README.md": "# shop\n" } });
    const base = git(repo.dir, "symbolic-ref", "--short", "HEAD").trim();
    const baseTip = git(repo.dir, "rev-parse", "HEAD").trim();
    git(repo.dir, "checkout", "-q", "-b", "feature");
    const script = join(repo.root, "commit.script.yaml");
    writeFileSync(
      script,
      stringify({
        responses: [
          {
            node: "coder",
            tool_calls: [
              { name: "write_file", args: { path: "NOTES.md", contents: "notes\n" } },
              { name: "git_commit", args: { message: "Add the notes" } },
            ],
          },
          { node: "coder", content: "Wrote NOTES.md and committed it." },
        ],
      }),
    );
    const env = cleanEnv({ GIT_AUTHOR_NAME: "Ada User", GIT_AUTHOR_EMAIL: "ada@example.com" });
    const committed = await run(
      repo,
      { graph: "coder", task: "write notes and commit them", thread: "c12", script, approval: "auto" },
      { env },
    );
    expect(committed.code, committed.stderr).toBe(0);
    expect(git(repo.dir, "log", "-1", "--format=%s|%an", "feature").trim()).toBe("Add the notes|Ada User");
    expect(git(repo.dir, "show", "--name-only", "--format=", "feature").trim()).toBe("NOTES.md");
    expect(git(repo.dir, "symbolic-ref", "--short", "HEAD").trim()).toBe("feature");
    expect(git(repo.dir, "rev-parse", base).trim()).toBe(baseTip);
    expect(git(repo.dir, "status", "--porcelain").trim()).toBe("");
  });
});
