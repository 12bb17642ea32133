/**
 * Stores the benchmarks measure: a coder-review loop thread of N rounds, run for real through the
 * library with the scripted model (each round: the Coder writes a file and runs a shell command,
 * the Review's two checks find a problem, the Judge continues; the last round passes and its Judge
 * terminates); and a long thread written straight through the store's real saver (writeLongThread).
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { messagesStateReducer } from "@langchain/langgraph";
import { uuid6, type BaseCheckpointSaver, type Checkpoint, type PendingWrite } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import pg from "pg";
import { withStore } from "../src/store/store.js";
import { packageRoot } from "../src/package.js";
import { runGraph } from "../src/index.js";
import type { EventSink } from "../src/index.js";
import { settingsOf } from "../src/config/environment-settings.js";
import { FIXTURES_ENV } from "./lib.js";

/**
 * The scripted model's file for `rounds` rounds, in JSON (which the script format reads as YAML
 * does, natively: the 1000-round script as a YAML document alone takes some 50 MB of the process
 * the store benchmark measures).
 */
export function loopScript(rounds: number): string {
  const responses: unknown[] = [];
  for (let round = 1; round <= rounds; round++) {
    const file = `r${round % 50}.txt`;
    const last = round === rounds;
    responses.push(
      { node: "coder", tool_calls: [{ name: "write_file", args: { path: file, contents: `round ${round}\n` } }] },
      { node: "coder", tool_calls: [{ name: "shell", args: { command: `cat ${file}` } }] },
      { node: "coder", content: `Round ${round}: wrote ${file} and checked it.` },
      {
        node: "review.specs_breakdown",
        content: last
          ? '{"rating": "normal", "comments": []}'
          : `{"rating": "critical", "comments": ["round ${round}: the file could say more"]}`,
      },
      { node: "review.task_log", content: '{"rating": "normal", "comments": []}' },
      {
        node: "judge",
        content: last
          ? `{"decision": "terminate", "reason": "all ${rounds} rounds done"}`
          : `{"decision": "continue", "nextTask": "write round ${round + 1}"}`,
      },
    );
  }
  return `${JSON.stringify({ responses })}\n`;
}

export interface LoopThread {
  db: string;
  threadId: string;
  workspace: string;
  /** Root checkpoints of the thread. */
  checkpoints: number;
}

/**
 * A coder-review loop of `rounds` rounds, run in `dir` (a fresh workspace and store), or a copy of
 * the one built already in this bench run (FIXTURES_ENV); `onEvent` sees the run's events, `db`
 * puts it in another store (both build it afresh).
 */
export async function loopThread(
  dir: string,
  rounds: number,
  threadId = `loop-${rounds}`,
  options: { onEvent?: EventSink; db?: string } = {},
): Promise<LoopThread> {
  const shared = process.env[FIXTURES_ENV];
  if (!shared || options.onEvent || options.db !== undefined) return buildLoopThread(dir, rounds, threadId, options);
  const built = join(shared, `${threadId}-${rounds}`);
  const record = join(built, "thread.json");
  if (!existsSync(record)) {
    const thread = await buildLoopThread(built, rounds, threadId, {});
    // The store is in WAL mode: the log folded into the file, the file alone is the whole store.
    const sqlite = new Database(thread.db);
    sqlite.pragma("wal_checkpoint(TRUNCATE)");
    sqlite.close();
    writeFileSync(record, JSON.stringify(thread));
  }
  const thread = JSON.parse(readFileSync(record, "utf8")) as LoopThread;
  mkdirSync(dir, { recursive: true });
  const db = join(dir, "bench.db");
  copyFileSync(thread.db, db);
  return { ...thread, db };
}

