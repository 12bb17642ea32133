import { createHash, randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { JsonPlusSerializer, uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import type { KnownList } from "../src/checkpoint/history-reader.js";
import { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";
import { packChunk, unpackChunk } from "../src/store/sqlite/checkpoint-store.js";
import { dropRanges, sharedSeqPrefix } from "../src/checkpoint/list-history.js";
import { STORE_VERSION } from "../src/store/sqlite/schema.js";
import { openStore } from "../src/store/store.js";
import { sharedTempDir } from "./helpers/workspace.js";

const directory = sharedTempDir("loopgraph-saver-");
let files = 0;

/** A fresh database path; its parent directory does not exist yet, so the saver must create it. */
function newDatabasePath(): string {
  files += 1;
  return join(directory.path, `case-${files}`, "checkpoints.db");
}

/** Every turn: the user's message in, one reply out. Three checkpoints per turn. */
function buildChat(saver: SqliteCheckpointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("reply", (state) => {
      const last = state.messages[state.messages.length - 1];
      return { messages: [new AIMessage(`reply to: ${String(last?.content).slice(0, 40)}`)] };
    })
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer: saver });
}

type Chat = ReturnType<typeof buildChat>;

function userMessage(turn: number): HumanMessage {
  return new HumanMessage(`turn ${turn}: ${"lorem ipsum dolor sit amet ".repeat(10)}`);
}

async function chat(graph: Chat, threadId: string, turns: number, firstTurn = 0): Promise<BaseMessage[]> {
  let messages: BaseMessage[] = [];
  for (let turn = firstTurn; turn < firstTurn + turns; turn += 1) {
    ({ messages } = await graph.invoke({ messages: [userMessage(turn)] }, { configurable: { thread_id: threadId } }));
  }
  return messages;
}

/** Compares messages by their full serialized form (class, id, content and every other field). */
function serialized(messages: readonly BaseMessage[]): string[] {
  return messages.map((message) => JSON.stringify(message));
}

async function storedMessages(path: string, threadId: string, checkpointId?: string): Promise<BaseMessage[]> {
  const saver = new SqliteCheckpointSaver(path);
  try {
    const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_id: checkpointId } });
    return tuple?.checkpoint.channel_values.messages as BaseMessage[];
  } finally {
    saver.close();
  }
}

interface PutConfig {
  configurable: { thread_id: string; checkpoint_ns: string; checkpoint_id?: string };
}

/** Puts checkpoint `uuid6(step)` after `parent`: version step + 1 of the list channel `items`, holding `items`. */
async function putItems(saver: SqliteCheckpointSaver, parent: PutConfig, step: number, items: readonly unknown[]): Promise<PutConfig> {
  const checkpoint = {
    v: 4,
    id: uuid6(step),
    ts: new Date().toISOString(),
    channel_values: { items: items.slice() },
    channel_versions: { items: step + 1 },
    versions_seen: {},
  };
  return (await saver.put(parent, checkpoint, { source: "loop", step, parents: {} }, { items: step + 1 })) as PutConfig;
}

interface MessageStorage {
  /** Version rows of the messages channel, by kind. */
  rows: Record<string, number>;
  /** Bytes of those rows. */
  bytes: number;
  /** Bytes, items and chunks of the channel's item log. */
  logBytes: number;
  logItems: number;
  chunks: number;
}

function messageStorage(path: string, threadId: string): MessageStorage {
  const db = new Database(path, { readonly: true });
  try {
    const groups = db
      .prepare<[string], { kind: string; count: number; bytes: number }>(
        `SELECT kind, count(*) AS count, coalesce(sum(length(data)), 0) AS bytes FROM loopgraph_checkpoint_blobs
         WHERE thread_id = ? AND channel = 'messages' GROUP BY kind`,
      )
      .all(threadId);
    const hasLog = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'loopgraph_checkpoint_items'").get() !== undefined;
    const log = !hasLog
      ? { bytes: 0, items: 0, chunks: 0 }
      : db
          .prepare<[string], { bytes: number; items: number; chunks: number }>(
            `SELECT coalesce(sum(length(data)), 0) AS bytes, coalesce(max(end_seq), 0) AS items, count(*) AS chunks
         FROM loopgraph_checkpoint_items WHERE thread_id = ? AND checkpoint_ns = '' AND channel = 'messages'`,
          )
          .get(threadId)!;
    return {
      rows: Object.fromEntries(groups.map((group) => [group.kind, group.count])),
      bytes: groups.reduce((total, group) => total + group.bytes, 0),
      logBytes: log.bytes,
      logItems: log.items,
      chunks: log.chunks,
    };
  } finally {
    db.close();
  }
}

