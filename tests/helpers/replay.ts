import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { CheckpointSummary, ThreadHistory } from "../../src/engine/inspect.js";
import { ROOT, runCli, tempDir, type CliResult } from "./cli.js";

/** A copy of the example graph (graphs/example-review.yaml with its prompts, function and script) in a temp dir. */
export interface ExampleCopy {
  dir: string;
  db: string;
  graph: string;
  script: string;
  cleanup: () => void;
}

export function exampleCopy(): ExampleCopy {
  const temp = tempDir("loopgraph-replay-");
  for (const part of ["graphs/example-review.yaml", "prompts/example", "examples/functions", "examples/example-review.script.yaml"]) {
    mkdirSync(join(temp.path, part, ".."), { recursive: true });
    cpSync(join(ROOT, part), join(temp.path, part), { recursive: true });
  }
  return {
    dir: temp.path,
    db: join(temp.path, "store.db"),
    graph: join(temp.path, "graphs/example-review.yaml"),
    script: join(temp.path, "examples/example-review.script.yaml"),
    cleanup: temp.cleanup,
  };
}

/** `loopgraph run` of the copy's graph, with its scripted model (or another script). */
export function runExample(copy: ExampleCopy, thread: string, script = copy.script, task = "Explain loopgraph"): Promise<CliResult> {
  return runCli(
    ["run", copy.graph, "--task", task, "--thread", thread, "--workspace", copy.dir, "--model", `scripted:${script}`, "--db", copy.db, "--json"],
    { cwd: copy.dir },
  );
}

/** `inspect <thread> --json`, as the engine types it. */
export type HistoryJson = ThreadHistory;
export type CheckpointJson = CheckpointSummary;

export async function historyOf(db: string, thread: string): Promise<HistoryJson> {
  const result = await runCli(["inspect", thread, "--json", "--db", db]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as HistoryJson;
}

export async function stateAt<T = Record<string, unknown>>(db: string, thread: string, checkpointId: string): Promise<T> {
  const result = await runCli(["inspect", thread, "--checkpoint", checkpointId, "--json", "--db", db]);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { values: T }).values;
}
