import type { Dirent } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import ignore from "ignore";
import { readRegularFileSync } from "./checked-file.js";
import { throwIfCancelled } from "./types.js";
import { realPathOf } from "./workspace-paths.js";
import { STATE_DIR } from "../project.js";

/** Never listed, globbed or searched below the directory a walk starts in: VCS data, dependencies, our own state. */
export const ALWAYS_SKIPPED_NAMES: ReadonlySet<string> = new Set([".git", "node_modules", STATE_DIR]);

/**
 * The ignore files, highest precedence first, as ripgrep reads them: `.rgignore`, `.ignore`,
 * `.gitignore`, then the repository's `.git/info/exclude`. The git ones count only inside a git
 * repository and stop at its root; the global git excludes file is not read.
 */
const IGNORE_SOURCES = [
  { file: ".rgignore", git: false },
  { file: ".ignore", git: false },
  { file: ".gitignore", git: true },
  { file: join(".git", "info", "exclude"), git: true },
] as const;

type Ignore = ignore.Ignore;

interface DirectoryRules {
  dir: string;
  hasGit: boolean;
  /** One matcher per IGNORE_SOURCES entry (same index), absent when the file does not exist. */
  matchers: (Ignore | undefined)[];
}

/** Larger ignore files are read up to here: rules past it do not count. */
const MAX_IGNORE_FILE_BYTES = 4 * 1024 * 1024;

/**
 * An ignore file's text, if it is a regular file: never waiting on a named pipe nor reading a
 * device without end (read-hazards.ts), nor following a link (as git does not).
 */
