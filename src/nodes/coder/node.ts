import { AIMessage } from "@langchain/core/messages";
import { buildCoderGraph, CODER_INSTANCE_KEY, type CoderInstance } from "./graph.js";
import { LimitError, LoopgraphError } from "../../errors.js";
import type { CoderStateValue } from "./state.js";
import type { CoderResult } from "./types.js";
import { unfinished } from "./planning.js";
import type { GraphDefinition } from "../../format/types.js";
import type { RunContext } from "../../runtime/context.js";
import type { NodeFunction } from "../../runtime/node-function.js";
import type { CoderNodeDefinition } from "./definition.js";
import { commitCoderWorktree, openCoderWorktree, SINGLE_RUN_INDEX, worktreeContext } from "./worktree.js";
import { mapInstanceOf, mapItemText, visitNumber } from "../../state/map.js";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { GraphStateValue } from "../../state/graph-state.js";

/**
 * The `coder` node kind: runs the Coder subgraph on the thread's task. The subgraph inherits the
 * run's checkpointer under its own namespace, so a resumed run continues the Coder at its last
 * finished step. The structured result lands in `outputs.<node>`. A failure that no other node
 * takes up (`failureRouted`: a looper, review or judge naming the node, or an edge reading its
 * output) fails the run instead. With `workspace: worktree` each visit works in the node's branch
 * worktree (worktree.ts) and commits it at its end; the output names the branch and its files.
 */
export function createCoderNode(def: CoderNodeDefinition, graph: GraphDefinition, ctx: RunContext, failureRouted: boolean): NodeFunction {
  const shared = def.workspace === "worktree" ? undefined : buildCoderGraph(def, graph, ctx, failureRouted);
  // One Coder graph per worktree folder: its context names the folder.
  const inWorktree = new Map<string, ReturnType<typeof buildCoderGraph>>();
  const coderIn = (dir: string) => {
    let coder = inWorktree.get(dir);
    if (!coder) inWorktree.set(dir, (coder = buildCoderGraph(def, graph, worktreeContext(ctx, dir), failureRouted)));
    return coder;
  };
  return async (state, config) => {
    const visit = visitNumber(state, def.id);
    const input: Partial<CoderStateValue> = {
      task: coderTask(state),
      ...carriedPlanning(state, def.id),
      scripted: state.scripted,
      sessionRules: state.sessionRules,
      inboxCursor: state.inboxCursor,
    };
    // A map's instances each work in their own worktree: the branch is numbered by the instance.
    const index = mapInstanceOf(state)?.index ?? SINGLE_RUN_INDEX;
    const worktree = shared ? undefined : await openCoderWorktree(ctx, def.id, index);
    const coder = shared ?? coderIn(worktree!.dir);
    const final = (await coder.invoke(input, withInstance(config, state))) as CoderStateValue;
    // The visit's work is kept on its branch, a failed visit's too (a merge node decides what reaches the workspace).
    const branch = worktree ? await commitCoderWorktree(ctx, def.id, visit, index) : undefined;
    const result = { ...final.result!, ...branch };
    // No node of the graph takes up the failure: it fails the run (model errors and the step limit already threw, see buildCoderGraph).
    if (!failureRouted && result.status !== "success") {
      const message = `the Coder failed (${result.failureKind ?? "unknown"}): ${result.failureReason ?? "no reason given"}`;
      // Its plan unfinished after the stop checks: a limit ended the work (exit 4), as the step limit does.
      throw result.failureKind === "plan_unfinished" ? new LimitError(message) : new LoopgraphError(message);
    }
    const previous = state.usage[def.id] ?? { inputTokens: 0, outputTokens: 0 };
    return {
      outputs: { [def.id]: result },
      messages: [new AIMessage({ id: `${def.id}-result-${visit}`, name: def.id, content: result.summary || result.failureReason || "" })],
      usage: {
        [def.id]: {
          inputTokens: previous.inputTokens + final.usage.inputTokens,
          outputTokens: previous.outputTokens + final.usage.outputTokens,
        },
      },
      scripted: final.scripted,
      sessionRules: final.sessionRules,
    };
  };
}

/**
 * What a turn starts with from the node's earlier turn in the thread: its plan when items are not
 * done (the task message then names them), and the thread's findings. A map's instances each
 * start afresh: the output of the node is their parts'.
 */
function carriedPlanning(state: GraphStateValue, node: string): Pick<Partial<CoderStateValue>, "todos" | "findings"> {
  const previous = state.outputs[node] as CoderResult | CoderResult[] | undefined;
  if (mapInstanceOf(state) !== undefined || previous === undefined || Array.isArray(previous)) return {};
  return {
    ...(unfinished(previous.todos ?? []).length > 0 && { todos: previous.todos }),
    ...(previous.findings?.length && { findings: previous.findings }),
  };
}

/** A mapped Coder's config: its instance, for the scripted model (see CODER_INSTANCE_KEY). */
function withInstance(config: LangGraphRunnableConfig, state: GraphStateValue): LangGraphRunnableConfig {
  const instance = mapInstanceOf(state);
  if (instance === undefined) return config;
  const value: CoderInstance = { index: instance.index, count: instance.count, scriptedAtStart: state.scripted };
  return { ...config, configurable: { ...config.configurable, [CODER_INSTANCE_KEY]: value } };
}

/** The Coder's task: the run's, and for an instance of a map, its part (the item). */
function coderTask(state: GraphStateValue): string {
  const instance = mapInstanceOf(state);
  if (instance === undefined) return state.task;
  const part = `Your part (${instance.as} ${instance.index + 1} of ${instance.count}): ${mapItemText(state, instance)}`;
  return state.task ? `${state.task}\n\n${part}` : part;
}
