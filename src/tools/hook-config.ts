/**
 * Hooks: the user's commands run at points of a run, given a JSON description of the event on
 * stdin, run as the shell tool runs the agent's commands (the OS sandbox, the agent's
 * environment, in the workspace). Declared in a config file:
 *
 *     hooks:
 *       session_start: [ { command: "echo started >> .loopgraph/hooks.log" } ]
 *       before_tool:   [ { tools: "shell", command: "./scripts/check-command.sh", timeout: 10 } ]
 *       after_tool:    [ { tools: "*_file", command: "npx prettier --check . >&2 || true" } ]
 *       stop:          [ { command: "notify-send 'loopgraph stopped'" } ]
 *       error:         [ { command: "cat >> .loopgraph/errors.jsonl" } ]
 *
 * A `before_tool` hook blocks the call by exiting with 2 (its stderr, or stdout, is the reason the
 * model is told), or by printing `{"decision": "block", "reason": "…"}`; a hook that fails
 * otherwise (another exit code, a timeout) blocks it too: a guard that cannot decide lets nothing
 * through. What an `after_tool` hook prints is added to the result the model sees. The others'
 * output is not used; their failures are warnings. docs/hooks.md has the whole contract.
 */
import type { Problem } from "../diagnostics/yaml-file.js";
import { mappingEntry, unknownKeyProblem } from "../diagnostics/yaml-file.js";

export const HOOK_EVENTS = ["session_start", "before_tool", "after_tool", "stop", "error"] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export interface Hook {
  event: HookEvent;
  /** A bash command line, run in the workspace. */
  command: string;
  /** before_tool, after_tool: the tools it is for (a name with `*` and `?` wildcards; default all). */
  tools?: string;
  timeoutMs: number;
  /** Declared by the user themselves (their config file): runs without a sandbox where none can start. */
  trusted: boolean;
  /** The file it was declared in. */
  origin: string;
}

const HOOK_KEYS = ["command", "tools", "timeout"];
const DEFAULT_TIMEOUT_SECONDS = 60;
const TOOL_GLOB = /^[A-Za-z0-9_*?-]+$/;

/** Checks `hooks:` (event → list of { command, tools?, timeout? }); returns the hooks, or the problems. */
export function checkHooks(value: unknown, source: { trusted: boolean; origin: string }): { hooks: Hook[]; problems: Problem[] } {
  const shape =
    "hooks must be a mapping of events (session_start, before_tool, after_tool, stop, error) to lists of { command, tools, timeout }";
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return { hooks: [], problems: [{ path: ["hooks"], at: "value", message: shape }] };
  const hooks: Hook[] = [];
  const problems: Problem[] = [];
  for (const [event, list] of Object.entries(value as Record<string, unknown>)) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      problems.push(unknownKeyProblem(["hooks"], event, HOOK_EVENTS, `unknown hook event "${event}": hooks has ${HOOK_EVENTS.join(", ")}`));
      continue;
    }
    if (!Array.isArray(list)) {
      problems.push({ path: ["hooks", event], at: "value", message: `hooks.${event} must be a list of { command, tools, timeout }` });
      continue;
    }
    list.forEach((raw: unknown, index) => {
      const path = ["hooks", event, index];
      const entry = mappingEntry(raw, path, problems, HOOK_KEYS, {
        name: "a hook",
        notMapping: "a hook is a mapping: { command, tools, timeout }",
      });
      if (!entry) return;
      const { fields, bad } = entry;
      if (typeof fields.command !== "string" || fields.command.trim() === "")
        bad("command", "command must be a bash command line, run in the workspace");
      const toolEvent = event === "before_tool" || event === "after_tool";
      if (fields.tools !== undefined && !toolEvent) bad("tools", "tools is for before_tool and after_tool hooks");
      else if (fields.tools !== undefined && (typeof fields.tools !== "string" || !TOOL_GLOB.test(fields.tools)))
        bad("tools", "tools must be a tool name with * and ? wildcards, e.g. shell, *_file, docs__*");
      const timeout = fields.timeout ?? DEFAULT_TIMEOUT_SECONDS;
      if (typeof timeout !== "number" || !(timeout > 0) || timeout > 3_600)
        bad("timeout", "timeout must be the seconds the hook may take (a number, at most 3600)");
      if (!entry.clean()) return;
      hooks.push({
        event: event as HookEvent,
        command: fields.command as string,
        ...(fields.tools !== undefined && { tools: fields.tools as string }),
        timeoutMs: Math.round(Number(timeout) * 1000),
        trusted: source.trusted,
        origin: source.origin,
      });
    });
  }
  return { hooks, problems };
}
