import { join } from "node:path";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { END, GraphInterrupt, isGraphInterrupt, Send, START, StateGraph } from "@langchain/langgraph";
import { cancelledByUser, LimitError, ModelError } from "../../errors.js";
import type { GraphDefinition } from "../../format/types.js";
import { nodeModelSpec, type RunContext } from "../../runtime/context.js";
import { messageText, startModelSession } from "../../runtime/model-session.js";
import { STATE_DIR } from "../../project.js";
import { BUILTIN_TOOLS, toolSpecs } from "../../tools/index.js";
import type { ScriptedInstance, ToolSpec } from "../../models/types.js";
import type { ScriptedConsumed } from "../../state/graph-state.js";
import { ToolError, type ToolCallRequest, type ToolDefinition, type ToolResult } from "../../tools/types.js";
import { presentPlanTool } from "../../tools/present-plan.js";
import { taskTool } from "../../tools/task.js";
import { completeTaskTool, COMPLETE_TASK, type OutputSchema } from "../../tools/complete-task.js";
import { packagePrompt } from "../../package.js";
import type { CoderMode } from "../../state/thread.js";
import { mcpToolDefinition, type McpHub, type McpToolInfo } from "../../tools/mcp.js";
import { isMcpToolName, MCP_SEPARATOR } from "../../tools/mcp-servers.js";
import { compressHistory, compressionUpdate } from "./compression.js";
import { checkToolCalls, EMPTY_LOOP_DETECTOR_STATE } from "../../tools/loop-detection.js";
import { CoderState, type CoderStateValue } from "./state.js";
import { coderSystemPrompt } from "./system-prompt.js";
import { analyzeComplexity, strategySection } from "./complexity.js";
import {
  addFinding,
  findingsSection,
  PLAN_CHECK_ID,
  requestNote,
  resumedPlanTask,
  stopCheck,
  unfinished,
  withNoteAfter,
  withRequestNote,
  type StopCheck,
} from "./planning.js";
import { effectivePlanning, type PlanningSettings } from "../../tools/planning-config.js";
import { saveFindingTool } from "../../tools/save-finding.js";
import type { CoderFailureKind, CoderResult, ToolLogEntry } from "./types.js";
import type { CoderNodeDefinition } from "./definition.js";
import { SUBAGENT_MAX_STEPS, SUBAGENT_READ_TOOLS, type SubagentType } from "../../tools/subagent-config.js";
import { judgeReads, runConcurrentRead, runsBesideOtherReads, runToolCall } from "../../runtime/tool-call.js";
import { isApprovalRequest } from "../../runtime/approval.js";
import { performEffect } from "../../runtime/effects.js";
import { applicableGraphRules, toolMatches } from "../../policy/index.js";
import { readRegularText } from "../../diagnostics/regular-file.js";

type CoderUpdate = typeof CoderState.Update;

const PREVIEW_CHARS = 400;

/** Reads of one model turn run at once at most this many at a time (the rest in the next batch). */
export const MAX_CONCURRENT_READS = 4;

/** A subagent's planning: none. */
const NO_PLANNING: PlanningSettings = { reminders: 0, twoActionRule: false, stopCheck: 0, findings: 0 };

/** The id of the message telling a subagent to hand in its result with complete_task. */
const COMPLETE_TASK_REMINDER = "complete-task-reminder";

/**
 * The Coder a `task` call runs: a declared type (`subagents:`), or the default read-only explorer.
 * Its node is `<coder>-task` (`<coder>-<type>` for a declared one), which scripted responses name.
 */
function subagentDefinition(def: CoderNodeDefinition, name: string | undefined, type: SubagentType | undefined): CoderNodeDefinition {
  const { model: _, ...rest } = def;
  const model = type?.model ?? def.model;
  return {
    ...rest,
    id: `${def.id}-${name ?? "task"}`,
    promptFile: type?.promptFile ?? packagePrompt("subagent.md"),
    // Never a tool its Coder does not have.
    tools: (type?.tools ?? SUBAGENT_READ_TOOLS).filter((tool) => def.tools.includes(tool)),
    maxSteps: Math.min(def.maxSteps, type?.maxSteps ?? SUBAGENT_MAX_STEPS),
    mode: "agent",
    subagents: {},
    ...(model !== undefined && { model }),
  };
}

