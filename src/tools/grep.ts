import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import picomatch from "picomatch";
import { z } from "zod";
import { refusal } from "./checked-file.js";
import { walkFiles } from "./ignore-rules.js";
import { throwIfCancelled, ToolError, type ToolContext, type ToolDefinition } from "./types.js";
import { statInWorkspace } from "./workspace-paths.js";

/*
 * Two engines, one result. Which files are searched is decided here, once, by the same walk as
 * glob and list_dir (ignore rules, always-skipped folders, dotfiles included, symlinks never
 * followed, files over MAX_FILE_BYTES left out); ripgrep only searches the listed files and the
 * in-process engine reads the same list. Both skip any file containing a NUL byte, split lines on
 * LF with a CR before it taken as part of the line ending (so `$` matches there), and report lines
 * in walk order. Their outputs are therefore identical except where the regex dialects differ:
 * - translated for JavaScript: `(?P<name>` groups and a leading `(?i)`;
 * - in-process only: look-around and backreferences;
 * - ripgrep only: POSIX classes (`[[:alpha:]]`), `\pL`-style escapes, Unicode-aware `\d` `\w` `\b`
 *   (ASCII in JavaScript), `.` matching U+2028/U+2029;
 * - invalid UTF-8 never matches `.` in ripgrep but is U+FFFD in-process.
 * The in-process engine runs on the main thread, so a catastrophically backtracking pattern can
 * stall it; ripgrep's engine cannot backtrack.
 */

const MAX_MATCHES = 500;
const MAX_FILE_BYTES = 10 * 1024 * 1024;
const MAX_SHOWN_LINE_CHARS = 500;
/** Command-line budget per ripgrep run (Linux allows 2 MiB in total, 128 KiB per argument). */
const RIPGREP_BATCH_CHARS = 100_000;
/** `LOOPGRAPH_RG=/path/to/rg` picks the ripgrep binary; `LOOPGRAPH_RG=off` forces the in-process engine. */
const RIPGREP_ENV = "LOOPGRAPH_RG";

interface GrepMatch {
  file: string;
  line: number;
  text: string;
}

interface GrepQuery {
  pattern: string;
  caseInsensitive: boolean;
}

/** Searches `files` (workspace-relative, in order) and returns their matching lines, stopping once `limit` is reached or passed. */
type GrepEngine = (query: GrepQuery, files: string[], ctx: ToolContext, limit: number) => Promise<GrepMatch[]>;

function matchOf(file: string, line: number, rawText: string): GrepMatch {
  const text = rawText.endsWith("\r") ? rawText.slice(0, -1) : rawText;
  if (text.length <= MAX_SHOWN_LINE_CHARS) return { file, line, text };
  return { file, line, text: `${text.slice(0, MAX_SHOWN_LINE_CHARS)}... [${text.length - MAX_SHOWN_LINE_CHARS} more characters]` };
}

// ---------------------------------------------------------------- ripgrep

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The ripgrep binary to use: `LOOPGRAPH_RG` when set (`off` or empty: none), else `rg` on the PATH. */
export function findRipgrep(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const override = env[RIPGREP_ENV];
  if (override !== undefined) return override === "" || override === "off" ? undefined : override;
  return (env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, "rg"))
    .find(isExecutableFile);
}

function batches(files: string[]): string[][] {
  const result: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const file of files) {
    if (current.length > 0 && size + file.length + 1 > RIPGREP_BATCH_CHARS) {
      result.push(current);
      current = [];
      size = 0;
    }
    current.push(file);
    size += file.length + 1;
  }
  if (current.length > 0) result.push(current);
  return result;
}

interface RipgrepData {
  text?: string;
  bytes?: string;
}

/** One line of `rg --json` output (the fields used here). */
interface RipgrepMessage {
  type: string;
  data: { path?: RipgrepData; lines?: RipgrepData; line_number?: number; binary_offset?: number | null };
}

function parseRipgrepMessage(line: string): RipgrepMessage | undefined {
  try {
    return JSON.parse(line) as RipgrepMessage;
  } catch {
    return undefined;
  }
}

