/**
 * Workers on a PostgreSQL store (`run --queue`, `loopgraph worker`, `loopgraph wait`), as real
 * processes on a throwaway server: 3 workers, 12 queued runs whose shell steps append to a file
 * of their own, one worker killed with `kill -9` in the middle of its runs. All 12 finish; no
 * step that was checkpointed runs again (only a step in flight at the kill may); no run is
 * executed by two workers at once. SIGTERM stops a worker gracefully: its run goes back to the
 * queue at a checkpoint and another worker finishes it.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import PgBoss from "pg-boss";
import { expect, it } from "vitest";
import { enqueueRun } from "../src/engine/runner.js";
import { RunQueue } from "../src/engine/run-queue.js";
import { cleanEnv, collect, eventually, queueCoderRun, ROOT, runCli, spawnCli } from "./helpers/cli.js";
import { describeOnPostgres, queryRows } from "./helpers/postgres.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";
import { settingsOf } from "../src/config/environment-settings.js";

const STEPS = 3;

/** Twice the slots of the workers (3 × 2): runs wait in the queue while one worker dies. */
const QUEUED_RUNS = 12;

/** A scripted Coder whose shell steps each write `begin k`, wait a little, then `end k` to log.txt. */
function stepScript(dir: string): string {
  const calls = Array.from(
    { length: STEPS },
    (_, i) => `      - name: shell\n        args: { command: "echo begin ${i + 1} >> log.txt; sleep 0.4; echo end ${i + 1} >> log.txt" }`,
  ).join("\n");
  const path = join(dir, "steps.script.yaml");
  writeFileSync(path, `responses:\n  - node: coder\n    tool_calls:\n${calls}\n  - node: coder\n    content: "done"\n`);
  return path;
}

interface Worker {
  child: ChildProcess;
  done: ReturnType<typeof collect>;
  stderr: () => string;
}

function startWorker(env: NodeJS.ProcessEnv, concurrency: number): Worker {
  const child = spawnCli(["worker", "--concurrency", String(concurrency)], { env });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const done = collect(child);
  onCleanup(() => void child.kill("SIGKILL"));
  return { child, done, stderr: () => stderr };
}

/** The threads a worker's log says it started. */
const startedBy = (worker: Worker): string[] => [...worker.stderr().matchAll(/: (\S+): running$/gm)].map((match) => match[1]!);

