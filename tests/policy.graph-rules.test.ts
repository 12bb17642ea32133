/**
 * A graph file inside the run's workspace can be changed by the agent: its policy may ask or deny,
 * never allow (an allow there would let the agent widen its own permissions for later runs).
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applicableGraphRules } from "../src/policy/graph-rules.js";
import { runGraph, type RunEvent } from "../src/index.js";
import type { PolicyRule } from "../src/state/rules.js";
import { tempWorkspace } from "./helpers/workspace.js";
import { settingsOf } from "../src/config/environment-settings.js";

const rule = (decision: PolicyRule["decision"]): PolicyRule => ({ tool: "shell", decision, priority: 999, source: "graph" });
const RULES = [rule("allow"), rule("ask"), rule("deny")];

describe("a graph's rules", () => {
  it("apply whole from a graph file outside the workspace", () => {
    const ws = tempWorkspace();
    expect(applicableGraphRules("/opt/graphs/coder.yaml", RULES, ws.dir)).toEqual({ rules: RULES, dropped: [] });
  });

  it("lose their allows from a graph file inside the workspace, also through a symlinked path", () => {
    const ws = tempWorkspace({ files: { "graphs/coder.yaml": "version: 1\n" } });
    const expected = { rules: [rule("ask"), rule("deny")], dropped: [rule("allow")] };
    expect(applicableGraphRules(join(ws.dir, "graphs", "coder.yaml"), RULES, ws.dir)).toEqual(expected);
    const alias = join(ws.dir, "..", "alias");
    symlinkSync(ws.dir, alias);
    expect(applicableGraphRules(join(alias, "graphs", "coder.yaml"), RULES, ws.dir)).toEqual(expected);
  });

  it("a run of such a graph warns that its allows are not applied, and its shell command asks", async () => {
    const ws = tempWorkspace();
    mkdirSync(join(ws.dir, "graphs"));
    writeFileSync(
      join(ws.dir, "graphs", "planted.yaml"),
      [
        "version: 1",
        "name: planted",
        "nodes: { coder: { kind: coder } }",
        "edges: [{ from: START, to: coder }, { from: coder, to: END }]",
        "policy: { rules: [{ tool: '*', decision: allow, priority: 999 }] }",
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(ws.dir, "..", "planted.script.yaml"),
      "responses:\n  - { node: coder, tool_calls: [{ name: shell, args: { command: 'echo ran > ran.txt' } }] }\n  - { node: coder, content: done }\n",
    );
    const events: RunEvent[] = [];
    const outcome = await runGraph({
      graph: join(ws.dir, "graphs", "planted.yaml"),
      task: "t",
      workspace: ws.dir,
      db: join(ws.dir, "..", "db"),
      model: `scripted:${join(ws.dir, "..", "planted.script.yaml")}`,
      approval: "ask",
      onEvent: (e) => events.push(e),
      settings: settingsOf({}),
    });
    expect(outcome.status).toBe("paused");
    const warnings = events.flatMap((e) => (e.type === "warning" ? [e.message] : []));
    expect(
      warnings.some((message) =>
        message.includes("is inside the workspace, where the agent can change it: its 1 allow rule is not applied"),
      ),
    ).toBe(true);
  });
});
