import { basename, dirname, resolve } from "node:path";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { SqliteCheckpointSaver } from "../checkpoint/index.js";
import { ConfigError } from "../errors.js";
import { Inbox } from "./inbox.js";
import { SnapshotLog } from "./snapshot-log.js";
import { ensureStateDir, STATE_DIR } from "./state-dir.js";
import { ThreadRegistry, type ThreadRecord } from "./thread-registry.js";
import { Recordings } from "./recordings.js";
import { redactingSerializer, secretValues } from "./redact.js";

/** The run store: checkpoints and the thread registry, in one SQLite file. */
export interface Store {
  path: string;
  saver: SqliteCheckpointSaver;
  /** Model outputs and effect results of runs, for recorded replay and --export-script. */
  recordings: Recordings;
  threads: ThreadRegistry;
  inbox: Inbox;
  /** Workspace snapshots around the Coder's file-changing tool steps. */
  snapshots: SnapshotLog;
  close(): void;
}

/** `--db`, else LOOPGRAPH_DB, else `.loopgraph/loopgraph.db` under the current directory. */
export function resolveDbPath(db: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  return resolve(cwd, db ?? env.LOOPGRAPH_DB ?? ".loopgraph/loopgraph.db");
}

/** Where the store is: `--db`, the environment (LOOPGRAPH_DB) and the directory it is resolved from. */
export interface StoreOptions {
  db?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export function openStore(options: StoreOptions = {}): Store {
  const path = resolveDbPath(options.db, options.env ?? process.env, options.cwd ?? process.cwd());
  if (basename(dirname(path)) === STATE_DIR) ensureStateDir(dirname(path));
  // Model keys are named like secrets (…_API_KEY), so the name rules alone find them here.
  const saver = new SqliteCheckpointSaver(path, redactingSerializer(new JsonPlusSerializer(), secretValues(options.env ?? process.env, [])));
  return {
    path,
    saver,
    recordings: new Recordings(saver.db),
    threads: new ThreadRegistry(saver.db),
    inbox: new Inbox(saver.db),
    snapshots: new SnapshotLog(saver.db),
    close: () => saver.close(),
  };
}

/** Opens the store for one piece of work and closes it afterwards, whatever happens. */
export async function withStore<T>(options: StoreOptions, use: (store: Store) => Promise<T>): Promise<T> {
  const store = openStore(options);
  try {
    return await use(store);
  } finally {
    store.close();
  }
}

/** The thread's record, or a one-line error (exit 2) saying how to list the threads. */
export function requireThread(store: Store, threadId: string): ThreadRecord {
  const thread = store.threads.get(threadId);
  if (!thread) throw new ConfigError(`no thread "${threadId}" in ${store.path}: list threads with \`loopgraph inspect\``);
  return thread;
}

/** The channel values of the thread's latest root checkpoint (empty before its first one). */
export async function latestValues(store: Store, threadId: string): Promise<Record<string, unknown>> {
  const tuple = await store.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
  return (tuple?.checkpoint.channel_values ?? {}) as Record<string, unknown>;
}
