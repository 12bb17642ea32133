/**
 * The checks of nodes that run together: a fan-out's branches run in the same supersteps until
 * they join, so they must not both write a `vars` field without a reducer, and a join must wait
 * for sources that do run in one pass.
 */
import type { DataPath, PathIssue } from "../diagnostics/positions.js";
import { START_NODE } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import { reachableFrom, flowOf, mapsIn, type Flow } from "./flow.js";
import { namesOf, type GraphFile } from "./schema.js";

/** Two nodes that may run in the same superstep, as branches of the fan-out from `from`. */
interface ConcurrentPair {
  a: string;
  b: string;
  from: string;
}

/** The nodes that may run at the same time as another node of their kind: a map's target (its instances), or a fan-out's. */
export function runningBesideTheirKind(graph: GraphFile): Set<string> {
  const kindOf = (id: string) => graph.nodes[id]?.kind;
  const mapped = mapsIn(graph).map(({ map }) => map.to);
  const pairs = concurrentPairs(graph).flatMap(({ a, b }) => (kindOf(a) !== undefined && kindOf(a) === kindOf(b) ? [a, b] : []));
  return new Set([...mapped, ...pairs]);
}

export function checkParallel(graph: GraphFile, flow: Flow, reachable: Set<string>): PathIssue[] {
  const pairs = concurrentPairs(graph);
  return [
    ...checkRunsAlone(graph, pairs),
    ...checkConcurrentWrites(graph, pairs),
    ...checkMappedWrites(graph),
    ...checkJoins(graph, flow, reachable, pairs),
  ];
}

/**
 * The groups of nodes one node starts together: its static targets, or the targets of one
 * branch, with the targets of the joins it feeds (when it is the last source to finish, they
 * start in the same superstep).
 */
function fanOuts(graph: GraphFile): { from: string; targets: string[] }[] {
  const nodeIds = Object.keys(graph.nodes);
  const joinTargets = (id: string) =>
    graph.edges.flatMap((edge) => (Array.isArray(edge.from) && edge.from.includes(id) ? namesOf(edge.to) : []));
  return [START_NODE, ...nodeIds].flatMap((from) => {
    const own = graph.edges.filter((edge) => edge.from === from);
    const staticTargets = own.flatMap((edge) => namesOf(edge.to));
    const branchTargets = own.flatMap((edge) => edge.branches ?? []).map((branch) => namesOf(branch.to));
    const groups = branchTargets.length > 0 ? branchTargets : [staticTargets];
    return groups
      .map((group) => [...new Set([...group, ...joinTargets(from)])].filter((id) => nodeIds.includes(id)))
      .filter((targets) => targets.length > 1)
      .map((targets) => ({ from, targets }));
  });
}

/**
 * Every two nodes on different branches of a fan-out, before a join: each branch is what its
 * target leads to by itself (joins wait for the other branches). Conservative: branches of
 * different lengths need not meet in one superstep, but a loop or a branch taken may make them.
 */
function concurrentPairs(graph: GraphFile): ConcurrentPair[] {
  const order = Object.keys(graph.nodes);
  const ownFlow = flowOf(graph, { joins: false });
  const pairs = new Map<string, ConcurrentPair>();
  for (const { from, targets } of fanOuts(graph)) {
    const branches = targets.map((target) => [...reachableFrom([target], ownFlow)]);
    branches.forEach((left, i) => {
      for (const right of branches.slice(i + 1)) {
        for (const u of left) {
          for (const v of right) {
            if (u === v) continue;
            const [a, b] = order.indexOf(u) < order.indexOf(v) ? [u, v] : [v, u];
            if (!pairs.has(`${a}\0${b}`)) pairs.set(`${a}\0${b}`, { a, b, from });
          }
        }
      }
    });
  }
  return [...pairs.values()];
}

const fanOutName = (from: string) => `branches of the fan-out from ${from}`;

