import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Creates a `.loopgraph` folder with a `.gitignore` that ignores everything in it, so the user's
 * `git status` never shows loopgraph's own files.
 */
export function ensureStateDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
  try {
    writeFileSync(join(dir, ".gitignore"), "# loopgraph's own files: runs, artifacts, snapshots\n*\n", { flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}
