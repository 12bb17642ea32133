/**
 * Suite files of `loopgraph eval` (docs/eval.md, "Suite files"): YAML, checked against a zod
 * schema (whose JSON Schema is schema/eval-suite.schema.json), every problem reported at once as
 * `file:line:col: path: message`.
 *
 * A suite comes from the user, its task folders too, and each task folder is copied into every
 * trial: so a folder repo must not be a link, and may hold only regular files and folders (no
 * link, which could point anywhere, no `.git`, whose config could run commands). A relative repo
 * path must stay inside the suite file's folder once links are resolved; an absolute one is taken
 * as the user wrote it. The paths of `check.files` are only checked for their shape here (relative,
 * no `..`): the runner reads them in the finished, hostile workspace with the checked-file helpers.
 */
import { createHash, type Hash } from "node:crypto";
import { lstatSync, readdirSync, realpathSync, type Stats } from "node:fs";
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { z } from "zod";
import { ConfigError } from "../errors.js";
import type { DataPath } from "../diagnostics/positions.js";
import { mustCompile } from "../diagnostics/patterns.js";
import { readRegularFile, specialFileKind } from "../diagnostics/regular-file.js";
import { parseYamlChecked, schemaProblems, type Problem } from "../diagnostics/yaml-file.js";
import type { EvalSuite, EvalTask, TaskCheck, TaskRepo } from "./types.js";

/** A trial's time when neither its task nor the suite's defaults give one. */
export const DEFAULT_TASK_TIMEOUT_MS = 10 * 60_000;

const NAME = /^[A-Za-z0-9._-]+$/;
const SUITE_KEYS = ["version", "name", "defaults", "tasks"];
const DEFAULTS_KEYS = ["check", "timeout", "tags", "requires"];
const TASK_KEYS = ["id", "repo", "task", ...DEFAULTS_KEYS];
const CHECK_KEYS = ["command", "files", "answer"];
const GIT_KEYS = ["git", "ref"];

const regex = (what: string) => z.string({ error: `${what} must be a regular expression, written as a string` }).superRefine(mustCompile);

/** A checked file's path: inside the finished workspace, relative and without `..`. */
const badWorkspacePath = (path: string): boolean => path === "" || isAbsolute(path) || path.split(/[\\/]/).includes("..");

const checkSchema = z
  .strictObject(
    {
      command: z
        .string({ error: "command must be a shell command, written as a string" })
        .min(1, { error: "command must not be empty" })
        .describe("A shell command run in the finished workspace, in the sandbox: exit 0 passes")
        .optional(),
      files: z
        .record(z.string(), regex("a file's pattern"), { error: "files must be a mapping of paths to patterns" })
        .superRefine((files, ctx) => {
          for (const path of Object.keys(files).filter(badWorkspacePath)) {
            ctx.addIssue({ code: "custom", path: [path], message: `"${path}" must be a path relative to the workspace, without ..` });
          }
        })
        .describe('Files (workspace-relative) that must exist; a non-empty pattern must also match their text ("" = exists)')
        .optional(),
      answer: regex("answer").describe("A regular expression the run's final answer must match").optional(),
    },
    { error: "check must be a mapping: { command?, files?, answer? }" },
  )
  .meta({ id: "taskCheck", description: "What a trial must show to pass; a task's check merges over the defaults' key by key" });

const TIMEOUT_ERROR = 'timeout must be a number of seconds or a duration such as "90s", "3m", "1h"';
const timeoutSchema = z
  .union(
    [
      z.number().positive({ error: TIMEOUT_ERROR }),
      z
        .string()
        .regex(/^\d+(\.\d+)?(s|m|h)$/, { error: TIMEOUT_ERROR })
        .refine((text) => Number.parseFloat(text) > 0, { error: TIMEOUT_ERROR }),
    ],
    {
      error: TIMEOUT_ERROR,
    },
  )
  .describe('How long a trial (its run and its check) may take: seconds, or "90s", "3m", "1h"');

const namesSchema = (what: string, example: string) =>
  z.array(z.string().regex(NAME, { error: `${what} are names of letters, digits, ".", "_", "-" (${example})` }), {
    error: `${what} must be a list of names`,
  });

const taskSettings = {
  check: checkSchema.optional(),
  timeout: timeoutSchema.optional(),
  tags: namesSchema("tags", "js, bug").describe("Labels to group tasks by in the report; a task's add to the defaults'").optional(),
  requires: namesSchema("requires", "python3")
    .describe("Programs the check needs on PATH: without one, the task's trials are skipped; a task's add to the defaults'")
    .optional(),
};

