/**
 * An eval made in-process (src/eval/run.ts) on a real SQLite store, real git and the shipped
 * coder-review graph with a tiny scripted model: one round in which the Coder writes answer.txt
 * holding 42, the Review passes it and the Judge ends the loop. Each task is checked against that
 * answer in a fresh copy of one task folder.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { settingsOf } from "../../src/config/environment-settings.js";
import type { EvalRunOptions } from "../../src/eval/run.js";
import type { EvalSuite, EvalTask, EvalVariant } from "../../src/eval/types.js";
import { packageGraphsDir } from "../../src/package.js";
import { tempWorkspace } from "./workspace.js";

/** One round: the Coder writes answer.txt, the Review passes it, the Judge ends the loop. */
const SCRIPT = `responses:
  - node: coder
    tool_calls:
      - name: write_file
        args: { path: answer.txt, contents: "42\\n" }
  - node: coder
    content: "Wrote answer.txt: 42."
  - node: review.specs_breakdown
    content: '{"rating": "normal", "comments": []}'
  - node: review.task_log
    content: '{"rating": "normal", "comments": []}'
  - node: judge
    content: '{"decision": "terminate", "reason": "done"}'
`;

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

/**
 * A suite named "answers" of the tasks `tasksOf(folder)` gives, one variant (A: coder-review with
 * the scripted model), the store `db` (a temporary workspace's, or the one given) and the options
 * an eval runs with there.
 */
export function evalFixture(tasksOf: (folder: string) => EvalTask[], place?: { root: string; db: string }): EvalFixture {
  const { root, db } = place ?? tempWorkspace({ prefix: "loopgraph-eval-" });
  const folder = join(root, "task-folder");
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "README.md"), "Write 42 to answer.txt.\n");
  const script = join(root, "answer.script.yaml");
  writeFileSync(script, SCRIPT);
  const suite: EvalSuite = { file: join(root, "suite.yaml"), name: "answers", hash: "suite-hash", tasks: tasksOf(folder) };
  const variants: EvalVariant[] = [
    { label: "A", graph: "coder-review", graphFile: join(packageGraphsDir()!, "coder-review.yaml"), model: `scripted:${script}` },
  ];
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
