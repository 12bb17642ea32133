import { ConfigError } from "../errors.js";
import { formatStatus, initialLooperSnapshot, parseLooperCommand, statusJson } from "../nodes/looper/index.js";
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
}

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
    const id = command.command === "status" ? 0 : store.inbox.post(thread.threadId, text, command);
    return { threadId: thread.threadId, id, command, threadStatus: thread.status };
  });
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
    const queued = store.inbox
      .after(threadId, cursor)
      .flatMap((entry) => (entry.command.command === "add_pending" ? [entry.command.task] : []));
    const snapshot = loopState ?? initialLooperSnapshot();
    const gone = thread.goneOwner === undefined ? "" : `\n(interrupted: process ${thread.goneOwner}, which ran it, is gone; \`loopgraph resume ${threadId}\` continues it)`;
    return {
      text: formatStatus(snapshot, { queued, task }) + gone,
      json: { threadId, threadStatus: thread.status, ...statusJson(snapshot, { queued, task }) },
    };
  });
}

/** Commands in the thread's inbox after the cursor of its latest checkpoint. */
export async function hasUnconsumedCommands(store: Store, threadId: string): Promise<boolean> {
  const cursor = ((await latestValues(store, threadId)).inboxCursor as number | undefined) ?? 0;
  return store.inbox.after(threadId, cursor).length > 0;
}
