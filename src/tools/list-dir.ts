import type { Dirent } from "node:fs";
import { lstat, readlink } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ALWAYS_SKIPPED_NAMES, listVisibleEntries } from "./ignore-rules.js";
import { ToolError, type ToolDefinition } from "./types.js";
import { statInWorkspace } from "./workspace-paths.js";

type EntryType = "dir" | "file" | "symlink" | "other";

function typeOf(entry: Dirent): EntryType {
  if (entry.isDirectory()) return "dir";
  if (entry.isFile()) return "file";
  return entry.isSymbolicLink() ? "symlink" : "other";
}

async function describe(dir: string, entry: Dirent): Promise<string> {
  const type = typeOf(entry);
  const absolute = join(dir, entry.name);
  const size = type === "file" ? String((await lstat(absolute)).size) : "-";
  const name = type === "dir" ? `${entry.name}/` : type === "symlink" ? `${entry.name} -> ${await readlink(absolute)}` : entry.name;
  return `${type.padEnd(7)} ${size.padStart(10)}  ${name}`;
}

const schema = z.strictObject({
  path: z.string().min(1).optional().describe("Directory, relative to the workspace root (default: the root)"),
});

export const listDirTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "list_dir",
  description:
    "List one directory of the workspace: each entry's type (dir, file, symlink), size in bytes and name, sorted by name. " +
    `Leaves out ${[...ALWAYS_SKIPPED_NAMES].join(", ")} and what .gitignore (or .ignore) files exclude.`,
  effect: "read",
  subject: { path: "path", fallback: "." },
  schema,
  async run({ path = "." }, ctx) {
    const dir = await statInWorkspace(ctx.workspace, path);
    if (!dir.stats.isDirectory()) throw new ToolError("invalid_arguments", `${dir.relative} is a file, not a directory: use read_file`);
    const { entries, hidden } = await listVisibleEntries(dir.absolute);
    const lines = await Promise.all(entries.map((entry) => describe(dir.absolute, entry)));
    const count = `${entries.length} entr${entries.length === 1 ? "y" : "ies"}`;
    const hiddenNote = hidden > 0 ? `; ${hidden} not shown: ${[...ALWAYS_SKIPPED_NAMES].join(", ")} or ignored` : "";
    return { content: [`${dir.relative}/ (${count}${hiddenNote})`, ...lines].join("\n") };
  },
};
