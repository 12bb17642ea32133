import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, relative } from "node:path";

/** Every file under `dir` with its mode and a hash of its bytes (symlinks by target), minus what `skip` names. */
export function fingerprint(dir: string, skip: (path: string) => boolean = () => false): Record<string, string> {
  const result: Record<string, string> = {};
  const walk = (current: string): void => {
    for (const name of readdirSync(current)) {
      const path = join(current, name);
      const rel = relative(dir, path);
      if (skip(rel)) continue;
      const info = lstatSync(path);
      if (info.isDirectory()) walk(path);
      else if (info.isSymbolicLink()) result[rel] = `link ${readlinkSync(path)}`;
      else result[rel] = `${(info.mode & 0o777).toString(8)} ${createHash("sha1").update(readFileSync(path)).digest("hex")}`;
    }
  };
  walk(dir);
  return result;
}
