import { storeOf, type GlobalOptions } from "./global-options.js";
import pc from "picocolors";
import { inTreeOrder, nestedFrom } from "../engine/checkpoint-tree.js";
import type { CheckpointSummary, HistoryWindow, NestedSpan, NestedTimeline, StateChange, ThreadHistory } from "../engine/inspect.js";
import type { Lane } from "../engine/lanes.js";
import { describeStep, INTERNAL_CHANNELS } from "../engine/describe-step.js";
import { listThreads, type ThreadSummary } from "../engine/thread-list.js";
import { asSeen } from "../runs/thread-registry.js";
import { printable, printableJson } from "./terminal-text.js";
import type { RoundTokens } from "./render.js";
import { instanceName } from "../state/map.js";

export interface InspectCommandOptions extends GlobalOptions {
  checkpoint?: string;
  json?: boolean;
  exportScript?: string;
  /** `--diff`: each step's state changes under its line. */
  diff?: boolean;
  /** `--internal`: with `--diff`, the bookkeeping channels too (`scripted`). */
  internal?: boolean;
  /** `--nested`: under each step, the steps of the graphs it ran (a Coder's turn, a subagent). */
  nested?: boolean;
  /** `--last n`: the newest n steps (the default: DEFAULT_LAST). */
  last?: number;
  /** `--from step`: the steps from this one on, its # or its checkpoint id (a unique prefix). */
  from?: string;
  /** `--all`: every step. */
  all?: boolean;
}

/** The steps `inspect <thread>` shows without --last, --from or --all: the newest, as `git log` shows its newest first. */
export const DEFAULT_LAST = 50;

/** The steps the options ask for (see HistoryWindow). */
function windowOf(options: InspectCommandOptions): HistoryWindow {
  if (options.all) return {};
  if (options.from !== undefined) return { from: /^\d+$/.test(options.from) ? Number(options.from) : options.from };
  return { limit: options.last ?? DEFAULT_LAST };
}

/**
 * Of the graphs a window's span read, those nested in its steps (or in a node of the newest
 * checkpoint that has not finished), with the graphs nested in them: a fork's first step grew
 * from an older checkpoint, and the span from there holds the graphs of steps not shown too.
 */
function nestedUnder(history: ThreadHistory, nested: NestedTimeline[]): NestedTimeline[] {
  if (nestedSpan(history) === undefined) return nested;
  return nestedFrom(nested, new Set([...history.checkpoints.map((checkpoint) => checkpoint.parentId), history.head]));
}

/** The graphs nested in the steps shown: those that started after the oldest step's parent (and before the step after the newest shown). */
function nestedSpan(history: ThreadHistory): NestedSpan | undefined {
  const { from, to, total } = history.range;
  if (from === 0 && to === total) return undefined;
  const starts = history.checkpoints.map((checkpoint) => checkpoint.parentId ?? "");
  const after = starts.reduce((oldest, id) => (id < oldest ? id : oldest), starts[0] ?? "");
  return { after, ...(to < total && { before: history.checkpoints.at(-1)?.checkpointId ?? "" }) };
}

const isInternal = (change: StateChange): boolean =>
  INTERNAL_CHANNELS.some((channel) => change.path === channel || change.path.startsWith(`${channel}.`));

