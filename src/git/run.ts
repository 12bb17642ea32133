/**
 * Runs git for loopgraph's own use (workspace baselines, snapshots): never through the
 * caller's GIT_DIR/GIT_INDEX_FILE, always with fixed output settings, failures as GitError.
 */
import { execFile } from "node:child_process";
import { LoopgraphError } from "../errors.js";

const MAX_GIT_OUTPUT_BYTES = 256 * 1024 * 1024;

/** Variables that would point git at another repository, index or work tree than the one meant. */
const REPOSITORY_ENV = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_COMMON_DIR",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_NAMESPACE",
  "GIT_PREFIX",
];

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
  input?: string;
}

export function git(args: string[], { cwd, indexFile, repository = [], env: extra = {}, input }: GitOptions): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_OPTIONAL_LOCKS: "0" };
  for (const name of REPOSITORY_ENV) delete env[name];
  Object.assign(env, extra);
  if (indexFile) env.GIT_INDEX_FILE = indexFile;
  const command = ["-c", "core.quotepath=off", ...repository, ...args];
  return new Promise((resolveOutput, reject) => {
    const child = execFile("git", command, { cwd, env, encoding: "utf8", maxBuffer: MAX_GIT_OUTPUT_BYTES }, (error, stdout, stderr) => {
      if (!error) return resolveOutput(stdout);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return reject(new GitError("git is not installed (or not on PATH)"));
      const reason =
        code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER"
          ? `output larger than ${MAX_GIT_OUTPUT_BYTES} bytes`
          : stderr.trim().split("\n")[0] || error.message;
      reject(new GitError(`git ${args.join(" ")}: ${reason}`));
    });
    // A missing git fails the spawn; its stdin then errors too, which the callback above reports.
    child.stdin?.on("error", () => {});
    child.stdin?.end(input ?? "");
  });
}
