import pc from "picocolors";
import { ConfigError } from "../errors.js";
import { describeEnding } from "../replay/compare.js";
import { replayRecorded, type RecordedReplayResult, type ReplayStart } from "../replay/recorded.js";
import { eventLine, humanRenderer, jsonRenderer } from "./render.js";
import { forkOrVerifyCommand, type ReplayCommandOptions as ForkOrVerifyOptions } from "./replay-fork-command.js";
import { dbFlag, drainOnInterrupt } from "./run-commands.js";

export interface ReplayCommandOptions extends ForkOrVerifyOptions {
  recorded?: boolean;
}

const out = (text: string): void => void process.stdout.write(`${text}\n`);

/** Options of a live fork or of --verify, and their flags. */
const NOT_WITH_RECORDED = {
  set: "--set",
  verify: "--verify",
  model: "--model",
  approval: "--approval",
  restoreFiles: "--restore-files",
  modelTimeout: "--model-timeout",
} as const;

/** `loopgraph replay <thread>`: `--recorded [--from]` here; a live fork (`--from [--set]`) or `--verify` in ./replay-fork-command.ts. */
export async function replayCommand(threadId: string, options: ReplayCommandOptions): Promise<number> {
  if (!options.recorded) return forkOrVerifyCommand(threadId, options);
  const misplaced = Object.entries(NOT_WITH_RECORDED).flatMap(([key, flag]) =>
    options[key as keyof typeof NOT_WITH_RECORDED] !== undefined ? [flag] : [],
  );
  if (misplaced.length > 0) throw new ConfigError(`--recorded replays the record with no model: use it without ${misplaced.join(", ")}`);
  return recordedReplayCommand(threadId, options);
}

/**
 * Runs the recorded replay with live progress, then says whether it followed the record: the
 * first divergence (all of them with --json, in a final `replay_result` line), or "reproduced".
 * Exit code: 1 on a divergence, else the recorded run's own (see RecordedReplayResult.exitCode).
 */
export async function recordedReplayCommand(threadId: string, options: ReplayCommandOptions): Promise<number> {
  const json = Boolean(options.json);
  const sink = json ? jsonRenderer() : humanRenderer(process.stdout, { spinner: false });
  // Nothing of a recorded replay waits on the world (no model, no tool): draining stops it at once.
  const { control, dispose } = drainOnInterrupt(json, options.db);
  try {
    const result = await replayRecorded({
      threadId,
      from: options.from,
      db: options.db,
      settings: options.settings,
      onEvent: sink,
      control,
      onStart: (start) => (json ? out(eventLine({ type: "replay_started", ...start })) : out(describeStart(start))),
    });
    if (json) out(eventLine({ type: "replay_result", ...result }));
    else printSummary(result, options.db);
    return result.exitCode;
  } finally {
    dispose();
  }
}

function describeStart(start: ReplayStart): string {
  const from = start.fromStep < 0 ? "its beginning" : `checkpoint ${start.fromCheckpoint} (step ${start.fromStep})`;
  return (
    `${pc.bold("↺ recorded replay")} of ${start.threadId} from ${from} into thread ${pc.cyan(start.replayThreadId)}\n` +
    pc.dim(`  ${start.records} recorded model answers and effect results; no model, no tools, no git`)
  );
}

function printSummary(result: RecordedReplayResult, db: string | undefined): void {
  const inspect = `loopgraph inspect ${result.replayThreadId}${dbFlag(db)}`;
  const [first, ...more] = result.divergences;
  if (first) {
    const where = [first.step === undefined ? undefined : `step ${first.step}`, first.node].filter(Boolean).join(", ");
    process.stderr.write(`${pc.red("✖ diverged")}${where ? ` at ${where}` : ""} (${first.kind}): ${first.message}\n`);
    if (more.length > 0) process.stderr.write(pc.dim(`  and ${more.length} more divergence(s): --json lists them all\n`));
  } else if (result.reproduced) {
    out(`${pc.green("✔ reproduced:")} ${result.replayed.error ?? result.recorded.error ?? "the run failed"}`);
  } else if (result.endOfRecord) {
    out(`${pc.green("✔ consistent")} up to the end of the record: the recorded run ${describeEnding(result.recorded)} there`);
  } else {
    out(
      `${pc.green("✔ consistent:")} the replay followed the record (${result.recordsUsed} recorded calls) and ${describeEnding(result.replayed)}`,
    );
  }
  out(pc.dim(`replay thread ${result.replayThreadId}: ${inspect}`));
}