/** What the system prompt adds in each mode. */
const MODE_NOTES: Readonly<Record<CoderMode, string>> = {
  agent: "",
  ask:
    "\n\n# Mode: ask\nYou are in ask mode: answer the task from what the read-only tools (read_file, list_dir, glob, grep) show. " +
    "You cannot change files or run commands here; where a change is needed, say what it would be.",
  plan:
    "\n\n# Mode: plan\nYou are in plan mode: investigate with the read-only tools, keep your steps in todo_write, then call present_plan " +
    "with your plan. You may change files or run commands only after the user approves it; if they reject it, revise it as they say.",
};

function lastAiMessage(messages: BaseMessage[]): AIMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.getType() === "ai") return message as AIMessage;
  }
  return undefined;
}

/**
 * Tool calls of the latest model answer that have no result yet, in the order the model made
 * them; then its invalid calls (arguments that are not one JSON object), which are answered
 * with an `invalid_arguments` result and never run.
 */
export function unansweredToolCalls(messages: BaseMessage[]): ToolCallRequest[] {
  const answer = lastAiMessage(messages);
  if (!answer?.tool_calls?.length && !answer?.invalid_tool_calls?.length) return [];
  const answered = new Set(messages.filter((m) => m.getType() === "tool").map((m) => (m as ToolMessage).tool_call_id));
  const calls: ToolCallRequest[] = [
    ...(answer.tool_calls ?? []).map((call) => ({ id: call.id!, name: call.name, args: call.args })),
    ...(answer.invalid_tool_calls ?? []).map((call) => ({
      id: call.id!,
      name: call.name ?? "",
      args: call.args ?? "",
      invalidArguments: call.error ?? "not a JSON object",
    })),
  ];
  return calls.filter((call) => call.id !== undefined && !answered.has(call.id));
}

function toolLogEntry(call: ToolCallRequest, result: ToolResult, editedArgs?: unknown): ToolLogEntry {
  return {
    id: call.id,
    name: call.name,
    args: editedArgs ?? call.args,
    ok: result.ok,
    ...(result.errorKind ? { errorKind: result.errorKind } : {}),
    preview: result.content.slice(0, PREVIEW_CHARS),
    ...(result.artifact ? { artifact: result.artifact } : {}),
  };
}

function failure(state: CoderStateValue, kind: CoderFailureKind, reason: string): CoderResult {
  const summary = lastAiMessage(state.messages);
  return {
    status: "failure",
    summary: summary ? messageText(summary) : "",
    filesChanged: state.filesChanged,
    failureKind: kind,
    failureReason: reason,
    steps: state.steps,
    toolCalls: state.toolLog,
    todos: state.todos,
    ...resultPlanning(state),
  };
}

/** What a result tells of the turn's planning: the task's complexity, the thread's findings. */
function resultPlanning(state: CoderStateValue): Pick<CoderResult, "complexity" | "findings"> {
  return {
    ...(state.complexity && { complexity: { level: state.complexity.level, confidence: state.complexity.confidence } }),
    ...(state.findings.length > 0 && { findings: state.findings }),
  };
}

const MODEL_FAILURES: Partial<Record<ModelError["kind"], CoderFailureKind>> = {
  rate_limit: "model_rate_limit",
  timeout: "model_timeout",
  server: "model_server",
  network: "model_network",
  bad_request: "model_bad_request",
  exhausted: "model_exhausted",
};

function toolMessage(call: ToolCallRequest, result: ToolResult, note?: string): ToolMessage {
  const errorPrefix = result.ok ? "" : `Error (${result.errorKind}): `;
  return new ToolMessage({
    id: `tool-result-${call.id}`,
    tool_call_id: call.id,
    name: call.name,
    content: `${errorPrefix}${result.content}${note ? `\n\n${note}` : ""}`,
    status: result.ok ? "success" : "error",
  });
}

/**
 * The Coder as a LangGraph subgraph: `model` ⇄ `tools`, one tool call per step, so every
 * finished tool call is checkpointed; `finish` writes the structured result. In a loop
 * (`failureRouted`), a stop command sent to the thread ends the turn before the next model or
 * tool call, with a `stopped` failure. When no node takes
 * up a failure result (`failureRouted` false), a model error and the step limit throw instead,
 * before the step is stored, so the run fails (or ends by the limit) and a resume retries.
 */
