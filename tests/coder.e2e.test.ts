import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { stringify } from "yaml";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, parseEvents, ROOT, runCli, SANDBOX_AS_FOUND } from "./helpers/cli.js";
import { finalState, resume, run, startResume, startRun, threadsOf, type RunPlace, type RunSpec } from "./helpers/e2e.js";
import { lacks } from "./helpers/requirements.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

const SCRIPTS = join(ROOT, "tests/fixtures/coder");

const repo = (): Workspace => tempWorkspace({ git: true, files: { "README.md": "# demo\n", "important.txt": "keep me\n" } });

const coder = (thread: string, script: string, approval?: RunSpec["approval"]): RunSpec => ({
  graph: "coder",
  task: "do the task",
  thread,
  script: join(SCRIPTS, script),
  approval,
});
const runCoder = (ws: RunPlace, ...spec: Parameters<typeof coder>) => run(ws, coder(...spec));

interface CoderOutput {
  status: string;
  summary: string;
  filesChanged: string[];
  failureKind?: string;
  failureReason?: string;
  toolCalls: Array<{ name: string; ok: boolean; errorKind?: string; preview: string; artifact?: string; args?: unknown }>;
  todos: Array<{ content: string; status: string }>;
}

async function coderOutput(db: string, thread: string): Promise<CoderOutput> {
  return (await finalState<{ outputs: { coder: CoderOutput } }>(db, thread)).outputs.coder;
}

