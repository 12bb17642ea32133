/**
 * The validated, resolved form of a graph file (`graphs/*.yaml`).
 * Produced by `loadGraph()` (src/graph/load.ts); consumed by the engine's compiler.
 * All paths here are absolute.
 */

import type { PolicyRule } from "../state/rules.js";
import type { McpServer } from "../tools/mcp-servers.js";

/** A serialisable condition over graph state, used by conditional edges. */
export type Condition = { all: Condition[] } | { any: Condition[] } | { not: Condition } | ComparisonCondition;

export type ComparisonOperator = "eq" | "ne" | "in" | "not_in" | "gt" | "gte" | "lt" | "lte" | "exists" | "contains" | "matches";

/** `{ path: "outputs.critique.verdict", eq: "approve" }`: exactly one operator key. */
export interface ComparisonCondition {
  path: string;
  op: ComparisonOperator;
  value: unknown;
}

/** One branch of a conditional edge; the first branch whose `when` holds is taken. */
export interface Branch {
  when?: Condition;
  /** Node ids (or "END"): several run together, in the same superstep; a map's branch: its mapped node. */
  to: string[];
  /** The branch maps its one target over a list (see MapEdge): it runs once per item. */
  map?: Omit<MapEdge, "kind" | "from" | "to">;
}

/**
 * A map: its one target runs once per item of the list at `over` (a state path), the instances
 * together, each with its item at `vars.<as>` (docs/graph-format.md, "Map").
 */
export interface MapEdge {
  kind: "map";
  from: string;
  /** The mapped node, alone (a list so that the edge's targets read as every other edge's). */
  to: [string];
  over: string;
  as: string;
  /** At most this many instances at once (else: all, capped by the graph's `limits.maxConcurrency`). */
  maxConcurrency?: number;
}

/**
 * An edge of a loaded graph. Targets are lists: several targets run together, in the same
 * superstep (a fan-out). A join runs its targets once, after all its sources have finished.
 */
export type EdgeDefinition =
  | { kind: "static"; from: string; to: string[] }
  | { kind: "conditional"; from: string; branches: Branch[] }
  | { kind: "join"; from: string[]; to: string[] }
  | MapEdge;

/** Every map of a graph: its map edges, and the branches of conditional edges that map (as map edges from the edge's source). */
export function mapsOf(edges: readonly EdgeDefinition[]): MapEdge[] {
  return edges.flatMap((edge): MapEdge[] => {
    if (edge.kind === "map") return [edge];
    if (edge.kind !== "conditional") return [];
    return edge.branches.flatMap((branch) => (branch.map ? [{ kind: "map", from: edge.from, to: [branch.to[0]!], ...branch.map }] : []));
  });
}

/** The nodes whose completion an edge follows: its source, or a join's sources. */
export function edgeSources(edge: EdgeDefinition): string[] {
  return edge.kind === "join" ? edge.from : [edge.from];
}

/** Every target an edge names, in every branch (before visit limits). */
export function edgeTargets(edge: EdgeDefinition): string[] {
  return edge.kind === "conditional" ? [...new Set(edge.branches.flatMap((branch) => branch.to))] : edge.to;
}

/** A small JSON-Schema subset describing an agent's structured output. */
export interface OutputSchema {
  type: "object" | "string" | "number" | "integer" | "boolean" | "array";
  properties?: Record<string, OutputSchema>;
  required?: string[];
  items?: OutputSchema;
  enum?: (string | number | boolean)[];
  description?: string;
}

/**
 * What every node of a loaded graph has. Each node kind (`src/nodes/<kind>/`) extends it with its
 * own resolved settings; `kind` names the kind in the node kind registry.
 */
export interface NodeDefinition {
  id: string;
  kind: string;
  description?: string;
  /** Per-node model override, `provider:model`. */
  model?: string;
  /** Loop bound: the node runs at most this many times in one run. */
  maxVisits?: number;
  /** Where an edge into this node goes once `maxVisits` is used up (default END). */
  onLimit?: string;
}

/** The keys every node has, as a node kind's resolver receives them. */
export type NodeCommon = Omit<NodeDefinition, "kind">;

/**
 * How concurrent writes of one `vars` field combine: arrays concatenated (`append`), objects
 * shallow-merged (`merge`), or the last write wins (`replace`). A field without one may not be
 * written by two nodes of one superstep (checked when the graph loads).
 */
export type VarReducer = "append" | "merge" | "replace";

export interface StateFieldDefinition {
  type: "string" | "number" | "boolean" | "object" | "array";
  default?: unknown;
  description?: string;
  reducer?: VarReducer;
}

export interface GraphLimits {
  /** Max supersteps of one run (LangGraph recursion limit). Default 100. */
  maxSteps: number;
  /** At most this many instances of one map at once (each map's own bound may be lower). */
  maxConcurrency?: number;
}

/** A loaded graph; `Node` narrows its nodes where the kinds are known (e.g. BuiltinNodeDefinition). */
export interface GraphDefinition<Node extends NodeDefinition = NodeDefinition> {
  version: 1;
  name: string;
  description?: string;
  /** Absolute path of the YAML file. */
  file: string;
  /** Default model for agent nodes of this graph, `provider:model`. */
  model?: string;
  /** User-declared fields, stored under `vars` in the state. */
  state: Record<string, StateFieldDefinition>;
  nodes: Record<string, Node>;
  edges: EdgeDefinition[];
  breakpoints: { before: string[]; after: string[] };
  limits: GraphLimits;
  /** Policy rules of this graph file (`policy.rules`), for tool-using nodes. */
  policy: PolicyRule[];
  /** MCP servers the graph declares (`mcp_servers:`); the config's servers of the same name replace them. */
  mcpServers?: McpServer[];
}

export const END_NODE = "END";
export const START_NODE = "START";
