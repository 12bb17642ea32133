import { isDeepStrictEqual } from "node:util";
import { callerName, currentTask } from "../runtime/call-site.js";
import { ModelError } from "../errors.js";
import { messageFromRecord } from "../models/recorded.js";
import type { ChatModel, ModelCallOptions, ModelCallResult } from "../models/types.js";
import type { Recording } from "../runs/recordings.js";
import { describeCallDifference, ReplayStop, type Divergence } from "./divergence.js";
import type { EffectRequest } from "../runtime/context.js";
import type { ApprovalAnswer, ApprovalRequest } from "../runtime/approval.js";

/** A record with the root step it was made in. */
export type StepRecording = Recording & { step: number };

type Category = "model" | "effect" | "approval";

const categoryOf = (record: Recording): Category => (record.kind === "model" || record.kind === "approval" ? record.kind : "effect");
const queueKey = (category: Category, node: string): string => `${category}\u0000${node}`;
/** Arguments as stored: JSON, without undefined fields. */
const asJson = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

export interface RecordSourceOptions {
  /** The record ends with the run (it finished or failed), rather than where it was interrupted, paused or crashed. */
  complete: boolean;
  /** The root step a checkpoint of the replay's thread starts (its step + 1). */
  stepOf(checkpointId: string): Promise<number>;
  /** Aborted at the first divergence (or the end of the record), so that no node goes on. */
  abort: AbortController;
}

/** A record's root task: the first segment of its task path (`coder:<task id>` of `coder:<task id>|tools:<task id>`). */
const rootTaskOf = (record: Recording): string => record.taskPath.split("|")[0]!;

/**
 * The records in the order the calls of the run's lineage came, from their order of writing (`id`).
 * The two differ where a root task ran again (a resume after Ctrl-C, a crash, an approval): its new
 * execution replaced its own records (written anew, after the others), while the records of its
 * subgraph's inner tasks that had finished stay from the earlier execution, as those tasks are not
 * run again. A Coder in a worktree opens it in its root task, then runs its subgraph: resumed, it
 * opens it again (a new record, written last) before the subgraph goes on. The kept inner records
 * go back to where the new execution took the subgraph up: before its first new inner record.
 * (A root task that ran again with nothing left for its subgraph keeps the order of writing.)
 */
export function inExecutionOrder<T extends Recording>(records: readonly T[]): T[] {
  const sorted = [...records].sort((a, b) => a.id - b.id);
  const groups = new Map<string, T[]>();
  for (const record of sorted) {
    const key = `${record.checkpointId}\u0000${rootTaskOf(record)}`;
    const group = groups.get(key);
    if (group) group.push(record);
    else groups.set(key, [record]);
  }
  const ordered: T[] = [];
  const placed = new Set<string>();
  for (const record of sorted) {
    const key = `${record.checkpointId}\u0000${rootTaskOf(record)}`;
    if (placed.has(key)) continue;
    placed.add(key);
    ordered.push(...reexecuted(groups.get(key)!));
  }
  return ordered;
}

/** One root task's records (id order) with the inner records of an earlier execution moved to where the latest took them up. */
function reexecuted<T extends Recording>(group: T[]): T[] {
  const own = (record: T): boolean => !record.taskPath.includes("|");
  const firstOwn = group.find(own);
  if (!firstOwn) return group;
  const kept = group.filter((record) => !own(record) && record.id < firstOwn.id);
  if (kept.length === 0) return group;
  const latest = group.filter((record) => record.id >= firstOwn.id);
  const resumedAt = latest.findIndex((record) => !own(record));
  if (resumedAt < 0) return group;
  return [...latest.slice(0, resumedAt), ...kept, ...latest.slice(resumedAt)];
}

/**
 * A run's record, answering a recorded replay: model calls, effects (tools, git and inbox reads,
 * function nodes) and approvals are matched per node, in the order they were recorded, and must come at the same
 * root step. The first mismatch is logged as a divergence and stops the replay.
 */
export class RecordSource {
  readonly divergences: Divergence[] = [];
  /** Where the replay reached the end of an incomplete record. */
  endOfRecord?: { step?: number; node: string };
  readonly model: ChatModel;
  private readonly queues = new Map<string, StepRecording[]>();
  private used = 0;

  constructor(
    private readonly records: readonly StepRecording[],
    private readonly options: RecordSourceOptions,
  ) {
    for (const record of inExecutionOrder(records)) {
      const key = queueKey(categoryOf(record), record.node);
      const queue = this.queues.get(key);
      if (queue) queue.push(record);
      else this.queues.set(key, [record]);
    }
    this.model = { spec: "recorded", call: (_messages, callOptions) => this.answerModel(callOptions) };
  }

