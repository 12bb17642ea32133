/**
 * The cross-references the schema cannot see: edges, condition paths, breakpoints,
 * reachability and loop limits. Files on disk are checked by ./load.ts.
 */
import type { DataPath, PathIssue } from "../diagnostics/positions.js";
import type { GraphFile, RawCondition, RawEdge } from "./schema.js";
import { closestName, unknownName } from "../diagnostics/suggest.js";
import { STATE_CHANNELS } from "../state/graph-state.js";
import { END_NODE, START_NODE } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import { flowOf, mapsIn, reachableFrom, targetsOf, type Flow } from "./flow.js";
import { checkParallel } from "./parallel.js";

/** Checks what the schema cannot: references between parts of the graph, reachability, loop limits. */
export function checkSemantics(graph: GraphFile): PathIssue[] {
  return [...checkNodeReferences(graph), ...checkEdges(graph), ...checkMaps(graph), ...checkFlow(graph)];
}

function checkNodeReferences(graph: GraphFile): PathIssue[] {
  const issues: PathIssue[] = [];
  const nodeIds = Object.keys(graph.nodes);
  for (const [id, node] of Object.entries(graph.nodes)) {
    // LangGraph shares one namespace between nodes and state channels.
    if (STATE_CHANNELS.includes(id)) {
      issues.push({ path: ["nodes", id], at: "key", message: `node id "${id}" is the name of a state channel: rename the node` });
    }
    // Keys that name other nodes, as the node's kind declares them (looper → coder/review/judge …).
    for (const key of nodeKinds.get(node.kind)?.nodeReferences ?? []) {
      const target = node[key];
      if (typeof target === "string" && !nodeIds.includes(target)) {
        issues.push({ path: ["nodes", id, key], message: unknownName("node", target, nodeIds) });
      }
    }
  }
  for (const id of nodeIds) issues.push(...checkWritesFields(graph, id));
  for (const [id, node] of Object.entries(graph.nodes)) {
    if (node.on_limit === undefined) continue;
    const path = ["nodes", id, "on_limit"];
    if (node.max_visits === undefined) {
      issues.push({ path, at: "key", message: "on_limit has no effect without max_visits: set max_visits or remove on_limit" });
    } else if (node.on_limit !== END_NODE && !nodeIds.includes(node.on_limit)) {
      issues.push({ path, message: unknownName("node", node.on_limit, [...nodeIds, END_NODE]) });
    }
  }
  for (const when of ["before", "after"] as const) {
    graph.breakpoints[when].forEach((id, index) => {
      if (!nodeIds.includes(id)) {
        issues.push({ path: ["breakpoints", when, index], message: unknownName("node", id, nodeIds) });
      }
    });
  }
  return issues;
}

/** Each name of an edge's `from` or `to` (one name, or a list), with where it is written. */
function namesAt(written: string | string[] | undefined, path: DataPath): { name: string; path: DataPath }[] {
  if (Array.isArray(written)) return written.map((name, k) => ({ name, path: [...path, k] }));
  return written === undefined ? [] : [{ name: written, path }];
}

/** The fields a node declares it writes (`writes:`) must be declared under `state:`. */
function checkWritesFields(graph: GraphFile, id: string): PathIssue[] {
  const node = graph.nodes[id];
  const declared = node && nodeKinds.get(node.kind)?.varsWritten?.(node as never);
  if (declared === undefined || declared === "any") return [];
  const fields = Object.keys(graph.state);
  return declared.flatMap((name, k) => {
    if (fields.includes(name)) return [];
    const message =
      fields.length === 0
        ? `unknown state field "${name}" in writes: declare it under state:`
        : unknownName("state field", name, fields, "writes");
    return [{ path: ["nodes", id, "writes", k], message }];
  });
}

