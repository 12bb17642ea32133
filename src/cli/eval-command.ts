/**
 * `loopgraph eval`: runs a suite of tasks against graph and model variants (src/eval/run.ts), one
 * line per finished trial, then the report; `--resume` continues a stopped eval, `--recorded`
 * re-checks a finished one against a changed graph, `--list` and `--report` read them back.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import pc from "picocolors";
import { CancelledError, ConfigError, ExitCode } from "../errors.js";
import { resolveGraphPath } from "../graph/load.js";
import { parseModelSpec } from "../models/spec.js";
import { projectRoot, STATE_DIR } from "../project.js";
import { ensureStateDir } from "../runs/state-dir.js";
import { requireEval, withTables } from "../store/tables.js";
import { describeVariant, type EvalRecord, type EvalVariant, type StoredTrial, type TrialResult } from "../runs/evals.js";
import { storeOf, type GlobalOptions } from "./global-options.js";
import { dbFlag } from "./run-commands.js";
import { printable } from "./terminal-text.js";

export interface EvalCommandOptions extends GlobalOptions {
  graph?: string[];
  model?: string[];
  repeat?: number;
  concurrency?: number;
  tag?: string[];
  queue?: boolean;
  resume?: string;
  recorded?: string;
  variant?: string;
  report?: string;
  list?: boolean;
  json?: boolean;
  junit?: string;
  markdown?: string;
  sandbox?: boolean;
}

/** The graph a suite runs with when no --graph is given. */
const DEFAULT_GRAPH = "coder-review";

