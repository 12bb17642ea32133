/**
 * How long `loopgraph status <thread>` takes from another process, against a bare `node -e ""`
 * start run beside each (pairs, see `pairedNodeMs`): on a 2-round loop thread and on a long one (60 rounds; 329
 * with --full, about 5,000 checkpoints). Target: ≤ 3× node, flat in the thread's length.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI, FULL, pairedNodeMs, report } from "./lib.js";
import { shortAndLongThreads } from "./fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "loopgraph-status-bench-"));
try {
  const threads = await shortAndLongThreads(dir, FULL);
  for (const thread of threads) {
    const figures = await pairedNodeMs([CLI, "status", thread.threadId, "--db", thread.db], 7);
    report({
      name: `status_${thread.checkpoints}_checkpoints`,
      ...figures,
      unit: "ms",
      maxRatio: 3,
      note: 'ratio: median of 7 pairs; anchor: node -e ""',
    });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
