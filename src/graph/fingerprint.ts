import { createHash } from "node:crypto";
import type { GraphDefinition } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import { readRegularFile } from "../diagnostics/regular-file.js";

/** Every file a run of the graph reads: the graph file, its subgraphs, prompts and function modules. */
function filesOf(graph: GraphDefinition, files = new Set<string>()): Set<string> {
  files.add(graph.file);
  for (const node of Object.values(graph.nodes)) {
    const kind = nodeKinds.of(node);
    for (const file of kind.files?.(node) ?? []) files.add(file);
    if (kind.inlineGraph) filesOf(kind.inlineGraph(node), files);
  }
  return files;
}

/** A hash of everything the graph's behaviour is read from, to tell a resume that the files changed. */
export function graphFingerprint(graph: GraphDefinition): string {
  const hash = createHash("sha256");
  for (const file of [...filesOf(graph)].sort()) {
    hash.update(file).update("\0");
    try {
      hash.update(readRegularFile(file));
    } catch {
      hash.update("(unreadable)");
    }
    hash.update("\0");
  }
  return hash.digest("hex");
}

/**
 * The warning for a run whose graph files changed since it started (`recordedHash` is the
 * fingerprint recorded with the run), or undefined when they did not or nothing was recorded.
 * `consequence` says what the change means for the command at hand.
 */
export function graphChangedWarning(
  recordedHash: string | undefined,
  graph: GraphDefinition,
  consequence = "the rest of the run follows the new version",
): string | undefined {
  if (!recordedHash || recordedHash === graphFingerprint(graph)) return undefined;
  return `the graph's files (${graph.file}, its prompts, modules or subgraphs) changed since this run started: ${consequence}`;
}
