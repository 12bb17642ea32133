/**
 * Decides one tool call: allow, deny or ask. Each subject of the call (each simple command of a
 * shell command, or a file tool's path) is decided on its own by the rules, or by the approval
 * mode when no rule matches; the strictest decision wins. Paths outside the workspace are denied
 * before any rule is consulted.
 */
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import picomatch from "picomatch";
import { isInside, realPathOf, resolveInWorkspace, workspaceRelative } from "../tools/workspace-paths.js";
import { isMcpToolName } from "../tools/mcp-servers.js";
import { BUILTIN_TOOLS, MODE_TOOLS } from "../tools/registry.js";
import type { Sandbox } from "../tools/sandbox.js";
import { ToolError, type PolicySubject, type ToolEffect } from "../tools/types.js";
import { BUILTIN_RULES, TOO_DEEP_TO_CHECK, WORKSPACE_CONFINEMENT } from "./builtin-rules.js";
import { sensitiveGlobForms } from "./glob-forms.js";
import { decidingRule, stricter } from "./match.js";
import { beyondItsWords, commandWords, normalisedText, parseShellCommand, writeTargetsOf, type ShellPart } from "./shell-parts.js";
import type { PolicyCause, PolicyVerdict } from "./types.js";
import type { PolicyDecision, PolicyRule } from "../state/rules.js";
import type { ApprovalMode } from "../state/thread.js";

export interface PolicyCall {
  name: string;
  args: unknown;
}

export interface PolicyOptions {
  /** Graph, user and session rules. The built-in rules always apply on top of these. */
  rules: readonly PolicyRule[];
  mode: ApprovalMode;
  workspace: string;
  /**
   * Where commands would run (the sandbox's name): in an OS sandbox (the default), without one
   * because none can start here (`none`: `auto` then asks for commands, as `auto-edit` does), or
   * without one by the user's choice (`off`, `--no-sandbox`).
   */
  sandbox?: Sandbox["name"];
}

/**
 * A tool's facts, as it declares them (src/tools/): an MCP server's tool (`server__tool`) is
 * `external`; any other unknown tool is treated as `execute`; both are decided on their arguments.
 */
export function toolFacts(name: string): { effect: ToolEffect; subject?: PolicySubject } {
  const tool = [...BUILTIN_TOOLS, ...MODE_TOOLS].find((candidate) => candidate.name === name);
  if (tool) return { effect: tool.effect, ...(tool.subject ? { subject: tool.subject } : {}) };
  return { effect: isMcpToolName(name) ? "external" : "execute" };
}

/** What each approval mode decides when no rule matches (`deny` mode: `ask`'s, then ask → deny). */
const MODE_DEFAULTS: Readonly<Record<ApprovalMode, Readonly<Record<ToolEffect, PolicyDecision>>>> = {
  ask: { read: "allow", edit: "ask", execute: "ask", state: "allow", external: "ask", plan: "ask", commit: "ask" },
  "auto-edit": { read: "allow", edit: "allow", execute: "ask", state: "allow", external: "ask", plan: "ask", commit: "ask" },
  auto: { read: "allow", edit: "allow", execute: "allow", state: "allow", external: "ask", plan: "ask", commit: "allow" },
  deny: { read: "allow", edit: "ask", execute: "ask", state: "allow", external: "ask", plan: "ask", commit: "ask" },
};

const EFFECT_NOUNS: Readonly<Record<ToolEffect, string>> = {
  read: "reads",
  edit: "file edits",
  execute: "commands",
  state: "plan updates",
  external: "MCP tool calls",
  plan: "plans",
  commit: "git commits",
};

interface Finding extends PolicyCause {
  decision: PolicyDecision;
}

