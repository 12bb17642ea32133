import { isDeepStrictEqual } from "node:util";
import { relative, isAbsolute } from "node:path";
import { applyVisitLimits, chooseBranch } from "../engine/compile.js";
import { graphChangedWarning } from "../graph/fingerprint.js";
import { graphSourceLocator, loadGraph } from "../graph/load.js";
import type { DataPath } from "../diagnostics/positions.js";
import { END_NODE, START_NODE, type EdgeDefinition, type GraphDefinition } from "../format/types.js";
import { requireThread, withStore, type StoreOptions } from "../store/store.js";
import type { GraphStateValue } from "../state/graph-state.js";
import { headLineage, readRunRecord, routingSources, type RecordedStep } from "./record.js";

export interface VerifyOptions extends StoreOptions {
  threadId: string;
  /** The graph file to check the run against (`eval --recorded --graph`); by default the run's own, as it is now. */
  graphFile?: string;
}

/** Where in the graph file a routing decision comes from. */
export interface GraphLocation {
  file: string;
  line: number;
  col: number;
  /** The edge, branch or visit limit, in words. */
  what: string;
}

export interface Divergence {
  step: number;
  checkpointId: string;
  kind: "routing" | "missing_node";
  /** The nodes whose outgoing edges decide (START after the input). */
  after: string[];
  /** Where the recorded run went next ("END" where it ended). */
  recorded: string[];
  /** Where the current graph goes instead. */
  expected: string[];
  location?: GraphLocation;
  message: string;
}

export interface VerifyResult {
  threadId: string;
  /** The graph file checked (relative to the current directory when inside it). */
  graphFile: string;
  /** Set when the graph's files changed since the run started (the usual case for a check). */
  graphChanged?: string;
  consistent: boolean;
  /** Routing decisions compared (one per checkpoint after the input). */
  checked: number;
  /** Nodes in the record that the current graph no longer has. */
  missingNodes: string[];
  divergence?: Divergence;
}

/** Where one node's outgoing edge leads on a state, and the part of the file that decides it. */
interface Route {
  target: string;
  path: DataPath;
  what: string;
}

/**
 * Checks a recorded run against the current graph files without running anything: at every
 * checkpoint of the branch `resume` continues, the current graph's edges out of the node(s) that
 * ran are evaluated on the recorded state (conditions, visit limits) and compared with where the
 * run went next. Returns the first divergence, with the file position of the edge involved.
 */
export async function verifyRun(options: VerifyOptions): Promise<VerifyResult> {
  return withStore(options, "read", async (store) => {
    const thread = await requireThread(store, options.threadId);
    const graph = await loadGraph(options.graphFile ?? thread.graphFile);
    const locator = await graphSourceLocator(graph.file);
    const record = await readRunRecord(store, thread.threadId);
    const steps = headLineage(record);
    const shown = shownPath(graph.file, options.cwd ?? process.cwd());
    const changed =
      options.graphFile === undefined
        ? graphChangedWarning(thread.graphHash, graph, "checking the recorded run against the current version")
        : undefined;
    const result: VerifyResult = {
      threadId: thread.threadId,
      graphFile: shown,
      ...(changed ? { graphChanged: changed } : {}),
      consistent: true,
      checked: 0,
      missingNodes: [...new Set(steps.flatMap((s) => [...s.ran, ...s.scheduled]))].filter((node) => !graph.nodes[node]),
    };
    for (const step of steps) {
      const sources = routingSources(record, step);
      if (!sources) continue;
      result.checked += 1;
      const divergence = compareStep(step, sources, graph, (route) => ({ ...locator.locate(route.path), file: shown, what: route.what }));
      if (divergence) return { ...result, consistent: false, divergence };
    }
    return result;
  });
}

