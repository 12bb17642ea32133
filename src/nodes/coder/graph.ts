import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { ModelError } from "../../errors.js";
import type { CoderNodeDefinition, GraphDefinition } from "../../format/types.js";
import { pickModelSpec, type RunContext } from "../../runtime/context.js";
import { performEffect } from "../../runtime/effects.js";
import { messageText, startModelSession } from "../../runtime/model-session.js";
import { decideToolCall, sessionRuleFor } from "../../policy/index.js";
import { STATE_DIR } from "../../runs/state-dir.js";
import { BUILTIN_TOOLS, executeToolCall, toolSpecs } from "../../tools/index.js";
import type { ToolCallRequest, ToolDefinition, ToolResult } from "../../tools/types.js";
import { compressHistory, compressionUpdate } from "./compression.js";
import { checkToolCalls, EMPTY_LOOP_DETECTOR_STATE } from "../../tools/loop-detection.js";
import { CoderState, type CoderStateValue } from "./state.js";
import { coderSystemPrompt } from "./system-prompt.js";
import type { ApprovalAnswer, ApprovalRequest, CoderFailureKind, CoderResult, ToolLogEntry } from "./types.js";

type CoderUpdate = Partial<CoderStateValue>;

const PREVIEW_CHARS = 400;

function lastAiMessage(messages: BaseMessage[]): AIMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.getType() === "ai") return message as AIMessage;
  }
  return undefined;
}

