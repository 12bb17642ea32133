import type { NodeDefinition } from "../../format/types.js";
import type { CoderMode } from "../../state/thread.js";
import type { LoopDetectionOptions } from "../../tools/loop-detection.js";

/** A tool-using coding agent: a model ⇄ tools loop checkpointed at every step. */
export interface CoderNodeDefinition extends NodeDefinition {
  kind: "coder";
  /** Absolute path of the Markdown system prompt (default: the package's prompts/coder.md). */
  promptFile: string;
  /** Model calls per turn before the Coder stops with a step-limit failure (default 25). */
  maxSteps: number;
  /** Tool names the Coder may use (default: all built-in tools). */
  tools: string[];
  loopDetection: LoopDetectionOptions;
  compression: { budgetTokens: number; keepRecentTurns: number };
  /** Tool results longer than this (characters) are cut to head and tail; the full text goes to an artifact. */
  resultBudgetChars: number;
  /** What the Coder may do (`mode:`); the run's `--mode` comes first; default `agent`. */
  mode?: CoderMode;
  /** The subagent types its `task` calls may name (`subagents:`), besides the default read-only one. */
  subagents: Record<string, SubagentDefinition>;
}

/** The tools of the default subagent, and of a declared one that names none. */
export const SUBAGENT_READ_TOOLS = ["read_file", "list_dir", "glob", "grep"] as const;

/** A subagent type: a Coder of its own that a `task` call runs. */
export interface SubagentDefinition {
  /** One line on what it is for (the Coder is told). */
  description?: string;
  /** Absolute path of its system prompt (default: the package's prompts/subagent.md). */
  promptFile: string;
  /** Its tools (default: the read tools); never `task`. */
  tools: string[];
  /** Model calls before it must answer (default 15). */
  maxSteps: number;
  /** Its model (default: the Coder's). */
  model?: string;
}
