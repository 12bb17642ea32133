import { z } from "zod";
import { binaryFileError, countLines, existingFile, isBinary, numberLines } from "./read-file.js";
import { fileStamp, readChecked, stampOf, writeChecked } from "./checked-file.js";
import { ToolError, type ToolContext, type ToolDefinition } from "./types.js";

const SNIPPET_CONTEXT_LINES = 3;
const SNIPPET_MAX_LINES = 30;
const LISTED_LINES_MAX = 10;

function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

function lineAt(text: string, index: number): number {
  return countLines(text.slice(0, index + 1));
}

/**
 * The strings to use on a CRLF file when the model wrote LF line breaks (read_file does not show
 * the CRs): the file keeps its own line endings.
 */
function adaptToLineEndings(text: string, oldString: string, newString: string): { oldString: string; newString: string; note: string } {
  const unchanged = { oldString, newString, note: "" };
  if (!text.includes("\r\n") || !/(^|[^\r])\n/.test(oldString) || text.includes(oldString)) return unchanged;
  const toCrlf = (s: string) => s.replace(/\r?\n/g, "\r\n");
  if (!text.includes(toCrlf(oldString))) return unchanged;
  return { oldString: toCrlf(oldString), newString: toCrlf(newString), note: " (the file's CRLF line endings were kept)" };
}

function notFoundError(text: string, oldString: string, relativePath: string): ToolError {
  const squash = (s: string) => s.replace(/\s+/g, " ").trim();
  let hint = "read the file again to see its current contents, then copy the exact text to replace";
  if (oldString.split("\n").every((line) => /^\s*\d+\t/.test(line))) {
    hint = "old_string seems to include read_file's line-number prefixes; pass only the file's own text";
  } else if (squash(text).includes(squash(oldString))) {
    hint = "the text exists but differs in whitespace (indentation, tabs vs spaces or line breaks); copy it exactly from read_file";
  }
  return new ToolError("not_found", `old_string was not found in ${relativePath}: ${hint}`);
}

function notUniqueError(text: string, positions: number[], relativePath: string): ToolError {
  const lines = positions.slice(0, LISTED_LINES_MAX).map((at) => lineAt(text, at));
  const more = positions.length > LISTED_LINES_MAX ? ", ..." : "";
  return new ToolError(
    "not_unique",
    `old_string occurs ${positions.length} times in ${relativePath} (at lines ${lines.join(", ")}${more}): ` +
      "include more surrounding lines to make it unique, or set replace_all to replace every occurrence",
  );
}

/** The edited region of `text` (which starts at `at` and spans `length` characters) with a few lines around it. */
function snippet(text: string, at: number, length: number): string {
  const firstChanged = lineAt(text, at);
  const lastChanged = Math.max(firstChanged, lineAt(text, at + length - 1));
  const lines = text.split("\n");
  const from = Math.max(1, firstChanged - SNIPPET_CONTEXT_LINES);
  const to = Math.min(countLines(text), lastChanged + SNIPPET_CONTEXT_LINES, from + SNIPPET_MAX_LINES - 1);
  return to < from ? "" : `\nLines ${from}-${to} now read:\n${numberLines(lines.slice(from - 1, to), from)}`;
}

const schema = z.strictObject({
  path: z.string().min(1).describe("File path, relative to the workspace root"),
  old_string: z
    .string()
    .min(1, "old_string must not be empty (to create a file, use write_file)")
    .describe("Exact text to replace, whitespace included"),
  new_string: z.string().describe("Replacement text"),
  replace_all: z.boolean().optional().describe("Replace every occurrence instead of requiring exactly one (default false)"),
});

export const editFileTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "edit_file",
  description:
    "Replace exact text in an existing file. old_string must match the file exactly (whitespace and indentation " +
    "included, without read_file's line numbers) and occur exactly once, unless replace_all is true. Include enough " +
    "surrounding lines to make it unique. Read the file with read_file first in this turn: an edit of a file not read, " +
    "or changed on disk since it was read, is refused.",
  effect: "edit",
  subject: { path: "path" },
  schema,
  async run(args, ctx) {
    const { file, updated, positions, newString, note } = await planEdit(args, ctx);
    await writeChecked(file.absolute, file.relative, updated);
    const summary = `Edited ${file.relative}: replaced ${positions.length} occurrence${positions.length === 1 ? "" : "s"}${note}.`;
    const shown = positions.length === 1 ? snippet(updated, positions[0]!, newString.length) : "";
    return { content: summary + shown, filesChanged: [file.relative], fileStamps: { [file.relative]: await stampOf(file.absolute) } };
  },
  async preview(args, ctx) {
    const { file, text, updated } = await planEdit(args, ctx);
    return { path: file.relative, before: text, after: updated };
  },
};

/** An edit needs the file as the model last saw it: read in this turn, and not changed on disk since (by a command, by the user). */
function checkReadBefore(relative: string, stamp: string, read: ToolContext["fileStamps"]): void {
  if (read === undefined) return;
  const seen = read[relative];
  if (seen === undefined)
    throw new ToolError("not_read", `${relative} was not read in this turn: read it with read_file first, then edit it`);
  if (seen !== stamp)
    throw new ToolError(
      "not_read",
      `${relative} changed on disk since you read it: read it again with read_file, then edit the text as it is now`,
    );
}

/** The edit the call asks for, checked against the file as it is now; nothing is written. */
async function planEdit(args: z.infer<typeof schema>, ctx: ToolContext) {
  if (args.old_string === args.new_string) {
    throw new ToolError("invalid_arguments", "old_string and new_string are identical: there is nothing to change");
  }
  const file = await existingFile(ctx.workspace, args.path);
  checkReadBefore(file.relative, fileStamp(file.stats), ctx.fileStamps);
  const bytes = await readChecked(file.absolute, file.relative);
  if (isBinary(bytes)) throw binaryFileError(file.relative);
  const text = bytes.toString("utf8");
  if (!Buffer.from(text, "utf8").equals(bytes)) {
    throw new ToolError("failed", `${file.relative} is not valid UTF-8 text; editing it here would corrupt it, use shell instead`);
  }

  const { oldString, newString, note } = adaptToLineEndings(text, args.old_string, args.new_string);
  const positions = occurrences(text, oldString);
  if (positions.length === 0) throw notFoundError(text, oldString, file.relative);
  if (positions.length > 1 && !args.replace_all) throw notUniqueError(text, positions, file.relative);

  const updated = text.split(oldString).join(newString);
  return { file, text, updated, positions, newString, note };
}
