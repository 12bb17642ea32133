/**
 * The chaos suite's part (h): outages of a PostgreSQL store under real processes of the built CLI,
 * on a throwaway server (bench/postgres-server.ts): `pg_ctl stop -m fast` for 3 s, `pg_ctl
 * restart -m fast`, the server away for 10 s; each under two workers with four queued runs, and
 * under a foreground run. Every thread must finish once the server is back (a foreground run by
 * `resume`), and no output may hold a stack trace or Node's crash output. Left out of `--quick`:
 * the six trials take about two minutes.
 */
import { POSTGRES_REQUIRED, postgresUnavailable, startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { cleanEnv, type CliResult, collect, eventually, queueCoderRun, runCli, spawnCli } from "../helpers/cli.js";
import { allStepsDone, crashLines, delay, readLog, slowSteps, startWorker, statusesWhenSettled } from "../helpers/outage.js";
import { createWorkspace } from "../helpers/workspace.js";

type Outage = (pg: PostgresServer) => Promise<void>;

const OUTAGES: Record<string, Outage> = {
  stop: async (pg) => {
    pg.pgCtl("stop");
    await delay(3_000);
    pg.pgCtl("start");
  },
  restart: async (pg) => {
    // Near the end of the steps begun (a second each): their results are written while the server restarts.
    await delay(800);
    pg.pgCtl("restart");
  },
  away_10s: async (pg) => {
    pg.pgCtl("stop");
    await delay(10_000);
    pg.pgCtl("start");
  },
};

/** Resumes of a foreground run after its outage before it counts as stuck. */
const MAX_RESUMES = 3;

interface OutageResult {
  threads: number;
  finished: number;
  failures: string[];
}

const workspace = (name: string) => createWorkspace({ git: true, prefix: `loopgraph-chaos-${name}-` });

/** The output's crash lines, as failures of `what`. */
const crashes = (what: string, result: CliResult): string[] =>
  crashLines(result.stdout + result.stderr).map((line) => `${what}: ${line.trim()}`);

/** Two workers, four queued runs in a shell step when the outage strikes. */
async function workersTrial(pg: PostgresServer, name: string, outage: Outage): Promise<OutageResult> {
  const env = cleanEnv({ LOOPGRAPH_DB: pg.createDatabase(name), LOOPGRAPH_WORKER_CHECK_S: "1" });
  const places = Array.from({ length: 4 }, () => workspace(name));
  const workers: ReturnType<typeof startWorker>[] = [];
  try {
    const script = slowSteps(places[0]!.root);
    for (const [i, ws] of places.entries()) {
      await queueCoderRun(`${name}-${i}`, ws.dir, script, env);
    }
    workers.push(startWorker(env), startWorker(env));
    await eventually(
      () => places.every((ws) => readLog(ws.dir).includes("begin 1")),
      (begun) => begun,
      60_000,
    );
    await outage(pg);
    const statuses = await statusesWhenSettled(env.LOOPGRAPH_DB!);
    const failures = statuses.filter((entry) => !entry.endsWith(":finished")).map((entry) => `${name}: ${entry}`);
    if (!workers.every((worker) => worker.alive())) failures.push(`${name}: a worker ended during the outage`);
    for (const [i, worker] of workers.entries()) failures.push(...crashes(`${name} worker ${i + 1}`, await worker.stop()));
    return { threads: places.length, finished: statuses.filter((entry) => entry.endsWith(":finished")).length, failures };
  } finally {
    for (const worker of workers) worker.child.kill("SIGKILL");
    for (const ws of places) ws.remove();
  }
}

/** A foreground run in a shell step when the outage strikes, then resumed until it finishes. */
async function foregroundTrial(pg: PostgresServer, name: string, outage: Outage): Promise<OutageResult> {
  const env = cleanEnv({ LOOPGRAPH_DB: pg.createDatabase(name) });
  const ws = workspace(name);
  try {
    const child = spawnCli(
      [
        "run",
        "coder",
        "--thread",
        name,
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
    const running = collect(child);
    await eventually(
      () => readLog(ws.dir),
      (log) => log.includes("begin 1"),
      60_000,
    );
    await outage(pg);
    let result = await running;
    const failures = [...crashes(name, result)];
    if (
      result.code === 130 &&
      !/went away .*: the run stopped at its last checkpoint; continue it with `loopgraph resume /.test(result.stdout + result.stderr)
    )
      failures.push(`${name}: exit 130 without the line saying the store went away`);
    for (let resumes = 0; result.code !== 0 && resumes < MAX_RESUMES; resumes++) {
      result = await runCli(["resume", name], { env });
      failures.push(...crashes(`${name} resume`, result));
    }
    const finished = result.code === 0 && allStepsDone(ws.dir);
    if (!finished)
      failures.push(
        `${name}: not finished after ${MAX_RESUMES} resumes (exit ${result.code}): ${(result.stderr || result.stdout).trim().split("\n").at(-1)}`,
      );
    return { threads: 1, finished: finished ? 1 : 0, failures };
  } finally {
    ws.remove();
  }
}

/** Runs part (h), prints its line, and returns its failures (none when PostgreSQL cannot start here and is not required). */
export async function postgresOutages(out: (line: string) => void): Promise<string[]> {
  const unavailable = postgresUnavailable();
  if (unavailable && !POSTGRES_REQUIRED) {
    out(`(h) PostgreSQL outages: skipped (${unavailable})`);
    return [];
  }
  const pg = await startPostgres();
  const results: OutageResult[] = [];
  try {
    for (const [kind, outage] of Object.entries(OUTAGES)) {
      results.push(await workersTrial(pg, `workers_${kind}`, outage));
      results.push(await foregroundTrial(pg, `foreground_${kind}`, outage));
    }
  } finally {
    pg.stop();
  }
  const sum = (count: (result: OutageResult) => number) => results.reduce((total, result) => total + count(result), 0);
  out(
    `(h) PostgreSQL outages (${Object.keys(OUTAGES).join(", ")}) under two workers and under a foreground run: ${results.length} trials, ${sum((r) => r.finished)} of ${sum((r) => r.threads)} threads finished after recovery, ${sum((r) => r.failures.length)} failures`,
  );
  return results.flatMap((result) => result.failures);
}
