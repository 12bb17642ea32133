/**
 * The eval pages: `#/evals` lists the store's evals, `#/eval/<id>` shows one eval's report (its
 * variants, comparisons, task matrix with a link to each trial's thread, and the trials that did
 * not pass). The figures read as the CLI's report reads them (src/eval/report-format.ts). What
 * the suite or a trial wrote (task ids, reasons, graph and model names) is rendered as text only.
 */
import { useEffect, useState } from "preact/hooks";
import {
  costText,
  differenceLine,
  failedTrials,
  failureCounts,
  formatTime,
  listOrNone,
  MARKS,
  passLine,
} from "../../src/eval/report-format.js";
import type { ReportCell } from "../../src/eval/report-schema.js";
import { evalApi, get, type EvalListed, type EvalPage } from "./api.js";

/** Every `ms` the page at `path` is fetched again while `again(value)` says so; its newest value, or why it could not be read. */
export function usePolled<T>(path: string, again: (value: T) => boolean = () => true, ms = 2000): { value?: T; error?: string } {
  const [state, setState] = useState<{ value?: T; error?: string }>({});
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setState({});
    const load = () =>
      get<T>(path).then(
        (value) => {
          if (!alive) return;
          setState({ value });
          if (again(value)) timer = setTimeout(load, ms);
        },
        (e: Error) => alive && setState({ error: e.message }),
      );
    void load();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [path]);
  return state;
}

/** A table's head row: its columns' names. */
export function TableHead({ columns }: { columns: string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((column) => (
          <th key={column}>{column}</th>
        ))}
      </tr>
    </thead>
  );
}

export const threadHref = (threadId: string): string => `#/thread/${encodeURIComponent(threadId)}`;
export const evalHref = (evalId: string): string => `#/eval/${encodeURIComponent(evalId)}`;

const when = (iso: string): string => iso.replace("T", " ").slice(0, 19);