function checkEdges(graph: GraphFile): PathIssue[] {
  const issues: PathIssue[] = [];
  const nodeIds = Object.keys(graph.nodes);
  // A node routes once: by its static edges (whose targets all run) or by one conditional edge.
  const routedBy = new Map<string, RawEdge>();
  const staticTargets = new Map<string, Set<string>>();
  const staticTargetsOf = (from: string): Set<string> => {
    const named = staticTargets.get(from) ?? new Set<string>();
    staticTargets.set(from, named);
    return named;
  };
  graph.edges.forEach((edge, index) => {
    const edgePath = ["edges", index];
    if (Array.isArray(edge.from)) issues.push(...checkJoin(graph, edge, index));
    else {
      issues.push(...checkSource(edge.from, [...edgePath, "from"], nodeIds));
      const earlier = routedBy.get(edge.from);
      if (earlier && (earlier.to === undefined || edge.to === undefined)) {
        issues.push({ path: [...edgePath, "from"], message: ambiguityMessage(edge.from, earlier, edge) });
      } else routedBy.set(edge.from, edge);
    }
    // A node's static edges all run: together they name each target once.
    const named = Array.isArray(edge.from) || edge.to === undefined ? new Set<string>() : staticTargetsOf(edge.from);
    issues.push(...checkTargets(edge.to, [...edgePath, "to"], nodeIds, named));
    edge.branches?.forEach((branch, k) => {
      const branchPath = [...edgePath, "branches", k];
      const isLast = k === (edge.branches?.length ?? 0) - 1;
      issues.push(...checkTargets(branch.to, [...branchPath, "to"], nodeIds, new Set()));
      if (branch.when) issues.push(...checkCondition(branch.when, [...branchPath, "when"], graph));
      if (isLast && branch.when) {
        issues.push({
          path: [...branchPath, "when"],
          at: "key",
          message: 'the last branch must be the default: remove its "when", or add a final branch with only "to"',
        });
      } else if (!isLast && !branch.when) {
        issues.push({
          path: branchPath,
          message: 'only the last branch may omit "when": the branches after this default would never be taken',
        });
      }
    });
  });
  return issues;
}

function checkSource(from: string, path: DataPath, nodeIds: string[]): PathIssue[] {
  if (from === END_NODE) return [{ path, message: "edge out of END: a run stops at END, so nothing can follow it" }];
  if (from === START_NODE || nodeIds.includes(from)) return [];
  return [{ path, message: unknownName("node", from, [START_NODE, ...nodeIds]) }];
}

/** A join's own rules: node sources, each once; targets that have no visit limit (LangGraph's multi-source edge cannot reroute). */
function checkJoin(graph: GraphFile, edge: RawEdge, index: number): PathIssue[] {
  const nodeIds = Object.keys(graph.nodes);
  const seen = new Set<string>();
  const issues = namesAt(edge.from, ["edges", index, "from"]).flatMap(({ name, path }) => {
    if (name === START_NODE) return [{ path, message: "START cannot be a join source: a run starts there before anything else" }];
    if (seen.has(name)) return [{ path, message: `join source "${name}" is listed twice` }];
    seen.add(name);
    return checkSource(name, path, nodeIds);
  });
  for (const { name, path } of namesAt(edge.to, ["edges", index, "to"])) {
    if (name === END_NODE) {
      issues.push({
        path,
        message: "a join into END: LangGraph joins into nodes only; a run ends once no branch has a next node, so drop END",
      });
    } else if (graph.nodes[name]?.max_visits !== undefined) {
      issues.push({
        path,
        message: `the join's target "${name}" has max_visits, which a join cannot apply: bound the loop on another node of it`,
      });
    }
  }
  return issues;
}

