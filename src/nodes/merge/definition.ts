import type { NodeDefinition } from "../../format/types.js";

/** Applies the branches of coders that work in their own worktrees to the run's workspace. */
export interface MergeNodeDefinition extends NodeDefinition {
  kind: "merge";
  /** Ids of `coder` nodes with `workspace: worktree`, merged in this order. */
  branches: string[];
  /** State path of the index of the one instance (of the one mapped coder in `branches`) to apply. */
  pick?: string;
}
