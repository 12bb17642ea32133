import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { ConfigError } from "../errors.js";
import { createModel, modelTimeoutFromEnv, type UserProviders } from "../models/index.js";
import { OFFLINE_MODEL_HINT } from "../models/spec.js";
import type { EffectKind, Recorder } from "../runs/recordings.js";
import type { ChatModel } from "../models/types.js";
import type { InboxEntry } from "../runs/inbox.js";
import type { ToolStepSnapshots } from "../snapshots/tool-step-hook.js";
import type { EventSink } from "./events.js";
import type { PolicyRule } from "../state/rules.js";
import type { ThreadSettings } from "../state/thread.js";
import type { ApprovalRequest } from "./approval.js";
import type { Sandbox } from "../tools/sandbox.js";
import type { CommandGroups } from "../tools/types.js";
import type { McpHub } from "../tools/mcp.js";
import type { Hook } from "../tools/hook-config.js";
import { packageRoot } from "../package.js";
import type { DeclaredSubagent } from "../tools/subagent-config.js";
import type { PlanningConfig } from "../tools/planning-config.js";

/** An effect on the world outside the graph state: a Coder tool call, a git read of the workspace, an inbox read, a `function` node. */
export interface EffectRequest {
  kind: EffectKind;
  /** The node it is made for (the Coder's, the Review's, the Looper's id). */
  node: string;
  /** The tool's name, or the effect's (`git_baseline`, `git_diff`, `read_inbox`, `check_stop`), or a function node's export. */
  name: string;
  /** JSON arguments: a replay compares them with the record's. */
  args: unknown;
}

/** What a loop's progress log holds after a point. */
export interface LoopProgress {
  /** `[AUTO]` lines of the loop's message log after the first `since`. */
  lines: string[];
  /** How many `[AUTO]` lines the log has in all. */
  total: number;
}

/** The Looper's commands, each answered with a line for the user (the Mediator's tools and the chat's shortcuts give them). */
export interface LooperCommands {
  start(task: string): Promise<string>;
  addPending(task: string): Promise<string>;
  stop(): Promise<string>;
  status(): Promise<string>;
}

/** The Looper a Mediator drives (the engine's LoopSupervisor): its loop runs as the linked thread `threadId`. */
export interface LooperHandle extends LooperCommands {
  readonly threadId: string;
  /** The loop's `[AUTO]` progress lines after the first `since`, from its message log. */
  progress(since: number): Promise<LoopProgress>;
}

/**
 * Per-process services a run's nodes use. Nothing here is checkpointed: what must survive a
 * crash lives in the graph state.
 */
export interface RunContext {
  threadId: string;
  /** The task the thread was started with (`--task`, recorded with it; a chat's is empty): scripted responses may be restricted to it. */
  task?: string;
  /** Directory the nodes work in (`--workspace`); a coder with `workspace: worktree` gets its branch worktree's folder. */
  workspace: string;
  /** Set when `workspace` is a coder's branch worktree: the run's own workspace (the graph's policy rules are judged by it). */
  runWorkspace?: string;
  /** Set in the environment of the agent's commands besides what they keep of `env` (a worktree's `GIT_CEILING_DIRECTORIES`). */
  commandVariables?: Readonly<Record<string, string>>;
  /** The run's environment (loopgraph's own, not the agent's): its user config folder holds the projects the user trusts. */
  env: NodeJS.ProcessEnv;
  /** The thread's run-level model and approval mode (`--model`, `--approval`, or those recorded with the thread). */
  settings: ThreadSettings;
  /** The user's policy rules (`.loopgraph/policy.yaml`). */
  userRules: PolicyRule[];
  /** `--max-rounds`: overrides the looper node's round limit when a loop starts. */
  maxRounds?: number;
  /** `--attempts`: the attempts of each round of a loop this run starts (a looper with `attempts`). */
  attempts?: number;
  /** Commands sent to this thread after the given inbox id (from `loopgraph send/stop`). */
  readInbox(cursor: number): Promise<InboxEntry[]>;
  /** Stores model outputs and effect results with the run (src/runs/recordings.ts); unset, nothing is recorded. */
  record?: Recorder;
  /** Recorded replay only: answers an effect (tool call, git read, inbox read) from the record instead of performing it. */
  replayEffect?: (request: EffectRequest) => Promise<unknown>;
  emit: EventSink;
  /** Returns the model for a spec, created once per process. */
  model(spec: string): ChatModel;
  signal: AbortSignal;
  /** The Looper of a graph with a mediator node: its loop runs as the linked thread `<thread>.loop`. */
  looper?: LooperHandle;
  /**
   * The approvals this execution carries answers for (a resume with --approve/--reject, or a
   * terminal's answer): the calls they asked about take the answers, whatever the policy says
   * now. Set by the engine before it resumes.
   */
  answering?: ApprovalRequest[];
  /** Where the agent's commands run (default: the best this machine has). */
  sandbox?: Sandbox;
  /**
   * The values of the secrets in loopgraph's environment (model keys, credentials kept from the
   * agent): redacted from effect results and tool artifacts, so no model, state or file gets them.
   */
  secrets?: readonly string[];
  /** Workspace snapshots around file-changing tool steps, for `loopgraph rewind` (none when absent). */
  snapshots?: ToolStepSnapshots;
  /** Where the shell tool records its commands' process groups with the thread while they run. */
  commandGroups?: CommandGroups;
  /** The MCP servers this run declares (config files and graph), connected when first used; none when absent. */
  mcp?: McpHub;
  /** The user's hooks (config files): run before and after tool calls, and at the start and end of an execution. */
  hooks?: readonly Hook[];
  /** The subagent types of the config files, for every Coder (a coder node's own `subagents:` win over these). */
  subagents?: readonly DeclaredSubagent[];
  /** The config files' planning settings, for every Coder (a coder node's own `planning:` keys win over these). */
  planning?: PlanningConfig;
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

/** Options of the models a run creates. */
export interface ModelCacheOptions {
  /** Network models: an attempt that receives no data for this long is abandoned and retried (default LOOPGRAPH_MODEL_TIMEOUT, else 120 s). */
  idleTimeoutMs?: number;
  /** The user's own providers (their config file). */
  providers?: UserProviders;
}

/**
 * Creates each model once per process. A bad LOOPGRAPH_MODEL_TIMEOUT is a ConfigError here,
 * before anything runs.
 */
export function createModelCache(cwd: string, env: NodeJS.ProcessEnv, options: ModelCacheOptions = {}): (spec: string) => ChatModel {
  const models = new Map<string, ChatModel>();
  const idleTimeoutMs = options.idleTimeoutMs ?? modelTimeoutFromEnv(env);
  const { providers } = options;
  return (spec) => {
    let model = models.get(spec);
    if (!model) {
      model = createModel(spec, { cwd, env, providers, idleTimeoutMs });
      models.set(spec, model);
    }
    return model;
  };
}

/**
 * The model a node runs with, decided here and nowhere else: the node's own, else the run's, else
 * the default of the graph the node is in; none is an error with `missing` as its message.
 */
export function nodeModelSpec(
  node: { model?: string },
  graph: { model?: string },
  settings: ThreadSettings,
  missing: string = NO_MODEL_MESSAGE,
): string {
  const spec = node.model ?? settings.model ?? graph.model;
  if (!spec) throw new ConfigError(missing);
  return spec;
}
