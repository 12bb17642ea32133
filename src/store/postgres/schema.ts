import type pg from "pg";

/**
 * Versioned schema migrations on PostgreSQL. Each part of the store (the checkpoint saver's
 * tables, the run tables) has its own ordered list of migrations and its version in
 * `loopgraph_schema`; `migrate` applies the missing ones in one transaction, under an advisory
 * lock, so workers starting together neither race nor half-apply. A database whose version is
 * newer than this loopgraph knows is refused (it would misread the tables).
 */

/** One migration: statements run in order, in the migrating transaction. */
export type Migration = readonly string[];

/** Key of the advisory lock taken while migrating (any fixed number no other program of the database uses). */
const MIGRATION_LOCK = 7_304_113_921;

export class SchemaTooNewError extends Error {
  constructor(
    readonly part: string,
    readonly version: number,
    readonly known: number,
  ) {
    super(`the database has ${part} schema version ${version}, newer than this loopgraph understands (${known}): upgrade loopgraph`);
    this.name = "SchemaTooNewError";
  }
}

/** Runs `work` in a transaction on one connection of the pool: committed when it resolves, rolled back when it throws. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no pool listener: the server going away between two statements
  // (`pg_ctl stop`) would be an unhandled 'error' event, ending the process. The next statement
  // fails with it instead, and the broken client is destroyed, not put back in the pool.
  let broken: Error | undefined;
  const onError = (error: Error) => (broken = error);
  client.on("error", onError);
  try {
    await client.query("BEGIN");
    try {
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

/**
 * Runs `work` in a transaction holding the migrations' lock: one process at a time changes the
 * database's schema (loopgraph's tables, the run queue's).
 */
export function underMigrationLock<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    return work(client);
  });
}

/** Applies the migrations of `part` the database lacks; returns the version it is at. */
export function migrate(pool: pg.Pool, part: string, migrations: readonly Migration[]): Promise<number> {
  return underMigrationLock(pool, async (client) => {
    await client.query(`CREATE TABLE IF NOT EXISTS loopgraph_schema (part text COLLATE "C" PRIMARY KEY, version integer NOT NULL)`);
    const row = (await client.query<{ version: number }>("SELECT version FROM loopgraph_schema WHERE part = $1", [part])).rows[0];
    const current = row?.version ?? 0;
    if (current > migrations.length) throw new SchemaTooNewError(part, current, migrations.length);
    for (let version = current + 1; version <= migrations.length; version++) {
      for (const statement of migrations[version - 1]!) await client.query(statement);
    }
    if (current < migrations.length) {
      await client.query(
        "INSERT INTO loopgraph_schema (part, version) VALUES ($1, $2) ON CONFLICT (part) DO UPDATE SET version = EXCLUDED.version",
        [part, migrations.length],
      );
    }
    return migrations.length;
  });
}

/**
 * The schema version of each part of the store, in one read without a lock (empty: no loopgraph
 * schema in the database). Lets a command that finds the database current skip `migrate`'s
 * locked transaction.
 */
export async function schemaVersions(pool: pg.Pool): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ found: string | null }>("SELECT to_regclass('loopgraph_schema')::text AS found");
  if (rows[0]?.found === null || rows[0]?.found === undefined) return new Map();
  const versions = await pool.query<{ part: string; version: number }>("SELECT part, version FROM loopgraph_schema");
  return new Map(versions.rows.map((row) => [row.part, row.version]));
}

/**
 * The checkpoint saver's tables (see postgres-saver.ts). Keys are text in the "C" collation:
 * checkpoint ids sort by their bytes, as LangGraph's own savers sort them, whatever the
 * database's locale.
 */
export const CHECKPOINT_MIGRATIONS: readonly Migration[] = [
  [
    `CREATE TABLE loopgraph_checkpoints (
      thread_id text COLLATE "C" NOT NULL,
      checkpoint_ns text COLLATE "C" NOT NULL DEFAULT '',
      checkpoint_id text COLLATE "C" NOT NULL,
      parent_checkpoint_id text COLLATE "C",
      checkpoint_type text NOT NULL,
      checkpoint bytea NOT NULL,
      channel_versions text NOT NULL,
      metadata_type text NOT NULL,
      metadata bytea NOT NULL,
      PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    )`,
    // A channel version: a value (type and data), or a list version (type 'lg:items') as the
    // ranges of its items in the channel's item log (JSON [[start, end], ...]).
    `CREATE TABLE loopgraph_checkpoint_blobs (
      thread_id text COLLATE "C" NOT NULL,
      checkpoint_ns text COLLATE "C" NOT NULL DEFAULT '',
      channel text COLLATE "C" NOT NULL,
      version text COLLATE "C" NOT NULL,
      type text NOT NULL,
      data bytea,
      ranges text,
      PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
    )`,
    // Every item of a list channel once, in the order they came.
    `CREATE TABLE loopgraph_checkpoint_items (
      thread_id text COLLATE "C" NOT NULL,
      checkpoint_ns text COLLATE "C" NOT NULL DEFAULT '',
      channel text COLLATE "C" NOT NULL,
      seq integer NOT NULL,
      type text NOT NULL,
      data bytea NOT NULL,
      PRIMARY KEY (thread_id, checkpoint_ns, channel, seq)
    )`,
    `CREATE TABLE loopgraph_checkpoint_writes (
      thread_id text COLLATE "C" NOT NULL,
      checkpoint_ns text COLLATE "C" NOT NULL DEFAULT '',
      checkpoint_id text COLLATE "C" NOT NULL,
      task_id text COLLATE "C" NOT NULL,
      task_path text COLLATE "C" NOT NULL DEFAULT '',
      idx integer NOT NULL,
      channel text NOT NULL,
      type text NOT NULL,
      value bytea NOT NULL,
      PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    )`,
  ],
  // A checkpoint's channel_versions may hold only the entries that differ from those of the
  // checkpoint `versions_base` names, whose own are whole (see versions.ts). Rows before: whole.
  [`ALTER TABLE loopgraph_checkpoints ADD COLUMN versions_base text COLLATE "C"`],
  // A step's rows keyed by their version first: a row may hold the values of several channels at
  // its version (see value-batch.ts). Rows before: one channel each, read alike.
  [
    `ALTER TABLE loopgraph_checkpoint_blobs DROP CONSTRAINT loopgraph_checkpoint_blobs_pkey,
       ADD PRIMARY KEY (thread_id, checkpoint_ns, version, channel)`,
  ],
  // Rows a loopgraph of schema 3 cannot read, rows before read alike: data compressed against a
  // dictionary (packing.ts: type prefix `z:`, batch flag 2, an input's references behind a 0
  // byte), versions in runs of one version and a base that is the parent as '' (versions.ts).
  // The keys' indexes fill their pages:
  // a thread's rows are appended at the end of its keys (ids and versions grow), so pages left 10%
  // free for inserts in between (the default) would stay so. Pages split from now on fill up.
  [
    "ALTER INDEX loopgraph_checkpoints_pkey SET (fillfactor = 100)",
    "ALTER INDEX loopgraph_checkpoint_blobs_pkey SET (fillfactor = 100)",
    "ALTER INDEX loopgraph_checkpoint_items_pkey SET (fillfactor = 100)",
    "ALTER INDEX loopgraph_checkpoint_writes_pkey SET (fillfactor = 100)",
  ],
];
