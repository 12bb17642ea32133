import type Database from "better-sqlite3";
import { SqliteCheckpointSaver } from "../checkpoint/index.js";
import { openDatabase, resolveDbPath, ThreadRegistry } from "./thread-registry.js";

/** The run store: checkpoints and the thread registry, in one SQLite file. */
export interface Store {
  path: string;
  db: Database.Database;
  saver: SqliteCheckpointSaver;
  threads: ThreadRegistry;
  close(): void;
}

export function openStore(options: { db?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Store {
  const path = resolveDbPath(options.db, options.env ?? process.env, options.cwd ?? process.cwd());
  const db = openDatabase(path);
  return {
    path,
    db,
    saver: new SqliteCheckpointSaver(db),
    threads: new ThreadRegistry(db),
    close: () => db.close(),
  };
}
