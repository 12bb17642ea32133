/**
 * Checks the `{{…}}` placeholders of the prompt files a graph's nodes fill from the state (the
 * kinds' `templates`): each must name something the state can hold, so a typo is an error rather
 * than empty text in the prompt.
 */
import { closestName } from "../diagnostics/suggest.js";
import type { GraphDefinition, NodeDefinition } from "../format/types.js";
import { nodeKinds } from "../nodes/registry.js";
import { placeholdersIn } from "../runtime/prompt.js";
import { STATE_CHANNELS } from "../state/graph-state.js";
import type { GraphValidationError } from "../errors.js";
import { readRegularText } from "../diagnostics/regular-file.js";

type PositionedIssue = GraphValidationError["issues"][number];

/** Channels keyed by node id, whose second segment must name a node of the graph. */
const PER_NODE = ["outputs", "visits", "usage"];

/**
 * What a graph's placeholders may name besides its own nodes: a subgraph shares the state of the
 * graphs that include it, so its prompts may name their nodes and fields too.
 */
export interface PlaceholderNames {
  nodeIds: string[];
  /** Declared state fields (`vars.<field>`). */
  fields: string[];
}

type Known = PlaceholderNames;

/**
 * Problems with the placeholders in the nodes' prompt files, positioned in those files.
 * `shown` gives a prompt file's name as messages print it.
 */
export function checkPlaceholders(
  nodes: Record<string, NodeDefinition>,
  names: PlaceholderNames,
  shown: (absolute: string) => string,
): PositionedIssue[] {
  // The graph's own and outer names, and those of the graphs run inside its nodes (they share the state).
  const inner = allNodes(nodes).flatMap((node) => {
    const inline = nodeKinds.get(node.kind)?.inlineGraph?.(node as never);
    return inline ? Object.keys(inline.state) : [];
  });
  const known: Known = {
    nodeIds: [...new Set([...names.nodeIds, ...nodeIdsWithin(nodes)])],
    fields: [...new Set([...names.fields, ...inner])],
  };
  const issues: PositionedIssue[] = [];
  const checked = new Set<string>();
  for (const node of Object.values(nodes)) {
    for (const file of templatesOf(node)) {
      if (checked.has(file)) continue;
      checked.add(file);
      const template = readRegularText(file);
      for (const { path, offset } of placeholdersIn(template)) {
        const message = placeholderProblem(path, known);
        if (message) issues.push({ file: shown(file), ...positionOf(template, offset), message });
      }
    }
  }
  return issues;
}

/** Whether a run of the graph needs a task: a node works on it (its kind's `readsTask`) or fills `{{task}}` in its prompt. */
export function needsTask(graph: GraphDefinition): boolean {
  return allNodes(graph.nodes).some(
    (node) =>
      nodeKinds.get(node.kind)?.readsTask === true ||
      templatesOf(node).some((file) => placeholdersIn(readRegularText(file)).some(({ path }) => path.split(".")[0] === "task")),
  );
}

function templatesOf(node: NodeDefinition): string[] {
  const kind = nodeKinds.get(node.kind);
  return kind?.templates?.(node as never) ?? [];
}

function allNodes(nodes: Record<string, NodeDefinition>): NodeDefinition[] {
  return Object.values(nodes).flatMap((node) => {
    const inline = nodeKinds.get(node.kind)?.inlineGraph?.(node as never);
    return [node, ...(inline ? allNodes(inline.nodes) : [])];
  });
}

function nodeIdsWithin(nodes: Record<string, NodeDefinition>): string[] {
  return [...new Set(allNodes(nodes).map((node) => node.id))];
}

/** `unknown placeholder {{outputs.chekcer}}: did you mean {{outputs.checker}}?`, or undefined for a path the state can fill. */
function placeholderProblem(path: string, known: Known): string | undefined {
  const segments = path.split(".");
  const [root = "", name, ...rest] = segments;
  if (!segments.includes("") && isKnown(root, name, rest, known)) return undefined;
  const keyed = PER_NODE.includes(root) || root === "vars";
  const head = keyed && name !== undefined ? `${root}.${name}` : root;
  const tail = path.slice(head.length);
  const candidates = [
    "task",
    ...known.nodeIds.map((id) => `outputs.${id}`),
    ...known.fields.map((field) => `vars.${field}`),
    ...known.nodeIds.map((id) => `visits.${id}`),
    ...STATE_CHANNELS.filter((channel) => channel !== "task"),
  ];
  const suggestion = closestName(head, candidates);
  const subject = `unknown placeholder {{${path}}}`;
  if (suggestion !== undefined && suggestion !== head)
    return `${subject}: did you mean {{${suggestion}${suggestion === "task" ? "" : tail}}}?`;
  const nodes = known.nodeIds.length > 0 ? ` (nodes: ${known.nodeIds.join(", ")})` : "";
  const fields = known.fields.length > 0 ? `, {{vars.<field>}} (fields: ${known.fields.join(", ")})` : "";
  return `${subject}: use {{task}}, {{outputs.<node>}}${nodes}${fields}, {{visits.<node>}} or {{messages}}`;
}

function isKnown(root: string, name: string | undefined, rest: string[], known: Known): boolean {
  if (root === "task") return name === undefined;
  if (root === "vars") return name === undefined || known.fields.includes(name);
  if (PER_NODE.includes(root)) {
    if (name === undefined) return true;
    return known.nodeIds.includes(name) && (root !== "visits" || rest.length === 0);
  }
  return STATE_CHANNELS.includes(root);
}

/** 1-based line and column of a string index. */
function positionOf(text: string, offset: number): { line: number; col: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, col: offset - lineStart + 1 };
}
