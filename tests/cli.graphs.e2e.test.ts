import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hasStackTrace, ROOT, runCli } from "./helpers/cli.js";

const CORPUS = join(ROOT, "tests/fixtures/bad-graphs");

function corpusFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".yaml"))
    .map((entry) => join(dir, entry.name))
    .filter((file) => /^# expect: \d+:\d+/.test(readFileSync(file, "utf8")));
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The CLI side of graph validation. Every case of the bad-graph corpus is checked in-process by
 * tests/graph.bad-corpus.test.ts (exit code, positions, messages, the printed lines); here the
 * process itself: exit codes, what reaches stderr, no stack traces.
 */
describe("loopgraph graphs", () => {
  const files = corpusFiles(CORPUS);

  it("has a bad-graph corpus of at least 25 cases", () => {
    expect(files.length).toBeGreaterThanOrEqual(25);
  });

  it.each(["edge-unknown-to.yaml", "yaml-syntax.yaml", "missing-prompt-file.yaml"])(
    "validate %s: one line, file:line:col error, exit 2, no stack trace",
    async (name) => {
      const file = join(CORPUS, name);
      const [, position] = /^# expect: (\d+:\d+)/.exec(readFileSync(file, "utf8"))!;
      const result = await runCli(["graphs", "validate", file]);
      expect(result.code).toBe(2);
      expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(new RegExp(`^${escape(file)}:${position}: \\S`));
      expect(hasStackTrace(result.stderr)).toBe(false);
    },
  );

  it("validate of the whole corpus at once: exit 2, each file's errors as file:line:col lines in order, no stack trace", async () => {
    const result = await runCli(["graphs", "validate", ...files]);
    expect(result.code).toBe(2);
    expect(hasStackTrace(result.stderr)).toBe(false);
    const lines = result.stderr.trimEnd().split("\n");
    const expected = files.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/^# expect: (\d+:\d+) /gm)].map(([, position]) => ({ file, position: position! })),
    );
    expect(lines).toHaveLength(expected.length);
    lines.forEach((line, index) => {
      const { file, position } = expected[index]!;
      expect(line).toMatch(new RegExp(`^${escape(file)}:${position}: \\S`));
    });
  });

  it("validates the shipped graphs", async () => {
    const shipped = readdirSync(join(ROOT, "graphs")).map((name) => join(ROOT, "graphs", name));
    const result = await runCli(["graphs", "validate", ...shipped]);
    expect(result.code, result.stderr).toBe(0);
  });

  it("run with a bad graph exits 2 with the same error and no stack trace", async () => {
    const [file] = files;
    const result = await runCli(["run", file!, "--model", "scripted:x.yaml"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/:\d+:\d+: /);
    expect(hasStackTrace(result.stderr)).toBe(false);
  });

  it("draws a graph as Mermaid and lists the shipped graphs", async () => {
    const draw = await runCli(["graphs", "draw", "example-review"]);
    expect(draw.code, draw.stderr).toBe(0);
    expect(draw.stdout).toMatch(/^flowchart TD/);
    expect(draw.stdout).toContain("critique");
    const list = await runCli(["graphs", "list", "--json"]);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as Array<{ name: string }>).map((g) => g.name)).toContain("example-review");
  });

  it("an unknown command or option exits 2", async () => {
    expect((await runCli(["frobnicate"])).code).toBe(2);
    expect((await runCli(["run", "example-review", "--no-such-flag"])).code).toBe(2);
  });
});
