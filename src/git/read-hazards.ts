/**
 * Files that git and ripgrep open by name in every folder they walk (`.gitignore`,
 * `.gitattributes`, …, and a repository's `info/exclude`): anything there but a regular file or a
 * folder is a trap for loopgraph's own git commands and searches. Opening a named pipe waits for
 * a writer that never comes, so `git add` or `rg` (and the run waiting on them) would hang
 * forever; a link to `/dev/zero` makes ripgrep read without end. The agent can make one with a
 * shell command (`mkfifo .gitignore`), and a hostile repository can hold one.
 *
 * The shell tool removes those a command leaves (`hazardsOfEntry`, in its walk after each
 * command), and loopgraph's git and ripgrep processes are watched (`watchForReadHazards`): one
 * that runs long while such a file exists is stopped, and the failure names the file.
 */
import { lstatSync, readdirSync, statSync, type Dirent, type Stats } from "node:fs";
import { readdir } from "node:fs/promises";
import { join, relative } from "node:path";
import { specialFileKind } from "../diagnostics/regular-file.js";

/** The names git and ripgrep read in every folder they walk. */
export const READ_BY_NAME: ReadonlySet<string> = new Set([".gitignore", ".gitattributes", ".gitmodules", ".ignore", ".rgignore"]);

/** What git reads in a repository's own folder besides its objects and refs. */
const GIT_INFO_FILES = [join("info", "exclude"), join("info", "attributes")];

/** How long a watched process runs before the work tree is first searched for read hazards. */
export const HAZARD_CHECK_MS = 2_000;

export interface ReadHazard {
  /** Absolute path. */
  path: string;
  /** What it is, for messages: "a named pipe (FIFO)", "a symbolic link to a device", … */
  what: string;
}

/** Why the entry at `path` (read by name) is a hazard: neither a regular file nor a folder, nor a link to one; undefined when it is safe or gone. */
export function readHazardAt(path: string): string | undefined {
  let stats: Stats | undefined;
  try {
    stats = lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
  if (!stats || stats.isFile() || stats.isDirectory()) return undefined;
  if (!stats.isSymbolicLink()) return specialFileKind(stats);
  let target: Stats | undefined;
  try {
    // stat never opens the target: a link to a named pipe is seen without waiting on it.
    target = statSync(path, { throwIfNoEntry: false });
  } catch {
    // A loop of links: git and ripgrep fail to open it, and go on.
    return undefined;
  }
  if (!target || target.isFile() || target.isDirectory()) return undefined;
  return `a symbolic link to ${specialFileKind(target)}`;
}

/** The hazard among a folder's entries, if `entry` is one (a `.git` folder's info files included). */
export function hazardsOfEntry(folder: string, entry: Dirent): ReadHazard[] {
  const path = join(folder, entry.name);
  if (entry.name === ".git" && entry.isDirectory()) {
    return GIT_INFO_FILES.flatMap((file) => {
      const infoFile = join(path, file);
      const what = readHazardAt(infoFile);
      return what ? [{ path: infoFile, what }] : [];
    });
  }
  if (!READ_BY_NAME.has(entry.name) || entry.isFile() || entry.isDirectory()) return [];
  const what = readHazardAt(path);
  return what ? [{ path, what }] : [];
}

/**
 * Walks the folders below `root` (itself included), depth first, without following links:
 * `visit` gets each folder's entries and returns the subfolders to enter. A folder gone or
 * unreadable since it was listed is passed over.
 */
export function walkFolders(root: string, visit: (folder: string, entries: Dirent[]) => string[]): void {
  const folders = [root];
  while (folders.length > 0) {
    const folder = folders.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      continue;
    }
    folders.push(...visit(folder, entries));
  }
}

/** One line for a failure: what `program` would wait on, and what to do. */
export function hazardMessage(program: string, root: string, hazard: ReadHazard): string {
  const name = relative(root, hazard.path) || hazard.path;
  return `${name} is ${hazard.what}, which ${program} reads and would wait on forever: remove it (rm '${hazard.path.replaceAll("'", "'\\''")}') and try again`;
}

/**
 * The first read hazard below `root`, walked without blocking the event loop (the process it
 * watches keeps being read meanwhile); undefined when there is none or `stopped()` became true.
 */
async function firstReadHazard(root: string, stopped: () => boolean): Promise<ReadHazard | undefined> {
  const folders = [root];
  while (folders.length > 0 && !stopped()) {
    const folder = folders.pop()!;
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const [hazard] = hazardsOfEntry(folder, entry);
      if (hazard) return hazard;
      if (entry.isDirectory() && entry.name !== ".git") folders.push(join(folder, entry.name));
    }
  }
  return undefined;
}

/**
 * Watches a process that reads the work tree at `root`: once it has run HAZARD_CHECK_MS, the tree
 * is searched for read hazards, and again after twice as long each time (so the searches cost a
 * small share of a long process's time); the first one found is passed to `onHazard` (which stops
 * the process). A process that ends sooner costs nothing. Returns the function that ends the watch.
 */
export function watchForReadHazards(root: string, onHazard: (hazard: ReadHazard) => void): () => void {
  let ended = false;
  let delay = HAZARD_CHECK_MS;
  let timer: NodeJS.Timeout;
  const schedule = () => {
    timer = setTimeout(() => void check(), delay);
    timer.unref();
  };
  const check = async () => {
    const hazard = await firstReadHazard(root, () => ended);
    if (ended) return;
    if (hazard) {
      ended = true;
      onHazard(hazard);
      return;
    }
    delay *= 2;
    schedule();
  };
  schedule();
  return () => {
    ended = true;
    clearTimeout(timer);
  };
}