export function Evals() {
  const { value, error } = usePolled<{ evals: EvalListed[] }>("/api/evals");
  if (error) return <p class="error">{error}</p>;
  if (!value) return <p>loading…</p>;
  return (
    <main>
      <h1>Evals</h1>
      <table class="evals">
        <TableHead columns={["eval", "suite", "status", "variants (passed)", "trials finished", "created", "updated"]} />
        <tbody>
          {value.evals.map((record) => (
            <tr key={record.id}>
              <td>
                <a href={evalHref(record.id)}>{record.id}</a>
              </td>
              <td>{record.suite}</td>
              <td>
                <span class={`status status-${record.status}`}>{record.status}</span>
              </td>
              <td>
                {record.variants.map((variant) => (
                  <div key={variant.label}>
                    {variant.label}: {variant.graph}
                    {variant.model === null ? "" : ` with ${variant.model}`} ({variant.passed})
                  </div>
                ))}
              </td>
              <td>
                {record.trials.finished}/{record.trials.total}
              </td>
              <td>{when(record.createdAt)}</td>
              <td>{when(record.updatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {value.evals.length === 0 ? <p class="dim">no evals yet: run one with loopgraph eval SUITE</p> : null}
    </main>
  );
}

/** A trial's mark in the matrix: a link to its thread (titled with its outcome and why), or a dot for one not planned yet. */
function Mark({ cell, task, label }: { cell: ReportCell; task: string; label: string }) {
  const glyph = MARKS[cell.outcome].unicode;
  const title = `${task} ${label}#${cell.repetition}: ${cell.outcome}${"reason" in cell && cell.reason ? `: ${cell.reason}` : ""}`;
  const className = `mark mark-${cell.outcome}`;
  return cell.threadId === null ? (
    <span class={className} title={title} aria-label={title}>
      {glyph}
    </span>
  ) : (
    <a class={className} href={threadHref(cell.threadId)} title={title} aria-label={title}>
      {glyph}
    </a>
  );
}

export function Eval({ evalId }: { evalId: string }) {
  const { value, error } = usePolled<EvalPage>(evalApi(evalId), (page) => page.report.eval.status === "running");
  if (error) return <p class="error">{error}</p>;
  if (!value) return <p>loading…</p>;
  const { report } = value;
  const info = report.eval;
  const failed = failedTrials(report);
  return (
    <main>
      <h1 class="thread-title">
        eval {info.id} <span class={`status status-${info.status}`}>{info.status}</span>
        <a href="#/evals" class="h-link">
          all evals
        </a>
      </h1>
      <p class="meta">
        suite <b>{info.suite}</b> ({info.suiteFile}) · {report.variants.length} variant{report.variants.length === 1 ? "" : "s"} ×{" "}
        {info.repeat} repetition{info.repeat === 1 ? "" : "s"}, {report.trials} trials · created {when(info.createdAt)} · updated{" "}
        {when(info.updatedAt)}
      </p>
      {info.status === "stopped" ? (
        <p class="warn" data-testid="stopped">
          Stopped with {report.pending} trial{report.pending === 1 ? "" : "s"} pending: <code>loopgraph eval --resume {info.id}</code>{" "}
          continues it (finished trials are not run again).
        </p>
      ) : info.status === "running" ? (
        <p class="dim" data-testid="running">
          Running: {report.pending} trial{report.pending === 1 ? "" : "s"} pending; this page follows it.
        </p>
      ) : null}
      <h2>Variants</h2>
      <table class="variants">
        <TableHead
          columns={[
            "variant",
            "graph",
            "model",
            "passed, pass rate [95% interval]",
            "mean rounds",
            "tokens in → out",
            "cost",
            "time",
            "failures",
            "skipped",
            "pending",
          ]}
        />
        <tbody>
          {report.variants.map((variant) => (
            <tr key={variant.label}>
              <td>{variant.label}</td>
              <td>{variant.graph}</td>
              <td>{variant.model ?? "(the graph's)"}</td>
              <td class="pass-rate">{passLine(variant, "–")}</td>
              <td>{variant.rounds.mean === null ? "-" : variant.rounds.mean.toFixed(1)}</td>
              <td>
                {variant.inputTokens.total} → {variant.outputTokens.total}
              </td>
              <td>{costText(variant)}</td>
              <td>{formatTime(variant.wallMs.total)}</td>
              <td>{failureCounts(variant)}</td>
              <td>{variant.skipped}</td>
              <td>{variant.pending}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {report.comparisons.length > 0 ? <h2>Compared with {report.comparisons[0]!.base}</h2> : null}
      {report.comparisons.map((comparison) => (
        <div class="comparison" key={comparison.variant}>
          <p>
            <b>{differenceLine(comparison, "−")}</b>
          </p>
          <p>gained: {listOrNone(comparison.gained)}</p>
          <p>lost: {listOrNone(comparison.lost)}</p>
        </div>
      ))}
      <h2>Tasks</h2>
      <table class="matrix" data-testid="matrix">
        <thead>
          <tr>
            <th>task</th>
            {report.variants.map((variant) => (
              <th key={variant.label}>{variant.label}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {report.tasks.map((task) => (
            <tr key={task.id}>
              <td>{task.id}</td>
              {task.variants.map((variant) => (
                <td key={variant.label}>
                  {variant.trials.map((cell) => (
                    <Mark key={cell.repetition} cell={cell} task={task.id} label={variant.label} />
                  ))}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <p class="dim">
        {Object.entries(MARKS)
          .map(([outcome, mark]) => `${mark.unicode} ${outcome}`)
          .join("  ")}
      </p>
      {failed.length > 0 ? (
        <>
          <h2>Trials that did not pass</h2>
          <ul class="failed-trials">
            {failed.map(({ task, label, cell }) => (
              <li key={`${task} ${label} ${cell.repetition}`}>
                <a href={threadHref(cell.threadId)}>
                  {task} {label}#{cell.repetition}
                </a>
                : {cell.outcome}
                {cell.reason ? ` (${cell.reason})` : ""}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </main>
  );
}
