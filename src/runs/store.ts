import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { PostgresCheckpointSaver, SqliteCheckpointSaver } from "../checkpoint/index.js";
import {
  openTables,
  storeError,
  stopsRun,
  using,
  type PostgresTablesOf,
  type SqliteTables,
  type StoreAccess,
  type StoreOptions,
  type StoreTables,
} from "./database.js";
import { isConnectionLost } from "./postgres-outage.js";
import { SnapshotLog, type SnapshotTable } from "./snapshot-log.js";
import { Recordings, type RecordingTable } from "./recordings.js";
import { redactingSerializer, secretValues } from "./redact.js";

export {
  isStoreLocked,
  lockedBeyondTimeout,
  requireThread,
  resolveStore,
  storeError,
  storeStop,
  stopsRun,
  StoreLockedError,
  withTables,
  type StoreAccess,
  type StoreOptions,
  type SqliteTables,
  type StoreTables,
} from "./database.js";

/** The run store: checkpoints, threads and what runs record, in one SQLite file or one PostgreSQL database. */
export interface Store extends StoreTables {
  /**
   * The values of the secrets in the environment the store was opened with (model keys are named
   * like secrets, …_API_KEY, so the name rules find them): redacted from everything written.
   */
  secrets: readonly string[];
  saver: SqliteCheckpointSaver | PostgresCheckpointSaver;
  /** Model outputs and effect results of runs, for recorded replay and --export-script. */
  recordings: RecordingTable;
  /** Workspace snapshots around the Coder's file-changing tool steps. */
  snapshots: SnapshotTable;
}

export async function openStore(options: StoreOptions, access: StoreAccess): Promise<Store> {
  const tables = await openTables(options, access);
  try {
    const secrets = secretValues(options.env ?? process.env, []);
    const serde = redactingSerializer(new JsonPlusSerializer(), secrets);
    return tables.kind === "sqlite" ? sqliteStore(tables, secrets, serde, access) : await postgresStore(tables, secrets, serde, access);
  } catch (error) {
    await tables.close();
    throw storeError(tables.path, error);
  }
}

function sqliteStore(tables: SqliteTables, secrets: readonly string[], serde: SerializerProtocol, access: StoreAccess): Store {
  const saver = new SqliteCheckpointSaver(tables.db, serde, { prepare: false });
  // Records made during a step are written with the step's next checkpoint write (see Recordings).
  const recordings = new Recordings(tables.db);
  if (access !== "read") saver.addWriteHook(() => recordings.flush());
  return {
    ...tables,
    secrets,
    saver,
    recordings,
    snapshots: new SnapshotLog(tables.db),
    close: async () => {
      try {
        if (access !== "read") {
          saver.flushWrites();
          recordings.flush();
        }
      } catch (error) {
        // Records still queued belong to a step whose writes are not stored (they are written in
        // the transaction of the step's writes): the step runs again on resume and records again.
        // A store still locked (or full) at the end of a run loses only them; the run has already said why it stopped.
        if (!stopsRun(error)) throw error;
      } finally {
        await tables.close();
      }
    },
  };
}

async function postgresStore(
  tables: PostgresTablesOf,
  secrets: readonly string[],
  serde: SerializerProtocol,
  access: StoreAccess,
): Promise<Store> {
  const { PostgresRecordings, PostgresSnapshotLog } = await import("./postgres-tables.js");
  const saver = new PostgresCheckpointSaver(tables.pool, serde);
  const recordings = new PostgresRecordings(tables.pool);
  if (access !== "read") saver.addWriteHook(recordings);
  return {
    ...tables,
    secrets,
    saver,
    recordings,
    snapshots: new PostgresSnapshotLog(tables.pool),
    close: async () => {
      try {
        if (access !== "read") await recordings.flush();
      } catch (error) {
        // As with a lock (see sqliteStore): a server gone away loses only the records of a step that re-runs.
        if (!isConnectionLost(error)) throw error;
      } finally {
        await tables.close();
      }
    },
  };
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
