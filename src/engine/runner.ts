import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { Command, GraphRecursionError, isGraphDrained, type RunControl } from "@langchain/langgraph";
import { ConfigError, ExitCode, LoopgraphError } from "../errors.js";
import { graphFingerprint } from "../graph/fingerprint.js";
import { loadGraph, resolveGraphPath } from "../graph/load.js";
import type { GraphDefinition } from "../graph/types.js";
import { isRunningElsewhere } from "../runs/thread-registry.js";
import { ensureStateDir, STATE_DIR } from "../runs/state-dir.js";
import { latestValues, openStore, requireThread, type Store } from "../runs/store.js";
import type { GraphStateValue } from "../state/graph-state.js";
import { isApprovalRequest, type ApprovalAnswer, type ApprovalRequest } from "../coder/types.js";
import { loadUserRules } from "../policy/index.js";
import type { ApprovalMode } from "../policy/types.js";
import { compileGraph, type RunnableGraph } from "./compile.js";
import { createModelCache, pickModelSpec, type RunContext } from "./context.js";
import { eventBus } from "./event-bus.js";
import { createRecorder } from "./recorder.js";
import type { EventSink, RunEvent, RunStatus } from "./events.js";
import { AUTO_PREFIX } from "../nodes/looper.js";

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

const THREAD_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function newThreadId(graphName: string): string {
  return `${graphName}-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
}

/** Scripted model files are recorded with absolute paths, so a resume works from any directory. */
export function absoluteModelSpec(spec: string | undefined, cwd: string): string | undefined {
  if (!spec?.startsWith("scripted:")) return spec;
  return `scripted:${resolve(cwd, spec.slice("scripted:".length))}`;
}

/** Fails fast (exit 2) when a node has no model or a model cannot be configured (e.g. a missing key). */
function checkModels(graph: GraphDefinition, ctx: RunContext): void {
  for (const node of Object.values(graph.nodes)) {
    if (node.kind === "agent" || node.kind === "coder" || node.kind === "review" || node.kind === "judge") ctx.model(pickModelSpec(node.model, ctx.runModel, graph.model));
    if (node.kind === "subgraph") checkModels(node.graph, ctx);
  }
}

function initialVars(graph: GraphDefinition): Record<string, unknown> {
  return Object.fromEntries(Object.entries(graph.state).map(([name, field]) => [name, field.default]));
}

export function makeContext(
  threadId: string,
  workspace: string,
  settings: { runModel?: string; approvalMode: ApprovalMode },
  options: CommonRunOptions,
  store: Store,
): RunContext {
  const cwd = options.cwd ?? process.cwd();
  ensureStateDir(join(workspace, STATE_DIR));
  return {
    threadId,
    workspace,
    ...settings,
    maxRounds: options.maxRounds,
    readInbox: (cursor) => store.inbox.after(threadId, cursor),
    emit: publishingMessages(options.onEvent),
    userRules: loadUserRules(workspace, options.env ?? process.env),
    model: createModelCache(cwd, options.env ?? process.env),
    signal: options.signal ?? new AbortController().signal,
    record: createRecorder(store.recordings, threadId, options.env ?? process.env),
  };
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

/** Starts a new thread: loads and validates the graph, records the thread, runs until it ends or pauses. */
export async function runGraph(options: RunOptions): Promise<RunOutcome> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const graph = await loadGraph(resolveGraphPath(options.graph, cwd));
  if (options.threadId !== undefined && !THREAD_ID.test(options.threadId)) {
    throw new ConfigError(`invalid thread id "${options.threadId}": use letters, digits, ".", "_" or "-" (at most 128)`);
  }
  const threadId = options.threadId ?? newThreadId(graph.name);
  const workspace = resolve(cwd, options.workspace ?? ".");
  if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) {
    throw new ConfigError(`workspace ${workspace} is not a directory: create it or pass --workspace DIR`);
  }
  const runModel = absoluteModelSpec(options.model ?? env.LOOPGRAPH_MODEL, cwd);
  const approvalMode = options.approval ?? "ask";
  const store = openStore({ db: options.db, cwd, env });
  try {
    const ctx = makeContext(threadId, workspace, { runModel, approvalMode }, options, store);
    checkModels(graph, ctx);
    if (store.threads.get(threadId)) {
      throw new ConfigError(`thread "${threadId}" already exists: continue it with \`loopgraph resume ${threadId}\``);
    }
    const task = options.task ?? "";
    store.threads.create({
      threadId,
      graphFile: graph.file,
      graphHash: graphFingerprint(graph),
      graphName: graph.name,
      task,
      model: runModel,
      approval: approvalMode,
      workspace,
    });
    ctx.emit({ type: "run_started", threadId, graph: graph.name, task, resumed: false });
    const input = {
      task,
      messages: task ? [new HumanMessage({ content: task, id: "task" })] : [],
      vars: initialVars(graph),
    };
    return await execute(graph, input, ctx, store, options);
  } finally {
    store.close();
  }
}

/** Continues a paused, interrupted, failed or crashed thread from its last checkpoint. */
export async function resumeRun(options: ResumeOptions): Promise<RunOutcome> {
  const cwd = options.cwd ?? process.cwd();
  const store = openStore({ db: options.db, cwd, env: options.env });
  try {
    const record = requireThread(store, options.threadId);
    // A finished thread runs again from its start when commands were sent to it since (e.g. `add: …` to an idle loop).
    const restart = record.status === "finished" && (await hasUnconsumedCommands(store, record.threadId));
    if (record.status === "finished" && !restart) {
      throw new ConfigError(`nothing to resume: thread "${record.threadId}" has finished (see \`loopgraph inspect ${record.threadId}\`)`);
    }
    if (isRunningElsewhere(record)) {
      throw new ConfigError(`thread "${record.threadId}" is running in process ${record.pid}: stop it first with Ctrl-C`);
    }
    if (options.answer !== undefined && record.pause?.reason !== "input") {
      throw new ConfigError(`thread "${record.threadId}" is not waiting for an answer: resume it without --answer`);
    }
    const graph = await loadGraph(record.graphFile);
    const runModel = absoluteModelSpec(options.model, cwd) ?? record.model;
    const approvalMode = options.approval ?? record.approval;
    const ctx = makeContext(record.threadId, record.workspace, { runModel, approvalMode }, options, store);
    checkModels(graph, ctx);
    store.threads.markRunning(record.threadId, { model: runModel, approval: approvalMode });
    ctx.emit({ type: "run_started", threadId: record.threadId, graph: graph.name, task: record.task, resumed: true });
    if (record.graphHash && record.graphHash !== graphFingerprint(graph)) {
      ctx.emit({
        type: "warning",
        threadId: record.threadId,
        message: `the graph's files (${graph.file}, its prompts, modules or subgraphs) changed since this run started: the rest of the run follows the new version`,
      });
    }
    const input = restart ? {} : options.answer === undefined ? null : new Command({ resume: options.answer });
    return await execute(graph, input, ctx, store, options);
  } finally {
    store.close();
  }
}

/** Commands in the thread's inbox after the cursor of its latest checkpoint. */
export async function hasUnconsumedCommands(store: Store, threadId: string): Promise<boolean> {
  const cursor = ((await latestValues(store, threadId)).inboxCursor as number | undefined) ?? 0;
  return store.inbox.after(threadId, cursor).length > 0;
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
