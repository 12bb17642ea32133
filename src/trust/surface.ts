/**
 * A project's trust surface: the files in it that loopgraph would execute, or that change what
 * loopgraph allows. The agent can write into a project; none of these may take effect until the
 * user has trusted them as they are (see trust.ts).
 *
 * - `loopgraph.yaml` (settings, hooks, MCP servers, subagents) and `.loopgraph/policy.yaml`;
 * - the graphs found by name, `graphs/*.yaml` and `graphs/*.yml`;
 * - what those files bring along: the modules of function nodes and the files of subgraphs
 *   (`module:`, `graph:`), the files a hook's or MCP server's command names (`command:`, `args:`)
 *   inside the project, and the modules a JavaScript or TypeScript module imports by a relative
 *   path, each followed in turn.
 */
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { PROJECT_CONFIG, STATE_DIR } from "../project.js";
import { isInside } from "../tools/workspace-paths.js";
import { readRegularText } from "../diagnostics/regular-file.js";

/** The files of the surface named by place, relative to the project root. */
const FIXED = [PROJECT_CONFIG, path.join(STATE_DIR, "policy.yaml")];
/** At most this many files are followed from one start (a bound for a hostile tree). */
const MAX_FILES = 500;
/** Files larger than this are not read for references (their digest still counts). */
const MAX_SCANNED_BYTES = 1 << 20;

const CODE = /\.(c|m)?(j|t)sx?$/;
const YAML = /\.ya?ml$/;
/** `import … from "./x"`, `import "./x"`, `export … from "./x"`, `import("./x")`, `require("./x")`: relative specifiers only. */
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)["'](\.{1,2}\/[^"'\n]+)["']/g;

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    // Not there, or a path through a file (ENOTDIR): not a file either way.
    return false;
  }
}

/** The surface of the project at `root`: its fixed files, its graphs, and everything they bring along (absolute paths, sorted). */
export function projectSurface(root: string): string[] {
  const starts = [...FIXED.map((name) => path.join(root, name)), ...projectGraphFiles(root)].filter(isFile);
  return [...new Set(starts.flatMap((start) => broughtAlong(start, root)))].sort();
}

/** The files of the project's `graphs/` that a graph name can resolve to. */
function projectGraphFiles(root: string): string[] {
  const dir = path.join(root, "graphs");
  try {
    return readdirSync(dir)
      .sort()
      .filter((name) => YAML.test(name))
      .map((name) => path.join(dir, name));
  } catch {
    return [];
  }
}

/**
 * `file` and the files it brings along inside `root` (see the module comment), followed
 * recursively: `file` first. Files outside `root` are listed too (they must be trusted on their
 * own), but not followed.
 */
export function broughtAlong(file: string, root: string): string[] {
  const found = new Set<string>([path.resolve(file)]);
  const queue = [path.resolve(file)];
  while (queue.length > 0 && found.size < MAX_FILES) {
    const next = queue.shift()!;
    if (next !== path.resolve(file) && !isInside(root, next)) continue;
    for (const named of references(next, root)) {
      if (found.has(named) || !isFile(named)) continue;
      found.add(named);
      queue.push(named);
    }
  }
  return [...found];
}

/** The files `file` names directly. */
function references(file: string, root: string): string[] {
  let text: string;
  try {
    if (statSync(file).size > MAX_SCANNED_BYTES) return [];
    text = readRegularText(file);
  } catch {
    return [];
  }
  const dir = path.dirname(file);
  if (CODE.test(file)) return [...text.matchAll(RELATIVE_IMPORT)].flatMap((match) => importCandidates(path.resolve(dir, match[1]!)));
  if (!YAML.test(file)) return [];
  let data: unknown;
  try {
    data = parse(text);
  } catch {
    return [];
  }
  const named: string[] = [];
  walk(data, (key, value) => {
    if ((key === "module" || key === "graph") && typeof value === "string") named.push(path.resolve(dir, value));
    // A command's words that are files of the project: a hook's script, an MCP server's program.
    const words =
      key === "command" && typeof value === "string"
        ? value.split(/\s+/)
        : key === "args" && Array.isArray(value)
          ? value.filter((arg): arg is string => typeof arg === "string")
          : [];
    for (const word of words) {
      for (const base of [dir, root]) {
        const candidate = path.resolve(base, word.replace(/^["']|["']$/g, ""));
        if (word && isInside(root, candidate) && isFile(candidate)) named.push(candidate);
      }
    }
  });
  return named;
}

/** A relative import's file: as written, or with the extensions a resolver would try. */
function importCandidates(base: string): string[] {
  const withTs = base.replace(/\.(c|m)?js$/, ".$1ts");
  return [base, withTs, `${base}.js`, `${base}.mjs`, `${base}.ts`, path.join(base, "index.js"), path.join(base, "index.ts")].filter(isFile);
}

function walk(value: unknown, visit: (key: string, value: unknown) => void, depth = 0): void {
  if (depth > 32 || value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    for (const item of value) walk(item, visit, depth + 1);
    return;
  }
  for (const [key, inner] of Object.entries(value)) {
    visit(key, inner);
    walk(inner, visit, depth + 1);
  }
}