const repoSchema = z
  .union(
    [
      z.string().min(1).describe("A folder, relative to the suite file (inside its folder) or absolute: copied fresh for every trial"),
      z.strictObject({
        git: z
          .string({ error: "git must be a URL or a path, written as a string" })
          .regex(/^[^-\s]/, { error: "git must be a URL or a path (not starting with - or a space)" })
          .describe("A git URL, or a path to a repository (relative to the suite file)"),
        ref: z
          .string({ error: "ref must be a branch, tag or commit, written as a string" })
          .regex(/^[^-\s]\S*$/, { error: "ref must be a branch, tag or commit (no spaces, not starting with -)" })
          .describe("The branch, tag or commit to check out (default: the repository's HEAD)")
          .optional(),
      }),
    ],
    { error: "repo must be a folder (a path) or { git: URL or path, ref?: branch, tag or commit }" },
  )
  .meta({ id: "taskRepo", description: "The task's starting repository" });

const taskSchema = z
  .strictObject(
    {
      id: z.string({ error: "id must be a string" }).regex(NAME, { error: 'id must be letters, digits, ".", "_" or "-"' }),
      repo: repoSchema,
      task: z
        .string({ error: "task must be the task's text" })
        .min(1, { error: "task must not be empty" })
        .describe("The text the graph is run with (--task)"),
      ...taskSettings,
    },
    { error: "a task must be a mapping: { id, repo, task, check?, timeout?, tags?, requires? }" },
  )
  .meta({ id: "evalTask", description: "A task: a starting repository, a task text, and a check" });

/** The zod schema of suite files (format version 1). */
export const suiteFileSchema = z.strictObject(
  {
    version: z.literal(1, { error: "version must be 1" }),
    name: z
      .string()
      .regex(NAME, { error: 'name must be letters, digits, ".", "_" or "-"' })
      .describe("Default: the file's base name")
      .optional(),
    defaults: z
      .strictObject(taskSettings, { error: "defaults must be a mapping: { check?, timeout?, tags?, requires? }" })
      .describe("Settings of every task, which a task's own extend (check key by key, tags and requires added)")
      .optional(),
    tasks: z.array(taskSchema, { error: "tasks must be a list of tasks" }).min(1, { error: "tasks must list at least one task" }),
  },
  { error: "a suite must be a mapping: { version: 1, name?, defaults?, tasks }" },
);

type SuiteFile = z.output<typeof suiteFileSchema>;
type TaskSettings = NonNullable<SuiteFile["defaults"]>;

/** The keys a mapping at `path` may have. */
function keysAt(path: DataPath): readonly string[] {
  const last = path.at(-1);
  if (path.length === 0) return SUITE_KEYS;
  if (last === "check") return CHECK_KEYS;
  if (last === "repo") return GIT_KEYS;
  if (last === "defaults") return DEFAULTS_KEYS;
  return TASK_KEYS;
}

/**
 * Reads and checks the suite file `file` (synchronous): its tasks with their defaults merged and
 * folder repos made absolute, and its hash. Throws a ConfigError (exit 2) listing every problem,
 * one line each, sorted by position.
 */