/** Tool calls of the latest model answer that have no result yet, in the order the model made them. */
export function unansweredToolCalls(messages: BaseMessage[]): ToolCallRequest[] {
  const answer = lastAiMessage(messages);
  if (!answer?.tool_calls?.length) return [];
  const answered = new Set(
    messages.filter((m) => m.getType() === "tool").map((m) => (m as ToolMessage).tool_call_id),
  );
  return answer.tool_calls
    .filter((call) => call.id !== undefined && !answered.has(call.id))
    .map((call) => ({ id: call.id!, name: call.name, args: call.args }));
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

function rejection(answer: ApprovalAnswer): ToolResult {
  const why = answer.reason ? `: ${answer.reason}` : "";
  return { ok: false, errorKind: "rejected", content: `the user rejected this call${why}. Do not retry it as is.` };
}

/**
 * The Coder as a LangGraph subgraph: `model` ⇄ `tools`, one tool call per step, so every
 * finished tool call is checkpointed; `finish` writes the structured result.
 */
export function buildCoderGraph(def: CoderNodeDefinition, graph: GraphDefinition, ctx: RunContext) {
  const template = readFileSync(def.promptFile, "utf8");
  const tools: readonly ToolDefinition[] = BUILTIN_TOOLS.filter((tool) => def.tools.includes(tool.name));
  const specs = toolSpecs(tools);
  const artifactsDir = join(ctx.workspace, STATE_DIR, "artifacts", ctx.threadId);
  const emit = ctx.emit;
  const threadId = ctx.threadId;

  const modelStep = async (state: CoderStateValue): Promise<CoderUpdate> => {
    if (state.steps >= def.maxSteps) {
      return { result: failure(state, "step_limit", `reached the step limit of ${def.maxSteps} model calls without finishing`) };
    }
    const spec = pickModelSpec(def.model, ctx.runModel, graph.model);
    // One session for the summary (if any) and the answer: both count as consumption and usage.
    const session = startModelSession(ctx, { spec, node: def.id, consumed: state.scripted[spec], startUsage: state.usage, tools: specs });
    const system = new SystemMessage(coderSystemPrompt(template, ctx.workspace));
    const bookkeeping = (): CoderUpdate => ({
      usage: { ...session.usage },
      ...(session.consumed.length > 0 ? { scripted: { [spec]: [...session.consumed] } } : {}),
    });

    const written: BaseMessage[] = [];
    let messages = state.messages.length > 0 ? state.messages : [new HumanMessage({ content: state.task, id: "coder-task" })];
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
        return messageText(await session.ask([system, task, ...older, request]));
      },
    });
    if (compressed.compressed) {
      messages = compressed.messages;
      written.push(...compressionUpdate(compressed.messages));
    }

    try {
      const reply = await session.ask([system, ...messages]);
      const answer = new AIMessage({
        content: messageText(reply),
        id: reply.id ?? `coder-${def.id}-${state.steps}`,
        tool_calls: reply.tool_calls,
      });
      if (messageText(answer)) emit({ type: "message", threadId, node: def.id, content: messageText(answer) });
      return { ...bookkeeping(), messages: [...written, answer], steps: state.steps + 1 };
    } catch (error) {
      if (!(error instanceof ModelError) || error.kind === "auth") throw error;
      const kind = MODEL_FAILURES[error.kind] ?? "model_server";
      return { ...bookkeeping(), ...(written.length > 0 ? { messages: written } : {}), result: failure(state, kind, error.message) };
    }
  };

  const toolStep = async (state: CoderStateValue, config?: RunnableConfig): Promise<CoderUpdate> => {
    const [call] = unansweredToolCalls(state.messages);
    if (!call) return {};
    const loop = checkToolCalls(state.loop ?? EMPTY_LOOP_DETECTOR_STATE, [{ name: call.name, args: call.args }], def.loopDetection);
    if (loop.verdict.status === "fail") {
      const blocked: ToolResult = { ok: false, errorKind: "blocked", content: loop.verdict.reason };
      return {
        messages: [toolMessage(call, blocked)],
        loop: loop.state,
        result: failure(state, "loop_detected", loop.verdict.reason),
      };
    }

    const rules = [...graph.policy, ...ctx.userRules, ...state.sessionRules];
    const gate = decideToolCall({ name: call.name, args: call.args }, { rules, mode: ctx.approvalMode, workspace: ctx.workspace });
    const update: CoderUpdate = { loop: loop.state };
    let result: ToolResult;
    if (gate.kind === "blocked") {
      result = gate.result;
    } else {
      let approved = gate.kind === "run";
      if (gate.kind === "ask") {
        const request: ApprovalRequest = { kind: "approval", node: def.id, tool: call.name, args: call.args, reason: gate.verdict.reason };
        const answer = interrupt<ApprovalRequest, ApprovalAnswer>(request);
        ctx.record?.({ kind: "approval", node: def.id, name: call.name, args: call.args, answer });
        if (answer.decision === "always") update.sessionRules = [sessionRuleFor({ name: call.name, args: call.args }, gate.verdict)];
        approved = answer.decision !== "reject";
        result = rejection(answer);
      }
      if (approved) {
        emit({ type: "tool_call", threadId, node: def.id, id: call.id, name: call.name, args: call.args });
        const execute = () => executeToolCall(call, { workspace: ctx.workspace, artifactsDir, signal: ctx.signal, resultBudgetChars: def.resultBudgetChars }, tools);
        const step = { node: def.id, tool: call.name, toolCallId: call.id, config };
        const tool = { kind: "tool" as const, node: def.id, name: call.name, args: call.args };
        // A recorded replay answers from the record: no tool runs, and no snapshot is taken.
        result = await performEffect(ctx, tool, () => (ctx.snapshots ? ctx.snapshots.around(step, execute) : execute()));
      }
    }
    result = result!;
    emit({ type: "tool_result", threadId, node: def.id, id: call.id, name: call.name, ok: result.ok, result: result.content });
    const entry: ToolLogEntry = {
      id: call.id,
      name: call.name,
      args: call.args,
      ok: result.ok,
      ...(result.errorKind ? { errorKind: result.errorKind } : {}),
      preview: result.content.slice(0, PREVIEW_CHARS),
      ...(result.artifact ? { artifact: result.artifact } : {}),
    };
    return {
      ...update,
      messages: [toolMessage(call, result, loop.verdict.status === "warn" ? loop.verdict.message : undefined)],
      toolLog: [entry],
      ...(result.filesChanged ? { filesChanged: result.filesChanged } : {}),
      ...(result.todos ? { todos: result.todos } : {}),
    };
  };

  const finishStep = async (state: CoderStateValue): Promise<CoderUpdate> => {
    if (state.result) return {};
    const answer = lastAiMessage(state.messages);
    return {
      result: {
        status: "success",
        summary: answer ? messageText(answer) : "",
        filesChanged: state.filesChanged,
        steps: state.steps,
        toolCalls: state.toolLog,
        todos: state.todos,
      },
    };
  };

  const next = (state: CoderStateValue): string => {
    if (state.result) return "finish";
    return unansweredToolCalls(state.messages).length > 0 ? "tools" : "finish";
  };

  return new StateGraph(CoderState)
    .addNode("model", modelStep)
    .addNode("tools", toolStep)
    .addNode("finish", finishStep)
    .addEdge(START, "model")
    .addConditionalEdges("model", next, ["tools", "finish"])
    .addConditionalEdges("tools", (state) => (state.result ? "finish" : unansweredToolCalls(state.messages).length > 0 ? "tools" : "model"), [
      "tools",
      "model",
      "finish",
    ])
    .addEdge("finish", END)
    .compile({ name: def.id });
}
