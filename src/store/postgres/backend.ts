import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { StoreAccess } from "../../runs/tables.js";
import { withoutPassword } from "../../runs/url-password.js";
import type { StoreBackend, StoreCheck, StoreSaving } from "../backend.js";
import { isConnectionLost, lostReason, StoreUnreachableError } from "./outage.js";
import type { PostgresTables } from "./tables.js";

/**
 * A store in a PostgreSQL database, named by a postgres:// URL. Its modules (and `pg`) load only
 * when one is opened: this file is all a SQLite store's commands load of it.
 */
export const postgresBackend: StoreBackend<PostgresTables> = {
  name: "postgres",
  accepts: (location) => /^postgres(ql)?:\/\//i.test(location),
  inFolder: false,
  shown: withoutPassword,
  openTables: async (location, access, env) => (await import("./tables.js")).openPostgresTables(location, access, env),
  openSaving,
  oneLineError,
  check: storeCheck,
};

async function openSaving(tables: PostgresTables, serde: SerializerProtocol, access: StoreAccess): Promise<StoreSaving> {
  // These load LangChain: only a command that reads or writes checkpoints loads them.
  const [{ PostgresCheckpointSaver }, { PostgresRecordings }, { PostgresSnapshotLog }] = await Promise.all([
    import("./saver.js"),
    import("./recordings.js"),
    import("./snapshot-log.js"),
  ]);
  const saver = new PostgresCheckpointSaver(tables.pool, serde);
  const recordings = new PostgresRecordings(tables.pool);
  if (access !== "read") saver.addWriteHook(recordings);
  return {
    saver,
    recordings,
    snapshots: new PostgresSnapshotLog(tables.pool),
    close: async () => {
      try {
        if (access !== "read") await recordings.flush();
      } catch (error) {
        // As with a SQLite store's lock: a server gone away loses only the records of a step that re-runs.
        if (!isConnectionLost(error)) throw error;
      } finally {
        await tables.close();
      }
    },
  };
}

/** A store's server that went away in the middle of a command (`path` is its address, password masked). */
function oneLineError(path: string, error: unknown): StoreUnreachableError | undefined {
  if (!isConnectionLost(error)) return undefined;
  return new StoreUnreachableError(`the PostgreSQL server of ${path} went away (${lostReason(error)}): try again once it is back`, error);
}

async function storeCheck(url: string, env: NodeJS.ProcessEnv): Promise<StoreCheck> {
  const shown = withoutPassword(url);
  const [{ openPostgresPool }, { schemaVersions }, { RUN_MIGRATIONS }] = await Promise.all([
    import("./connection.js"),
    import("./schema.js"),
    import("./tables.js"),
  ]);
  let pool: Awaited<ReturnType<typeof openPostgresPool>>;
  try {
    pool = await openPostgresPool(url, env, 1);
  } catch (error) {
    return { status: "missing", detail: (error as Error).message };
  }
  try {
    const version = (await schemaVersions(pool)).get("runs");
    if (version === undefined)
      return { status: "ok", detail: `${shown}: PostgreSQL reachable; no loopgraph store yet (the first run creates it)` };
    if (version > RUN_MIGRATIONS.length)
      return {
        status: "missing",
        detail: `${shown} has schema version ${version}, newer than this loopgraph understands (${RUN_MIGRATIONS.length})`,
        fix: "upgrade loopgraph",
      };
    return { status: "ok", detail: `${shown}: PostgreSQL reachable, schema version ${version}` };
  } catch (error) {
    return { status: "missing", detail: `${shown}: ${(error as Error).message.split("\n")[0]}` };
  } finally {
    // The check's answer is made; a pool that fails to close changes nothing in it.
    await pool.end().catch(() => undefined);
  }
}
