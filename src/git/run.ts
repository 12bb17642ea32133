/**
 * Runs git for loopgraph's own use (workspace baselines, snapshots): never through the
 * caller's GIT_DIR/GIT_INDEX_FILE, always with fixed output settings, failures as GitError.
 *
 * The agent can write to the workspace, and so to a repository's config: git must not run
 * anything it planted there with loopgraph's rights. So git gets a minimal environment (no
 * credential reaches it), reads no user or system config, and runs no hooks and no fsmonitor
 * whatever a repository's config says (command-line settings override it).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { execFile } from "node:child_process";
import { LoopgraphError } from "../errors.js";
import { hazardMessage, watchForReadHazards } from "./read-hazards.js";

const MAX_GIT_OUTPUT_BYTES = 256 * 1024 * 1024;

/** The variables of loopgraph's environment that git sees: where to find programs, and the locale. */
const INHERITED_ENV = ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT"];

/** Settings that override a repository's own: they would run a program of the agent's choosing. */
const OVERRIDES = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "core.sshCommand=false",
  "core.askPass=false",
  "credential.helper=",
  "commit.gpgSign=false",
  "tag.gpgSign=false",
  "core.pager=cat",
];

/** The author and committer of loopgraph's own commits (snapshots, a run's result), whatever the user's git identity. */
export const LOOPGRAPH_IDENTITY = {
  GIT_AUTHOR_NAME: "loopgraph",
  GIT_AUTHOR_EMAIL: "loopgraph@localhost",
  GIT_COMMITTER_NAME: "loopgraph",
  GIT_COMMITTER_EMAIL: "loopgraph@localhost",
};

/** git is missing, or could not snapshot, diff or restore the workspace. */
export class GitError extends LoopgraphError {
  override name = "GitError";
}

export interface GitOptions {
  cwd: string;
  indexFile?: string;
  /** `--git-dir`/`--work-tree` of a shadow repository. */
  repository?: string[];
  /** More environment, e.g. the author and committer of commits. */
  env?: Record<string, string>;
  /** Written to git's standard input. */
  input?: string | Buffer;
}

/** Output and exit code of a command whose other exit codes than 0 are answers (`merge-tree`'s 1: conflicts), not failures. */
export interface GitOutcome {
  output: string;
  exitCode: number;
}

/**
 * Commands that read no workspace file's content: no content filter or merge driver can run, so
 * the repository's config is not read for them first. They read config, refs, the object store,
 * `.gitignore` files (`check-ignore`) or compare trees (`diff-tree`, never the work tree). Any
 * other may (even `write-tree` refreshes the index).
 */
const UNFILTERED_COMMANDS = new Set([
  "config",
  "init",
  "rev-parse",
  "symbolic-ref",
  "update-ref",
  "for-each-ref",
  "commit-tree",
  "cat-file",
  "ls-tree",
  "diff-tree",
  "check-ignore",
]);

/**
 * Settings that switch off every content filter and merge driver a repository's config defines:
 * an empty command is no filter; a merge driver becomes `false`, which reports a conflict (an
 * empty one would "succeed" and silently keep one side). `.gitattributes` in the workspace may
 * assign any of them to any file, and `merge.default` names a driver for every file.
 */
function filterOverrides(options: GitOptions): Promise<string[]> {
  const readOnce = filterListsRead.getStore();
  if (!readOnce) return readFilterOverrides(options);
  const repository = [options.cwd, ...(options.repository ?? [])].join("\0");
  let overrides = readOnce.get(repository);
  if (!overrides) readOnce.set(repository, (overrides = readFilterOverrides(options)));
  return overrides;
}

/** The filter lists read within a `withFilterListsReadOnce`, by repository (cwd and `--git-dir`). */
const filterListsRead = new AsyncLocalStorage<Map<string, Promise<string[]>>>();

/**
 * Runs `work`, whose git commands follow one another within one operation of loopgraph's (a
 * snapshot of the workspace), with each repository's filters and merge drivers listed once, by
 * its first command, rather than before each: a config changed between two of its commands was
 * as able to change between a listing and its command.
 */
export function withFilterListsReadOnce<T>(work: () => Promise<T>): Promise<T> {
  return filterListsRead.run(new Map(), work);
}