const print = (text: string): void => void process.stdout.write(`${text}\n`);
const printJson = (value: unknown): void => print(printableJson(JSON.stringify(value, null, 2)));
export const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** The thread list as `inspect` and `threads list` print it. */
export function threadTable(threads: readonly ThreadSummary[]): string {
  return table([
    ["THREAD", "GRAPH", "STATUS", "CHECKPOINTS", "UPDATED", "TASK"],
    ...threads.map((t) => [t.threadId, t.graphName, t.status, String(t.checkpoints), t.updatedAt, printable(clip(t.task, 50))]),
  ]);
}

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, col) => cell.padEnd(widths[col]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function renderChange(change: StateChange): string {
  const sign = change.kind === "added" ? pc.green("+") : change.kind === "removed" ? pc.red("-") : pc.yellow("~");
  const shown = change.kind === "removed" ? change.before : change.value;
  return `      ${sign} ${printable(change.path)}: ${printable(clip(JSON.stringify(shown) ?? "undefined", 120))}`;
}

/** Seconds from the parent checkpoint to this one (`created`: when each checkpoint was written): how long the step took. */
function stepSeconds(checkpoint: CheckpointSummary, created: ReadonlyMap<string, string>): string {
  const parent = checkpoint.parentId === undefined ? undefined : created.get(checkpoint.parentId);
  if (!parent) return "-";
  const seconds = (Date.parse(checkpoint.createdAt) - Date.parse(parent)) / 1000;
  return Number.isFinite(seconds) ? `${seconds.toFixed(1)}s` : "-";
}

/** A step's nodes, a map's with how many instances ran (`work×3`). */
function nodesShown(checkpoint: CheckpointSummary): string {
  return checkpoint.nodes.map((node) => (checkpoint.instances?.[node] ? `${node}×${checkpoint.instances[node]}` : node)).join(",");
}

function renderHistoryRow(
  index: number,
  checkpoint: CheckpointSummary,
  guide: string,
  markHead: boolean,
  created: ReadonlyMap<string, string>,
): string[] {
  const tokens = checkpoint.tokens.inputTokens + checkpoint.tokens.outputTokens;
  return [
    String(index),
    String(checkpoint.step),
    guide + (nodesShown(checkpoint) || "-"),
    printable(clip(describeStep(checkpoint), 90)),
    tokens ? `${checkpoint.tokens.inputTokens}→${checkpoint.tokens.outputTokens}` : "-",
    stepSeconds(checkpoint, created),
    checkpoint.status === "done" ? "" : checkpoint.status,
    checkpoint.checkpointId + (markHead && checkpoint.head ? "  ← head" : ""),
  ];
}

/** The checkpoints of the run that led to the newest one, oldest first: its lineage, forks left out (of those shown). */
function headLineage(history: ThreadHistory, byId: ReadonlyMap<string, CheckpointSummary>): CheckpointSummary[] {
  const lineage: CheckpointSummary[] = [];
  for (
    let at = history.head === undefined ? undefined : byId.get(history.head);
    at;
    at = at.parentId === undefined ? undefined : byId.get(at.parentId)
  ) {
    lineage.push(at);
  }
  return lineage.reverse();
}

/**
 * The tokens of each loop round of the run that led to the newest checkpoint: consecutive
 * checkpoints of one round form it (a loop started again counts its rounds from 1 again).
 */
function roundTokens(lineage: readonly CheckpointSummary[]): RoundTokens[] {
  const rounds: RoundTokens[] = [];
  for (const checkpoint of lineage) {
    if (checkpoint.round === undefined) continue;
    if (rounds.at(-1)?.round !== checkpoint.round) rounds.push({ round: checkpoint.round, usage: { inputTokens: 0, outputTokens: 0 } });
    rounds.at(-1)!.usage.inputTokens += checkpoint.tokens.inputTokens;
    rounds.at(-1)!.usage.outputTokens += checkpoint.tokens.outputTokens;
  }
  return rounds;
}

/**
 * `loopgraph inspect [thread]`. The thread list loads no LangChain module (engine/thread-list.ts);
 * a thread's history, a checkpoint's state and `--export-script` load theirs when asked for.
 */
export async function inspectCommand(threadId: string | undefined, options: InspectCommandOptions): Promise<number> {
  const store = storeOf(options);
  if (options.exportScript !== undefined) {
    const { exportScriptCommand } = await import("./export-script-command.js");
    return exportScriptCommand(threadId, options.exportScript, options);
  }
  if (!threadId) {
    const threads = await listThreads(store);
    if (options.json) return (printJson(threads), 0);
    if (threads.length === 0) return (print("no threads yet: start one with `loopgraph run <graph>`"), 0);
    return (print(threadTable(threads)), 0);
  }
  const { checkpointState, threadHistory } = await import("../engine/inspect.js");
  if (options.checkpoint) {
    const state = await checkpointState(threadId, options.checkpoint, store);
    if (options.json) return (printJson(state), 0);
    print(pc.bold(`thread ${state.threadId}  checkpoint ${state.checkpointId}  step ${state.step}  ${state.createdAt}`));
    return (printJson(state.values), 0);
  }
  const history = await threadHistory(threadId, store, windowOf(options));
  const nested = options.nested
    ? nestedUnder(history, await (await import("../engine/inspect.js")).nestedTimelines(threadId, store, nestedSpan(history)))
    : undefined;
  // A thread whose process is gone is shown interrupted, not running.
  const thread = asSeen(history.thread);
  const { from, to, total } = history.range;
  const leftOut = total - (to - from);
  if (options.json) return (printJson({ ...history, thread, leftOut, ...(nested && { nested }) }), 0);
  print(pc.bold(`thread ${thread.threadId}`) + pc.dim(`  graph ${thread.graphName}  status ${thread.status}`));
  if (thread.task) print(pc.dim(`task: ${printable(clip(thread.task, 200))}`));
  // The outcome's reason: the error of a failed run, the limit of a limited one, who stopped an interrupted one.
  if (thread.error)
    print(thread.status === "failed" ? pc.red(`error: ${printable(thread.error)}`) : pc.yellow(`reason: ${printable(thread.error)}`));
  if (thread.pause) {
    const where = thread.pause.node ? ` ${thread.pause.when ?? "at"} ${thread.pause.node}` : "";
    const question = thread.pause.value !== undefined ? `: ${printable(clip(JSON.stringify(thread.pause.value), 200))}` : "";
    print(pc.yellow(`paused (${thread.pause.reason})${where}${question}`));
  }
  const forked = history.branches.length > 1;
  if (forked) {
    const newest = history.checkpoints.find((c) => c.head)?.branch ?? 0;
    print(pc.dim(`${history.branches.length} branches (forks of \`replay --from\`); resume continues the newest, branch ${newest}`));
  }
  const byId = new Map(history.checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint]));
  const created = new Map([
    ...Object.entries(history.parentTimes ?? {}),
    ...history.checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint.createdAt] as const),
  ]);
  const { tokens } = history;
  // Each round's tokens sum the steps of its round: the whole history's, when it is shown.
  const rounds = leftOut === 0 ? roundTokens(headLineage(history, byId)) : [];
  const hints = [
    options.diff ? "" : "--diff shows each step's state changes",
    options.nested ? "" : "--nested the Coder's and subagents' steps",
  ].filter(Boolean);
  print(
    pc.dim(
      `tokens: ${tokens.inputTokens} in, ${tokens.outputTokens} out  (${total} checkpoints${hints.length > 0 ? `; ${hints.join(", ")}` : ""})`,
    ),
  );
  if (rounds.length > 0)
    print(
      pc.dim(
        `rounds: ${rounds.map(({ round, usage }) => `round ${round}: ${usage.inputTokens} in, ${usage.outputTokens} out`).join(" · ")}`,
      ),
    );
  else if (leftOut > 0 && history.checkpoints.some((checkpoint) => checkpoint.round !== undefined))
    print(pc.dim("rounds: --all lists each loop round's tokens"));
  if (from > 0)
    print(
      pc.dim(
        `${from} earlier step${from === 1 ? "" : "s"} not shown (#0–#${from - 1}): --all shows every step, --from <#> the steps from one on, --last <n> the newest n`,
      ),
    );
  const ordered = inTreeOrder(history.checkpoints);
  const header = ["#", "STEP", "NODE", "WHAT IT DID", "TOKENS", "TIME", "STATUS", "CHECKPOINT"];
  const rows = table([
    header,
    ...ordered.map(({ index, checkpoint, guide }) => renderHistoryRow(from + index, checkpoint, guide, forked, created)),
  ]).split("\n");
  print(rows[0]!);
  const shown = new Set<NestedTimeline>();
  const printChanges = (checkpoint: CheckpointSummary, indent: string) => {
    if (!options.diff) return;
    for (const change of checkpoint.changes) if (options.internal || !isInternal(change)) print(indent + renderChange(change));
  };
  /** The steps of the graphs `checkpoint` (of the graph in `ns`) ran, each under its step, deeper ones further in. */
  const printNested = (ns: string, checkpoint: CheckpointSummary, depth: number) => {
    for (const inner of nested ?? []) {
      if (shown.has(inner) || inner.parentNs !== ns || inner.from !== checkpoint.parentId || !checkpoint.nodes.includes(inner.node))
        continue;
      shown.add(inner);
      printTimeline(inner, depth);
    }
  };
  const printTimeline = (inner: NestedTimeline, depth: number) => {
    const indent = "    ".repeat(depth);
    for (const step of inner.checkpoints) {
      print(nestedRow(step, indent));
      printChanges(step, indent);
      printNested(inner.ns, step, depth + 1);
    }
  };
  ordered.forEach(({ checkpoint }, row) => {
    print(rows[row + 1]!);
    checkpoint.lanes?.forEach((lane, i) => print(laneRow(lane, i === checkpoint.lanes!.length - 1)));
    printChanges(checkpoint, "");
    printNested("", checkpoint, 1);
  });
  // Graphs of a step still in flight (or cut short) have no step of their graph to go under.
  const unplaced = (nested ?? []).filter((inner) => !shown.has(inner) && inner.parentNs === "" && inner.checkpoints.length > 0);
  if (unplaced.length > 0) print(pc.dim("steps of a node that has not finished (no checkpoint of its graph yet):"));
  for (const inner of unplaced) printTimeline(inner, 1);
  return 0;
}

