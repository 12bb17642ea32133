import { Annotation, messagesStateReducer } from "@langchain/langgraph";
import type { BaseMessage } from "@langchain/core/messages";
import type { TokenUsage } from "../../state/graph-state.js";
import { mergeConsumed, mergeRules, type ScriptedConsumed } from "../../state/graph-state.js";
import type { TodoItem, ToolCallRequest, ToolErrorKind } from "../../tools/types.js";
import type { LoopDetectorState } from "../../tools/loop-detection.js";
import type { CoderResult, ToolLogEntry } from "./types.js";
import type { PolicyRule } from "../../state/rules.js";
import type { McpToolInfo } from "../../tools/mcp.js";
import type { CoderMode } from "../../state/thread.js";
import type { ComplexityAnalysis } from "./complexity.js";

/** A read of a batch as the loop detector judges it: whether it succeeded, and an error's kind and text. */
export interface ReadOutcome {
  ok: boolean;
  errorKind?: ToolErrorKind;
  content?: string;
}

const lastValue = <T>(_: T, next: T): T => next;
const unionStrings = (left: string[], right: string[]): string[] => [...new Set([...left, ...right])];
/** Tool log entries are keyed by call id, so a re-applied write never duplicates one. */
const mergeToolLog = (left: ToolLogEntry[], right: ToolLogEntry[]): ToolLogEntry[] => {
  const known = new Set(left.map((entry) => entry.id));
  return [...left, ...right.filter((entry) => !known.has(entry.id))];
};
/**
 * The Coder's own state, checkpointed after every model call and every tool call (each is one
 * superstep of the Coder subgraph), so a crash loses at most the step in flight.
 */
export const CoderState = Annotation.Root({
  task: Annotation<string>({ reducer: lastValue, default: () => "" }),
  /** The Coder's conversation (the system prompt is rebuilt at each call, not stored). */
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  steps: Annotation<number>({ reducer: lastValue, default: () => 0 }),
  toolLog: Annotation<ToolLogEntry[]>({ reducer: mergeToolLog, default: () => [] }),
  filesChanged: Annotation<string[]>({ reducer: unionStrings, default: () => [] }),
  todos: Annotation<TodoItem[]>({ reducer: lastValue, default: () => [] }),
  /** The files read (or written) in this turn with their stamps then: `edit_file` needs its file among them, unchanged. */
  fileStamps: Annotation<Record<string, string>>({ reducer: (left, right) => ({ ...left, ...right }), default: () => ({}) }),
  loop: Annotation<LoopDetectorState | undefined>({ reducer: lastValue, default: () => undefined }),
  usage: Annotation<TokenUsage>({ reducer: lastValue, default: () => ({ inputTokens: 0, outputTokens: 0 }) }),
  scripted: Annotation<Record<string, ScriptedConsumed>>({ reducer: mergeConsumed, default: () => ({}) }),
  /** Rules the user added by answering "always"; they hold for the rest of the thread. */
  sessionRules: Annotation<PolicyRule[]>({ reducer: mergeRules, default: () => [] }),
  /**
   * The loop's inbox cursor when the turn began (the parent's `inboxCursor`): a stop command
   * after it, not yet consumed by the looper, ends the turn at the next step boundary.
   */
  inboxCursor: Annotation<number>({ reducer: lastValue, default: () => 0 }),
  /** The MCP servers' tools offered in this turn, listed at its first model call (unset: not listed yet, or no servers). */
  mcpTools: Annotation<McpToolInfo[] | undefined>({ reducer: lastValue, default: () => undefined }),
  /** The turn's mode, fixed at its first model call; plan becomes agent when the user approves the plan. */
  mode: Annotation<CoderMode | undefined>({ reducer: lastValue, default: () => undefined }),
  /** The turn's task as classified at its first model call (`complexity: auto`, agent mode); unset: not classified. */
  complexity: Annotation<ComplexityAnalysis | undefined>({ reducer: lastValue, default: () => undefined }),
  /** The thread's findings (save_finding), bounded by planning.findings; a turn starts with the node's earlier ones. */
  findings: Annotation<string[]>({ reducer: lastValue, default: () => [] }),
  /** Stop checks made in this turn: answers sent back because plan items were not done (at most planning.stop_check). */
  planChecks: Annotation<number>({ reducer: lastValue, default: () => 0 }),
  /** A subagent's result, handed in with complete_task (it ends the subagent). */
  output: Annotation<Record<string, unknown> | undefined>({ reducer: lastValue, default: () => undefined }),
  /** In a `read` task of a batch: the call it runs (its Send's input; never written to the state). */
  readCall: Annotation<ToolCallRequest | undefined>({ reducer: lastValue, default: () => undefined }),
  /** What the loop detector needs of each read of a batch that ran (by call id); the join after the batch judges them and empties it. */
  readResults: Annotation<Record<string, ReadOutcome>, Record<string, ReadOutcome> | null>({
    reducer: (left, right) => (right === null ? {} : { ...left, ...right }),
    default: () => ({}),
  }),
  result: Annotation<CoderResult | undefined>({ reducer: lastValue, default: () => undefined }),
});

export type CoderStateValue = typeof CoderState.State;
