import type { CheckpointQueries } from "./checkpoint-ids.js";
import type { EvalTable } from "./evals.js";
import type { InboxTable } from "./inbox.js";
import type { RepoWorkspaceTable } from "./repo-workspaces.js";
import type { ThreadTable } from "./thread-registry.js";

/**
 * The run store's tables every command reads: threads, their inboxes, and narrow reads of their
 * checkpoints. It loads no LangChain module, so `status` answers fast; the checkpoints' saver is
 * added by store.ts (`openStore`). The store is a SQLite file (`SqliteTables`) or a PostgreSQL
 * database (postgres-tables.ts).
 */
export interface StoreTables {
  /** Where the store is, as messages show it: the file's path, or the database's URL without its password. */
  path: string;
  threads: ThreadTable;
  inbox: InboxTable;
  /** `loopgraph eval`'s evals and their trials. */
  evals: EvalTable;
  checkpoints: CheckpointQueries;
  /** The repositories queued runs work on (a PostgreSQL store only: the queue needs one). */
  repoWorkspaces?: RepoWorkspaceTable;
  close(): Promise<void>;
}

/**
 * How a command uses the store:
 * - `read`: opened read-only; nothing is created or changed (a missing store is an error);
 * - `write`: the store must exist (a thread is needed anyway); it is migrated and written;
 * - `create`: like `write`, but a missing store is created (with its `.loopgraph` folder).
 */
export type StoreAccess = "read" | "write" | "create";
