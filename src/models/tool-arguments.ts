import type { AIMessage, InvalidToolCall, ToolCall } from "@langchain/core/messages";

/** A tool call's argument text, read strictly: one complete JSON object, or why not. */
export type ParsedToolArguments = { ok: true; args: Record<string, unknown> } | { ok: false; reason: string };

const REASON_CHARS = 120;

/**
 * Reads the raw argument text of a tool call as the model sent it. Nothing is repaired: a
 * truncated object, text that is not JSON, or JSON that is not an object (an array, a string…)
 * is refused with a short reason. An empty text stands for no arguments (`{}`), as some
 * OpenAI-compatible servers send for a tool without parameters.
 */
export function parseToolArguments(raw: string): ParsedToolArguments {
  if (raw.trim() === "") return { ok: true, args: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    const message = (error as Error).message.split("\n")[0]!;
    return { ok: false, reason: message.length > REASON_CHARS ? `${message.slice(0, REASON_CHARS)}…` : message };
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) return { ok: true, args: value as Record<string, unknown> };
  const kind = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
  return { ok: false, reason: `they are ${kind}, not an object` };
}

/** A call with its raw argument text, in the order the model made it. */
export interface RawToolCall {
  id: string;
  name: string;
  args: string;
}

/** Splits raw calls into LangChain's `tool_calls` (arguments a JSON object) and `invalid_tool_calls` (the raw text and why). */
export function toolCallsFromRaw(calls: readonly RawToolCall[]): Pick<AIMessage, "tool_calls" | "invalid_tool_calls"> {
  const tool_calls: ToolCall[] = [];
  const invalid_tool_calls: InvalidToolCall[] = [];
  for (const { id, name, args } of calls) {
    const parsed = parseToolArguments(args);
    if (parsed.ok) tool_calls.push({ id, name, args: parsed.args, type: "tool_call" });
    else invalid_tool_calls.push({ id, name, args, error: parsed.reason, type: "invalid_tool_call" });
  }
  return { tool_calls, invalid_tool_calls };
}
