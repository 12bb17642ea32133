/**
 * A SQLite store: one file, opened checked (see `openDatabase`), holding the run tables and the
 * checkpoints (see saver.ts).
 */
import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync, type Stats } from "node:fs";
import { basename, dirname } from "node:path";
import Database from "better-sqlite3";
import { ConfigError } from "../../errors.js";
import { STATE_DIR } from "../../project.js";
import { ensureStateDir } from "../../runs/state-dir.js";
import type { StoreAccess, StoreTables } from "../../runs/tables.js";
import { SqliteCheckpointQueries } from "./checkpoint-queries.js";
import { busyTimeoutMs } from "./checkpoint-schema.js";
import { readOnly, sqliteStoreError } from "./errors.js";
import { SqliteEvals } from "./evals.js";
import { Inbox } from "./inbox.js";
import { foreignNamedTable, migrate, schemaObjects, schemaVersion, STORE_VERSION } from "./schema.js";
import { ThreadRegistry } from "./threads.js";

/** The tables of a SQLite store, on its open file. */
export interface SqliteTables extends StoreTables {
  db: Database.Database;
}

export function openSqliteTables(path: string, access: StoreAccess, env: NodeJS.ProcessEnv): SqliteTables {
  const db = openDatabase(path, access, env);
  try {
    const threads = new ThreadRegistry(db);
    return {
      path,
      db,
      threads,
      inbox: new Inbox(db),
      evals: new SqliteEvals(db),
      checkpoints: new SqliteCheckpointQueries(db),
      close: async () => {
        threads.close();
        db.close();
      },
    };
  } catch (error) {
    db.close();
    throw oneLineError(path, error, env);
  }
}

/**
 * Opens the SQLite file of a store, checked: it is a file, a SQLite database, loopgraph's (or
 * empty), of a schema version this loopgraph understands. A writer switches it to WAL and
 * migrates it; a reader changes nothing, and reads an older store through a migrated copy in
 * memory.
 */
export function openDatabase(path: string, access: StoreAccess, env: NodeJS.ProcessEnv): Database.Database {
  const file = statOrUndefined(path);
  if (file?.isDirectory()) throw new ConfigError(`${path} is a directory, not a store: give the store's file with --db`);
  if (!file) {
    if (access !== "create") throw new ConfigError(`no store at ${path}: run a graph first, or give the store with --db (or LOOPGRAPH_DB)`);
    try {
      if (basename(dirname(path)) === STATE_DIR) ensureStateDir(dirname(path));
      else mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      throw new ConfigError(`cannot create the store ${path}: ${(error as Error).message}`);
    }
  } else if (access !== "read" && !writable(path)) {
    throw readOnly(path);
  }
  let db: Database.Database | undefined;
  try {
    db = access === "read" ? openReader(path) : new Database(path, { fileMustExist: access !== "create" });
    db.pragma(`busy_timeout = ${busyTimeoutMs(env)}`);
    checkSchema(path, db);
    if (access === "read") {
      if (schemaVersion(db) === STORE_VERSION) return db;
      const copy = inMemory(db.serialize());
      db.close();
      db = copy;
      migrate(copy);
      return copy;
    }
    db.pragma("journal_mode = WAL");
    // Durable across a crash of the process; a power cut may roll back the last commits (see docs/architecture.md).
    db.pragma("synchronous = NORMAL");
    const database = db;
    database
      .transaction(() => {
        checkSchema(path, database);
        migrate(database);
      })
      .immediate();
    return db;
  } catch (error) {
    db?.close();
    throw oneLineError(path, error, env);
  }
}

/**
 * The store opened read-only. A WAL store (every store a run wrote) needs its shared-memory index
 * beside it, which SQLite cannot create in a folder this process may not write: the store is then
 * read from a copy in memory, unless a WAL file beside it holds commits the copy would miss.
 */
function openReader(path: string, afterRollback = false): Database.Database {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    // The first read opens the WAL index.
    db.prepare("SELECT count(*) FROM sqlite_master").get();
    return db;
  } catch (error) {
    db.close();
    const code = (error as { code?: unknown }).code;
    if (code === "SQLITE_READONLY_ROLLBACK" && !afterRollback && writable(path)) return openReader(rolledBack(path), true);
    if (code !== "SQLITE_READONLY_DIRECTORY" || existsSync(`${path}-wal`)) throw error;
    return inMemory(readFileSync(path));
  }
}

/**
 * A store whose writer was killed in the middle of a write outside the WAL (the switch to WAL as
 * the store is made) keeps a journal that must be rolled back before anything reads it, which a
 * read-only connection cannot do: SQLite does it on the first read of a writable one, as a writer
 * opening the store would (the store is left as it was before that write).
 */
function rolledBack(path: string): string {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.prepare("SELECT count(*) FROM sqlite_master").get();
  } finally {
    db.close();
  }
  return path;
}

/** A database in memory made of a store's image. */
function inMemory(image: Buffer): Database.Database {
  // A WAL store's image says so in its header (bytes 18 and 19 are 2), which a database in
  // memory cannot open: the copy is marked a rollback-journal database (1) instead.
  image[18] = 1;
  image[19] = 1;
  return new Database(image);
}

function checkSchema(path: string, db: Database.Database): void {
  const { ours, others } = schemaObjects(db);
  if (ours === 0 && others.length > 0) {
    throw new ConfigError(`${path} is not a loopgraph store (it has other tables): give the store's file with --db (or LOOPGRAPH_DB)`);
  }
  const version = schemaVersion(db);
  if (version > STORE_VERSION) {
    throw new ConfigError(
      `${path} has store schema version ${version}, newer than this loopgraph understands (${STORE_VERSION}): upgrade loopgraph to use it`,
    );
  }
  // Before anything is created or migrated: a table of another program's that bears loopgraph's
  // name is never written to (a newer loopgraph's tables may differ: the version said so first).
  const foreign = foreignNamedTable(db);
  if (foreign)
    throw new ConfigError(
      `${path} is not a loopgraph store (its table ${foreign} is another program's): give the store's file with --db (or LOOPGRAPH_DB)`,
    );
}

/** Whether this process may write `path` (a file or a folder). */
export function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw error;
  }
}

/** A failure of the store at `path` in one line (exit 2) when SQLite's, else as it is. */
function oneLineError(path: string, error: unknown, env: NodeJS.ProcessEnv): unknown {
  return error instanceof ConfigError ? error : (sqliteStoreError(path, error, env) ?? error);
}