export async function evalCommand(suiteFile: string | undefined, options: EvalCommandOptions): Promise<number> {
  if (options.list) return listEvals(options);
  if (options.recorded !== undefined) return recheck(options.recorded, options);
  if (options.report !== undefined) return showReport(options.report, options);
  if (options.resume === undefined && suiteFile === undefined) {
    throw new ConfigError("loopgraph eval needs a suite file (loopgraph eval SUITE), or --resume ID, --recorded ID, --report ID or --list");
  }
  const { loadSuite } = await import("../eval/suite.js");
  const { checkQueueable, resumeEval, startEval } = await import("../eval/run.js");
  const cwd = process.cwd();
  const store = storeOf(options);
  const stateDir = join(projectRoot(cwd), STATE_DIR);
  ensureStateDir(stateDir);
  const stop = new AbortController();
  let stopping = false;
  const onSignal = (): void => {
    if (stopping) process.exit(ExitCode.Interrupted);
    stopping = true;
    stop.abort(new CancelledError());
    process.stderr.write(
      pc.yellow(
        "\nStopping now: the trials in flight stop, their threads resumable; queued ones go on on the workers (Ctrl-C again to quit at once)…\n",
      ),
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const runOptions = {
      store: { ...store, cwd },
      settings: options.settings,
      noSandbox: options.sandbox === false,
      workRoot: join(stateDir, "evals"),
      signal: stop.signal,
      onTrial: (result: TrialResult, done: number, total: number) => progressLine(result, done, total, options.json),
    };
    let run;
    if (options.resume !== undefined) {
      const record = await withTables(store, "read", (tables) => tables.evals.get(options.resume!));
      if (!record) throw new ConfigError(`no eval "${options.resume}": see loopgraph eval --list${dbFlag(options.db)}`);
      run = await resumeEval(record.id, loadSuite(suiteFile ? resolve(cwd, suiteFile) : record.suiteFile), runOptions);
    } else {
      const suite = loadSuite(resolve(cwd, suiteFile!));
      const tags = options.tag ?? [];
      const tasks = tags.length === 0 ? suite.tasks : suite.tasks.filter((task) => task.tags.some((tag) => tags.includes(tag)));
      if (tasks.length === 0) throw new ConfigError(`no task of ${suiteFile} has the tag${tags.length > 1 ? "s" : ""} ${tags.join(", ")}`);
      const variants = variantsOf(options, cwd);
      const plan = {
        suite: { ...suite, tasks },
        variants,
        repeat: options.repeat ?? 1,
        concurrency: options.concurrency ?? 1,
        queue: options.queue === true,
      };
      // Refused before anything is said (startEval checks it too, before anything is recorded).
      if (plan.queue) await checkQueueable(tasks, runOptions.store);
      announce(plan.suite.name, tasks.length, variants, plan.repeat, options.json);
      run = await startEval(plan, runOptions);
    }
    if (run.record.status !== "finished") {
      process.stderr.write(
        `${pc.yellow("■ stopped")}  eval ${run.record.id}: continue with: loopgraph eval --resume ${run.record.id}${dbFlag(options.db)}\n`,
      );
      return ExitCode.Interrupted;
    }
    await writeReport(run.record, run.trials, options);
    return ExitCode.Finished;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The variants: each graph with each model (a graph alone when no model is given), labelled A, B, … in that order. */
function variantsOf(options: EvalCommandOptions, cwd: string): EvalVariant[] {
  const graphs = options.graph?.length ? options.graph : [DEFAULT_GRAPH];
  const models: (string | undefined)[] = options.model?.length ? options.model : [undefined];
  // A model spec that cannot work is one line now, not a failed run per trial.
  for (const model of models) if (model !== undefined) parseModelSpec(model, options.settings.providers);
  const pairs = graphs.flatMap((graph) => models.map((model) => ({ graph, model })));
  if (pairs.length > 26) throw new ConfigError(`${pairs.length} variants (graphs × models): at most 26`);
  return pairs.map(({ graph, model }, i) => ({
    label: String.fromCharCode(65 + i),
    graph,
    graphFile: resolveGraphPath(graph, cwd),
    ...(model !== undefined && { model }),
  }));
}

function announce(suite: string, tasks: number, variants: EvalVariant[], repeat: number, json?: boolean): void {
  const out = json ? process.stderr : process.stdout;
  const trials = tasks * variants.length * repeat;
  out.write(
    `eval of ${printable(suite)}: ${tasks} task${tasks === 1 ? "" : "s"} × ${variants.length} variant${variants.length === 1 ? "" : "s"} × ${repeat} = ${trials} trial${trials === 1 ? "" : "s"}\n`,
  );
  for (const variant of variants) out.write(pc.dim(`  ${printable(describeVariant(variant))}\n`));
}

const MARKS: Record<TrialResult["outcome"], string> = {
  passed: pc.green("✓ passed      "),
  "check-failed": pc.red("✗ check failed"),
  "run-failed": pc.red("✗ run failed  "),
  limit: pc.yellow("✗ limit       "),
  timeout: pc.yellow("✗ timeout     "),
  skipped: pc.dim("- skipped     "),
};

/** One line per finished trial: its count, outcome, task, variant and repetition, figures, thread, and why it did not pass. */
function progressLine(result: TrialResult, done: number, total: number, json?: boolean): void {
  const count = `[${String(done).padStart(String(total).length)}/${total}]`;
  const tokens = result.tokens.inputTokens + result.tokens.outputTokens;
  const figures =
    result.outcome === "skipped"
      ? ""
      : `  ${result.rounds} round${result.rounds === 1 ? "" : "s"}  ${tokens} tokens  ${(result.wallMs / 1000).toFixed(1)}s`;
  const why = result.reason ? pc.dim(`  ${printable(result.reason)}`) : "";
  (json ? process.stderr : process.stdout).write(
    `${count} ${MARKS[result.outcome]}  ${printable(result.task)}  ${result.variant}#${result.repetition}${figures}  ${pc.dim(result.threadId)}${why}\n`,
  );
}

async function listEvals(options: EvalCommandOptions): Promise<number> {
  const evals = await withTables(storeOf(options), "read", (tables) => tables.evals.list());
  if (options.json) return (process.stdout.write(`${JSON.stringify(evals, null, 2)}\n`), 0);
  if (evals.length === 0) return (process.stdout.write("no evals yet: run one with `loopgraph eval SUITE`\n"), 0);
  for (const record of evals) {
    const variants = record.variants.map(describeVariant).join("; ");
    process.stdout.write(
      `${record.id}  ${record.status.padEnd(8)}  ${record.createdAt}  ${printable(record.suiteName)}  ${printable(variants)}\n`,
    );
  }
  return 0;
}

async function showReport(evalId: string, options: EvalCommandOptions): Promise<number> {
  const { record, trials } = await withTables(storeOf(options), "read", async (tables) => ({
    record: await requireEval(tables, evalId),
    trials: await tables.evals.trials(evalId),
  }));
  await writeReport(record, trials, options);
  return ExitCode.Finished;
}

/** The report: as text (or JSON with --json) on stdout, and as JUnit XML and Markdown in the files given. */
async function writeReport(record: EvalRecord, trials: StoredTrial[], options: EvalCommandOptions): Promise<void> {
  const [{ buildReport }, { renderJson, renderJUnit, renderMarkdown, renderText }, { priceTable }] = await Promise.all([
    import("../eval/report.js"),
    import("./eval-report.js"),
    import("../config/environment-settings.js"),
  ]);
  const report = buildReport(record, trials, { prices: priceTable(options.settings) });
  if (options.junit) writeFileSync(options.junit, renderJUnit(report));
  if (options.markdown) writeFileSync(options.markdown, renderMarkdown(report));
  process.stdout.write(
    options.json ? renderJson(report) : renderText(report, { color: pc.isColorSupported, width: process.stdout.columns ?? 100 }),
  );
}

async function recheck(evalId: string, options: EvalCommandOptions): Promise<number> {
  const graph = options.graph?.[0];
  if (graph === undefined || (options.graph?.length ?? 0) > 1)
    throw new ConfigError("eval --recorded takes one --graph: the changed graph to check the trials against");
  const { recheckEval } = await import("../eval/recorded.js");
  const cwd = process.cwd();
  const result = await recheckEval(evalId, resolveGraphPath(graph, cwd), { ...storeOf(options), cwd }, options.variant);
  if (options.json) {
    const trials = result.checked.map(({ trial, verify }) => ({ ...trial, consistent: verify.consistent, divergence: verify.divergence }));
    process.stdout.write(`${JSON.stringify({ eval: evalId, variant: result.variant, graphFile: result.graphFile, trials }, null, 2)}\n`);
  } else {
    for (const { trial, verify } of result.differing) {
      const where = verify.divergence?.location
        ? `${verify.divergence.location.file}:${verify.divergence.location.line}:${verify.divergence.location.col}: `
        : "";
      process.stdout.write(
        `${pc.red("✗ differs")}  ${printable(trial.task)}  ${trial.variant}#${trial.repetition}  ${trial.threadId}\n    ${printable(where + (verify.divergence?.message ?? ""))}\n`,
      );
    }
    const same = result.checked.length - result.differing.length;
    process.stdout.write(
      `${result.differing.length} of ${result.checked.length} trials of variant ${result.variant} would take another path; ${same} the same\n`,
    );
  }
  return result.differing.length > 0 ? ExitCode.Failed : ExitCode.Finished;
}
