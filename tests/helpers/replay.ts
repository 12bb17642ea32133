import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CheckpointSummary, ThreadHistory } from "../../src/engine/inspect.js";
import { ROOT, trustIn } from "./cli.js";
import { run } from "./e2e.js";
import { tempWorkspace } from "./workspace.js";
import type { CliResult } from "./cli.js";

/** A copy of the example graph (graphs/example-review.yaml with its prompts, function and script) in a temp workspace. */
export interface ExampleCopy {
  dir: string;
  db: string;
  graph: string;
  script: string;
}

/**
 * Makes the copy in a workspace removed when the test finishes. The script answers at once: the
 * shipped one waits 300 ms before each answer, for the demo's sake.
 */
export function exampleCopy(): ExampleCopy {
  const { dir, db } = tempWorkspace({ prefix: "loopgraph-replay-" });
  for (const part of ["graphs/example-review.yaml", "prompts/example", "examples/functions"]) {
    mkdirSync(join(dir, part, ".."), { recursive: true });
    cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  }
  const script = join(dir, "examples/example-review.script.yaml");
  const shipped = readFileSync(join(ROOT, "examples/example-review.script.yaml"), "utf8");
  writeFileSync(script, shipped.replace(/^ *delay_ms: \d+\n/gm, ""));
  trustIn(dir);
  return { dir, db, graph: join(dir, "graphs/example-review.yaml"), script };
}

/** `loopgraph run` of the copy's graph, with its scripted model (or another script). */
export function runExample(copy: ExampleCopy, thread: string, script = copy.script, task = "Explain loopgraph"): Promise<CliResult> {
  return run(copy, { graph: copy.graph, task, thread, script }, { cwd: copy.dir });
}

/** `inspect <thread> --json`, as the engine types it. */
export type HistoryJson = ThreadHistory;
export type CheckpointJson = CheckpointSummary;
