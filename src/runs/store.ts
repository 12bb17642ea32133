import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { SqliteCheckpointSaver } from "../checkpoint/index.js";
import { isStoreLocked, openTables, storeError, using, type StoreAccess, type StoreOptions, type StoreTables } from "./database.js";
import { SnapshotLog } from "./snapshot-log.js";
import { Recordings } from "./recordings.js";
import { redactingSerializer, secretValues } from "./redact.js";

export {
  isStoreLocked,
  lockedBeyondTimeout,
  requireThread,
  resolveDbPath,
  storeError,
  StoreLockedError,
  withTables,
  type StoreAccess,
  type StoreOptions,
  type StoreTables,
} from "./database.js";

/** The run store: checkpoints and the thread registry, in one SQLite file. */
export interface Store extends StoreTables {
  /**
   * The values of the secrets in the environment the store was opened with (model keys are named
   * like secrets, …_API_KEY, so the name rules find them): redacted from everything written.
   */
  secrets: readonly string[];
  saver: SqliteCheckpointSaver;
  /** Model outputs and effect results of runs, for recorded replay and --export-script. */
  recordings: Recordings;
  /** Workspace snapshots around the Coder's file-changing tool steps. */
  snapshots: SnapshotLog;
}

export function openStore(options: StoreOptions, access: StoreAccess): Store {
  const tables = openTables(options, access);
  try {
    const secrets = secretValues(options.env ?? process.env, []);
    const saver = new SqliteCheckpointSaver(tables.db, redactingSerializer(new JsonPlusSerializer(), secrets), { prepare: false });
    // Records made during a step are written with the step's next checkpoint write (see Recordings).
    const recordings = new Recordings(tables.db);
    if (access !== "read") saver.addWriteHook(() => recordings.flush());
    return {
      ...tables,
      secrets,
      saver,
      recordings,
      snapshots: new SnapshotLog(tables.db),
      close: () => {
        try {
          if (access !== "read") recordings.flush();
        } catch (error) {
          // Records still queued belong to a step whose writes are not stored (they are written in
          // the transaction of the step's writes): the step runs again on resume and records again.
          // A store still locked at the end of a run loses only them; the run has already said why it stopped.
          if (!isStoreLocked(error)) throw error;
        } finally {
          tables.close();
        }
      },
    };
  } catch (error) {
    tables.close();
    throw storeError(tables.path, error);
  }
}

/** Opens the store for one piece of work and closes it afterwards, whatever happens. */
export function withStore<T>(options: StoreOptions, access: StoreAccess, use: (store: Store) => Promise<T>): Promise<T> {
  return using(openStore(options, access), use);
}

/** The channel values of the thread's latest root checkpoint (empty before its first one). */
export async function latestValues(store: Store, threadId: string): Promise<Record<string, unknown>> {
  const tuple = await store.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
  return (tuple?.checkpoint.channel_values ?? {}) as Record<string, unknown>;
}
