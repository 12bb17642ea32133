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
import { median, report } from "./lib.js";

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
    report({
      name: "shell_call_sandbox_added",
      ours: boxed - plain,
      anchor: plain,
      unit: "ms",
      maxOurs: 30,
      note: `ms a shell call in ${sandbox.name} adds to one without it (${boxed.toFixed(1)} against ${plain.toFixed(1)} ms, medians of ${CALLS}); anchor: the call without a sandbox`,
    });
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}
