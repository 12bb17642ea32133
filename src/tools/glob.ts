import { lstat } from "node:fs/promises";
import picomatch from "picomatch";
import { z } from "zod";
import { ALWAYS_SKIPPED_NAMES, walkFiles } from "./ignore-rules.js";
import { ToolError, type ToolDefinition } from "./types.js";
import { resolveInWorkspace, workspaceRelative } from "./workspace-paths.js";

const MAX_RESULTS = 500;

/**
 * Where to start walking and what to match: the pattern's literal leading directories are
 * resolved (and so confined to the workspace like any path), the rest must not climb out.
 */
function planSearch(workspace: string, pattern: string): { root: string; matcher: (path: string) => boolean } {
  if (pattern.startsWith("!")) throw new ToolError("invalid_arguments", "negated patterns are not supported: give the files to match");
  const { base, glob, isGlob } = picomatch.scan(pattern);
  if (glob.split("/").includes(".."))
    throw new ToolError("invalid_arguments", "`..` may only appear before the first wildcard of the pattern");
  const root = resolveInWorkspace(workspace, base || ".");
  const relativeBase = workspaceRelative(workspace, root);
  const anchored = !isGlob ? relativeBase : relativeBase === "." ? glob : `${relativeBase}/${glob}`;
  return { root, matcher: picomatch(anchored, { dot: true }) };
}

const schema = z.strictObject({
  pattern: z.string().min(1).describe('Glob relative to the workspace root, e.g. "src/**/*.ts", "**/*.{json,yaml}", "*.md"'),
});

export const globTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "glob",
  description:
    "Find files by name pattern. Returns matching files (and symlinks) as workspace-relative paths, sorted, at most " +
    `${MAX_RESULTS}. \`*\` stays within one directory, \`**\` crosses directories, {a,b} alternates; dotfiles match too. ` +
    `Respects .gitignore and skips ${[...ALWAYS_SKIPPED_NAMES].join(", ")}, except inside a directory the pattern names ` +
    "literally (e.g. node_modules/zod/**/*.d.ts).",
  effect: "read",
  subject: { path: "pattern", glob: true },
  schema,
  async run({ pattern }, ctx) {
    const { root, matcher } = planSearch(ctx.workspace, pattern);
    const noMatch = { content: `No files match ${pattern}` };
    // A pattern whose fixed folder does not exist matches nothing.
    if (!(await lstat(root).catch(() => undefined))) return noMatch;
    const found: string[] = [];
    for await (const file of walkFiles(ctx.workspace, root, ctx.signal)) {
      if (!matcher(file.relative)) continue;
      if (found.length === MAX_RESULTS) {
        return { content: `${found.join("\n")}\n(showing the first ${MAX_RESULTS} matches; more exist: narrow the pattern)` };
      }
      found.push(file.relative);
    }
    return found.length === 0 ? noMatch : { content: found.join("\n") };
  },
};
