/**
 * The data of `loopgraph eval`: a suite of tasks (suite.ts reads its file), the variants it runs
 * them with, the trials (task × variant × repetition, each a thread of its own) and what each
 * trial came to. The store keeps evals and trials, so the types are the store's
 * (runs/evals.ts); report.ts turns them into the report.
 */
export type {
  EvalRecord,
  EvalSuite,
  EvalTask,
  EvalVariant,
  TaskCheck,
  TaskRepo,
  TrialKey,
  TrialOutcome,
  TrialResult,
} from "../runs/evals.js";
export { FAILURE_KINDS } from "../runs/evals.js";
