/**
 * The PostgreSQL saver's own format and its life among several processes, on a throwaway server
 * (tests/helpers/postgres.ts): each list item stored once, a thread continued by a saver that did
 * not write it (another worker), a stale view of an item log planned again, migrations run at
 * once from several pools, and a database of a newer loopgraph refused.
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresCheckpointSaver } from "../src/store/postgres/saver.js";
import { CHECKPOINT_MIGRATIONS, migrate, SchemaTooNewError } from "../src/store/postgres/schema.js";
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

async function chat(saver: PostgresCheckpointSaver, threadId: string, turns: number, first = 0): Promise<BaseMessage[]> {
  const graph = buildChat(saver);
  let messages: BaseMessage[] = [];
  for (let turn = first; turn < first + turns; turn++) {
    ({ messages } = await graph.invoke(
      { messages: [new HumanMessage(`turn ${turn}: ${"lorem ipsum ".repeat(8)}`)] },
      { configurable: { thread_id: threadId } },
    ));
  }
  return messages;
}

async function count(pool: pg.Pool, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(sql, params);
  return Number(rows[0]!.n);
}

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
      "the database has checkpoints schema version 99, newer than this loopgraph understands (1): upgrade loopgraph",
    );
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
