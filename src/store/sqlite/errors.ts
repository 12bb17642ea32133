/**
 * What a failure of a SQLite store means, in one line (exit 2) saying what to do: a lock held
 * beyond the busy timeout, a full disk, a damaged or foreign file. A lock or a full disk stops a
 * run at its last checkpoint (see `storeStop`).
 */
import { ConfigError } from "../../errors.js";
import { busyTimeoutMs } from "./checkpoint-schema.js";

/** The one-line error for a SQLite failure of the store at `path` (the error, or one it wraps); undefined for another error. */
export function sqliteStoreError(path: string, error: unknown, env?: NodeJS.ProcessEnv): ConfigError | undefined {
  const failed = sqliteErrorOf(error);
  if (!failed) return undefined;
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
  if (isLockCode(code)) return new StoreLockedError(path, `${lockedBeyondTimeout(path, env)}: try again once it is done`);
  if (isWriteFailureCode(code))
    return new ConfigError(`${cannotBeWritten(path, failed)}: make room on its disk (or check the disk), then try again`);
  if (code.startsWith("SQLITE_CANTOPEN") || code.startsWith("SQLITE_IOERR")) {
    return new ConfigError(`${path} cannot be opened or read (${failed.message}): check the file and its folder`);
  }
  return undefined;
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

/**
 * `PATH is locked by another program (waited N s)`: the start of every message about a lock; the
 * wait is that of the environment the store was opened with, where the caller knows it.
 */
export function lockedBeyondTimeout(path: string, env?: NodeJS.ProcessEnv): string {
  return `${path} is locked by another program (${env ? `waited ${busyTimeoutMs(env) / 1000} s` : "beyond its busy timeout"})`;
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
export function storeStop(path: string, error: unknown, env: NodeJS.ProcessEnv): { what: string; when: string } | undefined {
  if (isStoreLocked(error)) return { what: lockedBeyondTimeout(path, env), when: "once the other program is done" };
  const failed = sqliteErrorOf(error);
  if (failed && isWriteFailureCode(failed.code)) return { what: cannotBeWritten(path, failed), when: "once its disk has room" };
  return undefined;
}

/** Whether `error` stops a run at its last checkpoint (see `storeStop`). */
export const stopsRun = (error: unknown): boolean => storeStop("", error, {}) !== undefined;

export function readOnly(path: string): ConfigError {
  return new ConfigError(`${path} is read-only: make it (and its folder) writable, or give another store with --db`);
}
