import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { describeCondition, drawMermaid, escapeLabel } from "../src/graph/mermaid.js";
import { loadGraph } from "../src/graph/index.js";
import type { GraphDefinition } from "../src/format/types.js";
import type { BuiltinNodeDefinition } from "../src/nodes/registry.js";

const base = { version: 1 as const, file: "/g.yaml", state: {}, limits: { maxSteps: 100 }, policy: [] };

const review: GraphDefinition<BuiltinNodeDefinition> = {
  ...base,
  name: "review",
  nodes: {
    draft: { id: "draft", kind: "agent", promptFile: "/d.md", history: true },
    critique: { id: "critique", kind: "agent", promptFile: "/c.md", history: true },
    revise: { id: "revise", kind: "agent", promptFile: "/r.md", history: true, maxVisits: 3, onLimit: "END" },
    "word-count": { id: "word-count", kind: "function", module: "/f.ts", exportName: "default" },
  },
  edges: [
    { kind: "static", from: "START", to: ["draft"] },
    { kind: "static", from: "draft", to: ["critique"] },
    {
      kind: "conditional",
      from: "critique",
      branches: [{ when: { path: "outputs.critique.verdict", op: "eq", value: "approve" }, to: ["word-count"] }, { to: ["revise"] }],
    },
    { kind: "static", from: "revise", to: ["critique"] },
  ],
  breakpoints: { before: ["revise"], after: [] },
};

describe("drawMermaid", () => {
  it("draws nodes, static and conditional edges, loop limits, breakpoints and implicit ends", () => {
    expect(drawMermaid(review)).toBe(
      [
        "flowchart TD",
        "  __start__([START])",
        '  draft["draft"]',
        '  critique["critique"]',
        '  revise["revise<br/>max_visits: 3<br/>breakpoint: before"]',
        '  word_count[["word-count"]]',
        "  __end__([END])",
        "  __start__ --> draft",
        "  draft --> critique",
        '  critique -->|"verdict == approve"| word_count',
        '  critique -->|"else"| revise',
        "  revise --> critique",
        '  revise -.->|"after 3 visits"| __end__',
        "  word_count -.-> __end__",
        "  classDef breakpoint stroke-dasharray: 5 5",
        "  class revise breakpoint",
      ].join("\n"),
    );
  });

  it("draws a subgraph as a nested block with its own START and END", async () => {
    const graph = await loadGraph(fileURLToPath(new URL("./fixtures/good-graphs/example-review.yaml", import.meta.url)));
    const lines = drawMermaid(graph).split("\n");
    const start = lines.indexOf('  subgraph summary["summary<br/>graph: summary"]');
    expect(start).toBeGreaterThan(0);
    expect(lines.slice(start + 1, start + 8)).toEqual([
      "    direction TB",
      "    summary___start__([START])",
      '    summary_summarise["summarise"]',
      "    summary___end__([END])",
      "    summary___start__ --> summary_summarise",
      "    summary_summarise -.-> summary___end__",
      "  end",
    ]);
    expect(lines).toContain("  count --> summary");
  });

  it("draws a run on the graph: how often each node ran, the node it waits at, the node that failed", () => {
    const drawn = drawMermaid(review, { visits: { draft: 1, critique: 2, "word-count": 0 }, current: "revise", failed: ["word-count"] });
    expect(drawn).toContain('  critique["critique<br/>ran 2×"]');
    expect(drawn).toContain('  draft["draft<br/>ran 1×"]');
    expect(drawn).toContain("  class draft,critique visited");
    expect(drawn).toContain("  class revise current");
    expect(drawn).toContain("  class word_count failed");
    expect(drawMermaid(review)).not.toMatch(/visited|ran \d/);
  });

  it("gives nodes named like Mermaid keywords a safe id", () => {
    const graph: GraphDefinition<BuiltinNodeDefinition> = {
      ...base,
      name: "keywords",
      nodes: { end: { id: "end", kind: "agent", promptFile: "/e.md", history: true } },
      edges: [{ kind: "static", from: "START", to: ["end"] }],
      breakpoints: { before: [], after: [] },
    };
    expect(drawMermaid(graph)).toContain('  end_["end"]');
    expect(drawMermaid(graph)).toContain("  __start__ --> end_");
  });

  it("escapes label text that would break the chart", () => {
    expect(escapeLabel('say "hi" <b>#1</b> `x`')).toBe("say #quot;hi#quot; #lt;b#gt;#35;1#lt;/b#gt; #96;x#96;");
    const graph: GraphDefinition<BuiltinNodeDefinition> = {
      ...review,
      edges: [
        { kind: "static", from: "START", to: ["draft"] },
        {
          kind: "conditional",
          from: "draft",
          branches: [{ when: { path: "outputs.draft.title", op: "eq", value: 'a "b"' }, to: ["END"] }, { to: ["critique"] }],
        },
      ],
    };
    expect(drawMermaid(graph)).toContain('  draft -->|"title == a #quot;b#quot;"| __end__');
  });
});

describe("describeCondition", () => {
  it("renders comparisons and combinators briefly", () => {
    expect(describeCondition({ path: "outputs.critique.verdict", op: "eq", value: "approve" })).toBe("verdict == approve");
    expect(describeCondition({ path: "visits.revise", op: "gte", value: 3 })).toBe("visits.revise >= 3");
    expect(describeCondition({ path: "vars.mode", op: "not_in", value: ["a", "b"] })).toBe("vars.mode not in [a, b]");
    expect(describeCondition({ path: "outputs.x.done", op: "exists", value: false })).toBe("done is missing");
    expect(describeCondition({ path: "task", op: "matches", value: "^fix" })).toBe("task matches /^fix/");
    expect(
      describeCondition({
        all: [
          { path: "outputs.judge.score", op: "gt", value: 7 },
          { any: [{ path: "task", op: "contains", value: "bug" }, { not: { path: "vars.flag", op: "eq", value: true } }] },
        ],
      }),
    ).toBe("score > 7 and (task contains bug or not (vars.flag == true))");
  });
});