export function buildCoderGraph(
  def: CoderNodeDefinition,
  graph: GraphDefinition,
  ctx: RunContext,
  failureRouted: boolean,
  subagent?: { output?: OutputSchema },
) {
  const template = readRegularText(def.promptFile);
  // A subagent answers its Coder's question: no reminders, stop checks or findings of its own.
  const planning = subagent ? NO_PLANNING : effectivePlanning(ctx.planning, def.planning);
  // A subagent hands nothing on: it has no task tool of its own, and it answers with complete_task, in every mode.
  const answerTools: readonly ToolDefinition[] = subagent ? [completeTaskTool(subagent.output)] : [];
  const builtinTools: readonly ToolDefinition[] = [
    ...BUILTIN_TOOLS.filter(
      (tool) =>
        def.tools.includes(tool.name) &&
        !(subagent && tool.name === taskTool.name) &&
        !(planning.findings === 0 && tool.name === saveFindingTool.name),
    ),
    ...answerTools,
  ];
  const builtinSpecs = toolSpecs(builtinTools);
  // MCP servers whose tools the node's list can name (`server__tool` globs; by default all).
  const mcpPatterns = def.tools.filter(isMcpToolName);
  const mcpServers = (ctx.mcp?.servers ?? [])
    .map((server) => server.name)
    .filter((name) => mcpPatterns.some((pattern) => toolMatches(pattern.split(MCP_SEPARATOR)[0]!, name)));
  const hub = (): McpHub => {
    if (!ctx.mcp)
      throw new ToolError(
        "failed",
        "this run declares no MCP servers any more (mcp_servers: in the config or the graph): the tool cannot be called",
      );
    return ctx.mcp;
  };
  const mcpDefinitions = new Map<string, ToolDefinition>();
  /** The tools of this turn: the built-in ones, and the MCP tools listed at its start. */
  const toolsOf = (mcpTools: readonly McpToolInfo[] | undefined): readonly ToolDefinition[] => {
    if (!mcpTools?.length) return builtinTools;
    return [
      ...builtinTools,
      ...mcpTools.map((info) => {
        let tool = mcpDefinitions.get(info.name);
        if (!tool) mcpDefinitions.set(info.name, (tool = mcpToolDefinition(info, hub) as ToolDefinition));
        return tool;
      }),
    ];
  };

  // The config files' types, and the node's own, which win over those of the same name.
  const subagentTypes: Readonly<Record<string, SubagentType>> = {
    ...Object.fromEntries((ctx.subagents ?? []).map(({ name, origin: _, ...type }) => [name, type])),
    ...def.subagents,
  };
  const declared = Object.entries(subagentTypes);
  const subagentNote =
    declared.length === 0 || !builtinTools.some((tool) => tool.name === taskTool.name)
      ? ""
      : "\n\n# Subagents\nBesides the default read-only explorer, your task calls may name these (agent: <name>):\n" +
        declared.map(([name, agent]) => `- ${name}${agent.description ? `: ${agent.description}` : ""}`).join("\n");
  /** The turn's mode: fixed in its state at its first model call; before that, the run's, else the node's, else agent. */
  const modeOf = (state: Pick<CoderStateValue, "mode">): CoderMode => state.mode ?? ctx.settings.mode ?? def.mode ?? "agent";
  /** What the model is offered in ask mode (it only reads) and plan mode (it reads, keeps a todo list and presents its plan), with their specs. */
  const readTools = [...builtinTools.filter((tool) => tool.effect === "read"), ...answerTools];
  const planTools = [...builtinTools.filter((tool) => tool.effect === "read" || tool.effect === "state"), presentPlanTool];
  // Their specs, made the first time a turn runs in that mode.
  const modeSpecs: Partial<Record<"ask" | "plan", ToolSpec[]>> = {};
  /** What the model is offered in a mode: agent has every tool, the MCP servers' listed ones too. */
  const offered = (mode: CoderMode, state: Pick<CoderStateValue, "mcpTools">): readonly ToolDefinition[] =>
    mode === "ask" ? readTools : mode === "plan" ? planTools : toolsOf(state.mcpTools);
  /** Whether the model is offered a tool now. */
  const offers = (mode: CoderMode, state: CoderStateValue, name: string): boolean =>
    offered(mode, state).some((tool) => tool.name === name);
  /** Whether a tool only reads (a read, a search, a listing): what the 2-action rule counts. */
  const isRead = (name: string): boolean => builtinTools.some((tool) => tool.name === name && tool.effect === "read");
  /** A call of a tool the mode does not offer is refused before the policy: never run, never asked about. */
  const refuseFor =
    (mode: CoderMode, state: Pick<CoderStateValue, "mcpTools">) =>
    (call: ToolCallRequest): ToolResult | undefined => {
      if (offered(mode, state).some((tool) => tool.name === call.name)) return undefined;
      const exists = toolsOf(state.mcpTools).some((tool) => tool.name === call.name) || call.name === presentPlanTool.name;
      if (!exists) return undefined;
      const why =
        mode === "ask"
          ? "ask mode only reads: answer from what the read-only tools show, and say what would need changing"
          : mode === "plan"
            ? "plan mode only reads until the user approves your plan: present it with present_plan"
            : "present_plan is for plan mode; you may act directly";
      return { ok: false, errorKind: "not_allowed", content: `${call.name} is not available in ${mode} mode: ${why}` };
    };

  /**
   * The MCP tools of this turn: listed once, at its first model call, and kept in the Coder's
   * state; an effect, recorded, so a recorded replay offers the same tools without any server.
   * A server that cannot start is said in a warning, and its tools are not offered.
   */
  const listMcpTools = async (state: CoderStateValue): Promise<McpToolInfo[] | undefined> => {
    if (state.mcpTools !== undefined || mcpServers.length === 0) return undefined;
    const request = { kind: "mcp" as const, node: def.id, name: "list_tools", args: { servers: mcpServers } };
    const listing = await performEffect(ctx, request, () => hub().list(mcpServers, ctx.signal));
    for (const { server, reason } of listing.unavailable) {
      emit({ type: "warning", threadId, message: `MCP server "${server}" is not available, so its tools are not offered: ${reason}` });
    }
    return listing.tools.filter((tool) => mcpPatterns.some((pattern) => toolMatches(pattern, tool.name)));
  };
  // In a branch worktree too: its read_file reads them there (the worktree's .loopgraph/ is bound read-only, as the workspace's).
  const artifactsDir = join(ctx.workspace, STATE_DIR, "artifacts", ctx.threadId);
  // A graph file an agent can change (inside the run's workspace, which a branch worktree's agent does not see) may not widen what the agent may do.
  const graphRules = applicableGraphRules(graph.file, graph.policy, ctx.runWorkspace ?? ctx.workspace).rules;
  const emit = ctx.emit;
  const threadId = ctx.threadId;
  // A subagent's task is its Coder's question: it gets no strategy of its own.
  const complexityOn = def.complexity !== "off" && !subagent;

  /**
   * Between steps of a Coder whose failure a loop takes up: whether a stop command waits in the
   * thread's inbox after the loop's cursor (the looper consumes it next, and ends the loop). An
   * effect, recorded, so a recorded replay sees the same answer at the same step.
   */
  const stopRequested = async (state: CoderStateValue): Promise<boolean> => {
    if (!failureRouted) return false;
    const request = { kind: "inbox" as const, node: def.id, name: "check_stop", args: { cursor: state.inboxCursor } };
    return performEffect(ctx, request, async () =>
      (await ctx.readInbox(state.inboxCursor)).some((entry) => entry.command.command === "stop"),
    );
  };
  const stopped = (state: CoderStateValue, before: string): CoderUpdate => ({
    result: failure(state, "stopped", `stopped by user: the loop's stop command arrived, so the Coder ended before its next ${before}`),
  });

  const modelStep = async (state: CoderStateValue, config?: RunnableConfig): Promise<CoderUpdate> => {
    if (await stopRequested(state)) return stopped(state, "model call");
    if (state.steps >= def.maxSteps) {
      if (!failureRouted) {
        throw new LimitError(
          `the Coder reached its step limit (max_steps ${def.maxSteps} of node "${def.id}") before finishing: raise it in ${graph.file}`,
        );
      }
      return { result: failure(state, "step_limit", `reached the step limit of ${def.maxSteps} model calls without finishing`) };
    }
    const spec = nodeModelSpec(def, graph, ctx.settings);
    const mode = modeOf(state);
    // MCP tools are listed at the turn's first model call in agent mode (a plan approved later lists them then).
    const listed = mode === "agent" ? await listMcpTools(state) : undefined;
    const mcpTools = listed ?? state.mcpTools;
    const specs =
      mode === "agent"
        ? [...builtinSpecs, ...toolSpecs(toolsOf(mcpTools).slice(builtinTools.length))]
        : (modeSpecs[mode] ??= toolSpecs(offered(mode, state)));
    // One session for the summary (if any) and the answer: both count as consumption and usage.
    const instance = instanceOfConfig(config, spec);
    const session = startModelSession(ctx, {
      spec,
      node: def.id,
      consumed: state.scripted[spec],
      startUsage: state.usage,
      tools: specs,
      ...(instance && { instance }),
    });
    // The task's complexity, classified at the turn's first model call in agent mode; its strategy stays in the prompt.
    const classified =
      state.complexity ?? (state.steps === 0 && mode === "agent" && complexityOn ? analyzeComplexity(state.task) : undefined);
    if (classified && !state.complexity) emit({ type: "complexity", threadId, node: def.id, ...classified });
    const strategy = classified ? `\n\n${strategySection(classified)}` : "";
    const findingsOffered = offers(mode, state, saveFindingTool.name);
    const findings = findingsSection(state.findings, findingsOffered);
    const system = new SystemMessage(
      `${coderSystemPrompt(template, ctx.workspace, ctx.env)}${MODE_NOTES[mode]}${strategy}${findings}${subagentNote}`,
    );
    const bookkeeping = (): CoderUpdate => {
      const consumed = session.consumed();
      return {
        usage: { ...session.usage },
        ...(consumed ? { scripted: { [spec]: consumed } } : {}),
        ...(listed ? { mcpTools: listed } : {}),
        ...(state.mode === undefined ? { mode } : {}),
        ...(classified && !state.complexity ? { complexity: classified } : {}),
      };
    };

    const written: BaseMessage[] = [];
    // The turn's first message: its task, with the open items of an earlier turn's plan (ask mode keeps no plan).
    const opening = mode === "ask" ? state.task : resumedPlanTask(state.task, state.todos);
    let messages = state.messages.length > 0 ? state.messages : [new HumanMessage({ content: opening, id: "coder-task" })];
    if (state.messages.length === 0) written.push(...messages);
    const compressed = await compressHistory(messages, {
      budgetTokens: def.compression.budgetTokens,
      keepRecentTurns: def.compression.keepRecentTurns,
      filesChanged: state.filesChanged,
      summarise: async (older) => {
        const request = new HumanMessage(
          "Summarise the work above for your own later reference: what was done, what was found, what failed, what remains. Be concise and concrete; keep file names and commands.",
        );
        const task = new HumanMessage(`Task: ${state.task}`);
        return messageText(await session.ask([system, task, ...older, request], { streamTokens: false }));
      },
    });
    if (compressed.compressed) {
      messages = compressed.messages;
      written.push(...compressionUpdate(compressed.messages));
      const { removedCount, tokensBefore, tokensAfter } = compressed;
      emit({ type: "compression", threadId, node: def.id, removedMessages: removedCount, tokensBefore, tokensAfter });
    }

    try {
      const note = requestNote({
        task: state.task,
        todos: state.todos,
        toolLog: state.toolLog,
        settings: planning,
        isRead,
        findingsOffered,
      });
      const reply = await session.ask([system, ...withRequestNote(messages, note)]);
      const answer = new AIMessage({
        content: messageText(reply),
        id: reply.id ?? `coder-${def.id}-${state.steps}`,
        tool_calls: reply.tool_calls,
        invalid_tool_calls: reply.invalid_tool_calls,
      });
      if (messageText(answer)) emit({ type: "message", threadId, node: def.id, content: messageText(answer) });
      return { ...bookkeeping(), messages: [...written, answer], steps: state.steps + 1 };
    } catch (error) {
      // A cancelled call (Ctrl-C) is no failure of the model: the step ends without a result and re-runs on resume.
      // Without a node to take up the failure, the model's error fails the run; the step is not
      // stored, so a resume retries the call.
      if (cancelledByUser(ctx.signal) || !(error instanceof ModelError) || error.kind === "auth" || !failureRouted) throw error;
      const kind = MODEL_FAILURES[error.kind] ?? "model_server";
      return { ...bookkeeping(), ...(written.length > 0 ? { messages: written } : {}), result: failure(state, kind, error.message) };
    }
  };

  /**
   * The `task` tool's subagent: a Coder of its own (read-only tools, a fresh history, its own step
   * limit) run as a graph nested in this tool step, so each of its steps is checkpointed under
   * this step's namespace (a resume after a crash continues it where it was) and recorded.
   */
  const subagentGraphs = new Map<string, ReturnType<typeof buildCoderGraph>>();
  const runSubagent =
    (state: CoderStateValue, config: RunnableConfig | undefined, done: (final: CoderStateValue) => void) =>
    async (args: { description: string; prompt: string; agent?: string }) => {
      // Only a declared name: never one an object has by inheritance (a hostile model may try "constructor").
      const type = args.agent !== undefined && Object.hasOwn(subagentTypes, args.agent) ? subagentTypes[args.agent] : undefined;
      if (args.agent !== undefined && !type) {
        const names = Object.keys(subagentTypes);
        throw new ToolError(
          "invalid_arguments",
          `no subagent type "${args.agent}": ${names.length > 0 ? `use one of ${names.join(", ")}, or leave agent out` : "leave agent out for the read-only explorer"}`,
        );
      }
      const key = args.agent ?? "";
      let subagentGraph = subagentGraphs.get(key);
      if (!subagentGraph)
        subagentGraphs.set(
          key,
          (subagentGraph = buildCoderGraph(subagentDefinition(def, args.agent, type), graph, ctx, true, {
            ...(type?.output && { output: type.output }),
          })),
        );
      // It may do no more than its Coder may now: in ask mode, or plan mode before the plan is approved, it only reads.
      const mode: CoderMode = modeOf(state) === "agent" ? "agent" : "ask";
      const input: Partial<CoderStateValue> = {
        task: args.prompt,
        mode,
        scripted: state.scripted,
        sessionRules: state.sessionRules,
        inboxCursor: state.inboxCursor,
      };
      let final: CoderStateValue;
      try {
        final = (await subagentGraph.invoke(input, config)) as CoderStateValue;
      } catch (error) {
        // A subagent runs inside its Coder's tool step, where nothing can pause for an answer.
        if (isGraphInterrupt(error)) throw new ToolError("failed", subagentAsked(args.description, error));
        throw error;
      }
      done(final);
      const result = final.result!;
      const read = Object.keys(final.fileStamps ?? {});
      const header = `Subagent "${args.description}": ${result.status === "success" ? "done" : `failed (${result.failureKind}: ${result.failureReason})`} in ${result.steps} steps.`;
      const answer = result.output ? JSON.stringify(result.output, null, 2) : result.summary || "(no answer)";
      const content = [header, "", answer, ...(read.length > 0 ? ["", `Files it read: ${read.join(", ")}`] : [])].join("\n");
      if (result.status !== "success") throw new ToolError("failed", content);
      return { content };
    };

  /** How a call is decided in this state: the mode's tools and refusals, the graph's, the user's and the session's rules. */
  const decidedBy = (state: Pick<CoderStateValue, "mode" | "mcpTools" | "sessionRules">) => {
    const mode = modeOf(state);
    return {
      ctx,
      node: def.id,
      tools: offered(mode, state),
      refuse: refuseFor(mode, state),
      rules: [...graphRules, ...ctx.userRules, ...state.sessionRules],
    };
  };
  const toolOptions = (
    state: Pick<CoderStateValue, "mode" | "mcpTools" | "sessionRules" | "loop" | "fileStamps">,
    config?: RunnableConfig,
  ) => ({
    ...decidedBy(state),
    loop: { state: state.loop ?? EMPTY_LOOP_DETECTOR_STATE, options: def.loopDetection },
    artifactsDir,
    resultBudgetChars: def.resultBudgetChars,
    config,
    fileStamps: state.fileStamps,
  });

  /**
   * The reads at the head of the latest answer's unanswered calls that run at once, each as a task
   * of its own (two to MAX_CONCURRENT_READS of them; none when the next call runs alone): calls
   * `runsBesideOtherReads` allows, none of which the loop detector would warn about before it ran
   * (such a call runs alone, where its warning belongs).
   */
  const concurrentReads = (state: CoderStateValue): ToolCallRequest[] => {
    const options = decidedBy(state);
    const batch: ToolCallRequest[] = [];
    let loop = state.loop ?? EMPTY_LOOP_DETECTOR_STATE;
    for (const call of unansweredToolCalls(state.messages)) {
      if (batch.length === MAX_CONCURRENT_READS || !runsBesideOtherReads(call, options)) break;
      const check = checkToolCalls(loop, [{ name: call.name, args: call.args }], def.loopDetection);
      if (check.verdict.status !== "ok") break;
      loop = check.state;
      batch.push(call);
    }
    return batch.length >= 2 ? batch : [];
  };
  /** Where the unanswered calls lead: a batch of reads, each sent to `read` with what deciding it needs; else `tools`, the next call alone. */
  const toCalls = (state: CoderStateValue): "tools" | Send[] => {
    const batch = concurrentReads(state);
    if (batch.length === 0) return "tools";
    const { mode, mcpTools, sessionRules, loop, fileStamps } = state;
    return batch.map((readCall) => new Send("read", { mode, mcpTools, sessionRules, loop, fileStamps, readCall }));
  };

  /**
   * One read of a batch, beside the others: its own task, so its result is its own checkpointed
   * write (after a crash, only the reads that had not finished run again). Its input is what its
   * Send carried, not the whole state. The loop detector judges the batch afterwards (`joinReads`).
   */
  const readStep = async (task: CoderStateValue, config?: RunnableConfig): Promise<CoderUpdate> => {
    const call = task.readCall!;
    const result = await runConcurrentRead(call, toolOptions(task, config));
    const judged = {
      ok: result.ok,
      ...(result.errorKind && { errorKind: result.errorKind }),
      ...(!result.ok && { content: result.content }),
    };
    return {
      messages: [toolMessage(call, result)],
      toolLog: [toolLogEntry(call, result)],
      ...(result.fileStamps ? { fileStamps: result.fileStamps } : {}),
      readResults: { [call.id]: judged },
    };
  };

  /**
   * After a batch of reads: the loop detector judges them in the model's order, as if they had
   * run one after the other; a warning is added to the result it follows (the message replaced by
   * its id), and the same error too many times in a row ends the turn.
   */
  const joinReads = async (state: CoderStateValue): Promise<CoderUpdate> => {
    const answer = lastAiMessage(state.messages);
    const ran = (answer?.tool_calls ?? [])
      .filter((call) => call.id !== undefined && Object.hasOwn(state.readResults, call.id))
      .map((call) => ({
        call: { id: call.id!, name: call.name, args: call.args },
        result: { content: "", ...state.readResults[call.id!]! },
      }));
    const judged = judgeReads(state.loop ?? EMPTY_LOOP_DETECTOR_STATE, ran, def.loopDetection);
    // Each warned result replaced (by its id) with the warning after it.
    const noted = state.messages.flatMap((message) => {
      const warning = message.getType() === "tool" ? judged.warnings.get((message as ToolMessage).tool_call_id) : undefined;
      return warning === undefined ? [] : [withNoteAfter(message as ToolMessage, warning)];
    });
    return {
      readResults: null,
      loop: judged.loop,
      ...(noted.length > 0 && { messages: noted }),
      ...(judged.repeatedError !== undefined && { result: failure(state, "repeated_error", judged.repeatedError) }),
    };
  };

  const toolStep = async (state: CoderStateValue, config?: RunnableConfig): Promise<CoderUpdate> => {
    const [call] = unansweredToolCalls(state.messages);
    if (!call) return {};
    if (await stopRequested(state)) return stopped(state, "tool call");
    let sub: CoderStateValue | undefined;
    const outcome = await runToolCall(call, {
      ...toolOptions(state, config),
      subagent: runSubagent(state, config, (final) => (sub = final)),
    });
    const { result } = outcome;
    if (outcome.loopFailure !== undefined) {
      return { messages: [toolMessage(call, result)], loop: outcome.loop, result: failure(state, "loop_detected", outcome.loopFailure) };
    }
    const entry = toolLogEntry(call, result, outcome.editedArgs);
    return {
      loop: outcome.loop,
      ...(outcome.repeatedError !== undefined && {
        result: failure({ ...state, toolLog: [...state.toolLog, entry] }, "repeated_error", outcome.repeatedError),
      }),
      ...(outcome.sessionRule ? { sessionRules: [outcome.sessionRule] } : {}),
      messages: [toolMessage(call, result, outcome.loopWarning)],
      toolLog: [entry],
      ...(result.filesChanged ? { filesChanged: result.filesChanged } : {}),
      ...(result.todos ? { todos: result.todos } : {}),
      ...(result.finding ? { findings: addFinding(state.findings, result.finding, planning.findings) } : {}),
      ...(result.fileStamps ? { fileStamps: result.fileStamps } : {}),
      // The plan approved: the rest of the turn acts on it, with every tool.
      ...(result.planApproved ? { mode: "agent" as const } : {}),
      // A subagent's result: it is done.
      ...(result.submitted && { output: result.submitted }),
      // A subagent's scripted answers are used up, its tokens spent, its "always" answers kept.
      ...(sub && {
        scripted: sub.scripted,
        sessionRules: sub.sessionRules,
        usage: {
          inputTokens: state.usage.inputTokens + sub.usage.inputTokens,
          outputTokens: state.usage.outputTokens + sub.usage.outputTokens,
        },
      }),
    };
  };

  const finishStep = async (state: CoderStateValue): Promise<CoderUpdate> => {
    if (state.result) return {};
    const answer = lastAiMessage(state.messages);
    const summary = typeof state.output?.summary === "string" ? state.output.summary : answer ? messageText(answer) : "";
    return {
      result: {
        status: "success",
        summary,
        filesChanged: state.filesChanged,
        steps: state.steps,
        toolCalls: state.toolLog,
        todos: state.todos,
        ...resultPlanning(state),
        ...(state.output && { output: state.output }),
      },
    };
  };

  /** The stop check of a Coder's answer in agent mode: its plan's items not done send it back, a bounded number of times. */
  const checkedStop = (state: CoderStateValue): StopCheck =>
    modeOf(state) === "agent" ? stopCheck(state.todos, state.planChecks, planning) : undefined;

  /**
   * A subagent that answers without complete_task is told once that its answer must go there;
   * answering so again ends it with a `no_result` failure. A Coder that answers with its plan
   * unfinished is told which items are open and goes on, at most `stop_check` times; then it
   * fails with `plan_unfinished`.
   */
  const remindStep = async (state: CoderStateValue): Promise<CoderUpdate> => {
    if (!subagent) {
      const check = checkedStop(state);
      if (check && "failure" in check) return { result: failure(state, "plan_unfinished", check.failure) };
      // The route comes here only with a check to make (see `next`).
      const { message } = check as { message: string };
      const open = unfinished(state.todos).map((todo) => todo.content);
      emit({ type: "plan_check", threadId, node: def.id, check: state.planChecks + 1, of: planning.stopCheck, open });
      return {
        messages: [new HumanMessage({ content: message, id: `${PLAN_CHECK_ID}-${state.planChecks + 1}` })],
        planChecks: state.planChecks + 1,
      };
    }
    if (state.messages.some((message) => message.id === COMPLETE_TASK_REMINDER)) {
      return { result: failure(state, "no_result", `answered twice without calling ${COMPLETE_TASK}, so there is no result`) };
    }
    const reminder = `Your reply is not seen by the Coder: call ${COMPLETE_TASK} with your result (its parameters give the shape), now.`;
    return { messages: [new HumanMessage({ content: reminder, id: COMPLETE_TASK_REMINDER })] };
  };

  /** Where a model call leads: its tool calls; the end; or a reminder: for a subagent that has not handed in its result, for a Coder whose plan is not done. */
  const next = (state: CoderStateValue): string | Send[] => {
    if (state.result) return "finish";
    if (unansweredToolCalls(state.messages).length > 0) return toCalls(state);
    if (subagent) return state.output ? "finish" : "remind";
    return checkedStop(state) ? "remind" : "finish";
  };
  /** Where a tool step (one call, or a batch of reads) leads: the end, the next calls, or the model. */
  const afterCalls = (state: CoderStateValue): string | Send[] =>
    state.result || state.output ? "finish" : unansweredToolCalls(state.messages).length > 0 ? toCalls(state) : "model";

  return new StateGraph(CoderState)
    .addNode("model", modelStep)
    .addNode("tools", toolStep)
    .addNode("read", readStep)
    .addNode("joinReads", joinReads)
    .addNode("remind", remindStep)
    .addNode("finish", finishStep)
    .addEdge(START, "model")
    .addConditionalEdges("model", next, ["tools", "read", "remind", "finish"])
    .addConditionalEdges("tools", afterCalls, ["tools", "read", "model", "finish"])
    .addEdge("read", "joinReads")
    .addConditionalEdges("joinReads", afterCalls, ["tools", "read", "model", "finish"])
    .addConditionalEdges("remind", (state) => (state.result ? "finish" : "model"), ["model", "finish"])
    .addEdge("finish", END)
    .compile({ name: def.id });
}

