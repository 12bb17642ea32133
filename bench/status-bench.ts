/**
 * How long `loopgraph status <thread>` takes from another process, against a bare `node -e ""`
 * start measured in the same run: on a 2-round loop thread and on a long one (60 rounds; 329
 * with --full, about 5,000 checkpoints). Target: ≤ 3× node, flat in the thread's length.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI, FULL, medianNodeMs, nodeStartMs, report } from "./lib.js";
import { shortAndLongThreads } from "./fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "loopgraph-status-bench-"));
try {
  const threads = await shortAndLongThreads(dir, FULL);
  const anchor = nodeStartMs();
  for (const thread of threads) {
    const ours = medianNodeMs([CLI, "status", thread.threadId, "--db", thread.db], 7);
    report({ name: `status_${thread.checkpoints}_checkpoints`, ours, anchor, unit: "ms", maxRatio: 3, note: "anchor: node -e \"\"" });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
