import { EXIT_CODES } from "../engine/outcome.js";
import type { Settings } from "../config/environment-settings.js";
import type { RunControl } from "@langchain/langgraph";
import { checkpointState, threadHistory, type CheckpointSummary } from "../engine/inspect.js";
import type { EventSink } from "../runtime/events.js";
import { createLoopSupervisor } from "../engine/runner.js";
import { Thread } from "../engine/thread.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, ExitCode } from "../errors.js";
import { isRepoWorkspace } from "../runs/repo-workspaces.js";
import { loadGraph } from "../graph/load.js";
import type { LooperSnapshot } from "../state/looper.js";
import { latestValues, requireThread, withStore, type Store, type StoreOptions } from "../store/store.js";
import type { Recording } from "../runs/recordings.js";
import type { ThreadRecord } from "../runs/thread-registry.js";
import { outcomeDivergence, routingDivergence, stepNodes, unusedRecordsDivergence, type Ending } from "./compare.js";
import { byStep, type Divergence } from "./divergence.js";
import { RecordSource, type StepRecording } from "./record-source.js";
import { lineage } from "./lineage.js";
import { createReplayThread } from "./scratch-thread.js";
import { type CommonRunOptions } from "../engine/run-types.js";

export interface RecordedReplayOptions extends Omit<StoreOptions, "env"> {
  threadId: string;
  /** The command's settings (src/config). */
  settings: Settings;
  /** A root checkpoint of the thread (an id or a unique prefix); default: the thread's first. */
  from?: string;
  onEvent?: EventSink;
  /** Called once the scratch thread exists, before the replay runs. */
  onStart?: (start: ReplayStart) => void;
  /** Ctrl-C: `control.requestDrain()` stops the replay at the next step boundary. */
  control?: RunControl;
}

export interface ReplayStart {
  threadId: string;
  replayThreadId: string;
  fromCheckpoint: string;
  /** The step of that checkpoint: the replay runs the steps after it. */
  fromStep: number;
  /** Records of the steps after it. */
  records: number;
}

export interface RecordedReplayResult extends ReplayStart {
  recorded: Ending & { exitCode: number };
  replayed: Ending;
  /** In the order they happened; the first is where the replay left the record. */
  divergences: Divergence[];
  /** The record ends before the run did (it was interrupted, paused or crashed) and the replay stopped there. */
  endOfRecord: boolean;
  /** The recorded run failed (or ended by a limit) and the replay ended the same way, with no divergence. */
  reproduced: boolean;
  recordsUsed: number;
  /** 1 on a divergence; otherwise the recorded run's own exit code (0 finished, 1 failed, 3 paused, 4 limited, 130 interrupted). */
  exitCode: number;
}

/** The exit code a thread's recorded run ended with; a run that never ended (crashed, killed) counts as failed. */
const RECORDED_EXIT_CODES: Record<ThreadRecord["status"], number> = { ...EXIT_CODES, running: ExitCode.Failed, queued: ExitCode.Failed };

/**
 * `loopgraph replay <thread> --recorded [--from <checkpoint>]`: re-executes the thread's graph (its
 * files as they are now) into a new scratch thread `<thread>.replay-<n>`, starting from a copy of the
 * checkpoint, with every model answer, tool result, git read of the workspace, inbox read,
 * function node result and approval answer taken from the record: no model is configured, nothing
 * goes to the network, no tool or function runs and git is not called, so the workspace is left
 * exactly as it is. Breakpoints do not pause it (the record says what came after them). Reports
 * where the replay departs from the record.
 */
