import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigError, GraphValidationError } from "../src/errors.js";
import { loadGraph } from "../src/graph/index.js";
import type { GraphDefinition } from "../src/format/types.js";
import type { BuiltinNodeDefinition } from "../src/nodes/registry.js";
import { tempDir, tempWorkspace } from "./helpers/workspace.js";

const goodDir = fileURLToPath(new URL("./fixtures/good-graphs/", import.meta.url));
const supportDir = fileURLToPath(new URL("./fixtures/bad-graphs/support/", import.meta.url));
const good = (...parts: string[]) => path.join(goodDir, ...parts);

async function loadError(file: string): Promise<unknown> {
  return loadGraph(file).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("loadGraph on good graphs", () => {
  it("resolves the example graph: camelCase keys, absolute paths, defaults, conditions, subgraphs", async () => {
    const summary: GraphDefinition<BuiltinNodeDefinition> = {
      version: 1,
      name: "summary",
      file: good("summary.yaml"),
      state: {},
      nodes: {
        summarise: { id: "summarise", kind: "agent", promptFile: good("prompts/summarise.md"), history: true },
      },
      edges: [{ kind: "static", from: "START", to: ["summarise"] }],
      breakpoints: { before: [], after: [] },
      limits: { maxSteps: 100 },
      policy: [],
    };
    const expected: GraphDefinition<BuiltinNodeDefinition> = {
      version: 1,
      name: "example-review",
      description: "Draft, critique and revise until the critic approves.",
      file: good("example-review.yaml"),
      model: "scripted:examples/example-review.script.yaml",
      state: {
        audience: { type: "string", default: "developers" },
        rounds: { type: "number", default: 0 },
      },
      nodes: {
        draft: {
          id: "draft",
          kind: "agent",
          promptFile: good("prompts/draft.md"),
          model: "openai:gpt-4o-mini",
          history: true,
        },
        critique: {
          id: "critique",
          kind: "agent",
          promptFile: good("prompts/critique.md"),
          history: false,
          schema: {
            type: "object",
            properties: { verdict: { type: "string", enum: ["approve", "revise"] }, notes: { type: "string" } },
            required: ["verdict"],
          },
        },
        revise: {
          id: "revise",
          kind: "agent",
          promptFile: good("prompts/revise.md"),
          history: true,
          maxVisits: 3,
          onLimit: "count",
        },
        count: { id: "count", kind: "function", module: good("functions/count.ts"), exportName: "countWords" },
        summary: { id: "summary", kind: "subgraph", graph: summary },
      },
      edges: [
        { kind: "static", from: "START", to: ["draft"] },
        { kind: "static", from: "draft", to: ["critique"] },
        {
          kind: "conditional",
          from: "critique",
          branches: [
            { when: { path: "outputs.critique.verdict", op: "eq", value: "approve" }, to: ["count"] },
            {
              when: {
                all: [{ path: "visits.critique", op: "gte", value: 2 }, { not: { path: "vars.audience", op: "in", value: ["experts"] } }],
              },
              to: ["count"],
            },
            { to: ["revise"] },
          ],
        },
        { kind: "static", from: "revise", to: ["critique"] },
        { kind: "static", from: "count", to: ["summary"] },
      ],
      breakpoints: { before: ["revise"], after: [] },
      limits: { maxSteps: 50 },
      policy: [],
    };
    expect(await loadGraph(good("example-review.yaml"))).toEqual(expected);
  });

  it("fills in defaults: history, export, on_limit, breakpoints, limits, state", async () => {
    const graph = await loadGraph(good("defaults.yaml"));
    expect(graph.nodes.ask).toEqual({
      id: "ask",
      kind: "agent",
      promptFile: good("prompts/ask.md"),
      history: true,
      maxVisits: 2,
      onLimit: "END",
    });
    expect(graph.nodes.tally).toEqual({
      id: "tally",
      kind: "function",
      module: good("functions/count.ts"),
      exportName: "default",
    });
    expect(graph.state).toEqual({
      text: { type: "string", default: "" },
      n: { type: "number", default: 0 },
      flag: { type: "boolean", default: false },
      bag: { type: "object", default: {} },
      list: { type: "array", default: [] },
    });
    expect(graph.breakpoints).toEqual({ before: [], after: [] });
    expect(graph.limits).toEqual({ maxSteps: 100 });
  });
});

describe("loadGraph errors", () => {
  it("reports problems inside a subgraph file at their place in that file, after the parent's own", async () => {
    const error = await loadError(path.join(supportDir, "includes-bad-child.yaml"));
    expect(error).toBeInstanceOf(GraphValidationError);
    const issues = (error as GraphValidationError).issues.map((i) => [path.basename(i.file), i.line, i.col, i.message]);
    expect(issues).toEqual([
      ["includes-bad-child.yaml", 7, 3, expect.stringContaining('node "orphan" is unreachable') as unknown],
      ["bad-child.yaml", 6, 24, 'unknown node "stpe": did you mean "step"?'],
    ]);
  });

  it("reports an include cycle across files in the file that closes it", async () => {
    const error = await loadError(path.join(supportDir, "cycle-a.yaml"));
    expect(error).toBeInstanceOf(GraphValidationError);
    const [issue, ...rest] = (error as GraphValidationError).issues;
    expect(rest).toEqual([]);
    expect(path.basename(issue?.file ?? "")).toBe("cycle-b.yaml");
    expect([issue?.line, issue?.col]).toEqual([6, 12]);
    expect(issue?.message).toBe("subgraph include cycle: cycle-a.yaml → cycle-b.yaml → cycle-a.yaml");
  });

  it("throws a one-line ConfigError for a file it cannot read", async () => {
    const missing = path.join(goodDir, "no-such-graph.yaml");
    const error = await loadError(missing);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).not.toBeInstanceOf(GraphValidationError);
    expect((error as ConfigError).message).toMatch(/^cannot read graph file .*no-such-graph\.yaml: no such file$/);
    expect((error as ConfigError).exitCode).toBe(2);

    const directory = await loadError(goodDir);
    expect((directory as ConfigError).message).toMatch(/it is a directory$/);
  });

  it("names files in messages the way the caller named them", async () => {
    const dir = tempDir("loopgraph-load-");
    const file = path.join(dir, "incomplete.yaml");
    writeFileSync(file, "version: 1\nname: incomplete\n");
    const absolute = (await loadError(file)) as GraphValidationError;
    expect(absolute.message).toBe(`${file}:1:1: missing required key "nodes"\n${file}:1:1: missing required key "edges"`);

    const relative = path.relative(process.cwd(), path.join(supportDir, "includes-bad-child.yaml"));
    const nested = (await loadError(relative)) as GraphValidationError;
    expect(nested.issues.map((issue) => issue.file)).toEqual([relative, path.join(path.dirname(relative), "bad-child.yaml")]);
  });

  it("checks every {{…}} placeholder of a prompt against the graph: file:line:col in the prompt, with did you mean", async () => {
    const ws = tempWorkspace({
      files: {
        "g.yaml": [
          "version: 1",
          "name: placeholders",
          "state: { audience: { type: string } }",
          "nodes:",
          "  checker: { kind: agent, prompt: p/check.md }",
          "  writer: { kind: agent, prompt: p/write.md }",
          "edges:",
          "  - { from: START, to: checker }",
          "  - { from: checker, to: writer }",
        ].join("\n"),
        "p/check.md": "Check {{ task }} for {{vars.audience}}; {{visits.writer}} {{messages.0.content}} {{outputs}}\n",
        "p/write.md": "Write it.\nTask: {{taks}}\nNotes: {{outputs.chekcer.notes}} and {{ vars.audiense }}, {{outputs.nobody}}\n",
      },
    });
    const error = (await loadError(path.join(ws.dir, "g.yaml"))) as GraphValidationError;
    expect(error).toBeInstanceOf(GraphValidationError);
    const prompt = path.join(ws.dir, "p/write.md");
    expect(error.message.split("\n")).toEqual([
      `${prompt}:2:7: unknown placeholder {{taks}}: did you mean {{task}}?`,
      `${prompt}:3:8: unknown placeholder {{outputs.chekcer.notes}}: did you mean {{outputs.checker.notes}}?`,
      `${prompt}:3:38: unknown placeholder {{vars.audiense}}: did you mean {{vars.audience}}?`,
      `${prompt}:3:59: unknown placeholder {{outputs.nobody}}: use {{task}}, {{outputs.<node>}} (nodes: checker, writer), {{vars.<field>}} (fields: audience), {{visits.<node>}} or {{messages}}`,
    ]);
  });

  it("a file that is not a graph prints at most 5 lines: the first problems, then how many more", async () => {
    // A Markdown file's text, which YAML reads as one long string: every required key is missing, and more.
    const ws = tempWorkspace();
    const notes = path.join(ws.dir, "notes.yaml");
    writeFileSync(
      notes,
      ["name: notes", "entry: 3", "nodes: [1, 2, 3]", "edges: {}", "colour: blue", "size: 9", "shape: round", ""].join("\n"),
    );
    const error = (await loadError(notes)) as GraphValidationError;
    expect(error).toBeInstanceOf(GraphValidationError);
    expect(error.issues.length).toBeGreaterThan(5);
    const lines = error.message.split("\n");
    expect(lines).toHaveLength(5);
    expect(lines.slice(0, 4)).toEqual(error.issues.slice(0, 4).map((i) => `${i.file}:${i.line}:${i.col}: ${i.message}`));
    expect(lines[4]).toBe(`… and ${error.issues.length - 4} more problems`);
  });
});
