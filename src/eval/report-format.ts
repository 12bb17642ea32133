/**
 * How the eval report's figures read, whatever lays them out: the text, JUnit and Markdown formats
 * (src/cli/eval-report.ts) and the web inspector's eval page (ui/src/evals.tsx, which bundles this
 * file: it imports nothing but the report's types and the failure kinds). Pure functions of the
 * report: what a trial or the suite wrote is not escaped here, each format escapes it its own way.
 */
import type { Comparison, EvalReport, ReportCell, VariantSummary } from "./report-schema.js";
import { FAILURE_KINDS } from "./types.js";

export type Outcome = ReportCell["outcome"];

/** Each outcome's mark in the matrix: UTF-8 and plain ASCII. */
export const MARKS: Record<Outcome, { unicode: string; ascii: string; color: "green" | "red" | "yellow" | "dim" }> = {
  passed: { unicode: "✓", ascii: "+", color: "green" },
  "check-failed": { unicode: "✗", ascii: "x", color: "red" },
  "run-failed": { unicode: "!", ascii: "!", color: "red" },
  limit: { unicode: "L", ascii: "L", color: "yellow" },
  timeout: { unicode: "T", ascii: "T", color: "yellow" },
  skipped: { unicode: "s", ascii: "s", color: "dim" },
  pending: { unicode: "·", ascii: ".", color: "dim" },
};

/** A fraction as whole percent: `70%`. */
export const percent = (fraction: number) => `${Math.round(fraction * 100)}%`;

/** Currency units: whole above 100, cents above 1, else four decimals (a cheap model's cost is small). */
export function formatCost(amount: number): string {
  return amount >= 100 ? amount.toFixed(0) : amount >= 1 ? amount.toFixed(2) : amount.toFixed(4);
}

/** `45.2 s`, or `12 min 5 s` from ten minutes. */
export function formatTime(ms: number): string {
  const seconds = ms / 1000;
  return seconds < 600 ? `${seconds.toFixed(1)} s` : `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

/** `7/10 passed 70% [40%–89%]` (the dash ASCII without UTF-8). */
export function passLine(variant: VariantSummary, dash: string): string {
  const { rate, low, high } = variant.passRate;
  if (rate === null) return `0/0 passed (no trial ran)`;
  return `${variant.passed}/${variant.run} passed ${percent(rate)} [${percent(low)}${dash}${percent(high)}]`;
}

/** The graph and, when given, the model: `coder (openai:gpt-4o)`. Hostile: not yet printable. */
export const variantName = (variant: VariantSummary) => (variant.model === null ? variant.graph : `${variant.graph} (${variant.model})`);

export const costText = (variant: VariantSummary) =>
  variant.cost.total === null ? `cost unknown: ${variant.cost.unknown}` : `cost ${formatCost(variant.cost.total)}`;

/** `check-failed 2, timeout 1`, the kinds that occurred only; `none` when none did. */
export function failureCounts(variant: VariantSummary): string {
  const kinds = FAILURE_KINDS.filter((kind) => variant.failures[kind] > 0).map((kind) => `${kind} ${variant.failures[kind]}`);
  return kinds.length > 0 ? kinds.join(", ") : "none";
}

/** Signed whole points: `+20`, `−12` (ASCII `-12`). */
function points(fraction: number, minus: string): string {
  const value = Math.round(fraction * 100);
  return value > 0 ? `+${value}` : value < 0 ? `${minus}${-value}` : "0";
}

/** `B − A: +20 points [−12 to +49]`. */
export function differenceLine(comparison: Comparison, minus: string): string {
  const head = `${comparison.variant} ${minus} ${comparison.base}:`;
  if (comparison.delta === null) return `${head} no difference to show (a variant ran no trial)`;
  return `${head} ${points(comparison.delta, minus)} points [${points(comparison.low, minus)} to ${points(comparison.high, minus)}]`;
}

export const listOrNone = (ids: readonly string[]) => (ids.length > 0 ? ids.join(", ") : "none");

/** Each finished trial that did not pass, by variant, then task, then repetition. */
export function failedTrials(report: EvalReport) {
  return report.variants.flatMap(({ label }) =>
    report.tasks.flatMap((task) =>
      (task.variants.find((variant) => variant.label === label)?.trials ?? [])
        .filter((cell): cell is Exclude<ReportCell, { outcome: "pending" }> => cell.outcome !== "pending" && cell.outcome !== "passed")
        .map((cell) => ({ label, task: task.id, cell })),
    ),
  );
}
