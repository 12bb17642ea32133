/**
 * `loopgraph status`: the Looper status block of a thread, read from its store with no model call,
 * whether it runs or not. Kept narrow on purpose: plain SQL on the store's tables and the few
 * channels it shows, no LangChain module loaded (the command answers in a few node start-ups).
 */
import { requireThread, withTables, type StoreOptions, type StoreTables } from "../store/tables.js";
import { asSeen, type ThreadRecord } from "../runs/thread-registry.js";
import { initialLooperSnapshot } from "../nodes/looper/machine.js";
import { formatStatus, statusJson } from "../nodes/looper/status.js";
import type { LooperSnapshot } from "../state/looper.js";

export interface LooperStatus {
  text: string;
  /** `threadStatus` is the loop's run status: "none" for a chat whose loop has not run yet. */
  json: ReturnType<typeof statusJson> & { threadId: string; threadStatus: ThreadRecord["status"] | "none" };
}

/** The thread a Mediator thread's loop runs in. */
export const loopThreadOf = (mediatorThreadId: string): string => `${mediatorThreadId}.loop`;

/** Where commands for a thread go: a Mediator thread's (chat's) commands go to the loop it started. */
export async function commandTarget(store: Pick<StoreTables, "path" | "threads">, threadId: string): Promise<ThreadRecord> {
  const thread = await requireThread(store, threadId);
  return asSeen((await store.threads.get(loopThreadOf(threadId))) ?? thread);
}

/** The Looper status block of a thread, read from its store: no model call, whether it runs or not. */
export async function looperStatus(threadId: string, options: StoreOptions): Promise<LooperStatus> {
  return withTables(options, "read", async (store) => {
    const thread = await commandTarget(store, threadId);
    // A chat whose loop is not started yet: tasks sent to it (`send <chat> "start: …"`) wait in the loop's inbox.
    const waiting = thread.threadId === threadId ? await store.inbox.after(loopThreadOf(threadId), 0) : [];
    threadId = thread.threadId;
    const {
      loopState,
      inboxCursor: cursor = 0,
      task = "",
    } = (await store.checkpoints.plainChannels(threadId, ["loopState", "inboxCursor", "task"])) as {
      loopState?: LooperSnapshot;
      inboxCursor?: number;
      task?: string;
    };
    const unconsumed = await store.inbox.after(threadId, cursor);
    const queued = [...waiting, ...unconsumed].flatMap((entry) => (entry.command.command === "add_pending" ? [entry.command.task] : []));
    // A stop accepted and not yet consumed: the loop is stopping (its Coder ends at its next step).
    const stopping = unconsumed.some((entry) => entry.command.command === "stop");
    const snapshot = loopState ?? initialLooperSnapshot();
    const gone =
      thread.goneOwner === undefined
        ? ""
        : `\n(interrupted: process ${thread.goneOwner}, which ran it, is gone; \`loopgraph resume ${threadId}\` continues it)`;
    const threadStatus = !loopState && (await hasNoLoop(store, thread)) ? "none" : thread.status;
    return {
      text: formatStatus(snapshot, { queued, task, stopping }) + gone,
      json: { threadId, threadStatus, ...statusJson(snapshot, { queued, task, stopping }) },
    };
  });
}

/**
 * A chat's thread (or one where nothing ran) that has no loop yet: its own status (its last
 * turn finished) says nothing of a loop. A thread of another graph keeps its status.
 */
async function hasNoLoop(store: Pick<StoreTables, "checkpoints">, thread: ThreadRecord): Promise<boolean> {
  if (thread.status === "running" || thread.status === "queued") return false;
  const { outputs } = (await store.checkpoints.plainChannels(thread.threadId, ["outputs"])) as { outputs?: Record<string, unknown> };
  // Nothing ran at all, or a Mediator answered (its output names the loop's thread).
  return (
    outputs === undefined ||
    Object.values(outputs).some((output) => typeof output === "object" && output !== null && "loopThread" in output)
  );
}
