import { join } from "node:path";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver, CheckpointListOptions, CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { putThread } from "../bench/fixtures.js";
import type { KnownList } from "../src/checkpoint/history-reader.js";
import { SqliteCheckpointQueries } from "../src/store/sqlite/checkpoint-queries.js";
import { SqliteCheckpointSaver } from "../src/store/sqlite/saver.js";
import { sharedTempDir } from "./helpers/workspace.js";

const directory = sharedTempDir("loopgraph-reads-");

async function listed(saver: BaseCheckpointSaver, config: RunnableConfig, options?: CheckpointListOptions): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list(config, options)) tuples.push(tuple);
  return tuples;
}

const thread = (thread_id: string): RunnableConfig => ({ configurable: { thread_id, checkpoint_ns: "" } });

describe("SqliteCheckpointSaver reads, against the stock SqliteSaver holding the same checkpoints", () => {
  let stockDb: Database.Database;
  let stock: SqliteSaver;
  let ours: SqliteCheckpointSaver;
  const path = () => join(directory.path, "ours.db");

  beforeAll(async () => {
    stockDb = new Database(join(directory.path, "stock.db"));
    stock = new SqliteSaver(stockDb);
    ours = new SqliteCheckpointSaver(path());
    // Threads of different lengths in one store, their checkpoints' ids interleaving in time.
    await putThread([stock, ours], "long", 40, { messageEvery: 3, messageBytes: 300 });
    await putThread([stock, ours], "small", 8, { messageEvery: 1, messageBytes: 500 });
    await putThread([stock, ours], "mid", 15, { messageEvery: 2, messageBytes: 100 });
  });

  afterAll(() => {
    ours.close();
    stockDb.close();
  });

  it("lists what the stock saver lists: by thread, with limit and before, across threads, with a filter", async () => {
    const fifth = (await listed(stock, thread("long"), { limit: 5 }))[4]!;
    const cases: [RunnableConfig, CheckpointListOptions | undefined][] = [
      [thread("small"), { limit: 10 }],
      [thread("small"), undefined],
      [thread("long"), { limit: 3 }],
      [thread("long"), { before: fifth.config, limit: 4 }],
      [thread("long"), { before: fifth.config }],
      // Across threads: every namespace's checkpoints, newest first, pages crossing from one thread to another.
      [{ configurable: {} }, { limit: 25 }],
      [{ configurable: {} }, { before: fifth.config, limit: 12 }],
      [{ configurable: {} }, undefined],
      [thread("mid"), { filter: { step: 7 } }],
      [{ configurable: {} }, { filter: { source: "loop" }, limit: 30 }],
    ];
    for (const [config, options] of cases) {
      const expected = await listed(stock, config, options);
      expect(expected.length).toBeGreaterThan(0);
      expect(await listed(ours, config, options), JSON.stringify({ config, options })).toEqual(expected);
    }
  });

  it("gets each checkpoint as the stock saver does, and the latest of a thread", async () => {
    for (const { config } of await listed(stock, { configurable: {} })) {
      expect(await ours.getTuple(config)).toEqual(await stock.getTuple(config));
    }
    for (const id of ["long", "small", "mid"]) expect(await ours.getTuple(thread(id))).toEqual(await stock.getTuple(thread(id)));
  });

  it("reads a page of list in as many statements for 10 checkpoints as for 2, and getTuple in a few", async () => {
    let statements = 0;
    const db = new Database(path(), { verbose: () => (statements += 1) });
    const counted = new SqliteCheckpointSaver(db);
    const count = async (read: () => Promise<unknown>) => {
      await read();
      statements = 0;
      await read();
      return statements;
    };
    try {
      const two = await count(() => listed(counted, thread("long"), { limit: 2 }));
      const ten = await count(() => listed(counted, thread("long"), { limit: 10 }));
      expect(ten).toBe(two);
      // Begin, the checkpoint's row, its channel versions, its pending writes, commit: its messages' log chunks, read the time before, are held resolved in memory.
      expect(await count(() => counted.getTuple(thread("long")))).toBe(5);
    } finally {
      db.close();
    }
  });

  it("checkpoint queries (status, a run's bookkeeping) prepare each statement once, not on every call", async () => {
    const db = new Database(path(), { readonly: true });
    const prepare = vi.spyOn(db, "prepare");
    const queries = new SqliteCheckpointQueries(db);
    const latest = (await stock.getTuple(thread("small")))!.config.configurable!.checkpoint_id as string;
    const readAll = async () => [
      await queries.latestCheckpointId("small"),
      await queries.plainChannels("small", ["round", "task"]),
      await queries.plainChannels("small", ["round"], latest),
      await queries.checkpointsWithPrefix("small", latest.slice(0, 8)),
      await queries.rootCheckpointIdsWithPrefix("small", latest.slice(0, 8), 3),
      await queries.rootCheckpointCounts(),
      await queries.allCheckpointIds("small"),
      await queries.parentLinks("small", ""),
    ];
    try {
      const first = await readAll();
      expect(first[0]).toBe(latest);
      expect(first[1]).toEqual({ round: 7, task: { thread: "small", step: 7, note: "step 7 of small" } });
      expect(first[5]).toEqual(
        new Map([
          ["long", 40],
          ["small", 8],
          ["mid", 15],
        ]),
      );
      expect(prepare).toHaveBeenCalled();
      prepare.mockClear();
      expect(await readAll()).toEqual(first);
      expect(prepare).not.toHaveBeenCalled();
    } finally {
      db.close();
    }
  });
});

