/**
 * `eval --recorded ID --graph G'`: a finished eval's trials re-checked against a changed graph
 * without running anything (no model call, no command): each trial's recorded run is verified as
 * `replay --verify` does, its routing decisions taken again by the changed graph on the recorded
 * states. The trials whose path would differ are the ones the edit changes: the CI guard for graph edits.
 */
import { resolve } from "node:path";
import { ConfigError } from "../errors.js";
import { verifyRun, type VerifyResult } from "../replay/verify.js";
import { describeVariant, type StoredTrial } from "../runs/evals.js";
import { requireEval, withTables, type StoreOptions } from "../store/tables.js";
import type { EvalRecord } from "./types.js";

export interface RecheckedTrial {
  trial: StoredTrial;
  verify: VerifyResult;
}

export interface Recheck {
  record: EvalRecord;
  /** The variant whose trials were checked. */
  variant: string;
  graphFile: string;
  /** Every trial of the variant that ran, checked. */
  checked: RecheckedTrial[];
  /** Those whose path the changed graph would change. */
  differing: RecheckedTrial[];
}

/**
 * Re-checks the trials of one variant of eval `evalId` against `graphFile`: the variant named, or
 * (none named) the one whose graph is that file, or the eval's only one.
 */
export async function recheckEval(evalId: string, graphFile: string, store: StoreOptions, variantLabel?: string): Promise<Recheck> {
  const { record, trials } = await withTables(store, "read", async (tables) => {
    return { record: await requireEval(tables, evalId), trials: await tables.evals.trials(evalId) };
  });
  const file = resolve(store.cwd ?? process.cwd(), graphFile);
  const variant = variantToCheck(record, file, variantLabel);
  const ran = trials.filter((trial) => trial.variant === variant && trial.result !== undefined && trial.result.outcome !== "skipped");
  if (ran.length === 0)
    throw new ConfigError(`eval ${evalId} has no finished trial of variant ${variant} to check: let it finish (eval --resume ${evalId})`);
  const checked: RecheckedTrial[] = [];
  for (const trial of ran) checked.push({ trial, verify: await verifyRun({ ...store, threadId: trial.threadId, graphFile: file }) });
  return { record, variant, graphFile: file, checked, differing: checked.filter((one) => !one.verify.consistent) };
}

function variantToCheck(record: EvalRecord, graphFile: string, label: string | undefined): string {
  const labels = record.variants.map((variant) => variant.label);
  if (label !== undefined) {
    if (!labels.includes(label)) throw new ConfigError(`eval ${record.id} has no variant ${label}: its variants are ${labels.join(", ")}`);
    return label;
  }
  if (record.variants.length === 1) return record.variants[0]!.label;
  const same = record.variants.filter((variant) => variant.graphFile === graphFile);
  if (same.length === 1) return same[0]!.label;
  throw new ConfigError(
    `eval ${record.id} has ${record.variants.length} variants (${record.variants.map(describeVariant).join("; ")}): say whose trials to check with --variant`,
  );
}
