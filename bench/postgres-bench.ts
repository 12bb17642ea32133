/**
 * The PostgreSQL saver against the stock `@langchain/langgraph-checkpoint-postgres` PostgresSaver,
 * each in a database of its own on one throwaway server (bench/postgres-server.ts), sizes being
 * the tables' on disk (`pg_total_relation_size`, indexes and TOAST included) after the run:
 *
 * - `postgres_saver_bytes`, `postgres_saver_time`: a chat (every turn appends a 1 KB message of
 *   varied words through the messages reducer), its size, and its wall time in interleaved rounds;
 * - `postgres_saver_bytes_50_channels`: a state of 50 channels, each turn's input setting one and
 *   its node five more (200 B of text each);
 * - `postgres_saver_bytes_many_threads`: many short chats (3 turns of a 1 KB message each).
 *
 * Both warm up first on a thread of their own. Without PostgreSQL the rows are left out, saying why.
 */
import { performance } from "node:perf_hooks";
import { HumanMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import { PostgresCheckpointSaver } from "../src/store/postgres/saver.js";
import { FULL, interleavedMs, report } from "./lib.js";
import { postgresUnavailable, startPostgres } from "./postgres-server.js";

const TURNS = FULL ? 400 : 200;
/** The chat is timed in this many rounds of its turns, interleaved (see interleavedMs). */
const TIME_ROUNDS = 8;
const WARM_UP_TURNS = 20;
const MESSAGE_BYTES = 1024;
const CHANNELS = 50;
const WIDE_TURNS = FULL ? 200 : 100;
/** Channels a turn's node sets, and the size of each value. */
const WIDE_WRITES = 5;
const WIDE_VALUE_BYTES = 200;
const THREADS = FULL ? 400 : 150;
const TURNS_PER_THREAD = 3;

const WORDS =
  "the a file test change error build check review coder judge round step value line module function return string number list state graph node edge tool shell output read write patch diff commit branch merge fix bug issue plan task done".split(
    " ",
  );

/**
 * About 1 KB of text made of words picked by a fixed pseudo-random sequence: unlike one line
 * repeated, it compresses about as much as prose (PostgreSQL compresses large values).
 */
function messageText(turn: number, bytes = MESSAGE_BYTES): string {
  let seed = turn * 2654435761 + 1;
  const words: string[] = [`turn ${turn}:`];
  let length = words[0]!.length;
  while (length < bytes) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const word = WORDS[seed % WORDS.length]!;
    words.push(word);
    length += word.length + 1;
  }
  return words.join(" ").slice(0, bytes);
}

/** `turns` chat turns on the thread, after its first `first`; the wall time in ms. */
async function chat(saver: BaseCheckpointSaver, threadId: string, turns: number, first = 0): Promise<number> {
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("a", () => ({}))
    .addEdge(START, "a")
    .addEdge("a", END)
    .compile({ checkpointer: saver });
  const config = { configurable: { thread_id: threadId } };
  const started = performance.now();
  for (let turn = first; turn < first + turns; turn++) await graph.invoke({ messages: [new HumanMessage(messageText(turn))] }, config);
  const milliseconds = performance.now() - started;
  const state = await graph.getState(config);
  if (state.values.messages.length !== first + turns) throw new Error(`the run on ${threadId} lost messages`);
  return milliseconds;
}

const WideState = Annotation.Root(Object.fromEntries(Array.from({ length: CHANNELS }, (_, i) => [`c${i}`, Annotation<string | number>()])));

/** `turns` turns of the 50-channel state: the input sets `c0` to the turn, the node five of the others. */
async function wide(saver: BaseCheckpointSaver, threadId: string, turns: number): Promise<void> {
  const graph = new StateGraph(WideState)
    .addNode("a", (state: Record<string, string | number>) => {
      const turn = Number(state.c0);
      const update: Record<string, string> = {};
      for (let k = 0; k < WIDE_WRITES; k++) {
        const n = turn * WIDE_WRITES + k;
        update[`c${1 + (n % (CHANNELS - 1))}`] = messageText(n, WIDE_VALUE_BYTES);
      }
      return update;
    })
    .addEdge(START, "a")
    .addEdge("a", END)
    .compile({ checkpointer: saver });
  const config = { configurable: { thread_id: threadId } };
  for (let turn = 0; turn < turns; turn++) await graph.invoke({ c0: turn }, config);
  const state = await graph.getState(config);
  if (state.values.c0 !== turns - 1) throw new Error(`the run on ${threadId} lost turns`);
}

