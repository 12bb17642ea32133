/**
 * The run's live output for a person, through the CLI (piped, so no spinner): a shell command's
 * output as its last lines, a call the policy blocked named with its tool, a compression on its
 * own line, an approval wait in words. (Labelling of two threads' lines: tests/demo.e2e.test.ts.)
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { run } from "./helpers/e2e.js";
import { tempWorkspace } from "./helpers/workspace.js";

/** A script and a graph beside the workspace; the run's human output. */
function progressRun(
  name: string,
  script: string[],
  graph: string[],
  approval: "auto" | "ask" = "auto",
  files: Record<string, string> = {},
) {
  const ws = tempWorkspace({ git: true, files: { "notes.txt": "keep me\n", ...files } });
  const scriptFile = join(ws.root, `${name}.script.yaml`);
  const graphFile = join(ws.root, `${name}.yaml`);
  writeFileSync(scriptFile, ["responses:", ...script, ""].join("\n"));
  writeFileSync(graphFile, [`version: 1`, `name: ${name}`, ...graph, ""].join("\n"));
  return run(ws, { graph: graphFile, task: "do the task", thread: name, script: scriptFile, approval, json: false });
}

const CODER_ONLY = ["nodes:", "  coder: { kind: coder }", "edges:", "  - { from: START, to: coder }"];

describe("run progress, end to end (piped output)", () => {
  it("shows a shell command's output as its last five lines under a count of the earlier ones, and names a call the policy blocked", async () => {
    const result = await progressRun(
      "shell",
      [
        "  - node: coder",
        "    tool_calls:",
        '      - { name: shell, args: { command: "seq 1 12" } }',
        "  - node: coder",
        "    tool_calls:",
        '      - { name: shell, args: { command: "rm notes.txt" } }',
        '  - { node: coder, content: "Left notes.txt alone." }',
      ],
      ["policy:", "  rules:", "    - { tool: shell, pattern: '^rm ', decision: deny, reason: nothing is deleted here }", ...CODER_ONLY],
    );
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const lines = result.stdout.split("\n");
    const call = lines.findIndex((line) => line.includes('⚙ shell {"command":"seq 1 12"}'));
    expect(call).toBeGreaterThanOrEqual(0);
    // The result: the count of the lines left out after the arrow, then the last five, each on its own line.
    const shown = lines.slice(call + 1, call + 7).map((line) => line.trim());
    expect(shown).toEqual([expect.stringMatching(/^↳ … \d+ earlier lines$/), "8", "9", "10", "11", "12"]);
    expect(result.stdout).toContain("↳ ✗ shell not run (blocked): Blocked by policy: `rm notes.txt`: nothing is deleted here");
    expect(result.stdout).toContain("✔ finished");
  });

  it("prints a history compression as its own line, with the messages it replaced and the token counts", async () => {
    const result = await progressRun(
      "compress",
      [
        "  - node: coder",
        "    tool_calls:",
        "      - { name: read_file, args: { path: a.txt } }",
        "  - node: coder",
        "    tool_calls:",
        "      - { name: read_file, args: { path: b.txt } }",
        '  - { node: coder, content: "SUMMARY-TEXT: read a.txt and b.txt." }',
        '  - { node: coder, content: "All read." }',
      ],
      [
        "nodes:",
        "  coder:",
        "    kind: coder",
        "    compression: { budget_tokens: 200, keep_recent_turns: 1 }",
        "edges:",
        "  - { from: START, to: coder }",
      ],
      "auto",
      { "a.txt": `${"alpha-content ".repeat(150)}\n`, "b.txt": "bravo-content\n" },
    );
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toMatch(/^ {2}⇣ history compressed: \d+ earlier messages? replaced by a summary \(\S+ → \S+ tokens\)$/m);
    // The summary is for the model: it is not printed.
    expect(result.stdout).not.toContain("SUMMARY-TEXT");
    expect(result.stdout).toContain("All read.");
  });

  it("describes an approval wait in words (who wants to run what), not as raw JSON, and exits 3", async () => {
    const result = await progressRun(
      "approve",
      ["  - node: coder", "    tool_calls:", '      - { name: write_file, args: { path: out.txt, contents: "hello\\n" } }'],
      CODER_ONLY,
      "ask",
    );
    expect(result.code, result.stderr + result.stdout).toBe(3);
    expect(result.stdout).toMatch(/⏸ waiting for approval: coder wants to run write_file: .*out\.txt/);
    expect(result.stdout).not.toMatch(/"kind":"approval"/);
    expect(result.stdout).toContain("Approve with: loopgraph resume approve");
  });
});