/** The targets of one edge or branch; `named`: the targets the source's earlier static edges already name (added to). */
function checkTargets(to: string | string[] | undefined, path: DataPath, nodeIds: string[], named: Set<string>): PathIssue[] {
  return namesAt(to, path).flatMap(({ name, path: at }) => {
    if (name === START_NODE) return [{ path: at, message: "edge into START: START is where a run begins and has no incoming edges" }];
    if (named.has(name)) return [{ path: at, message: `"${name}" is already a target of this node: name it once` }];
    named.add(name);
    if (name === END_NODE || nodeIds.includes(name)) return [];
    return [{ path: at, message: unknownName("node", name, [...nodeIds, END_NODE]) }];
  });
}

function ambiguityMessage(from: string, earlier: RawEdge, later: RawEdge): string {
  if (earlier.map !== undefined || later.map !== undefined) {
    return `ambiguous: "${from}" has a map and another edge: a map is the only edge out of its node (the mapped node's own edges go on from there)`;
  }
  const staticEdges = [earlier, later].filter((edge) => edge.to !== undefined).length;
  if (staticEdges === 1) {
    return `ambiguous: "${from}" has both a static and a conditional edge: merge them into one edge with branches (a branch may name several targets)`;
  }
  return `ambiguous: "${from}" has two conditional edges: merge their branches into one edge`;
}

// ---------------------------------------------------------------------------------------------
// Maps

const ITEM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A map's own rules: an item name that is an identifier and no declared field, a list path of the
 * condition syntax, and a target that only its map runs, alone and without a visit limit (its
 * instances are counted together, see docs/graph-format.md "Map").
 */
function checkMaps(graph: GraphFile): PathIssue[] {
  return mapsIn(graph).flatMap(({ map, path }) => {
    const at = (key: string): DataPath => [...path, key];
    const { over, to, as } = map;
    const overProblem = statePathProblem(over, graph);
    return [
      ...(overProblem ? [{ path: at("over"), message: overProblem }] : []),
      ...checkItemName(as, at("as"), graph),
      ...checkMapTarget(graph, to, at("to")),
    ];
  });
}

function checkItemName(as: string, path: DataPath, graph: GraphFile): PathIssue[] {
  if (!ITEM_NAME.test(as)) return [{ path, message: `invalid item name "${as}": use letters, digits and _, starting with a letter or _` }];
  if (as in graph.state) {
    return [{ path, message: `item name "${as}" is a state field: each instance reads its item at vars.${as}, so name it otherwise` }];
  }
  return [];
}

function checkMapTarget(graph: GraphFile, to: string, path: DataPath): PathIssue[] {
  const nodeIds = Object.keys(graph.nodes);
  if (to === START_NODE || to === END_NODE) return [{ path, message: `a map runs a node once per item: ${to} cannot be mapped` }];
  const node = graph.nodes[to];
  if (!node) return [{ path, message: unknownName("node", to, nodeIds) }];
  if (node.max_visits !== undefined) {
    return [{ path, message: `the mapped node "${to}" has max_visits, which a map cannot apply: bound the loop on another node of it` }];
  }
  if (nodeKinds.get(node.kind)?.runsAlone === true) {
    return [
      {
        path,
        message: `node "${to}" (${node.kind}) cannot be mapped: it hands back the whole state it ran on, which would undo its other instances' writes`,
      },
    ];
  }
  return [...otherEntries(graph, to, path), ...checkMappedNodeEdges(graph, to)];
}