function decodeRipgrepData(data: RipgrepData): string {
  return data.text ?? Buffer.from(data.bytes ?? "", "base64").toString("utf8");
}

/** Matches per file of one ripgrep run over `files`; files ripgrep found binary are left out. */
function runRipgrep(rg: string, query: GrepQuery, files: string[], ctx: ToolContext): Promise<Map<string, GrepMatch[]>> {
  const args = ["--json", "--no-config", "--no-mmap", "--encoding", "none", "--crlf", query.caseInsensitive ? "--ignore-case" : "--case-sensitive"];
  const child = spawn(rg, [...args, "--regexp", query.pattern, "--", ...files], { cwd: ctx.workspace, stdio: ["ignore", "pipe", "pipe"] });
  const onAbort = () => child.kill();
  ctx.signal?.addEventListener("abort", onAbort);
  const byFile = new Map<string, GrepMatch[]>();
  let stderr = "";
  let messages = 0;
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  createInterface({ input: child.stdout }).on("line", (line) => {
    messages++;
    const message = parseRipgrepMessage(line);
    if (!message?.data.path) return;
    const file = decodeRipgrepData(message.data.path);
    if (message.type === "match") {
      const text = decodeRipgrepData(message.data.lines ?? {}).replace(/\n$/, "");
      let matches = byFile.get(file);
      if (!matches) byFile.set(file, (matches = []));
      matches.push(matchOf(file, message.data.line_number ?? 0, text));
    } else if (message.type === "end" && message.data.binary_offset != null) {
      byFile.delete(file);
    }
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      ctx.signal?.removeEventListener("abort", onAbort);
      if (ctx.signal?.aborted) return resolve(byFile);
      // A bad pattern stops ripgrep before it prints anything; unreadable files only add warnings.
      if (code === 2 && messages === 0) return reject(new ToolError("invalid_arguments", `invalid pattern: ${stderr.trim()}`));
      resolve(byFile);
    });
  });
}

function ripgrepEngine(rg: string): GrepEngine {
  return async (query, files, ctx, limit) => {
    const matches: GrepMatch[] = [];
    for (const batch of batches(files)) {
      const byFile = await runRipgrep(rg, query, batch, ctx);
      throwIfCancelled(ctx.signal);
      for (const file of batch) matches.push(...(byFile.get(file) ?? []));
      if (matches.length >= limit) break;
    }
    return matches;
  };
}

// ---------------------------------------------------------------- in-process

