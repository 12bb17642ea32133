/**
 * The eval report's formats (docs/eval-report.md), each a pure function of the report
 * (src/eval/report.ts): text for the terminal, JSON, JUnit XML for CI, Markdown for a pull
 * request. Everything a trial or the suite wrote (task ids, tags, reasons, check output, graph and
 * model names) is hostile: it goes through `printable` and each format's own escaping.
 */
import pc from "picocolors";
import type { EvalReport } from "../eval/report-schema.js";
import {
  costText,
  differenceLine,
  failedTrials,
  failureCounts,
  formatCost,
  formatTime,
  listOrNone,
  MARKS,
  type Outcome,
  passLine,
  percent,
  variantName,
} from "../eval/report-format.js";
import { formatTokens } from "./render.js";
import { printable, printableJson } from "./terminal-text.js";

/** `text` made printable and cut to `max` characters, the cut marked with `more`. */
function fit(text: string, max: number, more = "…"): string {
  const shown = printable(text);
  return shown.length > max ? `${shown.slice(0, Math.max(1, max - more.length))}${more}` : shown;
}

/** `fit` marking a cut with `…`, or `...` in plain ASCII. */
const cutter = (unicode: boolean) => (text: string, max: number) => fit(text, max, unicode ? "…" : "...");

export interface TextOptions {
  color: boolean;
  /** The terminal's columns: long names and reasons are cut to fit. */
  width: number;
  /** UTF-8 marks (`✓✗·`, `–`, `−`); default: as `color`. Off, the text is plain ASCII except what a trial wrote. */
  unicode?: boolean;
}