/** One lane of a parallel step, under its row: the task's node (a map's instance as `node[i]`), tokens and time. */
function laneRow(lane: Lane, last: boolean): string {
  const name = instanceName(lane.node, lane.index);
  const tokens = lane.tokens.inputTokens + lane.tokens.outputTokens ? `${lane.tokens.inputTokens}→${lane.tokens.outputTokens}` : "-";
  const time = lane.seconds === undefined ? "-" : `${lane.seconds.toFixed(1)}s`;
  return pc.dim(`   ${last ? "└" : "├"} ${printable(name).padEnd(14)} ${tokens.padStart(11)}  ${time.padStart(6)}`);
}

/** One step of a nested graph: its node, what it did, tokens, time and checkpoint. */
function nestedRow(step: CheckpointSummary, indent: string): string {
  const tokens = step.tokens.inputTokens + step.tokens.outputTokens;
  const facts = [tokens ? `${step.tokens.inputTokens}→${step.tokens.outputTokens}` : "", step.status === "done" ? "" : step.status]
    .filter(Boolean)
    .join("  ");
  const node = (step.nodes.join(",") || "-").padEnd(6);
  return `${indent}· ${node} ${printable(clip(describeStep(step), 100))}${facts ? `  ${facts}` : ""}  ${pc.dim(step.checkpointId)}`;
}
