/**
 * git against a repository a queued run names (`run --queue --repo URL|PATH`): ls-remote, clone
 * and push, with the user's own git setup (their config, credential helpers, ssh agent), since
 * that is how they reach their repositories. It always runs in a directory loopgraph created and
 * the agent cannot write (never in a workspace), so no config or hook the agent planted applies;
 * and no transport that runs a command named by the URL (`ext::`) is allowed, nor a prompt.
 */
import { execFile } from "node:child_process";
import { GitError } from "./run.js";

/** Overrides of anything the remote side or a URL could make run here. */
const OVERRIDES = ["protocol.ext.allow=never", "core.hooksPath=/dev/null", "core.fsmonitor=false"];

/** A clone of a big repository is slow; a hung server is not waited for beyond this (LOOPGRAPH_GIT_TIMEOUT_S). */
const TIMEOUT_S = 600;

export async function remoteGit(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<string> {
  const base = options.env;
  const timeoutS = Number(base.LOOPGRAPH_GIT_TIMEOUT_S) > 0 ? Number(base.LOOPGRAPH_GIT_TIMEOUT_S) : TIMEOUT_S;
  // The caller's repository variables would point git elsewhere than the directory it is given.
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(base).filter(
      ([name]) =>
        !/^GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|CONFIG_PARAMETERS|CONFIG_COUNT|NAMESPACE|CEILING_DIRECTORIES)$/.test(
          name,
        ),
    ),
  );
  env.GIT_TERMINAL_PROMPT = "0";
  env.GIT_ASKPASS = env.GIT_ASKPASS ?? "";
  const command = [...OVERRIDES.flatMap((setting) => ["-c", setting]), ...args];
  return new Promise((resolveOutput, reject) => {
    execFile(
      "git",
      command,
      { cwd: options.cwd, env, encoding: "utf8", timeout: timeoutS * 1000, killSignal: "SIGKILL", maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (!error) return resolveOutput(stdout);
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return reject(new GitError("git is not installed (or not on PATH)"));
        if (error.killed) return reject(new GitError(`git ${args[0]}: no answer within ${timeoutS} s (LOOPGRAPH_GIT_TIMEOUT_S)`));
        reject(new GitError(`git ${args[0]}: ${failureReason(stderr) ?? error.message}`));
      },
    );
  });
}

/** The line of git's messages that says why: the server's own words first (`remote: …`, a rejected ref), then git's. */
function failureReason(stderr: string): string | undefined {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  const server = lines
    .map((line) => /^remote:\s*(.+)$/.exec(line)?.[1]?.trim())
    .find((text) => text && !/^(Enumerating|Counting|Compressing|Total|Resolving)\b/.test(text));
  const rejected = lines.find((line) => line.startsWith("! ["));
  const own = lines.find((line) => /^(fatal|error):/.test(line))?.replace(/^(fatal|error):\s*/, "");
  return server ?? rejected ?? own ?? lines[0];
}