describe("SqliteCheckpointSaver with a messages graph", () => {
  it("reads back the state the graph returned after the file is reopened", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const returned = await chat(buildChat(saver), "reopen", 60);
    saver.close();

    expect(returned).toHaveLength(120);
    expect(serialized(await storedMessages(path, "reopen"))).toEqual(serialized(returned));

    const reopened = new SqliteCheckpointSaver(path);
    const state = await buildChat(reopened).getState({ configurable: { thread_id: "reopen" } });
    reopened.close();
    expect(serialized(state.values.messages)).toEqual(serialized(returned));
  });

  it("stores each message once, in the channel's item log, growing linearly with the number of turns", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const graph = buildChat(saver);
    // One thread, measured after 100 turns and again after 100 more.
    const shortRun = await chat(graph, "turns", 100);
    const short = messageStorage(path, "turns");
    const longRun = await chat(graph, "turns", 100, 100);
    saver.close();

    const long = messageStorage(path, "turns");
    // Every version is a row of log ranges (one range: the history only grows), 2 per turn.
    expect(long.rows).toEqual({ items: 400 });
    expect(long.bytes).toBeLessThan(400 * 16);
    // Each message once: the log holds 400 items, their bytes about those of the final list.
    expect(long.logItems).toBe(400);
    const finalListBytes = serialized(longRun).join("").length;
    expect(long.logBytes).toBeLessThan(1.2 * finalListBytes);
    expect(long.logBytes + long.bytes).toBeLessThan(2.5 * (short.logBytes + short.bytes));
    // Chunks are merged as the log grows: a read fetches a few rows, not one per turn.
    expect(long.chunks).toBeLessThanOrEqual(10);
    expect(shortRun).toHaveLength(200);
  }, 60_000);

  it("keeps referring to the logged items after another saver instance resumes the thread", async () => {
    const path = newDatabasePath();
    const first = new SqliteCheckpointSaver(path);
    await chat(buildChat(first), "resumed", 10);
    first.close();

    const second = new SqliteCheckpointSaver(path);
    const returned = await chat(buildChat(second), "resumed", 10, 10);
    second.close();

    // 40 messages, each logged once: the second saver diffed against what the first wrote.
    expect(messageStorage(path, "resumed").logItems).toBe(40);
    expect(serialized(await storedMessages(path, "resumed"))).toEqual(serialized(returned));
  });

  it("reads back exactly after messages are replaced by id or removed", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const graph = buildChat(saver);
    const config = { configurable: { thread_id: "edits" } };
    const history = await chat(graph, "edits", 40);

    const replaced = history[50]!;
    await graph.updateState(config, { messages: [new HumanMessage({ id: replaced.id, content: "edited in place" })] });
    await graph.updateState(config, { messages: [new RemoveMessage({ id: history[20]!.id! })] });
    await graph.updateState(config, { messages: [new RemoveMessage({ id: history[79]!.id! })] });
    const returned = await chat(graph, "edits", 5, 40);
    saver.close();

    const contents = returned.map((message) => message.content);
    expect(returned).toHaveLength(80 - 2 + 10);
    expect(contents).toContain("edited in place");
    expect(returned.map((message) => message.id)).not.toContain(history[20]!.id);
    expect(returned.map((message) => message.id)).not.toContain(history[79]!.id);
    expect(serialized(await storedMessages(path, "edits"))).toEqual(serialized(returned));
  });

  it("returns each older checkpoint's own list when travelling back through the history", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const graph = buildChat(saver);
    const config = { configurable: { thread_id: "history" } };
    const returned = await chat(graph, "history", 40);

    const snapshots = [];
    for await (const snapshot of graph.getStateHistory(config)) snapshots.push(snapshot);
    expect(snapshots).toHaveLength(40 * 3);
    for (const snapshot of snapshots) {
      // Turn t writes checkpoints at steps 3t-1 (input), 3t (user message added), 3t+1 (reply added).
      const step = snapshot.metadata?.step ?? Number.NaN;
      const turn = Math.floor((step + 1) / 3);
      const length = 2 * turn + ((step + 1) % 3);
      expect(serialized(snapshot.values.messages ?? [])).toEqual(serialized(returned.slice(0, length)));
    }

    const old = snapshots.find((snapshot) => snapshot.metadata?.step === 3 * 17 + 1)!;
    const oldId = old.config.configurable?.checkpoint_id as string;
    expect(serialized(await storedMessages(path, "history", oldId))).toEqual(serialized(returned.slice(0, 36)));

    // Continuing from the old checkpoint forks the thread; both branches keep their own lists.
    const forked = await graph.invoke({ messages: [userMessage(99)] }, old.config);
    const newestId = snapshots[0]!.config.configurable?.checkpoint_id as string;
    saver.close();
    expect(forked.messages).toHaveLength(38);
    expect(serialized(forked.messages.slice(0, 36))).toEqual(serialized(returned.slice(0, 36)));
    expect(serialized(await storedMessages(path, "history"))).toEqual(serialized(forked.messages));
    expect(serialized(await storedMessages(path, "history", newestId))).toEqual(serialized(returned));
  });

  it("shares the file with a second connection while the first keeps writing", async () => {
    const path = newDatabasePath();
    const writer = new SqliteCheckpointSaver(path);
    const secondConnection = new Database(path);
    const reader = new SqliteCheckpointSaver(secondConnection);
    const writerGraph = buildChat(writer);
    const readerGraph = buildChat(reader);
    const config = { configurable: { thread_id: "shared" } };

    let returned: BaseMessage[] = [];
    for (let turn = 0; turn < 5; turn += 1) {
      returned = await chat(writerGraph, "shared", 1, turn);
      const seen = await readerGraph.getState(config);
      expect(serialized(seen.values.messages)).toEqual(serialized(returned));
    }
    // The second connection writes too: another thread, interleaved with the first.
    await Promise.all([chat(writerGraph, "shared", 3, 5), chat(readerGraph, "other", 3)]);

    const listed = [];
    for await (const tuple of reader.list({ configurable: { thread_id: "shared" } }, { limit: 2 })) listed.push(tuple);
    expect(listed).toHaveLength(2);
    expect(listed[0]!.checkpoint.channel_values.messages).toHaveLength(16);
    expect((await writer.getTuple({ configurable: { thread_id: "other" } }))?.checkpoint.channel_values.messages).toHaveLength(6);
    await writer.close();
    secondConnection.close();
  });
});

