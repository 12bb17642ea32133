import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { ConfigError } from "../errors.js";
import type { GraphDefinition } from "../format/types.js";
import { STATE_CHANNELS } from "../state/graph-state.js";
import { TASK_MESSAGE_ID } from "../engine/run-types.js";

/** One `--set path=value` of a fork: the value replaces what is at the path. */
export interface StateEdit {
  path: string;
  /** The path split at dots; the first segment is a state channel. */
  segments: string[];
  value: unknown;
}

const UNSAFE_KEYS = new Set(["__proto__", "prototype", "constructor"]);

const usage = 'expected path=value, e.g. --set task="fix the login bug" or --set vars.retries=3';

/** Parses `path=value`; the value is JSON when it parses as JSON, else the text as it is. */
export function parseStateEdit(text: string): StateEdit {
  const equals = text.indexOf("=");
  const path = equals < 0 ? "" : text.slice(0, equals).trim();
  if (!path) throw new ConfigError(`--set "${text}": ${usage}`);
  const segments = path.split(".");
  if (segments.some((segment) => segment === "" || UNSAFE_KEYS.has(segment))) {
    throw new ConfigError(`--set ${path}: invalid path: use dotted names and list indexes, e.g. vars.retries or messages.0.content`);
  }
  if (!STATE_CHANNELS.includes(segments[0]!)) {
    throw new ConfigError(`--set ${path}: unknown state channel "${segments[0]}" (the state has ${STATE_CHANNELS.join(", ")})`);
  }
  const raw = text.slice(equals + 1);
  return { path, segments, value: parseValue(raw) };
}

function parseValue(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** `vars.<name>` must be a field the graph declares under `state:`. */
export function checkDeclaredVars(edits: readonly StateEdit[], graph: GraphDefinition): void {
  for (const edit of edits) {
    const [channel, name] = edit.segments;
    if (channel !== "vars" || name === undefined || Object.hasOwn(graph.state, name)) continue;
    const declared = Object.keys(graph.state);
    const known = declared.length > 0 ? `it declares ${declared.join(", ")}` : "it declares none";
    throw new ConfigError(`--set ${edit.path}: ${graph.file} has no state field "${name}" under state: (${known})`);
  }
}

/**
 * The new value of every channel the edits touch, built from `values` without changing it (the
 * checkpoint saver treats stored items as immutable). Later edits apply on top of earlier ones.
 */
export function applyEdits(values: Record<string, unknown>, edits: readonly StateEdit[]): Record<string, unknown> {
  const changed: Record<string, unknown> = {};
  for (const edit of edits) {
    const [channel, ...rest] = edit.segments as [string, ...string[]];
    const current = Object.hasOwn(changed, channel) ? changed[channel] : values[channel];
    changed[channel] = setPath(current, rest, edit.value, edit.path, channel);
  }
  return changed;
}

function setPath(container: unknown, keys: readonly string[], value: unknown, fullPath: string, at: string): unknown {
  const [key, ...rest] = keys;
  if (key === undefined) return value;
  const inner = (child: unknown): unknown => setPath(child, rest, value, fullPath, `${at}.${key}`);
  if (Array.isArray(container)) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= container.length) {
      throw new ConfigError(`--set ${fullPath}: ${at} is a list of ${container.length}: "${key}" is not an index of it`);
    }
    const copy = [...container];
    copy[index] = inner(container[index]);
    return copy;
  }
  if (isBaseMessage(container)) return withMessageField(container, key, inner((container as unknown as Record<string, unknown>)[key]));
  if (container === undefined || container === null) return { [key]: inner(undefined) };
  if (typeof container !== "object") {
    throw new ConfigError(`--set ${fullPath}: ${at} is a ${typeof container}, not an object`);
  }
  return { ...(container as Record<string, unknown>), [key]: inner((container as Record<string, unknown>)[key]) };
}

/**
 * With `task` edited and `messages` not, the message that gave the run its task says the new one
 * too: agents that read the history then see the same task as prompts that use {{task}}.
 */
export function withTaskMessage(values: Record<string, unknown>, changed: Record<string, unknown>): Record<string, unknown> {
  if (typeof changed.task !== "string" || Object.hasOwn(changed, "messages") || !Array.isArray(values.messages)) return changed;
  const messages = values.messages as unknown[];
  const index = messages.findIndex((message) => isBaseMessage(message) && message.id === TASK_MESSAGE_ID);
  if (index < 0) return changed;
  const updated = [...messages];
  updated[index] = withMessageField(messages[index] as BaseMessage, "content", changed.task);
  return { ...changed, messages: updated };
}

/** A new message of the same class with one field replaced (a message serialises from its constructor fields). */
function withMessageField(message: BaseMessage, key: string, value: unknown): BaseMessage {
  const MessageClass = message.constructor as new (fields: Record<string, unknown>) => BaseMessage;
  return new MessageClass({ ...(message.lc_kwargs as Record<string, unknown>), [key]: value });
}
