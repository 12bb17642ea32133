/**
 * What configures git or loopgraph wherever it is in a workspace: every `.git` (a folder, or the
 * file of a worktree or submodule), every `.loopgraph/` folder and `loopgraph.yaml` file, and
 * every folder git would take as a bare repository (`HEAD` with `objects/` and `refs/`, or with
 * a `commondir`). A `.git`'s config and hooks run code in the user's own later git commands
 * (`core.fsmonitor`, `core.pager`, hooks); a `.loopgraph/` or `loopgraph.yaml` changes what a
 * later loopgraph run in that folder does. So a command may read them but not change them (the
 * sandbox binds each read-only) nor create one (the shell tool undoes what a step created:
 * `undoCreated`).
 */
import { lstatSync, realpathSync, rmSync, type Dirent } from "node:fs";
import { join, relative } from "node:path";
import { installedPackageRoot } from "../package.js";
import { PROJECT_CONFIG, STATE_DIR } from "../project.js";
import { BARE_REPOSITORY_MARK, looksLikeBareRepository } from "../git/repository-shape.js";
import { hazardsOfEntry, walkFolders, type ReadHazard } from "../git/read-hazards.js";
import { isInside } from "./workspace-paths.js";

/** One entry found: its absolute path, what it is, and its inode (by which it is known again: one moved elsewhere is the same, one made again at the same path is new). */
export interface ProtectedEntry {
  path: string;
  kind: "git" | "state" | "config" | "bare-repository";
  ino: number;
  /** A symbolic link so named (bound read-only by its target, see `readOnlyPaths`). */
  link: boolean;
}

function kindOf(entry: Dirent): ProtectedEntry["kind"] | undefined {
  if (entry.name === ".git") return "git";
  // A link to a folder counts as the folder (loopgraph follows it); a plain file so named configures nothing.
  if (entry.name === STATE_DIR && !entry.isFile()) return "state";
  // A folder named loopgraph.yaml configures nothing.
  if (entry.name === PROJECT_CONFIG && !entry.isDirectory()) return "config";
  return undefined;
}

function inode(path: string): number {
  return lstatSync(path, { throwIfNoEntry: false })?.ino ?? 0;
}

/**
 * Every protected entry in `workspace` at any depth, the workspace's own `.loopgraph/` and
 * `.git` included. Symbolic links to folders are not followed (a link named `.git` is listed
 * itself); nothing inside a protected entry is looked at. `hazards`, when given, receives the
 * read hazards found on the way (read-hazards.ts), which costs no second walk.
 */
export function protectedEntries(workspace: string, hazards?: ReadHazard[]): ProtectedEntry[] {
  const found: ProtectedEntry[] = [];
  walkFolders(workspace, (folder, entries) => {
    if (hazards) for (const entry of entries) hazards.push(...hazardsOfEntry(folder, entry));
    if (folder !== workspace && looksLikeBareRepository(new Set(entries.map((entry) => entry.name)))) {
      found.push({ path: folder, kind: "bare-repository", ino: inode(folder), link: false });
      return [];
    }
    const subfolders: string[] = [];
    for (const entry of entries) {
      const path = join(folder, entry.name);
      const kind = kindOf(entry);
      if (kind) found.push({ path, kind, ino: inode(path), link: entry.isSymbolicLink() });
      else if (entry.isDirectory()) subfolders.push(path);
    }
    return subfolders;
  });
  return found;
}

/**
 * The paths to bind read-only for `entries`: each as it is, but a symbolic link by its target,
 * and only a target inside the workspace (binding a link's target outside would show it to the
 * command: a planted `.git -> ~/.ssh`).
 */
function readOnlyPaths(workspace: string, entries: readonly ProtectedEntry[]): string[] {
  return entries.flatMap(({ path, link }) => {
    if (!link) return [path];
    try {
      const target = realpathSync(path);
      return isInside(workspace, target) ? [target] : [];
    } catch {
      // Dangling: nothing there to protect.
      return [];
    }
  });
}

/** The paths to bind read-only in `workspace` for its `entries` (default: as it is now); loopgraph's own installed package too, when it lies inside. */
export function protectedPaths(workspace: string, entries: readonly ProtectedEntry[] = protectedEntries(workspace)): string[] {
  const own = installedPackageRoot();
  return [...readOnlyPaths(workspace, entries), ...(own && own !== workspace && isInside(workspace, own) ? [own] : [])];
}

/**
 * Undoes the protected entries that are in `after` but were not in `before` (by inode, wherever
 * they are now): a new `.git`, nested `.loopgraph/` or `loopgraph.yaml` is removed; a new bare
 * repository loses its HEAD, which is all git looks for. The workspace's own `.loopgraph/` is
 * loopgraph's and stays. Returns one line for the model per entry undone, naming it relative to
 * the workspace.
 */
export function undoCreated(workspace: string, before: readonly ProtectedEntry[], after: readonly ProtectedEntry[]): string[] {
  const known = new Set(before.map((entry) => entry.ino));
  const created = after.filter((entry) => !known.has(entry.ino) && entry.path !== join(workspace, STATE_DIR));
  return created.map((entry) => {
    const name = relative(workspace, entry.path);
    if (entry.kind === "bare-repository") {
      rmSync(join(entry.path, BARE_REPOSITORY_MARK), { recursive: true, force: true });
      return (
        `[${name}/${BARE_REPOSITORY_MARK} was removed: ${name} was made a bare git repository, and a command may not make one ` +
        "in the workspace (its configuration and hooks would run in the user's own git commands)]"
      );
    }
    rmSync(entry.path, { recursive: true, force: true });
    if (entry.kind === "git") {
      return `[${name} was removed: a command may not make a git repository in the workspace (its configuration and hooks would run in the user's own git commands); ask the user to run git init]`;
    }
    return `[${name} was removed: it configures loopgraph, which only the user does; commands may not create it]`;
  });
}

/**
 * Removes the read hazards a command left (read-hazards.ts): a named pipe named `.gitignore`
 * would hang loopgraph's next snapshot and search. Returns one line for the model per file removed.
 */
export function removeReadHazards(workspace: string, hazards: readonly ReadHazard[]): string[] {
  return hazards.map(({ path, what }) => {
    rmSync(path, { force: true });
    return (
      `[${relative(workspace, path)} was removed: it was ${what}, and git and ripgrep read every file of that name, ` +
      "so they would wait on it forever; only a regular file may have that name]"
    );
  });
}