describe("the coder graph (scripted model, real workspace)", () => {
  it("uses every tool on real files and reports a structured result", async () => {
    const ws = repo();
    const run = await runCoder(ws, "happy", "happy.script.yaml", "auto");
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(readFileSync(join(ws.dir, "src/hello.js"), "utf8")).toBe("console.log('hello');\n");
    expect(readFileSync(join(ws.dir, "out.txt"), "utf8")).toBe("hello\n");
    const events = parseEvents(run.stdout);
    expect(events.filter((e) => e.type === "tool_call").map((e) => e.name)).toEqual([
      "todo_write",
      "write_file",
      "edit_file",
      "read_file",
      "shell",
      "grep",
      "glob",
      "list_dir",
      "todo_write",
    ]);
    expect(events.filter((e) => e.type === "tool_result").every((e) => e.ok === true)).toBe(true);
    const output = await coderOutput(ws.db, "happy");
    expect(output.status).toBe("success");
    expect(output.summary).toContain("verified");
    expect(output.filesChanged).toContain("src/hello.js");
    expect(output.todos).toEqual([
      { content: "create hello.js", status: "completed" },
      { content: "run it", status: "completed" },
    ]);
  });

  it("pauses for approval without a terminal (exit 3); --approve runs the call, --reject reaches the model", async () => {
    const ws = repo();
    const first = await runCoder(ws, "ask", "approvals.script.yaml");
    expect(first.code, first.stderr).toBe(3);
    const interrupt = parseEvents(first.stdout).find((e) => e.type === "interrupt");
    expect(interrupt).toMatchObject({ reason: "input", value: { kind: "approval", tool: "shell" } });
    expect(existsSync(join(ws.dir, "approved.txt"))).toBe(false);

    const approved = await resume(ws, "ask", "--approve", "--json");
    expect(approved.code, approved.stderr).toBe(3);
    expect(readFileSync(join(ws.dir, "approved.txt"), "utf8")).toBe("approved\n");

    const rejected = await resume(ws, "ask", "--reject", "use a temp dir", "--json");
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "important.txt"), "utf8")).toBe("keep me\n");
    const output = await coderOutput(ws.db, "ask");
    const refusal = output.toolCalls.find((call) => call.errorKind === "rejected");
    expect(refusal?.preview).toContain("use a temp dir");
    expect(output.status).toBe("success");
  });

  it("--approve with --set-arg or --edit-args runs the user's edit of the call; the model is told what changed; a recorded replay follows it", async () => {
    const ws = repo();
    const script = join(ws.dir, "..", "edit.script.yaml");
    writeFileSync(
      script,
      stringify({
        responses: [
          { node: "coder", tool_calls: [{ name: "shell", args: { command: "echo model > out.txt" } }] },
          { node: "coder", tool_calls: [{ name: "write_file", args: { path: "notes.txt", contents: "model line\nkept line\n" } }] },
          { node: "coder", content: "done" },
        ],
      }),
    );
    expect((await run(ws, { ...coder("edit", "happy.script.yaml"), script })).code).toBe(3);
    expect((await resume(ws, "edit", "--set-arg", "command=echo user > out.txt")).stderr).toMatch(
      /^loopgraph: --edit-args and --set-arg change the call you approve: add --approve$/m,
    );
    const set = await resume(ws, "edit", "--approve", "--set-arg", "command=echo user > out.txt", "--json");
    expect(set.code, set.stderr).toBe(3);
    expect(readFileSync(join(ws.dir, "out.txt"), "utf8")).toBe("user\n");
    const shellResult = parseEvents(set.stdout).find((e) => e.type === "tool_result") as { result: string };
    expect(shellResult.result).toMatch(
      /The user edited this call before approving it; it ran with their arguments, not yours\. Changed:\ncommand: "echo model > out.txt" → "echo user > out.txt"$/,
    );

    const argsFile = join(ws.dir, "..", "args.json");
    writeFileSync(argsFile, "{ not json");
    expect((await resume(ws, "edit", "--approve", "--edit-args", argsFile)).stderr).toMatch(
      /^loopgraph: --edit-args .*args\.json is not JSON \(.*\): write the call's arguments as one JSON object/m,
    );
    writeFileSync(argsFile, JSON.stringify({ path: "notes.txt", contents: "user line\nkept line\n" }));
    const edited = await resume(ws, "edit", "--approve", "--edit-args", argsFile, "--json");
    expect(edited.code, edited.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "notes.txt"), "utf8")).toBe("user line\nkept line\n");
    const writeResult = parseEvents(edited.stdout).find((e) => e.type === "tool_result") as { result: string };
    expect(writeResult.result).toMatch(/Changed:\ncontents:\n@@ -1,2 \+1,2 @@\n-model line\n\+user line\n kept line$/);
    const output = await coderOutput(ws.db, "edit");
    expect(output.toolCalls.map((call) => call.args)).toEqual([
      { command: "echo user > out.txt" },
      { path: "notes.txt", contents: "user line\nkept line\n" },
    ]);

    const replayed = await runCli(["replay", "edit", "--recorded", "--db", ws.db]);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(/consistent: the replay followed the record/);
  });

  it("--mode plan: reads, presents a plan that pauses even in --approval auto; a rejection reaches the model, an approval lets it act", async () => {
    const ws = repo();
    const script = join(ws.dir, "..", "plan.script.yaml");
    const plan = (text: string) => ({ node: "coder", tool_calls: [{ name: "present_plan", args: { plan: text } }] });
    writeFileSync(
      script,
      stringify({
        responses: [
          { node: "coder", tool_calls: [{ name: "write_file", args: { path: "early.txt", contents: "too soon" } }] },
          { node: "coder", tool_calls: [{ name: "read_file", args: { path: "important.txt" } }] },
          plan("1. Replace keep me with kept\n2. Done"),
          plan("1. Replace keep me with kept in important.txt\n2. Re-read it"),
          {
            node: "coder",
            tool_calls: [{ name: "edit_file", args: { path: "important.txt", old_string: "keep me", new_string: "kept" } }],
          },
          { node: "coder", content: "done" },
        ],
      }),
    );
    const first = await run(ws, { ...coder("plan", "happy.script.yaml", "auto"), script, extra: ["--mode", "plan"] });
    expect(first.code, first.stderr).toBe(3);
    const events = parseEvents(first.stdout);
    expect(events.find((e) => e.type === "tool_result")).toMatchObject({
      name: "write_file",
      ok: false,
      notRun: "not_allowed",
      result: expect.stringMatching(/^write_file is not available in plan mode/),
    });
    expect(events.find((e) => e.type === "interrupt")).toMatchObject({
      value: { tool: "present_plan", details: "1. Replace keep me with kept\n2. Done" },
    });
    expect(existsSync(join(ws.dir, "early.txt"))).toBe(false);

    const rejected = await resume(ws, "plan", "--reject", "say which file", "--json");
    expect(rejected.code, rejected.stderr).toBe(3);
    expect(parseEvents(rejected.stdout).find((e) => e.type === "tool_result")).toMatchObject({
      name: "present_plan",
      notRun: "rejected",
      result: expect.stringContaining("say which file"),
    });
    const approved = await resume(ws, "plan", "--approve");
    expect(approved.code, approved.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "important.txt"), "utf8")).toBe("kept\n");
    expect((await threadsOf(ws.db)).find((t) => t.threadId === "plan")).toMatchObject({ status: "finished" });
  });

  it.each([
    ...(lacks("sandbox", "the kill -9 test in the sandbox")
      ? []
      : [{ how: "in the sandbox", extra: [] as string[], env: cleanEnv(SANDBOX_AS_FOUND) }]),
    { how: "without a sandbox (--no-sandbox)", extra: ["--no-sandbox"], env: cleanEnv() },
  ])("kill -9 of loopgraph kills the command it was running $how, and everything that command started", async ({ extra, env }) => {
    const ws = repo();
    // A command that starts a background child and sleeps, marked so that only this test's processes are looked for.
    const marker = `loopgraph-orphan-canary-${process.pid}-${Date.now()}`;
    const script = join(ws.dir, "..", "long-shell.script.yaml");
    writeFileSync(
      script,
      stringify({
        responses: [
          { node: "coder", tool_calls: [{ name: "shell", args: { command: `(sleep 300 # ${marker}\n) & sleep 299 # ${marker}` } }] },
          { node: "coder", content: "done" },
        ],
      }),
    );
    const running = startRun(ws, { ...coder("orphan", "happy.script.yaml", "auto"), script, extra }, { env });
    await running.waitForEvent("tool_call");
    const cmdline = (pid: string): string => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "latin1");
      } catch {
        return ""; // gone meanwhile
      }
    };
    const canaries = () => readdirSync("/proc").filter((pid) => /^\d+$/.test(pid) && cmdline(pid).includes(marker));
    await expect.poll(() => canaries().length, { timeout: 10_000 }).toBeGreaterThan(0);
    await running.kill("SIGKILL");
    await expect.poll(() => canaries(), { timeout: 10_000, interval: 200 }).toEqual([]);
  });

  it("an approval of a file edit carries the diff of what it would change", async () => {
    const ws = repo();
    const paused = await runCoder(ws, "diffed", "happy.script.yaml");
    expect(paused.code, paused.stderr).toBe(3);
    const interrupt = parseEvents(paused.stdout).find((e) => e.type === "interrupt") as { value: { tool: string; diff?: string } };
    expect(interrupt.value.tool).toBe("write_file");
    expect(interrupt.value.diff).toBe(["--- /dev/null", "+++ b/src/hello.js", "@@ -0,0 +1,1 @@", "+console.log('hi');"].join("\n"));
  });

  it("an answer binds to the call it was asked about: a rejection stays one under --approval auto, and an answer that is not an approval rejects", async () => {
    const ws = repo();
    expect((await runCoder(ws, "bound", "approvals.script.yaml")).code).toBe(3);
    // The policy would now allow the call; the user's rejection still decides it.
    const rejected = await resume(ws, "bound", "--reject", "not that", "--approval", "auto", "--json");
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(existsSync(join(ws.dir, "approved.txt"))).toBe(false);
    const output = await coderOutput(ws.db, "bound");
    expect(output.toolCalls[0]).toMatchObject({ name: "shell", ok: false, errorKind: "rejected" });
    expect(output.toolCalls[0]?.preview).toContain("not that");

    const other = repo();
    expect((await runCoder(other, "text", "approvals.script.yaml")).code).toBe(3);
    const answered = await resume(other, "text", "--answer", "please do not", "--json");
    expect(answered.code, answered.stderr).toBe(3);
    expect(existsSync(join(other.dir, "approved.txt"))).toBe(false);
    const interrupt = parseEvents(answered.stdout).find((e) => e.type === "interrupt");
    expect(interrupt).toMatchObject({ value: { kind: "approval", tool: "shell", args: { command: "rm -f important.txt" } } });
    expect(readFileSync(join(other.dir, "important.txt"), "utf8")).toBe("keep me\n");
  });

  it("where no OS sandbox can start, --approval auto asks before a shell command; --no-sandbox runs it unconfined, by choice", async () => {
    const noBubblewrap = cleanEnv({ ...SANDBOX_AS_FOUND, LOOPGRAPH_BWRAP: "/nonexistent/bwrap" });
    const ws = repo();
    const asked = await run(ws, coder("unsandboxed", "approvals.script.yaml", "auto"), { env: noBubblewrap });
    expect(asked.code, asked.stderr).toBe(3);
    const events = parseEvents(asked.stdout);
    expect(events.find((e) => e.type === "run_started")).toMatchObject({ sandbox: "none" });
    expect(events.find((e) => e.type === "interrupt")).toMatchObject({ value: { kind: "approval", tool: "shell" } });
    expect(String((events.find((e) => e.type === "interrupt") as { value: { reason: string } }).value.reason)).toContain("no OS sandbox");
    expect(existsSync(join(ws.dir, "approved.txt"))).toBe(false);

    const other = repo();
    const waived = await run(
      other,
      { ...coder("waived", "approvals.script.yaml", "auto"), extra: ["--no-sandbox"] },
      { env: noBubblewrap },
    );
    expect(waived.code, waived.stderr).toBe(0);
    expect(parseEvents(waived.stdout).find((e) => e.type === "run_started")).toMatchObject({ sandbox: "off" });
    expect(readFileSync(join(other.dir, "approved.txt"), "utf8")).toBe("approved\n");
  });

  it("deny mode never pauses: a sensitive write is blocked and reported to the model", async () => {
    const ws = repo();
    const run = await runCoder(ws, "deny", "deny-env.script.yaml", "deny");
    expect(run.code, run.stderr).toBe(0);
    const events = parseEvents(run.stdout);
    expect(events.some((e) => e.type === "interrupt")).toBe(false);
    // The blocked call is announced, named, and its result says it did not run.
    const call = events.find((e) => e.type === "tool_call");
    expect(call).toMatchObject({ name: "write_file" });
    expect(events.find((e) => e.type === "tool_result" && e.id === call!.id)).toMatchObject({
      name: "write_file",
      ok: false,
      notRun: "blocked",
    });
    expect(existsSync(join(ws.dir, ".env"))).toBe(false);
    const output = await coderOutput(ws.db, "deny");
    expect(output.toolCalls[0]).toMatchObject({ name: "write_file", ok: false, errorKind: "blocked" });
  });

  it("kill -9 during the third tool step, then resume: continues from the last finished tool step", async () => {
    const ws = repo();
    const running = startRun(ws, coder("crash", "crash.script.yaml", "auto"));
    await running.waitForEvent("tool_call", (line) => line.includes("three"));
    await running.kill("SIGKILL");
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\n");

    // The resume kills what the killed run's command left before it runs the step again: then the command may end.
    const resuming = startResume(ws, "crash", "--json");
    await resuming.waitForEvent("tool_call", (line) => line.includes("three"));
    writeFileSync(join(ws.dir, "go"), "");
    const resumed = await resuming.done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    const calls = parseEvents(resumed.stdout).filter((e) => e.type === "tool_call");
    expect(calls).toHaveLength(1);
  });

  it("Ctrl-C in the middle of a Coder turn kills the tool step in flight (exit 130); resume runs it again and finishes", async () => {
    const ws = repo();
    const running = startRun(ws, coder("sigint", "crash.script.yaml", "auto"));
    await running.waitForEvent("tool_call", (line) => line.includes("three"));
    const interrupted = await running.kill("SIGINT");
    expect(interrupted.code).toBe(130);
    // The command was killed while it waited for `go`, before it wrote "three"; its cancelled result was not kept.
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\n");
    writeFileSync(join(ws.dir, "go"), "");

    const resumed = await resume(ws, "sigint", "--json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(
      parseEvents(resumed.stdout)
        .filter((e) => e.type === "tool_call")
        .map((e) => (e.args as { command: string }).command),
    ).toEqual(["while [ ! -e go ]; do sleep 0.1; done; echo three >> log.txt"]);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    expect((await coderOutput(ws.db, "sigint")).status).toBe("success");
  });

  it("six identical read_file calls trigger the step-back warning, then a Coder failure, which fails a run of the coder alone", async () => {
    const ws = repo();
    const run = await runCoder(ws, "loop", "loop.script.yaml", "auto");
    // No node of the `coder` graph takes up the Coder's failure: the run fails (exit 1) and says why.
    expect(run.code, run.stderr).toBe(1);
    const events = parseEvents(run.stdout);
    // Five calls ran; the sixth, the same again, is stopped by the loop detector before it runs: it is still shown, named, as not run.
    const results = events.filter((e) => e.type === "tool_result");
    expect(results).toHaveLength(6);
    expect(results.slice(0, 5).every((e) => e.ok)).toBe(true);
    expect(results[5]).toMatchObject({ name: "read_file", ok: false, notRun: "blocked" });
    expect(events.filter((e) => e.type === "tool_call").map((e) => e.name)).toEqual(Array(6).fill("read_file"));
    const finished = events.at(-1) as { type: string; outcome: string; reason: string };
    expect(finished).toMatchObject({ type: "run_finished", status: "failed", outcome: "failed", exitCode: 1 });
    expect(finished.reason).toMatch(/the Coder failed \(loop_detected\): .*read_file.*6 times/);
    const [thread] = (await threadsOf(ws.db)).filter((t) => t.threadId === "loop");
    expect(thread).toMatchObject({ status: "failed" });
  });

  it("a 5 MB shell output is cut for the model and saved whole as an artifact", async () => {
    const ws = repo();
    const run = await runCoder(ws, "big", "big-output.script.yaml", "auto");
    expect(run.code, run.stderr).toBe(0);
    const output = await coderOutput(ws.db, "big");
    const [shell] = output.toolCalls;
    expect(shell?.artifact).toBeDefined();
    const artifact = readFileSync(shell!.artifact!, "utf8");
    expect(artifact).toContain(`${"x".repeat(5_000_000)}\nEND-MARKER`);
    // The artifact lives in the workspace's .loopgraph folder, which hides itself from git.
    expect(execFileSync("git", ["-C", ws.dir, "status", "--porcelain"], { encoding: "utf8" })).toBe("");
    const result = parseEvents(run.stdout).find((e) => e.type === "tool_result") as { result: string };
    expect(result.result.length).toBeLessThan(40_000);
    expect(result.result).toContain("END-MARKER");
  });
});
