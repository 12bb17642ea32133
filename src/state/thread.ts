/**
 * How a run ended (the thread record keeps "running" besides, while a process runs it):
 * finished (exit 0), failed with a reason (1), paused (3), ended by a limit before the work was
 * judged done (`limited`, 4), interrupted by the user (130).
 */
export type RunStatus = "finished" | "paused" | "interrupted" | "failed" | "limited";

/** `ask` (default): reads allowed, edits and shell ask; `auto-edit`: edits allowed, shell asks;
 * `auto`: everything allowed except what a rule denies; `deny`: never ask, an `ask` becomes `deny`. */
export const APPROVAL_MODES = ["ask", "auto-edit", "auto", "deny"] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/**
 * A thread's run settings, recorded with the thread and reused by `resume`, `chat --thread` and
 * forks unless overridden: the one name for them everywhere.
 */
export interface ThreadSettings {
  /** Run-level model spec (`--model` or LOOPGRAPH_MODEL), never a key; undefined when every node names its own. */
  model?: string;
  /** How tool calls that no rule settles are decided (`--approval`). */
  approval: ApprovalMode;
  /** What the Coders may do (`--mode`); undefined: each node's own `mode:`, else `agent`. */
  mode?: CoderMode;
}

/**
 * What a Coder may do: `agent` (default) every tool it has; `ask` only read (answers questions,
 * changes nothing); `plan` read, then present a plan for the user's approval before it acts.
 */
export const CODER_MODES = ["ask", "plan", "agent"] as const;
export type CoderMode = (typeof CODER_MODES)[number];