/** `THREADS` short chats, on thread ids shaped as loopgraph's (graph, time, random). */
async function manyThreads(saver: BaseCheckpointSaver, prefix: string): Promise<void> {
  for (let i = 0; i < THREADS; i++)
    await chat(saver, `${prefix}-${(1_800_000_000_000 + i).toString(36)}-${(i * 7919).toString(16).padStart(6, "0")}`, TURNS_PER_THREAD);
}

async function tablesBytes(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ bytes: string }>(
    "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) AS bytes FROM pg_catalog.pg_statio_user_tables",
  );
  return Number(rows[0]!.bytes);
}

const unavailable = postgresUnavailable();
if (unavailable) {
  console.log(`postgres-bench: left out: ${unavailable}`);
} else {
  const server = await startPostgres();
  const pools: pg.Pool[] = [];
  try {
    const open = (name: string): pg.Pool => {
      const pool = new pg.Pool({ connectionString: server.createDatabase(name), max: 4 });
      pools.push(pool);
      return pool;
    };
    const pair = async (shape: string) => {
      const stockPool = open(`stock_${shape}`);
      const stock = new PostgresSaver(stockPool);
      await stock.setup();
      const oursPool = open(`ours_${shape}`);
      const ours = new PostgresCheckpointSaver(oursPool);
      await ours.setup();
      return { stock, stockPool, ours, oursPool };
    };
    const { stock, stockPool, ours, oursPool } = await pair("chat");
    // Warm-ups on threads of their own, then their rows deleted: the measured sizes are the measured runs'.
    await chat(stock, "warm-up", WARM_UP_TURNS);
    await chat(ours, "warm-up", WARM_UP_TURNS);
    await stock.deleteThread("warm-up");
    await ours.deleteThread("warm-up");
    for (const pool of [stockPool, oursPool]) await pool.query("VACUUM FULL");
    // The chat in rounds, each saver's thread growing alike, the side that goes first alternating.
    const perRound = TURNS / TIME_ROUNDS;
    const nextRound = (saver: BaseCheckpointSaver) => {
      let first = 0;
      return async () => {
        first += perRound;
        await chat(saver, "bench", perRound, first - perRound);
      };
    };
    const time = await interleavedMs(TIME_ROUNDS, nextRound(ours), nextRound(stock));
    const note = `${TURNS} turns of 1 KB messages; anchor: stock PostgresSaver`;
    report({
      name: "postgres_saver_bytes",
      ours: (await tablesBytes(oursPool)) / 1e6,
      anchor: (await tablesBytes(stockPool)) / 1e6,
      unit: "MB",
      maxRatio: 0.25,
      note,
    });
    report({
      name: "postgres_saver_time",
      ...time,
      unit: "ms",
      maxRatio: 1,
      note: `${TIME_ROUNDS} interleaved rounds of ${perRound} turns, the median round; ${note}`,
    });

    const shapes = [
      {
        name: "postgres_saver_bytes_50_channels",
        run: (saver: BaseCheckpointSaver) => wide(saver, "bench-wide", WIDE_TURNS),
        note: `${WIDE_TURNS} turns of a ${CHANNELS}-channel state, ${WIDE_WRITES} values of ${WIDE_VALUE_BYTES} B a turn; anchor: stock PostgresSaver`,
      },
      {
        name: "postgres_saver_bytes_many_threads",
        run: (saver: BaseCheckpointSaver) => manyThreads(saver, "chat"),
        note: `${THREADS} threads of ${TURNS_PER_THREAD} turns of 1 KB messages; anchor: stock PostgresSaver`,
      },
    ];
    for (const shape of shapes) {
      const savers = await pair(shape.name.replace("postgres_saver_bytes_", ""));
      await shape.run(savers.stock);
      await shape.run(savers.ours);
      report({
        name: shape.name,
        ours: (await tablesBytes(savers.oursPool)) / 1e6,
        anchor: (await tablesBytes(savers.stockPool)) / 1e6,
        unit: "MB",
        maxRatio: 0.5,
        note: shape.note,
      });
    }
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
    server.stop();
  }
}
