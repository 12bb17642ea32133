import type { PolicyDecision, PolicyRule } from "../state/rules.js";
import { coversReadOnly } from "./read-only-options.js";
import type { ShellPart } from "./shell-parts.js";
/** Which rules apply to a subject, and which one of them decides. */

const STRICTNESS: Record<PolicyDecision, number> = { allow: 0, ask: 1, deny: 2 };

/** The stricter of two decisions: deny > ask > allow. */
export function stricter(a: PolicyDecision, b: PolicyDecision): PolicyDecision {
  return STRICTNESS[b] > STRICTNESS[a] ? b : a;
}

/** `tool` names with `*` (any run of characters) and `?` (one character), matched whole. */
export function toolMatches(toolGlob: string, name: string): boolean {
  return compiled(`tool:${toolGlob}`, () => globToRegExp(toolGlob)).test(name);
}

/**
 * Whether `rule` applies to a call of `toolName` whose subject is written in `forms` (e.g. a
 * path as workspace-relative and as real absolute path): its pattern has to match one of them,
 * or, for a simple shell command given as `part`, one of its `commands` has to cover it.
 */
export function ruleMatches(rule: PolicyRule, toolName: string, forms: readonly string[], part?: ShellPart): boolean {
  if (!toolMatches(rule.tool, toolName)) return false;
  if (rule.pattern === undefined && rule.commands === undefined) return true;
  if (rule.pattern !== undefined) {
    const pattern = compilePattern(rule.pattern);
    if (forms.some((form) => pattern.test(form))) return true;
  }
  // Command scopes need the parsed command: a whole script or a glob's form is never covered by one.
  return part !== undefined && (rule.commands ?? []).some((scope) => coversReadOnly(scope, part));
}

/** The matching rule with the highest priority; on a tie, the stricter decision; else the first. */
export function decidingRule(
  rules: readonly PolicyRule[],
  toolName: string,
  forms: readonly string[],
  part?: ShellPart,
): PolicyRule | undefined {
  let best: PolicyRule | undefined;
  for (const rule of rules) {
    if (!ruleMatches(rule, toolName, forms, part)) continue;
    if (
      best === undefined ||
      rule.priority > best.priority ||
      (rule.priority === best.priority && STRICTNESS[rule.decision] > STRICTNESS[best.decision])
    ) {
      best = rule;
    }
  }
  return best;
}

/** A rule's pattern as a RegExp (cached); throws a SyntaxError naming the pattern when invalid. */
export function compilePattern(pattern: string): RegExp {
  return compiled(`pattern:${pattern}`, () => {
    try {
      return new RegExp(pattern);
    } catch (error) {
      throw new SyntaxError(`invalid policy pattern /${pattern}/: ${(error as Error).message}`);
    }
  });
}

const cache = new Map<string, RegExp>();

function compiled(key: string, build: () => RegExp): RegExp {
  let regExp = cache.get(key);
  if (regExp === undefined) {
    regExp = build();
    cache.set(key, regExp);
  }
  return regExp;
}

/** `text` as a RegExp source that matches it literally. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function globToRegExp(glob: string): RegExp {
  const body = [...glob].map((c) => (c === "*" ? ".*" : c === "?" ? "." : escapeRegExp(c))).join("");
  return new RegExp(`^${body}$`);
}
