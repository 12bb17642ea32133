/**
 * The OS sandbox for the commands the agent runs (the shell tool): bubblewrap, where it can start.
 * Inside it the workspace is writable except its `.git/` and `.loopgraph/` (read-only), the rest
 * of the file system is read-only, `/tmp` and the home directory are empty and private, there is
 * no network (only a private loopback), and the whole process tree dies with the step (a PID
 * namespace whose first process dies with bubblewrap). `LOOPGRAPH_SANDBOX=off` runs commands
 * without it.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

export interface Sandbox {
  /** Shown in the run's header. */
  readonly name: "bubblewrap" | "none";
  /** The program and arguments that run `argv` in the sandbox, in `workspace` (absolute, real path). */
  wrap(argv: readonly string[], workspace: string, env: NodeJS.ProcessEnv): { file: string; args: string[]; env: NodeJS.ProcessEnv };
}

/** No confinement: the command runs as loopgraph's own child. */
export const NO_SANDBOX: Sandbox = {
  name: "none",
  wrap: ([file, ...args], _workspace, env) => ({ file: file!, args, env }),
};

/** Workspace folders the agent's commands may read but not change. */
const READ_ONLY_IN_WORKSPACE = [".git", ".loopgraph"];

export const BUBBLEWRAP: Sandbox = {
  name: "bubblewrap",
  wrap(argv, workspace, env) {
    const home = env.HOME && env.HOME !== "/" ? [env.HOME] : [];
    const args = [
      "--ro-bind", "/", "/",
      "--dev", "/dev",
      "--proc", "/proc",
      // Private, empty /tmp and home, mounted before the workspace (which may be under either).
      "--tmpfs", "/tmp",
      ...home.flatMap((dir) => (existsSync(dir) ? ["--tmpfs", dir] : [])),
      "--bind", workspace, workspace,
      ...READ_ONLY_IN_WORKSPACE.flatMap((name) => {
        const path = join(workspace, name);
        return existsSync(path) ? ["--ro-bind", path, path] : [];
      }),
      "--unshare-all",
      "--die-with-parent",
      "--new-session",
      "--chdir", workspace,
      "--",
      ...argv,
    ];
    return { file: "bwrap", args, env: { ...env, TMPDIR: "/tmp" } };
  },
};

let detected: Sandbox | undefined;

/** The sandbox this machine can give (tried once per process), unless `LOOPGRAPH_SANDBOX=off`. */
export function availableSandbox(env: NodeJS.ProcessEnv = process.env): Sandbox {
  if (env.LOOPGRAPH_SANDBOX === "off") return NO_SANDBOX;
  detected ??= bubblewrapWorks() ? BUBBLEWRAP : NO_SANDBOX;
  return detected;
}

/** Whether bubblewrap is installed and may create namespaces here (user namespaces can be disabled). */
function bubblewrapWorks(): boolean {
  const trial = spawnSync("bwrap", ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "--", "true"], {
    stdio: "ignore",
    timeout: 5_000,
  });
  return trial.status === 0;
}
