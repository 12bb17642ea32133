/**
 * The PostgreSQL saver's own format and its life among several processes, on a throwaway server
 * (tests/helpers/postgres.ts): each list item stored once, a thread continued by a saver that did
 * not write it (another worker), a stale view of an item log planned again, migrations run at
 * once from several pools, and a database of a newer loopgraph refused.
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { createHash } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresCheckpointQueries } from "../src/store/postgres/checkpoint-queries.js";
import { PostgresCheckpointSaver } from "../src/store/postgres/saver.js";
import { CHECKPOINT_MIGRATIONS, migrate, SchemaTooNewError } from "../src/store/postgres/schema.js";
import { DICTIONARY, packed, unpacked } from "../src/store/postgres/packing.js";
import { parseObjectRefs } from "../src/store/postgres/item-logs.js";
import { resolvedRows, type BlobRow } from "../src/store/postgres/value-batch.js";
import { MAX_CHAIN, readVersions, storedVersions, versionsChain, versionsText } from "../src/store/postgres/versions.js";
import { startPostgres, type PostgresServer } from "./helpers/postgres.js";
import { lacks } from "./helpers/requirements.js";

let server: PostgresServer;
let databases = 0;
const pools: pg.Pool[] = [];

/** The URL of a new, empty database. */
function newDatabase(): string {
  databases += 1;
  return server.createDatabase(`saver_${databases}`);
}

function poolOn(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pools.push(pool);
  return pool;
}

async function saverOn(url: string): Promise<PostgresCheckpointSaver> {
  const saver = new PostgresCheckpointSaver(poolOn(url));
  await saver.setup();
  return saver;
}

function buildChat(saver: PostgresCheckpointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("reply", (state) => ({ messages: [new AIMessage(`reply to: ${String(state.messages.at(-1)?.content).slice(0, 30)}`)] }))
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer: saver });
}

/** A value long enough to be stored compressed (see packing.ts). */
const LONG = "a long value ".repeat(30);

/** An input setting each of the 20 channels of `buildWide`'s state, the last to LONG. */
const allChannels = (): Record<string, number | string> =>
  Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, i === 19 ? LONG : 0]));

/** A state of 20 channels, of which a turn's input sets one and its node two more. */
function buildWide(saver: PostgresCheckpointSaver) {
  const channels: Record<string, ReturnType<typeof Annotation<number | string>>> = {};
  for (let i = 0; i < 20; i++) channels[`c${i}`] = Annotation<number | string>();
  return new StateGraph(Annotation.Root(channels))
    .addNode("step", (state: Record<string, number>) => ({
      [`c${1 + ((state.c0! * 2) % 19)}`]: state.c0,
      [`c${2 + ((state.c0! * 2) % 18)}`]: 1,
    }))
    .addEdge(START, "step")
    .addEdge("step", END)
    .compile({ checkpointer: saver });
}

const turnText = (turn: number): string => `turn ${turn}: ${"lorem ipsum ".repeat(8)}`;

async function chat(saver: PostgresCheckpointSaver, threadId: string, turns: number, first = 0): Promise<BaseMessage[]> {
  const graph = buildChat(saver);
  let messages: BaseMessage[] = [];
  for (let turn = first; turn < first + turns; turn++) {
    ({ messages } = await graph.invoke({ messages: [new HumanMessage(turnText(turn))] }, { configurable: { thread_id: threadId } }));
  }
  return messages;
}

/** SQL: the id of the checkpoint a row's versions are stored against ("" standing for its parent, see versions.ts). */
const BASE_ID = "CASE WHEN versions_base = '' THEN parent_checkpoint_id ELSE versions_base END";

async function count(pool: pg.Pool, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(sql, params);
  return Number(rows[0]!.n);
}

/**
 * Turns a store of the current schema into one of schema 2 as that loopgraph wrote it: a row per
 * channel version (the rows holding several values split), keyed by channel first.
 */
async function downgradeToSchema2(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<BlobRow & { thread_id: string; checkpoint_ns: string }>("SELECT * FROM loopgraph_checkpoint_blobs");
  await pool.query("DELETE FROM loopgraph_checkpoint_blobs");
  await pool.query(`ALTER TABLE loopgraph_checkpoint_blobs DROP CONSTRAINT loopgraph_checkpoint_blobs_pkey,
    ADD PRIMARY KEY (thread_id, checkpoint_ns, channel, version)`);
  const namespaces = new Map<string, typeof rows>();
  for (const row of rows) {
    const key = JSON.stringify([row.thread_id, row.checkpoint_ns]);
    namespaces.set(key, [...(namespaces.get(key) ?? []), row]);
  }
  for (const [key, group] of namespaces) {
    const [threadId, ns] = JSON.parse(key) as [string, string];
    for (const row of resolvedRows(group).values()) {
      await pool.query(
        "INSERT INTO loopgraph_checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, data, ranges) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [threadId, ns, row.channel, row.version, row.type, row.data, row.ranges],
      );
    }
  }
  await pool.query("UPDATE loopgraph_schema SET version = 2 WHERE part = 'checkpoints'");
}

