/**
 * The checkpoint store against the stock SqliteSaver (@langchain/langgraph-checkpoint-sqlite),
 * side by side in one run, and the store's growth and the process's memory over a long loop:
 *
 * - get_tuple_long_thread: getTuple of a coder-review loop thread (bench/fixtures.ts loopThread;
 *   the 329 rounds with --full), ours against stock holding the same checkpoints (the
 *   thread's last root checkpoints copied through put/putWrites: stock's getTuple reads one row);
 * - get_tuple_5000_strings: getTuple of a list channel of 5,000 20-byte strings, built by the same
 *   sequence of puts in both;
 * - list_limit10_small_thread / get_tuple_small_thread: `list({limit: 10})` and `getTuple` of a
 *   10-checkpoint thread in a store that also holds a 1,000- and a 5,000-checkpoint thread, the
 *   same checkpoints and pending writes put into both savers; timed interleaved;
 * - write_5000_string_appends: a graph of N steps each appending one 20-byte string (5,000 with --full), rounds interleaved;
 * - store_bytes_100_turns: the checkpoint-bench workload (a 1 KB message per turn), 100 turns;
 * - store_growth_per_round / rss_growth_1000_rounds / rss_peak_1000_rounds: a loop of 1000 rounds
 *   (--full; 60 by default) in a child process, sampled at round ends: bytes stored per round
 *   late in the loop against early, and the child's RSS (for the growth, after a full garbage
 *   collection at round 10 and at the end; the peak is the process's, garbage included).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { isDeepStrictEqual } from "node:util";
import { HumanMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { uuid6, type BaseCheckpointSaver, type Checkpoint, type CheckpointTuple, type PendingWrite } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";
import { loopThread, putThread } from "./fixtures.js";
import { FULL, interleavedFigures, interleavedMs, median, report, type PairedFigures } from "./lib.js";

interface OpenSaver {
  saver: BaseCheckpointSaver;
  close(): void;
}

function openStock(path: string): OpenSaver {
  const db = new Database(path);
  return { saver: new SqliteSaver(db), close: () => db.close() };
}

function openOurs(path: string): OpenSaver {
  const saver = new SqliteCheckpointSaver(path);
  return { saver, close: () => saver.close() };
}

/** The database file with its WAL and shared-memory files (measured after closing). */
function databaseBytes(path: string): number {
  return [path, `${path}-wal`, `${path}-shm`].filter((file) => existsSync(file)).reduce((total, file) => total + statSync(file).size, 0);
}

