export {
  listSnapshotPoints,
  restoreWorkspace,
  restoreWorkspaceInStore,
  stepDiffs,
  type RestoreOptions,
  type RestoreResult,
  type SnapshotPoint,
  type StepDiff,
} from "./restore.js";
export type { RewindAction, RewindChange } from "./rewind-plan.js";
export { createToolStepSnapshots, type ToolStep, type ToolStepSnapshots } from "./tool-step-hook.js";
export { openSnapshotRepository, SNAPSHOTS_GIT_DIR, type SnapshotRepository, type TreeChange } from "./shadow-repo.js";
