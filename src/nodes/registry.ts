/**
 * The node kinds: the one place that lists them. Loading, compiling, drawing, fingerprinting and
 * replay look a node's kind up here. To add a kind: a folder `src/nodes/<kind>/` whose `kind.ts`
 * exports a NodeKind (src/runtime/node-kind.ts), and one line in BUILTIN_NODE_KINDS below.
 */
import type { NodeDefinition } from "../format/types.js";
import type { NodeKind } from "../runtime/node-kind.js";
import type { AgentNodeDefinition } from "./agent/definition.js";
import type { CoderNodeDefinition } from "./coder/definition.js";
import type { FunctionNodeDefinition } from "./function/definition.js";
import type { JudgeNodeDefinition } from "./judge/schema.js";
import type { LooperNodeDefinition } from "./looper/definition.js";
import type { MediatorNodeDefinition } from "./mediator/definition.js";
import type { MergeNodeDefinition } from "./merge/definition.js";
import type { ReviewNodeDefinition } from "./review/schema.js";
import type { SubgraphNodeDefinition } from "./subgraph/kind.js";
import { agentKind } from "./agent/kind.js";
import { coderKind } from "./coder/kind.js";
import { functionKind } from "./function/kind.js";
import { judgeKind } from "./judge/kind.js";
import { looperKind } from "./looper/kind.js";
import { mediatorKind } from "./mediator/kind.js";
import { mergeKind } from "./merge/kind.js";
import { reviewKind } from "./review/kind.js";
import { subgraphKind } from "./subgraph/kind.js";

/** The definition of a node of a built-in kind. */
export type BuiltinNodeDefinition =
  | AgentNodeDefinition
  | FunctionNodeDefinition
  | SubgraphNodeDefinition
  | CoderNodeDefinition
  | LooperNodeDefinition
  | ReviewNodeDefinition
  | JudgeNodeDefinition
  | MediatorNodeDefinition
  | MergeNodeDefinition;

// The registry holds kinds of every definition type; each is used only with its own definitions.
export type AnyNodeKind = NodeKind<any, any>;

/** In this order in the graph file's schema (and so in its JSON Schema and error messages). */
const BUILTIN_NODE_KINDS: readonly AnyNodeKind[] = [
  agentKind,
  functionKind,
  subgraphKind,
  coderKind,
  looperKind,
  reviewKind,
  judgeKind,
  mediatorKind,
  mergeKind,
];

export class NodeKindRegistry {
  private readonly kinds = new Map<string, AnyNodeKind>();
  private changes = 0;

  constructor(kinds: readonly AnyNodeKind[]) {
    for (const kind of kinds) this.register(kind);
  }

  /** Adds a kind (a plug-in, or a test's); its name must be new. */
  register(kind: AnyNodeKind): void {
    if (this.kinds.has(kind.kind)) throw new Error(`node kind "${kind.kind}" is registered already`);
    this.kinds.set(kind.kind, kind);
    this.changes++;
  }

  /** Takes a kind out again (a test's clean-up). */
  unregister(name: string): void {
    if (this.kinds.delete(name)) this.changes++;
  }

  /** Bumped by every change, so schemas built from the registry know when to be rebuilt. */
  get version(): number {
    return this.changes;
  }

  names(): string[] {
    return [...this.kinds.keys()];
  }

  all(): AnyNodeKind[] {
    return [...this.kinds.values()];
  }

  get(name: string): AnyNodeKind | undefined {
    return this.kinds.get(name);
  }

  /** The kind of a loaded node; a node of an unregistered kind cannot have been loaded. */
  of(node: NodeDefinition): AnyNodeKind {
    const kind = this.kinds.get(node.kind);
    if (!kind) throw new Error(`internal: node "${node.id}" has the unregistered kind "${node.kind}"`);
    return kind;
  }
}

export const nodeKinds = new NodeKindRegistry(BUILTIN_NODE_KINDS);