/** Data of a type packed as schema 3 did: raw DEFLATE without a dictionary, `deflate:` (see packing.ts). */
function repackedAsSchema3(type: string, data: Buffer): [string, Buffer] {
  const [plainType, plain] = unpacked(type, data);
  return type.startsWith("z:") ? [`deflate:${plainType}`, deflateRawSync(plain)] : [type, data];
}

/**
 * Turns a store of the current schema into one of schema 3 as that loopgraph wrote it: data
 * compressed without the dictionary (`deflate:`, batch flag 1), versions stored against the
 * parent naming its id, indexes of default fill.
 */
async function downgradeToSchema3(pool: pg.Pool): Promise<void> {
  const columns: [table: string, key: string, type: string, data: string][] = [
    ["loopgraph_checkpoints", "checkpoint_id", "checkpoint_type", "checkpoint"],
    ["loopgraph_checkpoints", "checkpoint_id", "metadata_type", "metadata"],
    ["loopgraph_checkpoint_blobs", "version || channel", "type", "data"],
    ["loopgraph_checkpoint_items", "channel || seq", "type", "data"],
    ["loopgraph_checkpoint_writes", "checkpoint_id || task_id || idx", "type", "value"],
  ];
  for (const [table, key, type, data] of columns) {
    const { rows } = await pool.query<{ key: string; type: string; data: Buffer | null }>(
      `SELECT ${key} AS key, ${type} AS type, ${data} AS data FROM ${table} WHERE ${data} IS NOT NULL`,
    );
    for (const row of rows) {
      let [newType, newData] = repackedAsSchema3(row.type, row.data!);
      // A batch of values (in a list version's row or a VALUES row): flag 2 (dictionary) becomes flag 1.
      if ((row.type === "lg:values" || row.type === "lg:items") && newData[0] === 2) {
        newData = Buffer.concat([Buffer.from([1]), deflateRawSync(inflateRawSync(newData.subarray(1), { dictionary: DICTIONARY }))]);
      }
      // The batches' types as schema 3 named them.
      if (newType === "lg:values") newType = "loopgraph:values";
      if (newType.endsWith("lg:writes")) newType = newType.replace("lg:writes", "loopgraph:writes");
      // An input's references: their JSON as it is.
      if (row.type === "loopgraph:object-refs") newData = Buffer.from(JSON.stringify(parseObjectRefs(newData)), "utf8");
      await pool.query(`UPDATE ${table} SET ${type} = $2, ${data} = $3 WHERE ${key} = $1`, [row.key, newType, newData]);
    }
  }
  await pool.query("UPDATE loopgraph_checkpoints SET versions_base = parent_checkpoint_id WHERE versions_base = ''");
  // Versions as a JSON object each (not in runs of the same version).
  const versions = await pool.query<{ thread_id: string; checkpoint_id: string; channel_versions: string }>(
    "SELECT thread_id, checkpoint_id, channel_versions FROM loopgraph_checkpoints",
  );
  for (const row of versions.rows) {
    const object = JSON.stringify(readVersions(JSON.stringify([row.channel_versions])));
    await pool.query("UPDATE loopgraph_checkpoints SET channel_versions = $3 WHERE thread_id = $1 AND checkpoint_id = $2", [
      row.thread_id,
      row.checkpoint_id,
      object,
    ]);
  }
  for (const table of [
    "loopgraph_checkpoints",
    "loopgraph_checkpoint_blobs",
    "loopgraph_checkpoint_items",
    "loopgraph_checkpoint_writes",
  ]) {
    await pool.query(`ALTER INDEX ${table}_pkey RESET (fillfactor)`);
  }
  await pool.query("UPDATE loopgraph_schema SET version = 3 WHERE part = 'checkpoints'");
}

describe("data compressed against the dictionary", () => {
  it("is read back byte for byte, a message's envelope taking a few bytes; the dictionary never changes (stored data depends on it)", () => {
    expect(createHash("sha256").update(DICTIONARY).digest("hex")).toBe("9465f3926fe5fe4e9d13dca321fbee495efb30018a94a2ea677f765005d322d5");
    const message = Buffer.from(
      '{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"content":"hi","id":"x","additional_kwargs":{},"response_metadata":{}}}',
    );
    const [type, data] = packed("json", message);
    expect(type).toBe("z:json");
    expect(data.length).toBeLessThan(24);
    expect(deflateRawSync(message).length).toBeGreaterThan(100);
    expect(unpacked(type, data)).toEqual(["json", message]);
    // Schema 3's rows (raw DEFLATE without the dictionary) read alike; data too small to gain is kept as it is.
    expect(unpacked("deflate:json", deflateRawSync(message))).toEqual(["json", message]);
    expect(packed("json", Buffer.from("null"))).toEqual(["json", Buffer.from("null")]);
  });
});

