import type { RunControl } from "@langchain/langgraph";
import type { ApprovalAnswer, ApprovalRequest } from "../runtime/approval.js";
import type { EventSink } from "../runtime/events.js";
import type { GraphStateValue } from "../state/graph-state.js";
import type { ApprovalMode, CoderMode, RunStatus } from "../state/thread.js";
import type { GraphDefinition } from "../format/types.js";
import type { Settings } from "../config/environment-settings.js";

/** What every way of running a thread (run, resume, chat, fork, replay) takes. */
export interface CommonRunOptions {
  /** Database file (`--db`); default LOOPGRAPH_DB or `.loopgraph/loopgraph.db`. */
  db?: string;
  cwd?: string;
  /** What the command was given: the environment with the configuration files' settings (src/config). */
  settings: Settings;
  /** Run-level model (`--model`); default LOOPGRAPH_MODEL, or for a resume the one recorded. */
  model?: string;
  onEvent?: EventSink;
  /** How tool calls that no rule settles are decided (`--approval`); a resume reuses the recorded mode unless given. */
  approval?: ApprovalMode;
  /** What the Coders may do (`--mode ask|plan|agent`); a resume reuses the recorded mode unless given. */
  mode?: CoderMode;
  /**
   * Answers approval requests in this process (a terminal prompt). Without it, or when it
   * returns undefined, the run pauses (exit code 3) until `resume --approve | --reject`. The
   * run's signal is passed on: once it is aborted (SIGTERM), the question goes unanswered.
   */
  askApproval?: (request: ApprovalRequest, signal?: AbortSignal) => Promise<ApprovalAnswer | undefined>;
  /**
   * `--no-sandbox`: the agent's commands run without the OS sandbox, by the user's choice (in
   * approval mode `auto` they then run unasked; where no sandbox can start and this is not set,
   * `auto` asks for commands).
   */
  noSandbox?: boolean;
  /** `--max-rounds`: the round limit of a loop started by this run (overrides the looper node's). */
  maxRounds?: number;
  /**
   * `--attempts`: the value of the graph's `attempts` field (a number) for this run, or the
   * attempts of each round of a loop it starts (a looper with `attempts`).
   */
  attempts?: number;
  /** Ctrl-C: `control.requestDrain()` stops the run at the next step boundary, checkpointed. */
  control?: RunControl;
  /**
   * Ctrl-C: aborting it ends the step in flight at once (a model request, its retry wait, a shell
   * command), without a result: the run's outcome is `interrupted` and the step re-runs on resume.
   */
  signal?: AbortSignal;
  /** `--model-timeout` in milliseconds: a model attempt that receives no data this long is retried (default LOOPGRAPH_MODEL_TIMEOUT, else 120 s). */
  modelTimeoutMs?: number;
}

export interface RunOptions extends CommonRunOptions {
  /** Graph name (looked up in ./graphs, then the package's graphs) or path, or a graph already loaded with `loadGraph`. */
  graph: string | GraphDefinition;
  task?: string;
  threadId?: string;
  workspace?: string;
  /** `run --queue --repo`: the repository (URL or path) the run works on, cloned by the worker instead of a workspace directory. */
  repo?: string;
  /** `--ref`: the branch, tag or commit of `repo` to start from (default its HEAD). */
  ref?: string;
}

export interface ResumeOptions extends CommonRunOptions {
  threadId: string;
  /** Answer to a pending `interrupt()` (approvals, questions). */
  answer?: unknown;
  /** With several questions pending: the one the answer is for (a tool call's id, or the question's id); all of them when unset. */
  call?: string;
}

export interface PauseInfo {
  reason: "breakpoint" | "input";
  node?: string;
  when?: "before" | "after";
  /** The question (an approval request); with several pending, the first of them. */
  value?: unknown;
  /** Several questions pending at once (branches of one step that each ask): every one, with its id to answer it by. */
  pending?: PendingQuestion[];
}

/** One of several questions a paused step waits on: LangGraph's interrupt id, the asking node, the question. */
export interface PendingQuestion {
  id: string;
  node: string;
  value: unknown;
}

export interface RunOutcome {
  threadId: string;
  status: RunStatus;
  exitCode: number;
  state: GraphStateValue;
  pause?: PauseInfo;
  /** Why the run did not finish its work: the error of a failed run, the limit that ended it, who stopped it. */
  error?: string;
  /** The graph reached its end: a resume has nothing to continue (a failed or limited run that ended so is not retried). */
  ended?: boolean;
  /** The PostgreSQL store's server went away: the run stopped at its last checkpoint (a worker queues it again). */
  storeLost?: boolean;
}

/** Id of the message that gives a run its task (`--task`), first in the message history. */
export const TASK_MESSAGE_ID = "task";
