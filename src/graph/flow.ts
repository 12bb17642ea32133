/** Where a graph file's edges can lead: the node-to-node moves its checks reason about. */
import { END_NODE, START_NODE } from "../format/types.js";
import type { DataPath } from "../diagnostics/positions.js";
import { namesOf, type GraphFile, type RawEdge } from "./schema.js";

/**
 * For each node (and START), the nodes it can lead to. A target reached only as the on_limit
 * fallback of an exhausted node maps to that node; a direct target maps to undefined.
 * END and unknown names are left out.
 */
export type Flow = Map<string, Map<string, string | undefined>>;

/** The graph's flow; without `joins`, only the moves a node makes by itself (a join also waits for other nodes). */
export function flowOf(graph: GraphFile, { joins = true } = {}): Flow {
  const known = new Set([START_NODE, ...Object.keys(graph.nodes)]);
  const flow: Flow = new Map([...known].map((id) => [id, new Map()]));
  const addTarget = (from: string, to: string, via?: string, seen = new Set<string>()): void => {
    if (!known.has(to) || to === START_NODE || seen.has(to)) return;
    seen.add(to);
    const targets = flow.get(from);
    if (targets && (!targets.has(to) || via === undefined)) targets.set(to, via);
    const node = graph.nodes[to];
    if (node?.max_visits !== undefined) addTarget(from, node.on_limit ?? END_NODE, to, seen);
  };
  for (const edge of graph.edges) {
    if (Array.isArray(edge.from) && !joins) continue;
    for (const from of namesOf(edge.from)) if (known.has(from)) targetsOf(edge).forEach((to) => addTarget(from, to));
  }
  return flow;
}

/** Every target an edge names, in all its branches (a map: its mapped node). */
export function targetsOf(edge: RawEdge): string[] {
  if (edge.map !== undefined) return [edge.map.to];
  return edge.to !== undefined
    ? namesOf(edge.to)
    : (edge.branches ?? []).flatMap((branch) => (branch.map ? [branch.map.to] : namesOf(branch.to)));
}

/** A map of a graph file: a map edge's, or a conditional edge's branch's; with its place in the file. */
export interface RawMapAt {
  from: string;
  map: NonNullable<RawEdge["map"]>;
  /** Where its `map` key is: `edges[i].map` or `edges[i].branches[k].map`. */
  path: DataPath;
}

/** Every map of a graph file (a join has none). */
export function mapsIn(graph: GraphFile): RawMapAt[] {
  return graph.edges.flatMap((edge, index): RawMapAt[] => {
    if (Array.isArray(edge.from)) return [];
    const from = edge.from;
    if (edge.map) return [{ from, map: edge.map, path: ["edges", index, "map"] }];
    return (edge.branches ?? []).flatMap((branch, k) =>
      branch.map ? [{ from, map: branch.map, path: ["edges", index, "branches", k, "map"] }] : [],
    );
  });
}

/** The nodes the flow leads to from `starts`, the starts included. */
export function reachableFrom(starts: Iterable<string>, flow: Flow): Set<string> {
  const reachable = new Set(starts);
  const queue = [...reachable];
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
    for (const next of flow.get(id)?.keys() ?? []) {
      if (reachable.has(next)) continue;
      reachable.add(next);
      queue.push(next);
    }
  }
  return reachable;
}
