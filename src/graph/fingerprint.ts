import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { GraphDefinition } from "./types.js";

/** Every file a run of the graph reads: the graph file, its subgraphs, prompts and function modules. */
function filesOf(graph: GraphDefinition, files = new Set<string>()): Set<string> {
  files.add(graph.file);
  for (const node of Object.values(graph.nodes)) {
    if (node.kind === "subgraph") filesOf(node.graph, files);
    else if (node.kind === "function") files.add(node.module);
    else if (node.kind === "review") files.add(node.specsPrompt).add(node.taskLogPrompt);
    else if ("promptFile" in node) files.add(node.promptFile);
  }
  return files;
}

/** A hash of everything the graph's behaviour is read from, to tell a resume that the files changed. */
export function graphFingerprint(graph: GraphDefinition): string {
  const hash = createHash("sha256");
  for (const file of [...filesOf(graph)].sort()) {
    hash.update(file).update("\0");
    try {
      hash.update(readFileSync(file));
    } catch {
      hash.update("(unreadable)");
    }
    hash.update("\0");
  }
  return hash.digest("hex");
}
