import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The installed loopgraph package's root (where its graphs/, prompts/ and examples/ are), if found. */
export function packageRoot(): string | undefined {
  // Where the code lies does not change while it runs: found once (every write and command asks).
  if (foundRoot === undefined) foundRoot = { root: findPackageRoot() };
  return foundRoot.root;
}

let foundRoot: { root: string | undefined } | undefined;

function findPackageRoot(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (isLoopgraphPackage(dir)) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * The package root when loopgraph is installed there (no `.git`: not a development checkout): its
 * code and graphs, which the agent's tools and commands never change, even where the package
 * lies inside a workspace (a project's own `node_modules/loopgraph`).
 */
export function installedPackageRoot(): string | undefined {
  // Decided once, at the first ask: a `.git` made there later changes nothing.
  if (installedRoot === undefined) {
    const root = packageRoot();
    installedRoot = { root: root && !existsSync(path.join(root, ".git")) ? root : undefined };
  }
  return installedRoot.root;
}

let installedRoot: { root: string | undefined } | undefined;

/** The package's own `graphs/` directory (shipped graphs), if the package root is found. */
export function packageGraphsDir(): string | undefined {
  const root = packageRoot();
  return root && path.join(root, "graphs");
}

/** A prompt shipped with the package (`prompts/<name>`), for nodes whose graph names none. */
export function packagePrompt(name: string): string {
  return path.join(packageRoot() ?? ".", "prompts", name);
}

function isLoopgraphPackage(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown }).name === "loopgraph";
  } catch {
    return false;
  }
}

/** The installed package's version (from its package.json). */
export function packageVersion(): string {
  const root = packageRoot();
  try {
    return String((JSON.parse(readFileSync(path.join(root ?? ".", "package.json"), "utf8")) as { version?: unknown }).version ?? "0.0.0");
  } catch {
    return "0.0.0";
  }
}

/** The `import()` the CLI's launcher lends its bundle (see cli/launcher.ts); undefined outside it. */
declare const __loopgraphImport: ((specifier: string) => Promise<unknown>) | undefined;

/**
 * `import()` of a module named at run time (a function node's module, tsx's loader). The CLI's
 * bundle is compiled from a V8 code cache, and Node 20 loses a cached script's `import()` callback
 * ("A dynamic import callback was not specified"): there the launcher, an ES module of its own,
 * lends its `import()`. A specifier is resolved as from dist/cli/ (bundled) or this file (unbundled).
 */
export function importAtRunTime(specifier: string): Promise<unknown> {
  return typeof __loopgraphImport === "function" ? __loopgraphImport(specifier) : import(specifier);
}