describeOnPostgres("workers on a PostgreSQL store", "the worker tests", (server) => {
  it("3 workers, 12 queued runs, one worker killed with kill -9: all finish, no checkpointed step runs again, no run runs in two workers at once", async () => {
    const url = server().createDatabase("workers_kill");
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const runs = Array.from({ length: QUEUED_RUNS }, (_, i) => ({
      thread: `run-${String(i).padStart(2, "0")}`,
      ws: tempWorkspace({ git: true }),
    }));
    const script = stepScript(runs[0]!.ws.root);
    // The first three are queued by `run --queue` processes at once; the others by the function
    // behind that command, in this process: more CLI starts (a third of a second of CPU each)
    // would only measure the machine.
    const [viaCli, inProcess] = [runs.slice(0, 3), runs.slice(3)];
    await Promise.all(
      viaCli.map(async ({ thread, ws }) => {
        const queued = await queueCoderRun(thread, ws.dir, script, env);
        expect(queued.code, queued.stderr).toBe(0);
        expect(queued.stdout.trim()).toBe(thread);
      }),
    );
    for (const { thread, ws } of inProcess) {
      expect(
        await enqueueRun({
          graph: "coder",
          threadId: thread,
          task: "append",
          workspace: ws.dir,
          model: `scripted:${script}`,
          approval: "auto",
          settings: settingsOf(env),
          cwd: ROOT,
        }),
      ).toBe(thread);
    }

    const workers = [startWorker(env, 2), startWorker(env, 2), startWorker(env, 2)];
    // The first worker dies in the middle of its runs: once one of them has begun a step.
    const victim = workers[0]!;
    await eventually(
      () => startedBy(victim).some((thread) => readLog(runs.find((run) => run.thread === thread)!.ws.dir).includes("begin")),
      (begun) => begun,
      60_000,
    );
    const inFlight = startedBy(victim);
    victim.child.kill("SIGKILL");
    await victim.done;

    // Every run ends, finished (read from the store; `wait` itself is checked on the last one).
    const statuses = await eventually(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const threads = await queryRows<{ thread_id: string; status: string }>(
          url,
          "SELECT thread_id, status FROM loopgraph_threads ORDER BY thread_id",
        );
        return threads.map((row) => `${row.thread_id}:${row.status}`);
      },
      (now) => now.every((entry) => !/:(queued|running)$/.test(entry)),
      120_000,
    );
    expect(statuses).toEqual(runs.map(({ thread }) => `${thread}:finished`));
    const waited = await runCli(["wait", runs.at(-1)!.thread], { env });
    expect(waited.code, waited.stderr).toBe(0);

    const expected = Array.from({ length: STEPS }, (_, i) => [`begin ${i + 1}`, `end ${i + 1}`]).flat();
    const takenOver: string[] = [];
    for (const { thread, ws } of runs) {
      const lines = readLog(ws.dir).trim().split("\n");
      if (lines.join() === expected.join()) continue;
      // Only a run of the killed worker may differ, and only by its step in flight, begun again by the next worker.
      expect(inFlight, `${thread}: ${lines.join(", ")}`).toContain(thread);
      expect(withoutOneRerun(lines), `${thread}: ${lines.join(", ")}`).toEqual(expected);
      takenOver.push(thread);
    }
    // The kill did land mid-run: at least one run of the killed worker was finished by another.
    const finishedElsewhere = inFlight.filter((thread) => !new RegExp(`: ${thread}: finished`).test(victim.stderr()));
    expect(finishedElsewhere.length).toBeGreaterThan(0);
    expect(startedBy(workers[1]!).concat(startedBy(workers[2]!))).toEqual(expect.arrayContaining(finishedElsewhere));

    for (const worker of workers.slice(1)) worker.child.kill("SIGTERM");
    for (const worker of workers.slice(1)) expect((await worker.done).code).toBe(0);
    expect(takenOver.length).toBeLessThanOrEqual(inFlight.length);
  }, 180_000);

  it("SIGTERM: the worker's run stops at a checkpoint and goes back to the queue; another worker finishes it", async () => {
    const url = server().createDatabase("workers_term");
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const ws = tempWorkspace({ git: true });
    const script = stepScript(ws.root);
    expect((await queueCoderRun("term", ws.dir, script, env)).code).toBe(0);
    const first = startWorker(env, 1);
    await eventually(
      () => readLog(ws.dir),
      (log) => log.includes("begin 1"),
      60_000,
    );
    first.child.kill("SIGTERM");
    const stopped = await first.done;
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stderr).toMatch(/term: back in the queue/);
    // The signal's line is a line of its own: what follows starts on the next one.
    expect(stopped.stderr).toMatch(/^worker: stopping: [^\n]*\(signal again to quit at once\)\n\S/m);
    const second = startWorker(env, 1);
    const waited = await runCli(["wait", "term", "--json"], { env });
    expect(waited.code, waited.stderr).toBe(0);
    expect(JSON.parse(waited.stdout)).toMatchObject({ threadId: "term", status: "finished", exitCode: 0 });
    // The step in flight at the SIGTERM finished there; nothing ran twice.
    expect(readLog(ws.dir).trim().split("\n")).toEqual(Array.from({ length: STEPS }, (_, i) => [`begin ${i + 1}`, `end ${i + 1}`]).flat());
    second.child.kill("SIGTERM");
    expect((await second.done).code).toBe(0);
  });

  it("a queued run that asks for an approval pauses (wait exits 3); resume --approve from another directory finishes it", async () => {
    const url = server().createDatabase("workers_approve");
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const ws = tempWorkspace({ git: true });
    const script = stepScript(ws.root);
    expect(
      (
        await runCli(
          [
            "run",
            "coder",
            "--queue",
            "--thread",
            "ask",
            "--task",
            "append",
            "--workspace",
            ws.dir,
            "--model",
            `scripted:${script}`,
            "--approval",
            "ask",
          ],
          { env },
        )
      ).code,
    ).toBe(0);
    const worker = startWorker(env, 1);
    const paused = await runCli(["wait", "ask"], { env });
    expect(paused.code, paused.stdout + paused.stderr).toBe(3);
    expect(paused.stdout).toMatch(/waiting for approval/);
    expect(readLog(ws.dir)).toBe("");
    const elsewhere = tempWorkspace().root;
    let resumed = await runCli(["resume", "ask", "--approve"], { env, cwd: elsewhere });
    // Each of the script's shell steps asks: approve them one by one, from the other directory.
    for (let i = 1; i < STEPS && resumed.code === 3; i++) resumed = await runCli(["resume", "ask", "--approve"], { env, cwd: elsewhere });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(readLog(ws.dir).trim().split("\n")).toEqual(Array.from({ length: STEPS }, (_, i) => [`begin ${i + 1}`, `end ${i + 1}`]).flat());
    expect((await runCli(["wait", "ask"], { env })).code).toBe(0);
    worker.child.kill("SIGTERM");
    expect((await worker.done).code).toBe(0);
  });

  it("the queue opened by 8 processes at once on a new database: every one opens it, none sees a deadlock", async () => {
    // Each RunQueue has its own connections, as each process does. The race is at the queue's
    // creation: each database starts with pg-boss's tables made (as by the first process to get
    // there) but no queue yet, so all 8 find it missing at once.
    for (let round = 0; round < 5; round++) {
      const url = server().createDatabase(`queue_race_${round}`);
      const boss = new PgBoss({ connectionString: url, schema: "loopgraph_queue", supervise: false, schedule: false });
      boss.on("error", () => undefined);
      await boss.start();
      await boss.stop({ graceful: false, wait: true });
      const opened = await Promise.allSettled(Array.from({ length: 8 }, () => RunQueue.open(url, {})));
      const failures = opened.flatMap((result) => (result.status === "rejected" ? [String(result.reason)] : []));
      await Promise.all(opened.map((result) => (result.status === "fulfilled" ? result.value.close() : undefined)));
      expect(failures).toEqual([]);
      expect(await queryRows(url, "SELECT name FROM loopgraph_queue.queue")).toEqual([{ name: "loopgraph-runs" }]);
    }
  });

  it("a queued run that cannot run (its graph file gone): the worker fails it once, with why, and no worker takes it again", async () => {
    const url = server().createDatabase("unrunnable");
    const ws = tempWorkspace({ git: "init" });
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const graph = join(ws.root, "flow.yaml");
    writeFileSync(graph, readFileSync(join(ROOT, "graphs", "coder.yaml"), "utf8"));
    const script = stepScript(ws.root);
    const queued = await runCli(["run", graph, "--queue", "--task", "t", "--thread", "unrunnable", "--model", `scripted:${script}`], {
      env,
      cwd: ws.dir,
    });
    expect(queued.code, queued.stderr).toBe(0);
    rmSync(graph);
    const worker = startWorker(env, 1);
    const waited = await runCli(["wait", "unrunnable", "--json"], { env, cwd: ws.dir });
    expect(waited.code, worker.stderr()).toBe(1);
    const record = JSON.parse(waited.stdout) as { status: string; error: string };
    expect(record.status).toBe("failed");
    expect(record.error).toMatch(/^not run by a worker: .*flow\.yaml/);
    // Looked at again after its check interval: it is not taken again.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(startedBy(worker)).toEqual(["unrunnable"]);
    worker.child.kill("SIGTERM");
    expect((await worker.done).code).toBe(0);
  }, 60_000);

  it("run --queue on a SQLite store, and a worker without PostgreSQL: one line, exit 2", async () => {
    const ws = tempWorkspace();
    const queued = await runCli(["run", "coder", "--queue", "--task", "x", "--workspace", ws.dir, "--db", ws.db], { env: cleanEnv() });
    expect(queued.code).toBe(2);
    expect(queued.stderr.trim()).toMatch(/^loopgraph: --queue needs a PostgreSQL store shared with the workers/);
    const worker = await runCli(["worker", "--db", ws.db], { env: cleanEnv() });
    expect(worker.code).toBe(2);
    expect(worker.stderr.trim()).toMatch(/^loopgraph: a worker runs the queued runs of a PostgreSQL store/);
  });
});

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, "log.txt"), "utf8");
  } catch {
    return "";
  }
}

/**
 * The log without the killed worker's copy of its step in flight: a `begin k` (and the `end k`
 * its command may still have written) right before the same step begun again.
 */
function withoutOneRerun(lines: string[]): string[] {
  for (let i = 0; i < lines.length; i++) {
    const begin = lines[i]!;
    if (!begin.startsWith("begin ")) continue;
    const step = begin.slice("begin ".length);
    if (lines[i + 1] === begin) return [...lines.slice(0, i), ...lines.slice(i + 1)];
    if (lines[i + 1] === `end ${step}` && lines[i + 2] === begin) return [...lines.slice(0, i), ...lines.slice(i + 2)];
  }
  return lines;
}