/** A store file of an earlier version under tests/fixtures/checkpoint, and what its thread read back when it was made. */
function storeFixture(name: string): {
  fixture: string;
  expected: { final: string[]; history: { id: string; count: number; sha1: string }[] };
} {
  const file = (extension: string) => fileURLToPath(new URL(`./fixtures/checkpoint/${name}.${extension}`, import.meta.url));
  return { fixture: file("db"), expected: JSON.parse(readFileSync(file("json"), "utf8")) as ReturnType<typeof storeFixture>["expected"] };
}

/** The digest store fixtures record of a checkpoint's messages. */
const digest = (messages: readonly BaseMessage[]) => createHash("sha1").update(serialized(messages).join("\n")).digest("hex");

describe("SqliteCheckpointSaver on a store written before the item log", () => {
  // store-v2.db: 45 turns written by the saver of store version 2 (snapshot, deltas, rollups;
  // one message removed, one replaced by id; see make-store-v2.ts.txt); store-v2.json: what it read back.
  const { fixture, expected } = storeFixture("store-v2");

  it("is read through the run store unchanged, and migrated to the current store version by a writer", async () => {
    const path = newDatabasePath();
    mkdirSync(dirname(path), { recursive: true });
    copyFileSync(fixture, path);
    const before = readFileSync(path);
    const reader = await openStore({ db: path, env: {} }, "read");
    const read = await reader.saver.getTuple({ configurable: { thread_id: "old" } });
    await reader.close();
    expect(serialized(read?.checkpoint.channel_values.messages as BaseMessage[])).toEqual(expected.final);
    expect(readFileSync(path).equals(before)).toBe(true);

    const writer = await openStore({ db: path, env: {} }, "write");
    expect((writer.saver as SqliteCheckpointSaver).db.pragma("user_version", { simple: true })).toBe(STORE_VERSION);
    const written = await writer.saver.getTuple({ configurable: { thread_id: "old" } });
    await writer.close();
    expect(serialized(written?.checkpoint.channel_values.messages as BaseMessage[])).toEqual(expected.final);
  });

  it("reads every checkpoint the earlier format wrote, and keeps writing the thread in the new one", async () => {
    const path = newDatabasePath();
    mkdirSync(dirname(path), { recursive: true });
    copyFileSync(fixture, path);
    const before = messageStorage(path, "old");
    expect(before.rows).toMatchObject({ snapshot: 1, delta: 87, rollup: 2 });

    expect(serialized(await storedMessages(path, "old"))).toEqual(expected.final);
    for (const { id, count, sha1 } of expected.history) {
      const messages = (await storedMessages(path, "old", id)) ?? [];
      expect({ id, count: messages.length, sha1: digest(messages) }).toEqual({ id, count, sha1 });
    }

    const saver = new SqliteCheckpointSaver(path);
    const returned = await chat(buildChat(saver), "old", 3, 100);
    saver.close();
    expect(returned).toHaveLength(expected.final.length + 6);
    expect(serialized(returned.slice(0, expected.final.length))).toEqual(expected.final);
    expect(serialized(await storedMessages(path, "old"))).toEqual(serialized(returned));
    // The new versions are log ranges; the log starts afresh once (the earlier rows have no log positions): every message once.
    const after = messageStorage(path, "old");
    expect(after.rows.items).toBe(6);
    expect(after.logItems).toBe(expected.final.length + 6);
    for (const { id, sha1 } of expected.history) expect(digest((await storedMessages(path, "old", id)) ?? [])).toBe(sha1);
  });
});

