import { randomBytes, randomUUID } from "node:crypto";
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { Command, GraphRecursionError, isGraphDrained, type RunControl } from "@langchain/langgraph";
import { ConfigError, ExitCode, LoopgraphError } from "../errors.js";
import { graphChangedWarning, graphFingerprint } from "../graph/fingerprint.js";
import { loadGraph, resolveGraphPath } from "../graph/load.js";
import type { GraphDefinition, MediatorNodeDefinition, NodeDefinition } from "../format/types.js";
import { isRunningElsewhere, type ThreadRecord } from "../runs/thread-registry.js";
import { ensureStateDir, STATE_DIR } from "../runs/state-dir.js";
import { openStore, requireThread, type Store } from "../runs/store.js";
import type { GraphStateValue } from "../state/graph-state.js";
import { isApprovalRequest, type ApprovalAnswer, type ApprovalRequest } from "../nodes/coder/types.js";
import { loadUserRules } from "../policy/index.js";
import { compileGraph, type RunnableGraph } from "./compile.js";
import { createModelCache, noModelMessage, pickModelSpec, type RunContext } from "../runtime/context.js";
import { hasUnconsumedCommands } from "./commands.js";
import { LoopSupervisor } from "./loop-supervisor.js";
import { eventBus } from "../runtime/event-bus.js";
import { createRecorder } from "../runtime/recorder.js";
import type { EventSink, RunEvent } from "../runtime/events.js";
import { AUTO_PREFIX } from "../nodes/looper/node.js";
import { createToolStepSnapshots } from "../snapshots/tool-step-hook.js";
import type { ApprovalMode } from "../state/thread.js";
import type { RunStatus } from "../state/thread.js";

export interface CommonRunOptions {
  /** Database file (`--db`); default LOOPGRAPH_DB or `.loopgraph/loopgraph.db`. */
  db?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run-level model (`--model`); default LOOPGRAPH_MODEL, or for a resume the one recorded. */
  model?: string;
  onEvent?: EventSink;
  /** How tool calls that no rule settles are decided (`--approval`); a resume reuses the recorded mode unless given. */
  approval?: ApprovalMode;
  /**
   * Answers approval requests in this process (a terminal prompt). Without it, or when it
   * returns undefined, the run pauses (exit code 3) until `resume --approve | --reject`.
   */
  askApproval?: (request: ApprovalRequest) => Promise<ApprovalAnswer | undefined>;
  /** `--max-rounds`: the round limit of a loop started by this run (overrides the looper node's). */
  maxRounds?: number;
  /** Ctrl-C: `control.requestDrain()` stops the run at the next step boundary, checkpointed. */
  control?: RunControl;
  signal?: AbortSignal;
  /** The Looper of a mediator graph, when the caller keeps one across runs (`chat`); else one is made per run. */
  looper?: LoopSupervisor;
}

export interface RunOptions extends CommonRunOptions {
  /** Graph name (looked up in ./graphs, then the package's graphs) or path. */
  graph: string;
  task?: string;
  threadId?: string;
  workspace?: string;
}

export interface ResumeOptions extends CommonRunOptions {
  threadId: string;
  /** Answer to a pending `interrupt()` (approvals, questions). */
  answer?: unknown;
}

export interface PauseInfo {
  reason: "breakpoint" | "input";
  node?: string;
  when?: "before" | "after";
  value?: unknown;
}

export interface RunOutcome {
  threadId: string;
  status: RunStatus;
  exitCode: number;
  state: GraphStateValue;
  pause?: PauseInfo;
  error?: string;
}

/** Id of the message that gives a run its task (`--task`), first in the message history. */
export const TASK_MESSAGE_ID = "task";

