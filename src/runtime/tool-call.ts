import type { RunnableConfig } from "@langchain/core/runnables";
import { interrupt } from "@langchain/langgraph";
import { cancelledByUser } from "../errors.js";
import { alwaysAnswerFor, decideToolCall, toolFacts, type PolicyOptions } from "../policy/index.js";
import type { PolicyRule } from "../state/rules.js";
import {
  checkToolCalls,
  checkToolResult,
  type CallWork,
  type LoopDetectionOptions,
  type LoopDetectorState,
} from "../tools/loop-detection.js";
import { checkToolCall, executeToolCall, previewChange, unifiedDiff } from "../tools/registry.js";
import { availableSandbox } from "../tools/sandbox.js";
import type { ToolCallRequest, ToolContext, ToolDefinition, ToolResult } from "../tools/types.js";
import { asksAbout, editedArgs, isApprovalAnswer, type ApprovalAnswer, type ApprovalRequest } from "./approval.js";
import type { RunContext } from "./context.js";
import type { NotRun } from "./events.js";
import { currentInstance } from "./call-site.js";
import { performEffect } from "./effects.js";
import { hooksOf, runEventHooks } from "./hooks.js";
import { blockingReason } from "../tools/hooks.js";

export interface ToolCallOptions {
  ctx: RunContext;
  /** The node making the call: approvals, records, events and snapshots name it. */
  node: string;
  /** The tools the node may call. */
  tools: readonly ToolDefinition[];
  /** The graph's, the user's and the session's rules (the built-in rules apply on top). */
  rules: readonly PolicyRule[];
  /** The node's loop detector so far, and its thresholds. */
  loop: { state: LoopDetectorState; options: LoopDetectionOptions };
  /** Where oversized results are saved (absolute). */
  artifactsDir: string;
  /** Results longer than this (characters) are cut to head and tail, the full text saved as an artifact. */
  resultBudgetChars: number;
  /** The LangGraph config of the step the call runs in: its workspace snapshots are keyed on its checkpoint. */
  config?: RunnableConfig;
  /** The files the node read (or wrote) in this turn, with their stamps: `edit_file` needs its file among them, unchanged. */
  fileStamps?: Readonly<Record<string, string>>;
  /** A call the node refuses outright (a tool its mode does not allow): the result, given before the policy and any prompt. */
  refuse?: (call: ToolCallRequest) => ToolResult | undefined;
  /** Runs the `task` tool's subagent (see ToolContext.subagent). */
  subagent?: ToolContext["subagent"];
}

export interface ToolCallOutcome {
  /** What the model is shown (a blocked, rejected or failed call included). */
  result: ToolResult;
  /** The loop detector after this call. */
  loop: LoopDetectorState;
  /** The call repeats earlier ones: said to the model after the result. */
  loopWarning?: string;
  /** The call repeated earlier ones past the limit: it did not run, and the turn must end with this reason. */
  loopFailure?: string;
  /** The rule the user's "always" answer added, for the rest of the thread. */
  sessionRule?: PolicyRule;
  /** The same error came back too many times in a row: the turn must end with this reason (`repeated_error`). */
  repeatedError?: string;
  /** The user edited the call's arguments before approving it: what it ran with (the result tells the model). */
  editedArgs?: unknown;
}

/** Results of calls that did not run (a mode's refusal too): they neither continue nor end a streak of reads. */
const NOT_RUN_KINDS = new Set(["blocked", "rejected", "invalid_arguments", "tool_not_found", "not_allowed"]);

/** How a call counts for the read streak: a read continues it, a change (that ran) ends it. */
export function callWork(name: string, result: Pick<ToolResult, "errorKind">): CallWork {
  if (result.errorKind && NOT_RUN_KINDS.has(result.errorKind)) return "other";
  const { effect } = toolFacts(name);
  return effect === "read" ? "read" : effect === "edit" || effect === "execute" ? "change" : "other";
}

