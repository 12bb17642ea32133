/**
 * `loopgraph inspect <thread> --all` (its whole compact history) and `loopgraph inspect` (the
 * thread list) from another process, against a bare `node -e ""` start measured in the same run,
 * on a loop thread of about 500 checkpoints (33 rounds, subgraph checkpoints counted as the issue
 * counts them) and, with --full, on the 329-round thread (about 5,000). Targets: the ~500 thread
 * ≤ 5× node; the long one ≤ 2000 ms and ≤ 300 MB peak RSS (two rows); the list ≤ 3× node with the
 * longest thread in the store; `inspect <thread>` (its newest page) of the longest thread ≤ 5×
 * node. With PostgreSQL, the ~500 thread's inspect there ≤ 1.5× SQLite's.
 *
 * The web inspector's thread page, from a server in this process: the first answer of a thread of
 * 5,000 root checkpoints (written through the saver, no run) ≤ 1000 ms and ≤ 100 KB; every page of
 * a loop thread's timeline (the first answer, then older steps page by page) ≤ 1× `inspect --all
 * --json` of it (another process).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { startUiServer, type UiServer } from "../src/ui/server.js";
import { loopThread, writeLongThread, type LoopThread } from "./fixtures.js";
import {
  CLI,
  FULL,
  interleavedMs,
  measureNode,
  median,
  medianNodeMs,
  node,
  nodeAsync,
  nodeStartMs,
  pairedFigures,
  pairedNodeMs,
  report,
  ROOT,
} from "./lib.js";
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
    // A database as users have it, its statistics gathered: the planner picks other plans once it has them.
    const analyzed = server.psql("ANALYZE", { database: "inspect_bench" });
    if (analyzed.code !== 0) throw new Error(`ANALYZE failed: ${analyzed.stderr}`);
    const postgresArgs = [CLI, "inspect", onPostgres.threadId, "--all", "--db", onPostgres.db];
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

/** The web inspector's server on the store `db`, in this process. */
function uiServer(db: string): Promise<UiServer> {
  return startUiServer({ db, env: {}, assetsDir: join(ROOT, "dist/ui"), cli: { node: process.execPath, script: CLI } });
}

/** A GET of the server's API: the body's bytes. */
async function ask(server: UiServer, path: string): Promise<Buffer> {
  const answer = await fetch(new URL(path, server.url), { headers: { "x-loopgraph-token": server.token } });
  if (!answer.ok) throw new Error(`GET ${path}: ${answer.status} ${await answer.text()}`);
  return Buffer.from(await answer.arrayBuffer());
}

/** `ui_thread_first_page_5000`: the first answer of a 5,000-checkpoint thread's page, its time against a node start and its size. */
async function firstPage(): Promise<void> {
  const db = join(dir, "ui-long.db");
  await writeLongThread(db, "long", 5000);
  const server = await uiServer(db);
  try {
    let bytes = 0;
    const figures = await interleavedMs(
      7,
      async () => void (bytes = (await ask(server, "/api/threads/long")).length),
      () => nodeAsync(["-e", ""]),
    );
    const note = "5,000 root checkpoints written through the saver; from a server in this process";
    report({ name: "ui_thread_first_page_5000", ...figures, unit: "ms", maxOurs: 1000, note: `${note}; anchor: node -e ""` });
    const whole = Buffer.byteLength(node([CLI, "inspect", "long", "--all", "--json", "--db", db]));
    report({
      name: "ui_thread_first_page_5000_bytes",
      ours: bytes,
      anchor: whole,
      unit: "B",
      maxOurs: 100_000,
      note: `${note}; anchor: inspect --all --json`,
    });
  } finally {
    await server.close();
  }
}

/** `ui_thread_all_pages_<n>`: the thread's whole timeline from the server, page by page, against `inspect --all --json` of it. */
async function allPages(thread: LoopThread): Promise<void> {
  const server = await uiServer(thread.db);
  try {
    const base = `/api/threads/${encodeURIComponent(thread.threadId)}`;
    const everyPage = async () => {
      let { from } = (JSON.parse((await ask(server, base)).toString("utf8")) as { history: { range: { from: number } } }).history.range;
      while (from > 0)
        ({ from } = (
          JSON.parse((await ask(server, `${base}/steps?before=${from}`)).toString("utf8")) as { range: { from: number } }
        ).range);
    };
    const whole = [CLI, "inspect", thread.threadId, "--all", "--json", "--db", thread.db];
    // The anchor runs beside the server, which keeps answering (a blocking spawn would let its idle connections time out).
    const figures = await interleavedMs(7, everyPage, () => nodeAsync(whole));
    report({
      name: `ui_thread_all_pages_${allCheckpoints(thread)}`,
      ...figures,
      unit: "ms",
      maxRatio: 1,
      note: `${thread.checkpoints} root checkpoints; from a server in this process; ratio: median of 7 interleaved pairs; anchor: inspect --all --json`,
    });
  } finally {
    await server.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), "loopgraph-inspect-bench-"));
try {
  // Each thread is measured as soon as it is built (the long one's build, minutes of writing, would
  // otherwise run just before the short one's timings), against a node start measured beside it.
  const short = await loopThread(join(dir, "short"), 33);
  const shortNote = `${short.checkpoints} root checkpoints; ratio: median of 7 pairs; anchor: node -e ""`;
  const shortArgs = [CLI, "inspect", short.threadId, "--all", "--db", short.db];
  report({
    name: `inspect_thread_${allCheckpoints(short)}_checkpoints`,
    ...(await pairedNodeMs(shortArgs, 7)),
    unit: "ms",
    maxRatio: 5,
    note: shortNote,
  });
  await postgresAgainstSqlite(short, shortArgs);
  await allPages(short);
  await firstPage();
  let longest = short;
  if (FULL) {
    const thread = await loopThread(join(dir, "long"), 329);
    const name = `inspect_thread_${allCheckpoints(thread)}_checkpoints`;
    const args = [CLI, "inspect", thread.threadId, "--all", "--db", thread.db];
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
    await allPages(thread);
    longest = thread;
  }
  report({
    name: `inspect_last_page_${allCheckpoints(longest)}`,
    ...(await pairedNodeMs([CLI, "inspect", longest.threadId, "--db", longest.db], 7)),
    unit: "ms",
    maxRatio: 5,
    note: `inspect <thread>: its newest 50 steps of ${longest.checkpoints} root checkpoints; ratio: median of 7 pairs; anchor: node -e ""`,
  });
  const list = await pairedNodeMs([CLI, "inspect", "--db", longest.db], 7);
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