export function evaluatePolicy(call: PolicyCall, options: PolicyOptions): PolicyVerdict {
  const root = realPathOf(resolve(options.workspace));
  const { effect, subject } = toolFacts(call.name);
  const isCommand = subject !== undefined && "command" in subject;
  const rules = [...BUILTIN_RULES, ...options.rules];
  const mode = effectiveMode(options, effect);
  /** Decides one subject, written in the forms patterns are tested against (the first is shown); a shell command's `part` for command scopes. */
  const decide = (forms: string[], part?: ShellPart): Finding => {
    const rule = decidingRule(rules, call.name, forms, part);
    return explained(rule ? ruleFinding(rule, isCommand, forms[0]!, mode) : defaultFinding(forms[0]!, effect, mode));
  };
  /** An ask that only the missing sandbox caused says so. */
  const explained = (finding: Finding): Finding =>
    mode === options.mode || finding.decision !== "ask"
      ? finding
      : { ...finding, reason: finding.rule ? `${finding.reason} (asks: ${UNSANDBOXED})` : `commands need approval: ${UNSANDBOXED}` };

  if (subject && "command" in subject) {
    const command = stringArgument(call.args, subject.command) ?? "";
    const parsed = parseShellCommand(command);
    const partFinding = (part: ShellPart): Finding => {
      const finding = decide(unique([part.text, normalisedText(part)]), part);
      // A rule that allows a command by its words does not allow what its words do not say.
      const beyond = finding.rule?.decision === "allow" ? beyondItsWords(part) : undefined;
      if (!beyond) return finding;
      // A rule that names the redirection itself (an "always" answer's exact command) does cover it.
      const wordsOnly = { ...part, redirects: [] };
      if (beyond.kind === "redirect" && !decidingRule([finding.rule!], call.name, [commandWords(part.words).join(" ")], wordsOnly))
        return finding;
      const fallback = explained(defaultFinding(part.text, effect, mode));
      return fallback.decision === "allow"
        ? fallback
        : {
            ...fallback,
            reason: `${fallback.reason}: ${finding.rule!.source} rule ${finding.rule!.origin ?? finding.rule!.pattern ?? finding.rule!.tool} does not cover it, as ${beyond.reason}`,
          };
    };
    const findings = parsed.parts.map((part) => (part.nested ? { ...partFinding(part), nested: true as const } : partFinding(part)));
    // Forms that can add an ask or a deny but never allow: a whole script or pipeline (`curl … | sh`
    // spans parts), and a part with its globs matched to sensitive paths (`cat /e?c/shadow`).
    const riskForms = [...parsed.scripts, ...parsed.pipelines].map((script) => ({ subject: script, forms: [script] }));
    for (const part of parsed.parts) riskForms.push({ subject: part.text, forms: sensitiveGlobForms(part) });
    for (const { subject, forms } of riskForms) {
      // A part without globs has no glob forms: a rule without a pattern would "match" the empty list and overrule the part's own decision.
      if (forms.length === 0) continue;
      const rule = decidingRule(rules, call.name, forms);
      if (rule && rule.decision !== "allow") findings.push(explained(ruleFinding(rule, true, subject, mode)));
    }
    findings.push(...outsideWrites(parsed.parts, root));
    for (const script of parsed.tooDeep) {
      findings.push({ subject: script, rule: TOO_DEEP_TO_CHECK, decision: "deny", reason: `\`${script}\`: ${TOO_DEEP_TO_CHECK.reason}` });
    }
    // What bash cannot parse is not what the rules were matched against: the mode alone decides it.
    for (const { script, what } of parsed.incomplete) {
      const fallback = explained(defaultFinding(script, effect, mode));
      findings.push({ ...fallback, reason: `\`${script}\` cannot be parsed (${what}), so no rule allows it: ${fallback.reason}` });
    }
    return verdictOf(findings.length > 0 ? findings : [explained(defaultFinding(command, effect, mode))]);
  }

  const path = subject && "path" in subject ? (stringArgument(call.args, subject.path) ?? subject.fallback) : undefined;
  if (subject && "path" in subject && path !== undefined) {
    const located = subject.glob ? globForms(root, path) : pathForms(root, path);
    return verdictOf(["outside" in located ? confinementFinding(path, located.outside) : decide(located.forms)]);
  }
  return verdictOf([decide([JSON.stringify(call.args ?? {})])]);
}

