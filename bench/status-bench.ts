/**
 * How long `loopgraph status <thread>` takes from another process (issue 4: within 1 s, no model
 * call), against a bare `node -e ""` start measured in the same run.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { runGraph } from "../src/index.js";

const RUNS = 7;
const root = fileURLToPath(new URL("../..", import.meta.url));
const cli = join(root, "dist/src/cli/main.js");

function medianMs(command: string[]): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const result = spawnSync(process.execPath, command, { encoding: "utf8" });
    if (result.status !== 0) throw new Error(`${command.join(" ")} failed: ${result.stderr}`);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!;
}

const dir = mkdtempSync(join(tmpdir(), "loopgraph-status-bench-"));
try {
  const db = join(dir, "bench.db");
  const outcome = await runGraph({
    graph: "coder-review",
    task: "write add() in app.js",
    workspace: dir,
    db,
    approval: "auto",
    model: `scripted:${join(root, "examples/coder-review.script.yaml")}`,
    env: {},
  });
  if (outcome.status !== "finished") throw new Error(`setup run ${outcome.status}: ${outcome.error ?? ""}`);
  const baseline = medianMs(["-e", ""]);
  const status = medianMs([cli, "status", outcome.threadId, "--db", db]);
  console.log(`node -e ""               ${baseline.toFixed(0)} ms (median of ${RUNS})`);
  console.log(`loopgraph status         ${status.toFixed(0)} ms (median of ${RUNS}), target < 1000 ms`);
  console.log(`status-bench: status_ms=${status.toFixed(0)} node_start_ms=${baseline.toFixed(0)} ratio=${(status / baseline).toFixed(2)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
