import { closeSync, openSync, readdirSync, readSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { LoopgraphError } from "../../errors.js";
import type { GraphDefinition } from "../../format/types.js";
import type { RunContext } from "../../runtime/context.js";
import { performEffect } from "../../runtime/effects.js";
import { invalidArgumentsResult } from "../../runtime/tool-call.js";
import { MEDIATOR_TOOLS, runMediatorTool } from "./tools.js";
import { renderPrompt } from "../../runtime/prompt.js";
import { messageText, startNodeSession } from "../../runtime/model-session.js";
import type { NodeFunction } from "../../runtime/node-function.js";
import type { MediatorNodeDefinition } from "./definition.js";
import { visitNumber } from "../../state/map.js";
import { readRegularText } from "../../diagnostics/regular-file.js";

/** What the mediator node writes to `outputs.<node>`. */
export interface MediatorOutput {
  /** This turn's answer to the user. */
  answer: string;
  /** The linked thread its Looper runs in. */
  loopThread: string;
  /** How many of the loop's `[AUTO]` lines have been relayed into this thread's log. */
  relayed: number;
  /** The `send_to_looper` commands of this turn. */
  forwarded: string[];
}

/** Model calls per turn: tool calls beyond this are not run, and the turn answers with what it has. */
const MAX_MODEL_CALLS = 8;
/** Progress lines relayed to the model at most, per turn (the newest). */
const MAX_RELAYED_LINES = 40;

/**
 * The Mediator: answers the user, forwards real work to its Looper with
 * `send_to_looper`, and reads the loop's state with `query_looper_status`. Each turn first
 * relays the Looper's new `[AUTO]` progress lines into the thread's log, so the model can tell
 * the user how things went, and a resumed chat shows them in the history.
 */
export function createMediatorNode(def: MediatorNodeDefinition, graph: GraphDefinition, ctx: RunContext): NodeFunction {
  const template = readRegularText(def.promptFile);

  return async (state) => {
    const looper = ctx.looper;
    if (!looper) throw new LoopgraphError(`node "${def.id}": a mediator needs a Looper: run it through loopgraph run or chat`);
    const session = startNodeSession(ctx, def, graph, state, { tools: MEDIATOR_TOOLS });
    const previous = state.outputs[def.id] as MediatorOutput | undefined;
    const turn = visitNumber(state, def.id);
    // The loop's log and the tools act outside this thread: recorded, and answered from the record in a recorded replay.
    const since = previous?.relayed ?? 0;
    const progress = await performEffect(ctx, { kind: "inbox", node: def.id, name: "read_loop_log", args: { since } }, () =>
      looper.progress(since),
    );

    // This turn's input (the user's line, or the Looper's request for a summary) came after the
    // progress lines relayed now, which were printed before it: they go before it, in the log and the request.
    const inputAt = turnInputStart(state.messages);
    const earlier = state.messages.slice(0, inputAt);
    const inputs = state.messages.slice(inputAt);
    const moved: BaseMessage[] = [];
    const written: BaseMessage[] = [];
    if (progress.lines.length > 0) {
      written.push(new HumanMessage({ id: `${def.id}-${turn}-looper`, name: "looper", content: relayText(progress.lines) }));
      inputs.forEach((input, i) => {
        moved.push(new RemoveMessage({ id: input.id! }));
        written.push(new HumanMessage({ id: `${def.id}-${turn}-input-${i}`, name: input.name, content: input.content }));
      });
    } else {
      earlier.push(...inputs);
    }
    const system = new SystemMessage(`${renderPrompt(template, state)}\n\n${workspaceNote(ctx.workspace)}`);
    const forwarded: string[] = [];
    const toolResults: string[] = [];
    let answer: AIMessage | undefined;
    for (let call = 0; call < MAX_MODEL_CALLS; call++) {
      const reply = await session.ask([system, ...earlier, ...written]);
      // On the last call, tool calls are not run: the answer stands without them.
      const last = call === MAX_MODEL_CALLS - 1;
      const toolCalls = last ? [] : (reply.tool_calls ?? []);
      const invalidCalls = last ? [] : (reply.invalid_tool_calls ?? []).map((c) => ({ ...c, id: c.id ?? randomUUID() }));
      answer = new AIMessage({
        content: messageText(reply),
        id: reply.id ?? randomUUID(),
        name: def.id,
        tool_calls: toolCalls,
        invalid_tool_calls: invalidCalls,
      });
      written.push(answer);
      if (toolCalls.length === 0 && invalidCalls.length === 0) break;
      // Arguments that are not one JSON object: the call never runs, the model is told why.
      for (const invalid of invalidCalls) {
        const name = invalid.name ?? "";
        const result = invalidArgumentsResult(name, invalid.error ?? "not a JSON object");
        ctx.emit({ type: "tool_call", threadId: ctx.threadId, node: def.id, id: invalid.id, name, args: invalid.args });
        ctx.emit({ type: "tool_result", threadId: ctx.threadId, node: def.id, id: invalid.id, name, ok: false, result: result.content });
        toolResults.push(result.content);
        written.push(
          new ToolMessage({
            id: `${def.id}-${turn}-${invalid.id}`,
            tool_call_id: invalid.id,
            name,
            content: result.content,
            status: "error",
          }),
        );
      }
      for (const toolCall of toolCalls) {
        const id = toolCall.id ?? randomUUID();
        ctx.emit({ type: "tool_call", threadId: ctx.threadId, node: def.id, id, name: toolCall.name, args: toolCall.args });
        const tool = { kind: "tool" as const, node: def.id, name: toolCall.name, args: toolCall.args };
        const result = await performEffect(ctx, tool, () => runMediatorTool(toolCall.name, toolCall.args, looper));
        ctx.emit({
          type: "tool_result",
          threadId: ctx.threadId,
          node: def.id,
          id,
          name: toolCall.name,
          ok: result.ok,
          result: result.content,
        });
        if (toolCall.name === "send_to_looper" && result.ok) forwarded.push(String((toolCall.args as { command?: unknown }).command));
        toolResults.push(result.content);
        written.push(
          new ToolMessage({
            id: `${def.id}-${turn}-${id}`,
            tool_call_id: id,
            name: toolCall.name,
            content: result.content,
            status: result.ok ? "success" : "error",
          }),
        );
      }
    }

    const text = finalText(answer, toolResults);
    if (answer && text !== messageText(answer)) written[written.length - 1] = new AIMessage({ content: text, id: answer.id, name: def.id });
    ctx.emit({ type: "message", threadId: ctx.threadId, node: def.id, content: text });
    const output: MediatorOutput = { answer: text, loopThread: looper.threadId, relayed: progress.total, forwarded };
    return { messages: [...moved, ...written], outputs: { [def.id]: output }, ...session.bookkeeping() };
  };
}

/** Where this turn's input begins: the messages after the last answer (or tool result) of the log. */
function turnInputStart(messages: readonly BaseMessage[]): number {
  let at = messages.length;
  while (at > 0 && messages[at - 1]!.getType() === "human") at--;
  return at;
}

/** The Mediator always answers: when the model said nothing, the tools' results are the answer. */
function finalText(answer: AIMessage | undefined, toolResults: string[]): string {
  const said = answer ? messageText(answer).trim() : "";
  if (said) return said;
  if (toolResults.length > 0) return toolResults.join("\n");
  return "(no answer: ask again)";
}

function relayText(lines: string[]): string {
  const omitted = lines.length - MAX_RELAYED_LINES;
  const shown = omitted > 0 ? [`[AUTO] (${omitted} earlier progress lines omitted)`, ...lines.slice(omitted)] : lines;
  return shown.join("\n");
}

const HIDDEN_ENTRIES = new Set([".git", ".loopgraph", "node_modules"]);

/** Where the user works: the top-level entries and the README's opening, so "what is this repo?" has an answer. */
function workspaceNote(workspace: string): string {
  const entries = readdirSync(workspace, { withFileTypes: true })
    .filter((entry) => !HIDDEN_ENTRIES.has(entry.name))
    .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
    .sort();
  const shown = entries.length > 60 ? [...entries.slice(0, 60), `… ${entries.length - 60} more`] : entries;
  const lines = [`Workspace: ${workspace}`, `Top-level entries: ${shown.join(", ") || "(empty)"}`];
  const readme = entries.find((name) => /^readme(\.md|\.txt)?$/i.test(name));
  if (readme) {
    lines.push(`${readme} (opening):`, readOpening(join(workspace, readme), 2000));
  }
  return lines.join("\n");
}

function readOpening(file: string, bytes: number): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const buffer = Buffer.alloc(bytes);
    return buffer.subarray(0, readSync(fd, buffer, 0, bytes, 0)).toString("utf8");
  } catch {
    return "(unreadable)";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