async function readFilterOverrides(options: GitOptions): Promise<string[]> {
  const listed = await runGit(
    ["config", "--get-regexp", String.raw`^(filter\..*\.(clean|smudge|process)|merge\..*\.driver)$`],
    options,
  ).catch(() => "");
  const lines = listed.split("\n");
  const filters = new Set(lines.flatMap((line) => /^filter\.(.+)\.(?:clean|smudge|process) /.exec(line)?.[1] ?? []));
  const mergeDrivers = new Set(lines.flatMap((line) => /^merge\.(.+)\.driver /.exec(line)?.[1] ?? []));
  return [
    ...[...filters].flatMap((name) =>
      ["clean", "smudge", "process"].flatMap((key) => ["-c", `filter.${name}.${key}=`]).concat(["-c", `filter.${name}.required=false`]),
    ),
    ...[...mergeDrivers].flatMap((name) => ["-c", `merge.${name}.driver=false`]),
  ];
}

export async function git(args: string[], options: GitOptions): Promise<string> {
  const filters = UNFILTERED_COMMANDS.has(args[0] ?? "") ? [] : await filterOverrides(options);
  return runGit(args, options, filters);
}

/** `git` for a command whose exit codes `accepted` (besides 0) are answers: its output and exit code. */
export async function gitOutcome(args: string[], options: GitOptions, accepted: readonly number[]): Promise<GitOutcome> {
  const filters = UNFILTERED_COMMANDS.has(args[0] ?? "") ? [] : await filterOverrides(options);
  let exitCode = 0;
  const output = await runGit(args, options, filters, "utf8", (code) => {
    if (!accepted.includes(code)) return false;
    exitCode = code;
    return true;
  });
  return { output, exitCode };
}

/** `git` whose output is bytes, as git wrote them (a patch of files that are not UTF-8). */
export async function gitBytes(args: string[], options: GitOptions): Promise<Buffer> {
  const filters = UNFILTERED_COMMANDS.has(args[0] ?? "") ? [] : await filterOverrides(options);
  return runGit(args, options, filters, "buffer");
}

/** `settings`: more `-c` options, before the command (not shown in its error message). */
/** `accepts`: whether a non-zero exit code is an answer (the output is then returned), not a failure. */
function runGit(
  args: string[],
  options: GitOptions,
  settings?: string[],
  encoding?: "utf8",
  accepts?: (code: number) => boolean,
): Promise<string>;
function runGit(args: string[], options: GitOptions, settings: string[], encoding: "buffer"): Promise<Buffer>;
function runGit(
  args: string[],
  { cwd, indexFile, repository = [], env: extra = {}, input }: GitOptions,
  settings: string[] = [],
  encoding: "utf8" | "buffer" = "utf8",
  accepts: (code: number) => boolean = () => false,
): Promise<string | Buffer> {
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(INHERITED_ENV.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name]]]))),
    GIT_OPTIONAL_LOCKS: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    ...extra,
  };
  if (indexFile) env.GIT_INDEX_FILE = indexFile;
  const command = ["-c", "core.quotepath=off", ...OVERRIDES.flatMap((setting) => ["-c", setting]), ...settings, ...repository, ...args];
  const workTree = repository.find((arg) => arg.startsWith("--work-tree="))?.slice("--work-tree=".length) ?? cwd;
  return new Promise((resolveOutput, reject) => {
    let stoppedFor: string | undefined;
    const child = execFile("git", command, { cwd, env, encoding, maxBuffer: MAX_GIT_OUTPUT_BYTES }, (error, stdout, stderr) => {
      endWatch();
      if (stoppedFor !== undefined) return reject(new GitError(`git ${args[0]}: ${stoppedFor}`));
      if (!error) return resolveOutput(stdout);
      const code = (error as NodeJS.ErrnoException | { code?: number }).code;
      if (typeof code === "number" && accepts(code)) return resolveOutput(stdout);
      if (code === "ENOENT") return reject(new GitError("git is not installed (or not on PATH)"));
      const reason =
        code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER"
          ? `output larger than ${MAX_GIT_OUTPUT_BYTES} bytes`
          : String(stderr).trim().split("\n")[0] || error.message;
      reject(new GitError(`git ${args.join(" ")}: ${reason}`));
    });
    const endWatch = watchForReadHazards(workTree, (hazard) => {
      stoppedFor = hazardMessage("git", workTree, hazard);
      child.kill("SIGKILL");
    });
    child.stdin?.on("error", () => {
      // A missing git fails the spawn; its stdin then errors too, which the callback above reports.
    });
    child.stdin?.end(input ?? "");
  });
}
