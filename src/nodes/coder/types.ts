import type { BranchFileChange } from "../../git/worktrees/index.js";
import type { TodoItem, ToolErrorKind } from "../../tools/types.js";

/** Why a Coder turn failed: the typed errors that end the turn rather than go back to the model. */
export type CoderFailureKind =
  | "step_limit"
  | "loop_detected"
  /** The same tool error several times in a row (loop_detection.repeated_errors). */
  | "repeated_error"
  /** A subagent answered twice without handing in its result (complete_task). */
  | "no_result"
  | "cancelled"
  /** A stop command reached the thread's loop during the turn: the Coder ended at the next step boundary. */
  | "stopped"
  | "model_rate_limit"
  | "model_timeout"
  | "model_server"
  | "model_network"
  | "model_bad_request"
  | "model_exhausted";

/** One tool call of the turn, as the Review and `inspect` see it. */
export interface ToolLogEntry {
  id: string;
  name: string;
  args: unknown;
  ok: boolean;
  errorKind?: ToolErrorKind;
  /** The start of what the model was shown. */
  preview: string;
  artifact?: string;
}

/** The structured result of a Coder turn, written to `outputs.<node>`. */
export interface CoderResult {
  status: "success" | "failure";
  /** The Coder's closing answer (or its last words before failing). */
  summary: string;
  /** Workspace-relative paths created, changed or deleted. */
  filesChanged: string[];
  failureKind?: CoderFailureKind;
  failureReason?: string;
  /** Model calls made. */
  steps: number;
  toolCalls: ToolLogEntry[];
  todos: TodoItem[];
  /** A subagent's result, as its output schema shapes it (complete_task). */
  output?: Record<string, unknown>;
  /** A Coder in its own branch worktree (`workspace: worktree`): its branch, `loopgraph/<thread>/<node>-<index>`. */
  branch?: string;
  /** A Coder in its own branch worktree: what its branch changed since it began (committed at the end of each visit). */
  files?: BranchFileChange[];
}
