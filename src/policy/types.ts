export type PolicyDecision = "allow" | "deny" | "ask";

/** `ask` (default): reads allowed, edits and shell ask; `auto-edit`: edits allowed, shell asks;
 * `auto`: everything allowed except what a rule denies; `deny`: never ask, an `ask` becomes `deny`. */
export type ApprovalMode = "ask" | "auto-edit" | "auto" | "deny";

export type RuleSource = "builtin" | "graph" | "user" | "session";

export interface PolicyRule {
  /** Tool name, with `*` and `?` wildcards (e.g. `shell`, `*_file`, `*`). */
  tool: string;
  /**
   * Regular expression tested against the call's subject: each part of a shell command
   * (split on `&&`, `||`, `;`, `|`, …, nested ones included; as written and normalised), or the
   * path for file tools (workspace-relative and real absolute), or the JSON arguments otherwise.
   * A whole shell command is a subject too, but only for `ask` and `deny` rules.
   * Absent: the rule matches every call of the tool.
   */
  pattern?: string;
  decision: PolicyDecision;
  /** Higher wins; ties go to the stricter decision (deny > ask > allow). */
  priority: number;
  /** Said to the model and the user when the rule decides. */
  reason?: string;
  source: RuleSource;
  /** Where the rule was written, for messages: e.g. `.loopgraph/policy.yaml rules[2]`. */
  origin?: string;
}

export interface PolicyVerdict {
  decision: PolicyDecision;
  /** The rule that decided; absent when the approval mode's default decided. */
  rule?: PolicyRule;
  /** One line for the model / the user: why. */
  reason: string;
  /** The subject the deciding rule matched (e.g. the offending part of a chained command). */
  subject?: string;
  /**
   * Every subject that led to this decision, first one first (`subject`/`rule`/`reason` above
   * describe it): for `ask`, exactly what an approval covers, e.g. both risky parts of `a && b`.
   */
  causes?: PolicyCause[];
}

export interface PolicyCause {
  subject: string;
  /** Absent when the approval mode's default decided. */
  rule?: PolicyRule;
  reason: string;
}