/**
 * One tool call (see `decideAndRun`), then the anti-patterns judged on its result: a long streak
 * of reads adds a warning for the model, the same error too many times in a row ends the turn.
 */
export async function runToolCall(call: ToolCallRequest, options: ToolCallOptions): Promise<ToolCallOutcome> {
  const outcome = await decideAndRun(call, options);
  if (outcome.loopFailure !== undefined) return outcome;
  const judged = judgeResult(call, outcome.result, outcome.loop, outcome.loopWarning, options.loop.options);
  return {
    ...outcome,
    loop: judged.loop,
    ...(judged.warning !== undefined && { loopWarning: judged.warning }),
    ...(judged.failure !== undefined && { repeatedError: judged.failure }),
  };
}

/**
 * A call's result judged, after the loop detector saw the call (`loop`, and its warning if it
 * gave one): a streak of reads adds a warning, the same error too many times ends the turn.
 */
function judgeResult(
  call: ToolCallRequest,
  result: Pick<ToolResult, "ok" | "errorKind" | "content">,
  loop: LoopDetectorState,
  loopWarning: string | undefined,
  options: LoopDetectionOptions,
): { loop: LoopDetectorState; warning?: string; failure?: string } {
  const check = checkToolResult(loop, { name: call.name, work: callWork(call.name, result) }, result, options);
  const said = [loopWarning, check.warning].filter((text) => text !== undefined);
  return {
    loop: check.state,
    ...(said.length > 0 && { warning: said.join("\n\n") }),
    ...(check.failure !== undefined && { failure: check.failure }),
  };
}

/**
 * One read of a batch that runs at once (see `runsBesideOtherReads`): the call through every
 * check, as `runToolCall`, but not judged: the loop detector judges the batch after all of it
 * ran (`judgeReads`), in the model's order, as if the calls had run one after the other.
 */
export async function runConcurrentRead(call: ToolCallRequest, options: ToolCallOptions): Promise<ToolResult> {
  return (await decideAndRun(call, options)).result;
}

export interface JudgedReads {
  /** The loop detector after the batch. */
  loop: LoopDetectorState;
  /** What to say to the model after each call's result (by call id): a streak of reads reached its limit. */
  warnings: Map<string, string>;
  /** The same error came back too many times in a row: the turn must end with this reason. */
  repeatedError?: string;
}

/** A batch of reads that ran at once, judged in the model's order: each call then its result, as `runToolCall` judges one. */
export function judgeReads(
  loop: LoopDetectorState,
  ran: readonly { call: ToolCallRequest; result: Pick<ToolResult, "ok" | "errorKind" | "content"> }[],
  options: LoopDetectionOptions,
): JudgedReads {
  const warnings = new Map<string, string>();
  for (const { call, result } of ran) {
    const called = checkToolCalls(loop, [{ name: call.name, args: call.args }], options);
    const judged = judgeResult(call, result, called.state, called.verdict.status === "warn" ? called.verdict.message : undefined, options);
    loop = judged.loop;
    if (judged.warning !== undefined) warnings.set(call.id, judged.warning);
    if (judged.failure !== undefined) return { loop, warnings, repeatedError: judged.failure };
  }
  return { loop, warnings };
}

/**
 * One tool call, through every check in order: loop detection → the policy gate → the user's
 * approval (a LangGraph interrupt: the run pauses until answered) → a workspace snapshot around
 * it → execution → the record. Never throws for the call's own failures: each becomes a result.
 * A recorded replay answers from the record: no tool runs, and no snapshot is taken.
 */
