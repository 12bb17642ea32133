/**
 * The shape of the eval report (report.ts builds it, `renderJson` writes it): one zod schema,
 * from which both the report's types and `schema/eval-report.schema.json` come (`npm run schema`).
 * A figure that does not exist (a mean over no trial, a rate of none) is null, never a made-up 0.
 */
import { z } from "zod";
import { FAILURE_KINDS } from "./types.js";

/** The report's format and version (`"format"` of the JSON document): raised when a field changes meaning or goes away. */
export const EVAL_REPORT_FORMAT = "loopgraph-eval-report/1";

const OUTCOMES = ["passed", ...FAILURE_KINDS, "skipped"] as const;

const count = z.number().int().min(0);
/** A fraction from 0 to 1 with its 95% interval; rate null when no trial ran. */
const passRate = z.strictObject({
  rate: z.number().min(0).max(1).nullable(),
  low: z.number().min(0).max(1),
  high: z.number().min(0).max(1),
});
const sumAndMean = z.strictObject({ total: z.number().min(0), mean: z.number().min(0).nullable() });

const cost = z.union([
  z.strictObject({ total: z.number().min(0), mean: z.number().min(0).nullable() }),
  /** No estimate: the reason (no price for the model in config, a scripted model, the graph's own models). */
  z.strictObject({ total: z.null(), unknown: z.string() }),
]);

const variantSummary = z.strictObject({
  label: z.string(),
  graph: z.string(),
  model: z.string().nullable(),
  /** Trials finished and not skipped: the `n` of every figure below. */
  run: count,
  passed: count,
  passRate,
  rounds: sumAndMean,
  inputTokens: sumAndMean,
  outputTokens: sumAndMean,
  /** In the price table's currency units. */
  cost,
  wallMs: sumAndMean,
  failures: z.strictObject(
    Object.fromEntries(FAILURE_KINDS.map((kind) => [kind, count])) as Record<(typeof FAILURE_KINDS)[number], typeof count>,
  ),
  skipped: count,
  pending: count,
});

const finishedCell = z.strictObject({
  repetition: z.number().int().min(1),
  outcome: z.enum(OUTCOMES),
  threadId: z.string(),
  reason: z.string().nullable(),
  checkOutput: z.string().nullable(),
  rounds: count,
  inputTokens: count,
  outputTokens: count,
  wallMs: z.number().min(0),
});
const pendingCell = z.strictObject({ repetition: z.number().int().min(1), outcome: z.literal("pending") });

const taskRow = z.strictObject({
  id: z.string(),
  tags: z.array(z.string()),
  variants: z.array(
    z.strictObject({
      label: z.string(),
      /** One per repetition, in order. */
      trials: z.array(z.union([finishedCell, pendingCell])),
      /** The majority rule: more than half of the finished, not skipped repetitions passed; null when none finished. */
      passes: z.boolean().nullable(),
    }),
  ),
});

const comparison = z.strictObject({
  /** The first variant (A). */
  base: z.string(),
  variant: z.string(),
  /** The variant's pass rate minus the base's, as a fraction, with Newcombe's 95% interval; null when either ran no trial. */
  delta: z.number().min(-1).max(1).nullable(),
  low: z.number().min(-1).max(1),
  high: z.number().min(-1).max(1),
  /** Tasks passing (majority rule) for the variant and not for the base. */
  gained: z.array(z.string()),
  lost: z.array(z.string()),
});

export const evalReportSchema = z.strictObject({
  format: z.literal(EVAL_REPORT_FORMAT),
  eval: z.strictObject({
    id: z.string(),
    suite: z.string(),
    suiteFile: z.string(),
    status: z.enum(["running", "stopped", "finished"]),
    repeat: z.number().int().min(1),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
  /** Trials the eval has (tasks × variants × repetitions), finished ones and those not finished yet. */
  trials: count,
  pending: count,
  variants: z.array(variantSummary),
  tasks: z.array(taskRow),
  comparisons: z.array(comparison),
});

export type EvalReport = z.infer<typeof evalReportSchema>;
export type VariantSummary = EvalReport["variants"][number];
export type TaskRow = EvalReport["tasks"][number];
export type ReportCell = TaskRow["variants"][number]["trials"][number];
export type Comparison = EvalReport["comparisons"][number];

/** The JSON Schema of the report document (draft 7, as the graph files'). */
export function evalReportJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(evalReportSchema, { target: "draft-7" });
  return { ...schema, title: "loopgraph eval report", description: `The JSON report of \`loopgraph eval\` (${EVAL_REPORT_FORMAT})` };
}

/** The committed `schema/eval-report.schema.json`, byte for byte. */
export function renderEvalReportJsonSchema(): string {
  return `${JSON.stringify(evalReportJsonSchema(), null, 2)}\n`;
}
