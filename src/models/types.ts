import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import type { ModelError } from "../errors.js";
import type { ScriptedConsumed, ScriptedCounts, TokenUsage } from "../state/graph-state.js";

/** A tool the model may call, described with a JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A map instance as the scripted model tells instances apart: which, of how many, and the consumption when the map began. */
export interface ScriptedInstance {
  index: number;
  count: number;
  /** The scripted consumption of the state the map's instances started from (the same for all of them). */
  consumedAtStart?: Readonly<ScriptedConsumed>;
}

export interface ModelCallOptions {
  /** Graph node making the call: scripted responses may be restricted to a node. */
  node: string;
  /** The run's task (its thread's `--task`): scripted responses may be restricted to tasks. Ignored by network providers. */
  task?: string;
  tools?: ToolSpec[];
  /**
   * The scripted responses already consumed in this run (the graph state's `scripted[spec]`):
   * counts per group, or a thread's stored list of indices. Ignored by network providers.
   */
  consumed?: Readonly<ScriptedConsumed>;
  /**
   * The caller is an instance of a map: the scripted model gives concurrent instances distinct
   * responses (docs/scripted-model.md). Ignored by network providers.
   */
  instance?: ScriptedInstance;
  /** Streamed text as it arrives. */
  onToken?: (text: string) => void;
  /** A tool call's name, as soon as the answer names it (its arguments still to come); `index`: its place among the answer's calls. */
  onToolCallStart?: (name: string, index: number) => void;
  /**
   * A failed attempt is about to be retried. Text already streamed by the failed attempt will
   * be streamed again from the start, so a display should mark the break.
   */
  onRetry?: (notice: RetryNotice) => void;
  signal?: AbortSignal;
}

export interface RetryNotice {
  /** The attempt that failed, from 1. */
  attempt: number;
  maxAttempts: number;
  /** Wait before the next attempt. */
  delayMs: number;
  error: ModelError;
}

export interface ModelCallResult {
  /** The model's answer, with any tool calls in `tool_calls`. */
  message: AIMessage;
  usage: TokenUsage;
  /** For the scripted model: the index of the response consumed by this call. */
  scriptedIndex?: number;
  /** For the scripted model: the consumption after this call (`consumed` as counts, with this call's response). */
  scriptedConsumed?: ScriptedCounts;
}

/** A configured model: every provider (scripted, openai and presets) implements this. */
export interface ChatModel {
  /** The spec it was created from, e.g. `openai:gpt-4o-mini` or `scripted:/abs/file.yaml`. */
  readonly spec: string;
  call(messages: BaseMessage[], options: ModelCallOptions): Promise<ModelCallResult>;
}