describe("SqliteCheckpointSaver on a store of version 3 (its tables WITHOUT ROWID)", () => {
  // store-v3.db: 45 turns written through the run store of version 3, replies of 1.5 KB (rows
  // that overflow a page; one message removed, one replaced by id; see make-store-v3.mjs.txt).
  const { fixture, expected } = storeFixture("store-v3");
  const tablesWithoutRowid = (path: string): string[] => {
    const db = new Database(path, { readonly: true });
    try {
      return (db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'").all() as { name: string; sql: string }[])
        .filter((table) => /WITHOUT ROWID/i.test(table.sql))
        .map((table) => table.name)
        .sort();
    } finally {
      db.close();
    }
  };
  const rowCounts = (path: string): Record<string, number> => {
    const db = new Database(path, { readonly: true });
    try {
      const tables = ["loopgraph_checkpoints", "loopgraph_checkpoint_blobs", "loopgraph_checkpoint_items", "loopgraph_checkpoint_writes"];
      return Object.fromEntries(
        tables.map((table) => [table, (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n]),
      );
    } finally {
      db.close();
    }
  };

  it("is rebuilt as rowid tables by a writer, every row kept: every checkpoint reads back as before, and the thread goes on", async () => {
    const path = newDatabasePath();
    mkdirSync(dirname(path), { recursive: true });
    copyFileSync(fixture, path);
    expect(tablesWithoutRowid(path)).toEqual([
      "loopgraph_checkpoint_blobs",
      "loopgraph_checkpoint_items",
      "loopgraph_checkpoint_writes",
      "loopgraph_checkpoints",
    ]);
    const before = rowCounts(path);
    expect(before.loopgraph_checkpoint_items).toBeGreaterThan(0);

    // Read as it is (the reader migrates a copy in memory): the file is left alone.
    const image = readFileSync(path);
    const reader = await openStore({ db: path, env: {} }, "read");
    expect(
      serialized((await reader.saver.getTuple({ configurable: { thread_id: "v3" } }))?.checkpoint.channel_values.messages as BaseMessage[]),
    ).toEqual(expected.final);
    await reader.close();
    expect(readFileSync(path).equals(image)).toBe(true);

    const writer = await openStore({ db: path, env: {} }, "write");
    expect((writer.saver as SqliteCheckpointSaver).db.pragma("user_version", { simple: true })).toBe(STORE_VERSION);
    await writer.close();
    expect(tablesWithoutRowid(path)).toEqual([]);
    expect(rowCounts(path)).toEqual(before);
    for (const { id, count, sha1 } of expected.history) {
      const messages = (await storedMessages(path, "v3", id)) ?? [];
      expect({ id, count: messages.length, sha1: digest(messages) }).toEqual({ id, count, sha1 });
    }
    const saver = new SqliteCheckpointSaver(path);
    const returned = await chat(buildChat(saver), "v3", 2, 100);
    saver.close();
    expect(serialized(returned.slice(0, expected.final.length))).toEqual(expected.final);
    expect(returned).toHaveLength(expected.final.length + 4);
  });

  it("opened by the saver alone (no run store migration), is read and written as it is", async () => {
    const path = newDatabasePath();
    mkdirSync(dirname(path), { recursive: true });
    copyFileSync(fixture, path);
    const saver = new SqliteCheckpointSaver(path);
    const returned = await chat(buildChat(saver), "v3", 2, 100);
    saver.close();
    expect(serialized(returned.slice(0, expected.final.length))).toEqual(expected.final);
    expect(serialized(await storedMessages(path, "v3"))).toEqual(serialized(returned));
    expect(tablesWithoutRowid(path)).toHaveLength(4);
  });
});

describe("SqliteCheckpointSaver.readChannel past a version the reader holds", () => {
  it("reads only the log items a later version adds, reusing the earlier version's for the positions both share", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    await chat(buildChat(saver), "reader", 6);
    const versions: string[] = [];
    for await (const entry of saver.history("reader")) {
      const version = entry.channelVersions.messages;
      if (version !== undefined && versions.at(-1) !== String(version)) versions.push(String(version));
    }
    expect(versions.length).toBeGreaterThan(5);
    const logChunks = vi.spyOn((saver as unknown as { store: { logChunks: (...args: unknown[]) => unknown } }).store, "logChunks");
    let previous: KnownList | undefined;
    for (const version of versions) {
      const whole = saver.readChannel("reader", "messages", version);
      logChunks.mockClear();
      const read = saver.readChannel("reader", "messages", version, previous ? { previous } : {});
      if (whole?.kind !== "list" || read?.kind !== "list") throw new Error(`version ${version} is not a list`);
      expect(read.items.map((item) => Buffer.from(item.bytes).toString())).toEqual(
        whole.items.map((item) => Buffer.from(item.bytes).toString()),
      );
      expect(read.ranges).toEqual(whole.ranges);
      if (previous) {
        // The items both versions hold at the same log positions are the reader's own, and only the rest was looked for in the log.
        const shared = previous.items.length;
        expect(read.items.slice(0, shared).every((item, i) => item === previous!.items[i])).toBe(true);
        const [, channel, start, end] = logChunks.mock.calls[0] as [unknown, string, number, number];
        expect([channel, start, end]).toEqual(["messages", shared, whole.items.length]);
      }
      previous = { items: read.items, ...(read.ranges ? { ranges: read.ranges } : {}) };
    }
    saver.close();
  });

  it("dropRanges and sharedSeqPrefix count items across ranges", () => {
    expect(
      dropRanges(
        [
          [0, 3],
          [5, 7],
          [9, 10],
        ],
        0,
      ),
    ).toEqual([
      [0, 3],
      [5, 7],
      [9, 10],
    ]);
    expect(
      dropRanges(
        [
          [0, 3],
          [5, 7],
          [9, 10],
        ],
        4,
      ),
    ).toEqual([
      [6, 7],
      [9, 10],
    ]);
    expect(
      dropRanges(
        [
          [0, 3],
          [5, 7],
        ],
        5,
      ),
    ).toEqual([]);
    expect(
      sharedSeqPrefix(
        [
          [0, 3],
          [5, 7],
        ],
        [
          [0, 3],
          [5, 6],
          [8, 9],
        ],
      ),
    ).toBe(4);
    expect(sharedSeqPrefix([[0, 3]], [[0, 5]])).toBe(3);
    expect(sharedSeqPrefix([[1, 3]], [[0, 3]])).toBe(0);
    expect(sharedSeqPrefix([], [[0, 3]])).toBe(0);
  });
});

describe("SqliteCheckpointSaver pending writes and inputs", () => {
  it("stores a message written by a node and given as input once for both, and reads both back exactly", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const graph = buildChat(saver);
    const config = { configurable: { thread_id: "writes" } };
    for (let turn = 0; turn < 5; turn += 1) {
      await graph.invoke({ messages: [new HumanMessage({ id: `h-${turn}`, content: `turn ${turn}` })] }, config);
    }
    // The input checkpoint of the next turn, and the writes of its first task.
    const input = new HumanMessage({
      id: "h-5",
      content: "turn 5",
      additional_kwargs: { bytes: new Uint8Array([1, 2, 3]), when: new Date(0).toISOString() },
    });
    await graph.invoke({ messages: [input] }, { ...config, interruptBefore: ["reply"] } as typeof config);
    const tuples = [];
    for await (const tuple of saver.list(config, { limit: 3 })) tuples.push(tuple);
    saver.close();

    const inputCheckpoint = tuples.find((tuple) => tuple.metadata?.source === "input");
    const startValue = inputCheckpoint!.checkpoint.channel_values.__start__ as { messages: BaseMessage[] };
    expect(serialized(startValue.messages)).toEqual(serialized([input]));
    const inputWrites = inputCheckpoint!.pendingWrites!.filter(([, channel]) => channel === "messages");
    expect(inputWrites).toHaveLength(1);
    expect(serialized(inputWrites[0]![2] as BaseMessage[])).toEqual(serialized([input]));

    const db = new Database(path, { readonly: true });
    const logs = db
      .prepare<[], { channel: string; items: number }>(
        "SELECT channel, max(end_seq) AS items FROM loopgraph_checkpoint_items WHERE thread_id = 'writes' GROUP BY channel ORDER BY channel",
      )
      .all();
    const writeRows = db
      .prepare<[], { type: string }>("SELECT type FROM loopgraph_checkpoint_writes WHERE thread_id = 'writes' AND channel = 'messages'")
      .all();
    db.close();
    // Inputs and writes: 6 user messages (each an input, then its write, once) and 5 replies; the list: 11.
    expect(logs).toEqual([
      { channel: "__writes__:messages", items: 11 },
      { channel: "messages", items: 11 },
    ]);
    expect(new Set(writeRows.map((row) => row.type))).toEqual(new Set(["loopgraph:log-refs"]));
  });
});

