import type { z } from "zod";
import type { GraphDefinition, NodeCommon, NodeDefinition } from "../format/types.js";
import type { RunContext } from "./context.js";
import type { NodeFunction } from "./node-function.js";
import type { GraphStateValue } from "../state/graph-state.js";

/**
 * How a node kind's resolver reaches the files its YAML keys name, relative to the graph file.
 * Each method reports a problem against the node's key (`file:line:col`) and returns undefined.
 */
export interface NodeFiles {
  /** An existing file named by `key`: its absolute path. `what` names it in the message ("prompt file"). */
  file(relative: string, key: string, what: string): string | undefined;
  /** A prompt named by `key`, or the package's `prompts/<defaultName>` when the graph names none. */
  prompt(relative: string | undefined, key: string, defaultName: string): string | undefined;
  /** Another graph file named by `key`, loaded and validated (include cycles are reported). */
  graph(relative: string, key: string, what: string): Promise<GraphDefinition | undefined>;
  /** Any other problem with the value of `key`. */
  issue(key: string, message: string): void;
}

/** What the engine lends a node kind while compiling. */
export interface NodeBuild {
  /**
   * Whether the graph takes up a failure result of the node (another node names it, or an edge out
   * of it reads its output). When not, a node that fails (a Coder's failure result) fails the run.
   */
  failureRouted: boolean;
  /** A graph run inside the node, in the same thread: it inherits the run's checkpointer under the node's namespace. */
  compileInline(graph: GraphDefinition): Promise<NodeFunction>;
}

/**
 * A node kind: everything the engine, the loader, `graphs draw`, the fingerprint and replay know
 * about it. Each kind is one folder under `src/nodes/<kind>/`, registered in src/nodes/registry.ts;
 * nothing outside the registry switches on `kind`.
 */
export interface NodeKind<Def extends NodeDefinition = NodeDefinition, Raw = never> {
  /** The `kind:` value of graph files. */
  readonly kind: Def["kind"];
  /**
   * The node's keys as written in YAML (snake_case): a strict object with `kind: z.literal(kind)`,
   * the common keys (`nodeCommon` of src/format/node-schema.ts) and its own, defaults included.
   */
  readonly schema: z.ZodObject;
  /** The validated YAML node → its definition: files resolved to absolute paths, camelCase, defaults filled in. */
  resolve(raw: Raw, common: NodeCommon, files: NodeFiles): Def | undefined | Promise<Def | undefined>;
  /** The node works on the state's `task` (besides `{{task}}` in its prompt): a run of its graph needs one. */
  readonly readsTask?: boolean;
  /** The node calls a model: its model is resolved (and a missing one reported) before a run starts. */
  readonly usesModel: boolean;
  /** Loops through the node are bounded by the node itself (the Looper's round limit), so it needs no `max_visits`. */
  readonly boundsLoops?: boolean;
  /** YAML keys whose values are ids of other nodes of the graph (checked to exist); the definition has the same fields. */
  readonly nodeReferences?: readonly string[];
  /**
   * The `vars` fields (of the graph's `state:`) the node may write, from its YAML: "any" when it
   * does not say; nodes of a kind without it write none. Two nodes that may run in the same
   * superstep must not both write a field without a reducer (checked when the graph loads).
   */
  varsWritten?(raw: Raw): readonly string[] | "any";
  /**
   * The node hands back the whole state it ran on (a subgraph), which would undo the writes of a
   * node run beside it: it may not run in the same superstep as another node.
   */
  readonly runsAlone?: boolean;
  /**
   * The definition of a node that runs at the same time as another node of its kind (the
   * instances of a map, or branches of a fan-out), from the one it resolved to and its YAML: a
   * Coder that does not say otherwise gets a working tree of its own.
   */
  runningBesideItsKind?(def: Def, raw: Raw): Def;
  /** Drawn as a subroutine (`[[…]]`) rather than a box. */
  readonly drawnAsSubroutine?: boolean;
  /** The graph that runs inside the node, in the same thread: drawn, fingerprinted and checked with it. */
  inlineGraph?(def: Def): GraphDefinition;
  /** Graphs the node runs as linked threads of their own: their models are checked before the run starts. */
  linkedGraphs?(def: Def): GraphDefinition[];
  /** Prompt files filled from the state (`renderPrompt`): their placeholders are checked when the graph loads. */
  templates?(def: Def): string[];
  /** Files the node reads besides the graph file (prompts, modules): changing one changes the graph's fingerprint. */
  files?(def: Def): string[];
  /** What the node does beyond calling a model (`replay --from` prints it before re-running): "writes files", "runs shell"… */
  sideEffects?(def: Def): string[];
  /**
   * How the run ended when the graph ended right after this node ran: undefined when it finished
   * its work; else failed, limited (a limit ended it before the work was judged done) or
   * interrupted (the user stopped it), with the reason. E.g. the Looper at its round limit.
   */
  ending?(def: Def, state: GraphStateValue): RunEnding | undefined;
  /** The node's LangGraph function for a run. */
  create(def: Def, graph: GraphDefinition, ctx: RunContext, build: NodeBuild): NodeFunction | Promise<NodeFunction>;
}

/** A run that ended other than by finishing its work, and why (see `NodeKind.ending`). */
export interface RunEnding {
  status: "failed" | "limited" | "interrupted";
  reason: string;
}

/** A node kind with its YAML type inferred from its schema. */
export function defineNodeKind<S extends z.ZodObject, Def extends NodeDefinition>(
  kind: Omit<NodeKind<Def, z.output<S>>, "schema"> & { schema: S },
): NodeKind<Def, z.output<S>> {
  return kind;
}

/** The nodes of `graph` that are of `kind`. */
export function nodesOfKind<Def extends NodeDefinition>(graph: GraphDefinition, kind: NodeKind<Def, never>): Def[] {
  return Object.values(graph.nodes).filter((node): node is Def => node.kind === kind.kind);
}
