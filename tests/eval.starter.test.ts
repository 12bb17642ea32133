/**
 * The starter suite shipped in examples/evals/: every task's test fails as shipped and passes with
 * the fix solves-all.script.yaml writes; misses-three.script.yaml writes the same fixes but for
 * three tasks, whose tests its fixes leave failing; and the coder-review graph, run with the
 * script, fixes a JavaScript and a Python task.
 */
import { execFile } from "node:child_process";
import { cpSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { settingsOf } from "../src/config/environment-settings.js";
import { loadSuite } from "../src/eval/suite.js";
import type { EvalTask } from "../src/eval/types.js";
import { runGraph } from "../src/index.js";
import { parseScript } from "../src/models/index.js";
import { ROOT, testConfigHome } from "./helpers/cli.js";
import { lacks } from "./helpers/requirements.js";
import { tempDir, tempWorkspace } from "./helpers/workspace.js";

const EVALS = join(ROOT, "examples/evals");
const suite = loadSuite(join(EVALS, "starter.yaml"));
const MISSED = ["chunk-remainder", "fizzbuzz-order", "py-leap-year"];

const SCRIPTS = ["solves-all.script.yaml", "misses-three.script.yaml"] as const;
const responsesOf = Object.fromEntries(SCRIPTS.map((script) => [script, parseScript(readFileSync(join(EVALS, script), "utf8"), script)]));

/** The files a script's `write_file` calls write for a task: the calls of the responses whose `task` matches its text. */
function fixOf(script: (typeof SCRIPTS)[number], task: EvalTask): Record<string, string> {
  const responses = responsesOf[script]!.filter((response) => response.task !== undefined && new RegExp(response.task).test(task.task));
  const writes = responses.flatMap((response) => response.tool_calls ?? []).filter((call) => call.name === "write_file");
  return Object.fromEntries(writes.map(({ args }) => [(args as { path: string }).path, (args as { contents: string }).contents]));
}

/** The task's check command's exit code in `dir`. */
async function checkExit(task: EvalTask, dir: string): Promise<number> {
  return promisify(execFile)("sh", ["-c", task.check.command!], { cwd: dir }).then(
    () => 0,
    (error: { code?: number }) => error.code ?? -1,
  );
}

/** A fresh copy of the task's folder with `files` written over it, and its check's exit code there. */
async function checkWith(task: EvalTask, files: Record<string, string>): Promise<number> {
  const dir = tempDir(`loopgraph-starter-${task.id}-`);
  cpSync((task.repo as { path: string }).path, dir, { recursive: true });
  for (const [path, contents] of Object.entries(files)) writeFileSync(join(dir, path), contents);
  return checkExit(task, dir);
}

const noPython = lacks("python3", "the starter suite's Python tasks");

describe("the starter eval suite", () => {
  it("has ten tasks, at least six in JavaScript (node --test) and three in Python (python3 -m unittest, which they require)", () => {
    const js = suite.tasks.filter((task) => task.check.command === "node --test" && task.requires.length === 0);
    const python = suite.tasks.filter((task) => task.check.command === "python3 -m unittest" && task.requires.includes("python3"));
    expect(suite.tasks).toHaveLength(10);
    expect(js.length).toBeGreaterThanOrEqual(6);
    expect(python.length).toBeGreaterThanOrEqual(3);
    expect(js.length + python.length).toBe(10);
  });

  it("each script's task patterns pick out one task each, and every task has its coder responses", () => {
    for (const script of SCRIPTS) {
      const patterns = responsesOf[script]!.flatMap((response) => response.task ?? []);
      for (const pattern of new Set(patterns)) {
        expect(suite.tasks.filter((task) => new RegExp(pattern).test(task.task)).length, `${script}: ${pattern}`).toBe(1);
      }
      for (const task of suite.tasks) expect(Object.keys(fixOf(script, task)), `${script}: ${task.id}`).not.toEqual([]);
    }
  });

  for (const task of suite.tasks) {
    const python = task.requires.includes("python3");
    it.skipIf(python && noPython)(
      `${task.id}: its check fails as shipped, passes with solves-all's fix${MISSED.includes(task.id) ? ", fails with misses-three's" : ", which misses-three writes too"}`,
      async () => {
        const solves = fixOf("solves-all.script.yaml", task);
        const misses = fixOf("misses-three.script.yaml", task);
        const [shipped, solved, missed] = await Promise.all([
          checkWith(task, {}),
          checkWith(task, solves),
          MISSED.includes(task.id) ? checkWith(task, misses) : undefined,
        ]);
        expect(shipped).not.toBe(0);
        expect(solved).toBe(0);
        if (MISSED.includes(task.id)) expect(missed).not.toBe(0);
        else expect(misses).toEqual(solves);
      },
    );
  }

  const runs = [suite.tasks.find((task) => task.id === "sum-adds")!, suite.tasks.find((task) => task.id === "py-word-count")!];
  for (const task of runs) {
    it.skipIf(task.requires.includes("python3") && noPython)(
      `coder-review with solves-all fixes ${task.id}: the run finishes and the task's check passes`,
      async () => {
        // As the runner starts a trial: the task's folder as a repository with one commit (the folders are flat).
        const folder = (task.repo as { path: string }).path;
        const ws = tempWorkspace({
          git: true,
          files: Object.fromEntries(readdirSync(folder).map((name) => [name, readFileSync(join(folder, name))])),
        });
        const outcome = await runGraph({
          graph: "coder-review",
          cwd: ROOT,
          task: task.task,
          workspace: ws.dir,
          db: ws.db,
          model: `scripted:${join(EVALS, "solves-all.script.yaml")}`,
          approval: "auto",
          settings: settingsOf({ XDG_CONFIG_HOME: testConfigHome() }),
        });
        expect(outcome.status, outcome.error).toBe("finished");
        expect(await checkExit(task, ws.dir)).toBe(0);
      },
    );
  }
});