const THREAD_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function newThreadId(graphName: string): string {
  return `${graphName}-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
}

/** Scripted model files are recorded with absolute paths, so a resume works from any directory. */
export function absoluteModelSpec(spec: string | undefined, cwd: string): string | undefined {
  if (!spec?.startsWith("scripted:")) return spec;
  return `scripted:${resolve(cwd, spec.slice("scripted:".length))}`;
}

const MODEL_KINDS = new Set<NodeDefinition["kind"]>(["agent", "coder", "review", "judge", "mediator"]);

/** Fails fast (exit 2) when a node has no model or a model cannot be configured (e.g. a missing key). */
export function checkModels(graph: GraphDefinition, ctx: RunContext): void {
  checkNodeModels(graph, ctx, noModelMessage(graph.name, process.cwd()));
}

function checkNodeModels(graph: GraphDefinition, ctx: RunContext, missing: string): void {
  for (const node of Object.values(graph.nodes)) {
    if (MODEL_KINDS.has(node.kind)) ctx.model(pickModelSpec(node.model, ctx.runModel, graph.model, missing));
    if (node.kind === "subgraph") checkNodeModels(node.graph, ctx, missing);
    if (node.kind === "mediator") checkNodeModels(node.loop, ctx, missing);
  }
}

export function initialVars(graph: GraphDefinition): Record<string, unknown> {
  return Object.fromEntries(Object.entries(graph.state).map(([name, field]) => [name, field.default]));
}

export interface RunSettings {
  runModel?: string;
  approvalMode: ApprovalMode;
}

export function makeContext(
  graph: GraphDefinition,
  threadId: string,
  workspace: string,
  settings: RunSettings,
  options: CommonRunOptions,
  store: Store,
): RunContext {
  const cwd = options.cwd ?? process.cwd();
  ensureStateDir(join(workspace, STATE_DIR));
  const mediator = mediatorNodeOf(graph);
  const emit = publishingMessages(options.onEvent);
  return {
    threadId,
    workspace,
    ...settings,
    maxRounds: options.maxRounds,
    readInbox: (cursor) => store.inbox.after(threadId, cursor),
    emit,
    snapshots: createToolStepSnapshots({ threadId, workspace, log: store.snapshots, warn: (message) => emit({ type: "warning", threadId, message }) }),
    userRules: loadUserRules(workspace, options.env ?? process.env),
    model: createModelCache(cwd, options.env ?? process.env),
    signal: options.signal ?? new AbortController().signal,
    record: createRecorder(store.recordings, threadId, options.env ?? process.env),
    ...(mediator ? { looper: options.looper ?? createLoopSupervisor(mediator, threadId, workspace, settings, options, store) } : {}),
  };
}

export function mediatorNodeOf(graph: GraphDefinition): MediatorNodeDefinition | undefined {
  return Object.values(graph.nodes).find((node): node is MediatorNodeDefinition => node.kind === "mediator");
}

/** The Looper of a Mediator thread; its loop runs in this process with the thread's settings and store. */
export function createLoopSupervisor(
  mediator: MediatorNodeDefinition,
  threadId: string,
  workspace: string,
  settings: RunSettings,
  options: CommonRunOptions,
  store: Store,
): LoopSupervisor {
  return new LoopSupervisor({
    mediatorThreadId: threadId,
    graphFile: mediator.loop.file,
    workspace,
    ...settings,
    maxRounds: options.maxRounds,
    store: { db: store.path, cwd: options.cwd, env: options.env },
    onEvent: options.onEvent,
    control: options.control,
    run: runGraph,
    resume: resumeRun,
  });
}

/** Passes every event on, and publishes complete messages on the bus topic `message:<thread>`. */
function publishingMessages(onEvent: EventSink | undefined): EventSink {
  return (event) => {
    onEvent?.(event);
    if (event.type === "message" && event.content !== undefined) {
      eventBus.publish({
        threadId: event.threadId,
        node: event.node,
        content: event.content,
        auto: event.content.startsWith(AUTO_PREFIX),
        at: new Date().toISOString(),
      });
    }
  };
}

export interface NewThread {
  threadId: string;
  workspace: string;
  settings: RunSettings;
}

/** Checks the id, workspace and settings of a thread about to start (nothing is written yet). */
export function prepareNewThread(graph: GraphDefinition, options: Pick<RunOptions, "threadId" | "workspace" | "model" | "approval" | "cwd" | "env">): NewThread {
  const cwd = options.cwd ?? process.cwd();
  if (options.threadId !== undefined && !THREAD_ID.test(options.threadId)) {
    throw new ConfigError(`invalid thread id "${options.threadId}": use letters, digits, ".", "_" or "-" (at most 128)`);
  }
  const workspace = resolve(cwd, options.workspace ?? ".");
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
    throw new ConfigError(`workspace ${workspace} is not a directory: create it or pass --workspace DIR`);
  }
  return {
    threadId: options.threadId ?? newThreadId(graph.name),
    workspace,
    settings: {
      runModel: absoluteModelSpec(options.model ?? (options.env ?? process.env).LOOPGRAPH_MODEL, cwd),
      approvalMode: options.approval ?? "ask",
    },
  };
}

/** Records a new thread in the store; an existing id is an error that says how to continue it. */
export function recordNewThread(store: Store, graph: GraphDefinition, thread: NewThread, task: string): void {
  if (store.threads.get(thread.threadId)) {
    throw new ConfigError(`thread "${thread.threadId}" already exists: continue it with \`loopgraph resume ${thread.threadId}\``);
  }
  store.threads.create({
    threadId: thread.threadId,
    graphFile: graph.file,
    graphHash: graphFingerprint(graph),
    graphName: graph.name,
    task,
    model: thread.settings.runModel,
    approval: thread.settings.approvalMode,
    workspace: thread.workspace,
  });
}

