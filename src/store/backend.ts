/**
 * A store backend: where a store's tables and checkpoints live (a SQLite file, a PostgreSQL
 * database). Each is one folder under src/store that exports a StoreBackend, listed in
 * registry.ts; opening a store (tables.ts, store.ts) looks its backend up there by location.
 */
import type { BaseCheckpointSaver, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { RecordingTable } from "../runs/recordings.js";
import type { SnapshotTable } from "../runs/snapshot-log.js";
import type { StoreAccess, StoreTables } from "../runs/tables.js";

/** What a backend adds to its tables for a run: the checkpoint saver, and the tables written with its checkpoints. */
export interface StoreSaving {
  saver: BaseCheckpointSaver;
  /** Model outputs and effect results of runs, for recorded replay and --export-script. */
  recordings: RecordingTable;
  /** Workspace snapshots around the Coder's file-changing tool steps. */
  snapshots: SnapshotTable;
  /** Writes what is still queued, then closes the tables. */
  close(): Promise<void>;
}

/** What `doctor` says of a store: usable, or missing (with what to do). */
export interface StoreCheck {
  status: "ok" | "missing";
  detail: string;
  fix?: string;
}

export interface StoreBackend<Tables extends StoreTables = StoreTables> {
  /** As messages name it ("sqlite", "postgres"). */
  readonly name: string;
  /** Whether `location` (`--db` or LOOPGRAPH_DB, trimmed) names a store of this backend. */
  accepts(location: string): boolean;
  /**
   * Whether its stores are files in a folder: a path given for one is taken from where it was
   * given, and a project may keep one inside itself (a server's database is the user's to name).
   */
  readonly inFolder: boolean;
  /** The store `location` names, as messages show it (a URL without its password). */
  shown(location: string): string;
  /** Opens (a writer: creates or migrates) the store's tables; errors are one line (exit 2). */
  openTables(location: string, access: StoreAccess, env: NodeJS.ProcessEnv): Promise<Tables>;
  /** The saver and the run tables on opened tables; `serde` writes redacted. */
  openSaving(tables: Tables, serde: SerializerProtocol, access: StoreAccess): Promise<StoreSaving>;
  /** The one-line error (exit 2) for a failure of this backend's store at `path`; undefined for another error. */
  oneLineError(path: string, error: unknown): Error | undefined;
  /** `doctor`'s check of the store at `location` (which may not exist yet). */
  check(location: string, env: NodeJS.ProcessEnv): Promise<StoreCheck>;
}

// The registry holds backends of every tables type; each is given only the tables it opened.
export type AnyStoreBackend = StoreBackend<any>;
