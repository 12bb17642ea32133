import { readdirSync } from "node:fs";
import { join } from "node:path";
import { userConfigDir } from "../../project.js";
import { readRegularFileSync } from "../../tools/checked-file.js";
import { ALWAYS_SKIPPED_NAMES } from "../../tools/ignore-rules.js";
import { resolveInWorkspace } from "../../tools/workspace-paths.js";

/** Project rules files at the workspace root, in the order they are added to the Coder's prompt. */
export const RULES_FILES = ["AGENTS.md", "CLAUDE.md", "GEMINI.md", ".cursorrules"] as const;

/** The rules file that may also sit in a folder of the project, for the files below it. */
export const NESTED_RULES_FILE = "AGENTS.md";

/** A rules file's text beyond this is cut (and the cut said). */
export const RULES_FILE_MAX_BYTES = 64 * 1024;

/** How deep and how wide the search for nested AGENTS.md goes (a huge tree is not walked whole for them). */
const NESTED_MAX_DEPTH = 4;
const NESTED_MAX_FOLDERS = 4_000;
const NESTED_MAX_FILES = 32;

export interface RulesFile {
  /** Workspace-relative path; for the user's own file, its absolute path. */
  file: string;
  text: string;
}

/**
 * Rules files at the workspace root, each as `{file, text}`. They pass the file tools' checks: the
 * real path inside the workspace (a symlink out of it is skipped), a regular file with one link
 * (a FIFO, device or hard link is skipped, never waited on), at most RULES_FILE_MAX_BYTES.
 * Missing, unreadable or empty ones are skipped.
 */
export function readRulesFiles(workspace: string): RulesFile[] {
  return RULES_FILES.flatMap((file) => readWorkspaceRules(workspace, file));
}

function readWorkspaceRules(workspace: string, file: string): RulesFile[] {
  let absolute: string;
  try {
    absolute = resolveInWorkspace(workspace, file);
  } catch {
    return [];
  }
  return readRules(absolute, file);
}

function readRules(absolute: string, file: string): RulesFile[] {
  const read = readRegularFileSync(absolute, RULES_FILE_MAX_BYTES);
  const text = read?.bytes.toString("utf8").trim();
  if (!text) return [];
  return [{ file, text: read!.cut ? `${text}\n\n[${file} cut at ${RULES_FILE_MAX_BYTES} bytes]` : text }];
}

/** The user's own rules for every project: `$XDG_CONFIG_HOME/loopgraph/AGENTS.md` (default `~/.config/…`). */
export function readUserRules(env: NodeJS.ProcessEnv): RulesFile[] {
  const file = join(userConfigDir(env), NESTED_RULES_FILE);
  return readRules(file, file);
}

/** Nested AGENTS.md found per workspace, once per process (a walk per model step would cost each step). */
const nestedFound = new Map<string, string[]>();

/**
 * AGENTS.md files in the workspace's folders below the root (up to NESTED_MAX_DEPTH deep, skipping
 * `.git`, `node_modules`, `.loopgraph` and hidden folders; at most NESTED_MAX_FILES), shallowest
 * first: each holds rules for the files below its folder. Read with the same checks as the root's.
 */
export function readNestedRules(workspace: string): RulesFile[] {
  let found = nestedFound.get(workspace);
  if (!found) {
    found = findNested(workspace);
    nestedFound.set(workspace, found);
  }
  return found.flatMap((file) => readWorkspaceRules(workspace, file));
}

function findNested(workspace: string): string[] {
  const found: string[] = [];
  let folders = 0;
  // Breadth first, each folder read once: its own AGENTS.md (below the root), then its subfolders.
  let level = [""];
  for (let depth = 0; depth <= NESTED_MAX_DEPTH && level.length > 0; depth++) {
    const next: string[] = [];
    for (const folder of level) {
      let entries;
      try {
        entries = readdirSync(join(workspace, folder), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
      } catch {
        continue;
      }
      if (depth > 0 && entries.some((entry) => entry.name === NESTED_RULES_FILE)) {
        found.push(`${folder}/${NESTED_RULES_FILE}`);
        if (found.length >= NESTED_MAX_FILES) return found;
      }
      if (depth === NESTED_MAX_DEPTH) continue;
      for (const entry of entries) {
        if (!entry.isDirectory() || entry.name.startsWith(".") || ALWAYS_SKIPPED_NAMES.has(entry.name)) continue;
        if (++folders > NESTED_MAX_FOLDERS) return found;
        next.push(folder ? `${folder}/${entry.name}` : entry.name);
      }
    }
    level = next;
  }
  return found;
}

/**
 * The Coder's system prompt: its own prompt file, the workspace, then the rules: the user's own
 * (for every project), the project's at the root, then those of the project's folders (each for
 * the files below its folder; the one nearest to a file wins), and which files were loaded.
 */
export function coderSystemPrompt(template: string, workspace: string, env: NodeJS.ProcessEnv): string {
  const user = readUserRules(env);
  const root = readRulesFiles(workspace);
  const nested = readNestedRules(workspace);
  const sections = [
    ...user.map(({ file, text }) => `## Your own rules (${file}), for every project\n\n${text}`),
    ...root.map(({ file, text }) => `## Project rules from ${file}\n\n${text}`),
    ...nested.map(({ file, text }) => {
      const folder = file.slice(0, -NESTED_RULES_FILE.length);
      return (
        `## Rules for the files under ${folder} (from ${file})\n\n` +
        `They apply to files under ${folder}; where they disagree with rules above, these win, ` +
        `and the AGENTS.md nearest to the file you change wins.\n\n${text}`
      );
    }),
  ];
  const parts = [template.trim(), `Workspace: ${workspace} (all paths are relative to it).`];
  if (sections.length > 0) {
    parts.push(...sections);
    parts.push(`Rules files loaded: ${[...user, ...root, ...nested].map(({ file }) => file).join(", ")}.`);
  }
  return parts.join("\n\n");
}
