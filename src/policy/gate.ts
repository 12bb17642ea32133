/**
 * What a tool-using node does with a call before running it: run it, answer with a "blocked"
 * result, or ask the user; and the rule an "always" answer adds for the rest of the thread.
 */
import type { ToolResult } from "../tools/types.js";
import { evaluatePolicy, toolFacts, type PolicyCall, type PolicyOptions } from "./evaluate.js";
import { escapeRegExp } from "./match.js";
import { describeScope, readOnlyScope } from "./read-only-options.js";
import { parseShellCommand } from "./shell-parts.js";
import type { PolicyCause, PolicyVerdict } from "./types.js";
import type { CommandScope, PolicyRule } from "../state/rules.js";

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

/** What an "always" answer adds: the session rule, and what it covers in words (shown before the user answers). */
export interface AlwaysAnswer {
  rule: PolicyRule;
  /** E.g. `` `git status` with read-only options, for the rest of this thread ``. */
  description: string;
}

const FOR_THE_THREAD = "for the rest of this thread";

/**
 * The session rule to add when the user answers "always" to an `ask` verdict: an allow rule for
 * the same tool, scoped to what was approved.
 *
 * - When a rule asked (a sensitive file, `git push --force` …), only the exact subjects approved
 *   are allowed, one priority above that rule: "always" must not widen what a rule singled out.
 * - When the approval mode's default asked, at priority 0 (so any written deny still wins): file
 *   edits of that tool anywhere in the workspace; a shell command's program (and subcommand) with
 *   options that neither write nor execute, when the command approved is such a one
 *   (read-only-options.ts: `git status -s` covers `git status` with any read-only options, not
 *   `git status && rm x`, `echo $(…)` or `sort -o f`); any other shell command exactly as approved.
 */
export function alwaysAnswerFor(call: PolicyCall, verdict: PolicyVerdict): AlwaysAnswer {
  const causes: PolicyCause[] = verdict.causes ?? [
    { subject: verdict.subject ?? "", ...(verdict.rule && { rule: verdict.rule }), reason: verdict.reason },
  ];
  const subjects = [...new Set(causes.map((cause) => cause.subject))];
  const askingRules = causes.flatMap((cause) => (cause.rule ? [cause.rule] : []));
  const base = { tool: call.name, decision: "allow", source: "session", reason: 'approved with "always" in this session' } as const;
  const { subject } = toolFacts(call.name);
  const isCommand = subject !== undefined && "command" in subject;
  const exactly = (text: string) => (isCommand ? `exactly \`${text}\`` : `${call.name} of exactly ${text}`);
  if (askingRules.length > 0) {
    const priority = Math.max(...askingRules.map((rule) => rule.priority)) + 1;
    return {
      rule: { ...base, pattern: exactPattern(subjects), priority },
      description: `${subjects.map(exactly).join(", and ")}, ${FOR_THE_THREAD}`,
    };
  }
  if (!isCommand) {
    const where = subject ? "anywhere in the workspace" : "with any arguments";
    return { rule: { ...base, priority: 0 }, description: `${call.name} ${where}, ${FOR_THE_THREAD}` };
  }
  const scopes = new Map<string, CommandScope>();
  const exact: string[] = [];
  const nested = new Set(causes.filter((cause) => cause.nested).map((cause) => cause.subject));
  for (const text of subjects) {
    const parts = parseShellCommand(text).parts;
    // A subject is one simple command; anything the scanner splits further is approved exactly.
    const found = parts.length === 1 ? readOnlyScope(parts[0]!) : undefined;
    // Approved inside a subshell or a substitution (`(ls)`): covered there too.
    const scope = found && nested.has(text) ? { ...found, nested: true as const } : found;
    if (scope) scopes.set(JSON.stringify(scope), scope);
    else exact.push(text);
  }
  const commands = [...scopes.values()];
  return {
    rule: { ...base, ...(exact.length > 0 && { pattern: exactPattern(exact) }), ...(commands.length > 0 && { commands }), priority: 0 },
    description: `${[...commands.map(describeScope), ...exact.map(exactly)].join(", and ")}, ${FOR_THE_THREAD}`,
  };
}

/** A pattern matching exactly these subjects. */
function exactPattern(subjects: readonly string[]): string {
  const alternatives = subjects.map((subject) => `${escapeRegExp(subject)}$`);
  return alternatives.length === 1 ? `^${alternatives[0]}` : `^(?:${alternatives.join("|")})`;
}
