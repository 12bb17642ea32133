/**
 * Where loopgraph reads its environment: settings are resolved once at the CLI's edge (src/cli,
 * src/config) and handed down; the agent's own environment is built by its policy
 * (src/tools/environment.ts). The files below that still read `process.env` themselves wait for
 * the Settings object: each one that stops must leave the list, and no other file may start.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { sourceFiles } from "./helpers/layers.js";

const SRC = join(ROOT, "src");

/** Where reading the environment belongs. */
const ALLOWED = [/^src\/cli\//, /^src\/config\//, /^src\/tools\/environment\.ts$/];

/** Still reading it on their own (mostly an `env = process.env` default), to be handed the settings instead. */
const NOT_YET_MOVED = [
  "src/engine/chat.ts",
  "src/engine/loop-supervisor.ts",
  "src/engine/runner.ts",
  "src/engine/thread.ts",
  "src/engine/worker.ts",
  "src/git/remote.ts",
  "src/git/run.ts",
  "src/models/index.ts",
  "src/models/spec.ts",
  "src/nodes/coder/system-prompt.ts",
  "src/nodes/function/node.ts",
  "src/store/postgres/connection.ts",
  "src/store/sqlite/checkpoint-schema.ts",
  "src/store/sqlite/errors.ts",
  "src/store/tables.ts",
  "src/tools/grep.ts",
  "src/tools/hooks.ts",
  "src/tools/mcp.ts",
  "src/tools/sandbox.ts",
  "src/tools/shell.ts",
];

/** Whether the code of `text` (comments left out) reads `process.env`. */
function readsEnvironment(text: string): boolean {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  return /\bprocess\.env\b/.test(code);
}

const readers = sourceFiles(SRC)
  .filter((file) => readsEnvironment(readFileSync(file, "utf8")))
  .map((file) => relative(ROOT, file).split("\\").join("/"));

describe("reading the environment", () => {
  it("happens only at the CLI's edge and in the agent's environment policy, or in a file still listed as not yet moved", () => {
    const elsewhere = readers.filter((file) => !ALLOWED.some((place) => place.test(file)) && !NOT_YET_MOVED.includes(file));
    expect(elsewhere).toEqual([]);
  });

  it("lists as not yet moved only files that still read it (a file that stopped leaves the list)", () => {
    expect(NOT_YET_MOVED.filter((file) => !readers.includes(file))).toEqual([]);
  });

  it("tells a read from a mention in a comment", () => {
    expect(readsEnvironment("// defaults to process.env\nconst a = 1;")).toBe(false);
    expect(readsEnvironment("/** process.env */ const a = 1;")).toBe(false);
    expect(readsEnvironment("const url = 'http://x'; const env = process.env;")).toBe(true);
  });
});
