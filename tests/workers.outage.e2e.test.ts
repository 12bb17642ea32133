/**
 * A PostgreSQL store's server stopped or restarted under real processes of the CLI, as an
 * operator does it (`pg_ctl stop -m fast`, `pg_ctl restart -m fast`), in the middle of their
 * shell steps: workers ride it out and every queued run finishes once the server is back; a
 * foreground run stops at its last checkpoint with one line, exit 130, and `resume` finishes it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { cleanEnv, collect, eventually, runCli, spawnCli, type CliResult } from "./helpers/cli.js";
import { describeOnPostgres, queryRows, type PostgresServer } from "./helpers/postgres.js";
import { onCleanup, tempWorkspace, type Workspace } from "./helpers/workspace.js";

const STEPS = 2;

/** A scripted Coder whose shell steps each write `begin k`, take a second (an outage lands in one), then write `end k`. */
function slowSteps(dir: string): string {
  const calls = Array.from({ length: STEPS }, (_, i) => `      - name: shell\n        args: { command: "echo begin ${i + 1} >> log.txt; sleep 1; echo end ${i + 1} >> log.txt" }`).join("\n");
  const path = join(dir, "slow.script.yaml");
  writeFileSync(path, `responses:\n  - node: coder\n    tool_calls:\n${calls}\n  - node: coder\n    content: "done"\n`);
  return path;
}

const readLog = (ws: Workspace): string => {
  try {
    return readFileSync(join(ws.dir, "log.txt"), "utf8");
  } catch {
    return "";
  }
};

/** What must never reach a user's terminal: Node's crash output, a stack, an internal error. */
export function crashLines(output: string): string[] {
  return output.split("\n").filter((line) => /^\s+at |Unhandled 'error' event|internal error:|UnhandledPromiseRejection|node:internal/.test(line));
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface WorkerProcess {
  done: Promise<CliResult>;
  alive: () => boolean;
  stop: () => Promise<CliResult>;
}

function startWorker(env: NodeJS.ProcessEnv): WorkerProcess {
  const child = spawnCli(["worker", "--concurrency", "2"], { env });
  const done = collect(child);
  onCleanup(() => void child.kill("SIGKILL"));
  return {
    done,
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: () => {
      child.kill("SIGTERM");
      return done;
    },
  };
}

/** The status of every thread of the store, once all have left `queued` and `running` (or the time is up). */
async function statusesWhenSettled(url: string): Promise<string[]> {
  return eventually(
    async () => {
      await delay(250);
      const rows = await queryRows<{ thread_id: string; status: string }>(url, "SELECT thread_id, status FROM loopgraph_threads ORDER BY thread_id").catch(() => []);
      return rows.map((row) => `${row.thread_id}:${row.status}`);
    },
    (now) => now.length > 0 && now.every((entry) => !/:(queued|running)$/.test(entry)),
    120_000,
  );
}

describeOnPostgres("a PostgreSQL server that stops or restarts under the CLI", "the outage tests", (server) => {
  // A test that failed during its outage leaves the server as it found it, for the next one.
  afterEach(() => server().pgCtl("start"));

  /** Two workers running four queued runs, each in a shell step when `outage` strikes; all must finish. */
  async function workersThrough(name: string, outage: (pg: PostgresServer, workers: WorkerProcess[]) => Promise<void>): Promise<string> {
    const url = server().createDatabase(name);
    const env = cleanEnv({ LOOPGRAPH_DB: url, LOOPGRAPH_WORKER_CHECK_S: "1" });
    const runs = Array.from({ length: 4 }, (_, i) => ({ thread: `${name}-${i}`, ws: tempWorkspace({ git: true }) }));
    const script = slowSteps(runs[0]!.ws.root);
    for (const { thread, ws } of runs) {
      const queued = await runCli(["run", "coder", "--queue", "--thread", thread, "--task", "append", "--workspace", ws.dir, "--model", `scripted:${script}`, "--approval", "auto"], { env });
      expect(queued.code, queued.stderr).toBe(0);
    }
    const workers = [startWorker(env), startWorker(env)];
    await eventually(() => runs.every(({ ws }) => readLog(ws).includes("begin 1")), (begun) => begun, 60_000);
    await outage(server(), workers);
    expect(await statusesWhenSettled(url)).toEqual(runs.map(({ thread }) => `${thread}:finished`));
    for (const { ws } of runs) expect(readLog(ws)).toMatch(new RegExp(`end ${STEPS}\\n$`));
    expect(workers.map((worker) => worker.alive())).toEqual([true, true]);
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

  it("pg_ctl restart under two workers in the middle of their runs: no run fails for the connection it lost; every one finishes", async () => {
    await workersThrough("outage_restart", async (pg) => {
      // Near the end of the steps begun (a second each): their results are written while the server is away.
      await delay(800);
      pg.pgCtl("restart");
    });
  }, 180_000);

  it("a foreground run whose server stops mid-step stops at its last checkpoint: one line naming the store (no password) and how to go on, exit 130; resume finishes it once the server is back", async () => {
    const url = server().createDatabase("outage_run");
    const env = cleanEnv({ LOOPGRAPH_DB: url });
    const ws = tempWorkspace({ git: true });
    const child = spawnCli(["run", "coder", "--thread", "fg", "--task", "append", "--workspace", ws.dir, "--model", `scripted:${slowSteps(ws.root)}`, "--approval", "auto"], { env });
    onCleanup(() => void child.kill("SIGKILL"));
    const running = collect(child);
    await eventually(() => readLog(ws), (log) => log.includes("begin 1"), 60_000);
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
    expect(said[0]).toContain(
      `the PostgreSQL server of ${shown} went away (`,
    );
    expect(said[0]).toMatch(/\): the run stopped at its last checkpoint; continue it with `loopgraph resume fg` once the server is back$/);
    const resumed = await runCli(["resume", "fg"], { env });
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(readLog(ws)).toMatch(new RegExp(`end ${STEPS}\\n$`));
  }, 120_000);
});
