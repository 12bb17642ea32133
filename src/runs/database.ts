import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync, type Stats } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { busyTimeoutMs } from "../checkpoint/schema.js";
import { ConfigError } from "../errors.js";
import { SqliteCheckpointQueries } from "./checkpoint-ids.js";
import type { StoreAccess, StoreTables } from "./tables.js";
import { Inbox } from "./inbox.js";
import { isConnectionLost, lostReason, StoreUnreachableError } from "./postgres-outage.js";
import { isDatabaseUrl, isPostgresUrl, withoutPassword } from "./url-password.js";
import { defaultStorePath, STATE_DIR } from "../project.js";
import { ensureStateDir } from "./state-dir.js";
import { ThreadRegistry, type ThreadRecord } from "./thread-registry.js";

export type { StoreAccess, StoreTables } from "./tables.js";
import { foreignNamedTable, migrate, schemaObjects, schemaVersion, STORE_VERSION } from "./schema.js";

/** The tables of a SQLite store, on its open file. */
export interface SqliteTables extends StoreTables {
  kind: "sqlite";
  db: Database.Database;
}

/**
 * Where the store is: `--db`, else LOOPGRAPH_DB, else `.loopgraph/loopgraph.db` under the current
 * directory. A `postgres://` (or `postgresql://`) URL names a PostgreSQL database; any other URL
 * is refused in one line that shows it without its password (as a file path it would name a
 * folder, password and all); anything else is a SQLite file's path.
 */
export function resolveStore(
  db: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
): { kind: "sqlite"; path: string } | { kind: "postgres"; url: string } {
  // The default store is the project's (see projectRoot); a path given is taken from where it was given.
  const given = db ?? env.LOOPGRAPH_DB ?? defaultStorePath(cwd);
  const trimmed = given.trim();
  if (isPostgresUrl(trimmed)) return { kind: "postgres", url: trimmed };
  if (isDatabaseUrl(trimmed)) {
    const from = db !== undefined ? "--db" : "LOOPGRAPH_DB";
    throw new ConfigError(
      `${from} ${withoutPassword(trimmed)} is a database URL loopgraph cannot use: give a postgres:// URL, or a SQLite file's path, with --db (or LOOPGRAPH_DB)`,
    );
  }
  return { kind: "sqlite", path: resolve(cwd, given) };
}

/** Where the store is: `--db`, the environment (LOOPGRAPH_DB) and the directory it is resolved from. */
export interface StoreOptions {
  db?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Opens the store's tables: a SQLite store's file (see `openDatabase`), or a PostgreSQL database
 * (connected and migrated, see postgres-tables.ts, loaded only then).
 */
export async function openTables(options: StoreOptions, access: StoreAccess): Promise<SqliteTables | PostgresTablesOf> {
  const env = options.env ?? process.env;
  const where = resolveStore(options.db, env, options.cwd ?? process.cwd());
  if (where.kind === "postgres") {
    const { openPostgresTables } = await import("./postgres-tables.js");
    return openPostgresTables(where.url, access, env);
  }
  return openSqliteTables(where.path, access, env);
}

/** A PostgreSQL store's tables (their type, without loading the module). */
export type PostgresTablesOf = Awaited<ReturnType<typeof import("./postgres-tables.js").openPostgresTables>>;

function openSqliteTables(path: string, access: StoreAccess, env: NodeJS.ProcessEnv): SqliteTables {
  const db = openDatabase(path, access, env);
  try {
    const threads = new ThreadRegistry(db);
    return {
      kind: "sqlite",
      path,
      db,
      threads,
      inbox: new Inbox(db),
      checkpoints: new SqliteCheckpointQueries(db),
      close: async () => {
        threads.close();
        db.close();
      },
    };
  } catch (error) {
    db.close();
    throw storeError(path, error);
  }
}

/** Uses an opened store (or its tables) for one piece of work and closes it afterwards, whatever happens; SQLite errors become one-line errors. */
export async function using<S extends { path: string; close(): Promise<void> }, T>(
  opening: S | Promise<S>,
  use: (store: S) => Promise<T> | T,
): Promise<T> {
  const opened = await opening;
  try {
    return await use(opened);
  } catch (error) {
    throw storeError(opened.path, error);
  } finally {
    // Closing writes what is queued: a store that fails then is the same one line.
    await opened.close().catch((error: unknown) => {
      throw storeError(opened.path, error);
    });
  }
}

/** Opens the store's tables for one piece of work and closes them afterwards, whatever happens. */
export function withTables<T>(options: StoreOptions, access: StoreAccess, use: (tables: StoreTables) => Promise<T> | T): Promise<T> {
  return using<StoreTables, T>(openTables(options, access), use);
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
    throw storeError(path, error);
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

/**
 * The one-line error (exit 2) for a SQLite failure of the store at `path` (the error, or one it
 * wraps), or for its PostgreSQL server gone, saying what to do; other errors as they are.
 */
export function storeError(path: string, error: unknown): unknown {
  if (error instanceof ConfigError) return error;
  // A PostgreSQL store's server that went away in the middle of a command (`path` is its address, password masked).
  if (isConnectionLost(error))
    return new StoreUnreachableError(`the PostgreSQL server of ${path} went away (${lostReason(error)}): try again once it is back`, error);
  const failed = sqliteErrorOf(error);
  if (!failed) return error;
  const code = failed.code;
  if (code === "SQLITE_NOTADB")
    return new ConfigError(`${path} is not a SQLite database: give the store's file with --db (or LOOPGRAPH_DB)`);
  if (code.startsWith("SQLITE_CORRUPT")) {
    return new ConfigError(`${path} is damaged (malformed database): restore it from a backup, or move it away to start a new store`);
  }
  if (code === "SQLITE_READONLY_ROLLBACK") {
    return new ConfigError(
      `${path} holds a write that a killed process left unfinished, which only a writer may undo: make it writable (or run \`loopgraph resume\` on it where it is), then read it again`,
    );
  }
  if (code.startsWith("SQLITE_READONLY")) return readOnly(path);
  if (isLockCode(code)) return new StoreLockedError(path, `${lockedBeyondTimeout(path)}: try again once it is done`);
  if (isWriteFailureCode(code))
    return new ConfigError(`${cannotBeWritten(path, failed)}: make room on its disk (or check the disk), then try again`);
  if (code.startsWith("SQLITE_CANTOPEN") || code.startsWith("SQLITE_IOERR")) {
    return new ConfigError(`${path} cannot be opened or read (${failed.message}): check the file and its folder`);
  }
  return error;
}

/**
 * The store stayed locked by another program beyond the busy timeout (exit 2 outside a run; a run
 * that meets it stops, interrupted: see `Thread.execute`).
 */
export class StoreLockedError extends ConfigError {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = "StoreLockedError";
  }
}

const isLockCode = (code: string): boolean => code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED");

/** `PATH is locked by another program (waited N s)`: the start of every message about a lock. */
export function lockedBeyondTimeout(path: string, env: NodeJS.ProcessEnv = process.env): string {
  return `${path} is locked by another program (waited ${busyTimeoutMs(env) / 1000} s)`;
}

/**
 * Whether `error` (or an error it wraps, as `cause`) is a store lock held beyond the busy timeout:
 * SQLITE_BUSY or SQLITE_LOCKED from SQLite, or the StoreLockedError made of one.
 */
export function isStoreLocked(error: unknown): boolean {
  const failed = sqliteErrorOf(error);
  return (failed !== undefined && isLockCode(failed.code)) || causes(error).some((cause) => cause instanceof StoreLockedError);
}

/** `error` and the errors it wraps (as `cause`), outermost first (at most 10). */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (
    let current = error;
    current !== undefined && current !== null && chain.length < 10;
    current = (current as { cause?: unknown }).cause
  )
    chain.push(current);
  return chain;
}

