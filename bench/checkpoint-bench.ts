/**
 * Compares SqliteCheckpointSaver with the stock SqliteSaver on one chat-like workload: every turn
 * appends a 1 KB message through the ordinary messages reducer. Prints database bytes and wall
 * time of both, then two rows: `chat_turns_bytes` and `chat_turns_time`, ours against stock.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";
import { report } from "./lib.js";

const TURNS = 400;
const WARM_UP_TURNS = 25;
const MESSAGE_BYTES = 1024;
/** The input checkpoint, the one after START's step, the one after node `a`. */
const CHECKPOINTS_PER_TURN = 3;

interface OpenSaver {
  saver: BaseCheckpointSaver;
  close(): void;
}

interface Contender {
  name: string;
  open(path: string): OpenSaver;
}

interface Measurement {
  bytes: number;
  milliseconds: number;
  checkpoints: number;
}

const stock: Contender = {
  name: "stock SqliteSaver",
  open(path) {
    const db = new Database(path);
    return { saver: new SqliteSaver(db), close: () => db.close() };
  },
};

const ours: Contender = {
  name: "SqliteCheckpointSaver",
  open(path) {
    const saver = new SqliteCheckpointSaver(path);
    return { saver, close: () => saver.close() };
  },
};

function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("a", () => ({}))
    .addEdge(START, "a")
    .addEdge("a", END)
    .compile({ checkpointer });
}

function messageText(turn: number): string {
  const line = `turn ${turn}: the quick brown fox jumps over the lazy dog. `;
  return line.repeat(Math.ceil(MESSAGE_BYTES / line.length)).slice(0, MESSAGE_BYTES);
}

/** The database file with its WAL and shared-memory files, whichever exist (measured after closing). */
function databaseBytes(path: string): number {
  return [path, `${path}-wal`, `${path}-shm`].filter((file) => existsSync(file)).reduce((total, file) => total + statSync(file).size, 0);
}

async function run(contender: Contender, path: string, turns: number): Promise<Measurement> {
  const { saver, close } = contender.open(path);
  let checkpoints = 0;
  const put = saver.put.bind(saver);
  saver.put = (...args) => {
    checkpoints += 1;
    return put(...args);
  };
  const graph = buildGraph(saver);
  const config = { configurable: { thread_id: "bench" } };
  const started = performance.now();
  for (let turn = 0; turn < turns; turn += 1) {
    await graph.invoke({ messages: [new HumanMessage(messageText(turn))] }, config);
  }
  const milliseconds = performance.now() - started;
  const state = await graph.getState(config);
  if (state.values.messages.length !== turns) throw new Error(`${contender.name} lost messages`);
  close();
  return { bytes: databaseBytes(path), milliseconds, checkpoints };
}

function summaryLine(name: string, measurement: Measurement): string {
  const megabytes = (measurement.bytes / 1e6).toFixed(2);
  const seconds = (measurement.milliseconds / 1000).toFixed(2);
  return `${name.padEnd(22)} ${megabytes.padStart(8)} MB ${seconds.padStart(7)} s  ${measurement.checkpoints} checkpoints`;
}

async function measure(contender: Contender, directory: string): Promise<Measurement> {
  const measurement = await run(contender, join(directory, `measured-${contender.name}.db`), TURNS);
  const expected = TURNS * CHECKPOINTS_PER_TURN;
  if (measurement.checkpoints !== expected) {
    throw new Error(`${contender.name} wrote ${measurement.checkpoints} checkpoints, expected ${expected}`);
  }
  console.log(summaryLine(contender.name, measurement));
  return measurement;
}

async function main(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), "checkpoint-bench-"));
  try {
    // Both warm up (JIT, module loading) on files of their own; then stock runs first, ours second.
    for (const contender of [stock, ours]) {
      await run(contender, join(directory, `warm-up-${contender.name}.db`), WARM_UP_TURNS);
    }
    const stockResult = await measure(stock, directory);
    const ourResult = await measure(ours, directory);
    const note = `${TURNS} chat turns of a ${MESSAGE_BYTES}-byte message; anchor: the stock SqliteSaver`;
    report({ name: "chat_turns_bytes", ours: ourResult.bytes / 1e6, anchor: stockResult.bytes / 1e6, unit: "MB", maxRatio: 0.05, note });
    report({ name: "chat_turns_time", ours: ourResult.milliseconds, anchor: stockResult.milliseconds, unit: "ms", maxRatio: 1, note });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

await main();
