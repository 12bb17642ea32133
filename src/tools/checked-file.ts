/**
 * Opening workspace files the way the file tools checked them. The path was resolved to its real
 * location inside the workspace (workspace-paths.ts); here the file itself is opened without
 * following a symlink swapped in since, and the opened descriptor is checked: only a regular file
 * with one link is read or written. A FIFO, socket or device would hang or reach outside the
 * workspace, and a second hard link may be a file outside it.
 */
import { constants, fstatSync, openSync, readSync, closeSync, type Stats } from "node:fs";
import { lstat, mkdir, open, readFile, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { specialFileKind } from "../diagnostics/regular-file.js";
import { installedPackageRoot } from "../package.js";
import { PROJECT_CONFIG } from "../project.js";
import { ToolError } from "./types.js";
import { isInside } from "./workspace-paths.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Folders the file tools never write, at any depth: git's repositories and loopgraph's own files (store, policy, snapshots). */
const PROTECTED_DIRECTORIES = [".git", ".loopgraph"];

/**
 * Refuses a write to a protected path (`protected_path`), whatever the approval mode: a planted
 * git config, hook, policy or project config file (`loopgraph.yaml`, at any depth: one in a
 * folder makes it a project root) would run or decide things for loopgraph itself.
 * `relative` is the workspace-relative real path.
 */
/** What tells a file's content apart from what it was: its size, modification time (ns) and inode. */
export function fileStamp(stats: Pick<Stats, "size" | "mtimeMs" | "ino">): string {
  return `${stats.size}:${stats.mtimeMs}:${stats.ino}`;
}

/** The stamp of a file the tool has just written. */
export async function stampOf(absolute: string): Promise<string> {
  return fileStamp(await lstat(absolute));
}

export function checkWritable(relative: string, absolute: string): void {
  const own = installedPackageRoot();
  if (own && isInside(own, absolute)) {
    throw new ToolError(
      "protected_path",
      `${relative} is part of loopgraph itself (installed in ${own}), which the file tools never write`,
    );
  }
  if (relative.split("/").pop()?.toLowerCase() === PROJECT_CONFIG) {
    throw new ToolError(
      "protected_path",
      `${relative} is a loopgraph project config file, which the file tools never write: the user sets loopgraph up`,
    );
  }
  // Compared case-insensitively: on a case-insensitive file system `.GIT/config` is `.git/config`.
  const component = relative.split("/").find((part) => PROTECTED_DIRECTORIES.includes(part.toLowerCase()));
  if (component !== undefined) {
    throw new ToolError(
      "protected_path",
      `${relative} is inside ${component}/, which the file tools never write (it holds ${component === ".loopgraph" ? "loopgraph's own files" : "a git repository"})`,
    );
  }
}

/** Why the file tools refuse a file: anything but a regular file with a single link; undefined when they accept it. */
export function refusal(stats: Stats, relative: string): string | undefined {
  if (!stats.isFile()) return `${relative} is ${specialFileKind(stats)}: the file tools only read and write regular files`;
  if (stats.nlink > 1) {
    return `${relative} has ${stats.nlink} hard links: the file tools refuse it, since another link may be a file outside the workspace`;
  }
  return undefined;
}

/** A `special_file` error for a file the tools refuse (see `refusal`); directories are the caller's business. */
export function checkRegularFile(stats: Stats, relative: string): void {
  const refused = refusal(stats, relative);
  if (refused !== undefined) throw new ToolError("special_file", refused);
}

function openFailure(error: unknown, relative: string): ToolError | unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ELOOP") return new ToolError("failed", `${relative} became a symbolic link while it was being opened: try again`);
  if (code === "ENXIO")
    return new ToolError("special_file", `${relative} is a named pipe (FIFO): the file tools only read and write regular files`);
  if (code === "ENOENT") return new ToolError("file_not_found", `${relative} does not exist in the workspace`);
  return error;
}

/** Opens a regular workspace file for reading; the caller closes the handle. */
export async function openForReading(absolute: string, relative: string): Promise<{ handle: FileHandle; stats: Stats }> {
  const handle = await open(absolute, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch((error: unknown) => {
    throw openFailure(error, relative);
  });
  try {
    const stats = await handle.stat();
    checkRegularFile(stats, relative);
    return { handle, stats };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** The whole contents of a regular workspace file. */
export async function readChecked(absolute: string, relative: string): Promise<Buffer> {
  const { handle } = await openForReading(absolute, relative);
  try {
    return await readFile(handle);
  } finally {
    await handle.close();
  }
}

/**
 * Writes `text` (UTF-8) to a workspace file that is not protected, creating it and its parent
 * directories, then reads it back to check. An existing file must be a regular file with one link.
 */
export async function writeChecked(absolute: string, relative: string, text: string): Promise<void> {
  checkWritable(relative, absolute);
  await mkdir(dirname(absolute), { recursive: true });
  const expected = Buffer.from(text, "utf8");
  const handle = await open(absolute, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o666).catch((error: unknown) => {
    throw openFailure(error, relative);
  });
  try {
    checkRegularFile(await handle.stat(), relative);
    await handle.truncate(0);
    await handle.writeFile(expected);
  } finally {
    await handle.close();
  }
  if (!(await readChecked(absolute, relative)).equals(expected)) {
    throw new ToolError("failed", `${relative} was written but reading it back gave different contents (is another process writing it?)`);
  }
}

/**
 * At most `maxBytes` of a regular file with one link (any number with `hardLinks`: for files
 * whose content never reaches the model), read synchronously without following a symlink at
 * `absolute` and without blocking on a FIFO; undefined for anything else.
 */
export function readRegularFileSync(
  absolute: string | Buffer,
  maxBytes: number,
  { hardLinks = false }: { hardLinks?: boolean } = {},
): { bytes: Buffer; cut: boolean } | undefined {
  let fd: number;
  try {
    fd = openSync(absolute, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || (!hardLinks && refusal(stats, absolute.toString()) !== undefined)) return undefined;
    const bytes = Buffer.alloc(Math.min(stats.size, maxBytes));
    let read = 0;
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return { bytes: bytes.subarray(0, read), cut: stats.size > maxBytes };
  } finally {
    closeSync(fd);
  }
}
