import { existsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import type { StoreAccess } from "../../runs/tables.js";
import { isDatabaseUrl } from "../../runs/url-password.js";
import type { StoreBackend, StoreCheck, StoreSaving } from "../backend.js";
import { openSqliteTables, writable, type SqliteTables } from "./database.js";
import { sqliteStoreError, stopsRun } from "./errors.js";
import { schemaVersion, STORE_VERSION } from "./schema.js";

/** A store in one SQLite file: any location that is not a URL is its path. */
export const sqliteBackend: StoreBackend<SqliteTables> = {
  name: "sqlite",
  accepts: (location) => !isDatabaseUrl(location),
  inFolder: true,
  shown: (location) => location,
  openTables: async (location, access, env) => openSqliteTables(location, access, env),
  openSaving,
  oneLineError: sqliteStoreError,
  check: async (location) => storeCheck(location),
};

async function openSaving(tables: SqliteTables, serde: SerializerProtocol, access: StoreAccess): Promise<StoreSaving> {
  // These load LangChain: only a command that reads or writes checkpoints loads them.
  const [{ SqliteCheckpointSaver }, { Recordings }, { SnapshotLog }] = await Promise.all([
    import("./saver.js"),
    import("./recordings.js"),
    import("./snapshot-log.js"),
  ]);
  const saver = new SqliteCheckpointSaver(tables.db, serde, { prepare: false });
  // Records made during a step are written with the step's next checkpoint write (see Recordings).
  const recordings = new Recordings(tables.db);
  if (access !== "read") saver.addWriteHook(() => recordings.flush());
  return {
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

function storeCheck(path: string): StoreCheck {
  if (!existsSync(path)) {
    const folder = nearestExisting(dirname(path));
    return writable(folder)
      ? { status: "ok", detail: `${path}: not created yet; the first run creates it (${folder} is writable)` }
      : {
          status: "missing",
          detail: `${path}: cannot be created, ${folder} is not writable`,
          fix: "give a writable store with --db or LOOPGRAPH_DB",
        };
  }
  if (!statSync(path).isFile()) return { status: "missing", detail: `${path} is not a file`, fix: "give the store's file with --db" };
  let version: number;
  try {
    const database = new Database(path, { readonly: true, fileMustExist: true });
    try {
      version = schemaVersion(database);
    } finally {
      database.close();
    }
  } catch (error) {
    return { status: "missing", detail: `${path} cannot be read as a SQLite store (${(error as Error).message})` };
  }
  if (version > STORE_VERSION)
    return {
      status: "missing",
      detail: `${path} has schema version ${version}, newer than this loopgraph understands (${STORE_VERSION})`,
      fix: "upgrade loopgraph",
    };
  if (!writable(path) || !writable(dirname(path)))
    return {
      status: "missing",
      detail: `${path} is not writable: runs cannot record their steps`,
      fix: "check the file's and its folder's permissions",
    };
  const migrates = version < STORE_VERSION ? `; the next run upgrades it to ${STORE_VERSION}` : "";
  return { status: "ok", detail: `${path}: SQLite, writable, schema version ${version}${migrates}` };
}

function nearestExisting(folder: string): string {
  for (let dir = folder; ; dir = dirname(dir)) if (existsSync(dir) || dir === dirname(dir)) return dir;
}
