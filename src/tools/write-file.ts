import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { countLines } from "./read-file.js";
import { ToolError, type ToolDefinition } from "./types.js";
import { resolveInWorkspace, workspaceRelative } from "./workspace-paths.js";

/** Writes `text` (UTF-8) to `absolute`, creating parent directories, and reads it back to check. */
export async function writeVerified(absolute: string, text: string, relativePath: string): Promise<void> {
  await mkdir(dirname(absolute), { recursive: true });
  const expected = Buffer.from(text, "utf8");
  await writeFile(absolute, expected);
  if (!(await readFile(absolute)).equals(expected)) {
    throw new ToolError("failed", `${relativePath} was written but reading it back gave different contents (is another process writing it?)`);
  }
}

const schema = z.strictObject({
  path: z.string().min(1).describe("File path, relative to the workspace root; missing parent directories are created"),
  contents: z.string().describe("The complete new contents of the file"),
});

export const writeFileTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "write_file",
  description:
    "Create a file or replace all of its contents. Parent directories are created. " +
    "To change part of an existing file, prefer edit_file.",
  effect: "edit",
  subject: { path: "path" },
  schema,
  async run({ path, contents }, ctx) {
    const absolute = resolveInWorkspace(ctx.workspace, path);
    const relativePath = workspaceRelative(ctx.workspace, absolute);
    const existing = await stat(absolute).catch(() => undefined);
    if (existing?.isDirectory()) throw new ToolError("invalid_arguments", `${relativePath} is a directory; give a file path`);
    await writeVerified(absolute, contents, relativePath);
    const bytes = Buffer.byteLength(contents);
    return {
      content: `${existing ? "Overwrote" : "Created"} ${relativePath} (${countLines(contents)} lines, ${bytes} bytes)`,
      filesChanged: [relativePath],
    };
  },
};