async function decideAndRun(call: ToolCallRequest, options: ToolCallOptions): Promise<ToolCallOutcome & { editNote?: string }> {
  const { ctx, node } = options;
  const { threadId } = ctx;
  /** The call's `tool_result` event: its result, the kind of its error, and why it did not run, if it did not. */
  const emitResult = (result: ToolResult, notRun?: NotRun): void =>
    ctx.emit({
      type: "tool_result",
      threadId,
      node,
      id: call.id,
      name: call.name,
      ok: result.ok,
      result: result.content,
      ...(!result.ok && result.errorKind && { errorKind: result.errorKind }),
      ...(notRun && { notRun }),
    });
  const loop = checkToolCalls(options.loop.state, [{ name: call.name, args: call.args }], options.loop.options);
  if (loop.verdict.status === "fail") {
    // Not run, yet shown like any call: the user (and --json) sees which call the loop detector stopped.
    const result: ToolResult = { ok: false, errorKind: "blocked", content: loop.verdict.reason };
    ctx.emit({ type: "tool_call", threadId, node, id: call.id, name: call.name, args: call.args });
    emitResult(result, "blocked");
    return { result, loop: loop.state, loopFailure: loop.verdict.reason };
  }
  const outcome: Omit<ToolCallOutcome, "result"> & { editNote?: string } = {
    loop: loop.state,
    ...(loop.verdict.status === "warn" ? { loopWarning: loop.verdict.message } : {}),
  };
  if (call.invalidArguments !== undefined) {
    // Nothing to decide on and nothing to run: the model is told, and sends the call again.
    const result = invalidArgumentsResult(call.name, call.invalidArguments);
    ctx.emit({ type: "tool_call", threadId, node, id: call.id, name: call.name, args: call.args });
    emitResult(result, "invalid_arguments");
    return { ...outcome, result };
  }

  // A tool the node's mode does not allow, an unknown tool or arguments its schema refuses: nothing to decide on or to ask about, the model is told at once.
  const refused = options.refuse?.(call);
  const checked = refused ? { failure: refused } : checkToolCall(call, options.tools);
  if ("failure" in checked) {
    const result = checked.failure;
    ctx.emit({ type: "tool_call", threadId, node, id: call.id, name: call.name, args: call.args });
    emitResult(result, notRunOf(result));
    return { ...outcome, result };
  }

  const policyCall = { name: call.name, args: call.args };
  const sandbox = sandboxOf(ctx);
  const policy = policyOptions(options);
  const toolContext = (): ToolContext => ({
    workspace: ctx.workspace,
    env: ctx.env,
    artifactsDir: options.artifactsDir,
    threadId,
    signal: ctx.signal,
    resultBudgetChars: options.resultBudgetChars,
    sandbox,
    secrets: ctx.secrets,
    ...(ctx.commandVariables ? { commandVariables: ctx.commandVariables } : {}),
    ...(ctx.commandGroups ? { commandGroups: ctx.commandGroups } : {}),
    ...(options.fileStamps ? { fileStamps: options.fileStamps } : {}),
    onOutput: (stream, text) => ctx.emit({ type: "tool_output", threadId, node, id: call.id, name: call.name, stream, text }),
    ...(options.subagent ? { subagent: options.subagent } : {}),
  });
  const gate = decideToolCall(policyCall, policy);
  let result: ToolResult | undefined = gate.kind === "blocked" ? gate.result : undefined;
  // A call the user answered takes the answer, even if the policy would now let it run: a rejection stays a rejection.
  const answered = ctx.answering?.some((request) => asksAbout(request, node, call)) === true;
  if (gate.kind === "ask" || answered) {
    const reason = gate.kind === "run" ? "the user was asked about this call" : gate.verdict.reason;
    // The user sees what an edit would change, not only where, and what "always" would allow.
    const diff = ctx.replayEffect ? undefined : await previewChange(call, toolContext(), options.tools);
    // A plan is approved once: "always" has nothing to cover.
    const always = gate.kind === "blocked" || checked.tool.effect === "plan" ? undefined : alwaysAnswerFor(policyCall, gate.verdict);
    const details = checked.tool.approvalDetails?.(checked.args);
    const request: ApprovalRequest = {
      kind: "approval",
      node,
      tool: call.name,
      args: call.args,
      callId: call.id,
      ...instanceOf(node),
      reason,
      ...(always && { always: always.description }),
      ...(diff ? { diff } : {}),
      ...(details !== undefined && { details }),
    };
    const given = interrupt<ApprovalRequest, unknown>(request);
    // Anything but an approval answer (e.g. `resume --answer TEXT`) rejects: only an explicit yes runs a call.
    const answer: ApprovalAnswer = isApprovalAnswer(given) ? given : { decision: "reject", reason: "the answer given was not an approval" };
    ctx.record?.({ kind: "approval", node, name: call.name, args: call.args, answer });
    if (answer.decision === "reject") result = rejection(answer);
    else if (answer.decision === "always" && always) outcome.sessionRule = always.rule;
    const edited = editedArgs(answer, call.args);
    if (edited !== call.args) {
      // The user's edit is what runs (and is recorded): checked as the model's would be, and never past a deny.
      const model = call;
      call = { ...call, args: edited };
      outcome.editedArgs = edited;
      const again = checkToolCall(call, options.tools);
      const denied = decideToolCall({ name: call.name, args: edited }, policy);
      if ("failure" in again)
        result = {
          ...again.failure,
          content: `the arguments the user edited are not valid, so the call did not run: ${again.failure.content}`,
        };
      else if (denied.kind === "blocked") result = denied.result;
      outcome.editNote = describeEdit(model.args, edited);
    }
  }
  // The user's before_tool hooks are the last gate: a call they block does not run.
  const hookInput = { thread: threadId, node, workspace: ctx.workspace, tool: { id: call.id, name: call.name, args: call.args } };
  if (!result) {
    const record = { args: { tool: call.name, args: call.args } };
    const outcomes = await runEventHooks(ctx, hooksOf(ctx, "before_tool", call.name), { event: "before_tool", ...hookInput }, toolContext, {
      node,
      record,
    });
    const reason = outcomes.map(blockingReason).find((text) => text !== undefined);
    if (reason !== undefined) result = { ok: false, errorKind: "blocked", content: `Blocked by a hook: ${reason}` };
  }
  // Every call is announced, a blocked or rejected one too: its result alone would not name it.
  ctx.emit({ type: "tool_call", threadId, node, id: call.id, name: call.name, args: call.args });
  const notRun: NotRun | undefined = result ? notRunOf(result) : undefined;
  if (!result) {
    const execute = async () => {
      const executed = await executeToolCall(call, toolContext(), options.tools);
      // Stopped by the user (Ctrl-C): no result is recorded or checkpointed, so a resume runs the call again.
      if (cancelledByUser(ctx.signal)) throw ctx.signal.reason;
      return executed;
    };
    const step = { node, tool: call.name, toolCallId: call.id, config: options.config };
    const request = { kind: "tool" as const, node, name: call.name, args: call.args };
    // A composite call's own steps are checkpointed and recorded (and replayed) one by one: the call is not one effect.
    const composite = checked.tool.composite === true;
    result = composite
      ? await execute()
      : await performEffect(ctx, request, () => (ctx.snapshots ? ctx.snapshots.around(step, execute) : execute()));
    // What the user's after_tool hooks print is added to the result the model sees.
    const shown = { ok: result.ok, ...(result.errorKind && { errorKind: result.errorKind }), content: result.content };
    const record = { args: { tool: call.name, args: call.args, result: shown } };
    const outcomes = await runEventHooks(
      ctx,
      hooksOf(ctx, "after_tool", call.name),
      { event: "after_tool", ...hookInput, result: shown },
      toolContext,
      { node, record },
    );
    const notes = outcomes
      .filter((outcome) => outcome.exitCode === 0 && outcome.stdout.trim() !== "")
      .map((outcome) => outcome.stdout.trim());
    if (notes.length > 0) result = { ...result, content: `${result.content}\n\n[after_tool hook]\n${notes.join("\n")}` };
  }
  // The model is told its call was edited, and how: its own arguments are what its history shows.
  if (outcome.editNote !== undefined) result = { ...result, content: `${result.content}\n\n${outcome.editNote}` };
  emitResult(result, notRun);
  const { editNote: _, ...decided } = outcome;
  return { ...decided, result };
}

