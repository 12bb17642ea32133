import { ConfigError, LoopgraphError } from "../../errors.js";
import type { GraphDefinition } from "../../format/types.js";
import { mergeBranches, type ApplyResult } from "../../git/worktrees/index.js";
import type { RunContext } from "../../runtime/context.js";
import { performFallibleEffect } from "../../runtime/effects.js";
import type { NodeFunction } from "../../runtime/node-function.js";
import type { GraphStateValue } from "../../state/graph-state.js";
import type { CoderNodeDefinition } from "../coder/definition.js";
import { SINGLE_RUN_INDEX } from "../coder/worktree.js";
import type { MergeNodeDefinition } from "./definition.js";

/** Each name must be a coder of the same graph that works in its own worktree: else there is no branch to merge. */
export function checkMergedCoders(def: MergeNodeDefinition, graph: GraphDefinition): void {
  for (const id of def.branches) {
    const node = graph.nodes[id] as Partial<CoderNodeDefinition> | undefined;
    if (node?.kind === "coder" && node.workspace === "worktree") continue;
    throw new ConfigError(
      `node "${def.id}" merges the branch of "${id}", which is not a coder with workspace: worktree in ${graph.file}: name such coders in branches`,
    );
  }
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
  return async (state) => {
    const branches = branchesOf(def, state, ctx.threadId);
    const request = {
      kind: "git" as const,
      node: def.id,
      name: "merge_branches",
      args: { branches: def.branches, count: branches.length },
    };
    const merged = await performFallibleEffect(
      ctx,
      request,
      (): Promise<ApplyResult> => mergeBranches({ workspace: ctx.workspace, branches, secrets: ctx.secrets ?? [] }),
      (message) => new LoopgraphError(`node "${def.id}" could not merge ${def.branches.join(", ")}: ${message}`),
    );
    return { outputs: { [def.id]: merged } };
  };
}
