import { randomUUID } from "node:crypto";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { ConfigError } from "../errors.js";
import type { GraphDefinition } from "../format/types.js";
import { loadGraph, resolveGraphPath } from "../graph/load.js";
import { latestValues, openStore } from "../store/store.js";
import { ownerText, type ThreadRecord } from "../runs/thread-registry.js";
import type { EventSink } from "../runtime/events.js";
import type { InboxMessage } from "../runs/inbox.js";
import { messageText } from "../runtime/model-session.js";
import { unansweredMessages } from "./commands.js";
import { loopEndRequest, type LoopSupervisor } from "./loop-supervisor.js";
import { createLoopSupervisor } from "./runner.js";
import type { CommonRunOptions, RunOutcome } from "./run-types.js";
import { initialVars, mediatorNodeOf, Thread } from "./thread.js";

export interface ChatOptions extends Omit<CommonRunOptions, "onEvent" | "signal" | "askApproval"> {
  /** Graph of a new chat (default `monitor`); it must have a mediator node. */
  graph?: string;
  /** Continue this chat thread, or start a new one with this id. */
  threadId?: string;
  workspace?: string;
}

export interface TurnOptions {
  /** Aborting it cancels the answer in progress (Ctrl-C). */
  signal?: AbortSignal;
  onEvent?: EventSink;
  /** The text is the message with this inbox id, sent from another process: the turn marks it answered. */
  inboxId?: number;
}

/**
 * A conversation with a Mediator thread: each `say` is one turn (one run of the thread's graph
 * with the user's message). The Looper it drives runs in the background of this process and
 * outlives the turns.
 */
export class ChatSession {
  readonly threadId: string;
  readonly graph: GraphDefinition;
  readonly workspace: string;
  readonly looper: LoopSupervisor;

  constructor(
    /** The chat's thread; its store stays open for the session's turns (see `close`). */
    private readonly thread: Thread,
    /** Whether the thread was created by this session (else it continues an earlier chat). */
    readonly created: boolean,
  ) {
    this.threadId = thread.threadId;
    this.graph = thread.graph;
    this.workspace = thread.workspace;
    this.looper = thread.looper!;
  }

  /** One turn: the Mediator answers `text` (streamed through `onEvent`); returns once it has. */
  async say(text: string, turn: TurnOptions = {}): Promise<RunOutcome> {
    return this.turn(new HumanMessage({ content: text, id: randomUUID() }), turn);
  }

  /**
   * The Mediator's summary once the loop has ended (`loop`: how its run ended), unprompted: one
   * turn on an `[AUTO]` message from the Looper, as `run monitor` ends with.
   */
  async summarise(loop: RunOutcome, turn: TurnOptions = {}): Promise<RunOutcome> {
    const status = await this.looper.status();
    const content = loopEndRequest(
      loop,
      `Its status now:\n${status}\nSum up for the user in two or three short sentences: what was done, how it ended, what is still queued.`,
    );
    return this.turn(new HumanMessage({ id: randomUUID(), name: "looper", content }), turn);
  }

  /** Free text sent to this chat from another process (`loopgraph send <thread> "…"`) and not answered yet. */
  async unanswered(): Promise<InboxMessage[]> {
    return unansweredMessages(this.thread.store, this.threadId);
  }

  private async turn(message: HumanMessage, turn: TurnOptions): Promise<RunOutcome> {
    const first = Object.keys(await latestValues(this.thread.store, this.threadId)).length === 0;
    await this.thread.markRunning(inUseByChat);
    const input = {
      messages: [message],
      ...(first ? { task: messageText(message), vars: initialVars(this.graph) } : {}),
      ...(turn.inboxId !== undefined ? { inboxCursor: turn.inboxId } : {}),
    };
    return this.thread.execute(input, this.thread.context({ onEvent: turn.onEvent, signal: turn.signal }));
  }

  /** The thread's message log so far (the user's messages, the Mediator's answers, relayed progress). */
  async history(): Promise<BaseMessage[]> {
    return ((await latestValues(this.thread.store, this.threadId)).messages ?? []) as BaseMessage[];
  }

  /** Closes the session's store (its loop's runs have stores of their own). */
  close(): Promise<void> {
    return this.thread.store.close();
  }
}

/** The refusal of a chat thread another live process runs (another chat, or a resume). */
function inUseByChat(record: ThreadRecord): string {
  return `thread "${record.threadId}" is in use by ${ownerText(record)}: leave that chat first`;
}

/** Starts a chat thread, or reopens one (`--thread ID`) with the settings it was started with. */
export async function openChat(options: ChatOptions): Promise<ChatSession> {
  const cwd = options.cwd ?? process.cwd();
  const store = await openStore({ db: options.db, cwd, env: options.settings.env }, "create");
  try {
    const record = options.threadId === undefined ? undefined : await store.threads.get(options.threadId);
    const trustNotes: string[] = [];
    const forRun = { env: options.settings.env, notes: trustNotes };
    const graph = await loadGraph(record ? record.graphFile : resolveGraphPath(options.graph ?? "monitor", cwd, undefined, forRun));
    if (!mediatorNodeOf(graph)) {
      throw new ConfigError(
        record
          ? `thread "${record.threadId}" runs graph ${graph.name}, which has no mediator node: continue it with \`loopgraph resume ${record.threadId}\``
          : `graph ${graph.name} has no mediator node: chat needs a graph like monitor`,
      );
    }
    const extra = { looper: createLoopSupervisor, trustNotes };
    const thread = record
      ? await Thread.open(store, record, options, { ...extra, graph, inUse: inUseByChat })
      : Thread.prepare(store, graph, Thread.newThread(graph, options), options, extra);
    // Between turns the chat does not hold its thread: each turn claims it (`say`).
    await thread.release();
    if (!record) {
      await thread.record("");
      await store.threads.markEnded(thread.threadId, "finished");
    }
    return new ChatSession(thread, !record);
  } catch (error) {
    await store.close();
    throw error;
  }
}
