import { ConfigError } from "../errors.js";
import { loadGraph } from "../graph/load.js";
import { isRunning, NATURAL_FORMS, parseLooperCommand, parseNaturalCommand } from "../nodes/looper/index.js";
import type { LooperCommand, LooperSnapshot } from "../state/looper.js";
import { requireThread, withStore, type Store, type StoreOptions, type StoreTables } from "../store/store.js";
import { asSeen, type ThreadRecord } from "../runs/thread-registry.js";
import type { InboxEntry } from "../runs/inbox.js";
import { mediatorKind } from "../nodes/mediator/kind.js";
import { nodesOfKind } from "../runtime/node-kind.js";
import { commandTarget, loopThreadOf } from "./status.js";

export { looperStatus, loopThreadOf, type LooperStatus } from "./status.js";

export interface SentCommand {
  kind: "command";
  /** The thread the command went to: the given one, or the loop of a Mediator thread. */
  threadId: string;
  /** The inbox id; 0 when nothing was queued (`status`, or `stop` for a chat with no loop). */
  id: number;
  command: LooperCommand;
  /** The thread's run status when the command was queued; "none" for a chat's loop not started yet. */
  threadStatus: ThreadRecord["status"] | "none";
  /** Set when the command went to the loop of this Mediator (chat) thread. */
  chat?: string;
  /** A stop for a loop that is not running: nothing was queued (`id` is 0). */
  nothingToStop?: boolean;
  /** The text was plain English that the Looper's rules read as this command ("please stop" → stop). */
  understood?: true;
}

/** What a stop for a loop that is not running answers (the CLI and the chat's LoopSupervisor). */
export const NOTHING_TO_STOP = "no loop is running: nothing to stop.";

/** Free text sent to a Mediator (chat) thread: the chat answers it (now if open, else when it next opens). */
export interface SentMessage {
  kind: "message";
  threadId: string;
  id: number;
}

/** Whether a thread runs a graph with a mediator node (a chat's thread, or `run monitor`'s). */
export async function isMediatorThread(record: ThreadRecord): Promise<boolean> {
  try {
    return nodesOfKind(await loadGraph(record.graphFile), mediatorKind).length > 0;
  } catch {
    return false;
  }
}

/**
 * Sends what the user typed to a thread, from any process. A Looper command (plain words like
 * `stop`, `add: …`, or JSON) is queued for the thread's Looper, applied at its next step,
 * exactly once; `status` is answered here instead. Given a Mediator (chat) thread, commands go
 * to its loop `<thread>.loop`, queued even before that loop exists (the chat starts it), and
 * free text goes to the Mediator, which answers it in the chat.
 */
export async function sendCommand(threadId: string, text: string, options: StoreOptions): Promise<SentCommand | SentMessage> {
  const exact = parseLooperCommand(text);
  const mediator = await withStore(options, "read", async (store) => {
    const record = await requireThread(store, threadId);
    return (await store.threads.get(loopThreadOf(threadId))) !== undefined || (await isMediatorThread(record));
  });
  // A Mediator understands free text itself; a Looper thread reads plain English by its rules.
  const command = exact ?? (mediator ? undefined : parseNaturalCommand(text));
  if (!command && !mediator) {
    throw new ConfigError(`not understood as a Looper command: "${text}". Thread ${threadId} runs a Looper, which takes: ${NATURAL_FORMS}`);
  }
  const understood = !exact && command ? { understood: true as const } : {};
  return withStore(options, command?.command === "status" ? "read" : "write", async (store): Promise<SentCommand | SentMessage> => {
    if (!command) return { kind: "message", threadId, id: await store.inbox.postMessage(threadId, text.trim()) };
    if (mediator) {
      const loop = await store.threads.get(loopThreadOf(threadId));
      const loopId = loopThreadOf(threadId);
      const base = {
        kind: "command" as const,
        threadId: loopId,
        command,
        threadStatus: loop ? asSeen(loop).status : ("none" as const),
        chat: threadId,
      };
      if (command.command === "status") return { ...base, id: 0 };
      // No loop yet, or an idle one: there is nothing to stop. A start or a task waits in its inbox for the chat.
      if (command.command === "stop" && !(loop && (await loopMayRun(store, asSeen(loop))))) return { ...base, id: 0, nothingToStop: true };
      return { ...base, id: await store.inbox.post(loopId, text, command) };
    }
    const thread = await commandTarget(store, threadId);
    const base = { kind: "command" as const, threadId: thread.threadId, command, threadStatus: thread.status, ...understood };
    if (command.command === "status") return { ...base, id: 0 };
    if (command.command === "stop" && !(await loopMayRun(store, thread))) return { ...base, id: 0, nothingToStop: true };
    return { ...base, id: await store.inbox.post(thread.threadId, text, command) };
  });
}

/**
 * Whether a stop has a loop to stop: the thread's loop is RUNNING (whether or not a process runs
 * it), or a queued start/add_pending will start it, or a run in progress has not taken its first
 * looper step yet.
 */
async function loopMayRun(store: Store, thread: ThreadRecord): Promise<boolean> {
  const { loopState, inboxCursor = 0 } = (await store.checkpoints.plainChannels(thread.threadId, ["loopState", "inboxCursor"])) as {
    loopState?: LooperSnapshot;
    inboxCursor?: number;
  };
  if (loopState ? isRunning(loopState) : thread.status === "running") return true;
  return hasQueuedTask(store, thread.threadId, inboxCursor);
}

/** A command that starts an idle loop: `start`, or `add_pending` (a task added while idle starts it). */
export const startsLoop = (command: LooperCommand): boolean => command.command === "start" || command.command === "add_pending";

/** Whether a command that starts a loop waits in the thread's inbox, after `cursor` (default: its latest checkpoint's). */
export async function hasQueuedTask(store: StoreTables, threadId: string, cursor?: number): Promise<boolean> {
  return (await firstQueuedTask(store, threadId, cursor)) !== undefined;
}

/** The first command that starts a loop waiting in the thread's inbox, after `cursor` (default: its latest checkpoint's). */
export async function firstQueuedTask(store: StoreTables, threadId: string, cursor?: number): Promise<InboxEntry | undefined> {
  return (await store.inbox.after(threadId, cursor ?? (await inboxCursorOf(store, threadId)))).find((entry) => startsLoop(entry.command));
}

/** Free text sent to a Mediator thread and not answered yet (after the cursor of its latest checkpoint). */
export async function unansweredMessages(store: StoreTables, threadId: string): Promise<{ id: number; text: string }[]> {
  const cursor = await inboxCursorOf(store, threadId);
  return store.inbox.messagesAfter(threadId, cursor);
}

/** Commands in the thread's inbox after the cursor of its latest checkpoint. */
export async function hasUnconsumedCommands(store: StoreTables, threadId: string): Promise<boolean> {
  const cursor = await inboxCursorOf(store, threadId);
  return (await store.inbox.after(threadId, cursor)).length > 0;
}

/** The id of the last inbox entry the thread's latest checkpoint consumed (0: none). */
export async function inboxCursorOf(store: StoreTables, threadId: string): Promise<number> {
  return ((await store.checkpoints.plainChannels(threadId, ["inboxCursor"])).inboxCursor as number | undefined) ?? 0;
}
