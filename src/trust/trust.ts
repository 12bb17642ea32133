/**
 * Project trust. What a repository holds that loopgraph would execute or that changes what it
 * allows (its surface: surface.ts) takes effect only once the user has trusted it, as it is:
 * `loopgraph trust` records a digest of each surface file in the user's own config folder
 * (`trusted-projects.json`, which no project can write). A file that is not recorded, or whose
 * content changed since (for example because the agent edited it), is untrusted until the user
 * trusts the project again. loopgraph's own package files are always trusted.
 */
import { createHash } from "node:crypto";
import { mkdirSync, realpathSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "../errors.js";
import { packageRoot } from "../package.js";
import { projectRoot, userConfigDir } from "../project.js";
import { isInside } from "../tools/workspace-paths.js";
import { broughtAlong, projectSurface } from "./surface.js";
import { readRegularFile, readRegularText } from "../diagnostics/regular-file.js";

/** Text kept of a trusted file so that a later change can be shown as a diff; larger files keep only their digest. */
const KEPT_TEXT_BYTES = 64 * 1024;

export interface TrustedFile {
  sha256: string;
  /** The file's text when it was trusted (small text files only), for showing what changed. */
  text?: string;
}

export interface TrustedProject {
  /** The project root, absolute and real. */
  root: string;
  trustedAt: string;
  /** By path relative to the root. */
  files: Record<string, TrustedFile>;
}

interface TrustFile {
  version: 1;
  projects: TrustedProject[];
}

/** Where the user's trust is recorded. */
export function trustFilePath(env: NodeJS.ProcessEnv): string {
  return path.join(userConfigDir(env), "trusted-projects.json");
}

/** The projects the user trusted. A file that is not the JSON loopgraph writes is a ConfigError (nothing is trusted by accident). */
export function trustedProjects(env: NodeJS.ProcessEnv): TrustedProject[] {
  const file = trustFilePath(env);
  let text: string;
  try {
    text = readRegularText(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new ConfigError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    const data = JSON.parse(text) as TrustFile;
    if (data.version === 1 && Array.isArray(data.projects)) return data.projects;
  } catch {
    // reported below
  }
  throw new ConfigError(
    `${file} is not the list of trusted projects loopgraph writes: remove it and trust your projects again (loopgraph trust)`,
  );
}

function writeTrusted(env: NodeJS.ProcessEnv, projects: TrustedProject[]): void {
  const file = trustFilePath(env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const data: TrustFile = { version: 1, projects: [...projects].sort((a, b) => a.root.localeCompare(b.root)) };
  writeFileSync(`${file}.tmp`, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

export function sha256(file: string): string {
  return createHash("sha256").update(readRegularFile(file)).digest("hex");
}

function realRoot(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** A file as trusted now: its digest, and its text when small. */
function trustedFile(file: string): TrustedFile {
  const bytes = readRegularFile(file);
  const text = bytes.length <= KEPT_TEXT_BYTES && !bytes.includes(0) ? bytes.toString("utf8") : undefined;
  return { sha256: createHash("sha256").update(bytes).digest("hex"), ...(text !== undefined && { text }) };
}

/** What `loopgraph trust` would record for the project at `root`: each surface file's digest (and small text). */
export function surfaceRecord(root: string): TrustedProject {
  const real = realRoot(root);
  const files: Record<string, TrustedFile> = {};
  for (const file of projectSurface(real)) {
    files[path.relative(real, file)] = trustedFile(file);
  }
  return { root: real, trustedAt: new Date().toISOString(), files };
}

/**
 * What the project at `root` holds now that the user has not trusted as it is: its surface files
 * that are new, changed, or in a project never trusted (paths relative to the root), with the
 * surface as it is now and the user's last trust in it, for showing the difference.
 */
export function pendingTrust(
  root: string,
  env: NodeJS.ProcessEnv,
): { now: TrustedProject; previous?: TrustedProject; untrusted: string[] } {
  const now = surfaceRecord(root);
  const projects = trustedProjects(env);
  const previous = projects.find((project) => project.root === now.root);
  const untrusted = Object.keys(now.files).filter((name) => partReason(path.join(now.root, name), projects) !== undefined);
  return { now, ...(previous && { previous }), untrusted };
}

/** Records the user's trust in the project at `root` as it is now; returns the record, and the one it replaced. */
export function trustProject(root: string, env: NodeJS.ProcessEnv): { record: TrustedProject; previous?: TrustedProject } {
  const record = surfaceRecord(root);
  const projects = trustedProjects(env);
  const previous = projects.find((project) => project.root === record.root);
  writeTrusted(env, [...projects.filter((project) => project.root !== record.root), record]);
  return { record, ...(previous && { previous }) };
}

/**
 * Adds `files` of the project at `root`, as they are now, to what the user trusts there (a new
 * record when the project has none): for files loopgraph itself wrote at the user's request
 * (`init`), leaving everything else in the project as trusted, or not, as it was.
 */
export function trustFiles(
  root: string,
  files: readonly string[],
  env: NodeJS.ProcessEnv,
): { record: TrustedProject; previous?: TrustedProject } {
  const real = realRoot(root);
  const projects = trustedProjects(env);
  const previous = projects.find((project) => project.root === real);
  const record: TrustedProject = previous
    ? { ...previous, files: { ...previous.files } }
    : { root: real, trustedAt: new Date().toISOString(), files: {} };
  for (const file of files) {
    record.files[path.relative(real, realRoot(file))] = trustedFile(file);
  }
  writeTrusted(env, [...projects.filter((project) => project.root !== real), record]);
  return { record, ...(previous && { previous }) };
}

/**
 * A file the user trusts by name (`loopgraph trust flows/x.yaml`: a graph they run by path), with
 * what it brings along inside its project; the rest of the project stays as trusted, or not, as
 * it was. Returns the project's record, the one it replaced, and the files trusted.
 */
export function trustFile(file: string, env: NodeJS.ProcessEnv): { record: TrustedProject; previous?: TrustedProject; files: string[] } {
  const real = realRoot(file);
  const root = recordOf(real, trustedProjects(env))?.root ?? realRoot(projectRoot(path.dirname(real)));
  const files = broughtAlong(real, root).filter((part) => isInside(root, part));
  return { ...trustFiles(root, files, env), files: files.map((part) => path.relative(root, part)) };
}

/** Takes back the user's trust in the project at `root`; false when it was not trusted. */
export function revokeTrust(root: string, env: NodeJS.ProcessEnv): boolean {
  const real = realRoot(root);
  const projects = trustedProjects(env);
  const kept = projects.filter((project) => project.root !== real);
  if (kept.length === projects.length) return false;
  writeTrusted(env, kept);
  return true;
}

/** The trusted project that `file` belongs to: the deepest recorded root above it. */
function recordOf(file: string, projects: TrustedProject[]): TrustedProject | undefined {
  return projects.filter((project) => isInside(project.root, file)).sort((a, b) => b.root.length - a.root.length)[0];
}

/**
 * Why `file`, with everything it brings along (a graph's modules and subgraphs, a module's
 * imports, a config's scripts), may not take effect: a sentence, or undefined when it is
 * trusted. Files of loopgraph's own package are trusted.
 */
export function untrustedReason(file: string, env: NodeJS.ProcessEnv): string | undefined {
  const projects = trustedProjects(env);
  const real = realRoot(file);
  const own = recordOf(real, projects);
  const root = own?.root ?? projectRoot(path.dirname(real));
  for (const part of broughtAlong(real, root)) {
    const reason = partReason(part, projects);
    if (reason) return reason;
  }
  return undefined;
}

function partReason(file: string, projects: TrustedProject[]): string | undefined {
  const pkg = packageRoot();
  if (pkg && isInside(realRoot(pkg), file)) return undefined;
  const project = recordOf(file, projects);
  if (!project) return `${file} is in ${projectRoot(path.dirname(file))}, which you have not trusted`;
  const rel = path.relative(project.root, file);
  const recorded = project.files[rel];
  if (!recorded) return `${rel} is new in ${project.root} since you trusted it`;
  if (recorded.sha256 !== sha256(file)) return `${rel} changed in ${project.root} since you trusted it (${project.trustedAt.slice(0, 10)})`;
  return undefined;
}