function compareStep(
  step: RecordedStep,
  sources: string[],
  graph: GraphDefinition,
  locate: (route: Route) => GraphLocation,
): Divergence | undefined {
  const at = { step: step.step, checkpointId: step.id, after: sources };
  const recorded = step.scheduled.length > 0 ? step.scheduled : [END_NODE];
  const gone = sources.find((node) => node !== START_NODE && !graph.nodes[node]);
  if (gone !== undefined) {
    return {
      ...at,
      kind: "missing_node",
      recorded,
      expected: [],
      message: `step ${step.step} (checkpoint ${step.id}): node "${gone}" ran here but is no longer in the graph`,
    };
  }
  const joined = joinTargetsAfter(sources, graph);
  const scheduled = step.scheduled.filter((node) => !joined.has(node));
  const routes = sources.flatMap((node) => routesFrom(node, graph, step.values as GraphStateValue));
  const expected = [...new Set(routes.map((r) => r.target).filter((t) => t !== END_NODE && !joined.has(t)))].sort();
  if (isDeepStrictEqual(expected, [...scheduled].sort())) return undefined;
  // The route the record contradicts (with several nodes in one step, the first of them).
  const contradicted = (route: Route): boolean => (route.target === END_NODE ? scheduled.length > 0 : !scheduled.includes(route.target));
  const wrong = routes.find(contradicted) ?? routes[0]!;
  const shownExpected = expected.length > 0 ? expected : [END_NODE];
  return {
    ...at,
    kind: "routing",
    recorded,
    expected: shownExpected,
    location: locate(wrong),
    message:
      `step ${step.step} (checkpoint ${step.id}): after ${sources.join(", ")} the current graph goes to ${shownExpected.join(", ")}, ` +
      `the recorded run went to ${recorded.join(", ")}`,
  };
}

/**
 * Where the current graph goes from `node` on `state`: each target of its edges (or of the branch
 * taken), then visit limits, as the compiled graph routes. Joins are left out (see `joinTargetsAfter`).
 */
function routesFrom(node: string, graph: GraphDefinition, state: GraphStateValue): Route[] {
  const edges = graph.edges.flatMap((edge, index) => (edge.kind !== "join" && edge.from === node ? [{ edge, index }] : []));
  if (edges.length === 0)
    return [{ target: END_NODE, path: ["nodes", node], what: `node ${node} has no outgoing edge (the run ends after it)` }];
  return edges.flatMap(({ edge, index }) => chosenRoutes(node, edge, index, state)).map((route) => withVisitLimits(route, graph, state));
}

function chosenRoutes(node: string, edge: EdgeDefinition, index: number, state: GraphStateValue): Route[] {
  if (edge.kind !== "conditional") {
    const path = edge.kind === "map" ? ["edges", index, "map", "to"] : ["edges", index, "to"];
    return edge.to.map((target) => ({ target, path, what: `edge ${node} → ${edge.to.join(", ")}` }));
  }
  const branch = chooseBranch(edge.branches, state);
  if (branch === undefined) {
    return [{ target: END_NODE, path: ["edges", index, "branches"], what: `no branch of the edge from ${node} matches (the run ends)` }];
  }
  const to = edge.branches[branch]!.to;
  const what = `branch ${branch + 1} of the edge from ${node} → ${to.join(", ")}`;
  const key = edge.branches[branch]!.map ? ["map", "to"] : ["to"];
  return to.map((target) => ({ target, path: ["edges", index, "branches", branch, ...key], what }));
}

function withVisitLimits(chosen: Route, graph: GraphDefinition, state: GraphStateValue): Route {
  const target = chosen.target === END_NODE ? END_NODE : applyVisitLimits(chosen.target, graph, state);
  if (target === chosen.target) return chosen;
  return { target, path: ["nodes", chosen.target, "max_visits"], what: `max_visits of ${chosen.target} is used up: on_limit → ${target}` };
}

/**
 * The targets of the joins that `sources` feed: whether one runs after this step depends on
 * whether its other sources have finished since it last ran, which the recorded state does not
 * tell, so the comparison leaves them out on both sides.
 */
function joinTargetsAfter(sources: readonly string[], graph: GraphDefinition): Set<string> {
  return new Set(graph.edges.flatMap((edge) => (edge.kind === "join" && edge.from.some((from) => sources.includes(from)) ? edge.to : [])));
}

function shownPath(file: string, cwd: string): string {
  const fromCwd = relative(cwd, file);
  return fromCwd.startsWith("..") || isAbsolute(fromCwd) ? file : fromCwd;
}
