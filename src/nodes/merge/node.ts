import { ConfigError, LoopgraphError } from "../../errors.js";
import { getPath } from "../../format/condition.js";
import type { GraphDefinition } from "../../format/types.js";
import { mergeBranches, removeBranchWorktree, type ApplyResult } from "../../git/worktrees/index.js";
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
function pickedBranch(def: MergeNodeDefinition & { pick: string }, state: GraphStateValue, threadId: string) {
  const node = def.branches[0]!;
  const output = state.outputs[node];
  const index = getPath(state, def.pick);
  const count = Array.isArray(output) ? output.length : 1;
  if (Number.isSafeInteger(index) && (index as number) >= 0 && (index as number) < count) {
    return { threadId, node, index: Array.isArray(output) ? (index as number) : SINGLE_RUN_INDEX };
  }
  const found = index === undefined ? "is missing" : `is ${JSON.stringify(index)}, not an instance of ${node} (0 to ${count - 1})`;
  throw new LoopgraphError(`node "${def.id}" has no attempt to apply: ${def.pick} ${found}${decisionNote(state, def.pick)}`);
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
    const branches =
      def.pick === undefined ? branchesOf(def, state, ctx.threadId) : [pickedBranch({ ...def, pick: def.pick }, state, ctx.threadId)];
    const request = {
      kind: "git" as const,
      node: def.id,
      name: "merge_branches",
      args: { branches: def.branches, count: branches.length, ...(def.pick !== undefined && { index: branches[0]!.index }) },
    };
    const merged = await performFallibleEffect(
      ctx,
      request,
      async (): Promise<MergeOutput> => {
        // The workspace as it was before: a review of the merged work diffs against it.
        const baseline = await captureBaseline(ctx.workspace, ctx.secrets);
        const write = () => mergeBranches({ workspace: ctx.workspace, branches, secrets: ctx.secrets ?? [] });
        // Snapshotted as a tool step is: `rewind` to a checkpoint before the merge puts back what it wrote.
        const step = {
          node: def.id,
          tool: "merge_branches",
          toolCallId: `${def.id}-${visitNumber(state, def.id)}`,
          config,
          writesFiles: true as const,
        };
        const merged = await (ctx.snapshots ? ctx.snapshots.around(step, write) : write());
        // Their work is in the workspace now: their folders go (a check run there must not find them), a later visit makes its own again.
        if (merged.status === "applied") for (const branch of branches) await removeBranchWorktree({ workspace: ctx.workspace, ...branch });
        return { ...merged, baseline };
      },
      (message) => new LoopgraphError(`node "${def.id}" could not merge ${def.branches.join(", ")}: ${message}`),
    );
    return { outputs: { [def.id]: merged } };
  };
}
