import type { BranchFileChange } from "../../git/worktrees/index.js";
import type { TodoItem, ToolErrorKind } from "../../tools/types.js";
import type { ComplexityLevel } from "./complexity.js";

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
  | "model_exhausted"
  /** The Coder answered with items of its plan (todo_write) not done, after as many reminders as planning.stop_check allows. */
  | "plan_unfinished";

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
  /** How the turn's task was classified (`complexity: auto`, agent mode), and how sure. */
  complexity?: { level: ComplexityLevel; confidence: number };
  /** The thread's findings so far (save_finding), the next turn of the node starts with them. */
  findings?: string[];
  /** A Coder in its own branch worktree (`workspace: worktree`): its branch, `loopgraph/<thread>/<node>-<index>`. */
  branch?: string;
  /** A Coder in its own branch worktree: what its branch changed since it began (committed at the end of each visit). */
  files?: BranchFileChange[];
}

/**
 * The results of a mapped Coder's instances (each did a part of the task) as one Coder result, for
 * a Review or Judge that weighs their merged work as one: a success only when every part
 * succeeded; the parts' summaries, files, calls and plans together, each summary under its part.
 */
export function combinedCoderResult(parts: readonly (CoderResult | undefined)[]): CoderResult {
  const done = parts.filter((part): part is CoderResult => part !== undefined);
  const failed = parts.flatMap((part, i) => (part?.status === "success" ? [] : [{ part: i + 1, result: part }]));
  const first = failed[0];
  return {
    status: failed.length === 0 ? "success" : "failure",
    summary: parts.map((part, i) => `Part ${i + 1}: ${part ? part.summary || "(no answer)" : "no result"}`).join("\n\n"),
    filesChanged: [...new Set(done.flatMap((part) => part.filesChanged))],
    ...(first && {
      failureKind: first.result?.failureKind,
      failureReason: `part ${first.part} of ${parts.length} ${first.result ? `failed: ${first.result.failureReason ?? first.result.failureKind ?? "no reason given"}` : "left no result"}`,
    }),
    steps: done.reduce((sum, part) => sum + part.steps, 0),
    toolCalls: done.flatMap((part) => part.toolCalls),
    todos: done.flatMap((part) => part.todos),
  };
}
