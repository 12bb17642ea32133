/** `git diff --numstat -z` output, read. */

/** One file of a diff, with its lines added and removed; a binary file has no line counts. */
export interface FileChange {
  path: string;
  added?: number;
  removed?: number;
}

/** `added\tremoved\tpath\0` records (`--no-renames`); `-` counts mean binary. */
export function parseNumstat(output: string): FileChange[] {
  return output
    .split("\0")
    .filter((record) => record.length > 0)
    .map((record) => {
      const [added = "-", removed = "-", ...path] = record.split("\t");
      return added === "-" ? { path: path.join("\t") } : { path: path.join("\t"), added: Number(added), removed: Number(removed) };
    });
}
