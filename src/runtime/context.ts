import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { ConfigError } from "../errors.js";
import { createModel } from "../models/index.js";
import { OFFLINE_MODEL_HINT } from "../models/spec.js";
import type { Recorder } from "../runs/recordings.js";
import type { EffectRequest } from "./effects.js";
import type { ChatModel } from "../models/types.js";
import type { InboxEntry } from "../runs/inbox.js";
import type { ToolStepSnapshots } from "../snapshots/tool-step-hook.js";
import type { EventSink } from "./events.js";
import type { LoopSupervisor } from "../engine/loop-supervisor.js";
import type { PolicyRule } from "../state/rules.js";
import type { ApprovalMode } from "../state/thread.js";
import { packageRoot } from "../package.js";

/**
 * Per-process services a run's nodes use. Nothing here is checkpointed: what must survive a
 * crash lives in the graph state.
 */
export interface RunContext {
  threadId: string;
  /** Directory the nodes work in (`--workspace`). */
  workspace: string;
  /** Run-level model (`--model` or LOOPGRAPH_MODEL, or the one recorded with the thread). */
  runModel?: string;
  /** How tool calls that the policy does not settle are decided (`--approval`). */
  approvalMode: ApprovalMode;
  /** The user's policy rules (`.loopgraph/policy.yaml`). */
  userRules: PolicyRule[];
  /** `--max-rounds`: overrides the looper node's round limit when a loop starts. */
  maxRounds?: number;
  /** Commands sent to this thread after the given inbox id (from `loopgraph send/stop`). */
  readInbox(cursor: number): InboxEntry[];
  /** Stores model outputs and effect results with the run (src/runs/recordings.ts); unset, nothing is recorded. */
  record?: Recorder;
  /** Recorded replay only: answers an effect (tool call, git read, inbox read) from the record instead of performing it. */
  replayEffect?: (request: EffectRequest) => Promise<unknown>;
  emit: EventSink;
  /** Returns the model for a spec, created once per process. */
  model(spec: string): ChatModel;
  signal: AbortSignal;
  /** The Looper of a graph with a mediator node: its loop runs as the linked thread `<thread>.loop`. */
  looper?: LoopSupervisor;
  /** Workspace snapshots around file-changing tool steps, for `loopgraph rewind` (none when absent). */
  snapshots?: ToolStepSnapshots;
}

const noModel = (offlineHint: string): string =>
  "no model configured: pass --model provider:model or set LOOPGRAPH_MODEL (e.g. openai:gpt-4o-mini with OPENAI_API_KEY); " +
  `to try offline: ${offlineHint}`;

export const NO_MODEL_MESSAGE = noModel(OFFLINE_MODEL_HINT);

/** The no-model message for a graph: its offline hint names the scripted file shipped for that graph, when there is one. */
export function noModelMessage(graphName: string, cwd: string): string {
  const root = packageRoot();
  const script = root === undefined ? undefined : join(root, "examples", `${graphName}.script.yaml`);
  if (script === undefined || !existsSync(script)) return NO_MODEL_MESSAGE;
  const shown = relative(cwd, script);
  return noModel(`--model scripted:${shown.startsWith("..") ? script : shown}`);
}

export function createModelCache(cwd: string, env: NodeJS.ProcessEnv): (spec: string) => ChatModel {
  const models = new Map<string, ChatModel>();
  return (spec) => {
    let model = models.get(spec);
    if (!model) {
      model = createModel(spec, { cwd, env });
      models.set(spec, model);
    }
    return model;
  };
}

/** The model for a node: the node's own, else the run's, else the graph's default; none is an error with `missing` as its message. */
export function pickModelSpec(
  nodeModel: string | undefined,
  runModel: string | undefined,
  graphModel: string | undefined,
  missing: string = NO_MODEL_MESSAGE,
): string {
  const spec = nodeModel ?? runModel ?? graphModel;
  if (!spec) throw new ConfigError(missing);
  return spec;
}