const sandboxOf = (ctx: RunContext) => ctx.sandbox ?? availableSandbox(ctx.env);

/** What the policy decides a node's calls with: its rules, the run's approval mode, workspace and sandbox. */
function policyOptions({ ctx, rules }: Pick<ToolCallOptions, "ctx" | "rules">): PolicyOptions {
  return { rules, mode: ctx.settings.approval, workspace: ctx.workspace, sandbox: sandboxOf(ctx).name };
}

/**
 * Whether a call may run at the same time as the other reads of its model turn: a read-only tool
 * (a built-in read, or an MCP tool whose allow rule says `read_only`) that is not composite (a
 * subagent) and not refused by the node's mode, with valid arguments, that the policy runs
 * without asking and whose answer no one is giving. Anything else (a write, a command, a call
 * that asks or is blocked) runs alone, in its order.
 */
export function runsBesideOtherReads(
  call: ToolCallRequest,
  options: Pick<ToolCallOptions, "ctx" | "node" | "tools" | "rules" | "refuse">,
): boolean {
  if (call.invalidArguments !== undefined || options.refuse?.(call)) return false;
  const checked = checkToolCall(call, options.tools);
  if ("failure" in checked || checked.tool.composite === true) return false;
  const { effect } = checked.tool;
  if (effect !== "read" && effect !== "external") return false;
  if (options.ctx.answering?.some((request) => asksAbout(request, options.node, call)) === true) return false;
  const gate = decideToolCall({ name: call.name, args: call.args }, policyOptions(options));
  return gate.kind === "run" && (effect === "read" || gate.verdict.rule?.readOnly === true);
}

