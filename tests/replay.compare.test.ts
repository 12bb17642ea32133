import { describe, expect, it } from "vitest";
import { outcomeDivergence, routingDivergence, type StepNodes } from "../src/replay/compare.js";
import { byStep, describeCallDifference } from "../src/replay/divergence.js";
import { lineage } from "../src/replay/lineage.js";
import type { CheckpointSummary } from "../src/engine/inspect.js";

const steps = (...nodes: string[]): StepNodes[] => nodes.map((node, index) => ({ step: index + 1, nodes: [node] }));
const complete = { recordComplete: true, ranToEnd: true };

describe("routing against the record", () => {
  it("is consistent when every step ran the recorded nodes", () => {
    expect(routingDivergence(steps("looper", "coder", "looper"), steps("looper", "coder", "looper"), complete)).toBeUndefined();
  });

  it("names the first step that ran other nodes", () => {
    expect(
      routingDivergence(steps("looper", "coder", "looper", "judge"), steps("looper", "review", "looper", "coder"), complete),
    ).toMatchObject({
      kind: "routing",
      step: 2,
      message: "at step 2 the replay ran review; the record ran coder",
    });
  });

  it("reports a replay that ends early or goes on after a complete record, but not one that stopped or ran past an incomplete record", () => {
    expect(routingDivergence(steps("looper", "coder"), steps("looper"), complete)?.message).toBe(
      "the replay ended before step 2, where the record ran coder",
    );
    expect(routingDivergence(steps("looper"), steps("looper", "coder"), complete)?.message).toBe(
      "at step 2 the replay ran coder, but the record ended after step 1",
    );
    expect(routingDivergence(steps("looper", "coder"), steps("looper"), { recordComplete: true, ranToEnd: false })).toBeUndefined();
    expect(routingDivergence(steps("looper"), steps("looper", "coder"), { recordComplete: false, ranToEnd: true })).toBeUndefined();
  });
});

describe("the outcome against the record", () => {
  it("matches the same status and error only", () => {
    expect(
      outcomeDivergence({ status: "failed", error: "node x failed: boom" }, { status: "failed", error: "node x failed: boom" }),
    ).toBeUndefined();
    expect(outcomeDivergence({ status: "failed", error: "boom" }, { status: "finished" })?.message).toBe(
      "the recorded run failed: boom; the replay finished",
    );
    expect(outcomeDivergence({ status: "failed", error: "boom" }, { status: "failed", error: "bang" })?.kind).toBe("outcome");
  });
});

describe("divergence reports", () => {
  it("name the arguments that differ, or the other tool", () => {
    expect(
      describeCallDifference(
        { name: "write_file", args: { path: "a.js", contents: "x" } },
        { name: "write_file", args: { path: "b.js", contents: "x" } },
      ),
    ).toBe('write_file with path: "b.js" (recorded "a.js")');
    expect(describeCallDifference({ name: "shell", args: { command: "ls" } }, { name: "read_file", args: { path: "a" } })).toBe(
      'read_file {"path":"a"}, where the record has shell {"command":"ls"}',
    );
  });

  it("are ordered by step, those without one last", () => {
    const ordered = byStep([
      { kind: "outcome", message: "o" },
      { kind: "routing", step: 9, message: "r" },
      { kind: "tool_args", step: 4, message: "t" },
    ]);
    expect(ordered.map((d) => d.message)).toEqual(["t", "r", "o"]);
  });
});

describe("the lineage a replay follows", () => {
  const checkpoint = (checkpointId: string, parentId?: string): CheckpointSummary => ({
    checkpointId,
    ...(parentId ? { parentId } : {}),
    step: 0,
    source: "loop",
    nodes: [],
    createdAt: "",
    tokens: { inputTokens: 0, outputTokens: 0 },
    status: "done",
    changes: [],
    branch: 0,
  });
  // a ← b ← c, and a branch b ← d (newer).
  const tree = [checkpoint("a"), checkpoint("b", "a"), checkpoint("c", "b"), checkpoint("d", "b")];
  const ids = (chain: CheckpointSummary[]) => chain.map((c) => c.checkpointId);

  it("is the newest checkpoint's chain of parents, or the newest chain through a given checkpoint", () => {
    expect(ids(lineage(tree))).toEqual(["a", "b", "d"]);
    expect(ids(lineage(tree, "c"))).toEqual(["a", "b", "c"]);
    expect(ids(lineage(tree, "b"))).toEqual(["a", "b", "d"]);
    expect(lineage(tree, "zz")).toEqual([]);
  });
});