/** The strictest decision among the findings; the first finding of each subject with it (one by a rule, if any) is a cause. */
function verdictOf(findings: readonly Finding[]): PolicyVerdict {
  const decision = findings.map((finding) => finding.decision).reduce(stricter);
  const causes: Finding[] = [];
  for (const finding of findings) {
    if (finding.decision !== decision) continue;
    const same = causes.findIndex((cause) => cause.subject === finding.subject);
    if (same < 0) causes.push(finding);
    // A stricter rule found later for the same subject (by a glob's forms) names the real reason.
    else if (saysMore(finding, causes[same]!)) causes[same] = finding;
  }
  // A rule's reason says more than the mode's default: it leads.
  causes.sort((a, b) => Number(a.rule === undefined) - Number(b.rule === undefined));
  const [first] = causes as [Finding, ...Finding[]];
  const more = causes.length > 1 ? ` (and ${causes.length - 1} more)` : "";
  return {
    decision,
    ...(first.rule && { rule: first.rule }),
    reason: first.reason + more,
    subject: first.subject,
    causes: causes.map(({ subject, rule, reason, nested }) => ({ subject, ...(rule && { rule }), reason, ...(nested && { nested }) })),
  };
}

/** Whether `finding` explains its decision better than `cause`: by a rule rather than the mode, or by a stricter rule (a deny over an ask the mode denied). */
function saysMore(finding: Finding, cause: Finding): boolean {
  if (finding.rule === undefined) return false;
  return cause.rule === undefined || stricter(cause.rule.decision, finding.rule.decision) !== cause.rule.decision;
}

// ---------------------------------------------------------------------------------------------
// Decisions and their reasons

const UNSANDBOXED =
  'no OS sandbox can start here, so approval mode "auto" asks for commands (install bubblewrap, or pass --no-sandbox to run them unconfined)';

/**
 * The approval mode a call is decided in: `auto` lets commands run unasked only inside an OS
 * sandbox, or where the user chose to run without one; otherwise they ask, as in `auto-edit`.
 */
function effectiveMode(options: PolicyOptions, effect: ToolEffect): ApprovalMode {
  const unconfined = options.sandbox === "none" && effect === "execute";
  return options.mode === "auto" && unconfined ? "auto-edit" : options.mode;
}

function defaultFinding(subject: string, effect: ToolEffect, mode: ApprovalMode): Finding {
  const decision = MODE_DEFAULTS[mode][effect];
  const noun = EFFECT_NOUNS[effect];
  if (decision === "allow") return { subject, decision, reason: `${noun} are allowed in approval mode "${mode}"` };
  if (mode === "deny") return { subject, decision: "deny", reason: `${noun} are denied in approval mode "deny" (it never asks)` };
  if (effect === "plan") return { subject, decision, reason: "plan mode: the plan needs your approval before the agent may act on it" };
  if (effect === "external")
    return {
      subject,
      decision,
      reason: `${noun} need approval in every approval mode unless a policy rule allows them (e.g. tool: "server__*", decision: allow)`,
    };
  return { subject, decision, reason: `${noun} need approval in approval mode "${mode}"` };
}

/** A rule's decision after the mode: `auto` turns `ask` into `allow` (unless the rule `asksInAuto`), `deny` turns it into `deny`. */
function ruleFinding(rule: PolicyRule, isCommand: boolean, subject: string, mode: ApprovalMode): Finding {
  const because = rule.reason ?? `${rule.source} rule ${rule.origin ?? `${rule.tool}${rule.pattern ? ` /${rule.pattern}/` : ""}`}`;
  const reason = isCommand ? `\`${subject}\`: ${because}` : `${subject}: ${because}`;
  if (rule.decision === "ask" && mode === "auto" && !rule.asksInAuto) {
    return { subject, rule, decision: "allow", reason: `${reason} (allowed: approval mode "auto")` };
  }
  if (rule.decision === "ask" && mode === "deny") {
    return { subject, rule, decision: "deny", reason: `${reason} (denied: approval mode "deny" never asks)` };
  }
  return { subject, rule, decision: rule.decision, reason };
}

function confinementFinding(subject: string, reason: string): Finding {
  return { subject, rule: WORKSPACE_CONFINEMENT, decision: "deny", reason };
}

