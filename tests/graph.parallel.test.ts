/**
 * Parallel graphs as loaded and drawn: fan-out targets and joins resolve to lists, nodes that run
 * one after the other may write the same field, and `graphs show` draws `a & b`. The refusals
 * (unreduced writes in parallel, joins that never run, …) are cases of tests/fixtures/bad-graphs.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadGraph } from "../src/graph/index.js";
import { drawMermaid } from "../src/graph/mermaid.js";
import { ROOT } from "./helpers/cli.js";

const fixture = (name: string) => join(ROOT, "tests/fixtures/parallel", name);

describe("parallel graphs load", () => {
  it("resolves a fan-out's targets and a join's sources as lists", async () => {
    const graph = await loadGraph(fixture("fan-out-join.yaml"));
    expect(graph.edges).toEqual([
      { kind: "static", from: "START", to: ["a", "b"] },
      { kind: "join", from: ["a", "b"], to: ["c"] },
      { kind: "static", from: "c", to: ["END"] },
    ]);
    expect(graph.state.log).toEqual({ type: "array", reducer: "append", default: [] });
    expect(graph.nodes.a).toMatchObject({ kind: "function", writes: ["log"] });
  });

  it("resolves a branch's list of targets, and several static edges of one node as edges of their own", async () => {
    const conditional = await loadGraph(fixture("conditional-fan-out.yaml"));
    expect(conditional.edges[1]).toMatchObject({ kind: "conditional", branches: [{ to: ["a", "b"] }, { to: ["solo"] }] });
    const uneven = await loadGraph(fixture("uneven-join.yaml"));
    expect(uneven.edges.slice(0, 2)).toEqual([
      { kind: "static", from: "START", to: ["a"] },
      { kind: "static", from: "START", to: ["b"] },
    ]);
  });

  it("lets nodes that run one after the other, or on one branch, write the same field without a reducer", async () => {
    // uneven-join's nodes declare no writes: (any field), and its only field has a reducer; the
    // sequential graphs of the corpus (example-review) keep loading too.
    await expect(loadGraph(fixture("uneven-join.yaml"))).resolves.toBeDefined();
    await expect(loadGraph(join(ROOT, "tests/fixtures/good-graphs/example-review.yaml"))).resolves.toBeDefined();
  });
});

describe("maps load", () => {
  it("resolves a map edge with its item name and bounds, and the graph's limit", async () => {
    const graph = await loadGraph(fixture("map-bounded.yaml"));
    expect(graph.edges[1]).toEqual({
      kind: "map",
      from: "plan",
      to: ["work"],
      over: "outputs.plan.subtasks",
      as: "subtask",
      maxConcurrency: 2,
    });
    expect(graph.limits).toEqual({ maxSteps: 100, maxConcurrency: 3 });
    const unbounded = await loadGraph(fixture("map-functions.yaml"));
    expect(unbounded.edges[1]).not.toHaveProperty("maxConcurrency");
    expect(unbounded.limits).toEqual({ maxSteps: 100 });
  });
});

describe("coders at work at the same time", () => {
  it("each get a worktree of their own, in a fan-out or a map, unless the graph says workspace: shared; a coder alone shares", async () => {
    const side = await loadGraph(fixture("coders-side-by-side.yaml"));
    expect(side.nodes.a).toMatchObject({ workspace: "worktree" });
    expect(side.nodes.b).not.toHaveProperty("workspace");
    expect(side.nodes.c).not.toHaveProperty("workspace");
    const mapped = await loadGraph(fixture("map-coders.yaml"));
    expect(mapped.nodes.fix).toMatchObject({ workspace: "worktree" });
  });
});

describe("drawMermaid of parallel graphs", () => {
  it("draws a map as a thick arrow that names the item and the list", async () => {
    const lines = drawMermaid(await loadGraph(fixture("map-functions.yaml"))).split("\n");
    expect(lines).toContain('  plan ==>|"each subtask of outputs.plan.subtasks"| work');
  });

  it("draws a fan-out's targets and a join's sources with &", async () => {
    const lines = drawMermaid(await loadGraph(fixture("fan-out-join.yaml"))).split("\n");
    expect(lines).toContain("  __start__ --> a & b");
    expect(lines).toContain("  a & b --> c");
    // A join's sources have an outgoing edge: no implicit end is drawn for them.
    expect(lines.filter((line) => line.includes("-.->"))).toEqual([]);
  });

  it("draws a branch's list of targets under its label", async () => {
    const lines = drawMermaid(await loadGraph(fixture("conditional-fan-out.yaml"))).split("\n");
    expect(lines).toContain('  pick -->|"mode == both"| a & b');
    expect(lines).toContain('  pick -->|"else"| solo');
  });
});