/** The store's disk refused a write: it is full (or the file reached the process's size limit), or the write failed. */
const isWriteFailureCode = (code: string): boolean => /^SQLITE_(FULL|IOERR_(WRITE|FSYNC|DIR_FSYNC|TRUNCATE|SHMSIZE))$/.test(code);

/** `PATH cannot be written (SQLite's reason)`: the start of every message about a write the disk refused. */
function cannotBeWritten(path: string, error: unknown): string {
  return `${path} cannot be written (${(error as Error).message.split("\n")[0]})`;
}

/** The SQLite error of `error`, or of an error it wraps (as `cause`). */
function sqliteErrorOf(error: unknown): (Error & { code: string }) | undefined {
  const isSqlite = (cause: unknown): cause is Error & { code: string } => {
    const code = (cause as { code?: unknown }).code;
    return typeof code === "string" && code.startsWith("SQLITE_");
  };
  return causes(error).find(isSqlite);
}

/**
 * Why a write of a run met a store it can use again later, which stops the run at its last
 * checkpoint (see `Thread.execute`): the store stayed locked beyond the busy timeout, or its disk
 * refused the write (full). `what` says what failed, naming the store; `when`, when to resume.
 * Undefined for any other error.
 */
export function storeStop(path: string, error: unknown, env: NodeJS.ProcessEnv = process.env): { what: string; when: string } | undefined {
  if (isStoreLocked(error)) return { what: lockedBeyondTimeout(path, env), when: "once the other program is done" };
  const failed = sqliteErrorOf(error);
  if (failed && isWriteFailureCode(failed.code)) return { what: cannotBeWritten(path, failed), when: "once its disk has room" };
  return undefined;
}

/** Whether `error` stops a run at its last checkpoint (see `storeStop`). */
export const stopsRun = (error: unknown): boolean => storeStop("", error) !== undefined;

function readOnly(path: string): ConfigError {
  return new ConfigError(`${path} is read-only: make it (and its folder) writable, or give another store with --db`);
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

/** The thread's record, or a one-line error (exit 2) saying how to list the threads. */
export async function requireThread(store: Pick<StoreTables, "path" | "threads">, threadId: string): Promise<ThreadRecord> {
  const thread = await store.threads.get(threadId);
  if (!thread) throw new ConfigError(`no thread "${threadId}" in ${store.path}: list threads with \`loopgraph inspect\``);
  return thread;
}