describe("SqliteCheckpointSaver commits a step's pending writes with its checkpoint", () => {
  /** Lets the promise callbacks queued so far run (putWrites serializes its values), but no timer or I/O callback. */
  const microtasks = async () => {
    for (let i = 0; i < 20; i += 1) await null;
  };

  /** A graph of plain values (no message lists): `a` then `b`, each adding to a counter. */
  function counterGraph(saver: SqliteCheckpointSaver) {
    const State = Annotation.Root({
      count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
      last: Annotation<string>(),
    });
    return new StateGraph(State)
      .addNode("a", () => ({ count: 1, last: "a" }))
      .addNode("b", () => ({ count: 10, last: "b" }))
      .addEdge(START, "a")
      .addEdge("a", "b")
      .addEdge("b", END)
      .compile({ checkpointer: saver });
  }

  it("one write transaction per step: the task's writes commit in the transaction of the checkpoint that follows them", async () => {
    const saver = new SqliteCheckpointSaver(newDatabasePath());
    let transactions = 0;
    saver.addWriteHook(() => (transactions += 1));
    const result = await counterGraph(saver).invoke({ count: 0 }, { configurable: { thread_id: "steps" }, durability: "sync" });
    expect(result).toEqual({ count: 11, last: "b" });
    const checkpoints = saver.db.prepare("SELECT count(*) AS n FROM loopgraph_checkpoints").get() as { n: number };
    const writes = saver.db.prepare("SELECT count(*) AS n FROM loopgraph_checkpoint_writes").get() as { n: number };
    saver.close();
    // The input checkpoint, one after the input step, one after a, one after b: four puts, and
    // the tasks' writes (input, a, b) each in the transaction of the put after them.
    expect(checkpoints.n).toBe(4);
    expect(writes.n).toBeGreaterThanOrEqual(3);
    expect(transactions).toBe(4);
  });

  it("writes no checkpoint follows (an interrupt) commit on their own on the next turn, and a reader of the saver sees them at once", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const config = { configurable: { thread_id: "alone", checkpoint_ns: "" } };
    const checkpoint = { v: 4, id: uuid6(0), ts: new Date().toISOString(), channel_values: {}, channel_versions: {}, versions_seen: {} };
    const saved = await saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, {});
    const other = new Database(path, { readonly: true });
    const rows = () => (other.prepare("SELECT count(*) AS n FROM loopgraph_checkpoint_writes").get() as { n: number }).n;

    const written = saver.putWrites(saved, [["count", 5]], "task-1");
    await microtasks();
    expect(rows()).toBe(0);
    // The saver's own reads take in what is queued first.
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([["task-1", "count", 5]]);
    expect(rows()).toBe(1);
    await written;

    // Left alone, they are written on the next turn of the event loop, and the promise says when.
    await saver.putWrites(saved, [["count", 6]], "task-2");
    expect(rows()).toBe(2);
    other.close();
    saver.close();
  });

  it("a failed write transaction fails the queued writes' promises too, and closing the saver writes what is still queued", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const config = { configurable: { thread_id: "fails", checkpoint_ns: "" } };
    const checkpoint = (step: number) => ({
      v: 4,
      id: uuid6(step),
      ts: new Date().toISOString(),
      channel_values: {},
      channel_versions: {},
      versions_seen: {},
    });
    const saved = await saver.put(config, checkpoint(0), { source: "input", step: -1, parents: {} }, {});
    let failNext = true;
    saver.addWriteHook(() => {
      if (failNext) throw new Error("disk full");
    });
    const queued = saver.putWrites(saved, [["count", 1]], "task-1");
    await expect(saver.put(saved, checkpoint(1), { source: "loop", step: 0, parents: {} }, {})).rejects.toThrow("disk full");
    await expect(queued).rejects.toThrow("disk full");

    failNext = false;
    const lastWrites = saver.putWrites(saved, [["count", 2]], "task-2");
    await microtasks();
    saver.close();
    await lastWrites;
    const reopened = new SqliteCheckpointSaver(path);
    expect((await reopened.getTuple(config))?.pendingWrites).toEqual([["task-2", "count", 2]]);
    reopened.close();
  });

  it("a new store's connection syncs the write-ahead log at checkpoints (NORMAL), as every later connection of it does", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    expect(saver.db.pragma("synchronous", { simple: true })).toBe(1);
    saver.close();
    const store = await openStore({ db: join(directory.path, `store-${files}.db`), env: {} }, "create");
    expect((store.saver as SqliteCheckpointSaver).db.pragma("synchronous", { simple: true })).toBe(1);
    await store.close();
  });
});

