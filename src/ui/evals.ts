/**
 * The web inspector's eval pages, read from the store as `loopgraph eval --list` and `--report`
 * read them: the evals with their progress, one eval's report (eval/report.ts), and the eval a
 * trial's thread belongs to. Nothing here writes.
 */
import type { PriceTable } from "../config/prices.js";
import { buildReport } from "../eval/report.js";
import type { EvalReport } from "../eval/report-schema.js";
import type { EvalRecord, TrialKey } from "../runs/evals.js";
import { requireEval, withTables, type StoreOptions, type StoreTables } from "../store/tables.js";

/** An eval as the evals page lists it: its record's summary and how far its trials got. */
export interface EvalListed {
  id: string;
  suite: string;
  status: EvalRecord["status"];
  createdAt: string;
  updatedAt: string;
  variants: { label: string; graph: string; model: string | null; passed: number }[];
  trials: { total: number; finished: number };
}

/** Every eval of the store, newest first. */
export async function evalsPage(options: StoreOptions): Promise<{ evals: EvalListed[] }> {
  return withTables(options, "read", async (tables) => {
    const evals: EvalListed[] = [];
    for (const record of await tables.evals.list()) {
      const results = (await tables.evals.trials(record.id)).flatMap((trial) => (trial.result ? [trial.result] : []));
      evals.push({
        id: record.id,
        suite: record.suiteName,
        status: record.status,
        createdAt: record.createdAt,
        updatedAt: record.updatedAt,
        variants: record.variants.map((variant) => ({
          label: variant.label,
          graph: variant.graph,
          model: variant.model ?? null,
          passed: results.filter((result) => result.variant === variant.label && result.outcome === "passed").length,
        })),
        trials: { total: record.tasks.length * record.variants.length * record.repeat, finished: results.length },
      });
    }
    return { evals };
  });
}

/** One eval: its record and its report, costed with `prices` (the config's, when the server has them). */
export async function evalPage(
  evalId: string,
  options: StoreOptions,
  prices: PriceTable = {},
): Promise<{ record: EvalRecord; report: EvalReport }> {
  return withTables(options, "read", async (tables) => {
    const record = await requireEval(tables, evalId);
    return { record, report: buildReport(record, await tables.evals.trials(evalId), { prices }) };
  });
}

/** The trial a thread ran, with the eval it belongs to; undefined for a thread that is no trial. */
export async function trialOfThread(
  tables: Pick<StoreTables, "evals">,
  threadId: string,
): Promise<(TrialKey & { id: string }) | undefined> {
  const evalId = await tables.evals.evalOfThread(threadId);
  if (evalId === undefined) return undefined;
  const trial = (await tables.evals.trials(evalId)).find((stored) => stored.threadId === threadId);
  return trial && { id: evalId, task: trial.task, variant: trial.variant, repetition: trial.repetition };
}
