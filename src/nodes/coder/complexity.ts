/**
 * Task-complexity analysis for the Coder: before its first model call, the task is classified
 * simple, moderate or complex by rules (no model call), and the matching strategy goes into the
 * Coder's prompt. The indicators: words of the task (create a / fix typo / rename lean simple;
 * implement / fix bug / add feature moderate; refactor / migrate / architecture complex), how many
 * files and steps it names, and its length. Pure and deterministic: a resumed or replayed turn
 * classifies its task the same way.
 */

export type ComplexityLevel = "simple" | "moderate" | "complex";

export interface ComplexityAnalysis {
  level: ComplexityLevel;
  /** 0.5–0.95: how clearly the indicators point at the level. */
  confidence: number;
  /** What the level was read from, in a few words each (`"refactor" (complex)`, `4 files named`). */
  indicators: string[];
}

/** The `complexity:` option of a coder node: `auto` analyses each turn's task, `off` leaves the prompt as it is. */
export const COMPLEXITY_MODES = ["auto", "off"] as const;
export type ComplexityMode = (typeof COMPLEXITY_MODES)[number];

interface Keyword {
  /** Matched case-insensitively, on word boundaries for Latin text. */
  text: string;
  weight: number;
  /** What is matched when not the text itself: a stem for its inflections (`migrat`: migrate, migration). */
  stem?: string;
}

/** Words of tasks done at once: the weight subtracted from the score (the strongest one found counts). */
const SIMPLE_WORDS: readonly Keyword[] = [
  { text: "typo", weight: 3 },
  { text: "rename", weight: 2 },
  { text: "create a", weight: 2 },
  { text: "make a", weight: 2 },
  { text: "write a", weight: 2 },
  { text: "snake game", weight: 2 },
  { text: "calculator", weight: 2 },
  { text: "hello world", weight: 2 },
  { text: "single file", weight: 2 },
  { text: "one file", weight: 2 },
  { text: "one-line", weight: 2 },
  { text: "bump the version", weight: 2 },
  { text: "创建一个", weight: 2 },
  { text: "贪吃蛇", weight: 2 },
  { text: "重命名", weight: 2 },
  { text: "拼写", weight: 3 },
];

/** Words of ordinary features and fixes: the score rises by one when any is found. */
const MODERATE_WORDS: readonly Keyword[] = [
  "add support",
  "implement",
  "bug",
  "feature",
  "endpoint",
  "integrate",
  "validation",
  "tests for",
  "添加功能",
  "修复",
  "实现",
].map((text) => ({ text, weight: 1 }));

/** Words of work across a codebase: the strongest one found counts, one more for a second. */
const COMPLEX_WORDS: readonly Keyword[] = [
  { text: "refactor", weight: 4 },
  { text: "migrate", weight: 4, stem: "migrat" },
  { text: "architecture", weight: 4 },
  { text: "redesign", weight: 4 },
  { text: "rewrite", weight: 4 },
  { text: "overhaul", weight: 4 },
  { text: "重构", weight: 4 },
  { text: "迁移", weight: 4 },
  { text: "架构", weight: 4 },
  { text: "system", weight: 2 },
  { text: "framework", weight: 2 },
  { text: "across the codebase", weight: 3 },
  { text: "whole codebase", weight: 3 },
  { text: "every module", weight: 3 },
  { text: "all modules", weight: 3 },
  { text: "系统", weight: 2 },
];