/**
 * Starts a new thread: loads and validates the graph, records the thread, runs until it ends or
 * pauses. For a mediator graph, a loop the Mediator started runs to its end, then the Mediator
 * sums up.
 */
export async function runGraph(options: RunOptions): Promise<RunOutcome> {
  const cwd = options.cwd ?? process.cwd();
  const graph = await loadGraph(resolveGraphPath(options.graph, cwd));
  const thread = prepareNewThread(graph, options);
  const { threadId } = thread;
  const store = openStore({ db: options.db, cwd, env: options.env });
  try {
    const ctx = makeContext(graph, threadId, thread.workspace, thread.settings, options, store);
    checkModels(graph, ctx);
    const task = options.task ?? "";
    recordNewThread(store, graph, thread, task);
    ctx.emit({ type: "run_started", threadId, graph: graph.name, task, resumed: false });
    const input = {
      task,
      messages: task ? [new HumanMessage({ content: task, id: TASK_MESSAGE_ID })] : [],
      vars: initialVars(graph),
    };
    return await followLoop(graph, ctx, store, options, await execute(graph, input, ctx, store, options));
  } finally {
    store.close();
  }
}

/** `run`/`resume` of a mediator graph: once the Mediator's turn is over, a loop it started runs to its end here (see summariseLoop). */
function followLoop(graph: GraphDefinition, ctx: RunContext, store: Store, options: CommonRunOptions, outcome: RunOutcome): Promise<RunOutcome> | RunOutcome {
  return outcome.status === "finished" && ctx.looper?.running ? summariseLoop(graph, ctx, ctx.looper, store, options) : outcome;
}

/**
 * Waits for the running loop to end, then asks the Mediator for a summary. A loop that pauses or
 * is interrupted is reported as such (its thread is the one to resume); a failed loop is
 * summarised, then reported.
 */
async function summariseLoop(graph: GraphDefinition, ctx: RunContext, looper: LoopSupervisor, store: Store, options: CommonRunOptions): Promise<RunOutcome> {
  const loop = (await looper.wait())!;
  if (loop.status === "paused" || loop.status === "interrupted") return loop;
  const ending = loop.status === "failed" ? `the loop failed: ${loop.error ?? "unknown error"}.` : `the loop ended: ${loopEndReason(loop.state)}.`;
  const request = new HumanMessage({ id: randomUUID(), name: "looper", content: `${AUTO_PREFIX} ${ending} Summarise the outcome for the user.` });
  store.threads.markRunning(ctx.threadId, { model: ctx.runModel, approval: ctx.approvalMode });
  const summarised = await execute(graph, { messages: [request] }, ctx, store, options);
  return loop.status === "failed" ? loop : summarised;
}