/** A JavaScript RegExp for a ripgrep (Rust regex) pattern, as far as the dialects allow. */
export function compileRegex(pattern: string, caseInsensitive: boolean): RegExp {
  let source = pattern.replace(/\(\?P</g, "(?<");
  let flags = caseInsensitive ? "i" : "";
  if (source.startsWith("(?i)")) {
    source = source.slice(4);
    flags = "i";
  }
  try {
    return new RegExp(source, `${flags}u`);
  } catch {
    // Rust allows escaping any punctuation (`\-`, `\#`); only non-Unicode JavaScript regexes do too.
    try {
      return new RegExp(source, flags);
    } catch (error) {
      throw new ToolError("invalid_arguments", `invalid pattern: ${(error as Error).message}`);
    }
  }
}

const inProcessEngine: GrepEngine = async (query, files, ctx, limit) => {
  // Like ripgrep, which is never started without files, a pattern is only checked when there is something to search.
  if (files.length === 0) return [];
  const regex = compileRegex(query.pattern, query.caseInsensitive);
  const matches: GrepMatch[] = [];
  for (const file of files) {
    throwIfCancelled(ctx.signal);
    const bytes = await readFile(join(ctx.workspace, file)).catch(() => undefined);
    if (!bytes || bytes.includes(0)) continue;
    const lines = bytes.toString("utf8").split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    for (const [index, line] of lines.entries()) {
      // ripgrep runs with --crlf: a CR before the LF is part of the line ending, not of the line.
      if (regex.test(line.endsWith("\r") ? line.slice(0, -1) : line)) matches.push(matchOf(file, index + 1, line));
      if (matches.length >= limit) return matches;
    }
  }
  return matches;
};

// ---------------------------------------------------------------- the tool

interface Candidates {
  files: string[];
  tooLarge: string[];
  /** Files the file tools refuse (hard-linked: another link may be outside the workspace). */
  refused: string[];
}

async function candidateFiles(ctx: ToolContext, root: string, glob: string | undefined): Promise<Candidates> {
  const inGlob = glob === undefined ? () => true : picomatch(glob, { dot: true, basename: true });
  const candidates: Candidates = { files: [], tooLarge: [], refused: [] };
  for await (const file of walkFiles(ctx.workspace, root, ctx.signal)) {
    if (file.isSymlink || !inGlob(file.relative)) continue;
    const stats = await stat(file.absolute);
    if (!stats.isFile()) continue;
    if (refusal(stats, file.relative) !== undefined) {
      candidates.refused.push(file.relative);
      continue;
    }
    (stats.size > MAX_FILE_BYTES ? candidates.tooLarge : candidates.files).push(file.relative);
  }
  return candidates;
}

function report(matches: GrepMatch[], candidates: Candidates, where: string): string {
  const notes: string[] = [];
  if (candidates.tooLarge.length > 0) {
    notes.push(`(not searched, over ${MAX_FILE_BYTES / (1024 * 1024)} MiB: ${candidates.tooLarge.join(", ")})`);
  }
  if (candidates.refused.length > 0) {
    notes.push(`(not searched, hard-linked: another link may be a file outside the workspace: ${candidates.refused.join(", ")})`);
  }
  if (matches.length === 0) return [`No matches ${where}`, ...notes].join("\n");
  const shown = matches.slice(0, MAX_MATCHES);
  const files = new Set(shown.map((match) => match.file)).size;
  const header =
    matches.length > MAX_MATCHES
      ? `Showing the first ${MAX_MATCHES} matching lines (in ${files} files); there are more: narrow the pattern, path or glob`
      : `${shown.length} matching line${shown.length === 1 ? "" : "s"} in ${files} file${files === 1 ? "" : "s"}`;
  return [header, ...shown.map((match) => `${match.file}:${match.line}:${match.text}`), ...notes].join("\n");
}

const schema = z.strictObject({
  pattern: z.string().describe("Regular expression (ripgrep / Rust syntax), matched against each line"),
  path: z.string().min(1).optional().describe("File or directory to search, relative to the workspace root (default: the root)"),
  glob: z
    .string()
    .min(1)
    .optional()
    .describe('Only search files matching this glob: without a slash it matches file names ("*.ts"), with one workspace-relative paths ("src/**/*.ts")'),
  case_insensitive: z.boolean().optional().describe("Ignore case (default false)"),
});

export interface GrepToolOptions {
  /** The ripgrep binary; null forces the in-process engine; undefined looks it up (see findRipgrep). */
  ripgrep?: string | null;
}

export function createGrepTool(options: GrepToolOptions = {}): ToolDefinition<z.infer<typeof schema>> {
  return {
    name: "grep",
    description:
      "Search file contents with a regular expression. Returns matching lines as `path:line:text`, files in path order, " +
      `at most ${MAX_MATCHES} lines. Searches the files glob would list: .gitignore is respected, dotfiles are searched, ` +
      "binary files are skipped.",
    effect: "read",
    subject: { path: "path", fallback: "." },
    schema,
    async run({ pattern, path = ".", glob, case_insensitive = false }, ctx) {
      const root = await statInWorkspace(ctx.workspace, path);
      const ripgrep = options.ripgrep === undefined ? findRipgrep() : options.ripgrep ?? undefined;
      const engine = ripgrep ? ripgrepEngine(ripgrep) : inProcessEngine;
      const candidates = await candidateFiles(ctx, root.absolute, glob);
      const matches = await engine({ pattern, caseInsensitive: case_insensitive }, candidates.files, ctx, MAX_MATCHES + 1);
      const where = `for ${JSON.stringify(pattern)} in ${root.relative}${glob ? ` (files matching ${glob})` : ""}`;
      return { content: report(matches, candidates, where) };
    },
  };
}

export const grepTool = createGrepTool();
