/**
 * Throughput of queued runs with 1, 2 and 4 workers (`loopgraph worker`, one run at a time each)
 * on runs dominated by model latency (a scripted model answering after `delay_ms`), on a
 * throwaway PostgreSQL server. Each size gets a database of its own with the same queued runs;
 * the time runs from starting the workers to the last run finished. Prints
 * `workers-bench: w1=1.00 w2=… w4=…` (throughput as a ratio to one worker) and a `bench:` row
 * for 4 workers: their time against one worker's, at most a third of it (w4 ≥ 3.0).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { CLI, FULL, report, ROOT } from "./lib.js";
import { postgresUnavailable, startPostgres } from "./postgres-server.js";

/** Runs queued per size, and the model's delay per call (each run makes two). */
const RUNS = FULL ? 32 : 16;
const DELAY_MS = 1_000;
const WORKERS = [1, 2, 4] as const;

const GRAPH = join(ROOT, "tests/fixtures/engine/durable.yaml");

function scriptIn(dir: string): string {
  const path = join(dir, "slow.script.yaml");
  writeFileSync(
    path,
    `responses:\n  - node: slow\n    delay_ms: ${DELAY_MS}\n    content: "slow step done"\n  - node: last\n    delay_ms: ${DELAY_MS}\n    content: "all done"\n`,
  );
  return path;
}

async function finishedRuns(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string; failed: string }>(
    `SELECT count(*) FILTER (WHERE status = 'finished') AS n, count(*) FILTER (WHERE status IN ('failed', 'limited', 'paused', 'interrupted')) AS failed FROM loopgraph_threads`,
  );
  if (Number(rows[0]!.failed) > 0) throw new Error("a queued run did not finish");
  return Number(rows[0]!.n);
}

/** Seconds from starting `workers` workers to the last of RUNS queued runs finished. */
async function timeWith(workers: number, url: string, dir: string, script: string): Promise<number> {
  const env = { ...process.env, LOOPGRAPH_DB: url, NO_COLOR: "1" };
  for (let i = 0; i < RUNS; i++) {
    const workspace = mkdtempSync(join(dir, "ws-"));
    const queued = spawnSync(
      process.execPath,
      [
        CLI,
        "run",
        GRAPH,
        "--queue",
        "--thread",
        `run-${i}`,
        "--task",
        "wait on the model",
        "--workspace",
        workspace,
        "--model",
        `scripted:${script}`,
      ],
      {
        env,
        encoding: "utf8",
      },
    );
    if (queued.status !== 0) throw new Error(`run --queue failed: ${queued.stderr}`);
  }
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const children: ChildProcess[] = [];
  try {
    const started = performance.now();
    for (let i = 0; i < workers; i++)
      children.push(spawn(process.execPath, [CLI, "worker", "--concurrency", "1"], { env, stdio: "ignore" }));
    while ((await finishedRuns(pool)) < RUNS) await new Promise((resolve) => setTimeout(resolve, 100));
    return (performance.now() - started) / 1000;
  } finally {
    for (const child of children) child.kill("SIGTERM");
    await Promise.all(
      children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once("exit", resolve)))),
    );
    await pool.end();
  }
}

const unavailable = postgresUnavailable();
if (unavailable) {
  console.log(`workers-bench: left out: ${unavailable}`);
} else {
  const server = await startPostgres();
  const dir = mkdtempSync(join(tmpdir(), "loopgraph-workers-bench-"));
  try {
    const script = scriptIn(dir);
    const seconds = new Map<number, number>();
    for (const workers of WORKERS) seconds.set(workers, await timeWith(workers, server.createDatabase(`workers_${workers}`), dir, script));
    const one = seconds.get(1)!;
    console.log(`workers-bench: ${WORKERS.map((workers) => `w${workers}=${(one / seconds.get(workers)!).toFixed(2)}`).join(" ")}`);
    const note = `${RUNS} runs of 2 model calls of ${DELAY_MS} ms; w4 = ${(one / seconds.get(4)!).toFixed(2)}× one worker's throughput, target ≥ 3`;
    report({ name: "workers_time_w4", ours: seconds.get(4)! * 1000, anchor: one * 1000, unit: "ms", maxRatio: 0.333, note });
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
