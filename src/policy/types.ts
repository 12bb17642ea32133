import type { PolicyDecision, PolicyRule } from "../state/rules.js";

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
  /** The subject is a command nested in a subshell, a substitution or another shell's script (`(ls)`): an "always" answer covers it there too. */
  nested?: true;
}