async function unfinishedThread(store: Store, threadId: string): Promise<boolean> {
  const record = store.threads.get(threadId);
  return record !== undefined && (record.status !== "finished" || (await hasUnconsumedCommands(store, threadId)));
}

function loopEndReason(state: GraphStateValue): string {
  return (state.loopState as { context?: { endReason?: string } } | undefined)?.context?.endReason ?? "finished";
}

/** Continues a paused, interrupted, failed or crashed thread from its last checkpoint. */
export async function resumeRun(options: ResumeOptions): Promise<RunOutcome> {
  const cwd = options.cwd ?? process.cwd();
  const store = openStore({ db: options.db, cwd, env: options.env });
  try {
    const record = requireThread(store, options.threadId);
    // A finished thread runs again from its start when commands were sent to it since (e.g. `add: …` to an idle loop).
    const restart = record.status === "finished" && (await hasUnconsumedCommands(store, record.threadId));
    const continuation = await prepareContinuation(store, record, options);
    const { graph, ctx } = continuation;
    if (record.status === "finished" && !restart) {
      // A Mediator thread is done after each turn; resuming it continues the loop it started.
      if (ctx.looper && (await unfinishedThread(store, ctx.looper.threadId))) {
        const resumed = await ctx.looper.resume(options.answer as ApprovalAnswer | undefined);
        if (!ctx.looper.running) throw new ConfigError(`cannot continue the loop of thread "${record.threadId}": ${resumed}`);
        return await summariseLoop(graph, ctx, ctx.looper, store, options);
      }
      throw new ConfigError(`nothing to resume: thread "${record.threadId}" has finished (see \`loopgraph inspect ${record.threadId}\`)`);
    }
    if (options.answer !== undefined && record.pause?.reason !== "input") {
      throw new ConfigError(`thread "${record.threadId}" is not waiting for an answer: resume it without --answer`);
    }
    startContinuation(store, record, continuation);
    const input = restart ? {} : options.answer === undefined ? null : new Command({ resume: options.answer });
    return await followLoop(graph, ctx, store, options, await execute(graph, input, ctx, store, options));
  } finally {
    store.close();
  }
}

/** An existing thread about to run again (resume, fork): its graph as the files are now, and its context. */
export interface Continuation {
  graph: GraphDefinition;
  ctx: RunContext;
  settings: { model?: string; approval: ApprovalMode };
}

/**
 * Loads the thread's graph and checks its models, with the run's recorded model and approval mode
 * unless `--model` / `--approval` override them. Writes nothing: a bad input leaves the thread as it was.
 */
export async function prepareContinuation(store: Store, record: ThreadRecord, options: CommonRunOptions): Promise<Continuation> {
  if (isRunningElsewhere(record)) {
    throw new ConfigError(`thread "${record.threadId}" is running in process ${record.pid}: stop it first with Ctrl-C`);
  }
  const graph = await loadGraph(record.graphFile);
  const runModel = absoluteModelSpec(options.model, options.cwd ?? process.cwd()) ?? record.model;
  const approvalMode = options.approval ?? record.approval;
  const ctx = makeContext(graph, record.threadId, record.workspace, { runModel, approvalMode }, options, store);
  checkModels(graph, ctx);
  return { graph, ctx, settings: { model: runModel, approval: approvalMode } };
}

/** Marks the thread running in this process and announces it (with a warning when its graph files changed). */
export function startContinuation(
  store: Store,
  record: ThreadRecord,
  { graph, ctx, settings }: Continuation,
  started: { forkedFrom?: string; changedConsequence?: string } = {},
): void {
  store.threads.markRunning(record.threadId, settings);
  const forked = started.forkedFrom === undefined ? {} : { forkedFrom: started.forkedFrom };
  ctx.emit({ type: "run_started", threadId: record.threadId, graph: graph.name, task: record.task, resumed: true, ...forked });
  const changed = graphChangedWarning(record.graphHash, graph, started.changedConsequence);
  if (changed) ctx.emit({ type: "warning", threadId: record.threadId, message: changed });
}

