import { END_NODE, START_NODE, edgeSources, type Condition, type GraphDefinition, type NodeDefinition } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";

/**
 * A Mermaid `flowchart TD` of a graph: conditional edges labelled with their condition, loop
 * limits and breakpoints in the node labels, subgraphs as nested `subgraph` blocks.
 */
export function drawMermaid(graph: GraphDefinition, marks?: RunMarks): string {
  const drawing = new Drawing(marks);
  drawing.drawGraph(graph, "", "  ");
  return drawing.toString();
}

/** A run drawn on its graph: how often each top-level node ran, the node it is at, the nodes that failed. */
export interface RunMarks {
  visits: Readonly<Record<string, number>>;
  current?: string;
  failed?: readonly string[];
}

const MAX_LABEL = 48;
/** Words Mermaid's flowchart parser treats as keywords; a node with such an id breaks the chart. */
const RESERVED_IDS = /^(end|graph|flowchart|subgraph|direction|style|class|classdef|click|linkstyle|default)$/i;

class Drawing {
  private readonly lines = ["flowchart TD"];
  private readonly breakpointNodes: string[] = [];
  private readonly usedIds = new Set<string>();
  /** Mermaid ids of the top-level nodes, for the run's marks. */
  private readonly topIds = new Map<string, string>();

  constructor(private readonly marks?: RunMarks) {}

  toString(): string {
    const tail = this.breakpointNodes.length
      ? [`  classDef breakpoint stroke-dasharray: 5 5`, `  class ${this.breakpointNodes.join(",")} breakpoint`]
      : [];
    return [...this.lines, ...tail, ...this.markLines()].join("\n");
  }

  /** Classes of the run's marks: visited nodes filled, failed ones red, the current one outlined. */
  private markLines(): string[] {
    if (!this.marks) return [];
    const { visits, current, failed = [] } = this.marks;
    const ids = (names: readonly string[]) => names.flatMap((name) => (this.topIds.has(name) ? [this.topIds.get(name)!] : []));
    const classes: [string, string, string[]][] = [
      ["visited", "fill:#d9f2dd,stroke:#2e7d32", ids(Object.keys(visits).filter((name) => (visits[name] ?? 0) > 0))],
      ["failed", "fill:#fbdcdc,stroke:#c62828", ids(failed)],
      ["current", "stroke:#e65100,stroke-width:4px", ids(current ? [current] : [])],
    ];
    return classes.flatMap(([name, style, members]) =>
      members.length > 0 ? [`  classDef ${name} ${style}`, `  class ${members.join(",")} ${name}`] : [],
    );
  }

  /** Draws `graph` with its Mermaid ids prefixed by `scope` (empty at the top level). */
  drawGraph(graph: GraphDefinition, scope: string, indent: string): void {
    const ids = new Map<string, string>([
      [START_NODE, this.allocate(`${scope}__start__`)],
      [END_NODE, this.allocate(`${scope}__end__`)],
    ]);
    for (const id of Object.keys(graph.nodes)) ids.set(id, this.allocate(scope + id.replace(/[^A-Za-z0-9_]/g, "_")));
    if (scope === "") for (const [name, id] of ids) this.topIds.set(name, id);
    const idOf = (name: string): string => ids.get(name) ?? name;

    this.lines.push(`${indent}${idOf(START_NODE)}([START])`);
    for (const node of Object.values(graph.nodes)) {
      const breakpoints = breakpointsOf(graph, node.id);
      const label = nodeLabel(node, breakpoints, scope === "" ? this.marks?.visits[node.id] : undefined);
      if (breakpoints.length) this.breakpointNodes.push(idOf(node.id));
      const kind = nodeKinds.of(node);
      if (kind.inlineGraph) {
        this.lines.push(`${indent}subgraph ${idOf(node.id)}["${label}"]`, `${indent}  direction TB`);
        this.drawGraph(kind.inlineGraph(node), `${idOf(node.id)}_`, `${indent}  `);
        this.lines.push(`${indent}end`);
      } else {
        const [open, close] = kind.drawnAsSubroutine ? ["[[", "]]"] : ["[", "]"];
        this.lines.push(`${indent}${idOf(node.id)}${open}"${label}"${close}`);
      }
    }
    this.lines.push(`${indent}${idOf(END_NODE)}([END])`);

    // `a & b`: Mermaid's several nodes at one end of an edge (a fan-out's targets, a join's sources).
    const idsOf = (names: string[]): string => names.map(idOf).join(" & ");
    for (const edge of graph.edges) {
      if (edge.kind === "map") {
        // A thick arrow: the target runs once per item.
        const label = escapeLabel(truncate(`each ${edge.as} of ${edge.over}`));
        this.lines.push(`${indent}${idOf(edge.from)} ==>|"${label}"| ${idsOf(edge.to)}`);
        continue;
      }
      if (edge.kind !== "conditional") {
        this.lines.push(`${indent}${idsOf(edgeSources(edge))} --> ${idsOf(edge.to)}`);
        continue;
      }
      for (const branch of edge.branches) {
        const when = branch.when ? describeCondition(branch.when) : "else";
        const label = escapeLabel(truncate(branch.map ? `${when}: each ${branch.map.as} of ${branch.map.over}` : when));
        this.lines.push(`${indent}${idOf(edge.from)} ${branch.map ? "==>" : "-->"}|"${label}"| ${idsOf(branch.to)}`);
      }
    }
    const hasOutgoing = new Set(graph.edges.flatMap(edgeSources));
    for (const node of Object.values(graph.nodes)) {
      if (node.maxVisits !== undefined) {
        const label = escapeLabel(`after ${node.maxVisits} visits`);
        this.lines.push(`${indent}${idOf(node.id)} -.->|"${label}"| ${idOf(node.onLimit ?? END_NODE)}`);
      }
      // A node without outgoing edges ends the run.
      if (!hasOutgoing.has(node.id)) this.lines.push(`${indent}${idOf(node.id)} -.-> ${idOf(END_NODE)}`);
    }
  }

