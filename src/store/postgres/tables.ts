import type pg from "pg";
import { ConfigError } from "../../errors.js";
import type { StoreAccess, StoreTables } from "../../runs/tables.js";
import { withoutPassword } from "../../runs/url-password.js";
import { PostgresCheckpointQueries } from "./checkpoint-queries.js";
import { openPostgresPool, postgresError } from "./connection.js";
import { PostgresEvals } from "./evals.js";
import { PostgresInbox } from "./inbox.js";
import { PostgresRepoWorkspaces } from "./repo-workspaces.js";
import { CHECKPOINT_MIGRATIONS, migrate, schemaVersions, type Migration } from "./schema.js";
import { PostgresThreadRegistry } from "./threads.js";

/**
 * The run tables on PostgreSQL, beside the checkpoint saver's (postgres-schema.ts): the same
 * columns as a SQLite store's, so one row mapping serves both. Times are ISO text, as there.
 */
export const RUN_MIGRATIONS: readonly Migration[] = [
  [
    `CREATE TABLE loopgraph_threads (
      thread_id text COLLATE "C" PRIMARY KEY,
      graph_file text NOT NULL,
      graph_hash text,
      graph_name text NOT NULL,
      task text NOT NULL,
      model text,
      approval text NOT NULL,
      workspace text NOT NULL,
      status text NOT NULL,
      pid integer,
      owner_host text,
      owner_start bigint,
      heartbeat_at text,
      command_groups text,
      error text,
      pause text,
      created_at text NOT NULL,
      updated_at text NOT NULL
    )`,
    `CREATE TABLE loopgraph_inbox (
      id bigserial PRIMARY KEY,
      thread_id text COLLATE "C" NOT NULL,
      text text NOT NULL,
      command text NOT NULL,
      created_at text NOT NULL
    )`,
    `CREATE INDEX loopgraph_inbox_thread ON loopgraph_inbox (thread_id, id)`,
    `CREATE TABLE loopgraph_recordings (
      id bigserial PRIMARY KEY,
      thread_id text COLLATE "C" NOT NULL,
      checkpoint_id text COLLATE "C" NOT NULL,
      task_path text COLLATE "C" NOT NULL,
      call_index integer NOT NULL,
      node text NOT NULL,
      kind text NOT NULL,
      name text,
      data text NOT NULL,
      created_at text NOT NULL,
      UNIQUE (thread_id, task_path, call_index)
    )`,
    `CREATE INDEX loopgraph_recordings_thread ON loopgraph_recordings (thread_id, id)`,
    `CREATE TABLE loopgraph_snapshots (
      thread_id text COLLATE "C" NOT NULL,
      seq integer NOT NULL,
      checkpoint_ns text COLLATE "C" NOT NULL,
      checkpoint_id text COLLATE "C" NOT NULL,
      checkpoint_map text NOT NULL,
      node text NOT NULL,
      tool text NOT NULL,
      tool_call_id text NOT NULL,
      tree_before text NOT NULL,
      tree_after text,
      paths text,
      created_at text NOT NULL,
      PRIMARY KEY (thread_id, seq)
    )`,
  ],
  [
    `CREATE TABLE loopgraph_repo_workspaces (
      thread_id text COLLATE "C" PRIMARY KEY,
      repo text NOT NULL,
      ref text NOT NULL,
      commit text NOT NULL,
      base_tree text,
      tree text,
      patch bytea,
      result text,
      updated_at text NOT NULL
    )`,
  ],
  [`ALTER TABLE loopgraph_threads ADD COLUMN mode text`],
  [
    `CREATE TABLE loopgraph_evals (
      eval_id text COLLATE "C" PRIMARY KEY,
      suite_file text NOT NULL,
      suite_name text NOT NULL,
      suite_hash text NOT NULL,
      variants text NOT NULL,
      tasks text NOT NULL,
      repeat integer NOT NULL,
      concurrency integer NOT NULL,
      status text NOT NULL,
      created_at text NOT NULL,
      updated_at text NOT NULL
    )`,
    `CREATE TABLE loopgraph_eval_trials (
      eval_id text COLLATE "C" NOT NULL,
      seq integer NOT NULL,
      task text NOT NULL,
      variant text NOT NULL,
      repetition integer NOT NULL,
      thread_id text COLLATE "C" NOT NULL UNIQUE,
      result text,
      PRIMARY KEY (eval_id, seq),
      UNIQUE (eval_id, task, variant, repetition)
    )`,
  ],
];

/** A PostgreSQL store's tables, and the pool they (and the store's saver) use. */
export interface PostgresTables extends StoreTables {
  pool: pg.Pool;
}

/**
 * Connects to the database a `postgres://` URL names and opens its run tables: a writer creates
 * or upgrades the schema (under the migrations' lock, safe from several processes at once); a
 * reader needs a store there already. Errors are one line (exit 2), the URL shown without its password.
 */
export async function openPostgresTables(url: string, access: StoreAccess, env: NodeJS.ProcessEnv): Promise<PostgresTables> {
  const path = withoutPassword(url);
  const pool = await openPostgresPool(url, env);
  try {
    const versions = await schemaVersions(pool);
    if (access !== "create" && !versions.has("runs")) {
      throw new ConfigError(`no loopgraph store in ${path}: run a graph with --db pointing at it first`);
    }
    // A database at this loopgraph's versions is used as it is; another is migrated (or refused when newer) under the lock.
    if (versions.get("checkpoints") !== CHECKPOINT_MIGRATIONS.length) await migrate(pool, "checkpoints", CHECKPOINT_MIGRATIONS);
    if (versions.get("runs") !== RUN_MIGRATIONS.length) await migrate(pool, "runs", RUN_MIGRATIONS);
    const threads = new PostgresThreadRegistry(pool);
    return {
      path,
      pool,
      threads,
      inbox: new PostgresInbox(pool),
      evals: new PostgresEvals(pool),
      repoWorkspaces: new PostgresRepoWorkspaces(pool),
      checkpoints: new PostgresCheckpointQueries(pool),
      close: async () => {
        threads.close();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw postgresError(url, error);
  }
}
