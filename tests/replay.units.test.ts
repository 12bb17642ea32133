import { join } from "node:path";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { checkpointTree, lineage, treeRows } from "../src/engine/checkpoint-tree.js";
import { ConfigError } from "../src/errors.js";
import { loadGraph } from "../src/graph/load.js";
import { rerunPlan, sideEffects } from "../src/replay/rerun-plan.js";
import { applyEdits, parseStateEdit, withTaskMessage } from "../src/replay/state-edits.js";
import { ROOT } from "./helpers/cli.js";

describe("checkpoint tree", () => {
  // a → b → c → d (original) ; b → e → f (fork 1) ; e → g (fork 2, made last)
  const items = [
    { id: "a" },
    { id: "b", parentId: "a" },
    { id: "c", parentId: "b" },
    { id: "d", parentId: "c" },
    { id: "e", parentId: "b" },
    { id: "f", parentId: "e" },
    { id: "g", parentId: "e" },
  ];

  it("numbers branches in the order they were made; a checkpoint's oldest child stays on its branch", () => {
    const tree = checkpointTree(items);
    expect(Object.fromEntries(tree.branchOf)).toEqual({ a: 0, b: 0, c: 0, d: 0, e: 1, f: 1, g: 2 });
    expect(tree.branches).toEqual([
      { branch: 0, first: "a", tip: "d" },
      { branch: 1, forkedFrom: "b", first: "e", tip: "f" },
      { branch: 2, forkedFrom: "e", first: "g", tip: "g" },
    ]);
    expect(tree.head).toBe("g");
    expect(lineage(items, "g")).toEqual(["a", "b", "e", "g"]);
  });

  it("draws each branch under the checkpoint it forks from", () => {
    const rows = treeRows(checkpointTree(items)).map(({ id, guide }) => `${guide}${id}`);
    expect(rows).toEqual(["a", "b", "├─ c", "│  d", "└─ e", "   ├─ f", "   └─ g"]);
  });

  it("keeps a single line flat", () => {
    const rows = treeRows(checkpointTree(items.slice(0, 4)));
    expect(rows.map((r) => r.guide)).toEqual(["", "", "", ""]);
  });
});

describe("--set edits", () => {
  it("parses values as JSON when they are JSON, else as text", () => {
    expect(parseStateEdit("vars.n=3").value).toBe(3);
    expect(parseStateEdit('task="quoted"').value).toBe("quoted");
    expect(parseStateEdit("task=plain words = fine").value).toBe("plain words = fine");
    expect(parseStateEdit('outputs.x={"a":[1]}').value).toEqual({ a: [1] });
    expect(parseStateEdit("task=").value).toBe("");
  });

  it("rejects unknown channels and unsafe or empty path segments", () => {
    expect(() => parseStateEdit("nope=1")).toThrow(ConfigError);
    expect(() => parseStateEdit("vars..x=1")).toThrow(/invalid path/);
    expect(() => parseStateEdit("vars.__proto__.x=1")).toThrow(/invalid path/);
    expect(() => parseStateEdit("=1")).toThrow(/expected path=value/);
  });

  it("builds new channel values without touching the old ones; messages stay messages", () => {
    const message = new AIMessage({
      id: "m1",
      content: "old",
      tool_calls: [{ id: "c", name: "shell", args: { command: "ls" }, type: "tool_call" }],
    });
    const values = { outputs: { critique: { verdict: "revise", notes: "n" } }, messages: [message], vars: { a: 1 } };
    const changed = applyEdits(values, [
      parseStateEdit("outputs.critique.verdict=approve"),
      parseStateEdit("messages.0.content=new"),
      parseStateEdit("vars.b=2"),
      parseStateEdit("vars.b=3"),
    ]);
    expect(changed.outputs).toEqual({ critique: { verdict: "approve", notes: "n" } });
    expect(changed.vars).toEqual({ a: 1, b: 3 });
    const [edited] = changed.messages as AIMessage[];
    expect(edited).toBeInstanceOf(AIMessage);
    expect(edited).not.toBe(message);
    expect([edited!.content, edited!.id, edited!.tool_calls?.[0]?.args]).toEqual(["new", "m1", { command: "ls" }]);
    expect(message.content).toBe("old");
    expect(values.outputs.critique.verdict).toBe("revise");
    expect(() => applyEdits(values, [parseStateEdit("messages.1.content=x")])).toThrow(/messages is a list of 1/);
  });

  it("a new task also rewrites the task message, unless the messages are edited too", () => {
    const values = { task: "old", messages: [new HumanMessage({ id: "task", content: "old" }), new AIMessage({ id: "a", content: "ok" })] };
    const synced = withTaskMessage(values, applyEdits(values, [parseStateEdit("task=new")]));
    expect((synced.messages as HumanMessage[]).map((m) => m.content)).toEqual(["new", "ok"]);
    const explicit = applyEdits(values, [parseStateEdit("task=new"), parseStateEdit("messages.1.content=mine")]);
    expect(withTaskMessage(values, explicit)).toBe(explicit);
  });
});

describe("re-run plan", () => {
  it("lists every node reachable from the next ones, with side effects (Coder tools, function nodes)", async () => {
    const coderReview = await loadGraph(join(ROOT, "graphs/coder-review.yaml"));
    expect(rerunPlan(coderReview, ["coder"])).toEqual([
      { node: "coder", effects: ["writes files", "runs shell", "commits to git"] },
      { node: "looper", effects: [] },
      { node: "review", effects: [] },
      { node: "judge", effects: [] },
    ]);
    const example = await loadGraph(join(ROOT, "graphs/example-review.yaml"));
    expect(rerunPlan(example, ["stats"])).toEqual([{ node: "stats", effects: ["runs text-stats.ts:textStats"] }]);
    expect(rerunPlan(example, [])).toEqual([]);
    const readOnly = { ...coderReview.nodes.coder!, tools: ["read_file", "grep"] } as typeof coderReview.nodes.coder;
    expect(sideEffects(readOnly!)).toEqual([]);
  });
});
