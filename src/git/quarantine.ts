/**
 * New git objects held apart until they are known to be fit to keep: git writes what `git add`
 * and `write-tree` create into a quarantine directory (GIT_OBJECT_DIRECTORY, the repository's
 * own objects as an alternate, as git's receive-pack does), where every new blob can be read and
 * replaced by a stand-in (a secret's value redacted, a file that must not be kept). Only then do
 * the objects move into the repository, the replaced originals never: no object store of ours,
 * nor the user's repository, ever holds what loopgraph refused to keep.
 */
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { deflateSync, inflateSync } from "node:zlib";

export interface Quarantine {
  /** The environment of the git commands whose objects it holds. */
  env: Record<string, string>;
  /** The new objects' ids (blobs, and any tree or commit written so far). */
  objectIds(): Promise<string[]>;
  /** An object's content, when it is a blob. */
  blob(id: string): Promise<Buffer | undefined>;
  /** Writes a stand-in for blob `id` (which is then never moved in); returns the stand-in's id. */
  replace(id: string, content: Buffer): Promise<string>;
  /** Moves the objects into the repository, except the originals of redacted blobs, and removes the quarantine. */
  release(): Promise<void>;
  /** Removes the quarantine and what it holds. */
  discard(): Promise<void>;
}

const OBJECT_FOLDER = /^[0-9a-f]{2}$/;
const PREFIX = "incoming-";
/** A quarantine this old was left by a process that died in the middle of a snapshot (no snapshot takes this long). */
const STALE_MS = 10 * 60_000;

export async function openQuarantine(objects: string): Promise<Quarantine> {
  await removeStale(objects);
  const dir = await mkdtemp(join(objects, PREFIX));
  const withheld = new Set<string>();
  const looseObjects = async (): Promise<{ id: string; path: string }[]> => {
    const found: { id: string; path: string }[] = [];
    for (const folder of await readdir(dir)) {
      if (!OBJECT_FOLDER.test(folder)) continue;
      for (const file of await readdir(join(dir, folder))) found.push({ id: folder + file, path: join(dir, folder, file) });
    }
    return found;
  };

  const discard = () => rm(dir, { recursive: true, force: true });
  return {
    env: { GIT_OBJECT_DIRECTORY: dir, GIT_ALTERNATE_OBJECT_DIRECTORIES: objects },
    objectIds: async () => (await looseObjects()).map(({ id }) => id),
    async blob(id) {
      const object = inflateSync(await readFile(join(dir, id.slice(0, 2), id.slice(2))));
      const headerEnd = object.indexOf(0);
      return object.subarray(0, headerEnd).toString("latin1").startsWith("blob ") ? object.subarray(headerEnd + 1) : undefined;
    },
    async replace(id, content) {
      withheld.add(id);
      return writeBlob(dir, content, id.length === 64 ? "sha256" : "sha1");
    },
    async release() {
      for (const { id, path } of await looseObjects()) {
        if (withheld.has(id)) continue;
        const target = join(objects, id.slice(0, 2), id.slice(2));
        if (
          await stat(target).then(
            () => true,
            () => false,
          )
        )
          continue;
        await mkdir(join(objects, id.slice(0, 2)), { recursive: true });
        await rename(path, target);
      }
      // Files larger than core.bigFileThreshold go straight into a pack: kept as they are.
      const packs = join(dir, "pack");
      for (const file of await readdir(packs).catch(() => [] as string[])) {
        await mkdir(join(objects, "pack"), { recursive: true });
        await rename(join(packs, file), join(objects, "pack", file));
      }
      await discard();
    },
    discard,
  };
}

/** Removes quarantines left by processes that died in the middle of a snapshot: they may hold what was not to be kept. */
async function removeStale(objects: string): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(objects).catch(() => [] as string[])) {
    if (!name.startsWith(PREFIX)) continue;
    const path = join(objects, name);
    const changed = await stat(path).then(
      (info) => info.mtimeMs,
      () => now,
    );
    if (now - changed > STALE_MS) await rm(path, { recursive: true, force: true });
  }
}

/** Writes a loose blob object; returns its id. */
async function writeBlob(dir: string, content: Buffer, hash: "sha1" | "sha256"): Promise<string> {
  const object = Buffer.concat([Buffer.from(`blob ${content.length}\0`, "latin1"), content]);
  const id = createHash(hash).update(object).digest("hex");
  await mkdir(join(dir, id.slice(0, 2)), { recursive: true });
  await writeFile(join(dir, id.slice(0, 2), id.slice(2)), deflateSync(object), { flag: "w" });
  return id;
}