describe("channel versions against the checkpoint before", () => {
  it("are stored as the entries that changed while the chain is short enough, else whole", () => {
    const versions = { a: 2, b: 1, c: 1 };
    const base = (depth: number) => ({ checkpointId: "p", versions: { a: 1, b: 1, c: 1 }, depth });
    expect(storedVersions(versions, base(MAX_CHAIN - 1))).toEqual({ text: JSON.stringify({ a: 2 }), base: "p" });
    expect(storedVersions(versions, base(MAX_CHAIN))).toEqual({ text: JSON.stringify(versions), base: null });
    expect(
      readVersions(JSON.stringify([JSON.stringify({ a: 1, b: 1, c: 1 }), JSON.stringify({ c: 3 }), JSON.stringify({ a: 2 })])),
    ).toEqual({
      a: 2,
      b: 1,
      c: 3,
    });
    // Channels sharing a version are stored in runs when that is shorter, read alike, in order, beside objects.
    expect(versionsText({ x: 1.5, y: 1.5, z: 1.5, w: 2 })).toBe('[[1.5,"x","y","z"],[2,"w"]]');
    expect(versionsText({ x: 1.5, y: 2 })).toBe('{"x":1.5,"y":2}');
    const mixed = readVersions(JSON.stringify(['[[1.5,"x","y","z"],[2,"w"]]', '{"y":3}']));
    expect(Object.entries(mixed)).toEqual([
      ["x", 1.5],
      ["y", 3],
      ["z", 1.5],
      ["w", 2],
    ]);
  });
});

