/**
 * How long `loopgraph resume` takes until its first node starts, against a bare `node -e ""` run
 * just before each trial (pairs, see `pairedNodeMs`): on
 * a 2-round loop thread and on a long one (60 rounds; 329 with --full), each ended and given a
 * new task (`send T "add: …"`), so resume starts the loop again. Target: ≤ 5× node, flat in the
 * thread's length beyond decoding its state. Each trial resumes a fresh copy of the store.
 *
 * The row's figure is the time beyond decoding the state: decoding grows with the thread (its
 * messages are LangChain objects, revived one by one) and the target leaves it out. It is
 * measured in the same run, in a fresh process as resume does it: the saver's first `getTuple`
 * of the thread's latest checkpoint. The note gives both figures.
 */
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { CLI, FULL, median, node, nodeStartMs, pairedFigures, report, ROOT } from "./lib.js";
import { shortAndLongThreads, type LoopThread } from "./fixtures.js";

const TRIALS = 5;

/** Milliseconds from spawning `resume` to its first `node_started` event. */
function untilFirstNode(db: string, threadId: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    // Resumed with an OpenAI-compatible model, as users run: the scripted model would parse the whole
    // script of the run (it grows with the thread). No model is called before the first node starts
    // (the looper); the address is a closed port of this machine.
    const env = { ...process.env, OPENAI_API_KEY: "sk-bench", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" };
    const args = [CLI, "resume", threadId, "--db", db, "--json", "--model", "openai:bench-model"];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (out.includes('"type":"node_started"')) {
        const ms = performance.now() - started;
        child.kill("SIGKILL");
        resolve(ms);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
    child.on("close", () => reject(new Error(`resume ended before a node started: ${err}${out.slice(-500)}`)));
  });
}

/** `TRIALS` resumes of fresh copies of the thread's store, each paired with a bare node start run just before it (see `pairedNodeMs`). */
async function measure(thread: LoopThread, dir: string): Promise<{ total: number; anchor: number }[]> {
  node([CLI, "send", thread.threadId, "add: one more round", "--db", thread.db]);
  // The store is in WAL mode: fold the log into the file, so a copy of the file is the whole store.
  const sqlite = new Database(thread.db);
  sqlite.pragma("wal_checkpoint(TRUNCATE)");
  sqlite.close();
  const pairs: { total: number; anchor: number }[] = [];
  for (let i = 0; i < TRIALS; i++) {
    // A folder per trial: a killed resume leaves its -wal and -shm files beside the store.
    const trial = mkdtempSync(join(dir, "trial-"));
    const db = join(trial, "store.db");
    copyFileSync(thread.db, db);
    const anchor = nodeStartMs(1);
    pairs.push({ total: await untilFirstNode(db, thread.threadId), anchor });
    rmSync(trial, { recursive: true, force: true });
  }
  return pairs;
}

/** Milliseconds of a fresh process's first `getTuple` of the thread's latest checkpoint (median of TRIALS). */
function stateDecodeMs(thread: LoopThread): number {
  const saverModule = join(ROOT, "dist/src/store/sqlite/saver.js");
  const script = `const { SqliteCheckpointSaver } = await import(${JSON.stringify(saverModule)});
const saver = new SqliteCheckpointSaver(${JSON.stringify(thread.db)});
const started = performance.now();
const tuple = await saver.getTuple({ configurable: { thread_id: ${JSON.stringify(thread.threadId)}, checkpoint_ns: "" } });
const ms = performance.now() - started;
if (!tuple) throw new Error("no checkpoint");
console.log(ms);`;
  const times: number[] = [];
  for (let i = 0; i < TRIALS; i++) times.push(Number(node(["--input-type=module", "-e", script]).trim()));
  return median(times);
}

const dir = mkdtempSync(join(tmpdir(), "loopgraph-resume-bench-"));
try {
  const threads = await shortAndLongThreads(dir, FULL);
  for (const thread of threads) {
    const pairs = await measure(thread, dir);
    const decode = stateDecodeMs(thread);
    const figures = pairedFigures(pairs.map(({ total, anchor }) => ({ ours: total - decode, anchor })));
    report({
      name: `resume_first_node_${thread.checkpoints}_checkpoints`,
      ...figures,
      unit: "ms",
      maxRatio: 5,
      note: `beyond decoding the state: ${(figures.ours + decode).toFixed(0)} ms in all, of which ${decode.toFixed(0)} ms decoding it (a fresh process's getTuple); ratio: median of ${TRIALS} pairs; anchor: node -e ""`,
    });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
