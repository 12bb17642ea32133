import { z } from "zod";
import { checkRegularFile, fileStamp, openForReading } from "./checked-file.js";
import { LINE_STEP, LineIndexes } from "./line-index.js";
import { ToolError, type ToolDefinition } from "./types.js";
import { statInWorkspace, type ExistingPath } from "./workspace-paths.js";

const DEFAULT_LINE_LIMIT = 2000;
/** Larger files must be read in windows (offset/limit). */
const WHOLE_FILE_MAX_BYTES = 1024 * 1024;
const MAX_LINE_CHARS = 2000;
/** Bytes of one line kept for display; the rest of a longer line is skipped unread into memory. */
const MAX_LINE_BYTES_KEPT = 4 * MAX_LINE_CHARS;
/** Bytes read at a time while streaming a window. */
const READ_CHUNK_BYTES = 1024 * 1024;
/** As git does: a NUL byte among the first 8000 bytes marks a binary file. */
const BINARY_SNIFF_BYTES = 8000;

export function isBinary(start: Buffer): boolean {
  return start.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** Lines as read_file numbers them: split on LF, a final LF does not start another line. */
export function countLines(text: string): number {
  return text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/** A file the text tools may read: it exists, and is a regular file with one link (else a clear ToolError). */
export async function existingFile(workspace: string, path: string): Promise<ExistingPath> {
  const file = await statInWorkspace(workspace, path);
  if (file.stats.isDirectory()) throw new ToolError("invalid_arguments", `${file.relative} is a directory, not a file: use list_dir`);
  checkRegularFile(file.stats, file.relative);
  return file;
}

export function binaryFileError(relativePath: string): ToolError {
  return new ToolError("failed", `${relativePath} is a binary file (it contains NUL bytes); inspect it with shell instead`);
}

/** `cat -n` style: the line number right-aligned in 6 columns, a tab, the line (a CR before its LF is not shown). */
export function numberLines(lines: readonly string[], firstLineNumber: number): string {
  return lines
    .map((line, index) => {
      const text = line.endsWith("\r") ? line.slice(0, -1) : line;
      const shown = text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}... [line cut at ${MAX_LINE_CHARS} characters]` : text;
      return `${String(firstLineNumber + index).padStart(6)}\t${shown}`;
    })
    .join("\n");
}

interface LineWindow {
  lines: string[];
  /** Lines in the file, when it was read to the end. */
  total?: number;
}

/**
 * Lines `first` .. `first + count - 1` (1-based) of a file, streamed so that a window of a huge
 * file costs only the bytes up to it, or, for a file `indexes` knows, from the indexed line
 * nearest before it. Lines are split on LF only. With `readToEnd` the rest of the file is
 * scanned to count its lines.
 */
async function readLineWindow(
  file: ExistingPath,
  first: number,
  count: number,
  readToEnd: boolean,
  indexes: LineIndexes,
): Promise<LineWindow> {
  const last = first + count - 1;
  const lines: string[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;

  const { handle, stats } = await openForReading(file.absolute, file.relative);
  let from = { line: 1, byte: 0 };
  let record: ((line: number, byte: number) => void) | undefined;
  try {
    const start = Buffer.alloc(Math.min(BINARY_SNIFF_BYTES, stats.size));
    await handle.read(start, 0, start.length, 0);
    if (isBinary(start)) throw binaryFileError(file.relative);
    if (!readToEnd) {
      from = indexes.nearest(stats, first);
      const before = Buffer.alloc(1);
      if (from.byte > 0 && ((await handle.read(before, 0, 1, from.byte - 1)).bytesRead !== 1 || before[0] !== 0x0a)) {
        indexes.forget(stats);
        from = { line: 1, byte: 0 };
      }
      record = indexes.recorder(stats);
    }
  } catch (error) {
    await handle.close();
    throw error;
  }
  let lineNumber = from.line - 1;
  const keep = (part: Buffer) => {
    if (lineNumber + 1 < first || lineNumber + 1 > last || pendingBytes >= MAX_LINE_BYTES_KEPT) return;
    pending.push(part);
    pendingBytes += part.length;
  };
  const endLine = () => {
    lineNumber++;
    if (lineNumber >= first && lineNumber <= last) lines.push(Buffer.concat(pending).toString("utf8"));
    pending = [];
    pendingBytes = 0;
  };

  const stream = handle.createReadStream({ start: from.byte, highWaterMark: READ_CHUNK_BYTES });
  try {
    let trailing = false;
    let chunkOffset = from.byte;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0;
      // Lines before the window: only counted (and indexed).
      for (let newline = chunk.indexOf(0x0a); lineNumber + 1 < first && newline !== -1; newline = chunk.indexOf(0x0a, start)) {
        lineNumber++;
        start = newline + 1;
        if (record && lineNumber % LINE_STEP === 0) record(lineNumber + 1, chunkOffset + start);
      }
      for (let newline = chunk.indexOf(0x0a, start); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
        keep(chunk.subarray(start, newline));
        endLine();
        start = newline + 1;
        if (record && lineNumber % LINE_STEP === 0) record(lineNumber + 1, chunkOffset + start);
        if (lineNumber === last && !readToEnd) {
          return chunkOffset + start < file.stats.size ? { lines } : { lines, total: lineNumber };
        }
      }
      chunkOffset += chunk.length;
      trailing = start < chunk.length;
      if (trailing) keep(chunk.subarray(start));
    }
    if (trailing) endLine();
    return { lines, total: lineNumber };
  } finally {
    stream.destroy();
  }
}

const schema = z.strictObject({
  path: z.string().min(1).describe("File path, relative to the workspace root"),
  offset: z.number().int().min(1).optional().describe("1-based line number to start at (default 1)"),
  limit: z.number().int().min(1).optional().describe(`Number of lines to read (default ${DEFAULT_LINE_LIMIT})`),
});

export interface ReadFileToolOptions {
  /** Where lines start in the large files read (default: the process's own, see line-index.ts). */
  lineIndexes?: LineIndexes;
}

export function createReadFileTool(options: ReadFileToolOptions = {}): ToolDefinition<z.infer<typeof schema>> {
  const indexes = options.lineIndexes ?? new LineIndexes();
  return {
    name: "read_file",
    description:
      `Read a text file of the workspace. Returns its lines numbered like \`cat -n\` (line number, tab, line); ` +
      `the numbers are not part of the file. Reads up to ${DEFAULT_LINE_LIMIT} lines from the start unless offset/limit ` +
      `say otherwise; files over 1 MiB must be read in parts with offset and limit. Also reads saved tool outputs ` +
      `(.loopgraph/artifacts/...) that other results point to.`,
    effect: "read",
    subject: { path: "path" },
    schema,
    async run({ path, offset, limit }, ctx) {
      const file = await existingFile(ctx.workspace, path);
      const wholeFile = file.stats.size <= WHOLE_FILE_MAX_BYTES;
      if (!wholeFile && offset === undefined && limit === undefined) {
        const mib = (file.stats.size / (1024 * 1024)).toFixed(1);
        throw new ToolError(
          "invalid_arguments",
          `${file.relative} is ${mib} MiB; files over 1 MiB must be read in parts: pass offset and limit (e.g. offset 1, limit ${DEFAULT_LINE_LIMIT})`,
        );
      }
      const first = offset ?? 1;
      const window = await readLineWindow(file, first, limit ?? DEFAULT_LINE_LIMIT, wholeFile, indexes);
      // Read (any part of it): edit_file may change it now, as long as it stays as it was.
      const fileStamps = { [file.relative]: fileStamp(file.stats) };
      if (window.total === 0) return { content: `(${file.relative} is empty)`, fileStamps };
      if (window.lines.length === 0) {
        throw new ToolError("invalid_arguments", `offset ${first} is past the end of ${file.relative} (${window.total} lines)`);
      }
      const lastShown = first + window.lines.length - 1;
      const body = numberLines(window.lines, first);
      if (window.total === undefined) {
        return { content: `${body}\n(lines ${first}-${lastShown}; the file continues: read on with offset ${lastShown + 1})`, fileStamps };
      }
      if (first > 1 || lastShown < window.total) {
        const more = lastShown < window.total ? `; read on with offset ${lastShown + 1}` : "";
        return { content: `${body}\n(lines ${first}-${lastShown} of ${window.total}${more})`, fileStamps };
      }
      return { content: body, fileStamps };
    },
  };
}

export const readFileTool = createReadFileTool();
