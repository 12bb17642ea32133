/**
 * Policy rules written in YAML: the user files and a graph file's `policy:` section.
 *
 *     rules:
 *       - { tool: shell, pattern: '^npm (test|run lint)$', decision: allow, reason: safe checks }
 *       - { tool: write_file, pattern: '^migrations/', decision: deny, priority: 500 }
 *
 * Priority bands (higher wins; a tie goes to the stricter decision, deny > ask > allow):
 *   1000     built-in denies (destructive commands, credentials outside the workspace) and the
 *            workspace confinement: above every priority a file may write, so none can lift them;
 *   0–999    graph and user rules, as written (default 0);
 *   100      within that band, the built-in asks (sensitive files, history-rewriting git): a
 *            written rule at 101 or more overrides them;
 *   session  "always" approvals: one above the rule that asked, or 0 when the mode's default asked.
 * Any matching rule beats the approval mode's default, which decides only when no rule matches.
 *
 * Graph files and the workspace's `.loopgraph/policy.yaml` come with the repository: review them
 * like its Makefile or npm scripts, which an allowed `make`/`npm test` runs anyway.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { parseYamlFile, readSettingsText } from "../diagnostics/yaml-file.js";
import { closestName } from "../diagnostics/suggest.js";
import { mustCompile } from "../diagnostics/patterns.js";
import { STATE_DIR, userConfigDir } from "../project.js";
import type { PolicyRule, RuleSource } from "../state/rules.js";
import { untrustedReason } from "../trust/trust.js";

export const MAX_RULE_PRIORITY = 999;

const DECISIONS = ["allow", "deny", "ask"] as const;
const RULE_KEYS = ["tool", "pattern", "decision", "priority", "reason", "read_only"];

const POLICY_KEYS = ["rules"];
/** The user's own policy file (in the config home) may also set the sandbox's network. */
const USER_POLICY_KEYS = ["rules", "sandbox"];

const missingOr = (key: string, wrongType: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? `missing "${key}"` : wrongType;

function unknownKey(key: string, known: readonly string[]): string {
  const suggestion = closestName(key, known);
  const has = known.length === 1 ? `only "${known[0]}"` : known.join(", ");
  return suggestion === undefined
    ? `unknown key "${key}": ${known === RULE_KEYS ? `a rule has ${has}` : known === SANDBOX_KEYS ? `sandbox has ${has}` : `a policy has ${has}`}`
    : `unknown key "${key}": did you mean "${suggestion}"?`;
}

export const policyRuleSchema = z
  .strictObject(
    {
      tool: z
        .string({ error: missingOr("tool", "tool must be a tool name (wildcards * and ?), e.g. shell or *_file") })
        .regex(/^\S+$/, { error: "tool must be a tool name without spaces (wildcards * and ?), e.g. shell or *_file" })
        .describe("Tool name, with * and ? wildcards: shell, write_file, *_file, *"),
      pattern: z
        .string({ error: "pattern must be a regular expression, written as a string" })
        .superRefine(mustCompile)
        .describe(
          "Regular expression over the subject: each simple command of a shell command, a file tool's path " +
            "(workspace-relative and real absolute), or the JSON arguments of other tools. Absent: every call",
        )
        .optional(),
      decision: z.enum(DECISIONS, {
        error: missingOr("decision", "decision must be allow, deny or ask"),
      }),
      priority: z
        .int({ error: `priority must be a whole number from 0 to ${MAX_RULE_PRIORITY}` })
        .min(0, { error: `priority must be a whole number from 0 to ${MAX_RULE_PRIORITY}` })
        .max(MAX_RULE_PRIORITY, {
          error: `priority above ${MAX_RULE_PRIORITY}: 1000 and up belong to the built-in denies, which no rule can override`,
        })
        .describe(`Higher wins (0–${MAX_RULE_PRIORITY}, default 0); built-in asks have 100, built-in denies 1000`)
        .default(0),
      reason: z.string({ error: "reason must be a string" }).min(1).describe("Shown to the model and the user").optional(),
      read_only: z
        .literal(true, { error: "read_only must be true (or left out)" })
        .describe(
          "On an allow rule for MCP tools (server__tool): the tools only read, so calls of one model turn may run at once, as the built-in reads do",
        )
        .optional(),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? issue.keys.map((key) => unknownKey(key, RULE_KEYS)).join("; ")
          : "a rule must be a mapping: { tool, pattern?, decision, priority?, reason?, read_only? }",
    },
  )
  .refine((rule) => rule.read_only === undefined || rule.decision === "allow", {
    error: "read_only belongs on an allow rule: it says the tools it allows only read",
    path: ["read_only"],
  })
  .meta({ id: "policyRule", description: "A policy rule: allow, deny or ask for matching tool calls" });

/** A `policy:` section of a graph file, and the whole of a user policy file. */
export const policyRulesSchema = z
  .strictObject(
    { rules: z.array(policyRuleSchema, { error: "rules must be a list of rules" }).default([]) },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? issue.keys.map((key) => unknownKey(key, POLICY_KEYS)).join("; ")
          : "a policy must be a mapping with a rules: list",
    },
  )
  .meta({ id: "policy", description: "Policy rules for tool calls" });

