import { createRequire } from "node:module";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import type { ToolSpec } from "./types.js";

// Local token counting with the encoding bundled in gpt-tokenizer: never LangChain's
// getNumTokens, which downloads encodings at run time (and prints a stack trace offline).
// o200k_base is the encoding of current OpenAI models; for other providers it is an estimate.
//
// Loading the encoding takes a quarter of a second, so it is loaded on the first exact count
// only: a run that never needs one (a history far below its compression budget, a provider that
// reports its usage) never loads it. Counts are kept per message object, so a growing history
// costs the new messages only.

/** Framing tokens per message and for priming the reply (OpenAI's published counting recipe). */
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING_TOKENS = 3;

/** Special-token markers in user text (`<|endoftext|>`) are counted as ordinary text instead of throwing. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

type Encode = (text: string, options: typeof AS_TEXT) => number[];
let encode: Encode | undefined;
/** The o200k encoder, loaded (synchronously, through its CommonJS build) on first use. */
function encoder(): Encode {
  if (!encode) {
    const require = createRequire(import.meta.url);
    encode = (require("gpt-tokenizer/encoding/o200k_base") as { encode: Encode }).encode;
    tokenizerStats.loaded = true;
  }
  tokenizerStats.encodedTexts++;
  return encode;
}

/** Texts encoded so far in this process, and whether the encoder is loaded (tests of the lazy and cached paths). */
export const tokenizerStats = { loaded: false, encodedTexts: 0 };

/**
 * BPE merging is quadratic in the length of one pre-token: a long run without white space (a
 * line of minified code, 30 000 characters of tool output) takes seconds to minutes to encode.
 * Such runs are estimated at four characters a token instead.
 */
const LONG_RUN = /\S{256,}/g;
const CHARS_PER_TOKEN_ESTIMATE = 4;

/**
 * Counts of recent long texts: a text made anew with the same content (the Coder's system prompt,
 * rebuilt at every step with the project's rules files) is not encoded again.
 */
const recentTexts = new Map<string, number>();
const RECENT_TEXTS = 8;
const RECENT_TEXT_MIN_CHARS = 512;
/** Longer texts are not kept (the cache holds them alive). */
const RECENT_TEXT_MAX_CHARS = 256 * 1024;

export function countTokens(text: string): number {
  if (!text) return 0;
  if (text.length < RECENT_TEXT_MIN_CHARS || text.length > RECENT_TEXT_MAX_CHARS) return encodeCount(text);
  let count = recentTexts.get(text);
  if (count === undefined) {
    count = encodeCount(text);
    if (recentTexts.size >= RECENT_TEXTS) recentTexts.delete(recentTexts.keys().next().value!);
    recentTexts.set(text, count);
  }
  return count;
}

function encodeCount(text: string): number {
  let estimated = 0;
  const ordinary = text.replace(LONG_RUN, (run) => {
    estimated += Math.ceil(run.length / CHARS_PER_TOKEN_ESTIMATE);
    return "";
  });
  return estimated + encoder()(ordinary, AS_TEXT).length;
}

/**
 * A bound `countTokens(text)` never exceeds, without the encoder: its UTF-8 length (every token
 * of the encoding is at least one byte, and a long run's estimate is a quarter of its length).
 */
export function tokensAtMost(text: string): number {
  return text ? Buffer.byteLength(text, "utf8") : 0;
}

function toolCallTexts(message: BaseMessage): string[] {
  const toolCalls = "tool_calls" in message ? ((message as AIMessage).tool_calls ?? []) : [];
  return toolCalls.flatMap((call) => [call.name, JSON.stringify(call.args)]);
}

/** What a message's count depends on: a cached count is reused only while they are the same values. */
interface MessageCount {
  content: BaseMessage["content"];
  name: string | undefined;
  toolCalls: unknown;
  /** The message's texts as counted: its type, text, tool calls and name. */
  texts: string[];
  upper?: number;
  exact?: number;
}

const messageCounts = new WeakMap<BaseMessage, MessageCount>();

