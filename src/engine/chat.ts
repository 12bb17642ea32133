import { randomUUID } from "node:crypto";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { ConfigError } from "../errors.js";
import { loadGraph, resolveGraphPath } from "../graph/load.js";
import type { GraphDefinition } from "../format/types.js";
import { isRunningElsewhere } from "../runs/thread-registry.js";
import { latestValues, openStore, withStore, type Store } from "../runs/store.js";
import type { EventSink } from "../runtime/events.js";
import type { LoopSupervisor } from "./loop-supervisor.js";
import {
  absoluteModelSpec,
  checkModels,
  createLoopSupervisor,
  execute,
  initialVars,
  makeContext,
  mediatorNodeOf,
  prepareNewThread,
  recordNewThread,
  type CommonRunOptions,
  type RunOutcome,
  type RunSettings,
} from "./runner.js";

export interface ChatOptions extends Omit<CommonRunOptions, "onEvent" | "signal" | "looper" | "askApproval"> {
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
}

/**
 * A conversation with a Mediator thread: each `say` is one turn (one run of the thread's graph
 * with the user's message). The Looper it drives runs in the background of this process and
 * outlives the turns.
 */
export class ChatSession {
  constructor(
    readonly threadId: string,
    readonly graph: GraphDefinition,
    readonly workspace: string,
    readonly looper: LoopSupervisor,
    /** Whether the thread was created by this session (else it continues an earlier chat). */
    readonly created: boolean,
    private readonly settings: RunSettings,
    private readonly options: ChatOptions,
  ) {}

  /** One turn: the Mediator answers `text` (streamed through `onEvent`); returns once it has. */
  async say(text: string, turn: TurnOptions = {}): Promise<RunOutcome> {
    return this.withStore(async (store) => {
      const first = Object.keys(await latestValues(store, this.threadId)).length === 0;
      const runOptions: CommonRunOptions = { ...this.options, onEvent: turn.onEvent, signal: turn.signal, looper: this.looper };
      const ctx = makeContext(this.graph, this.threadId, this.workspace, this.settings, runOptions, store);
      store.threads.markRunning(this.threadId, { model: this.settings.runModel, approval: this.settings.approvalMode });
      const input = {
        messages: [new HumanMessage({ content: text, id: randomUUID() })],
        ...(first ? { task: text, vars: initialVars(this.graph) } : {}),
      };
      return execute(this.graph, input, ctx, store, runOptions);
    });
  }

  /** The thread's message log so far (the user's messages, the Mediator's answers, relayed progress). */
  async history(): Promise<BaseMessage[]> {
    return this.withStore(async (store) => ((await latestValues(store, this.threadId)).messages ?? []) as BaseMessage[]);
  }

  private withStore<T>(use: (store: Store) => Promise<T>): Promise<T> {
    return withStore({ db: this.options.db, cwd: this.options.cwd, env: this.options.env }, use);
  }
}

/** Starts a chat thread, or reopens one (`--thread ID`) with the settings it was started with. */
export async function openChat(options: ChatOptions): Promise<ChatSession> {
  const cwd = options.cwd ?? process.cwd();
  const store = openStore({ db: options.db, cwd, env: options.env });
  try {
    const record = options.threadId === undefined ? undefined : store.threads.get(options.threadId);
    const graph = await loadGraph(record ? record.graphFile : resolveGraphPath(options.graph ?? "monitor", cwd));
    const mediator = mediatorNodeOf(graph);
    if (!mediator) {
      throw new ConfigError(
        record
          ? `thread "${record.threadId}" runs graph ${graph.name}, which has no mediator node: continue it with \`loopgraph resume ${record.threadId}\``
          : `graph ${graph.name} has no mediator node: chat needs a graph like monitor`,
      );
    }
    if (record && isRunningElsewhere(record)) {
      throw new ConfigError(`thread "${record.threadId}" is in use by process ${record.pid}: leave that chat first`);
    }
    const thread = record
      ? {
          threadId: record.threadId,
          workspace: record.workspace,
          settings: { runModel: absoluteModelSpec(options.model, cwd) ?? record.model, approvalMode: options.approval ?? record.approval },
        }
      : prepareNewThread(graph, options);
    const looper = createLoopSupervisor(mediator, thread.threadId, thread.workspace, thread.settings, options, store);
    const ctx = makeContext(graph, thread.threadId, thread.workspace, thread.settings, { ...options, looper }, store);
    checkModels(graph, ctx);
    if (!record) {
      recordNewThread(store, graph, thread, "");
      store.threads.markEnded(thread.threadId, "finished");
    }
    return new ChatSession(thread.threadId, graph, thread.workspace, looper, !record, thread.settings, options);
  } finally {
    store.close();
  }
}