export type PolicyRulesSection = z.output<typeof policyRulesSchema>;

const SANDBOX_KEYS = ["network", "read", "write"];

/** Folders the user opens to the sandbox: absolute, or under the home directory (`~/…`). */
const sandboxFolders = (what: string) =>
  z
    .array(z.string().regex(/^(\/|~\/)/, { error: "a folder must be an absolute path or start with ~/" }), {
      error: `${what} must be a list of folders`,
    })
    .optional();

/** The user's own policy file: rules, and the OS sandbox's settings. */
const userPolicySchema = z.strictObject(
  {
    rules: policyRulesSchema.shape.rules,
    sandbox: z
      .strictObject(
        {
          network: z
            .enum(["allow", "deny"], { error: "network must be allow or deny" })
            .describe("Whether the agent's commands may reach the network from the OS sandbox (default deny)")
            .default("deny"),
          read: sandboxFolders("read").describe(
            "Folders the agent's commands may read in the OS sandbox besides the system's (e.g. a toolchain under /opt)",
          ),
          write: sandboxFolders("write").describe(
            "Folders the agent's commands may write in the OS sandbox besides the workspace (e.g. a shared cache)",
          ),
        },
        {
          error: (issue) =>
            issue.code === "unrecognized_keys"
              ? issue.keys.map((key) => unknownKey(key, SANDBOX_KEYS)).join("; ")
              : "sandbox must be a mapping: { network: allow | deny, read: [folders], write: [folders] }",
        },
      )
      .optional(),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? issue.keys.map((key) => unknownKey(key, USER_POLICY_KEYS)).join("; ")
        : "a policy must be a mapping with a rules: list",
  },
);

/** What a policy file says: its rules, and (the user's own file only) the sandbox's network and the folders it opens. */
export interface PolicyFile {
  rules: PolicyRule[];
  network?: boolean;
  /** Folders commands may read in the sandbox, as written (`~/` not yet expanded). */
  read?: string[];
  /** Folders commands may write in the sandbox, as written. */
  write?: string[];
}

/** Validated rules as PolicyRules; `origin` names where they were written (a file). */
export function toPolicyRules(section: PolicyRulesSection, source: RuleSource, origin: string): PolicyRule[] {
  return section.rules.map((rule, index) => ({
    tool: rule.tool,
    ...(rule.pattern !== undefined && { pattern: rule.pattern }),
    decision: rule.decision,
    priority: rule.priority,
    ...(rule.reason !== undefined && { reason: rule.reason }),
    ...(rule.read_only && { readOnly: true as const }),
    source,
    origin: `${origin} rules[${index}]`,
  }));
}

