import { closestName } from "../diagnostics/suggest.js";
import { ConfigError } from "../errors.js";
import { listGraphs } from "../graph/index.js";

/**
 * Runs `action`; when it fails because the graph `graph` is not found, the error gains a line
 * naming the graph of the project or the built-in ones nearest to that name, if one is close: the
 * places tried say where loopgraph looked, not what the user meant.
 */
export async function withGraphSuggestion<T>(graph: string | undefined, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (graph === undefined || !(error instanceof ConfigError) || !error.message.startsWith(`graph "${graph}" not found`)) throw error;
    const nearest = closestName(
      graph,
      (await listGraphs(process.cwd())).map((listed) => listed.name),
    );
    throw nearest ? new ConfigError(`${error.message}\ndid you mean "${nearest}"?`) : error;
  }
}
