import { ConfigError } from "../errors.js";
import { graphFingerprint } from "../graph/fingerprint.js";
import type { GraphDefinition } from "../format/types.js";
import type { Store } from "../store/store.js";
import type { ThreadRecord } from "../runs/thread-registry.js";

/**
 * A new thread `<thread>.replay-<n>` in the registry (the thread's task, workspace and approval
 * mode, the graph as it is now), whose first checkpoint is a copy of the thread's `checkpointId`.
 */
export async function createReplayThread(
  store: Store,
  thread: ThreadRecord,
  graph: GraphDefinition,
  checkpointId: string,
): Promise<string> {
  const replayThreadId = await nextReplayThreadId(store, thread.threadId);
  await store.threads.create({
    threadId: replayThreadId,
    graphFile: graph.file,
    graphHash: graphFingerprint(graph),
    graphName: graph.name,
    task: thread.task,
    approval: thread.approval,
    ...(thread.mode && { mode: thread.mode }),
    workspace: thread.workspace,
  });
  await copyRootCheckpoint(store, { threadId: thread.threadId, checkpointId }, replayThreadId);
  return replayThreadId;
}

/** `<thread>.replay-<n>`, with n one more than the thread's replays so far. */
export async function nextReplayThreadId(store: Store, threadId: string): Promise<string> {
  const prefix = `${threadId}.replay-`;
  const taken = (await store.threads.list())
    .filter((thread) => thread.threadId.startsWith(prefix))
    .map((thread) => Number(thread.threadId.slice(prefix.length)))
    .filter(Number.isInteger);
  return `${prefix}${Math.max(0, ...taken) + 1}`;
}

/**
 * Copies one root checkpoint of a thread, as it is (id, values, versions, metadata), to be the
 * first checkpoint of another thread: run on from there, the other thread continues exactly where
 * the first one stood. Pending writes are not copied, so the step after it runs again in full.
 */
export async function copyRootCheckpoint(
  store: Store,
  from: { threadId: string; checkpointId: string },
  toThreadId: string,
): Promise<void> {
  const tuple = await store.saver.getTuple({
    configurable: { thread_id: from.threadId, checkpoint_ns: "", checkpoint_id: from.checkpointId },
  });
  if (!tuple) throw new ConfigError(`no checkpoint ${from.checkpointId} in thread "${from.threadId}"`);
  await store.saver.put(
    { configurable: { thread_id: toThreadId, checkpoint_ns: "" } },
    tuple.checkpoint,
    tuple.metadata ?? { source: "update", step: -1, parents: {} },
    tuple.checkpoint.channel_versions,
  );
}
