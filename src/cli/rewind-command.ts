import { storeOf, type GlobalOptions } from "./global-options.js";
import pc from "picocolors";
import { ConfigError } from "../errors.js";
import { listSnapshotPoints, restoreWorkspace, type RestoreResult, type SnapshotPoint } from "../snapshots/index.js";
import type { RewindAction } from "../snapshots/index.js";
import type { CommitRewind } from "../git/commit.js";
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
  const result = await restoreWorkspace(threadId, checkpoint, { ...store, dryRun: options.dryRun, commits: true });
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

/** What rewinding did to a branch loopgraph committed on. */
function renderCommit(commit: CommitRewind, dryRun: boolean): string {
  const branch = printable(commit.branch);
  const id = (commit: string | undefined) => commit?.slice(0, 12) ?? "";
  switch (commit.action) {
    case "moved":
      return `${dryRun ? "move" : "moved"} branch ${branch} back from ${id(commit.from)} to ${id(commit.to)} (the thread's commits since undone)`;
    case "deleted":
      return `${dryRun ? "delete" : "deleted"} branch ${branch}, which the thread made since (at ${id(commit.from)}); HEAD ${dryRun ? "goes" : "is"} back on ${printable(commit.to ?? "")}`;
    case "kept":
      return pc.yellow(`branch ${branch} ${commit.reason ?? "left as it is"}`);
  }
}

function renderResult(result: RestoreResult): string {
  const at = `checkpoint ${result.checkpointId}`;
  if (!result.since) return `nothing to rewind: no file-changing tool step ran at or after ${at}`;
  const withheld = result.withheld.map((path) =>
    pc.yellow(`left as it is: ${printable(path)} (at that checkpoint it held a secret's value, which snapshots never keep)`),
  );
  const commits = (result.commits ?? []).map((commit) => renderCommit(commit, result.dryRun));
  if (result.changes.length === 0) {
    return [
      ...commits,
      ...withheld,
      `nothing ${withheld.length > 0 ? "else " : ""}to rewind${commits.length > 0 ? " in the files" : ""}: the files the agent changed since ${at} are as they were then`,
    ].join("\n");
  }
  const lines = result.changes.map((change) => `${result.dryRun ? change.action : PAST[change.action]} ${change.path}`);
  const files = `${result.changes.length} file${result.changes.length === 1 ? "" : "s"}`;
  const summary = result.dryRun
    ? pc.dim(`dry run: ${files} would change to rewind the workspace to ${at}; nothing was changed`)
    : pc.dim(
        `rewound ${files} of ${result.workspace} to ${at}; their previous contents are kept as commit ${result.savedCommit} in .loopgraph/snapshots.git`,
      );
  return [...lines, ...commits, ...withheld, summary].join("\n");
}
