import { statSync } from "node:fs";
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
