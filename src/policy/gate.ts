/**
 * What a tool-using node does with a call before running it: run it, answer with a "blocked"
 * result, or ask the user; and the rule an "always" answer adds for the rest of the session.
 */
import type { ToolResult } from "../tools/types.js";
import { evaluatePolicy, toolFacts, type PolicyCall, type PolicyOptions } from "./evaluate.js";
import { escapeRegExp } from "./match.js";
import { commandWords, parseShellCommand } from "./shell-parts.js";
import type { PolicyCause, PolicyVerdict } from "./types.js";
import type { PolicyRule } from "../state/rules.js";

export type GateDecision =
  | { kind: "run"; verdict: PolicyVerdict }
  | { kind: "blocked"; verdict: PolicyVerdict; result: ToolResult }
  | { kind: "ask"; verdict: PolicyVerdict };

export function decideToolCall(call: PolicyCall, options: PolicyOptions): GateDecision {
  const verdict = evaluatePolicy(call, options);
  switch (verdict.decision) {
    case "allow":
      return { kind: "run", verdict };
    case "ask":
      return { kind: "ask", verdict };
    case "deny":
      return { kind: "blocked", verdict, result: { ok: false, errorKind: "blocked", content: `Blocked by policy: ${verdict.reason}` } };
  }
}

/**
 * The session rule to add when the user answers "always" to an `ask` verdict: an allow rule for
 * the same tool, scoped to what was approved.
 *
 * - When a rule asked (a sensitive file, `git push --force` …), only the exact subjects approved
 *   are allowed, one priority above that rule: "always" must not widen what a rule singled out.
 * - When the approval mode's default asked, the scope widens the way users expect from other agent
 *   CLIs, at priority 0 (so any written deny still wins): file edits of that tool anywhere in the
 *   workspace; a shell command by its command name, plus its subcommand for tools such as git or
 *   npm (`git status`, `npm test`). Commands that delete, move, download or run inline code
 *   (`rm`, `curl`, `python -c` …) stay exact.
 */
export function sessionRuleFor(call: PolicyCall, verdict: PolicyVerdict): PolicyRule {
  const causes: PolicyCause[] = verdict.causes ?? [
    { subject: verdict.subject ?? "", ...(verdict.rule && { rule: verdict.rule }), reason: verdict.reason },
  ];
  const askingRules = causes.flatMap((cause) => (cause.rule ? [cause.rule] : []));
  const base = { tool: call.name, decision: "allow", source: "session", reason: 'approved with "always" in this session' } as const;
  if (askingRules.length > 0) {
    const priority = Math.max(...askingRules.map((rule) => rule.priority)) + 1;
    return { ...base, pattern: alternatives(causes.map((cause) => `${escapeRegExp(cause.subject)}$`)), priority };
  }
  const { subject } = toolFacts(call.name);
  if (!subject || !("command" in subject)) return { ...base, priority: 0 };
  return { ...base, pattern: alternatives(causes.map((cause) => commandScope(cause.subject))), priority: 0 };
}

function alternatives(scopes: string[]): string {
  const distinct = [...new Set(scopes)];
  return distinct.length === 1 ? `^${distinct[0]}` : `^(?:${distinct.join("|")})`;
}

/** Tools whose first argument is a subcommand worth keeping in an "always" scope. */
const SUBCOMMAND_TOOLS = new Set([
  "git",
  "npm",
  "npx",
  "pnpm",
  "yarn",
  "bun",
  "deno",
  "cargo",
  "go",
  "docker",
  "kubectl",
  "pip",
  "pip3",
  "uv",
  "poetry",
  "gh",
  "make",
  "dotnet",
  "mvn",
  "gradle",
  "./gradlew",
]);

/** Commands an "always" answer allows only exactly as approved. */
const EXACT_ONLY = new Set([
  "rm",
  "rmdir",
  "mv",
  "dd",
  "chmod",
  "chown",
  "chgrp",
  "ln",
  "kill",
  "pkill",
  "killall",
  "curl",
  "wget",
  "ssh",
  "scp",
  "rsync",
  "eval",
  "exec",
  "sh",
  "bash",
  "zsh",
  "python",
  "python3",
  "node",
  "perl",
  "ruby",
  "php",
]);

/** A RegExp fragment (after `^`) for "this command, whatever its arguments". */
function commandScope(partText: string): string {
  const [part] = parseShellCommand(partText).parts;
  const [name, subcommand] = part ? commandWords(part.words) : [];
  if (name === undefined || EXACT_ONLY.has(name)) return `${escapeRegExp(partText)}$`;
  const words = SUBCOMMAND_TOOLS.has(name) && subcommand && !subcommand.startsWith("-") ? [name, subcommand] : [name];
  return words.map(escapeRegExp).join(String.raw`\s+`) + String.raw`(?:\s|$)`;
}