/** Every other way into a mapped node: it runs only by its map (`own`: where the map names it), with an item. */
function otherEntries(graph: GraphFile, to: string, own: DataPath): PathIssue[] {
  const where = own
    .slice(0, -2)
    .reduce<string>((text, part) => (typeof part === "number" ? `${text}[${part}]` : text ? `${text}.${part}` : part), "");
  const message = `"${to}" is mapped (${where}): it runs only by its map, once per item, so no other edge may lead to it`;
  const sameKey = (path: DataPath) => path.length === own.length && path.every((part, i) => part === own[i]);
  const fromEdges = graph.edges.flatMap((edge, index) => {
    const written = [
      ...namesAt(edge.to, ["edges", index, "to"]),
      ...(edge.branches ?? []).flatMap((branch, k) => [
        ...namesAt(branch.to, ["edges", index, "branches", k, "to"]),
        ...(branch.map ? [{ name: branch.map.to, path: ["edges", index, "branches", k, "map", "to"] }] : []),
      ]),
      ...(edge.map ? [{ name: edge.map.to, path: ["edges", index, "map", "to"] }] : []),
    ];
    return written.filter(({ name, path }) => name === to && !sameKey(path)).map(({ path }) => ({ path, message }));
  });
  const fromLimits = Object.entries(graph.nodes)
    .filter(([, node]) => node.max_visits !== undefined && node.on_limit === to)
    .map(([id]) => ({ path: ["nodes", id, "on_limit"], message }));
  return [...fromEdges, ...fromLimits];
}

/** A mapped node's instances each route: only edges that lead on once, whichever instance routes, can follow it. */
function checkMappedNodeEdges(graph: GraphFile, to: string): PathIssue[] {
  return graph.edges.flatMap((edge, index) => {
    if (edge.from !== to || edge.to !== undefined) return [];
    const key = edge.branches !== undefined ? "branches" : "map";
    return [
      {
        path: ["edges", index, key],
        at: "key" as const,
        message: `"${to}" is mapped: each instance would take this ${key === "map" ? "map" : "conditional edge"} on its own; lead on with a static edge (it runs once, after every instance), and ${key === "map" ? "map" : "branch"} from there`,
      },
    ];
  });
}

const PATH_ROOTS = ["task", "outputs", "vars", "visits", "messages"];

function checkCondition(condition: RawCondition, path: DataPath, graph: GraphFile): PathIssue[] {
  const nested = [
    ...(condition.all ?? []).map((c, i) => checkCondition(c, [...path, "all", i], graph)),
    ...(condition.any ?? []).map((c, i) => checkCondition(c, [...path, "any", i], graph)),
    ...(condition.not ? [checkCondition(condition.not, [...path, "not"], graph)] : []),
  ].flat();
  const problem = condition.path === undefined ? undefined : statePathProblem(condition.path, graph);
  return problem ? [...nested, { path: [...path, "path"], message: problem }] : nested;
}

/** Why a condition's state path can never name a value, if it cannot. */
function statePathProblem(statePath: string, graph: GraphFile): string | undefined {
  const segments = statePath.split(".");
  const [root = "", name, ...rest] = segments;
  const where = `path "${statePath}"`;
  const nodeIds = Object.keys(graph.nodes);
  if (segments.includes("")) return `malformed ${where}: remove the empty segment`;
  switch (root) {
    case "task":
      return name === undefined ? undefined : `"task" is a string and has no fields: use path: task`;
    case "messages":
      return undefined;
    case "outputs":
    case "visits":
      if (name === undefined) return `${where} needs a node id: ${root}.<node>`;
      if (!nodeIds.includes(name)) return unknownName("node", name, nodeIds, where);
      return root === "visits" && rest.length > 0 ? `visits.${name} is a number and has no fields` : undefined;
    case "vars": {
      const fields = Object.keys(graph.state);
      if (name === undefined) return `${where} needs a field: vars.<field>`;
      if (fields.includes(name)) return undefined;
      return fields.length === 0
        ? `unknown state field "${name}" in ${where}: declare it under state:`
        : unknownName("state field", name, fields, where);
    }
    default:
      return unknownName("path root", root, PATH_ROOTS, where);
  }
}

