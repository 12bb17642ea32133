/**
 * History compression for the Coder: once the conversation is estimated above the
 * model's budget, the older turns are replaced by one summary message.
 *
 * Kept verbatim: system messages, everything up to the first human message (the task), and the
 * latest turns. A turn is an AI message with the tool results answering its tool calls; the cut
 * is always made just before an AI message, so no tool result is separated from its call.
 */
import { HumanMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import { REMOVE_ALL_MESSAGES } from "@langchain/langgraph";
import { countInputTokens, overBudget } from "../../models/tokens.js";

export const DEFAULT_KEEP_RECENT_TURNS = 3;

/** First line of the summary message. */
export const SUMMARY_MARKER = "[Summary of earlier work]";

export interface CompressionOptions {
  /**
   * Compress when the messages are counted (`countInputTokens`) above this many tokens. A history
   * whose upper bound (its UTF-8 length) is within it is not counted at all.
   */
  budgetTokens: number;
  /** Latest turns kept verbatim, at least 1 (default 3). */
  keepRecentTurns?: number;
  /** Workspace-relative paths changed so far in this Coder turn, listed in the summary message. */
  filesChanged: readonly string[];
  /** Summarises the older messages (the Coder asks its model); errors propagate to the caller. */
  summarise: (messagesToSummarise: BaseMessage[]) => Promise<string>;
}

export type CompressionResult =
  | {
      compressed: true;
      /** The new history; kept messages are the same objects, with their ids. */
      messages: BaseMessage[];
      /** Messages replaced by the summary. */
      removedCount: number;
      tokensBefore: number;
      tokensAfter: number;
    }
  | { compressed: false; reason: string };

interface HistoryParts {
  /** Up to and including the first human message. */
  head: BaseMessage[];
  /** Between the head and the latest turns: what the summary replaces (its system messages stay). */
  older: BaseMessage[];
  /** The latest turns, from an AI message to the end. */
  recent: BaseMessage[];
}

const isSystem = (message: BaseMessage): boolean => message.getType() === "system";

/** Splits the history, or null when it has no turn older than the ones kept. */
function splitHistory(messages: readonly BaseMessage[], keepRecentTurns: number): HistoryParts | null {
  const headEnd = messages.findIndex((message) => message.getType() === "human") + 1;
  const turnStarts = messages
    .map((message, index) => (index >= headEnd && message.getType() === "ai" ? index : -1))
    .filter((index) => index >= 0);
  const recentStart = turnStarts.length > keepRecentTurns ? turnStarts[turnStarts.length - keepRecentTurns] : undefined;
  if (recentStart === undefined) return null;
  return {
    head: messages.slice(0, headEnd),
    older: messages.slice(headEnd, recentStart),
    recent: messages.slice(recentStart),
  };
}

function summaryMessage(summary: string, filesChanged: readonly string[], replacedCount: number): HumanMessage {
  const files = filesChanged.length > 0 ? filesChanged.join(", ") : "none";
  return new HumanMessage(
    [
      SUMMARY_MARKER,
      summary,
      "",
      `Files changed so far: ${files}`,
      `(${replacedCount} earlier messages were replaced by this summary to save context; the latest turns follow verbatim.)`,
    ].join("\n"),
  );
}

/**
 * Compresses the history when it is over budget. Not compressed: within budget, too few turns,
 * an empty summary, or a result that is not smaller than the original.
 */
export async function compressHistory(messages: readonly BaseMessage[], options: CompressionOptions): Promise<CompressionResult> {
  const keepRecentTurns = options.keepRecentTurns ?? DEFAULT_KEEP_RECENT_TURNS;
  if (!Number.isInteger(keepRecentTurns) || keepRecentTurns < 1) {
    throw new RangeError(`keepRecentTurns must be a positive integer, got ${keepRecentTurns}`);
  }

  const before = overBudget(messages, options.budgetTokens);
  if (!before.over) {
    const tokens = before.tokens !== undefined ? `${before.tokens} tokens` : `at most ${before.atMost} tokens`;
    return { compressed: false, reason: `${tokens}, within the budget of ${options.budgetTokens}` };
  }
  const tokensBefore = before.tokens;
  const parts = splitHistory(messages, keepRecentTurns);
  if (!parts) {
    return { compressed: false, reason: `nothing to summarise: no turns before the latest ${keepRecentTurns}` };
  }

  const toSummarise = parts.older.filter((message) => !isSystem(message));
  const summary = (await options.summarise(toSummarise)).trim();
  if (!summary) return { compressed: false, reason: "the summary is empty" };

  const compressed = [
    ...parts.head,
    ...parts.older.filter(isSystem),
    summaryMessage(summary, options.filesChanged, toSummarise.length),
    ...parts.recent,
  ];
  const tokensAfter = countInputTokens(compressed);
  if (tokensAfter >= tokensBefore) {
    return {
      compressed: false,
      reason: `the summary does not shrink the history (${tokensBefore} → ${tokensAfter} tokens)`,
    };
  }
  return { compressed: true, messages: compressed, removedCount: toSummarise.length, tokensBefore, tokensAfter };
}

/**
 * The `messages` update that makes `messagesStateReducer` hold exactly `messages`: a
 * REMOVE_ALL_MESSAGES marker, then the new list. (Removing ids one by one cannot work: the
 * reducer would append the summary after the latest turns instead of before them.)
 */
export function compressionUpdate(messages: readonly BaseMessage[]): BaseMessage[] {
  return [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...messages];
}
