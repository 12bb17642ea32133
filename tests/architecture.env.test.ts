/**
 * Where loopgraph reads its environment: settings are resolved once at the CLI's edge (src/cli,
 * src/config) into one Settings object and handed down; the environment of the programs
 * loopgraph starts is built by their policies: the agent's (src/tools/environment.ts, from the
 * run's settings) and git's (src/git/run.ts: PATH, HOME and the locale of loopgraph's own, for
 * loopgraph's own git calls, which every layer makes). No other file may read `process.env`.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { sourceFiles } from "./helpers/layers.js";

const SRC = join(ROOT, "src");

/** Where reading the environment belongs. */
const ALLOWED = [/^src\/cli\//, /^src\/config\//, /^src\/tools\/environment\.ts$/, /^src\/git\/run\.ts$/];

/** Whether the code of `text` (comments left out) reads `process.env`. */
function readsEnvironment(text: string): boolean {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  return /\bprocess\.env\b/.test(code);
}

const readers = sourceFiles(SRC)
  .filter((file) => readsEnvironment(readFileSync(file, "utf8")))
  .map((file) => relative(ROOT, file).split("\\").join("/"));

describe("reading the environment", () => {
  it("happens only at the CLI's edge and in the environment policies of the programs loopgraph starts", () => {
    expect(readers.filter((file) => !ALLOWED.some((place) => place.test(file)))).toEqual([]);
    // The check sees the reads it is about: the CLI's own are among them.
    expect(readers).toContain("src/cli/main.ts");
  });

  it("tells a read from a mention in a comment", () => {
    expect(readsEnvironment("// defaults to process.env\nconst a = 1;")).toBe(false);
    expect(readsEnvironment("/** process.env */ const a = 1;")).toBe(false);
    expect(readsEnvironment("const url = 'http://x'; const env = process.env;")).toBe(true);
  });
});
