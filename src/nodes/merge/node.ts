import { ConfigError, LoopgraphError } from "../../errors.js";
import { getPath } from "../../format/condition.js";
import type { GraphDefinition } from "../../format/types.js";
import { mergeBranches, removeBranchWorktree, type ApplyResult, type BranchName } from "../../git/worktrees/index.js";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { captureBaseline } from "../review/baseline.js";
import type { RunContext } from "../../runtime/context.js";
import { performFallibleEffect } from "../../runtime/effects.js";
import type { NodeFunction } from "../../runtime/node-function.js";
import type { GraphStateValue } from "../../state/graph-state.js";
import type { CoderNodeDefinition } from "../coder/definition.js";
import { SINGLE_RUN_INDEX } from "../coder/worktree.js";
import type { MergeNodeDefinition } from "./definition.js";
import { visitNumber } from "../../state/map.js";

/** The merge's output: what it applied (or the conflict), and the workspace's snapshot before it (a `review` with `merge:` diffs against it). */
export type MergeOutput = ApplyResult & { baseline: string };

/** Each name must be a coder of the same graph that works in its own worktree: else there is no branch to merge. */
export function checkMergedCoders(def: MergeNodeDefinition, graph: GraphDefinition): void {
  for (const id of def.branches) {
    const node = graph.nodes[id] as Partial<CoderNodeDefinition> | undefined;
    if (node?.kind === "coder" && node.workspace === "worktree") continue;
    throw new ConfigError(
      `node "${def.id}" merges the branch of "${id}", which is not a coder with workspace: worktree in ${graph.file}: name such coders in branches`,
    );
  }
  if (def.pick !== undefined && def.branches.length !== 1)
    throw new ConfigError(`node "${def.id}" picks one instance (pick: ${def.pick}) of one mapped coder: name only that coder in branches`);
}

/** The one branch `pick` names: the instance at the index found at its path, else why there is none. */
function pickedBranch(def: MergeNodeDefinition, pick: string, state: GraphStateValue, threadId: string) {
  const node = def.branches[0]!;
  const output = state.outputs[node];
  const index = getPath(state, pick);
  const count = Array.isArray(output) ? output.length : 1;
  if (Number.isSafeInteger(index) && (index as number) >= 0 && (index as number) < count) {
    return { threadId, node, index: Array.isArray(output) ? (index as number) : SINGLE_RUN_INDEX };
  }
  const found = index === undefined ? "is missing" : `is ${JSON.stringify(index)}, not an instance of ${node} (0 to ${count - 1})`;
  throw new LoopgraphError(`node "${def.id}" has no attempt to apply: ${pick} ${found}${decisionNote(state, pick)}`);
}

/** What the node holding the pick decided instead, when it says (a Judge that asked for another round). */
function decisionNote(state: GraphStateValue, path: string): string {
  const holder = getPath(state, path.split(".").slice(0, -1).join(".")) as { decision?: unknown; nextTask?: unknown } | undefined;
  if (typeof holder?.decision !== "string" || holder.decision === "pick") return "";
  const task = typeof holder.nextTask === "string" ? `: ${holder.nextTask.split("\n")[0]!.slice(0, 200)}` : "";
  return ` (the decision there: ${holder.decision}${task})`;
}

/**
 * The branches of the named coders, in order: a mapped coder's (its output is the list of its
 * instances' results) one per instance, by index; any other coder's one.
 */
function branchesOf(def: MergeNodeDefinition, state: GraphStateValue, threadId: string) {
  return def.branches.flatMap((node) => {
    const output = state.outputs[node];
    const instances = Array.isArray(output) ? output.length : 1;
    return Array.from({ length: instances }, (_, i) => ({ threadId, node, index: Array.isArray(output) ? i : SINGLE_RUN_INDEX }));
  });
}

/**
 * The `merge` node: the named coders' branches (their latest commits) merged into the run's
 * workspace in order, all or nothing (src/git/worktrees/apply.ts). A conflict is no failure: the
 * output says so (`status: conflict`) and an edge can route on it. An effect, so a recorded
 * replay takes the result from the record and leaves the workspace alone.
 */
export function createMergeNode(def: MergeNodeDefinition, graph: GraphDefinition, ctx: RunContext): NodeFunction {
  checkMergedCoders(def, graph);
  return async (state, config) => {
    const branches = def.pick === undefined ? branchesOf(def, state, ctx.threadId) : [pickedBranch(def, def.pick, state, ctx.threadId)];
    const request = {
      kind: "git" as const,
      node: def.id,
      name: "merge_branches",
      args: { branches: def.branches, count: branches.length, ...(def.pick !== undefined && { index: branches[0]!.index }) },
    };
    const merged = await performFallibleEffect(
      ctx,
      request,
      () => mergeIntoWorkspace(ctx, branches, { node: def.id, step: `${def.id}-${visitNumber(state, def.id)}`, config }),
      (message) => new LoopgraphError(`node "${def.id}" could not merge ${def.branches.join(", ")}: ${message}`),
    );
    return { outputs: { [def.id]: merged } };
  };
}

/**
 * Merges `branches` into the run's workspace (all or nothing): the workspace's snapshot before it
 * is kept as `baseline` (a review of the merged work diffs against it), the write is snapshotted
 * as a file-changing tool step (so `rewind` to before it puts back what it wrote), and the merged
 * branches' worktree folders go (their work is in the workspace; a command run there must not
 * find them; a later visit makes its folder again). The `merge` node's work, and the Looper's
 * when it applies a picked attempt.
 */
export async function mergeIntoWorkspace(
  ctx: RunContext,
  branches: readonly BranchName[],
  at: { node: string; step: string; config: LangGraphRunnableConfig },
): Promise<MergeOutput> {
  const baseline = await captureBaseline(ctx.workspace, ctx.secrets);
  const write = () => mergeBranches({ workspace: ctx.workspace, branches, secrets: ctx.secrets ?? [] });
  const step = { node: at.node, tool: "merge_branches", toolCallId: at.step, config: at.config, writesFiles: true as const };
  const merged = await (ctx.snapshots ? ctx.snapshots.around(step, write) : write());
  if (merged.status === "applied") for (const branch of branches) await removeBranchWorktree({ workspace: ctx.workspace, ...branch });
  return { ...merged, baseline };
}