// ---------------------------------------------------------------------------------------------
// File tools: the path, workspace-relative and as its real absolute path

function pathForms(root: string, path: string): { forms: string[] } | { outside: string } {
  const home = homeReference(path);
  if (home) return { outside: home };
  let real: string;
  try {
    real = resolveInWorkspace(root, path);
  } catch (error) {
    // Also an unresolvable path (a symlink loop, no permission): where it leads cannot be checked.
    return { outside: error instanceof ToolError ? error.message : `${path}: cannot resolve it (${(error as Error).message})` };
  }
  return { forms: unique([workspaceRelative(root, resolve(root, path)), real]) };
}

/** A glob is confined by its literal leading directories (as the glob tool reads them), and may not climb out after them. */
function globForms(root: string, pattern: string): { forms: string[] } | { outside: string } {
  const { base, glob } = picomatch.scan(pattern);
  if (glob.split("/").includes("..")) return { outside: `${pattern}: ".." after a wildcard can leave the workspace` };
  const located = pathForms(root, base || ".");
  if ("outside" in located) return located;
  return { forms: unique([pattern.replace(/^\.\//, ""), isAbsolute(pattern) ? pattern : `${root}/${pattern}`]) };
}

/** Tools do not expand `~` or `$HOME` (they would create a directory named `~`): the model meant home. */
function homeReference(path: string): string | undefined {
  if (/^(?:~|\$HOME(?:\/|$)|\$\{HOME\})/.test(path)) {
    return `${path}: ~ and $HOME are your home directory, outside the workspace; tools take workspace-relative paths`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Shell: writes whose target is visibly outside the workspace. A net for obvious cases, not a
// sandbox: paths built at run time (variables, scripts, interpreters) cannot be seen by parsing.

function outsideWrites(parts: readonly ShellPart[], root: string): Finding[] {
  const findings: Finding[] = [];
  let cwd: string | undefined = root;
  for (const part of parts) {
    const [name, ...args] = commandWords(part.words);
    if (name === "cd" || name === "pushd" || name === "popd") {
      const destination = name === "popd" ? undefined : (args.find((arg) => !arg.startsWith("-")) ?? "~");
      cwd = destination === undefined ? undefined : locate(destination, cwd);
      continue;
    }
    for (const target of writeTargetsOf(part)) {
      if (OUTPUT_SINKS.test(target)) continue;
      const location = locate(target, cwd);
      if (location !== undefined && !isInside(root, location)) {
        const shown = target === location ? target : `${target} → ${location}`;
        findings.push(confinementFinding(part.text, `\`${part.text}\` writes outside the workspace (${shown})`));
      }
    }
  }
  return findings;
}

const OUTPUT_SINKS = /^\/dev\/(?:null|stdout|stderr|tty|fd\/\d+)$|^\/proc\/self\/fd\/\d+$/;

/** The real absolute path a shell word names, or undefined when it depends on run-time values. */
function locate(word: string, cwd: string | undefined): string | undefined {
  const home = /^(?:~|\$HOME|\$\{HOME\})(?=\/|$)/.exec(word);
  const here = /^(?:\$PWD|\$\{PWD\}|\$\(pwd\)|`pwd`)(?=\/|$)/.exec(word);
  const expanded = home ? homedir() + word.slice(home[0].length) : here && cwd ? cwd + word.slice(here[0].length) : word;
  if (/^~[^/]/.test(expanded)) return resolve("/home", expanded.slice(1));
  if (/[$`]/.test(expanded)) return undefined;
  if (!isAbsolute(expanded) && cwd === undefined) return undefined;
  const absolute = resolve(cwd ?? "/", expanded);
  try {
    return realPathOf(absolute);
  } catch {
    return absolute; // a symlink loop or no permission: judge the path as written
  }
}

// ---------------------------------------------------------------------------------------------

function stringArgument(args: unknown, key: string): string | undefined {
  if (typeof args !== "object" || args === null) return undefined;
  const value = (args as Record<string, unknown>)[key];
  return typeof value === "string" ? value : undefined;
}

function unique(forms: string[]): string[] {
  return [...new Set(forms)];
}
