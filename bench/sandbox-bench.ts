/**
 * What the OS sandbox adds to a shell tool call: the shell tool runs `true` through bubblewrap and
 * without a sandbox, alternately, in one run (issue target: at most 30 ms added per call).
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { executeToolCall } from "../src/tools/registry.js";
import { availableSandbox, NO_SANDBOX, type Sandbox } from "../src/tools/sandbox.js";
import { median } from "./lib.js";

const CALLS = 31;

async function medianMs(workspace: string, sandbox: Sandbox): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    const result = await executeToolCall(
      { id: `b${i}`, name: "shell", args: { command: "true" } },
      { workspace, env: process.env, artifactsDir: join(workspace, ".artifacts"), sandbox },
    );
    if (!result.ok) throw new Error(`shell failed in ${sandbox.name}: ${result.content}`);
    times.push(performance.now() - started);
  }
  return median(times);
}

const sandbox = availableSandbox(process.env);
if (sandbox.name === "none") {
  console.log("sandbox-bench: skipped (no OS sandbox on this machine: install bubblewrap)");
} else {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "loopgraph-sandbox-bench-")));
  try {
    await medianMs(workspace, NO_SANDBOX);
    const plain = await medianMs(workspace, NO_SANDBOX);
    const boxed = await medianMs(workspace, sandbox);
    console.log(`shell tool, no sandbox    ${plain.toFixed(1)} ms (median of ${CALLS})`);
    console.log(`shell tool, ${sandbox.name.padEnd(13)} ${boxed.toFixed(1)} ms, target ≤ 30 ms added`);
    console.log(
      `sandbox-bench: plain_ms=${plain.toFixed(1)} sandboxed_ms=${boxed.toFixed(1)} added_ms=${(boxed - plain).toFixed(1)} ratio=${(boxed / plain).toFixed(2)}`,
    );
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}