export function loadSuite(file: string): EvalSuite {
  const absolute = resolve(file);
  let bytes: Buffer;
  try {
    bytes = readRegularFile(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(`cannot read suite file ${file}: ${code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
  return parseYamlChecked(bytes.toString("utf8"), file, (data) => checkSuite(data, absolute, bytes));
}

function checkSuite(data: unknown, file: string, bytes: Buffer): { value: EvalSuite } | { problems: Problem[] } {
  const parsed = suiteFileSchema.safeParse(data);
  const problems = parsed.success ? [] : schemaProblems(parsed.error.issues, data, { keysAt });
  const rawTasks = (data as { tasks?: unknown }).tasks;
  const tasks: unknown[] = Array.isArray(rawTasks) ? rawTasks : [];
  problems.push(...duplicateIds(tasks));
  // The folders are checked whatever else is wrong, so one reading reports every problem.
  const hash = createHash("sha256").update(bytes);
  const folders = tasks.map((task, index) => {
    const repo = (task as { repo?: unknown } | null)?.repo;
    return typeof repo === "string" && repo !== "" ? taskFolder(repo, dirname(file), ["tasks", index, "repo"], problems, hash) : undefined;
  });
  if (!parsed.success) return { problems };
  const suite = parsed.data;
  suite.tasks.forEach((task, index) => {
    if (hasCheck({ ...suite.defaults?.check, ...task.check })) return;
    const message = "the task has no check (command, files or answer, here or in defaults): its trials could never fail";
    problems.push({ path: task.check ? ["tasks", index, "check"] : ["tasks", index], at: "value", message });
  });
  if (problems.length > 0) return { problems };
  return {
    value: {
      file,
      name: suite.name ?? basename(file, extname(file)),
      hash: hash.digest("hex"),
      tasks: suite.tasks.map((task, index) => {
        const folder = folders[index];
        return toTask(
          task,
          folder === undefined ? gitRepo(task.repo as { git: string; ref?: string }, dirname(file)) : folder,
          suite.defaults ?? {},
        );
      }),
    },
  };
}

const hasCheck = (check: TaskCheck): boolean =>
  check.command !== undefined || check.answer !== undefined || Object.keys(check.files ?? {}).length > 0;

function duplicateIds(tasks: readonly unknown[]): Problem[] {
  const seen = new Set<string>();
  const problems: Problem[] = [];
  tasks.forEach((task, index) => {
    const id = (task as { id?: unknown } | null)?.id;
    if (typeof id !== "string") return;
    if (seen.has(id))
      problems.push({ path: ["tasks", index, "id"], at: "value", message: `task id "${id}" is used twice: ids must be unique` });
    seen.add(id);
  });
  return problems;
}

/**
 * The folder repo `written` as a TaskRepo, its files hashed into `hash`; undefined with problems
 * when it is not a plain folder inside the suite's (a relative path) or holds what no trial may get.
 */
function taskFolder(written: string, suiteDir: string, path: DataPath, problems: Problem[], hash: Hash): TaskRepo | undefined {
  const bad = (message: string) => void problems.push({ path, at: "value", message });
  const folder = resolve(suiteDir, written);
  const stats = lstatSync(folder, { throwIfNoEntry: false });
  if (!stats) return bad(`the task folder ${folder} does not exist`);
  if (!stats.isDirectory()) return bad(`the task folder ${folder} is ${specialFileKind(stats)}, not a folder`);
  if (!isAbsolute(written) && !inside(realpathSync(folder), realpathSync(suiteDir))) {
    return bad(`the task folder ${written} is outside the suite file's folder ${suiteDir}: move it there or write its absolute path`);
  }
  hash.update(`\0folder\0${written}\0`);
  const before = problems.length;
  try {
    walkTaskFolder(folder, folder, hash, (entry, what) =>
      bad(`${entry} is ${what}: a task folder may hold only files and folders (it is copied into every trial)`),
    );
  } catch (error) {
    return bad(`cannot read the task folder ${folder}: ${(error as Error).message}`);
  }
  return problems.length === before ? { kind: "folder", path: folder } : undefined;
}

const inside = (path: string, folder: string): boolean => path === folder || path.startsWith(folder + sep);

/** Every file under `folder` (sorted, depth first) into `hash`: its relative path, mode and bytes; anything else is `refuse`d. */
function walkTaskFolder(root: string, folder: string, hash: Hash, refuse: (entry: string, what: string) => void): void {
  for (const name of readdirSync(folder).sort()) {
    const entry = join(folder, name);
    const stats: Stats = lstatSync(entry);
    const rel = relative(root, entry);
    if (name === ".git") refuse(entry, "a git folder (a task folder is made a repository of its own)");
    else if (stats.isDirectory()) {
      hash.update(`\0dir\0${rel}\0`);
      walkTaskFolder(root, entry, hash, refuse);
    } else if (stats.isFile()) {
      const content = readRegularFile(entry);
      hash.update(`\0file\0${rel}\0${(stats.mode & 0o7777).toString(8)}\0${content.length}\0`).update(content);
    } else refuse(entry, specialFileKind(stats));
  }
}

/** A git repo: a URL as written; a path made absolute against the suite file's folder. */
function gitRepo(repo: { git: string; ref?: string }, suiteDir: string): TaskRepo {
  const url = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(repo.git) || /^[^/]+@[^/]+:/.test(repo.git) ? repo.git : resolve(suiteDir, repo.git);
  return { kind: "git", url, ...(repo.ref !== undefined && { ref: repo.ref }) };
}

function toTask(task: SuiteFile["tasks"][number], repo: TaskRepo, defaults: TaskSettings): EvalTask {
  const check: TaskCheck = { ...defaults.check, ...task.check };
  return {
    id: task.id,
    repo,
    task: task.task,
    check: Object.fromEntries(Object.entries(check).filter(([, value]) => value !== undefined)) as TaskCheck,
    timeoutMs: timeoutMs(task.timeout ?? defaults.timeout),
    tags: [...new Set([...(defaults.tags ?? []), ...(task.tags ?? [])])],
    requires: [...new Set([...(defaults.requires ?? []), ...(task.requires ?? [])])],
  };
}

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000 } as const;

function timeoutMs(timeout: number | string | undefined): number {
  if (timeout === undefined) return DEFAULT_TASK_TIMEOUT_MS;
  if (typeof timeout === "number") return Math.round(timeout * 1000);
  return Math.round(Number.parseFloat(timeout) * UNIT_MS[timeout.slice(-1) as keyof typeof UNIT_MS]);
}
