import { spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { openStore } from "../src/store/store.js";
import { processStart } from "../src/runs/thread-registry.js";
import { eventually, hasStackTrace, parseEvents, ROOT, runCli, type CliResult } from "./helpers/cli.js";
import { historyOf, run, startCli, startResume, startRun, threadsOf, type RunningCli, type RunPlace, type RunSpec } from "./helpers/e2e.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

/** Three shell appends, the third waiting until the test creates `go`: a run is busy in it (see tests/coder.e2e.test.ts). */
const CRASH = join(ROOT, "tests/fixtures/coder/crash.script.yaml");

/** Trials of each race: two processes started at the same moment on one thread. */
/**
 * Races per test here; the chaos suite runs more (\`npm run chaos\`: 20 double resumes, and its
 * short form in npm test), so npm test stays within its time.
 */
const TRIALS = 1;

/**
 * A Coder script: a shell append that waits for approval (a run without `--approval` pauses on
 * it, exit 3), then an answer held until `gate-coder` exists beside the script (the winner of a
 * race is still running when the other process tries: see `settleRace`) with a second append,
 * then the end.
 */
function appendScript(ws: Workspace): string {
  const script = join(ws.root, "append.script.yaml");
  writeFileSync(
    script,
    stringify({
      responses: [
        { node: "coder", tool_calls: [{ name: "shell", args: { command: "echo one >> log.txt" } }] },
        { node: "coder", wait_for: "gate-coder", tool_calls: [{ name: "shell", args: { command: "echo two >> log.txt" } }] },
        { node: "coder", content: "Appended two lines." },
      ],
    }),
  );
  return script;
}

const coder = (thread: string, script: string): RunSpec => ({ graph: "coder", task: "append", thread, script });

/**
 * The end of two processes racing for a thread of `appendScript(ws)`: once one has ended (the one
 * refused), the gate the other waits at is opened, and both are waited for. Should neither end
 * by itself (both took the thread), the gate opens after 60 s, so that the assertions fail, not
 * the test's time limit.
 */
async function settleRace(ws: Workspace, racers: [RunningCli, RunningCli]): Promise<CliResult[]> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([...racers.map((racer) => racer.done), new Promise((resolve) => (timer = setTimeout(resolve, 60_000)))]);
  clearTimeout(timer);
  writeFileSync(join(ws.root, "gate-coder"), "");
  return Promise.all(racers.map((racer) => racer.done));
}

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
      const results = await settleRace(ws, [startCli(args), startCli(args)]);
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

  it(`two runs of a new thread with the same id at the same moment: one runs it, the other exits 2 with one line (${TRIALS} trials)`, async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
      const spec = { ...coder("same", appendScript(ws)), approval: "auto" as const };
      const results = await settleRace(ws, [startRun(ws, spec), startRun(ws, spec)]);
      const winners = results.filter((result) => result.code === 0);
      expect(winners, results.map((r) => `${r.code}: ${r.stderr}`).join("\n")).toHaveLength(1);
      const loser = results.find((result) => result.code !== 0)!;
      expectRefused(
        loser,
        /thread "same" (is running in process \d+ on \S+: stop it first with Ctrl-C|already exists: continue it with `loopgraph resume same`)/,
      );
      expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\n");
      expect((await historyOf(ws.db, "same")).branches).toHaveLength(1);
    }
  }, 180_000);

  it("a thread whose owner was killed (kill -9): status and inspect say interrupted (process N is gone); resume takes it over at once", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const running = startRun(ws, { ...coder("killed", CRASH), approval: "auto" });
    // The third step waits for `go`: the first two are done and checkpointed.
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

    // The resume kills what the killed run's command left before it runs the step again: then the command may end.
    const resuming = startResume(ws, "killed", "--json");
    await resuming.waitForEvent("tool_call", (line) => line.includes("three"));
    writeFileSync(join(ws.dir, "go"), "");
    const resumed = await resuming.done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    expect((await historyOf(ws.db, "killed")).thread.status).toBe("finished");
  });

  it("a resume while the owner runs: exit 2, it is running in process N on HOST; the owner finishes undisturbed", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    // The owner's command waits until the test creates `go`: it is running, however slow the machine.
    const gated = join(ws.root, "gated.script.yaml");
    writeFileSync(
      gated,
      stringify({
        responses: [
          {
            node: "coder",
            tool_calls: [{ name: "shell", args: { command: "while [ ! -e go ]; do sleep 0.1; done; echo three >> log.txt" } }],
          },
          { node: "coder", content: "Wrote one line." },
        ],
      }),
    );
    const running = startRun(ws, { ...coder("busy", gated), approval: "auto" });
    await running.waitForEvent("tool_call", (line) => line.includes("three"));
    const refused = await runCli(["resume", "busy", "--db", ws.db]);
    expectRefused(refused, new RegExp(`thread "busy" is running in process ${running.child.pid} on \\S+: stop it first with Ctrl-C`));
    writeFileSync(join(ws.dir, "go"), "");
    const done = await running.done;
    expect(done.code, done.stderr).toBe(0);
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("three\n");
  });

  it("kill -9 of loopgraph with the command's watcher killed too: resume kills what the command left before the step runs again", async () => {
    const ws = tempWorkspace({ git: true, files: { "README.md": "# demo\n" } });
    const marker = `loopgraph-leftover-${process.pid}-${Date.now()}`;
    const script = join(ws.root, "leftover.script.yaml");
    writeFileSync(
      script,
      stringify({
        responses: [
          // The command waits until the test creates `go`: it is still running when both are killed, however slow the machine.
          {
            node: "coder",
            tool_calls: [{ name: "shell", args: { command: `while [ ! -e go ]; do sleep 0.1; done; echo late >> log.txt # ${marker}` } }],
          },
          { node: "coder", content: "done" },
        ],
      }),
    );
    const spec = { ...coder("leftover", script), approval: "auto" as const, extra: ["--no-sandbox"] };
    const running = startRun(ws, spec);
    await running.waitForEvent("tool_call");
    // The command's group: its leader runs the watcher script; the watcher is the leader's copy in the group.
    const found = await eventually(
      () => {
        const pids = marked(marker);
        const leader = pids.find((pid) => stat(pid)?.pgrp === pid);
        const watcher = pids.find(
          (pid) => leader !== undefined && pid !== leader && stat(pid)?.pgrp === leader && cmdline(pid) === cmdline(leader),
        );
        return { leader, watcher };
      },
      ({ leader, watcher }) => leader !== undefined && watcher !== undefined,
    );
    const leader = found.leader;
    expect(leader, "the command's process group").toBeDefined();
    const watcher = found.watcher;
    expect(watcher, "the command's watcher").toBeDefined();
    // loopgraph has recorded the group with the thread.
    const recorded = await eventually(
      async () => (await historyOf(ws.db, "leftover")).thread.commandGroups,
      (groups) => groups !== undefined,
    );
    expect(recorded).toEqual([{ pgid: leader, start: processStart(leader!) }]);
    process.kill(watcher!, "SIGKILL");
    await running.kill("SIGKILL");
    // Nothing killed the command: it would append its line once more while the step runs again.
    expect(groupMembers(leader!).length).toBeGreaterThan(0);

    const resuming = startResume(ws, "leftover", "--no-sandbox", "--json");
    await resuming.waitForEvent("warning", (line) => line.includes('"message":"killed'));
    // What the command left is gone: the step's command, run again, may end now.
    writeFileSync(join(ws.dir, "go"), "");
    const resumed = await resuming.done;
    expect(resumed.code, resumed.stderr).toBe(0);
    const warning = parseEvents(resumed.stdout).find((event) => event.type === "warning" && String(event.message).startsWith("killed"));
    expect(warning?.message).toBe(
      `killed what the commands of process ${running.child.pid}, which ran the thread and is gone, left running (process group ${leader})`,
    );
    expect(readFileSync(join(ws.dir, "log.txt"), "utf8")).toBe("late\n");
    expect(groupMembers(leader!)).toEqual([]);
    expect((await historyOf(ws.db, "leftover")).thread.commandGroups).toBeUndefined();
  });

  it("a takeover kills a recorded process group only while its id names the same group (its leader's start time)", async () => {
    const { db } = tempWorkspace();
    const store = await openStore({ db, env: {} }, "create");
    await store.threads.create({ threadId: "t", graphFile: "g.yaml", graphName: "g", task: "", approval: "ask", workspace: "/w" });
    const group = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    onCleanup(() => void group.kill("SIGKILL"));
    const pgid = group.pid!;
    const exited = new Promise((resolve) => group.once("exit", resolve));
    const deadOwner = spawnSync("true").pid!;
    const ownedByDead = (start: number) => {
      const raw = new Database(db);
      raw
        .prepare(`UPDATE loopgraph_threads SET status = 'running', pid = ?, command_groups = ? WHERE thread_id = 't'`)
        .run(deadOwner, JSON.stringify([{ pgid, start }]));
      raw.close();
    };
    // Another start time: the id was given to another group since; it is left alone.
    ownedByDead(processStart(pgid)! + 1);
    expect(await store.threads.claim("t")).toMatchObject({ claimed: true, killed: [] });
    expect(groupMembers(pgid)).toEqual([pgid]);
    ownedByDead(processStart(pgid)!);
    expect(await store.threads.claim("t")).toMatchObject({ claimed: true, killed: [pgid] });
    await exited;
    expect((await store.threads.get("t"))?.commandGroups).toBeUndefined();
    await store.close();
  });
});

/** The processes whose command line holds `marker`. */
function marked(marker: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => cmdline(pid).includes(marker));
}

/** The processes of process group `pgid` (zombies left out). */
function groupMembers(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      const s = stat(pid);
      return s?.pgrp === pgid && s.state !== "Z";
    });
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1");
  } catch {
    return ""; // gone meanwhile
  }
}

function stat(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "latin1");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0]!, pgrp: Number(fields[2]) };
  } catch {
    return undefined;
  }
}
