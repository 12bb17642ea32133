import { basename, dirname, resolve } from "node:path";
import { SqliteCheckpointSaver } from "../checkpoint/index.js";
import { Inbox } from "./inbox.js";
import { ensureStateDir, STATE_DIR } from "./state-dir.js";
import { ThreadRegistry } from "./thread-registry.js";

/** The run store: checkpoints and the thread registry, in one SQLite file. */
export interface Store {
  path: string;
  saver: SqliteCheckpointSaver;
  threads: ThreadRegistry;
  inbox: Inbox;
  close(): void;
}

/** `--db`, else LOOPGRAPH_DB, else `.loopgraph/loopgraph.db` under the current directory. */
export function resolveDbPath(db: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  return resolve(cwd, db ?? env.LOOPGRAPH_DB ?? ".loopgraph/loopgraph.db");
}

export function openStore(options: { db?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Store {
  const path = resolveDbPath(options.db, options.env ?? process.env, options.cwd ?? process.cwd());
  if (basename(dirname(path)) === STATE_DIR) ensureStateDir(dirname(path));
  const saver = new SqliteCheckpointSaver(path);
  return {
    path,
    saver,
    threads: new ThreadRegistry(saver.db),
    inbox: new Inbox(saver.db),
    close: () => saver.close(),
  };
}