/** Median wall time of an async call, in milliseconds, after `warmUp` unmeasured calls. */
async function medianAsync(runs: number, fn: () => Promise<unknown>, warmUp = 3): Promise<number> {
  for (let i = 0; i < warmUp; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

/** Copies a tuple into another saver: its checkpoint under the same parent, then its pending writes by task. */
async function copyTuple(target: BaseCheckpointSaver, tuple: CheckpointTuple): Promise<void> {
  const { thread_id, checkpoint_ns } = tuple.config.configurable ?? {};
  const parent = tuple.parentConfig ?? { configurable: { thread_id, checkpoint_ns } };
  const config = await target.put(
    parent,
    tuple.checkpoint,
    tuple.metadata ?? { source: "loop", step: -1, parents: {} },
    tuple.checkpoint.channel_versions,
  );
  const byTask = new Map<string, PendingWrite[]>();
  for (const [taskId, channel, value] of tuple.pendingWrites ?? []) {
    byTask.set(taskId, [...(byTask.get(taskId) ?? []), [channel, value]]);
  }
  for (const [taskId, writes] of byTask) await target.putWrites(config, writes, taskId);
}

async function getTupleLongThread(directory: string): Promise<void> {
  const rounds = FULL ? 329 : 20;
  const copied = 30;
  const thread = await loopThread(join(directory, "long"), rounds);
  const ours = openOurs(thread.db);
  const stock = openStock(join(directory, "long-stock.db"));
  try {
    const config = { configurable: { thread_id: thread.threadId, checkpoint_ns: "" } };
    const latest: CheckpointTuple[] = [];
    for await (const tuple of ours.saver.list(config, { limit: copied })) latest.push(tuple);
    for (const tuple of latest.reverse()) await copyTuple(stock.saver, tuple);
    const messages = (latest.at(-1)?.checkpoint.channel_values.messages as unknown[] | undefined)?.length ?? 0;
    const all = new Database(thread.db, { readonly: true });
    const checkpoints = (
      all.prepare("SELECT count(*) AS n FROM loopgraph_checkpoints WHERE thread_id = ?").get(thread.threadId) as { n: number }
    ).n;
    all.close();
    const runs = FULL ? 15 : 21;
    const stockMs = await medianAsync(runs, () => stock.saver.getTuple(config));
    const ourMs = await medianAsync(runs, () => ours.saver.getTuple(config));
    report({
      name: "get_tuple_long_thread",
      ours: ourMs,
      anchor: stockMs,
      unit: "ms",
      maxRatio: 1.0,
      note: `${rounds} rounds, ${checkpoints} checkpoints, ${messages} messages; stock holds the last ${copied} root checkpoints`,
    });
  } finally {
    ours.close();
    stock.close();
  }
}

/** The same sequence of checkpoints for both: `puts` versions of one list channel, each appending `perPut` 20-byte strings. */
async function putStringList(saver: BaseCheckpointSaver, puts: number, perPut: number): Promise<void> {
  let config = { configurable: { thread_id: "strings", checkpoint_ns: "" } } as { configurable: Record<string, unknown> };
  const items: string[] = [];
  for (let i = 0; i < puts; i++) {
    for (let j = 0; j < perPut; j++) items.push(twentyBytes(items.length));
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(i),
      ts: new Date().toISOString(),
      channel_values: { items: items.slice() },
      channel_versions: { items: i + 1 },
      versions_seen: {},
    };
    config = (await saver.put(config, checkpoint, { source: "loop", step: i, parents: {} }, { items: i + 1 })) as typeof config;
  }
}

function twentyBytes(n: number): string {
  return `item ${String(n).padStart(6, "0")} abcdefgh`;
}

async function getTuple5000Strings(directory: string): Promise<void> {
  const [puts, perPut] = FULL ? [5000, 1] : [500, 10];
  const savers = { stock: openStock(join(directory, "strings-stock.db")), ours: openOurs(join(directory, "strings-ours.db")) };
  try {
    await putStringList(savers.stock.saver, puts, perPut);
    await putStringList(savers.ours.saver, puts, perPut);
    const config = { configurable: { thread_id: "strings", checkpoint_ns: "" } };
    for (const { saver } of Object.values(savers)) {
      const tuple = await saver.getTuple(config);
      const items = tuple?.checkpoint.channel_values.items as string[] | undefined;
      if (items?.length !== 5000 || items[4999] !== twentyBytes(4999)) throw new Error("a saver read back the wrong list");
    }
    const stockMs = await medianAsync(31, () => savers.stock.saver.getTuple(config));
    const ourMs = await medianAsync(31, () => savers.ours.saver.getTuple(config));
    report({ name: "get_tuple_5000_strings", ours: ourMs, anchor: stockMs, unit: "ms", maxRatio: 1.0, note: `${puts} puts of ${perPut}` });
  } finally {
    savers.stock.close();
    savers.ours.close();
  }
}

/** `fn` called `times` times, one after the other, as one sample. */
function repeat(times: number, fn: () => Promise<unknown>): () => Promise<void> {
  return async () => {
    for (let i = 0; i < times; i++) await fn();
  };
}

/** Figures of samples of `calls` calls each, per call. */
function perCall(calls: number, figures: PairedFigures): PairedFigures {
  return { ...figures, ours: figures.ours / calls, anchor: figures.anchor / calls };
}

/** `list({limit: 10})` and `getTuple` of a 10-checkpoint thread among a 1,000- and a 5,000-checkpoint thread. */
async function smallThreadReads(directory: string): Promise<void> {
  const savers = { stock: openStock(join(directory, "small-stock.db")), ours: openOurs(join(directory, "small-ours.db")) };
  try {
    const both = [savers.stock.saver, savers.ours.saver];
    await putThread(both, "long-5000", 5000, { messageEvery: 50, messageBytes: 200 });
    await putThread(both, "long-1000", 1000, { messageEvery: 10, messageBytes: 200 });
    await putThread(both, "small", 10, { messageEvery: 1, messageBytes: 1024 });
    const config = { configurable: { thread_id: "small", checkpoint_ns: "" } };
    const listAll = async (saver: BaseCheckpointSaver): Promise<CheckpointTuple[]> => {
      const tuples: CheckpointTuple[] = [];
      for await (const tuple of saver.list(config, { limit: 10 })) tuples.push(tuple);
      return tuples;
    };
    if (!isDeepStrictEqual(await listAll(savers.stock.saver), await listAll(savers.ours.saver))) {
      throw new Error("the savers listed different tuples");
    }
    const rounds = 41;
    // Warm-up, unmeasured: both savers' first reads (statements prepared, caches filled, code compiled).
    for (let i = 0; i < 5; i++) {
      for (const { saver } of Object.values(savers)) await Promise.all([listAll(saver), saver.getTuple(config)]);
    }
    // Each sample is several calls: long enough for the timer, and a garbage collection falls on a share of a sample, not all of one.
    const [lists, gets] = [5, 40];
    const list = perCall(
      lists,
      await interleavedMs(
        rounds,
        repeat(lists, () => listAll(savers.ours.saver)),
        repeat(lists, () => listAll(savers.stock.saver)),
      ),
    );
    report({
      name: "list_limit10_small_thread",
      ...list,
      unit: "ms",
      maxRatio: 1.5,
      note: "10 of 10 checkpoints; the store also holds 1,000- and 5,000-checkpoint threads",
    });
    const get = perCall(
      gets,
      await interleavedMs(
        rounds,
        repeat(gets, () => savers.ours.saver.getTuple(config)),
        repeat(gets, () => savers.stock.saver.getTuple(config)),
      ),
    );
    report({
      name: "get_tuple_small_thread",
      ...get,
      unit: "ms",
      maxRatio: 1.5,
      note: "10 checkpoints; the store also holds 1,000- and 5,000-checkpoint threads",
    });
  } finally {
    savers.stock.close();
    savers.ours.close();
  }
}

const AppendState = Annotation.Root({
  items: Annotation<string[]>({ reducer: (left, right) => left.concat(right), default: () => [] }),
});

/** Wall time of one invoke of `steps` steps, each appending one 20-byte string. */
async function appendSteps(open: OpenSaver, steps: number): Promise<number> {
  const graph = new StateGraph(AppendState)
    .addNode("append", (state) => ({ items: [twentyBytes(state.items.length)] }))
    .addEdge(START, "append")
    .addConditionalEdges("append", (state) => (state.items.length < steps ? "append" : END))
    .compile({ checkpointer: open.saver });
  const started = performance.now();
  const result = await graph.invoke({ items: [] }, { configurable: { thread_id: "appends" }, recursionLimit: steps + 10 });
  const ms = performance.now() - started;
  if (result.items.length !== steps) throw new Error(`appended ${result.items.length} of ${steps}`);
  open.close();
  return ms;
}

async function writeStringAppends(directory: string): Promise<void> {
  const steps = FULL ? 5000 : 1000;
  // Warm-up on files of their own, then rounds interleaved, each on files of its own.
  await appendSteps(openStock(join(directory, "appends-warm-stock.db")), 100);
  await appendSteps(openOurs(join(directory, "appends-warm-ours.db")), 100);
  const rounds = { ours: 0, stock: 0 };
  const figures = await interleavedFigures(
    FULL ? 3 : 5,
    () => appendSteps(openOurs(join(directory, `appends-ours-${rounds.ours++}.db`)), steps),
    () => appendSteps(openStock(join(directory, `appends-stock-${rounds.stock++}.db`)), steps),
  );
  report({ name: "write_5000_string_appends", ...figures, unit: "ms", maxRatio: 1.0, note: `${steps} steps` });
}

function messageText(turn: number): string {
  const line = `turn ${turn}: the quick brown fox jumps over the lazy dog. `;
  return line.repeat(Math.ceil(1024 / line.length)).slice(0, 1024);
}

/** Store bytes of the checkpoint-bench workload: `turns` invokes, each adding a 1 KB message. */
async function chatTurns(open: OpenSaver, path: string, turns: number): Promise<number> {
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("a", () => ({}))
    .addEdge(START, "a")
    .addEdge("a", END)
    .compile({ checkpointer: open.saver });
  for (let turn = 0; turn < turns; turn++) {
    await graph.invoke({ messages: [new HumanMessage(messageText(turn))] }, { configurable: { thread_id: "bench" } });
  }
  open.close();
  return databaseBytes(path);
}

async function storeBytes100Turns(directory: string): Promise<void> {
  const stockPath = join(directory, "turns-stock.db");
  const ourPath = join(directory, "turns-ours.db");
  const stockBytes = await chatTurns(openStock(stockPath), stockPath, 100);
  const ourBytes = await chatTurns(openOurs(ourPath), ourPath, 100);
  report({ name: "store_bytes_100_turns", ours: ourBytes / 1e6, anchor: stockBytes / 1e6, unit: "MB", maxRatio: 0.02 });
}

/** The round the RSS growth is measured from. */
const GROWTH_FROM_ROUND = 10;

interface LoopSample {
  round: number;
  bytes: number;
  rssMb: number;
}

/** Child mode: runs the loop, prints one JSON line of samples (bytes at the given rounds, RSS at every round end). */
async function loopChild(directory: string, rounds: number, byteRounds: number[]): Promise<void> {
  const samples: LoopSample[] = [];
  let peakMb = 0;
  const db = join(directory, "bench.db");
  let reader: Database.Database | undefined;
  const storedBytes = (): number => {
    reader ??= new Database(db, { readonly: true });
    const tables = (
      reader.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'loopgraph_%'").all() as { name: string }[]
    ).map((row) => row.name);
    let total = 0;
    for (const table of tables) {
      const columns = (reader.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map(
        (column) => `coalesce(length(CAST(${column.name} AS BLOB)), 0)`,
      );
      total += (reader.prepare(`SELECT coalesce(sum(${columns.join(" + ")}), 0) AS n FROM ${table}`).get() as { n: number }).n;
    }
    return total;
  };
  await loopThread(directory, rounds, `loop-${rounds}`, {
    onEvent(event) {
      if (event.type !== "round_finished") return;
      // The growth row compares what stays held: at its two rounds the garbage is collected first
      // (between collections RSS swings by tens of MB with the garbage of the rounds just run).
      if (event.round === GROWTH_FROM_ROUND || event.round === rounds) globalThis.gc?.();
      const rssMb = process.memoryUsage().rss / 2 ** 20;
      peakMb = Math.max(peakMb, rssMb);
      samples.push({ round: event.round, bytes: byteRounds.includes(event.round) ? storedBytes() : -1, rssMb });
    },
  });
  reader?.close();
  console.log(JSON.stringify({ samples, peakMb }));
}

async function loopRows(directory: string): Promise<void> {
  const rounds = FULL ? 1000 : 60;
  const [early, late] = FULL
    ? [
        [100, 200],
        [900, 1000],
      ]
    : [
        [10, 20],
        [50, 60],
      ];
  const dir = join(directory, "loop");
  const script = fileURLToPath(import.meta.url);
  const byteRounds = [...early, ...late].join(",");
  const child = spawnSync(
    "/usr/bin/time",
    ["-f", "%M", process.execPath, "--expose-gc", script, "--loop-child", dir, String(rounds), byteRounds],
    {
      encoding: "utf8",
      maxBuffer: 1 << 28,
    },
  );
  if (child.status !== 0) throw new Error(`the ${rounds}-round loop failed: ${child.stderr.slice(-2000)}`);
  const peakKb = Number(child.stderr.trim().split("\n").at(-1));
  const { samples } = JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { samples: LoopSample[] };
  const at = (round: number): LoopSample => {
    const sample = samples.find((s) => s.round === round);
    if (!sample) throw new Error(`no sample at round ${round}`);
    return sample;
  };
  const perRound = ([from, to]: number[]): number => (at(to!).bytes - at(from!).bytes) / (to! - from!);
  const earlyKb = perRound(early) / 1024;
  const lateKb = perRound(late) / 1024;
  report({
    name: "store_growth_per_round",
    ours: lateKb,
    anchor: earlyKb,
    unit: "KB",
    maxRatio: 1.25,
    note: `KB per round, rounds ${late.join("–")} against ${early.join("–")}; flat within 25%`,
  });
  const startMb = at(GROWTH_FROM_ROUND).rssMb;
  const endMb = at(rounds).rssMb;
  report({
    name: "rss_growth_1000_rounds",
    ours: endMb - startMb,
    anchor: startMb,
    unit: "MB",
    maxOurs: 100,
    note: `${rounds} rounds; RSS growth from round ${GROWTH_FROM_ROUND} to the end, each after a full garbage collection`,
  });
  report({
    name: "rss_peak_1000_rounds",
    ours: peakKb / 1024,
    anchor: startMb,
    unit: "MB",
    maxOurs: 300,
    note: `${rounds} rounds; peak RSS of the process`,
  });
}

async function main(): Promise<void> {
  const childAt = process.argv.indexOf("--loop-child");
  if (childAt >= 0) {
    const [dir, rounds, byteRounds] = process.argv.slice(childAt + 1);
    await loopChild(dir!, Number(rounds), byteRounds!.split(",").map(Number));
    return;
  }
  const directory = mkdtempSync(join(tmpdir(), "store-bench-"));
  try {
    await getTuple5000Strings(directory);
    await writeStringAppends(directory);
    await storeBytes100Turns(directory);
    await getTupleLongThread(directory);
    await smallThreadReads(directory);
    await loopRows(directory);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

await main();