  private allocate(wanted: string): string {
    let id = RESERVED_IDS.test(wanted) ? `${wanted}_` : wanted;
    for (let n = 2; this.usedIds.has(id); n++) id = `${wanted}_${n}`;
    this.usedIds.add(id);
    return id;
  }
}

function breakpointsOf(graph: GraphDefinition, id: string): string[] {
  return (["before", "after"] as const).filter((when) => graph.breakpoints[when].includes(id));
}

function nodeLabel(node: NodeDefinition, breakpoints: string[], visits?: number): string {
  const lines = [node.id];
  if (visits) lines.push(`ran ${visits}×`);
  const inline = nodeKinds.of(node).inlineGraph?.(node);
  if (inline) lines.push(`graph: ${inline.name}`);
  if (node.maxVisits !== undefined) lines.push(`max_visits: ${node.maxVisits}`);
  if (breakpoints.length) lines.push(`breakpoint: ${breakpoints.join(", ")}`);
  return lines.map(escapeLabel).join("<br/>");
}

const OPERATOR_SYMBOLS: Record<string, string> = {
  eq: "==",
  ne: "!=",
  gt: ">",
  gte: ">=",
  lt: "<",
  lte: "<=",
  in: "in",
  not_in: "not in",
  contains: "contains",
  matches: "matches",
};

/** A short human rendering of a condition: `verdict == approve`, `score >= 8 and not (…)`. */
export function describeCondition(condition: Condition): string {
  const nested = (c: Condition) => ("all" in c || "any" in c ? `(${describeCondition(c)})` : describeCondition(c));
  if ("all" in condition) return condition.all.map(nested).join(" and ");
  if ("any" in condition) return condition.any.map(nested).join(" or ");
  if ("not" in condition) return `not (${describeCondition(condition.not)})`;
  // `outputs.<node>.<field>` reads best as just the field, the node being the edge's source.
  const path = condition.path.replace(/^outputs\.[^.]+\.(.+)$/, "$1");
  if (condition.op === "exists") return `${path} ${condition.value ? "exists" : "is missing"}`;
  const value = condition.op === "matches" ? `/${String(condition.value)}/` : describeValue(condition.value);
  return `${path} ${OPERATOR_SYMBOLS[condition.op] ?? condition.op} ${value}`;
}

function describeValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return `[${value.map(describeValue).join(", ")}]`;
  return JSON.stringify(value);
}

function truncate(text: string): string {
  return text.length > MAX_LABEL ? `${text.slice(0, MAX_LABEL - 1)}…` : text;
}

const LABEL_ESCAPES: Record<string, string> = { "#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;" };

/** Mermaid entity codes for the characters that would end or reinterpret a quoted label; one line. */
export function escapeLabel(text: string): string {
  return text.replace(/[#"<>`]/g, (char) => LABEL_ESCAPES[char] ?? char).replace(/\s+/g, " ");
}