/**
 * Parses a policy file's text. Throws ConfigError listing every problem as
 * `file:line:col: rules[2].pattern: …`.
 */
export function parsePolicyFile(text: string, file: string, source: RuleSource = "user"): PolicyRule[] {
  return parsePolicy(text, file, source, false).rules;
}

/**
 * Parses a policy file's text; `sandboxSettings` accepts the `sandbox:` key (only the user's own
 * file in the config home: a repository must not open the network for its own agent).
 */
function parsePolicy(text: string, file: string, source: RuleSource, sandboxSettings: boolean): PolicyFile {
  const parsed = parseYamlFile<Partial<z.output<typeof userPolicySchema>>>(text, file, {
    schema: sandboxSettings ? userPolicySchema : policyRulesSchema,
    keysAt: (path) =>
      path.length === 0 ? (sandboxSettings ? USER_POLICY_KEYS : POLICY_KEYS) : path[0] === "sandbox" ? SANDBOX_KEYS : RULE_KEYS,
    unknownKey,
  });
  const sandbox = parsed.sandbox
    ? {
        network: parsed.sandbox.network === "allow",
        ...(parsed.sandbox.read && { read: parsed.sandbox.read }),
        ...(parsed.sandbox.write && { write: parsed.sandbox.write }),
      }
    : {};
  return { rules: toPolicyRules({ rules: parsed.rules ?? [] }, source, file), ...sandbox };
}

/** Rules of one policy file; a missing file has none. */
export function loadPolicyFile(file: string, source: RuleSource = "user"): PolicyRule[] {
  return readPolicy(file, source, false).rules;
}

function readPolicy(file: string, source: RuleSource, sandboxSettings: boolean): PolicyFile {
  const text = readSettingsText(file, "policy file");
  return text === undefined ? { rules: [] } : parsePolicy(text, file, source, sandboxSettings);
}

/**
 * The user's policy files, in load order: `$XDG_CONFIG_HOME/loopgraph/policy.yaml` (default
 * `~/.config/…`), for every project, then `.loopgraph/policy.yaml` in the workspace.
 */
export function userPolicyFiles(workspace: string, env: NodeJS.ProcessEnv): string[] {
  return [join(userConfigDir(env), "policy.yaml"), join(resolve(workspace), STATE_DIR, "policy.yaml")];
}

/** The rules of both user policy files (source `user`). Throws ConfigError for a bad file. */
export function loadUserRules(workspace: string, env: NodeJS.ProcessEnv): PolicyRule[] {
  return loadUserPolicy(workspace, env).rules;
}

/**
 * Both user policy files (source `user`): their rules, and whether the sandbox lets commands reach
 * the network, which only the file in the config home may allow. The workspace's file comes with
 * the repository: it applies only when the user trusts it as it is (src/trust/); otherwise
 * `ignored` says why it was not read. Throws ConfigError for a bad file.
 */
export function loadUserPolicy(workspace: string, env: NodeJS.ProcessEnv): Required<PolicyFile> & { ignored: string[] } {
  const home = (folder: string) => (folder.startsWith("~/") ? join(env.HOME || homedir(), folder.slice(2)) : folder);
  const [own, project] = userPolicyFiles(workspace, env) as [string, string];
  const mine = readPolicy(own, "user", true);
  const untrusted = existsSync(project) ? untrustedReason(project, env) : undefined;
  const theirs = untrusted ? { rules: [] } : readPolicy(project, "user", false);
  const ignored = untrusted ? [`${project} is not applied (${untrusted}): review it, then run \`loopgraph trust\``] : [];
  return {
    rules: [...mine.rules, ...theirs.rules],
    network: mine.network ?? false,
    read: (mine.read ?? []).map(home),
    write: (mine.write ?? []).map(home),
    ignored,
  };
}
