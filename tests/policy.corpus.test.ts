/**
 * The external corpus (tests/fixtures/shell-corpus.ts): the commands of Codex's and Gemini CLI's own
 * shell-safety tests, decided by loopgraph's policy in the setting each was tested in. Loopgraph
 * must never be weaker than the anchor (let through what it stops), and docs/policy.md's "External
 * corpus" table must be the one the data gives (`npm run corpus-table` rewrites it).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CORPUS_SOURCES, SHELL_CORPUS, type CorpusSource } from "./fixtures/shell-corpus.js";
import { ROOT } from "./helpers/cli.js";
import { compare, corpusSection, corpusTable, runCorpus, withCorpusTable } from "./helpers/shell-corpus.js";
import { sharedWorkspace } from "./helpers/workspace.js";

const ws = sharedWorkspace();
const describeEntry = ({ entry, loopgraph }: ReturnType<typeof runCorpus>[number]) =>
  `${entry.source.anchor} ${entry.source.path}: \`${entry.command}\` in ${JSON.stringify(entry.setting)}: anchor ${entry.anchor}, loopgraph ${loopgraph}`;

describe("the external shell corpus", () => {
  it("holds at least 72 commands of both anchors, each from a listed source, no two alike", () => {
    expect(SHELL_CORPUS.length).toBeGreaterThanOrEqual(72);
    const sources: readonly CorpusSource[] = Object.values(CORPUS_SOURCES);
    expect(SHELL_CORPUS.every((entry) => sources.includes(entry.source))).toBe(true);
    expect(new Set(SHELL_CORPUS.map((entry) => entry.source.anchor))).toEqual(new Set(["Codex", "Gemini CLI"]));
    const keys = SHELL_CORPUS.map((entry) => JSON.stringify([entry.command, entry.setting]));
    expect(keys.filter((key, index) => keys.indexOf(key) !== index)).toEqual([]);
  });

  it("loopgraph is nowhere weaker than the anchor", () => {
    const weaker = runCorpus(SHELL_CORPUS, ws.dir).filter((result) => result.comparison === "weaker");
    expect(weaker.map(describeEntry)).toEqual([]);
  });

  it("docs/policy.md shows the table the data gives (npm run corpus-table)", () => {
    const doc = readFileSync(join(ROOT, "docs", "policy.md"), "utf8");
    expect(corpusSection(doc)).toBe(corpusTable(runCorpus(SHELL_CORPUS, ws.dir)));
  });

  it("can fail: an anchor that stops what loopgraph lets through is weaker, and a changed row changes the table", () => {
    expect([compare("deny", "ask"), compare("ask", "allow"), compare("allow", "ask"), compare("ask", "ask")]).toEqual([
      "weaker",
      "weaker",
      "stricter",
      "agree",
    ]);
    const [first, ...rest] = SHELL_CORPUS;
    const flipped = { ...first!, anchor: "deny" as const };
    const [result] = runCorpus([flipped], ws.dir);
    expect(result!.comparison).toBe("weaker");
    const table = corpusTable(runCorpus(SHELL_CORPUS, ws.dir));
    const doc = withCorpusTable(readFileSync(join(ROOT, "docs", "policy.md"), "utf8"), table);
    expect(corpusSection(doc)).toBe(table);
    expect(corpusTable(runCorpus([flipped, ...rest], ws.dir))).not.toBe(table);
  });
});
