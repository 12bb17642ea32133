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
const passRate = z
  .strictObject({
    rate: z.number().min(0).max(1).nullable(),
    low: z.number().min(0).max(1),
    high: z.number().min(0).max(1),
  })
  .describe("passed / run as a fraction, with its Wilson score 95% interval; rate null (interval 0 to 1) when no trial ran");
const sumAndMean = z
  .strictObject({ total: z.number().min(0), mean: z.number().min(0).nullable() })
  .describe("summed over the trials run, and their mean (null when none ran)");

const cost = z
  .union([
    z.strictObject({ total: z.number().min(0), mean: z.number().min(0).nullable() }),
    z.strictObject({ total: z.null(), unknown: z.string().describe("why there is no estimate") }),
  ])
  .describe("estimated cost in the config prices' currency units, or null with the reason it is unknown");

const variantSummary = z.strictObject({
  label: z.string(),
  graph: z.string(),
  model: z.string().nullable(),
  run: count.describe("trials finished and not skipped: the n of every figure of the variant"),
  passed: count,
  passRate,
  rounds: sumAndMean,
  inputTokens: sumAndMean,
  outputTokens: sumAndMean,
  cost,
  wallMs: sumAndMean,
  failures: z
    .strictObject(Object.fromEntries(FAILURE_KINDS.map((kind) => [kind, count])) as Record<(typeof FAILURE_KINDS)[number], typeof count>)
    .describe("trials run, by the kind of failure"),
  skipped: count.describe("trials not run: a program their task requires is missing"),
  pending: count.describe("trials not finished yet, counted in no other figure"),
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
const pendingCell = z
  .strictObject({
    repetition: z.number().int().min(1),
    outcome: z.literal("pending"),
    threadId: z.string().nullable().describe("its thread, once the eval has planned it"),
  })
  .describe("a trial not finished yet");

const taskRow = z.strictObject({
  id: z.string(),
  tags: z.array(z.string()),
  variants: z.array(
    z.strictObject({
      label: z.string(),
      trials: z.array(z.union([finishedCell, pendingCell])).describe("one per repetition, in order"),
      passes: z
        .boolean()
        .nullable()
        .describe("the majority rule: more than half of the finished, not skipped repetitions passed (a tie does not); null when none"),
    }),
  ),
});

const comparison = z.strictObject({
  base: z.string().describe("the first variant's label"),
  variant: z.string(),
  delta: z
    .number()
    .min(-1)
    .max(1)
    .nullable()
    .describe(
      "the variant's pass rate minus the base's, with Newcombe's hybrid score 95% interval (low, high); null when either ran no trial",
    ),
  low: z.number().min(-1).max(1),
  high: z.number().min(-1).max(1),
  gained: z.array(z.string()).describe("tasks passing (majority rule) for the variant and not for the base"),
  lost: z.array(z.string()).describe("tasks passing for the base and not for the variant"),
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
  trials: count.describe("the eval's trials (tasks × variants × repetitions), finished or not"),
  pending: count.describe("trials not finished yet"),
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