/** A path with an extension, or a folder path (`src/engine/`). */
const FILE_PATTERN = /(?:^|[\s`'"(])((?:[\w.-]+\/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5}|(?:[\w.-]+\/)+[\w.-]*)(?=$|[\s`'"),:;!?]|\.(?:\s|$))/g;
/** A numbered or bulleted line of a list. */
const LIST_ITEM = /^\s*(?:\d{1,2}[.)]|[-*\u2022])\s+\S/gm;
/** Words that chain steps in prose (and their Chinese: 然后, 接着, 最后). */
const SEQUENCE_WORDS = /\b(?:then|after that|afterwards|finally|next,)\b|\u7136\u540e|\u63a5\u7740|\u6700\u540e/gi;
const CJK = /[\u3400-\u9fff]/g;
const HAS_CJK = /[\u3400-\u9fff]/;

const SCORE_SIMPLE_AT_MOST = -1;
const SCORE_COMPLEX_AT_LEAST = 3;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function found(task: string, words: readonly Keyword[]): Keyword[] {
  return words.filter(({ text, stem = text }) =>
    // A word and its inflections (refactor → refactoring), never inside another word; CJK text as it is.
    HAS_CJK.test(stem) ? task.includes(stem) : new RegExp(`(?<![\\w-])${escapeRegExp(stem)}`, "i").test(task),
  );
}

/** How many words the task has: Latin words, and CJK characters two to a word. */
function wordCount(task: string): number {
  const cjk = task.match(CJK)?.length ?? 0;
  const latin = task.replace(CJK, " ").split(/\s+/).filter(Boolean).length;
  return latin + Math.ceil(cjk / 2);
}

/** The files a task names (distinct paths). */
export function filesNamed(task: string): string[] {
  return [...new Set([...task.matchAll(FILE_PATTERN)].map((match) => match[1]!))].filter((path) => !/^\d+(\.\d+)+$/.test(path));
}

/** The steps a task lists: list items, or prose chained with "then", whichever is more. */
function stepsNamed(task: string): number {
  const items = task.match(LIST_ITEM)?.length ?? 0;
  const chained = (task.match(SEQUENCE_WORDS)?.length ?? 0) + 1;
  return Math.max(items, chained === 1 ? 0 : chained);
}

/** Classifies a task by the rules above: its level, how sure, and what it was read from. */
export function analyzeComplexity(task: string): ComplexityAnalysis {
  const indicators: string[] = [];
  let score = 0;
  const simple = found(task, SIMPLE_WORDS);
  if (simple.length > 0) {
    score -= Math.max(...simple.map((word) => word.weight));
    indicators.push(...simple.map((word) => `"${word.text}" (simple)`));
  }
  const moderate = found(task, MODERATE_WORDS);
  if (moderate.length > 0) {
    score += 1;
    indicators.push(...moderate.map((word) => `"${word.text}" (moderate)`));
  }
  const complex = found(task, COMPLEX_WORDS);
  if (complex.length > 0) {
    score += Math.max(...complex.map((word) => word.weight)) + (complex.length > 1 ? 1 : 0);
    indicators.push(...complex.map((word) => `"${word.text}" (complex)`));
  }
  const files = filesNamed(task).length;
  if (files >= 3) {
    score += files >= 5 ? 2 : 1;
    indicators.push(`${files} files named`);
  }
  const steps = stepsNamed(task);
  if (steps >= 3) {
    score += steps >= 5 ? 2 : 1;
    indicators.push(`${steps} steps listed`);
  }
  const words = wordCount(task);
  if (words <= 10) {
    score -= 1;
    indicators.push(`short task (${words} word${words === 1 ? "" : "s"})`);
  } else if (words > 60) {
    score += words > 150 ? 2 : 1;
    indicators.push(`long task (${words} words)`);
  }
  const level: ComplexityLevel = score <= SCORE_SIMPLE_AT_MOST ? "simple" : score >= SCORE_COMPLEX_AT_LEAST ? "complex" : "moderate";
  // How far the score is from the nearest other level, and how many indicators there were.
  const margin =
    level === "simple"
      ? SCORE_SIMPLE_AT_MOST - score
      : level === "complex"
        ? score - SCORE_COMPLEX_AT_LEAST
        : Math.min(score - SCORE_SIMPLE_AT_MOST - 1, SCORE_COMPLEX_AT_LEAST - 1 - score);
  const confidence = Math.min(0.95, 0.55 + 0.1 * margin + 0.05 * Math.min(indicators.length, 4));
  return { level, confidence: Math.round(confidence * 100) / 100, indicators };
}

/** The strategy of each level, as the Coder's prompt gives it. */
const STRATEGIES: Readonly<Record<ComplexityLevel, string>> = {
  simple:
    "This task looks simple. Do not plan: no todo list. Act at once: read only what you must, make the change " +
    "(write_file or edit_file), check it, and answer. Aim for 1–3 tool calls.",
  moderate:
    "This task looks moderate. Write a short plan of 3–5 items with todo_write, then work through it, keeping each " +
    "item's status current (one in_progress at a time). Aim for about 5–10 tool calls.",
  complex:
    "This task looks complex. Before changing anything, write a full plan with todo_write, in phases " +
    "(for example: investigate, change, verify), a few items each; work phase by phase, keep the statuses current, " +
    "save what you learn as findings, and check each phase before starting the next. Expect 10–30 or more tool calls.",
};

/** The prompt section of an analysis: the level, its confidence, and what to do. */
export function strategySection(analysis: ComplexityAnalysis): string {
  const percent = Math.round(analysis.confidence * 100);
  return `# Task strategy: ${analysis.level} (confidence ${percent}%)\n${STRATEGIES[analysis.level]}`;
}

/** A few words for logs: `simple task, 85% sure`. */
export function describeComplexity(analysis: Pick<ComplexityAnalysis, "level" | "confidence">): string {
  return `${analysis.level} task, ${Math.round(analysis.confidence * 100)}% sure`;
}
