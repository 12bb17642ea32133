import { z } from "zod";
import type { LooperCommands } from "../../runtime/context.js";
import type { LooperCommand, LooperEvent } from "../../state/looper.js";

const taskSchema = z.string().trim().min(1);

/** A Looper command as JSON, e.g. `{"command": "add_pending", "task": "add login"}`. Strict: no other keys. */
export const looperCommandSchema = z.discriminatedUnion("command", [
  z.strictObject({ command: z.literal("start"), task: taskSchema }),
  z.strictObject({ command: z.literal("add_pending"), task: taskSchema }),
  z.strictObject({ command: z.literal("stop") }),
  z.strictObject({ command: z.literal("status") }),
]);

type TaskCommandName = Extract<LooperCommand, { task: string }>["command"];

const BARE_KEYWORDS = new Map<string, LooperCommand>([
  ["stop", { command: "stop" }],
  ["status", { command: "status" }],
]);

const TASK_KEYWORDS = new Map<string, TaskCommandName>([
  ["start", "start"],
  ["add", "add_pending"],
  ["pending", "add_pending"],
  ["add_pending", "add_pending"],
  ["also", "add_pending"],
]);

/** An optional `/`, a keyword, an optional `:`, then the rest (which may span lines). */
const PLAIN_COMMAND = /^(\/?)([a-z_]+)(\s*:)?\s*([\s\S]*)$/i;

/**
 * Reads a Looper command from what the user typed, or returns undefined (the text then goes to
 * the Mediator). Accepted, keywords case-insensitive, surrounding whitespace ignored:
 *
 * - JSON matching {@link looperCommandSchema}: `{"command": "stop"}`, `{"command": "start", "task": "…"}`.
 * - `stop`, `status` alone (or `/stop`, `/status`).
 * - `start: <task>`; `add: <task>`, `also: <task>`, `pending: <task>`, `add_pending: <task>` (add_pending);
 *   with a leading slash the colon may be left out: `/start <task>`, `/add <task>`.
 *
 * A task keyword needs the colon or the slash: "start by reading the README", "add a comment
 * here?" or "Also what does git rebase do?" are sentences for the Mediator, which forwards real
 * work itself. An empty task is no command.
 */
export function parseLooperCommand(text: string): LooperCommand | undefined {
  const trimmed = text.trim();
  return trimmed.startsWith("{") ? parseJsonCommand(trimmed) : parsePlainCommand(trimmed);
}

function parseJsonCommand(text: string): LooperCommand | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = looperCommandSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

function parsePlainCommand(text: string): LooperCommand | undefined {
  const match = PLAIN_COMMAND.exec(text);
  if (!match) return undefined;
  const [, slash = "", word = "", colon, rest = ""] = match;
  const keyword = word.toLowerCase();
  const bare = BARE_KEYWORDS.get(keyword);
  if (bare) return colon === undefined && rest === "" ? { ...bare } : undefined;
  const command = TASK_KEYWORDS.get(keyword);
  if (!command) return undefined;
  if (colon === undefined && slash === "") return undefined;
  const task = rest.trim();
  return task ? { command, task } : undefined;
}

/** The machine event for a command; `maxRounds` applies when the command starts a loop. */
export function commandToEvent(command: LooperCommand, maxRounds: number): LooperEvent {
  switch (command.command) {
    case "start":
      return { type: "START", task: command.task, maxRounds };
    case "add_pending":
      return { type: "ADD_PENDING", task: command.task, maxRounds };
    case "stop":
      return { type: "STOP" };
    case "status":
      return { type: "STATUS" };
  }
}

/** Gives a command to a Looper (the Mediator's `send_to_looper`, the chat's shortcuts): its answer is a line for the user. */
export function dispatchLooperCommand(command: LooperCommand, looper: LooperCommands): Promise<string> {
  switch (command.command) {
    case "start":
      return looper.start(command.task);
    case "add_pending":
      return looper.addPending(command.task);
    case "stop":
      return looper.stop();
    case "status":
      return looper.status();
  }
}
