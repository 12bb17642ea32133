import type { NodeDefinition } from "../../format/types.js";
import type { CoderMode } from "../../state/thread.js";
import type { LoopDetectionOptions } from "../../tools/loop-detection.js";
import type { SubagentType } from "../../tools/subagent-config.js";
import type { PlanningConfig } from "../../tools/planning-config.js";

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
  /** `worktree`: the Coder works in its own branch worktree of the workspace (`workspace:`); unset: in the workspace itself. */
  workspace?: "worktree";
  /** The node's `planning:` settings (each over the config files'). */
  planning?: PlanningConfig;
  /** `off`: no task-complexity analysis, no strategy in the prompt (`complexity:`; default auto). */
  complexity?: "off";
  /** The subagent types its `task` calls may name (`subagents:`), besides the default read-only one (and the config files' types). */
  subagents: Record<string, SubagentType>;
}
