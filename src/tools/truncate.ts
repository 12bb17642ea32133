import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { redactValues } from "../runs/redact.js";
import type { FullOutput, TextSize, ToolContext } from "./types.js";
import { isInside, workspaceRelative } from "./workspace-paths.js";

export const DEFAULT_RESULT_BUDGET_CHARS = 30_000;

/** A cut prefers a line boundary when one lies in the last part of the kept span (this fraction). */
const LINE_BOUNDARY_WINDOW = 0.5;

export interface FittedResult {
  content: string;
  /** Absolute path of the complete text, when `content` is not all of it. */
  artifact?: string;
}

/** A unique file name for the output of one `label` call (e.g. `shell-20250101T120000-1a2b3c4d.txt`). */
export function artifactFileName(label: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  return `${label}-${stamp}-${randomBytes(4).toString("hex")}.txt`;
}

/** A fresh path under `artifactsDir` (created) for the full output of one `label` call. */
export async function newArtifactPath(artifactsDir: string, label: string): Promise<string> {
  await mkdir(artifactsDir, { recursive: true });
  return join(artifactsDir, artifactFileName(label));
}

function countNewlines(text: string): number {
  let count = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) count++;
  return count;
}

/** Lines as read_file numbers them: a final newline does not start another line. */
function lineCount(size: TextSize): number {
  return size.newlines + (size.bytes > 0 && !size.endsWithNewline ? 1 : 0);
}

function sizeOfText(text: string): TextSize {
  return { bytes: Buffer.byteLength(text), newlines: countNewlines(text), endsWithNewline: text.endsWith("\n") };
}

/** Adds `bytes` to `size` (a text growing as it is written). */
export function addToSize(size: TextSize, bytes: Buffer | string): void {
  const buffer = typeof bytes === "string" ? Buffer.from(bytes) : bytes;
  if (buffer.length === 0) return;
  size.bytes += buffer.length;
  for (let i = buffer.indexOf(0x0a); i !== -1; i = buffer.indexOf(0x0a, i + 1)) size.newlines++;
  size.endsWithNewline = buffer[buffer.length - 1] === 0x0a;
}

async function sizeOfFile(path: string): Promise<TextSize> {
  const size: TextSize = { bytes: 0, newlines: 0, endsWithNewline: false };
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) addToSize(size, chunk);
  return size;
}

/** The first `max` characters of `text`, ending after a newline when one is near the end. */
function headOf(text: string, max: number): string {
  const cut = text.lastIndexOf("\n", max - 1);
  return cut >= max * LINE_BOUNDARY_WINDOW ? text.slice(0, cut + 1) : text.slice(0, max);
}

/** Where the last `max` characters of `text` start, moved to a line start when one is near. */
function tailStart(text: string, max: number): number {
  const start = text.length - max;
  const newline = text.indexOf("\n", start - 1);
  return newline !== -1 && newline + 1 <= start + max * (1 - LINE_BOUNDARY_WINDOW) ? newline + 1 : start;
}

/**
 * The marker between head and tail. Line numbers refer to the full text, so the model can read
 * exactly the cut part; a line cut in its middle counts as cut.
 */
function cutMarker(head: string, tail: string, tailStartsLine: boolean, total: TextSize, where: string, viewOnlyLines: number): string {
  const firstCut = countNewlines(head) + 1 - viewOnlyLines;
  const lastCut = total.newlines - countNewlines(tail) + (tailStartsLine ? 0 : 1);
  const cutBytes = total.bytes - Buffer.byteLength(head) - Buffer.byteLength(tail);
  return (
    `[... ${cutBytes} bytes cut here (lines ${firstCut}-${lastCut} of ${lineCount(total)}); the full output is saved in ` +
    `${where}: read it with read_file, e.g. offset ${firstCut} ...]`
  );
}

/**
 * Keeps a tool result within the model's budget: a longer text keeps its head and tail with a
 * marker line between them saying what was cut and where the full text is saved (as a path
 * read_file accepts). `fullOutput`, when given, already holds the complete text, of which `text`
 * is only a view; it is then the artifact and nothing is written.
 */
export async function fitToBudget(result: string, ctx: ToolContext, label: string, fullOutput?: FullOutput): Promise<FittedResult> {
  // Neither the model nor the artifact gets a secret's value (a workspace file may hold one).
  const text = redactValues(result, ctx.secrets ?? []);
  const budget = ctx.resultBudgetChars ?? DEFAULT_RESULT_BUDGET_CHARS;
  if (fullOutput === undefined && text.length <= budget) return { content: text };

  const artifact = fullOutput?.file ?? (await newArtifactPath(ctx.artifactsDir, label));
  if (fullOutput === undefined) await writeFile(artifact, text);
  const where = isInside(ctx.workspace, artifact) ? workspaceRelative(ctx.workspace, artifact) : artifact;
  const total = fullOutput === undefined ? sizeOfText(text) : (fullOutput.size ?? (await sizeOfFile(fullOutput.file)));

  if (text.length <= budget) {
    return { content: `${text}${text.endsWith("\n") ? "" : "\n"}[full output (${total.bytes} bytes) saved in ${where}]`, artifact };
  }
  const half = Math.floor(budget / 2);
  const head = headOf(text, half);
  const start = tailStart(text, half);
  const tail = text.slice(start);
  const marker = cutMarker(head, tail, start === 0 || text[start - 1] === "\n", total, where, fullOutput?.viewOnlyLines ?? 0);
  return { content: `${head}${head.endsWith("\n") ? "" : "\n"}${marker}\n${tail}`, artifact };
}
