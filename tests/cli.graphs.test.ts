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

describe("loopgraph graphs", () => {
  const files = corpusFiles(CORPUS);

  it("has a bad-graph corpus of at least 25 cases", () => {
    expect(files.length).toBeGreaterThanOrEqual(25);
  });

  it.each(files.map((file) => [file.slice(CORPUS.length + 1), file]))(
    "validate %s: file:line:col error, exit 2, no stack trace",
    async (_name, file) => {
      const [, position] = /^# expect: (\d+:\d+)/.exec(readFileSync(file, "utf8"))!;
      const result = await runCli(["graphs", "validate", file]);
      expect(result.code).toBe(2);
      expect(result.stderr.split("\n")[0]).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:${position}: \\S`));
      expect(hasStackTrace(result.stderr)).toBe(false);
    },
  );

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
