import pc from "picocolors";
import { checkpointTree, treeRows } from "../engine/checkpoint-tree.js";
import { checkpointState, listThreads, threadHistory, type CheckpointSummary, type StateChange, type ThreadHistory } from "../engine/inspect.js";
import { asSeen } from "../runs/thread-registry.js";
import { exportScriptCommand } from "./export-script-command.js";
import { printable, printableJson } from "./terminal-text.js";
import type { GlobalOptions } from "./run-commands.js";

export interface InspectCommandOptions extends GlobalOptions {
  checkpoint?: string;
  json?: boolean;
  exportScript?: string;
}

const print = (text: string): void => void process.stdout.write(`${text}\n`);
const printJson = (value: unknown): void => print(printableJson(JSON.stringify(value, null, 2)));
export const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows.map((row) => row.map((cell, col) => cell.padEnd(widths[col]!)).join("  ").trimEnd()).join("\n");
}

function renderChange(change: StateChange): string {
  const sign = change.kind === "added" ? pc.green("+") : change.kind === "removed" ? pc.red("-") : pc.yellow("~");
  const shown = change.kind === "removed" ? change.before : change.value;
  return `      ${sign} ${printable(change.path)}: ${printable(clip(JSON.stringify(shown) ?? "undefined", 120))}`;
}

function renderHistoryRow(index: number, checkpoint: CheckpointSummary, guide: string, markHead: boolean): string[] {
  const tokens = checkpoint.tokens.inputTokens + checkpoint.tokens.outputTokens;
  return [
    String(index),
    String(checkpoint.step),
    guide + (checkpoint.nodes.join(",") || "-"),
    checkpoint.createdAt.replace("T", " ").replace(/\.\d+Z$/, "Z"),
    tokens ? `${checkpoint.tokens.inputTokens}→${checkpoint.tokens.outputTokens}` : "-",
    checkpoint.status,
    checkpoint.checkpointId + (markHead && checkpoint.head ? "  ← head" : ""),
  ];
}

/** The checkpoints in tree order (forks indented under the checkpoint they start from), with their list index. */
function inTreeOrder(history: ThreadHistory): Array<{ index: number; checkpoint: CheckpointSummary; guide: string }> {
  const indexOf = new Map(history.checkpoints.map((checkpoint, index) => [checkpoint.checkpointId, index]));
  const tree = checkpointTree(history.checkpoints.map((c) => ({ id: c.checkpointId, parentId: c.parentId })));
  return treeRows(tree).map(({ id, guide }) => {
    const index = indexOf.get(id)!;
    return { index, checkpoint: history.checkpoints[index]!, guide };
  });
}

export async function inspectCommand(threadId: string | undefined, options: InspectCommandOptions): Promise<number> {
  const store = { db: options.db };
  if (options.exportScript !== undefined) return exportScriptCommand(threadId, options.exportScript, options);
  if (!threadId) {
    const threads = await listThreads(store);
    if (options.json) return printJson(threads), 0;
    if (threads.length === 0) return print("no threads yet: start one with `loopgraph run <graph>`"), 0;
    print(
      table([
        ["THREAD", "GRAPH", "STATUS", "CHECKPOINTS", "UPDATED", "TASK"],
        ...threads.map((t) => [t.threadId, t.graphName, t.status, String(t.checkpoints), t.updatedAt, printable(clip(t.task, 50))]),
      ]),
    );
    return 0;
  }
  if (options.checkpoint) {
    const state = await checkpointState(threadId, options.checkpoint, store);
    if (options.json) return printJson(state), 0;
    print(pc.bold(`thread ${state.threadId}  checkpoint ${state.checkpointId}  step ${state.step}  ${state.createdAt}`));
    return printJson(state.values), 0;
  }
  const history = await threadHistory(threadId, store);
  // A thread whose process is gone is shown interrupted, not running.
  const thread = asSeen(history.thread);
  if (options.json) return printJson({ ...history, thread }), 0;
  print(pc.bold(`thread ${thread.threadId}`) + pc.dim(`  graph ${thread.graphName}  status ${thread.status}`));
  if (thread.task) print(pc.dim(`task: ${printable(clip(thread.task, 200))}`));
  // The outcome's reason: the error of a failed run, the limit of a limited one, who stopped an interrupted one.
  if (thread.error) print(thread.status === "failed" ? pc.red(`error: ${printable(thread.error)}`) : pc.yellow(`reason: ${printable(thread.error)}`));
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
  const ordered = inTreeOrder(history);
  const header = ["#", "STEP", "NODE", "TIME", "TOKENS", "STATUS", "CHECKPOINT"];
  const rows = table([header, ...ordered.map(({ index, checkpoint, guide }) => renderHistoryRow(index, checkpoint, guide, forked))]).split("\n");
  print(rows[0]!);
  ordered.forEach(({ checkpoint }, row) => {
    print(rows[row + 1]!);
    for (const change of checkpoint.changes) print(renderChange(change));
  });
  return 0;
}