/** What a task call returns when its subagent reached a call that needs the user's approval: it cannot ask, so it stops there. */
function subagentAsked(description: string, interrupt: GraphInterrupt): string {
  const request = interrupt.interrupts?.[0]?.value;
  const what = isApprovalRequest(request)
    ? `${request.tool}${request.args === undefined ? "" : ` ${JSON.stringify(request.args).slice(0, 200)}`}`
    : "a call";
  return `Subagent "${description}" stopped: its call ${what} needs the user's approval, and a subagent cannot ask for it, so it was not run. Make that call yourself, where the user can approve it.`;
}

/**
 * The key of the Coder subgraph's config under which a mapped Coder's instance travels to its
 * model calls (its own state has no place for it): which instance, and the parent's scripted
 * consumption when the map began.
 */
export const CODER_INSTANCE_KEY = "loopgraph_map_instance";

/** What a mapped Coder's node puts in its subgraph's config. */
export interface CoderInstance {
  index: number;
  count: number;
  scriptedAtStart: Record<string, ScriptedConsumed>;
}

function instanceOfConfig(config: RunnableConfig | undefined, spec: string): ScriptedInstance | undefined {
  const instance = config?.configurable?.[CODER_INSTANCE_KEY] as CoderInstance | undefined;
  if (instance === undefined) return undefined;
  const atStart = instance.scriptedAtStart[spec];
  return { index: instance.index, count: instance.count, ...(atStart !== undefined && { consumedAtStart: atStart }) };
}
