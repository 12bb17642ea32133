import type { RunStatus } from "../state/thread.js";
import type { RewindChange } from "../snapshots/rewind-plan.js";
import type { TokenUsage } from "../state/graph-state.js";
import type { ToolErrorKind } from "../tools/types.js";

/** Events of a run, printed live by the CLI and as NDJSON with `--json` (docs/events.md). */
export type RunEvent =
  | {
      type: "run_started";
      threadId: string;
      graph: string;
      task: string;
      resumed: boolean;
      forkedFrom?: string;
      /** The OS sandbox the agent's commands run in: "bubblewrap"; "none" where none can start; "off" by the user's choice (--no-sandbox). */
      sandbox: string;
    }
  /** A live fork (`replay --from`): the new branch's first checkpoint and the nodes that may run again, with their side effects. */
  | { type: "fork"; threadId: string; from: string; checkpointId: string; rerun: RerunNode[]; restored?: RewindChange[] }
  /** `instance`: the index (from 0) of a map's instance, which runs beside the others of its step. */
  | { type: "node_started"; threadId: string; node: string; visit: number; instance?: number }
  | { type: "node_finished"; threadId: string; node: string; usage?: TokenUsage; durationMs: number; instance?: number }
  | { type: "message"; threadId: string; node: string; delta?: string; content?: string }
  | { type: "retry"; threadId: string; node: string; attempt: number; maxAttempts: number; delayMs: number; message: string }
  | { type: "tool_call"; threadId: string; node: string; id: string; name: string; args: unknown }
  /** The model began writing a call of this tool (its arguments are still streaming); `index`: its place in the answer's calls. */
  | { type: "tool_call_started"; threadId: string; node: string; name: string; index: number }
  /** Output of a running call (a shell command's), as it arrives, redacted; the model gets the result. */
  | { type: "tool_output"; threadId: string; node: string; id: string; name: string; stream: "stdout" | "stderr"; text: string }
  /** `notRun`: the call did not run (stopped by the loop detector or the policy, rejected by the user, or its arguments were not JSON). */
  | {
      type: "tool_result";
      threadId: string;
      node: string;
      id: string;
      name: string;
      ok: boolean;
      result: string;
      errorKind?: ToolErrorKind;
      notRun?: NotRun;
    }
  /** A Coder's history was compressed before a model call: `removedMessages` older messages replaced by one summary. */
  | { type: "compression"; threadId: string; node: string; removedMessages: number; tokensBefore: number; tokensAfter: number }
  /** A Coder answered with items of its plan not done: it was sent back to them (check `check` of at most `of`, planning.stop_check). */
  | { type: "plan_check"; threadId: string; node: string; check: number; of: number; open: string[] }
  /** A Coder turn's task was classified before its first model call (`complexity: auto`): the strategy its prompt was given. */
  | {
      type: "complexity";
      threadId: string;
      node: string;
      level: "simple" | "moderate" | "complex";
      confidence: number;
      indicators: string[];
    }
  | {
      type: "interrupt";
      threadId: string;
      reason: "breakpoint" | "input";
      node?: string;
      when?: "before" | "after";
      value?: unknown;
      /** Several questions pending at once (branches of one step): each with the id to answer it by. */
      pending?: { id: string; node: string; value: unknown }[];
    }
  /** A Looper's round ended (the Judge decided, or the loop was stopped): the tokens its nodes used in it. */
  | { type: "round_finished"; threadId: string; node: string; round: number; usage: TokenUsage }
  /** `outcome` repeats `status`; `reason` says why a run did not finish (failed, limited, interrupted by a stop). */
  | { type: "run_finished"; threadId: string; status: RunStatus; outcome: RunStatus; exitCode: number; reason?: string }
  | { type: "error"; threadId: string; node?: string; message: string }
  | { type: "warning"; threadId: string; message: string }
  /**
   * A hook ran (or was skipped: `skipped` says why). `exitCode` is null when it did not exit by
   * itself; `blocked`: a before_tool hook stopped the call; `failure`: what went wrong, in a line.
   */
  | {
      type: "hook";
      threadId: string;
      node?: string;
      event: string;
      command: string;
      exitCode: number | null;
      blocked?: boolean;
      failure?: string;
    };

/**
 * Why a tool call did not run: `blocked` (the loop detector, the policy or a hook), `rejected` (the
 * user), `not_allowed` (the Coder's mode: ask, or plan before approval), `invalid_arguments`, `tool_not_found`.
 */
export type NotRun = "blocked" | "rejected" | "not_allowed" | "invalid_arguments" | "tool_not_found";

/** A node a fork may run again; `effects` lists what it does beyond calling a model (empty: nothing). */
export interface RerunNode {
  node: string;
  effects: string[];
}

export type EventSink = (event: RunEvent) => void;