/** A subgraph hands back the whole state it ran on, which would undo the writes of a node beside it. */
function checkRunsAlone(graph: GraphFile, pairs: ConcurrentPair[]): PathIssue[] {
  const runsAlone = (id: string) => nodeKinds.get(graph.nodes[id]?.kind ?? "")?.runsAlone === true;
  const reported = new Set<string>();
  return pairs.flatMap(({ a, b, from }) =>
    [a, b]
      .filter((id) => runsAlone(id) && !reported.has(id))
      .map((id) => {
        reported.add(id);
        const other = id === a ? b : a;
        return {
          path: ["nodes", id],
          at: "key" as const,
          message: `node "${id}" (${graph.nodes[id]?.kind}) may run in the same superstep as "${other}" (${fanOutName(from)}): it hands back the whole state it ran on, which would undo the other node's writes, so it cannot run beside another node`,
        };
      }),
  );
}

/** The state fields a node may write: its kind says, from its YAML ("any": every declared field). */
function varsWritten(graph: GraphFile, id: string): string[] {
  const node = graph.nodes[id];
  const written = node && nodeKinds.get(node.kind)?.varsWritten?.(node as never);
  if (written === undefined) return [];
  return written === "any" ? Object.keys(graph.state) : [...written];
}

function checkConcurrentWrites(graph: GraphFile, pairs: ConcurrentPair[]): PathIssue[] {
  const unreduced = Object.keys(graph.state).filter((field) => graph.state[field]?.reducer === undefined);
  return pairs.flatMap(({ a, b, from }) => {
    const both = unreduced.filter((field) => varsWritten(graph, a).includes(field) && varsWritten(graph, b).includes(field));
    if (both.length === 0) return [];
    const fields = both.map((field) => `vars.${field}`).join(", ");
    return [
      {
        path: ["nodes", b],
        at: "key" as const,
        message: `"${a}" and "${b}" may run in the same superstep (${fanOutName(from)}) and may both write ${fields}, which has no reducer: give the field a reducer (append, merge or replace) under state:, or list what each node writes under writes:`,
      },
    ];
  });
}

/** A map's instances run together: the mapped node writes only fields whose writes combine. */
function checkMappedWrites(graph: GraphFile): PathIssue[] {
  return mapsIn(graph).flatMap(({ map }) => {
    const to = map.to;
    if (graph.nodes[to] === undefined) return [];
    const unreduced = varsWritten(graph, to).filter((field) => graph.state[field]?.reducer === undefined);
    if (unreduced.length === 0) return [];
    const fields = unreduced.map((field) => `vars.${field}`).join(", ");
    return [
      {
        path: ["nodes", to],
        at: "key" as const,
        message: `"${to}" is mapped (its instances run in the same superstep) and may write ${fields}, which has no reducer: give the field a reducer (append, merge or replace) under state:, or list what the node writes under writes:`,
      },
    ];
  });
}

/** Each source of a join must be reached, and every two of them must run in one pass: together, or one after the other. */
function checkJoins(graph: GraphFile, flow: Flow, reachable: Set<string>, pairs: ConcurrentPair[]): PathIssue[] {
  const together = new Set(pairs.flatMap(({ a, b }) => [`${a}\0${b}`, `${b}\0${a}`]));
  const leadsTo = (from: string, to: string) => reachableFrom([from], flow).has(to);
  return graph.edges.flatMap((edge, index) => {
    if (!Array.isArray(edge.from)) return [];
    const targets = namesOf(edge.to).join(", ");
    const at = (k: number): DataPath => ["edges", index, "from", k];
    const sources = edge.from.map((name, k) => ({ name, k })).filter(({ name }) => graph.nodes[name] !== undefined);
    const unreached = sources.filter(({ name }) => !reachable.has(name));
    if (unreached.length > 0) {
      return unreached.map(({ name, k }) => ({
        path: at(k),
        message: `join source "${name}" is unreachable from START, so ${targets} would never run: add an edge into it, or leave it out of the join`,
      }));
    }
    return sources.flatMap(({ name, k }, i) => {
      const apart = sources
        .slice(0, i)
        .find((earlier) => !together.has(`${earlier.name}\0${name}`) && !leadsTo(earlier.name, name) && !leadsTo(name, earlier.name));
      if (!apart) return [];
      return [
        {
          path: at(k),
          message: `join sources "${apart.name}" and "${name}" never both run in one pass (no fan-out runs them together, and neither leads to the other; alternative branches of a conditional edge, say), so ${targets} would never run: join nodes that a fan-out starts together`,
        },
      ];
    });
  });
}
