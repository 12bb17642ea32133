/**
 * A PostgreSQL store's server stopped or restarted under real processes of the CLI, as an
 * operator does it (`pg_ctl stop -m fast`, `pg_ctl restart -m fast`), in the middle of their
 * shell steps: workers ride it out and every queued run finishes once the server is back; a
 * foreground run stops at its last checkpoint with one line, exit 130, and `resume` finishes it.
 */
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { cleanEnv, collect, eventually, queueCoderRun, ROOT, runCli, spawnCli } from "./helpers/cli.js";
import { run } from "./helpers/e2e.js";
import {
  allStepsDone,
  crashLines,
  cuttingProxy,
  delay,
  readLog,
  slowSteps,
  startWorker,
  statusesWhenSettled,
  type WorkerProcess,
} from "./helpers/outage.js";
import { describeOnPostgres, type PostgresServer } from "./helpers/postgres.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";

describeOnPostgres("a PostgreSQL server that stops or restarts under the CLI", "the outage tests", (server) => {
  // A test that failed during its outage leaves the server as it found it, for the next one.
  afterEach(() => server().pgCtl("start"));

  /** Two workers running four queued runs, each in a shell step when `outage` strikes; all must finish. */
  async function workersThrough(
    name: string,
    outage: (pg: PostgresServer, workers: WorkerProcess[], dirs: string[]) => Promise<void>,
  ): Promise<string> {
    const url = server().createDatabase(name);
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const runs = Array.from({ length: 4 }, (_, i) => ({ thread: `${name}-${i}`, ws: tempWorkspace({ git: true }) }));
    const script = slowSteps(runs[0]!.ws.root);
    for (const { thread, ws } of runs) {
      const queued = await queueCoderRun(thread, ws.dir, script, env);
      expect(queued.code, queued.stderr).toBe(0);
    }
    // `wait` follows a run through the outage too (connected well before it: a wait started while the server is away exits 2).
    const waiting = runCli(["wait", runs[0]!.thread], { env });
    const workers = [startWorker(env), startWorker(env)];
    for (const worker of workers) onCleanup(() => void worker.child.kill("SIGKILL"));
    await eventually(
      () => runs.every(({ ws }) => readLog(ws.dir).includes("begin 1")),
      (begun) => begun,
      60_000,
    );
    await outage(
      server(),
      workers,
      runs.map(({ ws }) => ws.dir),
    );
    expect(await statusesWhenSettled(url)).toEqual(runs.map(({ thread }) => `${thread}:finished`));
    const waited = await waiting;
    expect(waited.code, waited.stderr).toBe(0);
    expect(crashLines(waited.stderr), waited.stderr).toEqual([]);
    for (const { ws } of runs) expect(allStepsDone(ws.dir), readLog(ws.dir)).toBe(true);
    // A worker that ended: what it said, for the failure's message.
    const ended = await Promise.all(workers.filter((worker) => !worker.alive()).map((worker) => worker.done));
    expect(
      workers.map((worker) => worker.alive()),
      ended.map((end) => `exit ${end.code}: ${end.stdout}${end.stderr}`).join("\n"),
    ).toEqual([true, true]);
    const ends = await Promise.all(workers.map((worker) => worker.stop()));
    for (const end of ends) {
      expect(end.code, end.stderr).toBe(0);
      expect(crashLines(end.stdout + end.stderr), end.stderr).toEqual([]);
    }
    const said = ends.map((end) => end.stderr).join("");
    expect(said).not.toMatch(/failed \(exit/);
    return said;
  }

  it("pg_ctl stop -m fast under two workers in the middle of their runs: both stay up, saying so in one line each; once the server is back every run finishes", async () => {
    const said = await workersThrough("outage_stop", async (pg, workers) => {
      pg.pgCtl("stop");
      await delay(3_000);
      expect(workers.map((worker) => worker.alive())).toEqual([true, true]);
      pg.pgCtl("start");
    });
    // Said once when it begins and once when it ends, not at every try.
    expect(said.match(/: lost the store \(.+\): trying again/g)?.length).toBeLessThanOrEqual(2);
    expect(said.match(/: lost the store/g)?.length).toBe(said.match(/: the store is back$/gm)?.length);
    expect(said).toMatch(/: stopped at its last checkpoint, the store went away.*: it goes back to the queue once the store is back/);
  }, 180_000);

  it("pg_ctl restart, again and again while the runs' first steps end: no run fails for a connection it lost; every one finishes", async () => {
    await workersThrough("outage_restart", async (pg, _workers, dirs) => {
      // Back to back, the server is away most of the time: the steps' results meet a restart.
      for (let restarts = 0; restarts < 20 && !dirs.every((dir) => readLog(dir).includes("end 1")); restarts++) pg.pgCtl("restart");
    });
  }, 180_000);

  it("a foreground run whose server stops mid-step stops at its last checkpoint: one line naming the store (no password) and how to go on, exit 130; resume finishes it once the server is back", async () => {
    const url = server().createDatabase("outage_run");
    const env = cleanEnv({ LOOPGRAPH_DB: url });
    const ws = tempWorkspace({ git: true });
    const child = spawnCli(
      [
        "run",
        "coder",
        "--thread",
        "fg",
        "--task",
        "append",
        "--workspace",
        ws.dir,
        "--model",
        `scripted:${slowSteps(ws.root)}`,
        "--approval",
        "auto",
      ],
      { env },
    );
    onCleanup(() => void child.kill("SIGKILL"));
    const running = collect(child);
    await eventually(
      () => readLog(ws.dir),
      (log) => log.includes("begin 1"),
      60_000,
    );
    server().pgCtl("stop");
    const result = await running;
    server().pgCtl("start");
    const output = result.stdout + result.stderr;
    expect(result.code, output).toBe(130);
    expect(crashLines(output), output).toEqual([]);
    expect(output).not.toContain(server().password);
    const shown = url.replace(server().password, "***");
    const said = output.split("\n").filter((line) => line.includes("went away"));
    expect(said, output).toHaveLength(1);
    expect(said[0]).toContain(`the PostgreSQL server of ${shown} went away (`);
    expect(said[0]).toMatch(/\): the run stopped at its last checkpoint; continue it with `loopgraph resume fg` once the server is back$/);
    const resumed = await runCli(["resume", "fg"], { env });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(allStepsDone(ws.dir), readLog(ws.dir)).toBe(true);
  }, 120_000);

  it("the server gone at any moment of status, inspect or threads list: one line naming the store and what to do, exit 2, never a stack or an internal error", async () => {
    const url = server().createDatabase("outage_reads");
    const ws = tempWorkspace();
    const fixtures = join(ROOT, "tests/fixtures/engine");
    const seeded = await run(
      { dir: ws.dir, db: url },
      { graph: join(fixtures, "durable.yaml"), thread: "seen", script: join(fixtures, "durable.script.yaml"), task: "t" },
    );
    expect(seeded.code, seeded.stderr).toBe(0);
    const through = (port: number) => cleanEnv({ LOOPGRAPH_DB: url.replace(`:${server().port}/`, `:${port}/`) });
    for (const command of [
      ["status", "seen"],
      ["inspect", "seen", "--json"],
      ["threads", "list"],
    ]) {
      // How many chunks the command sends with the server there all along; then cut at moments spread over them.
      const whole = await cuttingProxy(server().port);
      const passed = await runCli(command, { env: through(whole.port) });
      await whole.close();
      expect(passed.code, passed.stderr).toBe(0);
      const moments = [0, 1, 2, 3, 5, 8, 13, 21].filter((moment) => moment < whole.chunks());
      expect(moments.length, `${command.join(" ")} sends ${whole.chunks()} chunks`).toBeGreaterThanOrEqual(4);
      for (const moment of moments) {
        const proxy = await cuttingProxy(server().port, moment);
        const cut = await runCli(command, { env: through(proxy.port) });
        await proxy.close();
        const said = `${command.join(" ")}, cut after ${moment} chunks: ${cut.stderr}`;
        expect(crashLines(cut.stdout + cut.stderr), said).toEqual([]);
        // Cut after its last query (only the connections' goodbyes lost), the command has done its work.
        if (cut.code === 0 && moment > 0) {
          expect(cut.stdout, said).toBe(passed.stdout);
          continue;
        }
        expect(cut.code, said).toBe(2);
        expect(cut.stderr.trim().split("\n"), said).toHaveLength(1);
        expect(cut.stderr, said).toMatch(
          /^loopgraph: (cannot reach the PostgreSQL server of postgres:\/\/\S+ \(.+\): check that it runs|the PostgreSQL server of postgres:\/\/\S+ went away \(.+\): try again once it is back)/,
        );
        expect(cut.stderr, said).not.toContain(server().password);
      }
    }
  }, 120_000);
});
