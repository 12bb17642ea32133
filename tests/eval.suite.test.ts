import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderSuiteJsonSchema } from "../src/eval/json-schema.js";
import { DEFAULT_TASK_TIMEOUT_MS, loadSuite } from "../src/eval/suite.js";
import { ConfigError } from "../src/errors.js";
import { tempDir } from "./helpers/workspace.js";

/** A suite folder with `files` written in it (folders made); the suite file is `suite.yaml`. */
function suiteFolder(files: Record<string, string>): string {
  const dir = tempDir("loopgraph-suite-");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/** The lines of the ConfigError that loading `file` throws. */
function problemsOf(file: string): string[] {
  try {
    loadSuite(file);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.split("\n");
  }
  throw new Error(`${file} loaded without a problem`);
}

const VALID = `# yaml-language-server: $schema=../../schema/eval-suite.schema.json
version: 1
name: starter
defaults:
  check: { command: "node --test" }
  timeout: 3m
  tags: [js]
tasks:
  - id: sum-adds
    repo: tasks/sum-adds
    task: "sum(a, b) in sum.js returns a wrong result: make its test pass."
    check:
      files: { "sum.js": "a \\\\+ b", "notes/done.txt": "" }
      answer: "fixed"
    timeout: 2m
    tags: [bug, js]
    requires: [node]
  - id: py.count_1
    repo: { git: "https://example.com/count.git", ref: v1.2 }
    task: Count the words.
    check: { command: "python3 -m unittest" }
    timeout: 90
    requires: [python3]
  - id: local-git
    repo: { git: ../elsewhere }
    task: Anything.
    timeout: "1.5h"
`;

describe("eval suite files", () => {
  it("reads a suite: defaults merged under each task, folders and git paths absolute", () => {
    const dir = suiteFolder({ "suite.yaml": VALID, "tasks/sum-adds/sum.js": "export const sum = (a, b) => a - b;\n" });
    const suite = loadSuite(join(dir, "suite.yaml"));
    expect(suite).toEqual({
      file: join(dir, "suite.yaml"),
      name: "starter",
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      tasks: [
        {
          id: "sum-adds",
          repo: { kind: "folder", path: join(dir, "tasks/sum-adds") },
          task: "sum(a, b) in sum.js returns a wrong result: make its test pass.",
          // The task's check keys over the defaults' (command kept), tags added without repeats, its own timeout.
          check: { command: "node --test", files: { "sum.js": "a \\+ b", "notes/done.txt": "" }, answer: "fixed" },
          timeoutMs: 120_000,
          tags: ["js", "bug"],
          requires: ["node"],
        },
        {
          id: "py.count_1",
          repo: { kind: "git", url: "https://example.com/count.git", ref: "v1.2" },
          task: "Count the words.",
          check: { command: "python3 -m unittest" },
          timeoutMs: 90_000,
          tags: ["js"],
          requires: ["python3"],
        },
        {
          id: "local-git",
          repo: { kind: "git", url: join(dirname(dir), "elsewhere") },
          task: "Anything.",
          check: { command: "node --test" },
          timeoutMs: 5_400_000,
          tags: ["js"],
          requires: [],
        },
      ],
    });
  });

  it("names a suite after its file by default; without defaults a task has only its own settings and the default timeout", () => {
    const dir = suiteFolder({
      "nightly.yml": "version: 1\ntasks:\n  - { id: a, repo: t, task: go, check: { answer: done } }\n",
      "t/README": "x\n",
    });
    const suite = loadSuite(join(dir, "nightly.yml"));
    expect(suite.name).toBe("nightly");
    expect(suite.tasks).toEqual([
      {
        id: "a",
        repo: { kind: "folder", path: join(dir, "t") },
        task: "go",
        check: { answer: "done" },
        timeoutMs: DEFAULT_TASK_TIMEOUT_MS,
        tags: [],
        requires: [],
      },
    ]);
  });

  it("reports every problem at its place, sorted, one line each: schema, regexes, ids, folders and what they hold", () => {
    const dir = suiteFolder({
      "suite.yaml": `version: 1
defaults:
  tags: [js]
  timeout: 3 minutes
tasks:
  - id: one
    repo: tasks/one
    task: go
    check: { command: "true", answer: "fix(" }
  - id: one
    repo: tasks/missing
    task: go
    tmeout: 2m
    check: { files: { "../up.js": "", "ok.js": "[" } }
  - id: three
    repo: tasks/plain-file
    task: go
    check: { command: "true" }
  - id: four
    repo: tasks/link
    task: go
    check: { command: "true" }
  - id: five
    repo: ../
    task: go
    check: { command: "true" }
  - id: six
    repo: tasks/holds-link
    task: go
    check: { command: "true" }
  - id: seven
    repo: tasks/holds-git
    task: go
  - id: eight
    repo: tasks/pipe
    task: go
    check: { command: "true" }
  - id: nine
    repo: { git: "--upload-pack=touch x" }
    task: go
    check: {}
  - id: ten
    repo: { git: "https://example.com/x.git", reff: v1 }
    task: go
    timeout: 0s
`,
      "tasks/one/a.js": "",
      "tasks/plain-file": "",
      "tasks/holds-link/a.js": "",
      "tasks/holds-git/.git/config": "[core]\n\tfsmonitor = touch pwned\n",
    });
    symlinkSync(join(dir, "tasks/one"), join(dir, "tasks/link"));
    symlinkSync("/etc/passwd", join(dir, "tasks/holds-link/passwd"));
    execFileSync("mkfifo", [join(dir, "tasks/pipe")]);
    const file = join(dir, "suite.yaml");
    const copied = "a task folder may hold only files and folders (it is copied into every trial)";
    expect(problemsOf(file)).toEqual([
      `${file}:4:12: defaults.timeout: timeout must be a number of seconds or a duration such as "90s", "3m", "1h"`,
      `${file}:9:39: tasks[0].check.answer: invalid regular expression /fix(/: Unterminated group`,
      `${file}:10:9: tasks[1].id: task id "one" is used twice: ids must be unique`,
      `${file}:11:11: tasks[1].repo: the task folder ${join(dir, "tasks/missing")} does not exist`,
      `${file}:13:5: tasks[1]: unknown key "tmeout": did you mean "timeout"?`,
      `${file}:14:23: tasks[1].check.files.../up.js: "../up.js" must be a path relative to the workspace, without ..`,
      `${file}:14:48: tasks[1].check.files.ok.js: invalid regular expression /[/: Unterminated character class`,
      `${file}:16:11: tasks[2].repo: the task folder ${join(dir, "tasks/plain-file")} is not a regular file, not a folder`,
      `${file}:20:11: tasks[3].repo: the task folder ${join(dir, "tasks/link")} is a symbolic link, not a folder`,
      `${file}:24:11: tasks[4].repo: the task folder ../ is outside the suite file's folder ${dir}: move it there or write its absolute path`,
      `${file}:28:11: tasks[5].repo: ${join(dir, "tasks/holds-link/passwd")} is a symbolic link: ${copied}`,
      `${file}:32:11: tasks[6].repo: ${join(dir, "tasks/holds-git/.git")} is a git folder (a task folder is made a repository of its own): ${copied}`,
      `${file}:35:11: tasks[7].repo: the task folder ${join(dir, "tasks/pipe")} is a named pipe (FIFO), not a folder`,
      `${file}:39:18: tasks[8].repo.git: git must be a URL or a path (not starting with - or a space)`,
      `${file}:43:47: tasks[9].repo: unknown key "reff": did you mean "ref"?`,
      `${file}:45:14: tasks[9].timeout: timeout must be a number of seconds or a duration such as "90s", "3m", "1h"`,
    ]);
  });

  it("refuses a task that has no check once the defaults are merged: its trials could never fail", () => {
    const dir = suiteFolder({
      "suite.yaml":
        "version: 1\ntasks:\n  - id: a\n    repo: t\n    task: go\n  - id: b\n    repo: t\n    task: go\n    check: { files: {} }\n",
      "t/a.js": "",
    });
    const file = join(dir, "suite.yaml");
    const never = "the task has no check (command, files or answer, here or in defaults): its trials could never fail";
    expect(problemsOf(file)).toEqual([`${file}:3:5: tasks[0]: ${never}`, `${file}:9:12: tasks[1].check: ${never}`]);
  });

  it("reports YAML syntax, an unreadable file and a suite that is not a mapping in one line each", () => {
    const dir = suiteFolder({ "syntax.yaml": "version: 1\ntasks: [\n", "list.yaml": "- a\n" });
    expect(problemsOf(join(dir, "syntax.yaml"))).toEqual([
      expect.stringMatching(new RegExp(`^${join(dir, "syntax.yaml")}:\\d+:\\d+: YAML syntax error: `)),
    ]);
    expect(problemsOf(join(dir, "list.yaml"))).toEqual([
      `${join(dir, "list.yaml")}:1:1: a suite must be a mapping: { version: 1, name?, defaults?, tasks }`,
    ]);
    execFileSync("mkfifo", [join(dir, "pipe.yaml")]);
    expect(problemsOf(join(dir, "pipe.yaml"))).toEqual([
      `cannot read suite file ${join(dir, "pipe.yaml")}: it is a named pipe (FIFO), not a regular file`,
    ]);
    expect(problemsOf(join(dir, "none.yaml"))).toEqual([`cannot read suite file ${join(dir, "none.yaml")}: no such file`]);
  });

  it("hashes the suite file and its task folders' files (paths, modes, bytes), and nothing else", () => {
    const dir = suiteFolder({
      "suite.yaml": "version: 1\ntasks:\n  - { id: a, repo: tasks/a, task: go, check: { command: 'node --test' } }\n",
      "tasks/a/sum.js": "export const sum = (a, b) => a - b;\n",
      "tasks/a/test/sum.test.js": "test\n",
      "tasks/unused/x.js": "x\n",
      "README.md": "about\n",
    });
    const file = join(dir, "suite.yaml");
    const hash = () => loadSuite(file).hash;
    const first = hash();
    expect(hash()).toBe(first);
    writeFileSync(join(dir, "README.md"), "changed\n");
    writeFileSync(join(dir, "tasks/unused/x.js"), "changed\n");
    expect(hash()).toBe(first);

    const seen = new Set([first]);
    const changes: [string, () => void][] = [
      ["a file's bytes", () => writeFileSync(join(dir, "tasks/a/test/sum.test.js"), "test!\n")],
      ["a file's mode", () => chmodSync(join(dir, "tasks/a/sum.js"), 0o755)],
      ["a new empty file", () => writeFileSync(join(dir, "tasks/a/new.js"), "")],
      ["a new empty folder", () => mkdirSync(join(dir, "tasks/a/empty"))],
      ["the suite file", () => writeFileSync(file, `${readFileSync(file, "utf8")}# a comment\n`)],
    ];
    for (const [what, change] of changes) {
      change();
      const next = hash();
      expect(seen.has(next), what).toBe(false);
      seen.add(next);
    }
  });

  it("schema/eval-suite.schema.json is up to date with the zod schema (regenerate with npm run schema)", () => {
    const committed = readFileSync(new URL("../schema/eval-suite.schema.json", import.meta.url), "utf8");
    expect(committed).toBe(renderSuiteJsonSchema());
  });
});
