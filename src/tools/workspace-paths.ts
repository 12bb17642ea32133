import { lstatSync, readlinkSync, realpathSync, type Stats } from "node:fs";
import { stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError } from "./types.js";

/** Linux gives up after 40 links in one lookup (ELOOP); so do we. */
const MAX_SYMLINK_HOPS = 40;

/** True when `path` is `root` or lies below it (both absolute and normalised). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** The target of `path` when it is a symlink, else undefined. */
function symlinkTarget(path: string): string | undefined {
  try {
    return lstatSync(path).isSymbolicLink() ? readlinkSync(path) : undefined;
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/**
 * The real path of `path`, following symlinks as far as the path exists: for a path that does
 * not exist yet, its deepest existing ancestor is resolved and the rest appended. A dangling
 * symlink is followed to where its target would be created, since writing through it creates
 * the target.
 */
export function realPathOf(path: string): string {
  const missing: string[] = [];
  let current = path;
  let hops = 0;
  for (;;) {
    try {
      return join(realpathSync(current), ...missing.reverse());
    } catch (error) {
      if (!isMissing(error)) throw error;
      const target = symlinkTarget(current);
      if (target !== undefined) {
        if (++hops > MAX_SYMLINK_HOPS) throw new ToolError("failed", `too many levels of symbolic links at ${current}`);
        current = resolve(dirname(current), target);
        continue;
      }
      const parent = dirname(current);
      if (parent === current) return join(current, ...missing.reverse());
      missing.push(basename(current));
      current = parent;
    }
  }
}

/**
 * Resolves a path given by the model (relative to the workspace, or absolute) to a real absolute
 * path inside the workspace. Throws `outside_workspace` for `../` escapes, absolute paths
 * elsewhere, and symlinks (at any level, dangling ones included) that lead out of the workspace.
 * Only the real path decides, so an absolute path through a symlinked alias of the workspace is
 * accepted.
 */
export function resolveInWorkspace(workspace: string, path: string): string {
  if (path.includes("\0")) throw new ToolError("invalid_arguments", "path contains a NUL byte");
  const root = realPathOf(resolve(workspace));
  const requested = resolve(root, path);
  const real = realPathOf(requested);
  if (isInside(root, real)) return real;
  if (!isInside(root, requested)) {
    throw new ToolError("outside_workspace", `${path} is outside the workspace (${root}): use a path inside it`);
  }
  throw new ToolError("outside_workspace", `${path} leads outside the workspace through a symlink (to ${real})`);
}

/** Workspace-relative form of an absolute path inside the workspace, with `/` separators. */
export function workspaceRelative(workspace: string, path: string): string {
  return (
    relative(realPathOf(resolve(workspace)), path)
      .split(sep)
      .join("/") || "."
  );
}

export interface ExistingPath {
  /** Real absolute path. */
  absolute: string;
  /** Workspace-relative form of `absolute`, for messages. */
  relative: string;
  stats: Stats;
}

/** `resolveInWorkspace` for a path that must exist: a missing one is `file_not_found`. */
export async function statInWorkspace(workspace: string, path: string): Promise<ExistingPath> {
  const absolute = resolveInWorkspace(workspace, path);
  try {
    return { absolute, relative: workspaceRelative(workspace, absolute), stats: await stat(absolute) };
  } catch (error) {
    if (isMissing(error)) throw new ToolError("file_not_found", `${path} does not exist in the workspace`);
    throw error;
  }
}