/** The report for a terminal: the variants, the comparisons, the task matrix, then each trial that did not pass. */
export function renderText(report: EvalReport, options: TextOptions): string {
  const colors = pc.createColors(options.color);
  const unicode = options.unicode ?? options.color;
  const dash = unicode ? "–" : "-";
  const minus = unicode ? "−" : "-";
  const times = unicode ? "×" : "x";
  const cut = cutter(unicode);
  const width = Math.max(40, options.width);
  const lines: string[] = [];
  const { eval: info } = report;
  const pending = report.pending > 0 ? `, ${report.pending} pending` : "";
  lines.push(
    colors.bold(`eval ${info.id}: ${cut(info.suite, 40)} (${info.status})`) +
      `  ${report.variants.length} variant${report.variants.length === 1 ? "" : "s"} ${times} ${info.repeat} repetition${info.repeat === 1 ? "" : "s"}, ${report.trials} trials${pending}`,
  );
  lines.push("");
  const labelWidth = Math.max(...report.variants.map((variant) => variant.label.length), 1);
  for (const variant of report.variants) {
    const rounds = variant.rounds.mean === null ? "-" : variant.rounds.mean.toFixed(1);
    const figures = [
      passLine(variant, dash),
      `rounds ${rounds}`,
      `tokens ${formatTokens(variant.inputTokens.total)} in / ${formatTokens(variant.outputTokens.total)} out`,
      variant.cost.total === null ? "cost unknown" : costText(variant),
      `time ${formatTime(variant.wallMs.total)}`,
    ].join("  ");
    // The variant's name (its graph and model, often a long path) on a line of its own, its figures below.
    lines.push(
      `${colors.bold(cut(variant.label, labelWidth).padEnd(labelWidth))}  ${cut(variantName(variant), Math.max(12, width - labelWidth - 2))}`,
    );
    lines.push(`${" ".repeat(labelWidth + 2)}${figures}`);
    const extra = [`failures: ${failureCounts(variant)}`];
    if (variant.skipped > 0) extra.push(`skipped ${variant.skipped}`);
    if (variant.pending > 0) extra.push(`pending ${variant.pending}`);
    if (variant.cost.total === null) extra.push(cut(costText(variant), width));
    lines.push(`${" ".repeat(labelWidth + 2)}${extra.join("  ")}`);
  }
  for (const comparison of report.comparisons) {
    lines.push("");
    lines.push(colors.bold(differenceLine(comparison, minus)));
    lines.push(`  gained: ${cut(listOrNone(comparison.gained), width - 10)}`);
    lines.push(`  lost: ${cut(listOrNone(comparison.lost), width - 8)}`);
  }
  lines.push("", ...matrixLines(report, colors, unicode, width));
  const failed = failedTrials(report);
  if (failed.length > 0) {
    lines.push("", colors.bold("not passed"));
    for (const { label, task, cell } of failed) {
      const head = `${cut(label, labelWidth).padEnd(labelWidth)}  ${cut(task, 40)}#${cell.repetition}  ${cell.outcome}`;
      const reason = cell.reason ? `: ${cut(cell.reason.replace(/\s+/g, " "), Math.max(10, width - head.length - 2))}` : "";
      lines.push(`${head}${reason}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

type Colors = ReturnType<typeof pc.createColors>;

/** The task matrix: a row per task, a column per variant, a mark per repetition; then the legend. */
function matrixLines(report: EvalReport, colors: Colors, unicode: boolean, width: number): string[] {
  const cut = cutter(unicode);
  const columns = report.variants.map((variant) => Math.max(variant.label.length, report.eval.repeat));
  const used = columns.reduce((sum, column) => sum + column + 2, 0);
  const idWidth = Math.min(Math.max(4, ...report.tasks.map((task) => printable(task.id).length)), Math.max(10, width - used));
  const mark = (outcome: Outcome) => {
    const { unicode: glyph, ascii, color } = MARKS[outcome];
    return colors[color](unicode ? glyph : ascii);
  };
  const header = `${"task".padEnd(idWidth)}${report.variants.map((variant, index) => `  ${cut(variant.label, columns[index]!).padEnd(columns[index]!)}`).join("")}`;
  const rows = report.tasks.map(
    (task) =>
      cut(task.id, idWidth).padEnd(idWidth) +
      task.variants
        .map(
          (variant, index) =>
            `  ${variant.trials.map((cell) => mark(cell.outcome)).join("")}${" ".repeat(columns[index]! - variant.trials.length)}`,
        )
        .join(""),
  );
  const legend = (Object.keys(MARKS) as Outcome[]).map((outcome) => `${mark(outcome)} ${outcome}`).join("  ");
  return [colors.bold(header.trimEnd()), ...rows.map((row) => row.trimEnd()), colors.dim(legend)];
}

/** The report as its JSON document (`"format": "loopgraph-eval-report/1"`, schema/eval-report.schema.json), safe to print. */
export function renderJson(report: EvalReport): string {
  return `${printableJson(JSON.stringify(report, null, 2))}\n`;
}

/**
 * Text for XML 1.0: printable (control characters shown as escapes), the characters XML forbids
 * besides (unpaired surrogates, U+FFFE, U+FFFF) replaced by U+FFFD, and the markup characters as
 * entities; in an attribute, line breaks and tabs as character references, so no parser folds them.
 */
function xml(text: string, attribute = false): string {
  const escaped = printable(text)
    .replace(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, "\ufffd")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
  return attribute ? escaped.replace(/\n/g, "&#10;").replace(/\t/g, "&#9;") : escaped;
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

/** `name="value"` pairs, each value escaped. */
const attributes = (pairs: Record<string, string | number>) =>
  Object.entries(pairs)
    .map(([name, value]) => ` ${name}="${xml(String(value), true)}"`)
    .join("");

/**
 * JUnit XML (the Surefire/Jenkins schema): a `<testsuite>` per variant, a `<testcase>` per finished
 * trial (`task#repetition`, classname the variant's label and graph). A trial whose check failed or
 * that hit a limit or its timeout is a `<failure>` (the work was not done); one whose run failed is
 * an `<error>`; a skipped one `<skipped>`. Pending trials are left out, as everywhere.
 */
export function renderJUnit(report: EvalReport): string {
  const suites = report.variants.map((variant) => {
    const cases = report.tasks.flatMap((task) =>
      (task.variants.find((row) => row.label === variant.label)?.trials ?? []).flatMap((cell) => {
        if (cell.outcome === "pending") return [];
        const head = `    <testcase${attributes({ name: `${task.id}#${cell.repetition}`, classname: `${variant.label} ${variant.graph}`, time: seconds(cell.wallMs) })}`;
        if (cell.outcome === "passed") return [`${head}/>`];
        const message = cell.reason ?? cell.outcome;
        const body = [cell.reason, cell.checkOutput].filter(Boolean).join("\n\n");
        const inner =
          cell.outcome === "skipped"
            ? `<skipped${attributes({ message })}/>`
            : `<${cell.outcome === "run-failed" ? "error" : "failure"}${attributes({ type: cell.outcome, message })}>${xml(body)}</${cell.outcome === "run-failed" ? "error" : "failure"}>`;
        return [`${head}>`, `      ${inner}`, "    </testcase>"];
      }),
    );
    const failures = variant.failures["check-failed"] + variant.failures.limit + variant.failures.timeout;
    const counts = {
      name: `${variant.label}: ${variantName(variant)}`,
      tests: variant.run + variant.skipped,
      failures,
      errors: variant.failures["run-failed"],
      skipped: variant.skipped,
      time: seconds(variant.wallMs.total),
    };
    return { counts, xml: [`  <testsuite${attributes(counts)}>`, ...cases, "  </testsuite>"] };
  });
  const total = (key: "tests" | "failures" | "errors" | "skipped") => suites.reduce((sum, suite) => sum + suite.counts[key], 0);
  const root = {
    name: `loopgraph eval ${report.eval.id}: ${report.eval.suite}`,
    tests: total("tests"),
    failures: total("failures"),
    errors: total("errors"),
    skipped: total("skipped"),
    time: seconds(report.variants.reduce((sum, variant) => sum + variant.wallMs.total, 0)),
  };
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attributes(root)}>`,
    ...suites.flatMap((suite) => suite.xml),
    "</testsuites>",
    "",
  ].join("\n");
}

/** Text for a Markdown table cell or line: printable, on one line, with Markdown's and HTML's characters escaped. */
function md(text: string): string {
  return printable(text.replace(/\s+/g, " "))
    .replace(/[\\`*_[\]|#~]/g, (char) => `\\${char}`)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;");
}

/** The report for a pull request: a table of the variants, the comparisons with the tasks that changed, the matrix folded away. */
export function renderMarkdown(report: EvalReport): string {
  const { eval: info } = report;
  const lines = [`### loopgraph eval ${md(info.id)}: ${md(info.suite)} (${info.status})`, ""];
  const pending = report.pending > 0 ? `, ${report.pending} pending` : "";
  lines.push(`${report.variants.length} variants × ${info.repeat} repetitions, ${report.trials} trials${pending}.`, "");
  lines.push(
    "| variant | graph | model | passed | pass rate [95% CI] | mean rounds | tokens in / out | cost | time | failures | skipped |",
  );
  lines.push("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const variant of report.variants) {
    const { rate, low, high } = variant.passRate;
    lines.push(
      `| ${[
        md(variant.label),
        md(variant.graph),
        variant.model === null ? "(the graph's)" : md(variant.model),
        `${variant.passed}/${variant.run}`,
        rate === null ? "-" : `${percent(rate)} [${percent(low)}–${percent(high)}]`,
        variant.rounds.mean === null ? "-" : variant.rounds.mean.toFixed(1),
        `${formatTokens(variant.inputTokens.total)} / ${formatTokens(variant.outputTokens.total)}`,
        variant.cost.total === null ? `unknown: ${md(variant.cost.unknown)}` : formatCost(variant.cost.total),
        formatTime(variant.wallMs.total),
        failureCounts(variant),
        String(variant.skipped),
      ].join(" | ")} |`,
    );
  }
  for (const comparison of report.comparisons) {
    lines.push("", `**${md(differenceLine(comparison, "−"))}**`, "");
    lines.push(`- gained: ${md(listOrNone(comparison.gained))}`, `- lost: ${md(listOrNone(comparison.lost))}`);
  }
  lines.push(
    "",
    "<details><summary>Every task (✓ passed, ✗ check failed, ! run failed, L limit, T timeout, s skipped, · pending)</summary>",
    "",
  );
  lines.push(
    `| task | ${report.variants.map((variant) => md(variant.label)).join(" | ")} |`,
    `|---|${report.variants.map(() => "---|").join("")}`,
  );
  for (const task of report.tasks) {
    lines.push(
      `| ${md(task.id)} | ${task.variants.map((variant) => variant.trials.map((cell) => MARKS[cell.outcome].unicode).join("")).join(" | ")} |`,
    );
  }
  lines.push("", "</details>", "");
  return lines.join("\n");
}
