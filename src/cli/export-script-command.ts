import { storeOf, type GlobalOptions } from "./global-options.js";
import pc from "picocolors";
import { ConfigError } from "../errors.js";
import { exportScript } from "../replay/export-script.js";

/** `loopgraph inspect <thread> --export-script FILE` (with --json: what was written, as JSON). */
export async function exportScriptCommand(
  threadId: string | undefined,
  file: string,
  options: GlobalOptions & { json?: boolean },
): Promise<number> {
  if (!threadId) throw new ConfigError("--export-script needs a thread: loopgraph inspect <thread> --export-script FILE");
  const written = await exportScript(threadId, file, storeOf(options));
  if (options.json) {
    process.stdout.write(`${JSON.stringify(written)}\n`);
    return 0;
  }
  process.stdout.write(`wrote ${written.responses} recorded model answer(s) of thread ${threadId} to ${written.file}\n`);
  for (const failed of written.failedCalls) {
    // A script that runs out fails the same way; other failures (rate limits, timeouts) cannot be scripted.
    const note = failed.kind === "exhausted" ? "the exported script runs out at the same point" : "a script cannot answer with an error";
    process.stderr.write(pc.yellow(`⚠ left out a model call of ${failed.node} that failed (${failed.kind}: ${failed.error}): ${note}\n`));
  }
  return 0;
}
