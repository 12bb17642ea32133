/**
 * Opening the store's tables wherever they are: the location (`--db`, LOOPGRAPH_DB or the
 * project's default) picks a backend in the registry, which opens them. No LangChain module is
 * loaded here, so `status` answers fast; store.ts adds the checkpoint saver.
 */
import { resolve } from "node:path";
import { ConfigError } from "../errors.js";
import { defaultStorePath } from "../project.js";
import type { StoreAccess, StoreTables } from "../runs/tables.js";
import type { EvalRecord } from "../runs/evals.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { withoutPassword } from "../runs/url-password.js";
import type { AnyStoreBackend } from "./backend.js";
import { storeBackends } from "./registry.js";

export type { StoreAccess, StoreTables } from "../runs/tables.js";

/** Where the store is, and the backend that opens it. */
export interface StoreLocation {
  backend: AnyStoreBackend;
  /** A file's path resolved, or a URL as given (trimmed). */
  location: string;
}

/**
 * Where the store is: `--db`, else LOOPGRAPH_DB, else `.loopgraph/loopgraph.db` under the current
 * directory. A location no backend accepts (a URL of another database) is refused in one line that
 * shows it without its password (as a file path it would name a folder, password and all).
 */
export function resolveStore(db: string | undefined, env: NodeJS.ProcessEnv, cwd: string): StoreLocation {
  // The default store is the project's (see projectRoot); a path given is taken from where it was given.
  const given = db ?? env.LOOPGRAPH_DB ?? defaultStorePath(cwd);
  const trimmed = given.trim();
  const backend = storeBackends.forLocation(trimmed);
  if (!backend) {
    const from = db !== undefined ? "--db" : "LOOPGRAPH_DB";
    throw new ConfigError(
      `${from} ${withoutPassword(trimmed)} is a database URL loopgraph cannot use: give a postgres:// URL, or a SQLite file's path, with --db (or LOOPGRAPH_DB)`,
    );
  }
  return { backend, location: backend.inFolder ? resolve(cwd, given) : trimmed };
}

/** Where the store is: `--db`, the environment (LOOPGRAPH_DB) and the directory it is resolved from. */
export interface StoreOptions {
  db?: string;
  cwd?: string;
  /** The command's environment (its settings' `env`). */
  env: NodeJS.ProcessEnv;
}

/** The store's location resolved, and the environment it is opened with. */
export function locateStore(options: StoreOptions): StoreLocation & { env: NodeJS.ProcessEnv } {
  return { ...resolveStore(options.db, options.env, options.cwd ?? process.cwd()), env: options.env };
}

/** Opens the store's tables, with the backend its location names. */
export function openTables(options: StoreOptions, access: StoreAccess): Promise<StoreTables> {
  const { backend, location, env } = locateStore(options);
  return backend.openTables(location, access, env);
}

/** Uses an opened store (or its tables) for one piece of work and closes it afterwards, whatever happens; store errors become one-line errors. */
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
 * The one-line error (exit 2) for a failure of the store at `path` (the error, or one it wraps),
 * saying what to do, as the backend whose failure it is words it; other errors as they are.
 */
export function storeError(path: string, error: unknown): unknown {
  if (error instanceof ConfigError) return error;
  for (const backend of storeBackends.all()) {
    const oneLine = backend.oneLineError(path, error);
    if (oneLine) return oneLine;
  }
  return error;
}

/** The thread's record, or a one-line error (exit 2) saying how to list the threads. */
export async function requireThread(store: Pick<StoreTables, "path" | "threads">, threadId: string): Promise<ThreadRecord> {
  const thread = await store.threads.get(threadId);
  if (!thread) throw new ConfigError(`no thread "${threadId}" in ${store.path}: list threads with \`loopgraph inspect\``);
  return thread;
}

/** The eval's record, or a one-line error (exit 2) saying how to list the evals. */
export async function requireEval(store: Pick<StoreTables, "path" | "evals">, evalId: string): Promise<EvalRecord> {
  const record = await store.evals.get(evalId);
  if (!record) throw new ConfigError(`no eval "${evalId}" in ${store.path}: see loopgraph eval --list`);
  return record;
}
