/**
 * An eval made in-process (src/eval/run.ts) on a real SQLite store, real git and the shipped
 * coder-review graph with a tiny scripted model: one round in which the Coder writes answer.txt
 * holding its variant's answer (42 by default), the Review passes it and the Judge ends the loop.
 * Each task is checked against that answer in a fresh copy of one task folder.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { settingsOf } from "../../src/config/environment-settings.js";
import type { EvalRunOptions } from "../../src/eval/run.js";
import type { EvalRecord, EvalSuite, EvalTask, EvalVariant } from "../../src/eval/types.js";
import { withTables, type StoreOptions } from "../../src/store/tables.js";
import { packageGraphsDir } from "../../src/package.js";
import { ROOT } from "./cli.js";
import { tempWorkspace } from "./workspace.js";

/** One round: the Coder writes `answer` to answer.txt, the Review passes it, the Judge ends the loop (a file per answer). */
const scriptOf = (answer: string) => join(ROOT, `tests/fixtures/eval/answer-${answer}.script.yaml`);

/** A task of the fixture's folder: `check` run on the trial's finished workspace. */
export function evalTask(id: string, folder: string, check: EvalTask["check"], requires: string[] = []): EvalTask {
  return { id, repo: { kind: "folder", path: folder }, task: `Write the answer (${id}).`, check, timeoutMs: 60_000, tags: [], requires };
}

export interface EvalFixture {
  root: string;
  db: string;
  suite: EvalSuite;
  variants: EvalVariant[];
  options: (signal?: AbortSignal, onTrial?: EvalRunOptions["onTrial"]) => EvalRunOptions;
}

/** What a hostile check prints when it fails: a page must show it as text. */
export const HOSTILE_OUTPUT = '<img src=x onerror="document.title=1"><b>bold</b>';

/** Two tasks: writes-42 passes; wants-43's check fails, printing HOSTILE_OUTPUT. */
export const passingAndHostile = (folder: string): EvalTask[] => [
  evalTask("writes-42", folder, { command: 'test "$(cat answer.txt)" = 42' }),
  evalTask("wants-43", folder, { command: `echo '${HOSTILE_OUTPUT}'; exit 1` }),
];

/**
 * A suite named "answers" of the tasks `tasksOf(folder)` gives, a variant per answer (A, B, …: the
 * coder-review graph with the scripted model of tests/fixtures/eval/answer-<answer>.script.yaml; default one, 42), a temporary
 * workspace's store and the options an eval runs with there.
 */
export function evalFixture(tasksOf: (folder: string) => EvalTask[], answers: readonly string[] = ["42"]): EvalFixture {
  const { root, db } = tempWorkspace({ prefix: "loopgraph-eval-" });
  const folder = join(root, "task-folder");
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "README.md"), "Write 42 to answer.txt.\n");
  const suite: EvalSuite = { file: join(root, "suite.yaml"), name: "answers", hash: "suite-hash", tasks: tasksOf(folder) };
  const variants: EvalVariant[] = answers.map((answer, index) => ({
    label: String.fromCharCode(65 + index),
    graph: "coder-review",
    graphFile: join(packageGraphsDir()!, "coder-review.yaml"),
    model: `scripted:${scriptOf(answer)}`,
  }));
  const options = (signal = new AbortController().signal, onTrial?: EvalRunOptions["onTrial"]): EvalRunOptions => ({
    store: { db, cwd: root, env: {} },
    settings: settingsOf({ PATH: process.env.PATH }),
    noSandbox: true,
    workRoot: join(root, ".loopgraph", "evals"),
    signal,
    ...(onTrial && { onTrial }),
  });
  return { root, db, suite, variants, options };
}

/**
 * An eval stopped before its one trial (task writes-42, variant A with `model`) ran, written to the
 * store as the runner writes a new eval, a second after `like` (the same suite) was made.
 */
export async function writeStoppedEval(store: StoreOptions, like: EvalRecord, model: string): Promise<EvalRecord> {
  const stopped: EvalRecord = {
    ...like,
    id: "e-0000beef",
    variants: [{ ...like.variants[0]!, model }],
    tasks: [{ id: "writes-42", tags: [] }],
    status: "stopped",
    createdAt: new Date(Date.parse(like.createdAt) + 1000).toISOString(),
  };
  await withTables(store, "write", (tables) =>
    tables.evals.create(stopped, [{ task: "writes-42", variant: "A", repetition: 1, threadId: "e-0000beef-A1-writes-42" }]),
  );
  return stopped;
}
