/** Branch worktrees: see branches.ts (making, committing, diffing, removing) and apply.ts (merging into the workspace). */
export { applyBranch, linkLeadsAway, mergeBranches, type ApplyResult, type BranchConflict, type WithheldChange } from "./apply.js";
export {
  branchChangesToRead,
  branchDiff,
  commitBranch,
  commitBranchWorktrees,
  createBranchWorktree,
  openBranchWorktree,
  pruneBranches,
  removeBranchWorktree,
  restartBranch,
  removeBranchWorktrees,
  type BranchChanges,
  type BranchFileChange,
  type BranchWorktree,
  type CreateBranchWorktreeOptions,
  type WorkspaceBranch,
} from "./branches.js";
export { branchOf, threadFolderParts, type BranchName } from "./names.js";