async function buildLoopThread(
  dir: string,
  rounds: number,
  threadId: string,
  options: { onEvent?: EventSink; db?: string },
): Promise<LoopThread> {
  const workspace = join(dir, "ws");
  mkdirSync(workspace, { recursive: true });
  const script = join(dir, `loop-${rounds}.script.yaml`);
  writeFileSync(script, loopScript(rounds));
  const db = options.db ?? join(dir, "bench.db");
  const outcome = await runGraph({
    graph: "coder-review",
    task: "write round 1",
    threadId,
    workspace,
    db,
    approval: "auto",
    model: `scripted:${script}`,
    maxRounds: rounds,
    settings: settingsOf({}),
    // The script's commands are known; without the sandbox the fixture is the same on every machine.
    noSandbox: true,
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  if (outcome.status !== "finished") throw new Error(`the ${rounds}-round setup run ended ${outcome.status}: ${outcome.error ?? ""}`);
  if (options.db !== undefined) return { db, threadId, workspace, checkpoints: await rootCheckpointsIn(options.db, threadId) };
  const sqlite = new Database(db, { readonly: true });
  try {
    const row = sqlite
      .prepare("SELECT COUNT(*) AS n FROM loopgraph_checkpoints WHERE thread_id = ? AND checkpoint_ns = ''")
      .get(threadId) as { n: number };
    return { db, threadId, workspace, checkpoints: row.n };
  } finally {
    sqlite.close();
  }
}

/** The root checkpoints of a thread in the store `db` names (a PostgreSQL URL). */
async function rootCheckpointsIn(db: string, threadId: string): Promise<number> {
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      "SELECT COUNT(*) AS n FROM loopgraph_checkpoints WHERE thread_id = $1 AND checkpoint_ns = ''",
      [threadId],
    );
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** The two threads the CLI rows compare: a 2-round loop and a long one (60 rounds; 329, about 5,000 checkpoints, with --full). */
export async function shortAndLongThreads(dir: string, full: boolean): Promise<[LoopThread, LoopThread]> {
  return [await loopThread(join(dir, "short"), 2), await loopThread(join(dir, "long"), full ? 329 : 60)];
}

const NODES = ["looper", "coder", "review", "judge"];

/**
 * Writes a long thread into the store `db` without a run, through its real saver: `checkpoints`
 * small root checkpoints in a chain (the input first), as a loop of `looper → coder → review →
 * judge` steps leaves them, each counting a visit (the Coder's its tokens too, every tenth a
 * message), and a finished thread record, drawn on the package's coder-review graph. Thousands
 * of checkpoints in a second or two, where real runs would take minutes.
 */
export async function writeLongThread(db: string, threadId: string, checkpoints: number): Promise<void> {
  await withStore({ db, env: {} }, "create", async (store) => {
    await store.threads.create({
      threadId,
      graphFile: join(packageRoot() ?? ".", "graphs/coder-review.yaml"),
      graphName: "coder-review",
      task: "a long loop",
      approval: "auto",
      workspace: packageRoot() ?? ".",
    });
    let config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    const visits: Record<string, number> = {};
    const messages: { type: string; content: string }[] = [];
    let usage = { coder: { inputTokens: 0, outputTokens: 0 } };
    const versions: Record<string, string> = { task: "1" };
    const start = Date.now() - checkpoints * 1000;
    for (let index = 0; index < checkpoints; index++) {
      const step = index - 1;
      const node = NODES[index % NODES.length]!;
      // A message every tenth step: a list that grows along the thread, cheap to write.
      const changed = [
        ...(index % 10 === 0 ? ["messages"] : []),
        ...(step >= 0 ? ["visits"] : []),
        ...(step >= 0 && node === "coder" ? ["usage"] : []),
      ];
      if (step >= 0) visits[node] = (visits[node] ?? 0) + 1;
      if (changed.includes("usage"))
        usage = { coder: { inputTokens: usage.coder.inputTokens + 100, outputTokens: usage.coder.outputTokens + 10 } };
      if (changed.includes("messages")) messages.push({ type: "ai", content: `step ${index}: ${node} did its part` });
      for (const channel of changed) versions[channel] = String(index + 1);
      const checkpoint: Checkpoint = {
        v: 4,
        id: uuid6(index),
        ts: new Date(start + index * 1000).toISOString(),
        channel_values: { task: "a long loop", messages: [...messages], visits: { ...visits }, usage },
        channel_versions: { ...versions },
        versions_seen: {},
      };
      const metadata = { source: step < 0 ? ("input" as const) : ("loop" as const), step, parents: {} };
      const written = Object.fromEntries(changed.map((channel) => [channel, versions[channel]!]));
      config = (await store.saver.put(config, checkpoint, metadata, index === 0 ? { ...versions } : written)) as typeof config;
    }
    await store.threads.markEnded(threadId, "finished");
  });
}

/** A thread's checkpoint `i`: a message list (a message added every `messageEvery` checkpoints), a counter and a small object. */
function threadCheckpoint(threadId: string, i: number, messages: readonly BaseMessage[]): Checkpoint {
  return {
    v: 4,
    id: uuid6(i),
    ts: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    channel_values: { messages: messages.slice(), round: i, task: { thread: threadId, step: i, note: `step ${i} of ${threadId}` } },
    channel_versions: { messages: messages.length + 1, round: i + 1, task: i + 1 },
    versions_seen: { agent: { round: i } },
  };
}

/**
 * Puts the same thread of `checkpoints` checkpoints into each saver through put and putWrites, as
 * LangGraph does a loop's: each step's task writes its pending writes (a new message of
 * `messageBytes` characters every `messageEvery` steps, and the counter) on the checkpoint it ran
 * from, then the next checkpoint takes them in (the messages reducer gives the message its id).
 */
export async function putThread(
  savers: readonly BaseCheckpointSaver[],
  threadId: string,
  checkpoints: number,
  { messageEvery, messageBytes }: { messageEvery: number; messageBytes: number },
): Promise<void> {
  const configs = savers.map(() => ({ configurable: { thread_id: threadId, checkpoint_ns: "" } }) as RunnableConfig);
  let messages: BaseMessage[] = [];
  let versions: Record<string, number> = {};
  for (let i = 0; i < checkpoints; i++) {
    if (i > 0) {
      const writes: PendingWrite[] = [["round", i]];
      if (i % messageEvery === 0) {
        const message = new AIMessage(
          `step ${i}: ${"the quick brown fox jumps over the lazy dog. ".repeat(Math.ceil(messageBytes / 44))}`.slice(0, messageBytes),
        );
        writes.unshift(["messages", [message]]);
        messages = messagesStateReducer(messages, [message]);
      }
      for (const [j, saver] of savers.entries()) await saver.putWrites(configs[j]!, writes, `task-${threadId}-${i}`);
    }
    const checkpoint = threadCheckpoint(threadId, i, messages);
    const newVersions = Object.fromEntries(
      Object.entries(checkpoint.channel_versions).filter(([channel, version]) => versions[channel] !== version),
    );
    versions = checkpoint.channel_versions as Record<string, number>;
    for (const [j, saver] of savers.entries()) {
      configs[j] = await saver.put(configs[j]!, checkpoint, { source: "loop", step: i, parents: {} }, newVersions);
    }
  }
}
