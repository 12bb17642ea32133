import { storeOf, type GlobalOptions } from "./global-options.js";
import pc from "picocolors";
import { ConfigError } from "../errors.js";
import { listSnapshotPoints, restoreWorkspace, type RestoreResult, type SnapshotPoint } from "../snapshots/index.js";
import type { RewindAction } from "../snapshots/index.js";
import { clip, table } from "./inspect-command.js";
import { printable } from "./terminal-text.js";

export interface RewindCommandOptions extends GlobalOptions {
  dryRun?: boolean;
  list?: boolean;
  json?: boolean;
}

const print = (text: string): void => void process.stdout.write(`${text}\n`);
const PAST: Record<RewindAction, string> = { restore: "restored", delete: "deleted", recreate: "recreated" };

/** `loopgraph rewind <thread> <checkpoint> [--dry-run] [--json]` and `loopgraph rewind <thread> --list`. */
export async function rewindCommand(threadId: string, checkpoint: string | undefined, options: RewindCommandOptions): Promise<number> {
  const store = storeOf(options);
  if (options.list) {
    const points = await listSnapshotPoints(threadId, store);
    print(options.json ? JSON.stringify(points, null, 2) : renderPoints(threadId, points));
    return 0;
  }
  if (!checkpoint) throw new ConfigError(`which checkpoint? pass one, or list them with \`loopgraph rewind ${threadId} --list\``);
  const result = await restoreWorkspace(threadId, checkpoint, { ...store, dryRun: options.dryRun });
  print(options.json ? JSON.stringify(result, null, 2) : renderResult(result));
  return 0;
}

function renderPoints(threadId: string, points: SnapshotPoint[]): string {
  const rows = points.map((point) => [
    String(point.seq),
    point.checkpointPrefix,
    point.node,
    point.tool,
    point.paths === undefined ? "(unfinished)" : point.paths.length === 0 ? "(no change)" : clip(point.paths.join(", "), 80),
  ]);
  const hint = pc.dim(
    `rewind to the checkpoint a step started from to undo it and every later one: loopgraph rewind ${threadId} <checkpoint>`,
  );
  return `${table([["#", "CHECKPOINT", "NODE", "TOOL", "CHANGED"], ...rows])}\n${hint}`;
}

function renderResult(result: RestoreResult): string {
  const at = `checkpoint ${result.checkpointId}`;
  if (!result.since) return `nothing to rewind: no file-changing tool step ran at or after ${at}`;
  const withheld = result.withheld.map((path) =>
    pc.yellow(`left as it is: ${printable(path)} (at that checkpoint it held a secret's value, which snapshots never keep)`),
  );
  if (result.changes.length === 0) {
    return [
      ...withheld,
      `nothing ${withheld.length > 0 ? "else " : ""}to rewind: the files the agent changed since ${at} are as they were then`,
    ].join("\n");
  }
  const lines = result.changes.map((change) => `${result.dryRun ? change.action : PAST[change.action]} ${change.path}`);
  const files = `${result.changes.length} file${result.changes.length === 1 ? "" : "s"}`;
  const summary = result.dryRun
    ? pc.dim(`dry run: ${files} would change to rewind the workspace to ${at}; nothing was changed`)
    : pc.dim(
        `rewound ${files} of ${result.workspace} to ${at}; their previous contents are kept as commit ${result.savedCommit} in .loopgraph/snapshots.git`,
      );
  return [...lines, ...withheld, summary].join("\n");
}
