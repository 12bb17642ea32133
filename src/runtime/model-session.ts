import { HumanMessage, type AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { z } from "zod";
import { nodeModelSpec, type RunContext } from "./context.js";
import type { GraphDefinition } from "../format/types.js";
import type { GraphStateValue } from "../state/graph-state.js";
import type { NodeUpdate } from "./node-function.js";
import { ModelError } from "../errors.js";
import { recordedOutput } from "../models/recorded.js";
import type { ScriptedInstance, ToolSpec } from "../models/types.js";
import { mapInstanceOf } from "../state/map.js";
import type { ScriptedConsumed, ScriptedCounts, TokenUsage } from "../state/graph-state.js";
import { parseStructuredOutput } from "./structured-output.js";

export function messageText(message: BaseMessage): string {
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
}

/** A node's model calls: each call adds to the scripted responses consumed and to the token usage. */
export interface ModelSession {
  /** `streamTokens: false` keeps this call's text from streaming (e.g. a summary the user does not read). */
  ask(messages: BaseMessage[], options?: { streamTokens?: boolean }): Promise<AIMessage>;
  /**
   * The scripted responses consumed in the run so far, this session's calls included (counts per
   * group, to be written to the state's `scripted[spec]`); undefined while no call consumed one.
   */
  consumed(): ScriptedCounts | undefined;
  /** `startUsage` plus the tokens of this session's calls. */
  readonly usage: TokenUsage;
}

export interface ModelSessionOptions {
  /** Model spec, e.g. `openai:gpt-4o-mini`. */
  spec: string;
  /** The caller's name: scripted responses are matched on it, events carry it. */
  node: string;
  /** Scripted responses already consumed (the state's `scripted[spec]`). */
  consumed?: Readonly<ScriptedConsumed>;
  startUsage?: TokenUsage;
  /** Stream the answer's text as `message` deltas (off where parallel callers would interleave). */
  streamTokens?: boolean;
  /** Tools the model may call. */
  tools?: ToolSpec[];
  /** The caller is an instance of a map (the scripted model gives instances distinct responses). */
  instance?: ScriptedInstance;
}

export function startModelSession(ctx: RunContext, options: ModelSessionOptions): ModelSession {
  const { spec, node } = options;
  const model = ctx.model(spec);
  let consumed: Readonly<ScriptedConsumed> | undefined = options.consumed;
  let consumedNow: ScriptedCounts | undefined;
  const usage: TokenUsage = { inputTokens: 0, outputTokens: 0, ...options.startUsage };
  const ask = async (messages: BaseMessage[], call: { streamTokens?: boolean } = {}): Promise<AIMessage> => {
    const stream = options.streamTokens !== false && call.streamTokens !== false;
    const result = await model
      .call(messages, {
        node,
        ...(ctx.task !== undefined && { task: ctx.task }),
        tools: options.tools,
        consumed,
        instance: options.instance,
        signal: ctx.signal,
        onToken: !stream ? undefined : (delta) => ctx.emit({ type: "message", threadId: ctx.threadId, node, delta }),
        onToolCallStart: !stream
          ? undefined
          : (name, index) => ctx.emit({ type: "tool_call_started", threadId: ctx.threadId, node, name, index }),
        onRetry: ({ attempt, maxAttempts, delayMs, error }) =>
          ctx.emit({ type: "retry", threadId: ctx.threadId, node, attempt, maxAttempts, delayMs, message: error.message }),
      })
      .catch((error: unknown) => {
        // A model's failure is part of the record (a replay reproduces it); a cancelled call is not.
        if (error instanceof ModelError) ctx.record?.({ kind: "model", node, error: { kind: error.kind, message: error.message } });
        throw error;
      });
    ctx.record?.({ kind: "model", node, output: recordedOutput(result.message, result.usage) });
    if (result.scriptedConsumed !== undefined) consumed = consumedNow = result.scriptedConsumed;
    usage.inputTokens += result.usage.inputTokens;
    usage.outputTokens += result.usage.outputTokens;
    return result.message;
  };
  return { ask, consumed: () => consumedNow, usage };
}

/** A graph node's model session, with the state writes that keep its bookkeeping. */
export interface NodeModelSession extends ModelSession {
  /** `usage` of the node, and `scripted` when scripted responses were consumed. */
  bookkeeping(): NodeUpdate;
}

/**
 * The model session of a node of the graph state: its model (the node's, else the run's, else
 * the graph's), the run's scripted consumption so far, and the node's token usage so far.
 */
export function startNodeSession(
  ctx: RunContext,
  node: { id: string; model?: string },
  graph: GraphDefinition,
  state: GraphStateValue,
  options: Pick<ModelSessionOptions, "streamTokens" | "tools"> = {},
): NodeModelSession {
  const spec = nodeModelSpec(node, graph, ctx.settings);
  const instance = mapInstanceOf(state);
  const session = startModelSession(ctx, {
    spec,
    node: node.id,
    consumed: state.scripted[spec],
    ...(instance && { instance: { index: instance.index, count: instance.count, consumedAtStart: state.scripted[spec] } }),
    startUsage: state.usage[node.id],
    ...options,
  });
  return {
    ...session,
    bookkeeping: () => {
      const consumed = session.consumed();
      return { usage: { [node.id]: session.usage }, ...(consumed ? { scripted: { [spec]: consumed } } : {}) };
    },
  };
}

export type StructuredAnswer = { ok: true; value: unknown; answer: AIMessage } | { ok: false; error: string; answer: AIMessage };

/**
 * Asks for JSON matching `schema`; an invalid answer is retried once with the validation error.
 * `prompt` must already tell the model the expected format.
 */
export async function askStructured(ask: ModelSession["ask"], prompt: BaseMessage[], schema: z.ZodType): Promise<StructuredAnswer> {
  const first = await ask(prompt);
  const parsed = parseStructuredOutput(messageText(first), schema);
  if (parsed.ok) return { ok: true, value: parsed.value, answer: first };

  const repair = new HumanMessage(`Your answer could not be used: ${parsed.error}. Answer again with the JSON only.`);
  const second = await ask([...prompt, first, repair]);
  const reparsed = parseStructuredOutput(messageText(second), schema);
  return reparsed.ok ? { ok: true, value: reparsed.value, answer: second } : { ok: false, error: reparsed.error, answer: second };
}
