import { ConfigError } from "../errors.js";
import { formatStatus, initialLooperSnapshot, isRunning, parseLooperCommand, statusJson } from "../nodes/looper/index.js";
import type { LooperCommand, LooperSnapshot } from "../state/looper.js";
import { latestValues, requireThread, withStore, type Store, type StoreOptions } from "../runs/store.js";
import { asSeen, type ThreadRecord } from "../runs/thread-registry.js";

export interface SentCommand {
  /** The thread the command went to: the given one, or the loop of a Mediator thread. */
  threadId: string;
  id: number;
  command: LooperCommand;
  /** The thread's run status when the command was queued. */
  threadStatus: ThreadRecord["status"];
  /** A stop for a loop that is not running: nothing was queued (`id` is 0). */
  nothingToStop?: boolean;
}

/** What a stop for a loop that is not running answers (the CLI and the chat's LoopSupervisor). */
export const NOTHING_TO_STOP = "no loop is running: nothing to stop.";

export interface LooperStatus {
  text: string;
  json: ReturnType<typeof statusJson> & { threadId: string; threadStatus: ThreadRecord["status"] };
}

/** The thread a Mediator thread's loop runs in. */
export const loopThreadOf = (mediatorThreadId: string): string => `${mediatorThreadId}.loop`;

/** Where commands for a thread go: a Mediator thread's (chat's) commands go to the loop it started. */
function commandTarget(store: Store, threadId: string): ThreadRecord {
  const thread = requireThread(store, threadId);
  return asSeen(store.threads.get(loopThreadOf(threadId)) ?? thread);
}

/**
 * Queues a command for a thread's Looper, from any process: plain words (`stop`, `add: …`) or
 * JSON. The loop applies it at its next step, exactly once. `status` is answered here instead.
 */
export async function sendCommand(threadId: string, text: string, options: StoreOptions = {}): Promise<SentCommand> {
  const command = parseLooperCommand(text);
  if (!command) {
    throw new ConfigError(`not a Looper command: "${text}": use stop, status, "add: <task>", "start: <task>" or JSON like {"command": "stop"}`);
  }
  return withStore(options, command.command === "status" ? "read" : "write", async (store) => {
    const thread = commandTarget(store, threadId);
    const base = { threadId: thread.threadId, command, threadStatus: thread.status };
    if (command.command === "status") return { ...base, id: 0 };
    if (command.command === "stop" && !(await loopMayRun(store, thread))) return { ...base, id: 0, nothingToStop: true };
    return { ...base, id: store.inbox.post(thread.threadId, text, command) };
  });
}

/**
 * Whether a stop has a loop to stop: the thread's loop is RUNNING (whether or not a process runs
 * it), or a queued start/add_pending will start it, or a run in progress has not taken its first
 * looper step yet.
 */
async function loopMayRun(store: Store, thread: ThreadRecord): Promise<boolean> {
  const { loopState, inboxCursor = 0 } = (await latestValues(store, thread.threadId)) as { loopState?: LooperSnapshot; inboxCursor?: number };
  if (loopState ? isRunning(loopState) : thread.status === "running") return true;
  return store.inbox.after(thread.threadId, inboxCursor).some((entry) => entry.command.command === "start" || entry.command.command === "add_pending");
}

/** The Looper status block of a thread, read from its store: no model call, whether it runs or not. */
export async function looperStatus(threadId: string, options: StoreOptions = {}): Promise<LooperStatus> {
  return withStore(options, "read", async (store) => {
    const thread = commandTarget(store, threadId);
    threadId = thread.threadId;
    const { loopState, inboxCursor: cursor = 0, task = "" } = (await latestValues(store, threadId)) as {
      loopState?: LooperSnapshot;
      inboxCursor?: number;
      task?: string;
    };
    const waiting = store.inbox.after(threadId, cursor);
    const queued = waiting.flatMap((entry) => (entry.command.command === "add_pending" ? [entry.command.task] : []));
    // A stop accepted and not yet consumed: the loop is stopping (its Coder ends at its next step).
    const stopping = waiting.some((entry) => entry.command.command === "stop");
    const snapshot = loopState ?? initialLooperSnapshot();
    const gone = thread.goneOwner === undefined ? "" : `\n(interrupted: process ${thread.goneOwner}, which ran it, is gone; \`loopgraph resume ${threadId}\` continues it)`;
    return {
      text: formatStatus(snapshot, { queued, task, stopping }) + gone,
      json: { threadId, threadStatus: thread.status, ...statusJson(snapshot, { queued, task, stopping }) },
    };
  });
}

/** Commands in the thread's inbox after the cursor of its latest checkpoint. */
export async function hasUnconsumedCommands(store: Store, threadId: string): Promise<boolean> {
  const cursor = ((await latestValues(store, threadId)).inboxCursor as number | undefined) ?? 0;
  return store.inbox.after(threadId, cursor).length > 0;
}
