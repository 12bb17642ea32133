import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadGraph, resolveGraphPath, runGraph } from "../src/index.js";
import { stepLimit } from "../src/engine/outcome.js";
import { ConfigError } from "../src/errors.js";
import { ROOT } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { settingsOf } from "../src/config/environment-settings.js";

const SCRIPT = join(ROOT, "tests/fixtures/looper/always-continue.script.yaml");

describe("the step limit follows the round limit", () => {
  it("--max-rounds raises limits.max_steps when the rounds need more steps: 6 per round plus one per node", async () => {
    const graph = await loadGraph(resolveGraphPath("coder-review", ROOT));
    expect(stepLimit(graph)).toBe(graph.limits.maxSteps);
    expect(stepLimit(graph, 200)).toBe(200 * 6 + Object.keys(graph.nodes).length);
    expect(stepLimit(graph, 2)).toBe(graph.limits.maxSteps);
  });

  it("a loop of 2 rounds (13 steps) runs to its round limit under limits.max_steps 10, and the run ends by that limit (exit 4)", async () => {
    const ws = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const graph = await loadGraph(resolveGraphPath("coder-review", ROOT));
    const outcome = await runGraph({
      graph: { ...graph, limits: { maxSteps: 10 } },
      task: "write notes",
      workspace: ws.dir,
      db: ws.db,
      model: `scripted:${SCRIPT}`,
      approval: "auto",
      maxRounds: 2,
      settings: settingsOf({}),
    });
    expect(outcome.status, outcome.error).toBe("limited");
    expect(outcome.exitCode).toBe(4);
    expect(outcome.error).toBe("the loop reached its round limit (2 of 2 rounds) before the Judge judged the work done");
    expect(outcome.state.outputs.looper).toMatchObject({ endReason: "round limit", round: 2 });
  });
});

describe("a graph that works on a task needs one", () => {
  it("coder-review without a task stops before the run (exit 2) with one line saying to pass --task", async () => {
    const ws = tempWorkspace({ git: true });
    const error = await runGraph({
      graph: "coder-review",
      workspace: ws.dir,
      db: ws.db,
      model: `scripted:${SCRIPT}`,
      settings: settingsOf({}),
    }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).message).toBe('graph "coder-review" works on a task and none was given: pass --task "<what to do>"');
  });
});