describe("SqliteCheckpointSaver item references", () => {
  it("resolves what a history read asks of a chunk, whole or in part, as a whole read of the version does", async () => {
    const path = join(directory.path, "history.db");
    const writer = new SqliteCheckpointSaver(path);
    await putThread([writer], "h", 12, { messageEvery: 1, messageBytes: 300 });
    writer.close();
    const fresh = () => new SqliteCheckpointSaver(path);
    const versions: string[] = [];
    const whole = fresh();
    for await (const entry of whole.history("h")) {
      const version = String(entry.channelVersions.messages);
      if (versions.at(-1) !== version) versions.push(version);
    }
    const read = (saver: SqliteCheckpointSaver, version: string, known?: KnownList) => {
      const channel = saver.readChannel("h", "messages", version, known ? { previous: known } : {});
      if (channel?.kind !== "list") throw new Error(`version ${version} is not a list`);
      return channel;
    };
    const text = (items: readonly { bytes: Uint8Array }[]) => items.map((item) => Buffer.from(item.bytes).toString("utf8"));
    const last = read(whole, versions.at(-1)!);
    expect(last.items.length).toBe(11);
    expect(text(last.items).every((item) => item.startsWith('{"lc":1'))).toBe(true);
    // Each earlier version as the one held: the later one's new items are read by a reader that has read nothing else (most lie within a chunk).
    for (const version of versions.slice(0, -1)) {
      const held = read(whole, version);
      const reader = fresh();
      const later = read(reader, versions.at(-1)!, { items: held.items, ...(held.ranges ? { ranges: held.ranges } : {}) });
      reader.close();
      expect(text(later.items)).toEqual(text(last.items));
    }
    whole.close();
  });

  it("walks a long list's versions as inspect does: each version's new items as a whole read gives them, in a few statements for the whole walk", async () => {
    const path = join(directory.path, "walk.db");
    const writer = new SqliteCheckpointSaver(path);
    // 150 messages: the walk crosses blocks of resolved references and chunks of the log.
    await putThread([writer], "w", 151, { messageEvery: 1, messageBytes: 60 });
    writer.close();
    let itemStatements = 0;
    const db = new Database(path, { verbose: (sql) => void (String(sql).includes("loopgraph_checkpoint_items") && (itemStatements += 1)) });
    const walker = new SqliteCheckpointSaver(db);
    const whole = new SqliteCheckpointSaver(path);
    const versions: string[] = [];
    for await (const entry of walker.history("w")) {
      const version = String(entry.channelVersions.messages);
      if (versions.at(-1) !== version) versions.push(version);
    }
    expect(versions.length).toBe(151);
    const text = (channel: ReturnType<SqliteCheckpointSaver["readChannel"]>) => {
      if (channel?.kind !== "list") throw new Error("not a list");
      return channel.items.map((item) => Buffer.from(item.bytes).toString("utf8"));
    };
    itemStatements = 0;
    let held: KnownList | undefined;
    for (const version of versions) {
      const read = walker.readChannel("w", "messages", version, held ? { previous: held } : {});
      expect(text(read)).toEqual(text(whole.readChannel("w", "messages", version)));
      if (read?.kind === "list") held = { items: read.items, ...(read.ranges ? { ranges: read.ranges } : {}) };
    }
    // Version after version, the new items lie in a block read already: no statement for most (before: two for each).
    expect(itemStatements).toBeLessThan(versions.length / 4);
    walker.close();
    whole.close();
  });

  it("refuses a reference whose target holds references (a damaged store), naming the log, instead of following it", async () => {
    const path = join(directory.path, "damaged.db");
    const writer = new SqliteCheckpointSaver(path);
    await putThread([writer], "t", 4, { messageEvery: 1, messageBytes: 500 });
    writer.close();
    const db = new Database(path);
    const kinds = (channel: string) =>
      (db.prepare("SELECT types FROM loopgraph_checkpoint_items WHERE channel = ?").all(channel) as { types: string | null }[]).map(
        (row) => row.types,
      );
    // The list's messages are stored as references to the messages its tasks wrote.
    expect(kinds("messages").join()).toContain("lg:ref");
    const targets = db.prepare("SELECT start_seq, end_seq FROM loopgraph_checkpoint_items WHERE channel = '__writes__:messages'").all() as {
      start_seq: number;
      end_seq: number;
    }[];
    expect(targets.length).toBeGreaterThan(0);
    for (const { start_seq, end_seq } of targets) {
      db.prepare("UPDATE loopgraph_checkpoint_items SET types = ? WHERE channel = '__writes__:messages' AND start_seq = ?").run(
        JSON.stringify(new Array(end_seq - start_seq).fill("lg:ref")),
        start_seq,
      );
    }
    db.close();
    const reader = new SqliteCheckpointSaver(path);
    try {
      await expect(reader.getTuple(thread("t"))).rejects.toThrow(
        /item log of channel __writes__:messages holds references .* which a reference points to/,
      );
    } finally {
      reader.close();
    }
  });
});
