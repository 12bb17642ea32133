import { readFileSync } from "node:fs";
import { join } from "node:path";

/** Project rules files, in the order they are added to the Coder's prompt. */
export const RULES_FILES = ["AGENTS.md", "CLAUDE.md", ".cursorrules"] as const;

/** Rules files at the workspace root, each as `{file, text}`; unreadable or empty ones are skipped. */
export function readRulesFiles(workspace: string): { file: string; text: string }[] {
  return RULES_FILES.flatMap((file) => {
    try {
      const text = readFileSync(join(workspace, file), "utf8").trim();
      return text ? [{ file, text }] : [];
    } catch {
      return [];
    }
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
