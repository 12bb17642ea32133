/**
 * The LangGraph server's assistants: one per graph `loopgraph graphs list` lists (the project's,
 * then the package's), its `assistant_id` and `graph_id` the graph's name. Their graphs are
 * drawn as LangGraph draws a graph (`nodes`, `edges`), and their schemas are the state every
 * loopgraph graph has, with the graph's declared fields under `vars`.
 */
import { statSync } from "node:fs";
import type { GraphDefinition, StateFieldDefinition } from "../format/types.js";
import { edgeSources, edgeTargets, END_NODE, START_NODE } from "../format/types.js";
import { listGraphs, loadGraph, resolveGraphPath, type GraphListing } from "../graph/index.js";
import { APPROVAL_MODES } from "../state/thread.js";
import { HttpError } from "../ui/http.js";

export type Assistant = Record<string, unknown> & { assistant_id: string; graph_id: string };

export function assistantOf(listing: GraphListing): Assistant {
  const changed = statSync(listing.path, { throwIfNoEntry: false })?.mtime.toISOString() ?? new Date(0).toISOString();
  return {
    assistant_id: listing.name,
    graph_id: listing.name,
    name: listing.name,
    description: listing.description ?? null,
    config: {},
    context: {},
    metadata: { source: listing.source, file: listing.path },
    version: 1,
    created_at: changed,
    updated_at: changed,
  };
}

/** The graph an assistant id (a graph's name) names; 404 when no graph has that name. */
export async function findListing(cwd: string, assistantId: string): Promise<GraphListing> {
  const listing = (await listGraphs(cwd)).find((graph) => graph.name === assistantId);
  if (!listing) throw new HttpError(404, `no assistant "${assistantId}": an assistant is a graph, by name (loopgraph graphs list)`);
  return listing;
}

/**
 * The file a run of the assistant runs, as `loopgraph run <name>` here picks it: the project's
 * graph only when the user trusts it as it is, else loopgraph's own of that name (`notes` says
 * so); a project graph that is not trusted and has no such stand-in is a one-line error.
 */
export function runnableGraphFile(listing: GraphListing, cwd: string, env: NodeJS.ProcessEnv, notes: string[] = []): string {
  return resolveGraphPath(listing.name, cwd, undefined, { env, notes });
}

/** `POST /assistants/search`: by `graph_id` or `name` when given, `limit` from `offset`. */
export async function searchAssistants(cwd: string, query: Record<string, unknown>): Promise<Assistant[]> {
  const wanted = typeof query.graph_id === "string" ? query.graph_id : typeof query.name === "string" ? query.name : undefined;
  const all = (await listGraphs(cwd)).filter((listing) => wanted === undefined || listing.name === wanted).map(assistantOf);
  const offset = wholeNumber(query.offset, 0);
  return all.slice(offset, offset + wholeNumber(query.limit, 10));
}

export function wholeNumber(value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new HttpError(422, `expected a whole number, got ${JSON.stringify(value)}`);
  return number;
}

/** The graph (the file a run would run) drawn as LangGraph's `GET /assistants/{id}/graph` gives it: nodes, and edges (conditional ones marked). */
export async function assistantGraph(file: string): Promise<Record<string, unknown>> {
  const graph = await loadGraph(file);
  const id = (node: string) => (node === START_NODE ? "__start__" : node === END_NODE ? "__end__" : node);
  const nodes = [
    { id: "__start__", type: "schema", data: "__start__" },
    ...Object.entries(graph.nodes).map(([name, node]) => ({ id: name, type: "runnable", data: { id: ["loopgraph", node.kind], name } })),
    { id: "__end__", type: "schema", data: "__end__" },
  ];
  const edges = graph.edges.flatMap((edge) =>
    edgeSources(edge).flatMap((source) =>
      edgeTargets(edge).map((target) => ({ source: id(source), target: id(target), conditional: edge.kind === "conditional" })),
    ),
  );
  return { nodes, edges };
}

/** `GET /assistants/{id}/schemas`: the state every graph has (its declared fields under `vars`), what a run takes, what it may be configured with. */
export async function assistantSchemas(listing: GraphListing, file: string): Promise<Record<string, unknown>> {
  const graph = await loadGraph(file);
  const input = {
    type: "object",
    title: "input",
    description: "A run's task: `task`, or the text of the last human message of `messages`.",
    properties: { task: { type: "string" }, messages: { type: "array", items: { type: "object" } } },
  };
  return {
    graph_id: listing.name,
    input_schema: input,
    output_schema: stateSchema(graph),
    state_schema: stateSchema(graph),
    config_schema: {
      type: "object",
      title: "configurable",
      properties: {
        approval: {
          enum: [...APPROVAL_MODES],
          description: "as strict as the user's setting or stricter: a looser one is refused",
        },
      },
    },
    context_schema: null,
  };
}

function stateSchema(graph: GraphDefinition): Record<string, unknown> {
  return {
    type: "object",
    title: graph.name,
    properties: {
      task: { type: "string" },
      messages: { type: "array", items: { type: "object" } },
      outputs: { type: "object", description: "each node's latest output" },
      vars: {
        type: "object",
        properties: Object.fromEntries(Object.entries(graph.state).map(([name, field]) => [name, fieldSchema(field)])),
      },
    },
  };
}

const fieldSchema = (field: StateFieldDefinition): Record<string, unknown> => ({
  type: field.type,
  ...(field.description !== undefined && { description: field.description }),
  ...(field.default !== undefined && { default: field.default }),
});
