import { Overwrite, START } from "@langchain/langgraph";
import { ConfigError, ExitCode } from "../errors.js";
import { restoreWorkspaceInStore } from "../snapshots/index.js";
import { findCheckpoint } from "../engine/inspect.js";
import { createLoopSupervisor } from "../engine/runner.js";
import { Thread } from "../engine/thread.js";
import { START_NODE, type GraphDefinition } from "../format/types.js";
import { openStore, requireThread, type Store } from "../store/store.js";
import type { GraphStateValue } from "../state/graph-state.js";
import { isInputStep, readRunRecord, routingSources, type RecordedStep, type RunRecord } from "./record.js";
import { rerunPlan } from "./rerun-plan.js";
import { applyEdits, checkDeclaredVars, parseStateEdit, withTaskMessage, type StateEdit } from "./state-edits.js";
import { type RunOutcome } from "../engine/run-types.js";
import { type CommonRunOptions } from "../engine/run-types.js";

export interface ForkOptions extends CommonRunOptions {
  threadId: string;
  /** The checkpoint to fork from: an id or a unique prefix of one. */
  from: string;
  /** `path=value` edits of the state at that checkpoint. */
  set?: string[];
  /** `--restore-files`: put the files the agent changed since that checkpoint back as they were then (see `rewind`). */
  restoreFiles?: boolean;
  /**
   * Make the branch and run nothing (the LangGraph API's `updateState`): the thread then waits
   * before the branch's next node, paused at a breakpoint, and `resume` runs the branch.
   */
  branchOnly?: boolean;
}

/** The state update that starts the branch, attributed to the node(s) whose routing then decides what runs. */
interface BranchStart {
  values: Record<string, unknown>;
  asNodes: string[];
}

/**
 * A live fork: a new branch of the thread from one of its checkpoints, optionally with edited
 * state, run with the models called again. The branch starts with a LangGraph state update on
 * that checkpoint (`updateState`, as the node that made it, so its outgoing edges route again on
 * the edited state); the checkpoints of the original branch stay as they were. The new branch
 * holds the thread's newest checkpoint, so `resume` continues it.
 */
export async function forkRun(options: ForkOptions): Promise<RunOutcome> {
  const edits = (options.set ?? []).map(parseStateEdit);
  const store = await openStore({ db: options.db, cwd: options.cwd, env: options.settings.env }, "write");
  try {
    const record = await requireThread(store, options.threadId);
    const from = await findCheckpoint(store, record.threadId, options.from);
    const run = await readRunRecord(store, record.threadId);
    const thread = await Thread.open(store, record, options, { looper: createLoopSupervisor });
    try {
      const { graph } = thread;
      checkDeclaredVars(edits, graph);
      const start = branchStart(run, run.steps.get(from.checkpoint.id)!, edits, graph);

      // The workspace as it was at that checkpoint (only the files the agent changed since), before the branch runs.
      const restored = options.restoreFiles
        ? (await restoreWorkspaceInStore(store, record.threadId, from.checkpoint.id)).changes
        : undefined;

      const ctx = thread.context();
      const compiled = await thread.compile(ctx);
      const fromConfig = { configurable: { thread_id: record.threadId, checkpoint_ns: "", checkpoint_id: from.checkpoint.id } };
      const branchConfig =
        start.asNodes.length === 1
          ? await compiled.updateState(fromConfig, start.values, start.asNodes[0])
          : await compiled.bulkUpdateState(fromConfig, [
              { updates: start.asNodes.map((asNode, i) => ({ values: i === 0 ? start.values : {}, asNode })) },
            ]);
      const branch = await compiled.getState(branchConfig);
      const next = branch.next;
      if (options.branchOnly) return await waitBeforeBranch(store, record.threadId, next, branch.values as GraphStateValue);

      await thread.markRunning();
      thread.announce(ctx, {
        task: record.task,
        resumed: true,
        forkedFrom: from.checkpoint.id,
        changed: { recordedHash: record.graphHash, consequence: "the new branch follows the new version" },
      });
      ctx.emit({
        type: "fork",
        threadId: record.threadId,
        from: from.checkpoint.id,
        checkpointId: String(branchConfig.configurable?.checkpoint_id),
        rerun: rerunPlan(graph, next),
        ...(restored ? { restored } : {}),
      });
      // The branch's first checkpoint is now the thread's newest: the run continues from it.
      return await thread.execute(null, ctx);
    } catch (error) {
      // Not run (a bad edit, a node gone): the thread is given back as it was.
      await thread.release();
      throw error;
    }
  } finally {
    await store.close();
  }
}

/** A branch made and not run: the thread waits before its next node (or has nothing left to run). */
async function waitBeforeBranch(store: Store, threadId: string, next: readonly string[], state: GraphStateValue): Promise<RunOutcome> {
  if (next.length === 0) {
    await store.threads.markEnded(threadId, "finished");
    return { threadId, status: "finished", exitCode: ExitCode.Finished, state, ended: true };
  }
  const pause = { reason: "breakpoint" as const, node: next[0]!, when: "before" as const };
  await store.threads.markEnded(threadId, "paused", undefined, pause);
  return { threadId, status: "paused", exitCode: ExitCode.Paused, state, pause };
}

function branchStart(run: RunRecord, step: RecordedStep, edits: readonly StateEdit[], graph: GraphDefinition): BranchStart {
  if (isInputStep(step)) {
    // The input is not in the state yet: edit it and enter it again, as the run's start did.
    const input = (step.values[START] ?? {}) as Record<string, unknown>;
    return { values: { ...input, ...withTaskMessage(input, applyEdits(input, edits)) }, asNodes: [START] };
  }
  const sources = routingSources(run, step)!;
  const missing = sources.filter((node) => node !== START_NODE && !graph.nodes[node]);
  if (missing.length > 0) {
    throw new ConfigError(
      `cannot fork from checkpoint ${step.id}: node ${missing.map((n) => `"${n}"`).join(", ")} that made it is no longer in ${graph.file}`,
    );
  }
  // Overwrite: the edited value replaces the channel's, whatever its reducer would merge.
  const changed = withTaskMessage(step.values, applyEdits(step.values, edits));
  const values = Object.fromEntries(Object.entries(changed).map(([channel, value]) => [channel, new Overwrite(value)]));
  return { values, asNodes: sources.map((node) => (node === START_NODE ? START : node)) };
}
