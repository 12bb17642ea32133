import { storeOf } from "./global-options.js";
import type { GlobalOptions } from "./global-options.js";
import pc from "picocolors";
import { ConfigError, ExitCode } from "../errors.js";
import { forkRun } from "../replay/fork.js";
import { verifyRun, type VerifyResult } from "../replay/verify.js";
import { withRunUi, type SandboxFlag } from "./run-commands.js";
import type { ApprovalMode, CoderMode } from "../state/thread.js";

export interface ReplayCommandOptions extends GlobalOptions, SandboxFlag {
  from?: string;
  set?: string[];
  restoreFiles?: boolean;
  verify?: boolean;
  model?: string;
  approval?: ApprovalMode;
  mode?: CoderMode;
  /** `--model-timeout` (milliseconds, parsed by main.ts). */
  modelTimeout?: number;
  json?: boolean;
}

/** `replay <thread> --from <checkpoint> [--set path=value …]` (live fork) or `replay <thread> --verify`. */
export function forkOrVerifyCommand(threadId: string, options: ReplayCommandOptions): Promise<number> {
  if (options.verify) {
    if (options.from !== undefined || options.set !== undefined || options.restoreFiles) {
      throw new ConfigError("--verify checks the whole recorded run against the graph: use it without --from, --set and --restore-files");
    }
    return verifyCommand(threadId, options);
  }
  if (options.from === undefined) {
    throw new ConfigError(
      `replay needs --from <checkpoint> to fork (see \`loopgraph inspect ${threadId}\` for checkpoint ids), --recorded or --verify`,
    );
  }
  return forkCommand(threadId, options.from, options);
}

function forkCommand(threadId: string, from: string, options: ReplayCommandOptions): Promise<number> {
  return withRunUi(Boolean(options.json), options.db, (ui) =>
    forkRun({
      threadId,
      from,
      set: options.set,
      restoreFiles: options.restoreFiles,
      model: options.model,
      approval: options.approval,
      mode: options.mode,
      noSandbox: options.sandbox === false,
      modelTimeoutMs: options.modelTimeout,
      db: options.db,
      settings: options.settings,
      ...ui,
    }),
  );
}

async function verifyCommand(threadId: string, options: ReplayCommandOptions): Promise<number> {
  const result = await verifyRun({ threadId, ...storeOf(options) });
  const exitCode = result.consistent ? ExitCode.Finished : ExitCode.Failed;
  if (options.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return exitCode;
  }
  process.stdout.write(renderVerify(result));
  return exitCode;
}

function renderVerify(result: VerifyResult): string {
  const lines: string[] = [];
  if (result.graphChanged) lines.push(pc.dim(`note: ${result.graphChanged}`));
  if (result.missingNodes.length > 0) {
    lines.push(pc.yellow(`nodes in the record that the graph no longer has: ${result.missingNodes.join(", ")}`));
  }
  const { divergence } = result;
  if (!divergence) {
    lines.push(`${pc.green("consistent")}: ${result.checked} routing decisions of thread ${result.threadId} match ${result.graphFile}`);
  } else {
    lines.push(`${pc.red("divergence")} at ${divergence.message}`);
    const { location } = divergence;
    if (location) lines.push(`  ${location.file}:${location.line}:${location.col}: ${location.what}`);
  }
  return `${lines.join("\n")}\n`;
}