describe("SqliteCheckpointSaver stores each message once, compressed, and no more than it must", () => {
  /** The item logs of a thread: per channel, its chunks' item types, raw bytes and codecs. */
  function itemLogs(path: string, threadId: string): Record<string, { types: string[]; rawBytes: number; codecs: (string | null)[] }> {
    const db = new Database(path, { readonly: true });
    try {
      const rows = db
        .prepare<
          [string],
          { channel: string; start_seq: number; end_seq: number; ends: Buffer; types: string | null; codec: string | null }
        >(
          "SELECT channel, start_seq, end_seq, ends, types, codec FROM loopgraph_checkpoint_items WHERE thread_id = ? ORDER BY channel, start_seq",
        )
        .all(threadId);
      const logs: ReturnType<typeof itemLogs> = {};
      for (const row of rows) {
        const log = (logs[row.channel] ??= { types: [], rawBytes: 0, codecs: [] });
        log.types.push(
          ...(row.types === null ? new Array<string>(row.end_seq - row.start_seq).fill("json") : (JSON.parse(row.types) as string[])),
        );
        log.rawBytes += row.ends.readUInt32LE(row.ends.length - 4);
        log.codecs.push(row.codec);
      }
      return logs;
    } finally {
      db.close();
    }
  }

  it("a message without an id is logged as written; the list that gives it one refers to it: both read back exactly", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    // userMessage and the replies have no id: LangGraph's messages reducer gives them one.
    const returned = await chat(buildChat(saver), "no-ids", 8);
    expect(returned.every((message) => typeof message.id === "string")).toBe(true);
    const tuples = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "no-ids" } })) tuples.push(tuple);
    saver.close();

    expect(serialized(await storedMessages(path, "no-ids"))).toEqual(serialized(returned));
    // The writes read back as they were written: without the ids the reducer gave them later.
    const written = tuples.flatMap((tuple) =>
      (tuple.pendingWrites ?? []).filter(([, channel]) => channel === "messages").flatMap(([, , value]) => value as BaseMessage[]),
    );
    expect(written).toHaveLength(16);
    expect(written.every((message) => message.id === undefined)).toBe(true);
    expect(written.map((message) => message.content).sort()).toEqual(returned.map((message) => message.content).sort());

    const logs = itemLogs(path, "no-ids");
    expect(logs["__writes__:messages"]!.types).toEqual(new Array(16).fill("json"));
    expect(logs.messages!.types).toEqual(new Array(16).fill("lg:ref"));
    // A reference holds the id and where the message is: a small share of the message.
    expect(logs.messages!.rawBytes).toBeLessThan(logs["__writes__:messages"]!.rawBytes / 3);
  });

  it("a list read whole is kept in memory resolved, without a second copy of the written messages its references point to", async () => {
    const path = newDatabasePath();
    const first = new SqliteCheckpointSaver(path);
    const returned = await chat(buildChat(first), "held", 6);
    first.close();
    const saver = new SqliteCheckpointSaver(path);
    const read = async () =>
      (await saver.getTuple({ configurable: { thread_id: "held" } }))?.checkpoint.channel_values.messages as BaseMessage[];
    expect(serialized(await read())).toEqual(serialized(returned));
    const cached = [...(saver as unknown as { store: { chunkCache: { keys(): IterableIterator<string> } } }).store.chunkCache.keys()];
    expect(cached.some((key) => key.includes("\u0000messages\u0000") && key.endsWith("\u0000resolved"))).toBe(true);
    expect(cached.filter((key) => key.includes("__writes__:messages"))).toEqual([]);
    expect(serialized(await read())).toEqual(serialized(returned));
    saver.close();
    expect(itemLogs(path, "held").messages!.types).toEqual(new Array(12).fill("lg:ref"));
  });

  it("a saver that read a thread's list (a resumed run) plans its next version against it: no second read, only the new items logged", async () => {
    const path = newDatabasePath();
    const first = new SqliteCheckpointSaver(path);
    const before = await chat(buildChat(first), "resumed", 4);
    first.close();
    const saver = new SqliteCheckpointSaver(path);
    const readListVersion = vi.spyOn(saver as unknown as { readListVersion: () => unknown }, "readListVersion");
    const after = await chat(buildChat(saver), "resumed", 2, 4);
    saver.close();
    expect(readListVersion).not.toHaveBeenCalled();
    expect(serialized(after.slice(0, before.length))).toEqual(serialized(before));
    expect(serialized(await storedMessages(path, "resumed"))).toEqual(serialized(after));
    const logs = itemLogs(path, "resumed");
    expect(logs.messages!.types).toHaveLength(after.length);
  });

  it("a step appending to a list of strings encodes its new item only, not the list again", async () => {
    /** LangGraph's serializer counting the list items it writes (a subclass: the saver has no synchronous twin for it). */
    class CountingSerde extends JsonPlusSerializer {
      readonly strings = new Map<string, number>();
      override async dumpsTyped(value: unknown): Promise<[string, Uint8Array]> {
        if (typeof value === "string" && value.startsWith("item ")) this.strings.set(value, (this.strings.get(value) ?? 0) + 1);
        return super.dumpsTyped(value);
      }
    }
    const serde = new CountingSerde();
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path, serde);
    const steps = 30;
    const graph = new StateGraph(Annotation.Root({ items: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) }))
      .addNode("append", (state) => ({ items: [`item ${state.items.length}`] }))
      .addEdge(START, "append")
      .addConditionalEdges("append", (state) => (state.items.length < steps ? "append" : END))
      .compile({ checkpointer: saver });
    const { items } = await graph.invoke({ items: [] }, { configurable: { thread_id: "appends" }, recursionLimit: steps + 5 });
    saver.close();
    expect(items).toHaveLength(steps);
    expect([...serde.strings.values()]).toEqual(new Array(steps).fill(1));
    const reopened = new SqliteCheckpointSaver(path);
    expect((await reopened.getTuple({ configurable: { thread_id: "appends" } }))?.checkpoint.channel_values.items).toEqual(items);
    reopened.close();
  });

  it("an append writes one row of the item log, merged and compressed before it is written; every version reads back exactly", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    // Row writes of the item log, as SQLite makes them (temporary triggers of this connection).
    saver.db.exec(`CREATE TEMP TABLE item_writes (op TEXT);
      CREATE TEMP TRIGGER item_inserts AFTER INSERT ON main.loopgraph_checkpoint_items BEGIN INSERT INTO item_writes VALUES ('insert'); END;
      CREATE TEMP TRIGGER item_updates AFTER UPDATE ON main.loopgraph_checkpoint_items BEGIN INSERT INTO item_writes VALUES ('update'); END;
      CREATE TEMP TRIGGER item_deletes AFTER DELETE ON main.loopgraph_checkpoint_items BEGIN INSERT INTO item_writes VALUES ('delete'); END;`);
    const writes = () =>
      Object.fromEntries(
        saver.db
          .prepare<[], { op: string; n: number }>("SELECT op, count(*) AS n FROM item_writes GROUP BY op")
          .all()
          .map((row) => [row.op, row.n]),
      ) as Record<string, number | undefined>;
    const config = { configurable: { thread_id: "appends", checkpoint_ns: "" } };
    let parent: PutConfig = config;
    const items: string[] = [];
    for (let i = 0; i < 64; i++) {
      items.push(`item ${String(i).padStart(2, "0")}: ${"words that compress well ".repeat(8)}`);
      parent = await putItems(saver, parent, i, items);
      const { insert = 0, update = 0 } = writes();
      expect(insert + update).toBe(i + 1);
      // 37 items: chunks of 32, 4 and 1, the last ones not full.
      if (i === 36) expect(itemLogs(path, "appends").items!.codecs).toHaveLength(3);
    }
    const reopened = new SqliteCheckpointSaver(path);
    let version = items.length;
    for await (const tuple of reopened.list(config)) {
      expect(tuple.checkpoint.channel_values.items).toEqual(items.slice(0, version));
      version -= 1;
    }
    expect(version).toBe(0);
    reopened.close();
    const counted = writes();
    saver.close();
    // A binary counter: 64 items of one size in one chunk, stored compressed.
    expect(itemLogs(path, "appends").items!.codecs).toEqual(["deflate"]);
    expect(counted).toEqual({ insert: 32, update: 32, delete: 31 });
  });

  it("compresses a chunk of text, keeps one that would not shrink as it is, and reads it back exactly", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const items = Array.from({ length: 40 }, (_, i) => `line ${i}: ${"the same words again and again ".repeat(20)}`);
    await putItems(saver, { configurable: { thread_id: "text", checkpoint_ns: "" } }, 0, items);
    saver.close();
    expect(itemLogs(path, "text").items!.codecs).toEqual(["deflate"]);
    const db = new Database(path, { readonly: true });
    expect(
      db.prepare<[], { size: number }>("SELECT length(data) AS size FROM loopgraph_checkpoint_items WHERE thread_id = 'text'").get()!.size,
    ).toBeLessThan(items.join(",").length / 5);
    db.close();
    const reopened = new SqliteCheckpointSaver(path);
    expect((await reopened.getTuple({ configurable: { thread_id: "text" } }))?.checkpoint.channel_values.items).toEqual(items);
    // Held uncompressed in memory, and weighed with the text its JSON items are read from (as big again).
    const cache = (reopened as unknown as { store: { chunkCache: { weight: number } } }).store.chunkCache;
    expect(cache.weight).toBe(2 * items.map((item) => JSON.stringify(item)).join(",").length + 4 * items.length);
    reopened.close();

    // Data that does not shrink by an eighth (random bytes), or is small, is stored as it is.
    for (const data of [randomBytes(4096), Buffer.from("x".repeat(200))]) {
      const columns = { start: 0, end: 1, data, ends: Buffer.alloc(4), types: null };
      const packed = packChunk(columns);
      expect(packed.codec).toBeNull();
      expect(packed.data).toBe(data);
    }
    const text = Buffer.from("compressible ".repeat(100));
    const packed = packChunk({ start: 0, end: 1, data: text, ends: Buffer.alloc(4), types: null });
    expect(packed.codec).toBe("deflate");
    expect(
      Buffer.from(
        unpackChunk({ start_seq: 0, end_seq: 1, data: packed.data, ends: packed.ends, types: null, codec: packed.codec }).data,
      ).equals(text),
    ).toBe(true);
    expect(() => unpackChunk({ start_seq: 0, end_seq: 1, data: text, ends: packed.ends, types: null, codec: "zstd" })).toThrow(
      /codec "zstd"/,
    );
  });

  it("writes no row for a version without a value, no checkpoint id twice, and versions of nine random digits", async () => {
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    await chat(buildChat(saver), "lean", 3);
    const history = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "lean" } })) history.push(tuple);
    saver.close();
    const db = new Database(path, { readonly: true });
    const kinds = db
      .prepare<[], { kind: string }>("SELECT DISTINCT kind FROM loopgraph_checkpoint_blobs")
      .all()
      .map((row) => row.kind);
    const rows = db
      .prepare<[], { checkpoint_id: string; checkpoint: Buffer; channel_versions: string }>(
        "SELECT checkpoint_id, checkpoint, channel_versions FROM loopgraph_checkpoints",
      )
      .all();
    db.close();
    expect(kinds).not.toContain("empty");
    expect(rows.length).toBe(history.length);
    for (const row of rows) {
      expect(row.checkpoint.toString("utf8")).not.toContain(row.checkpoint_id);
      for (const version of Object.values(JSON.parse(row.channel_versions) as Record<string, number>))
        expect(String(version)).toMatch(/^\d+\.\d{1,9}$/);
    }
    // Read back, each checkpoint has its id where LangGraph puts it (after `v`), and the channels the state holds.
    for (const tuple of history) {
      expect(Object.keys(tuple.checkpoint).slice(0, 2)).toEqual(["v", "id"]);
      expect(tuple.checkpoint.id).toBe(tuple.config.configurable?.checkpoint_id);
    }
  });
});

