/** The documentation's examples, run as written: the live-fork examples of docs/replay.md ("Forks and verification"). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli } from "./helpers/cli.js";
import { tempWorkspace } from "./helpers/workspace.js";

/** The checkpoint the fork examples name (an id, and a prefix of it). */
const EXAMPLE_CHECKPOINT = "1f1e6116-31ea";

/** The `npx loopgraph …` lines of the first sh block after `heading` in the page `page` (a path from the repository's root). */
function pageCommands(page: string, heading: string): string[] {
  const text = readFileSync(join(ROOT, page), "utf8");
  const at = text.indexOf(heading);
  expect(at, `${page} has no "${heading}"`).toBeGreaterThanOrEqual(0);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(at))![1]!;
  return block.split("\n").filter((line) => line.startsWith("npx loopgraph "));
}

/** A command line's arguments after `npx loopgraph`, unquoted as a POSIX shell does (quotes, no escapes or expansions). */
function shellWords(line: string): string[] {
  const words = line.match(/(?:[^\s'"]+|'[^']*'|"[^"]*")+/g) ?? [];
  return words
    .map((word) => word.replace(/'([^']*)'|"([^"]*)"/g, (_, single?: string, double?: string) => single ?? double ?? ""))
    .slice(2);
}

describe("the documentation's examples", () => {
  it("runs its live-fork examples: the run, then each replay from the checkpoint after the first critique", async () => {
    const ws = tempWorkspace();
    const db = ["--db", ws.db];
    const [run, ...forks] = pageCommands("docs/replay.md", "**Live fork.**");
    expect(forks.length).toBeGreaterThanOrEqual(3);
    const ran = await runCli([...shellWords(run!), ...db]);
    expect(ran.code, ran.stderr).toBe(0);
    const history = JSON.parse((await runCli(["inspect", "t1", "--json", ...db])).stdout) as {
      checkpoints: Array<{ checkpointId: string; nodes: string[] }>;
    };
    const critique = history.checkpoints.find((checkpoint) => checkpoint.nodes.includes("critique"))!.checkpointId;
    for (const fork of forks) {
      const args = shellWords(fork).map((word) => (EXAMPLE_CHECKPOINT.startsWith(word) && word.length >= 8 ? critique : word));
      const forked = await runCli([...args, ...db]);
      expect(forked.code, `${fork}\n${forked.stderr}`).toBe(0);
    }
  }, 120_000);
});
