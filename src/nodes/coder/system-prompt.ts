import { readRegularFileSync } from "../../tools/checked-file.js";
import { resolveInWorkspace } from "../../tools/workspace-paths.js";

/** Project rules files, in the order they are added to the Coder's prompt. */
export const RULES_FILES = ["AGENTS.md", "CLAUDE.md", ".cursorrules"] as const;

/** A rules file's text beyond this is cut (and the cut said). */
export const RULES_FILE_MAX_BYTES = 64 * 1024;

/**
 * Rules files at the workspace root, each as `{file, text}`. They pass the file tools' checks: the
 * real path inside the workspace (a symlink out of it is skipped), a regular file with one link
 * (a FIFO, device or hard link is skipped, never waited on), at most RULES_FILE_MAX_BYTES.
 * Missing, unreadable or empty ones are skipped.
 */
export function readRulesFiles(workspace: string): { file: string; text: string }[] {
  return RULES_FILES.flatMap((file) => {
    let absolute: string;
    try {
      absolute = resolveInWorkspace(workspace, file);
    } catch {
      return [];
    }
    const read = readRegularFileSync(absolute, RULES_FILE_MAX_BYTES);
    const text = read?.bytes.toString("utf8").trim();
    if (!text) return [];
    return [{ file, text: read!.cut ? `${text}\n\n[${file} cut at ${RULES_FILE_MAX_BYTES} bytes]` : text }];
  });
}

/** The Coder's system prompt: its own prompt file, the workspace, then the project's rules. */
export function coderSystemPrompt(template: string, workspace: string): string {
  const rules = readRulesFiles(workspace)
    .map(({ file, text }) => `## Project rules from ${file}\n\n${text}`)
    .join("\n\n");
  const parts = [template.trim(), `Workspace: ${workspace} (all paths are relative to it).`];
  if (rules) parts.push(rules);
  return parts.join("\n\n");
}
