import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { tempDir } from "./helpers/workspace.js";

/** Node's function that makes a temporary folder, spelled so that this file's source never calls it. */
const MKDTEMP = ["mkd", "temp"].join("");

/** A call that makes a temporary folder: Node's mkdtemp or mkdtempSync, of node:fs or node:fs/promises. */
const MAKES_TEMPORARY_FOLDER = new RegExp(`\\b${MKDTEMP}(?:Sync)?\\s*\\(`, "g");

/** The one place allowed to make a temporary folder, and how many calls it has. */
const ALLOWED = { "tests/helpers/workspace.ts": 1 };

/** Each script under `root`'s tests/ that makes a temporary folder itself, with its number of calls. */
function temporaryFolderMakers(root: string): Record<string, number> {
  const found: Record<string, number> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.[cm]?[jt]s$/.test(entry.name)) {
        const calls = readFileSync(path, "utf8").match(MAKES_TEMPORARY_FOLDER)?.length ?? 0;
        if (calls > 0) found[relative(root, path)] = calls;
      }
    }
  };
  walk(join(root, "tests"));
  return found;
}

describe("the tests' temporary folders", () => {
  it("are made by tests/helpers/workspace.ts alone (tempDir, tempWorkspace, their shared and create variants)", () => {
    expect(temporaryFolderMakers(ROOT)).toEqual(ALLOWED);
  });

  it("a test file that makes its own is reported, a mention that calls nothing is not", () => {
    const root = tempDir("loopgraph-hygiene-");
    const write = (file: string, text: string) => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    };
    write("tests/helpers/workspace.ts", `const root = ${MKDTEMP}Sync(join(tmpdir(), "x-"));\n`);
    write("tests/own.test.ts", `const dir = ${MKDTEMP}Sync(join(tmpdir(), "own-"));\n`);
    write("tests/chaos/runner.ts", `const dir = await ${MKDTEMP}("/var/tmp/x-");\n`);
    write("tests/mention.test.ts", `import { ${MKDTEMP}Sync } from "node:fs"; // unused\n`);
    expect(temporaryFolderMakers(root)).toEqual({
      "tests/helpers/workspace.ts": 1,
      "tests/own.test.ts": 1,
      "tests/chaos/runner.ts": 1,
    });
  });
});
