import { readdir } from "node:fs/promises";
import { readRegularText } from "../diagnostics/regular-file.js";
import path from "node:path";
import { parse } from "yaml";
import { packageGraphsDir } from "../package.js";
import { projectRoot } from "../project.js";

export interface GraphListing {
  /** What `loopgraph run <name>` accepts: the file name without extension. */
  name: string;
  description?: string;
  path: string;
  source: "project" | "package";
}

/**
 * The graphs of the project (`graphs/` at the project root, see projectRoot) and those shipped with loopgraph, sorted by name
 * within each source. A project graph hides a shipped graph of the same name, as it does when
 * a name is resolved.
 */
export async function listGraphs(cwd: string, packageGraphs = packageGraphsDir()): Promise<GraphListing[]> {
  const projectDir = path.join(projectRoot(cwd), "graphs");
  const project = await graphsIn(projectDir, "project");
  if (!packageGraphs || path.resolve(packageGraphs) === path.resolve(projectDir)) return project;
  const projectNames = new Set(project.map((graph) => graph.name));
  const shipped = (await graphsIn(packageGraphs, "package")).filter((graph) => !projectNames.has(graph.name));
  return [...project, ...shipped];
}

async function graphsIn(dir: string, source: GraphListing["source"]): Promise<GraphListing[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const byName = new Map<string, string>();
  // Sorted so that name.yaml comes before name.yml and wins, as in resolveGraphPath.
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const name = entry.name.replace(/\.ya?ml$/, "");
    if (entry.isFile() && name !== entry.name && !byName.has(name)) byName.set(name, path.join(dir, entry.name));
  }
  const listings = [...byName].map(async ([name, file]) => ({ name, description: await descriptionOf(file), path: file, source }));
  return (await Promise.all(listings)).sort((a, b) => a.name.localeCompare(b.name));
}

/** The file's `description`, read leniently: a broken file is still listed (validate reports it). */
async function descriptionOf(file: string): Promise<string | undefined> {
  try {
    const data: unknown = parse(readRegularText(file));
    const description = (data as { description?: unknown } | null)?.description;
    return typeof description === "string" ? description : undefined;
  } catch {
    return undefined;
  }
}
