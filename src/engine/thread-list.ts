/**
 * `loopgraph inspect` without a thread: the store's threads with their checkpoint counts. Kept
 * narrow, like `status`: the store's tables and one SQL count, no LangChain module loaded and no
 * checkpoint decoded, so the list answers in a few node start-ups whatever the threads' length.
 */
import { withTables, type StoreOptions } from "../store/tables.js";
import { asSeen, type ThreadRecord } from "../runs/thread-registry.js";

export interface ThreadSummary extends ThreadRecord {
  /** The thread's root checkpoints (every branch). */
  checkpoints: number;
}

/** Every thread of the store, as readers show it (a run whose process is gone is interrupted), with its checkpoint count. */
export async function listThreads(options: StoreOptions): Promise<ThreadSummary[]> {
  return withTables(options, "read", async (store) => {
    const counts = await store.checkpoints.rootCheckpointCounts();
    return (await store.threads.list()).map((thread) => ({ ...asSeen(thread), checkpoints: counts.get(thread.threadId) ?? 0 }));
  });
}
