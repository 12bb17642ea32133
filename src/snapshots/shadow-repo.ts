/**
 * The snapshot repository of a workspace: a bare git repository at
 * `<workspace>/.loopgraph/snapshots.git`, used with the workspace as its work tree and its own
 * index, so the user's `.git` (index, HEAD, refs, config, objects) is never read or written and
 * the workspace needs no repository at all.
 *
 * What a snapshot holds: every file git would add, so `.gitignore` files in the workspace and
 * the user's global excludes are respected; `.loopgraph/`, `.git/` and `node_modules/` are
 * always left out. Files are stored byte for byte (no end-of-line conversion or filters) with
 * their executable bit, and symlinks as symlinks, except that a file holding a secret's value is
 * stored with the value redacted, and a hard-linked file (another link may be outside the
 * workspace) as a note; their stand-ins' ids are listed in `redacted-blobs`, and a rewind leaves
 * such a file as it is rather than write the stand-in back.
 */
import { existsSync } from "node:fs";
import { appendFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GitError, gitBytes, LOOPGRAPH_IDENTITY } from "../git/run.js";
import { shadowTreeStore, writeTree, type TreeStore } from "../git/tree-store.js";
import { STATE_DIR } from "../project.js";
import { ensureStateDir } from "../runs/state-dir.js";

export const SNAPSHOTS_GIT_DIR = `${STATE_DIR}/snapshots.git`;
/** Ids of the stand-ins of files that held a secret, one a line, in the snapshot repository. */
const REDACTED_LIST = "redacted-blobs";

const EXCLUDES = [`/${STATE_DIR}/`, ".git/", "node_modules/"];
/** `info/attributes` wins over the workspace's `.gitattributes`: no conversion, no filter (LFS …). */
const ATTRIBUTES = ["* -text -eol -filter -ident -working-tree-encoding"];
/** Nothing ever prunes a snapshot; no daemon watches the workspace for us. */
const CONFIG = { "gc.auto": "0", "core.autocrlf": "false", "core.fsmonitor": "false" };
const GITLINK_MODE = "160000";

/** A path whose content or mode differs between two trees (nested repositories left out). */
export interface TreeChange {
  path: string;
  /** A: only in the second tree; D: only in the first; M: changed (content, mode or type). */
  status: "A" | "D" | "M";
}

export interface SnapshotRepository {
  workspace: string;
  /** The workspace as it is now, as a tree id. */
  capture(): Promise<string>;
  /** Paths that differ from tree `from` to tree `to`. */
  diff(from: string, to: string): Promise<TreeChange[]>;
  /** The change from tree `from` to tree `to` as a patch `git apply` takes (binary files included), byte for byte. */
  patch(from: string, to: string): Promise<Buffer>;
  /** Records the trees as commits under a ref, so they stay reachable; returns the last commit. */
  keep(trees: string[], message: string): Promise<string>;
  /** Writes `paths` into the workspace as they are in `tree` (content, executable bit, symlinks). */
  checkout(tree: string, paths: string[]): Promise<void>;
  /** Those of `paths` that `tree` holds only as a redacted stand-in (their content held a secret). */
  withheld(tree: string, paths: string[]): Promise<string[]>;
}

export interface SnapshotRepositoryOptions {
  /** Create the repository on first use (default); otherwise a missing one is a GitError. */
  create?: boolean;
  /** Values no snapshot may hold (the run's secrets). */
  secrets?: readonly string[];
}

/**
 * The workspace's snapshot repository, created on first use unless `create` is false (then a
 * missing one is a GitError).
 */
export async function openSnapshotRepository(
  workspace: string,
  { create = true, secrets = [] }: SnapshotRepositoryOptions = {},
): Promise<SnapshotRepository> {
  const gitDir = join(workspace, SNAPSHOTS_GIT_DIR);
  if (!create && !existsSync(join(gitDir, "HEAD"))) throw new GitError(`no snapshot repository at ${gitDir}`);
  // Its own .gitignore keeps the folder out of the user's `git status`.
  ensureStateDir(join(workspace, STATE_DIR));
  const store = await shadowTreeStore(workspace, { gitDir, excludes: EXCLUDES, attributes: ATTRIBUTES, config: CONFIG });
  const redactedList = join(gitDir, REDACTED_LIST);
  return {
    workspace,
    capture: async () => {
      const { tree, redacted } = await writeTree(store, secrets);
      if (redacted.length > 0) await appendFile(redactedList, redacted.map((id) => `${id}\n`).join(""));
      return tree;
    },
    withheld: async (tree, paths) => {
      const standIns = new Set((await readFile(redactedList, "utf8").catch(() => "")).split("\n").filter(Boolean));
      if (standIns.size === 0 || paths.length === 0) return [];
      const listed = await store.run(["ls-tree", "-r", "-z", tree, "--", ...paths], undefined, { env: { GIT_LITERAL_PATHSPECS: "1" } });
      const entries = listed.split("\0").filter(Boolean);
      return entries.flatMap((entry) => {
        const [info = "", path = ""] = entry.split("\t");
        return standIns.has(info.split(" ")[2] ?? "") ? [path] : [];
      });
    },
    diff: async (from, to) => parseRawDiff(await store.run(["diff-tree", "-r", "-z", "--no-renames", from, to])),
    patch: (from, to) =>
      gitBytes(
        ["diff-tree", "-p", "-r", "--binary", "--full-index", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", from, to],
        {
          cwd: workspace,
          repository: [`--git-dir=${gitDir}`],
        },
      ),
    keep: (trees, message) => keep(store, trees, message),
    checkout: (tree, paths) => checkout(store, tree, paths),
  };
}

/** `:<old mode> <new mode> <old id> <new id> <status>\0<path>\0` records of `git diff-tree -z`. */
function parseRawDiff(output: string): TreeChange[] {
  const fields = output.split("\0");
  const changes: TreeChange[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [oldMode, newMode, , , status] = fields[i]!.slice(1).split(" ");
    const path = fields[i + 1]!;
    if (oldMode === GITLINK_MODE || newMode === GITLINK_MODE) continue;
    // A type change (T) of a path, file ↔ symlink, restores like any other change.
    changes.push({ path, status: status === "A" || status === "D" ? status : "M" });
  }
  return changes;
}

async function keep(store: TreeStore, trees: string[], message: string): Promise<string> {
  let parent: string | undefined;
  for (const tree of trees) {
    const args = ["commit-tree", "--no-gpg-sign", "-m", message, ...(parent ? ["-p", parent] : []), tree];
    parent = (await store.run(args, undefined, { env: LOOPGRAPH_IDENTITY })).trim();
  }
  if (!parent) throw new GitError("no tree to keep");
  await store.run(["update-ref", `refs/loopgraph/keep/${parent}`, parent]);
  return parent;
}

async function checkout(store: TreeStore, tree: string, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  const scratch = await mkdtemp(join(tmpdir(), "loopgraph-restore-"));
  const index = join(scratch, "index");
  try {
    await store.run(["read-tree", tree], index);
    await store.run(["checkout-index", "--force", "-z", "--stdin"], index, { input: paths.map((path) => `${path}\0`).join("") });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
