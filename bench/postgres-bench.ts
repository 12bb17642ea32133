/**
 * The PostgreSQL saver against the stock `@langchain/langgraph-checkpoint-postgres` PostgresSaver,
 * on a chat workload (every turn appends a 1 KB message of varied words through the messages
 * reducer), each in a database of its own on one throwaway server (bench/postgres-server.ts):
 *
 * - `postgres_saver_bytes`: the tables' size on disk (`pg_total_relation_size`, indexes and
 *   TOAST included) after the run;
 * - `postgres_saver_time`: the run's wall time.
 *
 * Both warm up first on a thread of their own. Without PostgreSQL the rows are left out, saying why.
 */
import { performance } from "node:perf_hooks";
import { HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import { PostgresCheckpointSaver } from "../src/store/postgres/saver.js";
import { FULL, report } from "./lib.js";
import { postgresUnavailable, startPostgres } from "./postgres-server.js";

const TURNS = FULL ? 400 : 200;
const WARM_UP_TURNS = 20;
const MESSAGE_BYTES = 1024;

const WORDS =
  "the a file test change error build check review coder judge round step value line module function return string number list state graph node edge tool shell output read write patch diff commit branch merge fix bug issue plan task done".split(
    " ",
  );

/**
 * About 1 KB of text made of words picked by a fixed pseudo-random sequence: unlike one line
 * repeated, it compresses about as much as prose (PostgreSQL compresses large values).
 */
function messageText(turn: number): string {
  let seed = turn * 2654435761 + 1;
  const words: string[] = [`turn ${turn}:`];
  let length = words[0]!.length;
  while (length < MESSAGE_BYTES) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const word = WORDS[seed % WORDS.length]!;
    words.push(word);
    length += word.length + 1;
  }
  return words.join(" ").slice(0, MESSAGE_BYTES);
}

async function chat(saver: BaseCheckpointSaver, threadId: string, turns: number): Promise<number> {
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("a", () => ({}))
    .addEdge(START, "a")
    .addEdge("a", END)
    .compile({ checkpointer: saver });
  const config = { configurable: { thread_id: threadId } };
  const started = performance.now();
  for (let turn = 0; turn < turns; turn++) await graph.invoke({ messages: [new HumanMessage(messageText(turn))] }, config);
  const milliseconds = performance.now() - started;
  const state = await graph.getState(config);
  if (state.values.messages.length !== turns) throw new Error(`the run on ${threadId} lost messages`);
  return milliseconds;
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
    const stockPool = open("stock");
    const stock = new PostgresSaver(stockPool);
    await stock.setup();
    const oursPool = open("ours");
    const ours = new PostgresCheckpointSaver(oursPool);
    await ours.setup();
    // Warm-ups on threads of their own, then their rows deleted: the measured sizes are the measured runs'.
    await chat(stock, "warm-up", WARM_UP_TURNS);
    await chat(ours, "warm-up", WARM_UP_TURNS);
    await stock.deleteThread("warm-up");
    await ours.deleteThread("warm-up");
    for (const pool of [stockPool, oursPool]) await pool.query("VACUUM FULL");
    const stockMs = await chat(stock, "bench", TURNS);
    const oursMs = await chat(ours, "bench", TURNS);
    const note = `${TURNS} turns of 1 KB messages; anchor: stock PostgresSaver`;
    report({
      name: "postgres_saver_bytes",
      ours: (await tablesBytes(oursPool)) / 1e6,
      anchor: (await tablesBytes(stockPool)) / 1e6,
      unit: "MB",
      maxRatio: 0.25,
      note,
    });
    report({ name: "postgres_saver_time", ours: oursMs, anchor: stockMs, unit: "ms", maxRatio: 1, note });
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
    server.stop();
  }
}