function readOptional(path: string): string | undefined {
  return readRegularFileSync(path, MAX_IGNORE_FILE_BYTES, { hardLinks: true })?.bytes.toString("utf8");
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

async function loadDirectoryRules(dir: string): Promise<DirectoryRules> {
  const [hasGit, ...texts] = await Promise.all([exists(join(dir, ".git")), ...IGNORE_SOURCES.map((s) => readOptional(join(dir, s.file)))]);
  return {
    dir,
    hasGit,
    matchers: texts.map((text) => (text === undefined ? undefined : ignore({ ignorecase: false }).add(text))),
  };
}

interface ApplicableMatcher {
  matcher: Ignore;
  /** The directory of the ignore file: its patterns are relative to it. */
  dir: string;
}

function posixRelative(from: string, to: string): string {
  return relative(from, to).split(sep).join("/");
}

/**
 * Decides which entries the workspace tools hide, with gitignore semantics (the `ignore`
 * package) arranged the way ripgrep arranges its ignore files: for each source in precedence
 * order, the nearest directory whose file has a matching rule decides (a `!` rule re-includes).
 * Ignore files of the workspace's ancestors count too, as they do for git and ripgrep.
 *
 * One instance serves one tool call: ignore files are read once per directory and cached.
 */
class IgnoreRules {
  private readonly chains = new Map<string, Promise<DirectoryRules[]>>();
  private readonly applicable = new Map<string, Promise<ApplicableMatcher[]>>();

  /** The rules of `dir` and of all its ancestors, nearest first. */
  private rulesFor(dir: string): Promise<DirectoryRules[]> {
    let chain = this.chains.get(dir);
    if (!chain) {
      const parent = dirname(dir);
      chain = Promise.all([loadDirectoryRules(dir), parent === dir ? [] : this.rulesFor(parent)]).then(([own, above]) => [own, ...above]);
      this.chains.set(dir, chain);
    }
    return chain;
  }

  /** The matchers that count for the entries of `dir`, in the order they are consulted. */
  private matchersFor(dir: string): Promise<ApplicableMatcher[]> {
    let matchers = this.applicable.get(dir);
    if (!matchers) {
      matchers = this.rulesFor(dir).then((chain) => {
        const inRepository = chain.some((rules) => rules.hasGit);
        return IGNORE_SOURCES.flatMap((source, index) => {
          if (source.git && !inRepository) return [];
          const found: ApplicableMatcher[] = [];
          for (const rules of chain) {
            const matcher = rules.matchers[index];
            if (matcher) found.push({ matcher, dir: rules.dir });
            if (source.git && rules.hasGit) break;
          }
          return found;
        });
      });
      this.applicable.set(dir, matchers);
    }
    return matchers;
  }

  /**
   * Whether `path` (absolute) is ignored. `disabled` matchers are skipped: those that exclude a
   * directory the walk entered anyway (see `walkFiles`).
   */
  async isIgnored(path: string, isDirectory: boolean, disabled: ReadonlySet<Ignore> = new Set()): Promise<boolean> {
    for (const { matcher, dir } of await this.matchersFor(dirname(path))) {
      if (disabled.has(matcher)) continue;
      const verdict = matcher.test(posixRelative(dir, path) + (isDirectory ? "/" : ""));
      if (verdict.ignored) return true;
      if (verdict.unignored) return false;
    }
    return false;
  }

  /**
   * The matchers that exclude the directory `path` or one of its ancestors. The `ignore` package
   * applies a directory's exclusion to everything below it (as git does), so inside a directory
   * entered although some matcher excludes it — the directory a tool was pointed at, or one
   * re-included by a nearer `!` rule — those matchers must be set aside.
   */
  async excludingMatchers(path: string): Promise<Ignore[]> {
    const excluding: Ignore[] = [];
    for (const { matcher, dir } of await this.matchersFor(dirname(path))) {
      if (matcher.test(`${posixRelative(dir, path)}/`).ignored) excluding.push(matcher);
    }
    return excluding;
  }
}

export interface VisibleEntries {
  /** Sorted by name. */
  entries: Dirent[];
  /** How many entries ignore rules or ALWAYS_SKIPPED_NAMES hid. */
  hidden: number;
}

function byName(a: Dirent, b: Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

async function visibleEntries(rules: IgnoreRules, dir: string, disabled: ReadonlySet<Ignore>): Promise<VisibleEntries> {
  const all = (await readdir(dir, { withFileTypes: true })).sort(byName);
  const verdicts = await Promise.all(
    all.map((entry) => ALWAYS_SKIPPED_NAMES.has(entry.name) || rules.isIgnored(join(dir, entry.name), entry.isDirectory(), disabled)),
  );
  const entries = all.filter((_, index) => !verdicts[index]);
  return { entries, hidden: all.length - entries.length };
}

/** The entries of directory `dir` (absolute) that the tools show, sorted by name. */
export async function listVisibleEntries(dir: string): Promise<VisibleEntries> {
  const rules = new IgnoreRules();
  return visibleEntries(rules, dir, new Set(await rules.excludingMatchers(dir)));
}

/**
 * For each of `paths` (absolute, below the directory `root`; files, or with `directories`
 * folders): whether `walkFiles(…, root)` would list it (go into it), i.e. no ignore rule and no
 * always-skipped folder hides it or a folder above it. For checking a few paths found by other
 * means without walking the whole tree.
 */
export async function areWalked(root: string, paths: readonly string[], directories = false): Promise<boolean[]> {
  return walkedChecker(root)(paths, directories);
}

/** `areWalked` for several batches of paths below `root`, the ignore files read once. */
export function walkedChecker(root: string): (paths: readonly string[], directories?: boolean) => Promise<boolean[]> {
  const rules = new IgnoreRules();
  let atRoot: Promise<ReadonlySet<Ignore>> | undefined;
  return async (paths, directories = false) => {
    atRoot ??= rules.excludingMatchers(root).then((excluding) => new Set(excluding));
    const disabledAtRoot = await atRoot;
    return Promise.all(
      paths.map(async (path) => {
        let disabled: ReadonlySet<Ignore> = disabledAtRoot;
        const parts = relative(root, path).split(sep);
        let current = root;
        for (const [index, part] of parts.entries()) {
          current = join(current, part);
          const isDirectory = directories || index < parts.length - 1;
          if (ALWAYS_SKIPPED_NAMES.has(part) || (await rules.isIgnored(current, isDirectory, disabled))) return false;
          if (isDirectory) {
            const excluding = await rules.excludingMatchers(current);
            if (excluding.length > 0) disabled = new Set([...disabled, ...excluding]);
          }
        }
        return true;
      }),
    );
  };
}

export interface WalkedFile {
  absolute: string;
  /** Workspace-relative, `/`-separated. */
  relative: string;
  /** Symlinks are listed, never followed. */
  isSymlink: boolean;
}

/**
 * Every file and symlink below `root` (absolute, inside the workspace) that the ignore rules
 * leave visible, depth first with each directory's entries sorted by name, so that `a/x` comes
 * before `a.txt`. `root` itself is never filtered: a tool pointed at an ignored directory (say
 * `node_modules/zod`) searches it. A file `root` yields itself.
 */
export async function* walkFiles(workspace: string, root: string, signal?: AbortSignal): AsyncGenerator<WalkedFile> {
  const walk: Walk = { workspace: realPathOf(resolve(workspace)), rules: new IgnoreRules(), signal };
  const rootStats = await lstat(root);
  if (rootStats.isDirectory()) {
    yield* walkDirectory(walk, root, new Set(await walk.rules.excludingMatchers(root)));
  } else if (rootStats.isFile() || rootStats.isSymbolicLink()) {
    yield { absolute: root, relative: posixRelative(walk.workspace, root), isSymlink: rootStats.isSymbolicLink() };
  }
}

interface Walk {
  /** Real path of the workspace root. */
  workspace: string;
  rules: IgnoreRules;
  signal: AbortSignal | undefined;
}

async function* walkDirectory(walk: Walk, dir: string, disabled: ReadonlySet<Ignore>): AsyncGenerator<WalkedFile> {
  throwIfCancelled(walk.signal);
  const { entries } = await visibleEntries(walk.rules, dir, disabled);
  for (const entry of entries) {
    const absolute = join(dir, entry.name);
    if (entry.isDirectory()) {
      const excluding = await walk.rules.excludingMatchers(absolute);
      yield* walkDirectory(walk, absolute, excluding.length ? new Set([...disabled, ...excluding]) : disabled);
    } else if (entry.isFile() || entry.isSymbolicLink()) {
      yield { absolute, relative: posixRelative(walk.workspace, absolute), isSymlink: entry.isSymbolicLink() };
    }
  }
}