/** Why a call answered without running did not run, as its `tool_result` event says: its error's kind, or `blocked` (the loop detector, the policy, a hook). */
function notRunOf(result: ToolResult): NotRun {
  const kind = result.errorKind;
  return kind === "rejected" || kind === "not_allowed" || kind === "invalid_arguments" || kind === "tool_not_found" ? kind : "blocked";
}

/** Lines of a changed text argument shown to the model. */
const EDIT_DIFF_LINES = 60;

/** What the user changed in a call's arguments, for the model: each changed argument, a text's as a diff. */
export function describeEdit(before: unknown, after: unknown): string {
  const old = (before ?? {}) as Record<string, unknown>;
  const now = (after ?? {}) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(old), ...Object.keys(now)])].filter(
    (key) => JSON.stringify(old[key]) !== JSON.stringify(now[key]),
  );
  const changes = keys.map((key) => {
    const [from, to] = [old[key], now[key]];
    if (typeof from === "string" && typeof to === "string" && (from.includes("\n") || to.includes("\n"))) {
      return `${key}:\n${unifiedDiff(key, key, from, to, { context: 2, max: EDIT_DIFF_LINES, hunksOnly: true })}`;
    }
    const show = (value: unknown) => (value === undefined ? "(none)" : JSON.stringify(value).slice(0, 300));
    return `${key}: ${show(from)} → ${show(to)}`;
  });
  return `The user edited this call before approving it; it ran with their arguments, not yours. Changed:\n${changes.join("\n")}`;
}

/** The result of a call whose argument text is not one JSON object (`reason` says why). */
export function invalidArgumentsResult(tool: string, reason: string): ToolResult {
  return {
    ok: false,
    errorKind: "invalid_arguments",
    content: `the arguments of ${tool || "the tool call"} are not valid JSON: ${reason}; send them again as one JSON object`,
  };
}

function rejection(answer: ApprovalAnswer): ToolResult {
  const why = answer.reason ? `: ${answer.reason}` : "";
  return { ok: false, errorKind: "rejected", content: `the user rejected this call${why}. Do not retry it as is.` };
}

/** The map instance a call of `node` is made in, as an approval request names it. */
function instanceOf(node: string): { instance?: number } {
  const instance = currentInstance();
  return instance?.node === node ? { instance: instance.index } : {};
}
