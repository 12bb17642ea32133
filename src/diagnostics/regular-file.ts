/**
 * Reading the files a project gives loopgraph (config, policy and graph files, prompts, function
 * modules, scripts) without trusting what kind of file they are: a named pipe would make
 * loopgraph wait forever for a writer, a link to `/dev/zero` would be read without end. So the
 * file is opened without waiting (`O_NONBLOCK`), and only a regular file is read; anything else
 * fails at once with an error whose `code` is `EISDIR` or `ESPECIAL` and whose message says what
 * it is. Links are followed: a config file may be a link into a dotfiles folder.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from "node:fs";

const { O_RDONLY, O_NONBLOCK } = constants;

/** What kind of file a non-regular file is, for messages. */
export function specialFileKind(stats: Stats): string {
  if (stats.isFIFO()) return "a named pipe (FIFO)";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  if (stats.isSymbolicLink()) return "a symbolic link";
  if (stats.isDirectory()) return "a directory";
  return "not a regular file";
}

/** The bytes of the regular file at `path` (see the module's comment); fs errors (`ENOENT`, …) pass through. */
export function readRegularFile(path: string): Buffer {
  const fd = openSync(path, O_RDONLY | O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) {
      const what = specialFileKind(stats);
      throw Object.assign(new Error(`it is ${what}, not a regular file`), { code: stats.isDirectory() ? "EISDIR" : "ESPECIAL" });
    }
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** `readRegularFile` as UTF-8 text. */
export function readRegularText(path: string): string {
  return readRegularFile(path).toString("utf8");
}
