import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { hasStackTrace, ROOT, runCli, type CliResult } from "./helpers/cli.js";
import { historyOf, run, startCli, startRun, threadsOf, type RunPlace, type RunSpec } from "./helpers/e2e.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

/** Three shell appends, the third after `sleep 3`: a run is busy in it (see tests/coder.e2e.test.ts). */
const CRASH = join(ROOT, "tests/fixtures/coder/crash.script.yaml");

/** Trials of each race: two processes started at the same moment on one thread. */
const TRIALS = 8;

/**
 * A Coder script: a shell append that waits for approval (a run without `--approval` pauses on
 * it, exit 3), then a slow answer (the winner of a race is still running when the other
 * process tries) with a second append, then the end.
 */
function appendScript(ws: Workspace): string {
  const script = join(ws.root, "append.script.yaml");
  writeFileSync(
    script,
    stringify({
      responses: [
        { node: "coder", tool_calls: [{ name: "shell", args: { command: "echo one >> log.txt" } }] },
        { node: "coder", delay_ms: 1500, tool_calls: [{ name: "shell", args: { command: "echo two >> log.txt" } }] },
        { node: "coder", content: "Appended two lines." },
      ],
    }),
  );
  return script;
}

const coder = (thread: string, script: string): RunSpec => ({ graph: "coder", task: "append", thread, script });

/** The one-line refusal of a process that found the thread taken: exit 2, no internal error, no stack trace. */
function expectRefused(result: CliResult, pattern: RegExp): void {
  expect(result.code, result.stderr + result.stdout).toBe(2);
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(pattern);
  expect(result.stderr).not.toContain("internal error");
  expect(hasStackTrace(result.stderr)).toBe(false);
}

const RUNNING = (thread: string) => new RegExp(`thread "${thread}" is running in process \\d+ on \\S+: stop it first with Ctrl-C`);

describe("one owner per thread", () => {
  it(`two resumes of a paused thread started at the same moment: one runs it, the other exits 2 (${TRIALS} trials)`, async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
      const place: RunPlace = ws;
      const paused = await run(place, coder("race", appendScript(ws)));
      expect(paused.code, paused.stderr).toBe(3);

      // Both start before either is awaited.
      const args = ["resume", "race", "--approve", "--approval", "auto", "--db", ws.db, "--json"];
      const [a, b] = [startCli(args), startCli(args)];
      const results = await Promise.all([a.done, b.done]);
      const winners = results.filter((result) => result.code === 0);
      const losers = results.filter((result) => result.code !== 0);
      expect(winners, results.map((r) => `${r.code}: ${r.stderr}`).join("\n")).toHaveLength(1);
      expectRefused(losers[0]!, RUNNING("race"));
      expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\n");
      const history = await historyOf(ws.db, "race");
      expect(history.branches).toHaveLength(1);
      expect(history.thread.status).toBe("finished");
    }
  }, 240_000);

  it(`two runs of a new thread with the same id at the same moment: one runs it, the other exits 2 with one line (${TRIALS / 2} trials)`, async () => {
    for (let trial = 0; trial < TRIALS / 2; trial++) {
      const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
      const spec = { ...coder("same", appendScript(ws)), approval: "auto" as const };
      const [a, b] = [startRun(ws, spec), startRun(ws, spec)];
      const results = await Promise.all([a.done, b.done]);
      const winners = results.filter((result) => result.code === 0);
      expect(winners, results.map((r) => `${r.code}: ${r.stderr}`).join("\n")).toHaveLength(1);
      const loser = results.find((result) => result.code !== 0)!;
      expectRefused(loser, /thread "same" (is running in process \d+ on \S+: stop it first with Ctrl-C|already exists: continue it with `loopgraph resume same`)/);
      expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\n");
      expect((await historyOf(ws.db, "same")).branches).toHaveLength(1);
    }
  }, 180_000);

  it("a run of an id a finished thread has: exit 2, continue it with resume", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const spec = { ...coder("done", appendScript(ws)), approval: "auto" as const };
    expect((await run(ws, spec)).code).toBe(0);
    expectRefused(await run(ws, spec), /^loopgraph: thread "done" already exists: continue it with `loopgraph resume done`$/m);
  });

  it("a thread whose owner was killed (kill -9): status and inspect say interrupted (process N is gone); resume takes it over at once", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const running = startRun(ws, { ...coder("killed", CRASH), approval: "auto" });
    // The third step sleeps: the first two are done and checkpointed.
    await running.waitForEvent("tool_call", (line) => line.includes("three"));
    const pid = running.child.pid!;
    await running.kill("SIGKILL");

    const gone = `process ${pid}, which ran it, is gone`;
    expect((await threadsOf(ws.db)).find((t) => t.threadId === "killed")).toMatchObject({ status: "interrupted", error: gone });
    const inspected = await runCli(["inspect", "killed", "--db", ws.db]);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(inspected.stdout).toContain(gone);
    const status = await runCli(["status", "killed", "--db", ws.db]);
    expect(status.stdout).toContain(`(interrupted: ${gone}; \`loopgraph resume killed\` continues it)`);

    const resumed = await runCli(["resume", "killed", "--db", ws.db, "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    expect((await historyOf(ws.db, "killed")).thread.status).toBe("finished");
  });

  it("a resume while the owner runs: exit 2, it is running in process N on HOST; the owner finishes undisturbed", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const running = startRun(ws, { ...coder("busy", CRASH), approval: "auto" });
    await running.waitForEvent("tool_call", (line) => line.includes("three"));
    const refused = await runCli(["resume", "busy", "--db", ws.db]);
    expectRefused(refused, new RegExp(`thread "busy" is running in process ${running.child.pid} on \\S+: stop it first with Ctrl-C`));
    const done = await running.done;
    expect(done.code, done.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\nthree\n");
  });
});
