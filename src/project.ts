import { statSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

/** The folder loopgraph keeps in a project or workspace: store, artifacts, shadow repository. */
export const STATE_DIR = ".loopgraph";

/** The project's own configuration file, at the project root: written by the user, never by the agent. */
export const PROJECT_CONFIG = "loopgraph.yaml";

/**
 * The project `cwd` is in: the nearest directory at or above it that holds `loopgraph.yaml`, a
 * `.loopgraph/` folder or a `.git` (a folder, or the file of a worktree or submodule); `cwd` itself
 * when none does. Its `.loopgraph/loopgraph.db` is the default store, its `graphs/` the project's
 * graphs, its `loopgraph.yaml` the project configuration, and it is the default workspace, so a
 * command run from a subdirectory finds them and creates nothing there.
 */
export function projectRoot(cwd: string): string {
  const start = path.resolve(cwd);
  for (let dir = start; ; ) {
    if (isProjectRoot(dir)) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return start;
    dir = parent;
  }
}

function isProjectRoot(dir: string): boolean {
  const kind = (name: string) => statSync(path.join(dir, name), { throwIfNoEntry: false });
  return kind(PROJECT_CONFIG)?.isFile() === true || kind(STATE_DIR)?.isDirectory() === true || kind(".git") !== undefined;
}

/** The default store of the project `cwd` is in: `.loopgraph/loopgraph.db` at its root. */
export function defaultStorePath(cwd: string): string {
  return path.join(projectRoot(cwd), STATE_DIR, "loopgraph.db");
}

/** The user's own loopgraph folder: `$XDG_CONFIG_HOME/loopgraph` (default `~/.config/loopgraph`), with config.yaml, policy.yaml, AGENTS.md. */
export function userConfigDir(env: NodeJS.ProcessEnv): string {
  return path.join(env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), ".config"), "loopgraph");
}

/** The configuration files that apply in `cwd`, whether or not they exist: the user's, then the project's. */
export function configFiles(cwd: string, env: NodeJS.ProcessEnv): { user: string; project: string; root: string } {
  const root = projectRoot(cwd);
  return { user: path.join(userConfigDir(env), "config.yaml"), project: path.join(root, PROJECT_CONFIG), root };
}
