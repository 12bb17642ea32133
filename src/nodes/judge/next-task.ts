/**
 * The text of a next task the Judge hands on: its lead (the model's `nextTask`, or the rules'),
 * then the context the Coder needs to read it, each part under its own `## ` heading: the loop's
 * original task, what the round just judged did, the review's substantive comments, and the
 * messages the user queued. The looper's `[AUTO]` line shows it as its lead's first line and the
 * names of its context parts.
 */
import type { CoderResult } from "../coder/types.js";
import type { ReviewResult } from "../../state/looper.js";
import { isDiffStatComment } from "../review/checks.js";

/** What a next task's context is made of; every part is optional. */
export interface NextTaskContext {
  /** The loop's original task (its first round's); left out when the lead is that task. */
  originalTask?: string;
  /** The round just judged. */
  round?: number;
  coder?: CoderResult;
  review?: ReviewResult;
  /** Queued messages to list under their own heading (the pending rule puts them in the lead instead). */
  queued?: readonly string[];
}

/** The context headings, in order, with the short name the `[AUTO]` line gives each. */
const HEADINGS = {
  original: { title: "Original task", short: "original task" },
  done: { title: "Done so far", short: "what was done" },
  comments: { title: "Review comments to address", short: "review comments" },
  queued: { title: "Queued by the user", short: "queued" },
} as const;

const SUMMARY_MAX_CHARS = 600;
/**
 * The longest original task a next task repeats whole. The Judge's result (its next task
 * included) lives in `outputs`, which is stored at every step: a huge task must not be copied
 * there at every step.
 */
export const ORIGINAL_TASK_MAX_CHARS = 8_000;
const FILES_LISTED = 10;

/** The lead, then each context part that has something to say, as one text. */
export function withTaskContext(lead: string, context: NextTaskContext): string {
  const parts = [lead.trim()];
  const original = context.originalTask?.trim();
  if (original && original !== lead.trim()) parts.push(section(HEADINGS.original.title, clipOriginal(original)));
  const done = describeDone(context.round, context.coder);
  if (done) parts.push(section(HEADINGS.done.title, done));
  const comments = substantiveComments(context.review);
  if (comments.length > 0) {
    parts.push(section(`${HEADINGS.comments.title} (the review rated the work ${context.review!.rating})`, bullets(comments)));
  }
  if (context.queued && context.queued.length > 0) parts.push(section(HEADINGS.queued.title, bullets(context.queued)));
  return parts.join("\n\n");
}

/** A next task with more queued messages listed under its "Queued by the user" heading (the last part of a task's context). */
export function withMoreQueued(task: string, queued: readonly string[]): string {
  if (queued.length === 0) return task;
  const listed = sectionBody(task, HEADINGS.queued.title) !== undefined;
  return listed ? `${task.trimEnd()}\n${bullets(queued)}` : `${task.trimEnd()}\n\n${section(HEADINGS.queued.title, bullets(queued))}`;
}

/**
 * The review's comments the Coder can act on: all but the git_diff check's notes on the diff's
 * size (a diff stat tells the Coder nothing to do).
 */
export function substantiveComments(review: ReviewResult | undefined): string[] {
  return (review?.comments ?? []).filter((comment) => !isDiffStatComment(comment));
}

/** A task without the context a previous Judge appended: what that round was asked to do. */
export function leadOf(task: string): string {
  const index = task.search(CONTEXT_START);
  return index === -1 ? task : task.slice(0, index).trimEnd();
}

/**
 * A task as one log line: its lead's first line (with "…" when the lead goes on), then the
 * context it carries, e.g. `fix the typos (with context: original task, review comments, 1 queued)`.
 */
export function briefTask(task: string): string {
  const lines = leadOf(task)
    .split("\n")
    .filter((line) => line.trim() !== "");
  const first = (lines[0] ?? "").trim();
  return `${lines.length > 1 ? `${first} …` : first}${contextNote(task)}`;
}

/** " (with context: original task, what was done, review comments, 1 queued)" for a task that carries context; "" otherwise. */
export function contextNote(task: string): string {
  const carried = Object.values(HEADINGS).flatMap(({ title, short }) => {
    const body = sectionBody(task, title);
    if (body === undefined) return [];
    return title === HEADINGS.queued.title ? [`${body.split("\n").filter((line) => line.startsWith("- ")).length} ${short}`] : [short];
  });
  return carried.length > 0 ? ` (with context: ${carried.join(", ")})` : "";
}

const CONTEXT_START = new RegExp(
  `\\n\\n## (?:${Object.values(HEADINGS)
    .map(({ title }) => escape(title))
    .join("|")})\\b`,
);

function describeDone(round: number | undefined, coder: CoderResult | undefined): string | undefined {
  if (!coder) return undefined;
  const inRound = round === undefined ? "" : ` in round ${round}`;
  const files = coder.filesChanged;
  const lines = [
    coder.status === "success"
      ? `The Coder finished${inRound}.`
      : `The Coder failed${inRound} (${coder.failureKind ?? "unknown"}${coder.failureReason ? `: ${oneLine(coder.failureReason, 200)}` : ""}).`,
    `Files changed: ${files.length === 0 ? "none" : files.slice(0, FILES_LISTED).join(", ") + (files.length > FILES_LISTED ? ` and ${files.length - FILES_LISTED} more` : "")}`,
  ];
  if (coder.summary.trim()) lines.push(`Its summary: ${oneLine(coder.summary, SUMMARY_MAX_CHARS)}`);
  return lines.join("\n");
}

/** The body of the context section titled `title` (the title may carry a parenthesised note), if the task has it. */
function sectionBody(task: string, title: string): string | undefined {
  const match = new RegExp(`\\n\\n## ${escape(title)}(?: \\([^\\n]*\\))?\\n`).exec(task);
  if (!match) return undefined;
  const rest = task.slice(match.index + match[0].length);
  const end = rest.search(/\n\n## /);
  return end === -1 ? rest : rest.slice(0, end);
}

function clipOriginal(task: string): string {
  if (task.length <= ORIGINAL_TASK_MAX_CHARS) return task;
  return `${task.slice(0, ORIGINAL_TASK_MAX_CHARS)}\n[… cut here: ${task.length - ORIGINAL_TASK_MAX_CHARS} more characters of the original task]`;
}

const section = (title: string, body: string): string => `## ${title}\n${body}`;

/** One bullet per item; an item's further lines are indented under its bullet. */
const bullets = (items: readonly string[]): string => items.map((item) => `- ${item.trim().replace(/\n/g, "\n  ")}`).join("\n");

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