export async function replayRecorded(options: RecordedReplayOptions): Promise<RecordedReplayResult> {
  const storeOptions: StoreOptions = { db: options.db, cwd: options.cwd, env: options.settings.env };
  const history = await threadHistory(options.threadId, storeOptions);
  const original = history.thread;
  const from = options.from ? (await checkpointState(original.threadId, options.from, storeOptions)).checkpointId : undefined;
  const line = lineage(history.checkpoints, from);
  const start = line.find((checkpoint) => checkpoint.checkpointId === from) ?? line[0];
  if (!start) throw new ConfigError(`thread "${original.threadId}" has no checkpoint to replay from`);
  const graph = await loadGraph(original.graphFile);
  const complete = original.status === "finished" || original.status === "failed" || original.status === "limited";

  // A run on a repository has no workspace on this machine; a replay touches none: an empty one stands in.
  const standIn = isRepoWorkspace(original.workspace) ? await mkdtemp(join(tmpdir(), "loopgraph-replay-")) : undefined;
  try {
    return await withStore(storeOptions, "write", async (store) => {
      const recordings = await store.recordings.list(original.threadId);
      if (recordings.length === 0 && line.some((checkpoint) => checkpoint.step > 0)) {
        throw new ConfigError(`thread "${original.threadId}" has no record to replay: it ran before loopgraph recorded runs`);
      }
      const records = recordsAfter(recordings, line, start.step);
      const replayThreadId = await createReplayThread(store, original, graph, start.checkpointId);
      const begun: ReplayStart = {
        threadId: original.threadId,
        replayThreadId,
        fromCheckpoint: start.checkpointId,
        fromStep: start.step,
        records: records.length,
      };
      options.onStart?.(begun);

      const abort = new AbortController();
      const source = new RecordSource(records, { complete, abort, stepOf: rootStepOf(store, replayThreadId) });
      const runOptions: CommonRunOptions = {
        db: options.db,
        cwd: options.cwd,
        settings: options.settings,
        // A replay stopped at a divergence fails its node: the summary says why, not an error line.
        onEvent: (event) => (event.type === "error" && abort.signal.aborted ? undefined : options.onEvent?.(event)),
        control: options.control,
        signal: abort.signal,
        maxRounds: await recordedMaxRounds(store, original.threadId),
        askApproval: async (request) => source.approval(request),
        // The recorded run's settings: its model spec keys the scripted responses it consumed.
        model: original.model,
        approval: original.approval,
        ...(original.mode && { mode: original.mode }),
      };
      const thread = await Thread.open(store, await requireThread(store, replayThreadId), runOptions, {
        graph,
        looper: createLoopSupervisor,
        replay: { model: source.model, effect: (request) => source.effect(request) },
        ...(standIn ? { workspace: standIn } : {}),
      });
      const ctx = thread.context();
      thread.announce(ctx, {
        task: original.task,
        resumed: false,
        changed: { recordedHash: original.graphHash, consequence: "the replay follows the new version, so it may depart from the record" },
      });
      // Breakpoints do not pause a replay, neither the graph's nor its subgraphs'.
      const noBreakpoints = { breakpoints: false };
      let outcome = await thread.execute(null, ctx, noBreakpoints);
      // A thread of several runs (a chat's turns, a restart by a command) is replayed run by run, with each later run's recorded input.
      for (const input of await laterInputs(store, original.threadId, line, start.step)) {
        if (outcome.status !== "finished" || abort.signal.aborted) break;
        outcome = await thread.execute(input, ctx, noBreakpoints);
      }

      const recorded: Ending = { status: original.status, ...(original.error ? { error: original.error } : {}) };
      const replayed: Ending = { status: outcome.status, ...(outcome.error ? { error: outcome.error } : {}) };
      const replayHistory = await threadHistory(replayThreadId, storeOptions);
      const divergences = compareWithRecord({
        source,
        recorded,
        replayed,
        recordedSteps: stepNodes(line, start.step),
        replayedSteps: stepNodes(replayHistory.checkpoints, start.step),
        complete,
      });
      const endOfRecord = source.endOfRecord !== undefined && divergences.length === 0;
      return {
        ...begun,
        recorded: { ...recorded, exitCode: RECORDED_EXIT_CODES[original.status] },
        replayed,
        divergences,
        endOfRecord,
        reproduced: divergences.length === 0 && (original.status === "failed" || original.status === "limited"),
        recordsUsed: source.usedCount,
        exitCode: divergences.length > 0 ? ExitCode.Failed : RECORDED_EXIT_CODES[original.status],
      };
    });
  } finally {
    if (standIn) await rm(standIn, { recursive: true, force: true });
  }
}

/** The records of the lineage's steps after `step`, each with its step (the step after the checkpoint it started from). */
function recordsAfter(recordings: readonly Recording[], checkpoints: readonly CheckpointSummary[], step: number): StepRecording[] {
  const stepOf = new Map(checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint.step + 1]));
  return recordings.flatMap((record) => {
    const recordStep = stepOf.get(record.checkpointId);
    return recordStep !== undefined && recordStep > step ? [{ ...record, step: recordStep }] : [];
  });
}

/** The root step that starts from a checkpoint of the replay's thread (its step + 1), read once per checkpoint. */
function rootStepOf(store: Store, threadId: string): (checkpointId: string) => Promise<number> {
  const steps = new Map<string, number>();
  return async (checkpointId) => {
    let step = steps.get(checkpointId);
    if (step === undefined) {
      const tuple = await store.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpointId } });
      step = (tuple?.metadata?.step ?? -1) + 1;
      steps.set(checkpointId, step);
    }
    return step;
  };
}

/**
 * The round limit the recorded run's loop started with: `--max-rounds` is a run setting the
 * thread registry does not keep, and a replayed Looper must start its loop with the same limit.
 */
async function recordedMaxRounds(store: Store, threadId: string): Promise<number | undefined> {
  const loopState = (await latestValues(store, threadId)).loopState as LooperSnapshot | undefined;
  return loopState?.context.maxRounds;
}

interface Comparison {
  source: RecordSource;
  recorded: Ending;
  replayed: Ending;
  recordedSteps: ReturnType<typeof stepNodes>;
  replayedSteps: ReturnType<typeof stepNodes>;
  complete: boolean;
}

/**
 * Every divergence, in the order they happened. A replay stopped at a divergence or at the end of
 * the record is compared up to where it stopped; one that ran to its end is also compared on
 * where it ended, the records it left unused and its outcome.
 */
function compareWithRecord({ source, recorded, replayed, recordedSteps, replayedSteps, complete }: Comparison): Divergence[] {
  const divergences = [...source.divergences];
  const routing = routingDivergence(recordedSteps, replayedSteps, { recordComplete: complete, ranToEnd: !source.stopped });
  if (routing) divergences.push(routing);
  if (!source.stopped) {
    const unused = unusedRecordsDivergence(source.remaining());
    if (unused) divergences.push(unused);
    // Past the end of an incomplete record the replay may end any way, except by failing.
    if (complete || replayed.status === "failed") {
      const outcome = outcomeDivergence(recorded, replayed);
      if (outcome) divergences.push(outcome);
    }
  }
  return byStep(divergences);
}

/** The inputs of the runs that followed the first on the lineage (their `input` checkpoints), in order. */
async function laterInputs(store: Store, threadId: string, line: CheckpointSummary[], fromStep: number): Promise<unknown[]> {
  const inputs: unknown[] = [];
  for (const checkpoint of line) {
    if (checkpoint.source !== "input" || checkpoint.step <= fromStep) continue;
    const tuple = await store.saver.getTuple({
      configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpoint.checkpointId },
    });
    const input = tuple?.checkpoint.channel_values.__start__;
    if (input !== undefined) inputs.push(input);
  }
  return inputs;
}
