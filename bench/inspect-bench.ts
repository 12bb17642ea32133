/**
 * `loopgraph inspect <thread>` (its compact history) and `loopgraph inspect` (the thread list)
 * from another process, against a bare `node -e ""` start measured in the same run, on a loop
 * thread of about 500 checkpoints (33 rounds, subgraph checkpoints counted as the issue counts
 * them) and, with --full, on the 329-round thread (about 5,000). Targets: the ~500 thread ≤ 5×
 * node; the long one ≤ 2000 ms and ≤ 300 MB peak RSS (two rows); the list ≤ 3× node with the
 * longest thread in the store. With PostgreSQL, the ~500 thread's inspect there ≤ 1.5× SQLite's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { loopThread, type LoopThread } from "./fixtures.js";
import { CLI, FULL, measureNode, median, medianNodeMs, nodeStartMs, pairedFigures, pairedNodeMs, report } from "./lib.js";
import { postgresUnavailable, startPostgres } from "./postgres-server.js";

/** Checkpoints of the thread in every namespace (root and subgraphs), as the issue counts them. */
function allCheckpoints(thread: LoopThread): number {
  const db = new Database(thread.db, { readonly: true });
  try {
    return (db.prepare("SELECT COUNT(*) AS n FROM loopgraph_checkpoints WHERE thread_id = ?").get(thread.threadId) as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * `inspect_thread_postgres`: the same thread (same script, same rounds) on PostgreSQL, against
 * SQLite's in the same run: both read their history linearly. Target ≤ 1.5× SQLite. Left out,
 * saying why, without PostgreSQL.
 */
async function postgresAgainstSqlite(onSqlite: LoopThread, sqliteArgs: string[]): Promise<void> {
  const unavailable = postgresUnavailable();
  if (unavailable) {
    console.log(`inspect-bench: inspect_thread_postgres left out: ${unavailable}`);
    return;
  }
  const server = await startPostgres();
  try {
    const onPostgres = await loopThread(join(dir, "postgres"), 33, onSqlite.threadId, { db: server.createDatabase("inspect_bench") });
    const postgresArgs = [CLI, "inspect", onPostgres.threadId, "--db", onPostgres.db];
    const pairs = Array.from({ length: 7 }, () => ({ anchor: medianNodeMs(sqliteArgs, 1), ours: medianNodeMs(postgresArgs, 1) }));
    report({
      name: "inspect_thread_postgres",
      ...pairedFigures(pairs),
      unit: "ms",
      maxRatio: 1.5,
      note: `${onPostgres.checkpoints} root checkpoints on PostgreSQL; ratio: median of 7 pairs; anchor: the same thread's inspect on SQLite`,
    });
  } finally {
    server.stop();
  }
}

const dir = mkdtempSync(join(tmpdir(), "loopgraph-inspect-bench-"));
try {
  // Each thread is measured as soon as it is built (the long one's build, minutes of writing, would
  // otherwise run just before the short one's timings), against a node start measured beside it.
  const short = await loopThread(join(dir, "short"), 33);
  const shortNote = `${short.checkpoints} root checkpoints; ratio: median of 7 pairs; anchor: node -e ""`;
  const shortArgs = [CLI, "inspect", short.threadId, "--db", short.db];
  report({
    name: `inspect_thread_${allCheckpoints(short)}_checkpoints`,
    ...pairedNodeMs(shortArgs, 7),
    unit: "ms",
    maxRatio: 5,
    note: shortNote,
  });
  await postgresAgainstSqlite(short, shortArgs);
  let longest = short;
  if (FULL) {
    const thread = await loopThread(join(dir, "long"), 329);
    const name = `inspect_thread_${allCheckpoints(thread)}_checkpoints`;
    const args = [CLI, "inspect", thread.threadId, "--db", thread.db];
    const note = `${thread.checkpoints} root checkpoints; anchor: node -e ""`;
    const runs = [measureNode(args), measureNode(args), measureNode(args)];
    report({ name, ours: median(runs.map((r) => r.ms)), anchor: nodeStartMs(), unit: "ms", maxOurs: 2000, note });
    const nodeRss = measureNode(["-e", ""]).rssMb;
    report({
      name: `${name}_rss`,
      ours: Math.max(...runs.map((r) => r.rssMb)),
      anchor: nodeRss,
      unit: "MB",
      maxOurs: 300,
      note: 'peak RSS; anchor: node -e ""',
    });
    longest = thread;
  }
  const list = pairedNodeMs([CLI, "inspect", "--db", longest.db], 7);
  report({
    name: "inspect_list",
    ...list,
    unit: "ms",
    maxRatio: 3,
    note: `the store holds a ${allCheckpoints(longest)}-checkpoint thread; ratio: median of 7 pairs; anchor: node -e ""`,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
