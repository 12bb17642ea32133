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

/** Polite words around a request ("please stop", "could you tell me the status?"): they change nothing. */
const POLITE_START = /^(?:(?:ok(?:ay)?|hey|hi|so|now|please|pls|kindly|(?:can|could|would|will) you|i want you to|i'd like you to)[\s,]+)+/;
const POLITE_END = /(?:[\s,]+(?:please|pls|thanks|thank you|now|right now|asap))+$/;

const NATURAL_STOP =
  /^(?:stop|halt|abort|cancel|quit|end|pause)(?: (?:it|this|that|the (?:loop|run|looper|work)|looping|running|working|everything|all|here))*$|^(?:that'?s )?enough$/;
const NATURAL_STATUS =
  /^(?:(?:show |give |tell )?(?:me )?(?:the |your )?(?:status|progress)|what(?:'s| is) (?:the |your )?(?:status|progress|state)|how(?:'s| is) (?:it|the loop|the work|everything) going|how are (?:you|things) (?:doing|going)|where are (?:you|we)|are you (?:done|finished)(?: yet)?|what are you (?:doing|working on)|what(?:'s| is) (?:happening|going on))$/;
/** "also write docs", "and then add a test", "one more thing: rename x" → the task after the lead-in. */
const NATURAL_ADD = /^(?:and )?(?:also|additionally|then|next|afterwards|after that|one more thing|another task|queue)\b[\s,:]*(.+)$/s;
/** "add a README": the whole request is the task. */
const NATURAL_ADD_WHOLE = /^add\b\s*(.+)$/s;
const NATURAL_START = /^(?:start|begin)(?: (?:working )?on| with| a loop (?:on|for))?\b[\s,:]*(.+)$/s;

/**
 * Reads a Looper command from plain English, for a Looper thread (`loopgraph send T.loop "please
 * stop"`), where no Mediator is there to understand it: the forms of {@link parseLooperCommand},
 * then rules: "please stop", "stop the loop" → stop; "what's the status?", "how is it going?" →
 * status; "also write docs", "then add a test", "add a README" → add_pending; "start on the
 * parser", "begin with X" → start. Undefined when no rule maps it (see {@link NATURAL_FORMS}).
 */
export function parseNaturalCommand(text: string): LooperCommand | undefined {
  const exact = parseLooperCommand(text);
  if (exact) return exact;
  const words = text
    .trim()
    .replace(/\s+/g, " ")
    .replace(/[.!?\s]+$/, "")
    .toLowerCase()
    .replace(POLITE_START, "")
    .replace(POLITE_END, "");
  if (NATURAL_STOP.test(words)) return { command: "stop" };
  if (NATURAL_STATUS.test(words)) return { command: "status" };
  // The task keeps the user's own case: the same characters cut from the original text.
  const original = text.trim().replace(/\s+/g, " ");
  const cut = (rest: string | undefined): string | undefined => {
    const task = rest?.trim();
    if (!task) return undefined;
    const at = original.toLowerCase().lastIndexOf(task);
    return at < 0 ? task : original.slice(at, at + task.length);
  };
  const added = cut(NATURAL_ADD.exec(words)?.[1]) ?? (NATURAL_ADD_WHOLE.test(words) ? cut(words) : undefined);
  if (added) return { command: "add_pending", task: added };
  const started = cut(NATURAL_START.exec(words)?.[1]);
  if (started && !/^(?:it|the loop|again|over)$/i.test(started)) return { command: "start", task: started };
  return undefined;
}

/** What a Looper thread understands, for the answer to a request no rule maps. */
export const NATURAL_FORMS = [
  'stop ("stop", "please stop", "stop the loop")',
  'status ("status", "what\'s the status?", "how is it going?")',
  'add a task ("add: <task>", "also <task>", "then <task>", "add <task>")',
  'start a loop ("start: <task>", "start on <task>")',
  'or JSON like {"command": "stop"}',
].join("; ");

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