describe("SqliteCheckpointSaver list items", () => {
  it.each([
    ["JSON items only (one JSON.parse of the chunks' text)", false],
    ["a bytes item among them (item by item)", true],
  ])("decodes a list's items exactly as the serde decodes each: %s", async (_name, withBytes) => {
    const allItems: unknown[] = [
      "text",
      42,
      1.5,
      true,
      null,
      { plain: { nested: [1, "two"] } },
      new Set([1, 2]),
      new Map([["a", 1]]),
      /re+/g,
      new Error("boom"),
      [undefined, 3],
      new AIMessage({ id: "a-1", content: "reply", additional_kwargs: { tags: new Set(["x"]) } }),
      { lc: 2, type: "constructor", id: ["Function"], method: "call", args: [] },
    ];
    const items = withBytes ? [...allItems, new Uint8Array([1])] : allItems;
    const serde = new JsonPlusSerializer();
    const expected = await Promise.all(items.map(async (item) => serde.loadsTyped(...(await serde.dumpsTyped(item)))));
    const path = newDatabasePath();
    const saver = new SqliteCheckpointSaver(path);
    const config = { configurable: { thread_id: "items", checkpoint_ns: "" } };
    void _name;
    let parent: PutConfig = config;
    // Written in two versions (the second appends to the first) so that the list spans two log chunks.
    for (const [i, upTo] of [7, items.length].entries()) parent = await putItems(saver, parent, i, items.slice(0, upTo));
    const reopened = new SqliteCheckpointSaver(path);
    const read = (await reopened.getTuple(config))?.checkpoint.channel_values.items as unknown[];
    saver.close();
    reopened.close();
    expect(read).toHaveLength(items.length);
    read.forEach((item, i) => {
      expect(item?.constructor).toBe((expected[i] as object | null)?.constructor);
      expect(item).toEqual(expected[i]);
    });
  });
});