function checkFlow(graph: GraphFile): PathIssue[] {
  const nodeIds = Object.keys(graph.nodes);
  if (!graph.edges.some((edge) => edge.from === START_NODE)) {
    return [{ path: ["edges"], at: "key", message: `no edge from START: add - { from: START, to: ${nodeIds[0] ?? "<node>"} }` }];
  }
  const flow = flowOf(graph);
  const reachable = reachableFrom([START_NODE], flow);
  // A node unreachable only because an edge misspells its name is covered by that edge's error.
  const misspelled = new Set(
    graph.edges
      .flatMap(targetsOf)
      .filter((to) => to !== END_NODE && !nodeIds.includes(to))
      .map((to) => closestName(to, nodeIds)),
  );
  const unreachable: PathIssue[] = nodeIds
    .filter((id) => !reachable.has(id) && !misspelled.has(id))
    .map((id) => ({
      path: ["nodes", id],
      at: "key",
      message: `node "${id}" is unreachable from START: add an edge into it or remove it`,
    }));
  return [...unreachable, ...checkLoopLimits(graph, flow), ...checkParallel(graph, flow, reachable)];
}

/**
 * Every cycle must pass through a node with max_visits (or a looper, bounded by max_rounds). Equivalently: once the bounded nodes are
 * removed, no cycle may remain; each remaining strongly connected component is one unbounded loop.
 */
function checkLoopLimits(graph: GraphFile, flow: Flow): PathIssue[] {
  // A looper bounds every loop through it with its round limit (max_rounds).
  const boundsLoops = (id: string): boolean => nodeKinds.get(graph.nodes[id]?.kind ?? "")?.boundsLoops === true;
  const unbounded = Object.keys(graph.nodes).filter((id) => graph.nodes[id]?.max_visits === undefined && !boundsLoops(id));
  const inScope = new Set(unbounded);
  const next = (id: string) => [...(flow.get(id)?.keys() ?? [])].filter((to) => inScope.has(to));
  return stronglyConnectedComponents(unbounded, next)
    .filter((component) => component.length > 1 || next(component[0] ?? "").includes(component[0] ?? ""))
    .map((component) => {
      const start = unbounded.find((id) => component.includes(id)) ?? "";
      const loop = cycleThrough(start, new Set(component), next);
      const fallbacks = loop.slice(1).flatMap((to, i) => {
        const from = loop[i] ?? "";
        const via = flow.get(from)?.get(to);
        return via === undefined ? [] : [`${from} reaches ${to} through the on_limit of ${via}`];
      });
      const note = fallbacks.length ? ` (${fallbacks.join("; ")})` : "";
      return {
        path: ["nodes", start],
        at: "key",
        message: `loop ${loop.join(" → ")} has no limit${note}: set max_visits on one of its nodes`,
      };
    });
}

/** Tarjan's algorithm. */
function stronglyConnectedComponents(ids: string[], next: (id: string) => string[]): string[][] {
  const visited = new Map<string, { index: number; lowLink: number }>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (id: string): void => {
    const mark = { index: visited.size, lowLink: visited.size };
    visited.set(id, mark);
    stack.push(id);
    onStack.add(id);
    for (const to of next(id)) {
      const seen = visited.get(to);
      if (!seen) {
        visit(to);
        mark.lowLink = Math.min(mark.lowLink, visited.get(to)?.lowLink ?? mark.lowLink);
      } else if (onStack.has(to)) {
        mark.lowLink = Math.min(mark.lowLink, seen.index);
      }
    }
    if (mark.lowLink !== mark.index) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === id) break;
    }
    components.push(component);
  };
  for (const id of ids) if (!visited.has(id)) visit(id);
  return components;
}

/** The shortest cycle from `start` back to itself within `members`, as `[start, …, start]`. */
function cycleThrough(start: string, members: Set<string>, next: (id: string) => string[]): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
    for (const to of next(id)) {
      if (to === start) {
        const path = [id];
        for (let step = cameFrom.get(id); step !== undefined; step = cameFrom.get(step)) path.unshift(step);
        return [...path, start];
      }
      if (members.has(to) && !cameFrom.has(to)) {
        cameFrom.set(to, id);
        queue.push(to);
      }
    }
  }
  return [start, start]; // unreachable for a start inside a strongly connected component
}