  /** Records taken so far. */
  get usedCount(): number {
    return this.used;
  }

  /** Records never taken, in record order. */
  remaining(): StepRecording[] {
    return [...this.queues.values()].flat().sort((a, b) => a.id - b.id);
  }

  get stopped(): boolean {
    return this.options.abort.signal.aborted;
  }

  private async answerModel(options: ModelCallOptions): Promise<ModelCallResult> {
    const { record } = await this.take("model", options.node, "called the model");
    if (record.kind !== "model") throw new Error(`record ${record.id} is not a model call`);
    if (record.error) throw new ModelError(record.error.message, record.error.kind);
    const message = messageFromRecord(record.output);
    if (typeof message.content === "string" && message.content) options.onToken?.(message.content);
    return { message, usage: record.output.usage };
  }

  /** The recorded result of an effect (RunContext.replayEffect). */
  async effect(request: EffectRequest): Promise<unknown> {
    const args = asJson(request.args);
    const same = (record: Recording): boolean =>
      record.kind === request.kind && "name" in record && record.name === request.name && isDeepStrictEqual(args, record.args);
    const { record, step } = await this.take("effect", request.node, `ran ${request.name}`, same);
    if (record.kind === "model" || record.kind === "approval") throw new Error(`record ${record.id} is not an effect`);
    if (!same(record)) {
      this.stop({
        kind: "tool_args",
        step,
        node: request.node,
        message: `${request.node} ran ${describeCallDifference(record, request)} at step ${step}`,
        expected: { name: record.name, args: record.args },
        actual: { name: request.name, args: request.args },
      });
    }
    return record.result;
  }

  /**
   * The recorded answer to an approval request, or undefined (the replay then pauses, as the
   * recorded run did when it has no answer).
   */
  approval(request: ApprovalRequest): ApprovalAnswer | undefined {
    const record = this.queues.get(queueKey("approval", callerName(request.node)))?.shift();
    if (!record || record.kind !== "approval") return undefined;
    this.used += 1;
    if (record.name !== request.tool || !isDeepStrictEqual(asJson(request.args), record.args)) {
      this.divergences.push({
        kind: "tool_args",
        step: record.step,
        node: request.node,
        message: `${request.node} asked to approve ${describeCallDifference(record, { name: request.tool, args: request.args })}`,
        expected: { name: record.name, args: record.args },
        actual: { name: request.tool, args: request.args },
      });
      return undefined;
    }
    return record.answer as ApprovalAnswer;
  }

  /**
   * The next record of `node` in `category`, checked to come at the current step. With `same`:
   * the first record of the next record's step that is the same call, if the next is not: calls
   * of one step that ran at once (a batch of reads) were recorded in the order they ended.
   */
  private async take(
    category: Category,
    called: string,
    what: string,
    same?: (record: Recording) => boolean,
  ): Promise<{ record: StepRecording; step?: number }> {
    if (this.stopped) throw new ReplayStop("the replay was stopped");
    // A map's instance takes its own records (they were made under its name, see callerName).
    const node = callerName(called);
    const task = currentTask();
    const step = task ? await this.options.stepOf(task.checkpointId) : undefined;
    const at = step === undefined ? "" : ` at step ${step}`;
    const queue = this.queues.get(queueKey(category, node));
    const head = queue?.[0];
    const ended = head && same && !same(head) ? queue!.findIndex((record) => record.step === head.step && same(record)) : -1;
    const record = ended > 0 ? queue!.splice(ended, 1)[0] : queue?.shift();
    if (!record) {
      if (!this.options.complete && this.remaining().length === 0) {
        this.endOfRecord = { step, node };
        this.options.abort.abort();
        throw new ReplayStop(`the record ends here: ${node} ${what}${at}`);
      }
      const recorded = this.records.filter((r) => r.node === node && categoryOf(r) === category).length;
      this.stop({
        kind: "unrecorded_call",
        step,
        node,
        message: `${node} ${what}${at}, but the record has nothing left for it (${recorded} recorded, all used)`,
      });
    }
    this.used += 1;
    if (step !== undefined && record.step !== step) {
      this.stop({
        kind: "node",
        step,
        node,
        message: `${node} ${what}${at}; the record has this call at step ${record.step}`,
        expected: record.step,
        actual: step,
      });
    }
    return { record, step };
  }

  /** Logs the divergence and ends the replay: every node still running stops at its next model call or effect. */
  private stop(divergence: Divergence): never {
    this.divergences.push(divergence);
    this.options.abort.abort();
    throw new ReplayStop(divergence.message);
  }
}