export async function execute(
  graph: GraphDefinition,
  input: unknown,
  ctx: RunContext,
  store: Store,
  options: CommonRunOptions,
): Promise<RunOutcome> {
  const compiled = await compileGraph(graph, ctx, store.saver);
  const config = {
    configurable: { thread_id: ctx.threadId },
    recursionLimit: graph.limits.maxSteps,
    // Each step's checkpoint is written before the next step starts: a crash loses at most the step in flight.
    durability: "sync" as const,
    ...(options.control ? { control: options.control } : {}),
  };
  let outcome: Omit<RunOutcome, "state">;
  let next = input;
  for (;;) {
    try {
      const stream = await compiled.stream(next as never, { ...config, streamMode: "updates" });
      for await (const _update of stream) {
        // Progress is reported by the nodes themselves; draining the stream drives the run.
      }
      outcome = await settledOutcome(compiled, config, graph, ctx.threadId);
    } catch (error) {
      outcome = failureOutcome(error, graph, ctx.threadId);
    }
    const request = outcome.pause?.value;
    if (!options.askApproval || !isApprovalRequest(request)) break;
    const answer = await options.askApproval(request);
    if (!answer) break;
    next = new Command({ resume: answer });
  }
  const state = (await compiled.getState(config)).values as GraphStateValue;
  store.threads.markEnded(ctx.threadId, outcome.status, outcome.error, outcome.pause);
  if (outcome.error) ctx.emit({ type: "error", threadId: ctx.threadId, message: outcome.error });
  if (outcome.pause) ctx.emit({ type: "interrupt", threadId: ctx.threadId, ...outcome.pause });
  const finished: RunEvent = { type: "run_finished", threadId: ctx.threadId, status: outcome.status, exitCode: outcome.exitCode };
  ctx.emit(outcome.error ? { ...finished, message: outcome.error } : finished);
  return { ...outcome, state };
}

type Config = Parameters<RunnableGraph["getState"]>[0];

async function settledOutcome(compiled: RunnableGraph, config: Config, graph: GraphDefinition, threadId: string) {
  const snapshot = await compiled.getState(config);
  if (snapshot.next.length === 0) return { threadId, status: "finished" as const, exitCode: ExitCode.Finished };
  const pending = snapshot.tasks.flatMap((task) => task.interrupts ?? []);
  if (pending.length > 0) {
    const task = snapshot.tasks.find((t) => (t.interrupts ?? []).length > 0);
    return { threadId, status: "paused" as const, exitCode: ExitCode.Paused, pause: { reason: "input" as const, node: task?.name, value: pending[0]?.value } };
  }
  const before = snapshot.next.find((node) => graph.breakpoints.before.includes(node));
  if (before) return { threadId, status: "paused" as const, exitCode: ExitCode.Paused, pause: { reason: "breakpoint" as const, node: before, when: "before" as const } };
  // Paused after a node: the breakpoint node is the one whose visit count rose in the last step.
  const visitsNow = (snapshot.values as GraphStateValue).visits;
  const parent = snapshot.parentConfig ? await compiled.getState(snapshot.parentConfig) : undefined;
  const visitsBefore = (parent?.values as GraphStateValue | undefined)?.visits ?? {};
  const after = graph.breakpoints.after.find((node) => (visitsNow[node] ?? 0) > (visitsBefore[node] ?? 0));
  return { threadId, status: "paused" as const, exitCode: ExitCode.Paused, pause: { reason: "breakpoint" as const, node: after, when: "after" as const } };
}

function failureOutcome(error: unknown, graph: GraphDefinition, threadId: string): Omit<RunOutcome, "state"> {
  if (isGraphDrained(error)) {
    return { threadId, status: "interrupted", exitCode: ExitCode.Interrupted };
  }
  if (error instanceof GraphRecursionError) {
    return {
      threadId,
      status: "failed",
      exitCode: ExitCode.Failed,
      error: `the run reached limits.max_steps (${graph.limits.maxSteps}) of ${graph.file}: raise it or bound the loop with max_visits`,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  const exitCode = error instanceof LoopgraphError ? error.exitCode : ExitCode.Failed;
  return { threadId, status: "failed", exitCode, error: message.split("\n")[0] };
}
