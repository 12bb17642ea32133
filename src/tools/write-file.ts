import { stat } from "node:fs/promises";
import { z } from "zod";
import { readChecked, stampOf, writeChecked } from "./checked-file.js";
import { countLines } from "./read-file.js";
import { ToolError, type ToolDefinition } from "./types.js";
import { resolveInWorkspace, workspaceRelative } from "./workspace-paths.js";

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
  async preview({ path, contents }, ctx) {
    const absolute = resolveInWorkspace(ctx.workspace, path);
    const relativePath = workspaceRelative(ctx.workspace, absolute);
    // No file there yet: the preview shows a new file.
    const existing = await stat(absolute).catch(() => undefined);
    if (existing?.isDirectory()) throw new ToolError("invalid_arguments", `${relativePath} is a directory; give a file path`);
    const before = existing ? (await readChecked(absolute, relativePath)).toString("utf8") : undefined;
    return { path: relativePath, ...(before !== undefined ? { before } : {}), after: contents };
  },
  async run({ path, contents }, ctx) {
    const absolute = resolveInWorkspace(ctx.workspace, path);
    const relativePath = workspaceRelative(ctx.workspace, absolute);
    const existing = await stat(absolute).catch(() => undefined);
    if (existing?.isDirectory()) throw new ToolError("invalid_arguments", `${relativePath} is a directory; give a file path`);
    await writeChecked(absolute, relativePath, contents);
    const bytes = Buffer.byteLength(contents);
    return {
      content: `${existing ? "Overwrote" : "Created"} ${relativePath} (${countLines(contents)} lines, ${bytes} bytes)`,
      filesChanged: [relativePath],
      fileStamps: { [relativePath]: await stampOf(absolute) },
    };
  },
};
