import pc from "picocolors";
import { GraphValidationError } from "../errors.js";
import { drawMermaid, listGraphs, loadGraph, resolveGraphPath } from "../graph/index.js";

export async function graphsListCommand(options: { json?: boolean }): Promise<number> {
  const graphs = await listGraphs(process.cwd());
  if (options.json) {
    process.stdout.write(`${JSON.stringify(graphs, null, 2)}\n`);
    return 0;
  }
  // The names in one column, as wide as the longest (a project's graph may be named at length).
  const width = Math.max(20, ...graphs.map((graph) => graph.name.length));
  for (const graph of graphs) {
    process.stdout.write(
      `${pc.bold(graph.name.padEnd(width))} ${pc.dim(`[${graph.source}]`)} ${graph.description ?? ""}\n    ${pc.dim(graph.path)}\n`,
    );
  }
  return 0;
}

/** Validates every file and reports all their errors; exit 2 if any file is bad. */
export async function graphsValidateCommand(files: string[]): Promise<number> {
  let bad = 0;
  for (const file of files) {
    try {
      const graph = await loadGraph(resolveGraphPath(file, process.cwd()));
      process.stdout.write(`${pc.green("ok")} ${graph.file} (${Object.keys(graph.nodes).length} nodes, ${graph.edges.length} edges)\n`);
    } catch (error) {
      if (!(error instanceof GraphValidationError)) throw error;
      process.stderr.write(`${error.message}\n`);
      bad += 1;
    }
  }
  return bad > 0 ? 2 : 0;
}

export async function graphsDrawCommand(file: string): Promise<number> {
  const graph = await loadGraph(resolveGraphPath(file, process.cwd()));
  process.stdout.write(`${drawMermaid(graph)}\n`);
  return 0;
}
