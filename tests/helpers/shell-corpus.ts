/**
 * Decides the external shell corpus (tests/fixtures/shell-corpus.ts) with loopgraph's policy,
 * compares each decision with the anchor's, and writes the comparison as the table of
 * docs/policy.md's "External corpus" section. Used by tests/policy.corpus.test.ts (which requires the
 * table to be current) and by `npm run corpus-table` (scripts/corpus-table.ts, which rewrites it).
 */
import { basename } from "node:path";
import { alwaysAnswerFor, decideToolCall } from "../../src/policy/gate.js";
import { stricter } from "../../src/policy/match.js";
import type { PolicyCall } from "../../src/policy/evaluate.js";
import type { PolicyDecision, PolicyRule } from "../../src/state/rules.js";
import type { ApprovalMode } from "../../src/state/thread.js";
import { CORPUS_SOURCES, type CorpusEntry, type CorpusRule, type CorpusSetting, type CorpusSource } from "../fixtures/shell-corpus.js";

export type Comparison = "agree" | "stricter" | "weaker";

export interface CorpusResult {
  entry: CorpusEntry;
  loopgraph: PolicyDecision;
  comparison: Comparison;
}

const shell = (command: string): PolicyCall => ({ name: "shell", args: { command } });

const userRule = (rule: CorpusRule): PolicyRule => ({ tool: "shell", priority: 0, source: "user", ...rule });

/** Loopgraph's decision on one entry, in a workspace at `workspace`. */
export function decideEntry(entry: CorpusEntry, workspace: string): PolicyDecision {
  const rules = [...(entry.setting.rules ?? []).map(userRule), ...sessionRules(entry.setting, workspace)];
  return decideToolCall(shell(entry.command), { rules, mode: entry.setting.mode, workspace, sandbox: "bubblewrap" }).verdict.decision;
}

/**
 * The rules the setting's "always" answers added: each command is asked about (in the setting's
 * mode, before the user's rules, which only decide later calls) and answered "always".
 */
function sessionRules(setting: CorpusSetting, workspace: string): PolicyRule[] {
  const added: PolicyRule[] = [];
  for (const command of setting.always ?? []) {
    const gate = decideToolCall(shell(command), { rules: added, mode: setting.mode, workspace, sandbox: "bubblewrap" });
    if (gate.kind !== "ask") throw new Error(`"always" on \`${command}\` needs it to ask, but it would ${gate.kind}`);
    added.push(alwaysAnswerFor(shell(command), gate.verdict).rule);
  }
  return added;
}

/** How loopgraph's decision compares with the anchor's: weaker when it lets through what the anchor stops (deny > ask > allow). */
export function compare(anchor: PolicyDecision, loopgraph: PolicyDecision): Comparison {
  if (anchor === loopgraph) return "agree";
  return stricter(anchor, loopgraph) === loopgraph ? "stricter" : "weaker";
}

export function runCorpus(entries: readonly CorpusEntry[], workspace: string): CorpusResult[] {
  return entries.map((entry) => {
    const loopgraph = decideEntry(entry, workspace);
    return { entry, loopgraph, comparison: compare(entry.anchor, loopgraph) };
  });
}

// ---------------------------------------------------------------------------------------------
// The table

export const TABLE_START = "<!-- external-corpus:start (npm run corpus-table) -->";
export const TABLE_END = "<!-- external-corpus:end -->";

/** The section's generated body: the sources, the table, and the totals. */
export function corpusTable(results: readonly CorpusResult[]): string {
  const rows = results.map(({ entry, loopgraph, comparison }) =>
    [code(entry.command), sourceCell(entry), settingCell(entry.setting), entry.anchor, loopgraph, comparison].join(" | "),
  );
  return [
    "Sources (each command's file, at the commit read):",
    "",
    ...Object.values(CORPUS_SOURCES).map((source) => `- ${source.anchor}: \`${source.repo}\` \`${source.path}\` at \`${source.commit}\``),
    "",
    "| command | anchor/source | setting | anchor | loopgraph | verdict |",
    "|---|---|---|---|---|---|",
    ...rows.map((row) => `| ${row} |`),
    "",
    totalsLine(results),
  ].join("\n");
}

export function totalsLine(results: readonly CorpusResult[]): string {
  const count = (test: (result: CorpusResult) => boolean) => results.filter(test).length;
  const perAnchor = [...new Set(results.map(({ entry }) => entry.source.anchor))].map(
    (anchor) => `${anchor} ${count(({ entry }) => entry.source.anchor === anchor)}`,
  );
  const comparisons = (["agree", "stricter", "weaker"] as const).map(
    (comparison) => `${comparison} ${count((result) => result.comparison === comparison)}`,
  );
  return `Totals: ${results.length} commands (${perAnchor.join(", ")}): ${comparisons.join(", ")}.`;
}

/** `doc` with the section between the markers replaced by `table`. */
export function withCorpusTable(doc: string, table: string): string {
  const { start, end } = sectionRange(doc);
  return `${doc.slice(0, start)}\n${table}\n${doc.slice(end)}`;
}

/** The section between the markers, without the newlines next to them. */
export function corpusSection(doc: string): string {
  const { start, end } = sectionRange(doc);
  return doc.slice(start + 1, end - 1);
}

/** Where the section lies: after the start marker, up to the end marker. Throws when they are missing. */
function sectionRange(doc: string): { start: number; end: number } {
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`the corpus table's markers are missing: ${TABLE_START} … ${TABLE_END}`);
  return { start: start + TABLE_START.length, end };
}

function sourceCell(entry: CorpusEntry): string {
  const where = `${entry.source.anchor} ${shortSource(entry.source)}`;
  return entry.note === undefined ? where : `${where} (${cell(entry.note)})`;
}

function shortSource(source: CorpusSource): string {
  return `${basename(source.path)}@${source.commit.slice(0, 7)}`;
}

function settingCell(setting: CorpusSetting): string {
  const parts: string[] = [setting.mode satisfies ApprovalMode];
  for (const rule of setting.rules ?? []) {
    const priority = rule.priority ? ` @${rule.priority}` : "";
    parts.push(`user ${rule.decision} ${rule.pattern === undefined ? "any command" : code(rule.pattern)}${priority}`);
  }
  for (const command of setting.always ?? []) parts.push(`always ${code(command)}`);
  const note = setting.note === undefined ? "" : ` (anchor: ${cell(setting.note)})`;
  return parts.join("; ") + note;
}

/** Text as a code span in a table cell: pipes escaped, newlines shown as ⏎, fenced by enough backticks. */
function code(text: string): string {
  const fence = text.includes("`") ? "``" : "`";
  const padded = fence.length > 1 ? ` ${text} ` : text;
  return `${fence}${cell(padded)}${fence}`;
}

function cell(text: string): string {
  return text.replaceAll("|", String.raw`\|`).replaceAll("\n", "⏎");
}
