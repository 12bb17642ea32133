/**
 * The validated, resolved form of a graph file (`graphs/*.yaml`).
 * Produced by `loadGraph()` in ./load.ts; consumed by the engine's compiler.
 * All paths here are absolute.
 */

import type { LoopDetectionOptions } from "../tools/loop-detection.js";
import type { ReviewNodeDefinition } from "../nodes/review/schema.js";
import type { PolicyRule } from "../state/rules.js";

/** A serialisable condition over graph state, used by conditional edges. */
export type Condition =
  | { all: Condition[] }
  | { any: Condition[] }
  | { not: Condition }
  | ComparisonCondition;

export type ComparisonOperator =
  | "eq"
  | "ne"
  | "in"
  | "not_in"
  | "gt"
  | "gte"
  | "lt"
  | "lte"
  | "exists"
  | "contains"
  | "matches";

/** `{ path: "outputs.critique.verdict", eq: "approve" }`: exactly one operator key. */
export interface ComparisonCondition {
  path: string;
  op: ComparisonOperator;
  value: unknown;
}

/** One branch of a conditional edge; the first branch whose `when` holds is taken. */
export interface Branch {
  when?: Condition;
  to: string; // node id or "END"
}

export type EdgeDefinition =
  | { kind: "static"; from: string; to: string }
  | { kind: "conditional"; from: string; branches: Branch[] };

/** A small JSON-Schema subset describing an agent's structured output. */
export interface OutputSchema {
  type: "object" | "string" | "number" | "integer" | "boolean" | "array";
  properties?: Record<string, OutputSchema>;
  required?: string[];
  items?: OutputSchema;
  enum?: (string | number | boolean)[];
  description?: string;
}

interface NodeCommon {
  id: string;
  description?: string;
  /** Per-node model override, `provider:model`. */
  model?: string;
  /** Loop bound: the node runs at most this many times in one run. */
  maxVisits?: number;
  /** Where an edge into this node goes once `maxVisits` is used up (default END). */
  onLimit?: string;
}

export interface AgentNodeDefinition extends NodeCommon {
  kind: "agent";
  /** Absolute path of the Markdown system prompt. */
  promptFile: string;
  /** Structured output: the model must answer with JSON matching this schema. */
  schema?: OutputSchema;
  /** Whether the thread's message history is sent to the model (default true). */
  history: boolean;
}

export interface FunctionNodeDefinition extends NodeCommon {
  kind: "function";
  /** Absolute path of a .ts/.js/.mjs module. */
  module: string;
  /** Name of the exported function (default "default"). */
  exportName: string;
}

export interface SubgraphNodeDefinition extends NodeCommon {
  kind: "subgraph";
  /** The nested graph, already loaded and validated. */
  graph: GraphDefinition;
}

/** A tool-using coding agent: a model ⇄ tools loop checkpointed at every step. */
export interface CoderNodeDefinition extends NodeCommon {
  kind: "coder";
  /** Absolute path of the Markdown system prompt (default: the package's prompts/coder.md). */
  promptFile: string;
  /** Model calls per turn before the Coder stops with a step-limit failure (default 25). */
  maxSteps: number;
  /** Tool names the Coder may use (default: all built-in tools). */
  tools: string[];
  loopDetection: LoopDetectionOptions;
  compression: { budgetTokens: number; keepRecentTurns: number };
  /** Tool results longer than this (characters) are cut to head and tail; the full text goes to an artifact. */
  resultBudgetChars: number;
}

/** The Looper: hand-written round logic (no model) between the Coder, Review and Judge phases. */
export interface LooperNodeDefinition extends NodeCommon {
  kind: "looper";
  /** Rounds before the loop ends with "round limit" (default 5; `--max-rounds` overrides). */
  maxRounds: number;
  /** Node ids of the phases. */
  coder: string;
  review: string;
  judge: string;
}

/** The Judge: decides after each round whether to continue (with which task) or terminate. */
export interface JudgeNodeDefinition extends NodeCommon {
  kind: "judge";
  /** Node whose output is the Coder result (default "coder"). */
  coder: string;
  /** Node whose output is the Review result (default "review"). */
  review: string;
  /** Absolute path of the Markdown system prompt (default: the package's prompts/judge.md). */
  promptFile: string;
}

/** The Mediator: talks with the user and drives a Looper that runs `loop` as the linked thread `<thread>.loop`. */
export interface MediatorNodeDefinition extends NodeCommon {
  kind: "mediator";
  /** Absolute path of the Markdown system prompt (default: the package's prompts/mediator.md). */
  promptFile: string;
  /** The graph the Looper runs (it has a looper node), already loaded and validated. */
  loop: GraphDefinition;
}

export type NodeDefinition =
  | AgentNodeDefinition
  | FunctionNodeDefinition
  | SubgraphNodeDefinition
  | CoderNodeDefinition
  | LooperNodeDefinition
  | ReviewNodeDefinition
  | JudgeNodeDefinition
  | MediatorNodeDefinition;

export interface StateFieldDefinition {
  type: "string" | "number" | "boolean" | "object" | "array";
  default?: unknown;
  description?: string;
}

export interface GraphLimits {
  /** Max supersteps of one run (LangGraph recursion limit). Default 100. */
  maxSteps: number;
}

export interface GraphDefinition {
  version: 1;
  name: string;
  description?: string;
  /** Absolute path of the YAML file. */
  file: string;
  /** Default model for agent nodes of this graph, `provider:model`. */
  model?: string;
  /** User-declared fields, stored under `vars` in the state. */
  state: Record<string, StateFieldDefinition>;
  nodes: Record<string, NodeDefinition>;
  edges: EdgeDefinition[];
  breakpoints: { before: string[]; after: string[] };
  limits: GraphLimits;
  /** Policy rules of this graph file (`policy.rules`), for tool-using nodes. */
  policy: PolicyRule[];
}

export const END_NODE = "END";
export const START_NODE = "START";
