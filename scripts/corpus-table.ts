// Rewrites the "External corpus" table of docs/policy.md from tests/fixtures/shell-corpus.ts, each
// command decided by loopgraph's policy (`npm run corpus-table`). tests/policy.corpus.test.ts
// checks that the table is current.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SHELL_CORPUS } from "../tests/fixtures/shell-corpus.js";
import { corpusTable, runCorpus, totalsLine, withCorpusTable } from "../tests/helpers/shell-corpus.js";

const target = new URL("../docs/policy.md", import.meta.url);
const workspace = mkdtempSync(join(tmpdir(), "loopgraph-corpus-"));
try {
  const results = runCorpus(SHELL_CORPUS, workspace);
  writeFileSync(target, withCorpusTable(readFileSync(target, "utf8"), corpusTable(results)));
  console.log(`wrote ${target.pathname}: ${totalsLine(results)}`);
} finally {
  rmSync(workspace, { recursive: true, force: true });
}
