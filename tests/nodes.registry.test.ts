import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GraphValidationError } from "../src/errors.js";
import { runGraph } from "../src/engine/runner.js";
import { graphFingerprint } from "../src/graph/fingerprint.js";
import { graphJsonSchema } from "../src/graph/json-schema.js";
import { loadGraph } from "../src/graph/load.js";
import { drawMermaid } from "../src/graph/mermaid.js";
import { nodeKinds } from "../src/nodes/registry.js";
import { sideEffects } from "../src/replay/rerun-plan.js";
import { ROOT, cleanEnv } from "./helpers/cli.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";
import { shoutKind } from "./fixtures/nodes/shout/kind.js";
import { settingsOf } from "../src/config/environment-settings.js";

const FIXTURES = join(ROOT, "tests/fixtures/nodes");

function registerShout(): void {
  nodeKinds.register(shoutKind);
  onCleanup(() => nodeKinds.unregister(shoutKind.kind));
}

describe("the node kind registry", () => {
  it("knows the built-in kinds, each from its own folder, and refuses a kind registered twice", () => {
    expect(nodeKinds.names()).toEqual(["agent", "function", "subgraph", "coder", "looper", "review", "judge", "mediator", "merge"]);
    expect(() => nodeKinds.register(nodeKinds.get("agent")!)).toThrow(/registered already/);
  });

  it("an extra kind registered with one line is loaded, validated, drawn, fingerprinted, described and run like a built-in one", async () => {
    registerShout();
    const graph = await loadGraph(join(FIXTURES, "shout.yaml"));
    expect(graph.nodes.loud).toEqual({ id: "loud", kind: "shout", textFile: join(FIXTURES, "shout/words.txt"), marks: 3 });

    // The JSON Schema for editors and the drawing follow the registry.
    expect(JSON.stringify(graphJsonSchema())).toContain('"shout"');
    expect(drawMermaid(graph)).toMatch(/loud\["loud"\]/);
    expect(sideEffects(graph.nodes.loud!)).toEqual(["shouts"]);

    const ws = tempWorkspace();
    const outcome = await runGraph({ graph, workspace: ws.dir, db: ws.db, cwd: ws.dir, settings: settingsOf(cleanEnv()) });
    expect(outcome.status).toBe("finished");
    expect(outcome.state.outputs.loud).toBe("HELLO THERE!!!");
    expect(outcome.state.visits.loud).toBe(1);
  });

  it("a file the kind reads is part of the graph's fingerprint", async () => {
    registerShout();
    const ws = tempWorkspace();
    const graphFile = join(ws.dir, "shout.yaml");
    writeFileSync(
      graphFile,
      "version: 1\nname: s\nnodes:\n  loud: { kind: shout, text_file: words.txt }\nedges:\n  - { from: START, to: loud }\n",
    );
    writeFileSync(join(ws.dir, "words.txt"), "one");
    const before = graphFingerprint(await loadGraph(graphFile));
    writeFileSync(join(ws.dir, "words.txt"), "two");
    expect(graphFingerprint(await loadGraph(graphFile))).not.toBe(before);
  });

  it("an extra kind's keys are checked by its schema, with positions; once unregistered, the kind is unknown", async () => {
    registerShout();
    const typo = await loadGraph(join(FIXTURES, "shout-typo.yaml")).catch((error: unknown) => error);
    expect(typo).toBeInstanceOf(GraphValidationError);
    expect((typo as GraphValidationError).issues.map((issue) => `${issue.line}:${issue.col}: ${issue.message}`)).toEqual([
      expect.stringMatching(/^6:5: unknown key "text_fil".*text_file/),
    ]);
    nodeKinds.unregister("shout");
    const unknown = await loadGraph(join(FIXTURES, "shout.yaml")).catch((error: unknown) => error);
    expect((unknown as GraphValidationError).issues[0]?.message).toMatch(
      /^unknown node kind "shout": use one of agent, function, subgraph, coder, looper, review, judge, mediator, merge$/,
    );
  });
});
