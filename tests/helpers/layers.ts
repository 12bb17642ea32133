/**
 * The import graph of a source tree (type imports and re-exports included), read with the
 * TypeScript scanner, and the checks the architecture test makes on it: no cycles, and no import
 * from a lower layer into a higher one.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

/** Layers from the bottom up: a module may import its own layer's modules and lower layers', never a higher layer's. */
export const LAYERS: readonly (readonly string[])[] = [
  ["errors.ts", "package.ts", "project.ts", "diagnostics"],
  ["state", "checkpoint"],
  ["runs", "git"],
  ["store"],
  ["models", "tools", "policy", "snapshots", "config", "trust"],
  ["format"],
  ["runtime"],
  ["nodes"],
  ["graph"],
  ["engine"],
  ["replay"],
  ["eval"],
  ["ui"],
  ["serve"],
  ["cli"],
  ["index.ts"],
];

export interface ImportEdge {
  from: string;
  to: string;
}

export interface LayerReport {
  files: number;
  /** Each cycle's files (relative to the source root), sorted. */
  cycles: string[][];
  /** Imports that point from a lower layer up into a higher one. */
  upward: (ImportEdge & { fromLayer: number; toLayer: number })[];
  /** Top-level entries of the source tree that no layer names. */
  unplaced: string[];
}

/** The TypeScript files under `root` (declaration files left out), sorted. */
export function sourceFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) files.push(path);
    }
  };
  walk(root);
  return files.sort();
}

function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, ".ts"), base, `${base}.ts`, join(base, "index.ts")];
  return candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile() && candidate.endsWith(".ts"));
}

/** Every relative import of every .ts file under `root`, as paths relative to `root`. */
export function importEdges(root: string): { files: string[]; edges: ImportEdge[] } {
  const files = sourceFiles(root);
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const imported of info.importedFiles) {
      const target = resolveImport(file, imported.fileName);
      if (target && target !== file) edges.push({ from: relative(root, file), to: relative(root, target) });
    }
  }
  return { files: files.map((file) => relative(root, file)), edges };
}

/** Strongly connected components of more than one node (Tarjan). */
export function cyclesOf(nodes: readonly string[], edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>(nodes.map((node) => [node, []]));
  for (const edge of edges) next.get(edge.from)?.push(edge.to);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return cycles;
}

/** The top-level entry of a source-relative path: its first folder, or the file itself. */
const topOf = (path: string): string => path.split(sep)[0]!;

export function checkLayers(root: string, layers: readonly (readonly string[])[] = LAYERS): LayerReport {
  const { files, edges } = importEdges(root);
  const layerOf = new Map<string, number>();
  layers.forEach((names, layer) => names.forEach((name) => layerOf.set(name, layer)));
  const unplaced = [...new Set(files.map(topOf))].filter((top) => !layerOf.has(top));
  const upward = edges.flatMap((edge) => {
    const fromLayer = layerOf.get(topOf(edge.from));
    const toLayer = layerOf.get(topOf(edge.to));
    return fromLayer !== undefined && toLayer !== undefined && toLayer > fromLayer ? [{ ...edge, fromLayer, toLayer }] : [];
  });
  // Cycles between files, and between top-level folders (two folders of one layer must not lean on each other).
  const folders = [...new Set(files.map(topOf))];
  const folderEdges = edges.map((edge) => ({ from: topOf(edge.from), to: topOf(edge.to) })).filter((edge) => edge.from !== edge.to);
  const cycles = [...cyclesOf(files, edges), ...cyclesOf(folders, folderEdges)];
  return { files: files.length, cycles, upward, unplaced };
}
