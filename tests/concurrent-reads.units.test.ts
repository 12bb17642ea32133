/** The pieces of concurrent reads that need no process: the loop detector's judging of a batch, and a recorded replay taking a batch's records in any order. */
import { describe, expect, it } from "vitest";
import { RecordSource, type StepRecording } from "../src/replay/record-source.js";
import { judgeReads } from "../src/runtime/tool-call.js";
import { DEFAULT_LOOP_DETECTION_OPTIONS, EMPTY_LOOP_DETECTOR_STATE } from "../src/tools/loop-detection.js";

const read = (id: string, path: string) => ({ id, name: "read_file", args: { path } });
const ok = { ok: true, content: "text" };

describe("a batch of reads, judged after it ran", () => {
  it("in the model's order, as one after the other: the streak's warning follows the call that reached it", () => {
    const options = { ...DEFAULT_LOOP_DETECTION_OPTIONS, readStreak: 2 };
    const batch = [read("a", "a.txt"), read("b", "b.txt"), read("c", "c.txt")].map((call) => ({ call, result: ok }));
    const judged = judgeReads(EMPTY_LOOP_DETECTOR_STATE, batch, options);
    expect([...judged.warnings.keys()]).toEqual(["b"]);
    expect(judged.loop.readStreak).toBe(3);
    expect(judged.loop.recentCalls.map((call) => call.name)).toEqual(["read_file", "read_file", "read_file"]);
  });

  it("the same error too many times in a row ends the turn, counted across the batch", () => {
    const failed = { ok: false, errorKind: "not_found" as const, content: "no such file" };
    const batch = [read("a", "x"), read("b", "y"), read("c", "z")].map((call) => ({ call, result: failed }));
    const judged = judgeReads(EMPTY_LOOP_DETECTOR_STATE, batch, { ...DEFAULT_LOOP_DETECTION_OPTIONS, repeatedErrors: 3 });
    expect(judged.repeatedError).toMatch(/^the same error 3 times in a row from read_file/);
  });
});

describe("a recorded replay of a batch", () => {
  const record = (id: number, path: string, step = 1): StepRecording =>
    ({
      id,
      step,
      threadId: "t",
      checkpointId: "c",
      taskPath: `coder:t|read:${id}`,
      callIndex: 0,
      node: "coder",
      kind: "tool",
      name: "read_file",
      args: { path },
      result: { ok: true, content: path },
    }) as StepRecording;
  const source = (records: StepRecording[]) =>
    new RecordSource(records, { complete: true, stepOf: async () => 1, abort: new AbortController() });

  it("takes the reads of one step in the order they come now, each its own record", async () => {
    const replay = source([record(1, "a.txt"), record(2, "b.txt")]);
    expect(await replay.effect({ kind: "tool", node: "coder", name: "read_file", args: { path: "b.txt" } })).toEqual({
      ok: true,
      content: "b.txt",
    });
    expect(await replay.effect({ kind: "tool", node: "coder", name: "read_file", args: { path: "a.txt" } })).toEqual({
      ok: true,
      content: "a.txt",
    });
    expect(replay.divergences).toEqual([]);
  });

  it("never takes a record of a later step early: a call the step did not make is a divergence", async () => {
    const replay = source([record(1, "a.txt"), record(2, "b.txt", 2)]);
    await expect(replay.effect({ kind: "tool", node: "coder", name: "read_file", args: { path: "b.txt" } })).rejects.toThrow();
    expect(replay.divergences[0]).toMatchObject({ kind: "tool_args" });
  });
});