describe.skipIf(lacks("postgres", "the PostgreSQL saver tests"))("the PostgreSQL checkpoint saver", () => {
  beforeAll(async () => {
    server = await startPostgres();
  });

  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    server?.stop();
  });

  it("stores each message of a chat once, in the channel's item log, and reads every checkpoint back whole", async () => {
    const saver = await saverOn(newDatabase());
    const messages = await chat(saver, "t1", 20);
    expect(messages).toHaveLength(40);
    // 20 user messages and 20 replies, each once in the messages log.
    expect(
      await count(saver.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_items WHERE thread_id = 't1' AND channel = 'messages'"),
    ).toBe(40);
    const versions = await count(
      saver.pool,
      "SELECT count(*) AS n FROM loopgraph_checkpoint_blobs WHERE thread_id = 't1' AND channel = 'messages'",
    );
    expect(versions).toBeGreaterThanOrEqual(40);
    // The branch values a step sets beside a list version are held in its row: no row of their own.
    expect(
      await count(saver.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_blobs WHERE thread_id = 't1' AND channel LIKE 'branch:%'"),
    ).toBe(0);
    // Every stored version of the list reads back as the messages it held then.
    const history = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "t1" } })) history.push(tuple);
    const lengths = history.map((tuple) => (tuple.checkpoint.channel_values.messages as BaseMessage[] | undefined)?.length ?? 0);
    expect(lengths[0]).toBe(40);
    expect(lengths.at(-1)).toBe(0);
    expect(lengths).toEqual([...lengths].sort((a, b) => b - a));
    const latest = history[0]!.checkpoint.channel_values.messages as BaseMessage[];
    expect(latest.map((message) => JSON.stringify(message))).toEqual(messages.map((message) => JSON.stringify(message)));
  });

  it("reads back the list versions it holds (the last written) without reading their items again; another saver reads them", async () => {
    const url = newDatabase();
    const saver = await saverOn(url);
    const messages = await chat(saver, "t11", 3);
    const other = await saverOn(url);
    const itemRows = async (reader: PostgresCheckpointSaver) => {
      const query = reader.pool.query.bind(reader.pool);
      let items = 0;
      reader.pool.query = (async (...args: Parameters<typeof query>) => {
        const result = (await query(...args)) as unknown as pg.QueryResult<{ part?: number }>;
        items += result.rows.filter((row) => row.part === 2).length;
        return result;
      }) as typeof query;
      const tuple = await reader.getTuple({ configurable: { thread_id: "t11" } });
      reader.pool.query = query;
      expect(JSON.stringify(tuple!.checkpoint.channel_values.messages)).toBe(JSON.stringify(messages));
      return items;
    };
    expect(await itemRows(saver)).toBe(0);
    expect(await itemRows(other)).toBe(6);
  });

  it("a thread continued by another saver (another worker, no memory of it) appends to the same logs, each item still once", async () => {
    const url = newDatabase();
    const first = await saverOn(url);
    await chat(first, "t2", 5);
    const second = await saverOn(url);
    const messages = await chat(second, "t2", 5, 5);
    expect(messages).toHaveLength(20);
    expect(
      await count(second.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_items WHERE thread_id = 't2' AND channel = 'messages'"),
    ).toBe(20);
    const stored = (await first.getTuple({ configurable: { thread_id: "t2" } }))!.checkpoint.channel_values.messages as BaseMessage[];
    expect(stored.map((message) => message.content)).toEqual(messages.map((message) => message.content));
  });

  it("a saver whose view of an item log is stale (another one wrote the thread since) plans the write again from the database", async () => {
    const url = newDatabase();
    const a = await saverOn(url);
    const b = await saverOn(url);
    const config = { configurable: { thread_id: "t3", checkpoint_ns: "" } };
    const put = async (saver: PostgresCheckpointSaver, step: number, items: string[], parent?: string) => {
      const checkpoint = {
        v: 4,
        id: uuid6(step),
        ts: new Date().toISOString(),
        channel_values: { items },
        channel_versions: { items: step + 1 },
        versions_seen: {},
      };
      const written = await saver.put(
        parent ? { configurable: { ...config.configurable, checkpoint_id: parent } } : config,
        checkpoint,
        { source: "loop", step, parents: {} },
        { items: step + 1 },
      );
      return written.configurable!.checkpoint_id as string;
    };
    // b writes first: it knows the log ends at 1. a then appends "y" there.
    const one = await put(b, 0, ["x"]);
    const two = await put(a, 1, ["x", "y"], one);
    // b's view says the log ends at 1: its append collides with a's "y" and is planned again, from a's version.
    const three = await put(b, 2, ["x", "y", "z"], two);
    const tuple = await a.getTuple({ configurable: { thread_id: "t3", checkpoint_ns: "", checkpoint_id: three } });
    expect(tuple!.checkpoint.channel_values.items).toEqual(["x", "y", "z"]);
    expect(await count(a.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_items WHERE thread_id = 't3'")).toBe(3);
  });

  it("migrates once when several pools set up at the same time, and refuses a database of a newer loopgraph", async () => {
    const url = newDatabase();
    const savers = [1, 2, 3, 4].map(() => new PostgresCheckpointSaver(poolOn(url)));
    await Promise.all(savers.map((saver) => saver.setup()));
    const pool = savers[0]!.pool;
    expect((await pool.query("SELECT part, version FROM loopgraph_schema")).rows).toEqual([
      { part: "checkpoints", version: CHECKPOINT_MIGRATIONS.length },
    ]);
    await pool.query("UPDATE loopgraph_schema SET version = 99 WHERE part = 'checkpoints'");
    const refused = await migrate(pool, "checkpoints", CHECKPOINT_MIGRATIONS).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SchemaTooNewError);
    expect((refused as Error).message).toBe(
      `the database has checkpoints schema version 99, newer than this loopgraph understands (${CHECKPOINT_MIGRATIONS.length}): upgrade loopgraph`,
    );
  });

  it("stores a checkpoint's versions as those that differ from a base checkpoint's, and reads them back whole, in order", async () => {
    const saver = await saverOn(newDatabase());
    const written = new Map<string, string>();
    const put = saver.put.bind(saver);
    saver.put = (config, checkpoint, metadata, newVersions) => {
      written.set(checkpoint.id, JSON.stringify(checkpoint.channel_versions));
      return put(config, checkpoint, metadata, newVersions);
    };
    const graph = buildWide(saver);
    for (let turn = 0; turn < 8; turn++)
      await graph.invoke(turn === 0 ? allChannels() : { c0: turn }, { configurable: { thread_id: "t6" } });
    expect(written.size).toBe(24);
    const tuples = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "t6" } })) tuples.push(tuple);
    expect(tuples.map((tuple) => [tuple.checkpoint.id, JSON.stringify(tuple.checkpoint.channel_versions)])).toEqual([...written].reverse());
    const walked = [];
    for await (const entry of saver.history("t6")) walked.push([entry.checkpointId, JSON.stringify(entry.channelVersions)]);
    expect(walked).toEqual([...written]);
    const latest = tuples[0]!.checkpoint.channel_values;
    // The long value, stored compressed, reads back from its version, from the input and from the start task's write.
    expect(latest.c19).toBe(LONG);
    const input = tuples.at(-1)!;
    expect((input.checkpoint.channel_values.__start__ as Record<string, unknown>).c19).toBe(LONG);
    expect(input.pendingWrites!.find(([, channel]) => channel === "c19")?.[2]).toBe(LONG);
    // The values a step sets share its version and one row (see value-batch.ts): a row per version, many holding several.
    expect(await count(saver.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_blobs WHERE thread_id = 't6'")).toBe(
      await count(saver.pool, "SELECT count(DISTINCT version) AS n FROM loopgraph_checkpoint_blobs WHERE thread_id = 't6'"),
    );
    expect(
      await count(saver.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_blobs WHERE thread_id = 't6' AND type = 'lg:values'"),
    ).toBeGreaterThanOrEqual(8);
    // Each task's writes of a turn (the start task's two, the node's two) are one row, read back as the writes they hold.
    expect(await count(saver.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_writes WHERE thread_id = 't6'")).toBe(16);
    const stepped = tuples.find((tuple) => tuple.pendingWrites?.some(([, channel]) => channel === "c3"))!;
    expect(stepped.pendingWrites!.map(([, channel, value]) => [channel, value])).toEqual([
      ["c3", 1],
      ["c4", 1],
    ]);
    expect(await new PostgresCheckpointQueries(saver.pool).plainChannels("t6", ["c0", "c1", "c19"])).toEqual({
      c0: latest.c0,
      c1: latest.c1,
      c19: latest.c19,
    });
    // Most rows hold a few entries against a base; the column holds well under half what whole versions would.
    const stored = (
      await saver.pool.query<{ deltas: string; bytes: string }>(
        "SELECT count(versions_base) AS deltas, sum(length(channel_versions)) AS bytes FROM loopgraph_checkpoints WHERE thread_id = 't6'",
      )
    ).rows[0]!;
    expect(Number(stored.deltas)).toBeGreaterThan(12);
    // Versions are stored against the checkpoint written before (the parent), itself often a delta: chains, never longer than MAX_CHAIN.
    const chains = (
      await saver.pool.query<{ linked: string; longest: number }>(`WITH RECURSIVE chain AS (
        SELECT checkpoint_id AS start, ${BASE_ID} AS base, 0 AS depth FROM loopgraph_checkpoints WHERE thread_id = 't6'
        UNION ALL
        SELECT chain.start, ${BASE_ID.replaceAll("versions_base", "l.versions_base").replace("parent_checkpoint_id", "l.parent_checkpoint_id")}, chain.depth + 1 FROM chain
          JOIN loopgraph_checkpoints l ON l.thread_id = 't6' AND l.checkpoint_id = chain.base
      ) SELECT count(*) FILTER (WHERE depth >= 2) AS linked, max(depth) AS longest FROM chain`)
    ).rows[0]!;
    expect(Number(chains.linked)).toBeGreaterThan(0);
    expect(chains.longest).toBeLessThanOrEqual(MAX_CHAIN);
    expect(
      await count(
        saver.pool,
        // The base is the parent: stored as "" instead of its id again.
        `SELECT count(*) AS n FROM loopgraph_checkpoints WHERE thread_id = 't6' AND versions_base <> ''`,
      ),
    ).toBe(0);
    expect(Number(stored.bytes)).toBeLessThan(0.5 * [...written.values()].reduce((sum, text) => sum + text.length, 0));
  });

  it("stores versions whole when their base is gone (another process deleted the thread), and migrates stores of schemas 2 and 1", async () => {
    const url = newDatabase();
    const a = await saverOn(url);
    const b = await saverOn(url);
    const config = { configurable: { thread_id: "t7", checkpoint_ns: "" } };
    const put = (step: number, channel_versions: Record<string, number>, parent?: string) =>
      a.put(
        parent ? { configurable: { ...config.configurable, checkpoint_id: parent } } : config,
        { v: 4, id: uuid6(step), ts: new Date().toISOString(), channel_values: {}, channel_versions, versions_seen: {} },
        { source: "loop", step, parents: {} },
        {},
      );
    const first = await put(0, { x: 1, y: 1, z: 1 });
    await put(1, { x: 1, y: 1, z: 2 }, first.configurable!.checkpoint_id as string);
    await b.deleteThread("t7");
    // a still takes its first checkpoint for the base: the statement finds it gone and stores the versions whole.
    const third = await put(2, { x: 1, y: 1, z: 3 });
    await put(3, { x: 1, y: 1, z: 4 }, third.configurable!.checkpoint_id as string);
    const versions = [];
    for await (const tuple of b.list(config)) versions.push(tuple.checkpoint.channel_versions);
    expect(versions).toEqual([
      { x: 1, y: 1, z: 4 },
      { x: 1, y: 1, z: 3 },
    ]);
    const graph = buildWide(a);
    await graph.invoke(allChannels(), config);
    await graph.invoke({ c0: 1 }, config);
    const state = await graph.getState(config);
    // A store of schema version 2 (a row per channel version, keyed by channel first) is migrated by setup, read as before.
    const before = JSON.stringify(state.values);
    await downgradeToSchema2(a.pool);
    const c2 = await saverOn(url);
    expect(JSON.stringify((await buildWide(c2).getState(config)).values)).toBe(before);
    await buildWide(c2).invoke({ c0: 2 }, config);
    const continued = await buildWide(c2).getState(config);
    expect(continued.values.c0).toBe(2);
    // A store of schema version 1 (no versions_base, every row whole) is migrated by setup, its checkpoints read as before.
    const before1 = JSON.stringify(continued.values);
    await downgradeToSchema2(a.pool);
    const chains = await a.pool.query<{ thread_id: string; checkpoint_id: string; chain: string }>(
      `SELECT thread_id, checkpoint_id, ${versionsChain("c", "c.thread_id", "c.checkpoint_ns")} AS chain FROM loopgraph_checkpoints c`,
    );
    for (const row of chains.rows) {
      await a.pool.query("UPDATE loopgraph_checkpoints SET channel_versions = $3 WHERE thread_id = $1 AND checkpoint_id = $2", [
        row.thread_id,
        row.checkpoint_id,
        JSON.stringify(readVersions(row.chain)),
      ]);
    }
    await a.pool.query("ALTER TABLE loopgraph_checkpoints DROP COLUMN versions_base");
    await a.pool.query("UPDATE loopgraph_schema SET version = 1 WHERE part = 'checkpoints'");
    const c = await saverOn(url);
    expect((await c.pool.query("SELECT version FROM loopgraph_schema WHERE part = 'checkpoints'")).rows[0].version).toBe(
      CHECKPOINT_MIGRATIONS.length,
    );
    expect(JSON.stringify((await buildWide(c).getState(config)).values)).toBe(before1);
    await buildWide(c).invoke({ c0: 4 }, config);
    expect((await buildWide(c).getState(config)).values.c0).toBe(4);
  });

  it("migrates a store of schema 3 (compressed without the dictionary, bases naming the parent), read and continued as before", async () => {
    const url = newDatabase();
    const a = await saverOn(url);
    const chatConfig = { configurable: { thread_id: "t3-chat" } };
    const wideConfig = { configurable: { thread_id: "t3-wide" } };
    await chat(a, "t3-chat", 3);
    const wide = buildWide(a);
    await wide.invoke(allChannels(), wideConfig);
    for (let turn = 1; turn < 4; turn++) await wide.invoke({ c0: turn }, wideConfig);
    const chatBefore = JSON.stringify((await buildChat(a).getState(chatConfig)).values);
    const wideBefore = JSON.stringify((await buildWide(a).getState(wideConfig)).values);
    const historyBefore: string[] = [];
    for await (const tuple of a.list(wideConfig))
      historyBefore.push(JSON.stringify([tuple.checkpoint, tuple.metadata, tuple.pendingWrites]));
    await downgradeToSchema3(a.pool);
    // The store holds schema 3's kinds of rows only.
    const kinds = await count(
      a.pool,
      `SELECT (SELECT count(*) FROM loopgraph_checkpoints WHERE checkpoint_type LIKE 'z:%' OR metadata_type LIKE 'z:%' OR versions_base = '')
            + (SELECT count(*) FROM loopgraph_checkpoints WHERE channel_versions LIKE '[%')
            + (SELECT count(*) FROM loopgraph_checkpoint_blobs WHERE type = 'loopgraph:object-refs' AND get_byte(data, 0) = 0)
            + (SELECT count(*) FROM loopgraph_checkpoint_blobs WHERE type = 'lg:values')
            + (SELECT count(*) FROM loopgraph_checkpoint_writes WHERE type LIKE '%lg:writes')
            + (SELECT count(*) FROM loopgraph_checkpoint_items WHERE type LIKE 'z:%')
            + (SELECT count(*) FROM loopgraph_checkpoint_writes WHERE type LIKE 'z:%') AS n`,
    );
    expect(kinds).toBe(0);
    expect(await count(a.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_items WHERE type LIKE 'deflate:%'")).toBeGreaterThan(0);
    expect(await count(a.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_blobs WHERE type = 'loopgraph:values'")).toBeGreaterThan(0);
    expect(
      await count(a.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_writes WHERE type LIKE '%loopgraph:writes'"),
    ).toBeGreaterThan(0);
    expect(
      await count(a.pool, "SELECT count(*) AS n FROM loopgraph_checkpoints WHERE versions_base = parent_checkpoint_id"),
    ).toBeGreaterThan(0);
    const b = await saverOn(url);
    expect((await b.pool.query("SELECT version FROM loopgraph_schema WHERE part = 'checkpoints'")).rows[0].version).toBe(4);
    const fill = await b.pool.query<{ relname: string; reloptions: string[] }>(
      "SELECT relname, reloptions FROM pg_class WHERE relname LIKE 'loopgraph_checkpoint%_pkey' ORDER BY relname",
    );
    expect(fill.rows.map((row) => row.reloptions)).toEqual(Array(4).fill(["fillfactor=100"]));
    expect(JSON.stringify((await buildChat(b).getState(chatConfig)).values)).toBe(chatBefore);
    expect(JSON.stringify((await buildWide(b).getState(wideConfig)).values)).toBe(wideBefore);
    const historyAfter: string[] = [];
    for await (const tuple of b.list(wideConfig))
      historyAfter.push(JSON.stringify([tuple.checkpoint, tuple.metadata, tuple.pendingWrites]));
    expect(historyAfter).toEqual(historyBefore);
    // Continued: new rows in the new format beside the old ones.
    const messages = await chat(b, "t3-chat", 1, 3);
    expect(messages.map((message) => message.content)).toEqual([
      turnText(0),
      "reply to: turn 0: lorem ipsum lorem ipsu",
      turnText(1),
      "reply to: turn 1: lorem ipsum lorem ipsu",
      turnText(2),
      "reply to: turn 2: lorem ipsum lorem ipsu",
      turnText(3),
      "reply to: turn 3: lorem ipsum lorem ipsu",
    ]);
    await buildWide(b).invoke({ c0: 9 }, wideConfig);
    expect((await buildWide(b).getState(wideConfig)).values.c0).toBe(9);
    // The saver that wrote schema 3's rows stores its next versions against one of them (a chain of both kinds), read alike.
    await buildWide(a).invoke({ c0: 10 }, wideConfig);
    const mixed = await b.pool.query<{ chain: string }>(
      `SELECT ${versionsChain("c", "c.thread_id", "c.checkpoint_ns")} AS chain FROM loopgraph_checkpoints c
       WHERE thread_id = 't3-wide' ORDER BY checkpoint_id DESC LIMIT 1`,
    );
    const links = JSON.parse(mixed.rows[0]!.chain) as string[];
    expect(links.some((link) => link.startsWith("{")) && links.some((link) => link.startsWith("[["))).toBe(true);
    const last = await buildWide(b).getState(wideConfig);
    expect(last.values.c0).toBe(10);
    expect(Object.keys(last.values).sort()).toEqual(Object.keys(JSON.parse(wideBefore)).sort());
    expect(await count(b.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_items WHERE type LIKE 'z:%'")).toBeGreaterThan(0);
    expect(await count(b.pool, "SELECT count(*) AS n FROM loopgraph_checkpoints WHERE versions_base = ''")).toBeGreaterThan(0);
    expect(await count(b.pool, "SELECT count(*) AS n FROM loopgraph_checkpoints WHERE channel_versions LIKE '[[%'")).toBeGreaterThan(0);
    expect(
      await count(
        b.pool,
        "SELECT count(*) AS n FROM loopgraph_checkpoint_blobs WHERE type = 'loopgraph:object-refs' AND get_byte(data, 0) = 0",
      ),
    ).toBeGreaterThan(0);
  });

  it("stores a message once whole for the input, the task's write and the list, which refer to it; a fork reads its own branch", async () => {
    const saver = await saverOn(newDatabase());
    const config = { configurable: { thread_id: "t8" } };
    const messages = await chat(saver, "t8", 6);
    // 6 inputs and 6 replies, each whole once in a write log (compressed: packing.ts); the list holds references to them.
    const kinds = await saver.pool.query<{ log: string; type: string; n: string }>(
      "SELECT channel AS log, type, count(*) AS n FROM loopgraph_checkpoint_items WHERE thread_id = 't8' GROUP BY 1, 2 ORDER BY 1, 2",
    );
    expect(kinds.rows.map((row) => [row.log, row.type, Number(row.n)])).toEqual([
      ["__writes__:messages", "z:json", 12],
      ["messages", "lg:ref", 12],
    ]);
    const tuples = [];
    for await (const tuple of saver.list(config)) tuples.push(tuple);
    const inputs = tuples.filter((tuple) => tuple.metadata?.source === "input").reverse();
    expect(inputs).toHaveLength(6);
    inputs.forEach((tuple, turn) => {
      const input = tuple.checkpoint.channel_values.__start__ as { messages: BaseMessage[] };
      expect(input.messages.map((message) => [message.constructor.name, message.content])).toEqual([["HumanMessage", turnText(turn)]]);
      const written = tuple.pendingWrites!.find(([, channel]) => channel === "messages")![2] as BaseMessage[];
      expect(written.map((message) => message.content)).toEqual([turnText(turn)]);
    });
    expect(JSON.stringify((await saver.getTuple(config))!.checkpoint.channel_values.messages)).toBe(JSON.stringify(messages));
    // A fork from the third turn's input (whose own input it replaces): its branch holds the first two turns, then its own.
    const graph = buildChat(saver);
    const forked = await graph.invoke(
      { messages: [new HumanMessage("a fork")] },
      { configurable: { thread_id: "t8", checkpoint_id: inputs[2]!.config.configurable!.checkpoint_id } },
    );
    expect(forked.messages.map((message: BaseMessage) => message.content)).toEqual([
      ...messages.slice(0, 4).map((message) => message.content),
      "a fork",
      "reply to: a fork",
    ]);
    const original = (await saver.getTuple({ configurable: { ...config.configurable, checkpoint_id: tuples[0]!.checkpoint.id } }))!;
    expect(JSON.stringify(original.checkpoint.channel_values.messages)).toBe(JSON.stringify(messages));
    // Deleting the thread removes all its rows, and no other thread's.
    await chat(saver, "t9", 1);
    await saver.deleteThread("t8");
    const left = await saver.pool.query<{ thread_id: string }>(
      `SELECT thread_id FROM loopgraph_checkpoints UNION SELECT thread_id FROM loopgraph_checkpoint_blobs
       UNION SELECT thread_id FROM loopgraph_checkpoint_items UNION SELECT thread_id FROM loopgraph_checkpoint_writes`,
    );
    expect(left.rows.map((row) => row.thread_id)).toEqual(["t9"]);
  });

  it("stores a write whole when the logged items it would refer to are gone (another process deleted the thread)", async () => {
    const url = newDatabase();
    const a = await saverOn(url);
    const b = await saverOn(url);
    const config = { configurable: { thread_id: "t10", checkpoint_ns: "" } };
    const message = new HumanMessage("hello");
    const input = {
      v: 4,
      id: uuid6(0),
      ts: new Date().toISOString(),
      channel_values: { __start__: { messages: [message] } },
      channel_versions: { __start__: 1 },
      versions_seen: {},
    };
    const written = await a.put(config, input, { source: "input", step: -1, parents: {} }, { __start__: 1 });
    expect(await count(a.pool, "SELECT count(*) AS n FROM loopgraph_checkpoint_items WHERE thread_id = 't10'")).toBe(1);
    await b.deleteThread("t10");
    await a.put(config, input, { source: "input", step: -1, parents: {} }, {});
    await a.putWrites(written, [["messages", [message]]], "task");
    const tuple = (await b.getTuple(written))!;
    expect(tuple.pendingWrites!.map(([, channel, value]) => [channel, (value as BaseMessage[]).map((item) => item.content)])).toEqual([
      ["messages", ["hello"]],
    ]);
  });

  it("stores a checkpoint's header and metadata compressed when that pays, and reads them back in every read", async () => {
    const saver = await saverOn(newDatabase());
    const config = { configurable: { thread_id: "t9", checkpoint_ns: "" } };
    const note = "a note long enough to compress ".repeat(8);
    const seen = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`node${i}`, { [`c${i}`]: i + 1 }]));
    const id = uuid6(0);
    await saver.put(
      config,
      { v: 4, id, ts: new Date().toISOString(), channel_values: {}, channel_versions: {}, versions_seen: seen },
      { source: "input", step: -1, parents: {}, note } as CheckpointMetadata,
      {},
    );
    const { rows } = await saver.pool.query("SELECT checkpoint_type, metadata_type FROM loopgraph_checkpoints WHERE thread_id = 't9'");
    expect(rows).toEqual([{ checkpoint_type: "z:json", metadata_type: "z:json" }]);
    const tuple = await saver.getTuple(config);
    expect(tuple?.checkpoint.versions_seen).toEqual(seen);
    expect((tuple?.metadata as Record<string, unknown>).note).toBe(note);
    const listed = [];
    for await (const found of saver.list(config, { filter: { note } })) listed.push(found.checkpoint.id);
    expect(listed).toEqual([id]);
    const walked = [];
    for await (const entry of saver.history("t9")) walked.push((entry.metadata as Record<string, unknown> | undefined)?.note);
    expect(walked).toEqual([note]);
  });

  it("orders checkpoints by the bytes of their ids, whatever the database's collation", async () => {
    const saver = await saverOn(newDatabase());
    const config = { configurable: { thread_id: "t5", checkpoint_ns: "" } };
    // In most locales '-' is ignored when sorting text: "a-c" would sort after "ab".
    for (const id of ["ab", "a-c"]) {
      const checkpoint = { v: 4, id, ts: new Date().toISOString(), channel_values: {}, channel_versions: {}, versions_seen: {} };
      await saver.put(config, checkpoint, { source: "loop", step: 0, parents: {} }, {});
    }
    expect((await saver.getTuple(config))!.checkpoint.id).toBe("ab");
  });
});