function messageCount(message: BaseMessage): MessageCount {
  const toolCalls = "tool_calls" in message ? (message as AIMessage).tool_calls : undefined;
  const cached = messageCounts.get(message);
  if (cached && cached.content === message.content && cached.name === message.name && cached.toolCalls === toolCalls) return cached;
  const texts = [message.getType(), message.text, ...toolCallTexts(message)];
  const entry: MessageCount = { content: message.content, name: message.name, toolCalls, texts };
  messageCounts.set(message, entry);
  return entry;
}

/** The framing of one message on top of its texts' tokens. */
const framing = (message: BaseMessage): number => TOKENS_PER_MESSAGE + (message.name ? TOKENS_PER_NAME : 0);

/** One message's prompt tokens, with its framing; counted once per message. */
function messageTokens(message: BaseMessage): number {
  const entry = messageCount(message);
  entry.exact ??=
    framing(message) + entry.texts.reduce((sum, text) => sum + countTokens(text), 0) + (message.name ? countTokens(message.name) : 0);
  return entry.exact;
}

/** A bound on `messageTokens(message)`, without the encoder. */
function messageTokensAtMost(message: BaseMessage): number {
  const entry = messageCount(message);
  entry.upper ??=
    entry.exact ??
    framing(message) + entry.texts.reduce((sum, text) => sum + tokensAtMost(text), 0) + (message.name ? tokensAtMost(message.name) : 0);
  return entry.upper;
}

const toolCounts = new WeakMap<readonly ToolSpec[], number>();

/** The tokens of the tool definitions offered; counted once per list of tools. */
function toolTokens(tools: readonly ToolSpec[]): number {
  if (tools.length === 0) return 0;
  let count = toolCounts.get(tools);
  if (count === undefined) {
    count = countTokens(JSON.stringify(tools));
    toolCounts.set(tools, count);
  }
  return count;
}

/** Prompt tokens: the messages with their framing, plus the tool definitions offered. */
export function countInputTokens(messages: readonly BaseMessage[], tools: readonly ToolSpec[] = []): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) total += messageTokens(message);
  return total + toolTokens(tools);
}

/**
 * Whether the messages' prompt tokens (`countInputTokens`) exceed `budget`, and the count when it
 * had to be made: a history whose bound (`tokensAtMost`) is within the budget is not counted.
 */
export function overBudget(
  messages: readonly BaseMessage[],
  budget: number,
): { over: false; tokens?: number; atMost: number } | { over: true; tokens: number } {
  let atMost = REPLY_PRIMING_TOKENS;
  for (const message of messages) atMost += messageTokensAtMost(message);
  if (atMost <= budget) return { over: false, atMost };
  const tokens = countInputTokens(messages);
  return tokens > budget ? { over: true, tokens } : { over: false, tokens, atMost };
}

/** Completion tokens: the answer's text and its tool calls. */
export function countOutputTokens(message: AIMessage): number {
  return countTokens(message.text) + toolCallTexts(message).reduce((sum, text) => sum + countTokens(text), 0);
}

/**
 * Token counts by estimate, without the encoder: a quarter of the characters, as for long runs.
 * The scripted model's usage: it stands in for a model that reports none, and loading the encoder
 * (a quarter of a second) for each process that runs a script would cost more than the run.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN_ESTIMATE);
}

/** `countInputTokens` by estimate (`estimateTokens`). */
export function estimateInputTokens(messages: readonly BaseMessage[], tools: readonly ToolSpec[] = []): number {
  let total = REPLY_PRIMING_TOKENS + (tools.length > 0 ? estimateTokens(JSON.stringify(tools)) : 0);
  for (const message of messages) {
    const { texts } = messageCount(message);
    total += framing(message) + texts.reduce((sum, text) => sum + estimateTokens(text), 0) + estimateTokens(message.name ?? "");
  }
  return total;
}

/** `countOutputTokens` by estimate (`estimateTokens`). */
export function estimateOutputTokens(message: AIMessage): number {
  return [message.text, ...toolCallTexts(message)].reduce((sum, text) => sum + estimateTokens(text), 0);
}
