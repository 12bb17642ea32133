/**
 * The report of an eval (docs/eval-report.md): from its record and its trials, per
 * variant the pass rate with its Wilson interval, rounds, tokens, estimated cost, wall time and
 * failures by kind; per task a variant × repetition matrix; each later variant compared with the
 * first. Trials not finished yet are pending: shown in the matrix, counted nowhere else. The
 * formats (src/cli/eval-report.ts) only lay this out.
 */
import { modelPrice, type PriceTable } from "../config/prices.js";
import {
  type Comparison,
  EVAL_REPORT_FORMAT,
  type EvalReport,
  type ReportCell,
  type TaskRow,
  type VariantSummary,
} from "./report-schema.js";
import type { StoredTrial } from "../runs/evals.js";
import { difference, wilson } from "./stats.js";
import { type EvalRecord, type EvalVariant, FAILURE_KINDS, type TrialResult } from "./types.js";

export interface ReportOptions {
  /** Model prices (config `prices:`); without one for a variant's model its cost is unknown. */
  prices?: PriceTable;
  /** The suite's tasks, in its order (default: those the eval recorded). */
  tasks?: readonly { id: string; tags: readonly string[] }[];
}

const mean = (total: number, n: number): number | null => (n === 0 ? null : total / n);
const sumAndMean = (values: number[]) => {
  const total = values.reduce((sum, value) => sum + value, 0);
  return { total, mean: mean(total, values.length) };
};

/** Why a variant's cost cannot be estimated, or its price. */
function priceOf(variant: EvalVariant, prices: PriceTable): { input: number; output: number } | string {
  if (variant.model === undefined) return "the graph's own models: prices apply to a model given with --model";
  if (variant.model.startsWith("scripted:")) return "a scripted model has no price";
  return modelPrice(prices, variant.model) ?? `no price for ${variant.model} in the config's prices`;
}

function summarize(variant: EvalVariant, trials: TrialResult[], pending: number, prices: PriceTable): VariantSummary {
  const run = trials.filter((trial) => trial.outcome !== "skipped");
  const passed = run.filter((trial) => trial.outcome === "passed").length;
  const { rate, low, high } = wilson(passed, run.length);
  const price = priceOf(variant, prices);
  const costs = run.map((trial) =>
    typeof price === "string" ? 0 : (trial.tokens.inputTokens * price.input + trial.tokens.outputTokens * price.output) / 1_000_000,
  );
  return {
    label: variant.label,
    graph: variant.graph,
    model: variant.model ?? null,
    run: run.length,
    passed,
    passRate: { rate: run.length === 0 ? null : rate, low, high },
    rounds: sumAndMean(run.map((trial) => trial.rounds)),
    inputTokens: sumAndMean(run.map((trial) => trial.tokens.inputTokens)),
    outputTokens: sumAndMean(run.map((trial) => trial.tokens.outputTokens)),
    cost: typeof price === "string" ? { total: null, unknown: price } : sumAndMean(costs),
    wallMs: sumAndMean(run.map((trial) => trial.wallMs)),
    failures: Object.fromEntries(
      FAILURE_KINDS.map((kind) => [kind, run.filter((trial) => trial.outcome === kind).length]),
    ) as VariantSummary["failures"],
    skipped: trials.length - run.length,
    pending,
  };
}

function cellOf(trial: TrialResult | undefined, repetition: number, threadId: string | undefined): ReportCell {
  if (!trial) return { repetition, outcome: "pending", threadId: threadId ?? null };
  return {
    repetition,
    outcome: trial.outcome,
    threadId: trial.threadId,
    reason: trial.reason ?? null,
    checkOutput: trial.checkOutput ?? null,
    rounds: trial.rounds,
    inputTokens: trial.tokens.inputTokens,
    outputTokens: trial.tokens.outputTokens,
    wallMs: trial.wallMs,
  };
}

/** The majority rule: more than half of the finished, not skipped repetitions passed (a tie does not pass); null when none finished. */
export function taskPasses(cells: readonly ReportCell[]): boolean | null {
  const ran = cells.filter((cell) => cell.outcome !== "pending" && cell.outcome !== "skipped");
  if (ran.length === 0) return null;
  return ran.filter((cell) => cell.outcome === "passed").length * 2 > ran.length;
}

function compare(base: VariantSummary, other: VariantSummary, tasks: TaskRow[]): Comparison {
  const { delta, low, high } = difference({ passed: base.passed, n: base.run }, { passed: other.passed, n: other.run });
  const passes = (task: TaskRow, label: string) => task.variants.find((variant) => variant.label === label)?.passes ?? null;
  const changed = (from: boolean, to: boolean) =>
    tasks.filter((task) => passes(task, base.label) === from && passes(task, other.label) === to).map((task) => task.id);
  return {
    base: base.label,
    variant: other.label,
    delta: Number.isNaN(delta) ? null : delta,
    low,
    high,
    gained: changed(false, true),
    lost: changed(true, false),
  };
}

const keyOf = (task: string, variant: string, repetition: number) => JSON.stringify([task, variant, repetition]);

/**
 * The report of `record` from its trials: finished ones (TrialResult), or the store's (StoredTrial:
 * pending until it has a result, with its thread's id either way). A trial of a variant the record
 * does not have, or of a repetition beyond its `repeat`, is left out; a task the suite no longer
 * lists is shown after the suite's tasks.
 */
export function buildReport(record: EvalRecord, trials: readonly (TrialResult | StoredTrial)[], options: ReportOptions = {}): EvalReport {
  const suiteTasks = options.tasks ?? record.tasks;
  const labels = new Set(record.variants.map((variant) => variant.label));
  const finished = new Map<string, TrialResult>();
  const threads = new Map<string, string>();
  for (const trial of trials) {
    if (!labels.has(trial.variant) || trial.repetition < 1 || trial.repetition > record.repeat) continue;
    const key = keyOf(trial.task, trial.variant, trial.repetition);
    threads.set(key, trial.threadId);
    const result = "outcome" in trial ? trial : trial.result;
    if (result) finished.set(key, result);
  }
  const listed = new Set(suiteTasks.map((task) => task.id));
  const extra = [...new Set(trials.map((trial) => trial.task))].filter((id) => !listed.has(id)).sort();
  const taskList = [...suiteTasks.map((task) => ({ id: task.id, tags: [...task.tags] })), ...extra.map((id) => ({ id, tags: [] }))];
  const repetitions = Array.from({ length: record.repeat }, (_, index) => index + 1);

  const tasks: TaskRow[] = taskList.map((task) => ({
    ...task,
    variants: record.variants.map((variant) => {
      const cells = repetitions.map((repetition) => {
        const key = keyOf(task.id, variant.label, repetition);
        return cellOf(finished.get(key), repetition, threads.get(key));
      });
      return { label: variant.label, trials: cells, passes: taskPasses(cells) };
    }),
  }));
  const variants = record.variants.map((variant) => {
    const own = [...finished.values()].filter((trial) => trial.variant === variant.label);
    return summarize(variant, own, taskList.length * record.repeat - own.length, options.prices ?? {});
  });
  const [base, ...others] = variants;
  return {
    format: EVAL_REPORT_FORMAT,
    eval: {
      id: record.id,
      suite: record.suiteName,
      suiteFile: record.suiteFile,
      status: record.status,
      repeat: record.repeat,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
    },
    trials: taskList.length * record.variants.length * record.repeat,
    pending: variants.reduce((sum, variant) => sum + variant.pending, 0),
    variants,
    tasks,
    comparisons: base ? others.map((other) => compare(base, other, tasks)) : [],
  };
}
