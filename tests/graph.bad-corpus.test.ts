import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ExitCode, GraphValidationError } from "../src/errors.js";
import { loadGraph } from "../src/graph/index.js";
import { hasStackTrace } from "./helpers/cli.js";

const corpusDir = fileURLToPath(new URL("./fixtures/bad-graphs/", import.meta.url));
const cases = readdirSync(corpusDir)
  .filter((name) => name.endsWith(".yaml"))
  .sort();

/** The `# expect: <line>:<col> <message fragment>` lines a case starts with. */
function expectationsOf(file: string): { position: string; fragment: string }[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line) => /^# expect: (\d+:\d+) (.+)$/.exec(line))
    .filter((match) => match !== null)
    .map(([, position = "", fragment = ""]) => ({ position, fragment }));
}

async function loadError(file: string): Promise<unknown> {
  return loadGraph(file).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("bad graph corpus", () => {
  it("has at least 30 cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases)("%s", async (name) => {
    const file = path.join(corpusDir, name);
    const expected = expectationsOf(file);
    expect(expected.length, "the case must start with # expect: lines").toBeGreaterThan(0);

    const error = await loadError(file);
    expect(error).toBeInstanceOf(GraphValidationError);
    const { issues, exitCode, message } = error as GraphValidationError;
    expect(exitCode).toBe(ExitCode.BadInput);
    expect(issues.map((issue) => `${issue.line}:${issue.col}`)).toEqual(expected.map((e) => e.position));
    issues.forEach((issue, index) => {
      expect(path.resolve(issue.file)).toBe(file);
      expect(issue.message).toContain(expected[index]?.fragment);
    });
    expect(message.split("\n")).toEqual(issues.map((issue) => `${issue.file}:${issue.line}:${issue.col}: ${issue.message}`));
    // What `loopgraph graphs validate <file>` prints first (tests/cli.graphs.e2e.test.ts runs the CLI on the corpus).
    expect(message.split("\n")[0]).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:${expected[0]!.position}: \\S`));
    expect(hasStackTrace(message)).toBe(false);
  });
});
