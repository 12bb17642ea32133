import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, type Dirent, lstatSync, readdirSync, readFileSync, statSync, type Stats } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { isUtf8 } from "node:buffer";
import { delimiter, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import picomatch from "picomatch";
import { z } from "zod";
import { hazardMessage, watchForReadHazards } from "../git/read-hazards.js";
import { readRegularFileSync, refusal } from "./checked-file.js";
import { ALWAYS_SKIPPED_NAMES, areWalked, walkedChecker, walkFiles } from "./ignore-rules.js";
import { throwIfCancelled, ToolError, type ToolContext, type ToolDefinition } from "./types.js";
import { realPathOf, statInWorkspace } from "./workspace-paths.js";

/*
 * Two engines, one result. Both search the files glob and list_dir show (ignore rules,
 * always-skipped folders below the starting directory, dotfiles included, symlinks never
 * followed, special files skipped) and leave out, with a note, files over MAX_FILE_BYTES and
 * files with more than one hard link. The in-process engine gets them from `walkFiles`; ripgrep
 * walks the directory itself, told to apply the same rules (see `walkArgs`), in one process:
 * its matches are streamed from its plain output (read so that no name or content can be
 * misread: see `eachRipgrepRecord`) and it is killed once the result limit is reached (see
 * `ripgrepDirectory`). Both skip any file containing a NUL byte, split lines on LF with a CR
 * before it taken as part of the line ending (so `$` matches there), and report lines in walk
 * order. Their outputs are therefore identical except where the regex dialects differ:
 * - translated for JavaScript: `(?P<name>` groups and a leading `(?i)`;
 * - in-process only: look-around and backreferences;
 * - ripgrep only: POSIX classes (`[[:alpha:]]`), `\pL`-style escapes, Unicode-aware `\d` `\w` `\b`
 *   (ASCII in JavaScript), `.` matching U+2028/U+2029;
 * - invalid UTF-8 never matches `.` in ripgrep but is U+FFFD in-process;
 * and in one note: when the results are capped, ripgrep names the files left out up to where it
 * stopped, the in-process engine (which lists every file first) all of them.
 * The in-process engine runs on the main thread, so a catastrophically backtracking pattern can
 * stall it; ripgrep's engine cannot backtrack.
 */

const MAX_MATCHES = 500;
const MAX_FILE_BYTES = 10 * 1024 * 1024;
const MAX_SHOWN_LINE_CHARS = 500;
/** `LOOPGRAPH_RG=/path/to/rg` picks the ripgrep binary; `LOOPGRAPH_RG=off` forces the in-process engine. */
const RIPGREP_ENV = "LOOPGRAPH_RG";

interface GrepMatch {
  file: string;
  line: number;
  text: string;
}

interface GrepQuery {
  pattern: string;
  caseInsensitive: boolean;
}

/** Searches `files` (workspace-relative, in order) and returns their matching lines, stopping once `limit` is reached or passed. */
type GrepEngine = (query: GrepQuery, files: string[], ctx: ToolContext, limit: number) => Promise<GrepMatch[]>;

function matchOf(file: string, line: number, rawText: string): GrepMatch {
  const text = rawText.endsWith("\r") ? rawText.slice(0, -1) : rawText;
  if (text.length <= MAX_SHOWN_LINE_CHARS) return { file, line, text };
  return { file, line, text: `${text.slice(0, MAX_SHOWN_LINE_CHARS)}... [${text.length - MAX_SHOWN_LINE_CHARS} more characters]` };
}

// ---------------------------------------------------------------- ripgrep

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The ripgrep binary to use: `LOOPGRAPH_RG` when set (`off` or empty: none), else `rg` on the PATH. */
export function findRipgrep(env: NodeJS.ProcessEnv): string | undefined {
  const override = env[RIPGREP_ENV];
  if (override !== undefined) return override === "" || override === "off" ? undefined : override;
  return programOnPath("rg", env);
}

function programOnPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  return (env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find(isExecutableFile);
}

/**
 * What one ripgrep run walks: `rgPath` (workspace-relative, searched from the workspace's real
 * path) and the file names `glob` keeps.
 */
interface Scope {
  /** Real path of the workspace: the directory ripgrep runs in. */
  cwd: string;
  /** The directory searched, workspace-relative ("." for the root). */
  rgPath: string;
  glob: string | undefined;
  inGlob: (relative: string) => boolean;
}

/**
 * A glob ripgrep can apply itself, as a file type: no slash (so it matches file names, as
 * picomatch's `basename` does) and nothing beyond `*`, `?` and plain name characters. Types,
 * unlike `--glob`, never override the ignore files. Other globs are applied here only.
 */
const SIMPLE_NAME_GLOB = /^[A-Za-z0-9_.*?-]+$/;

/**
 * The walk both ripgrep runs share, the same files as `walkFiles` lists: no config file,
 * dotfiles included, `.rgignore`/`.ignore`/`.gitignore` (inside a repository) and
 * `.git/info/exclude` of the directories and their ancestors, not the global git excludes, the
 * always-skipped folders left out below the root, symlinks never followed (ripgrep's default:
 * never pass `--follow`), special files skipped.
 */
function walkArgs(scope: Scope): string[] {
  const args = ["--no-config", "--hidden", "--no-ignore-global", ...[...ALWAYS_SKIPPED_NAMES].map((name) => `--glob=!${name}`)];
  if (scope.glob !== undefined && SIMPLE_NAME_GLOB.test(scope.glob))
    args.push(`--type-add=loopgraphglob:${scope.glob}`, "--type=loopgraphglob");
  return args;
}

/** ripgrep's environment: none of ours (it is started by its path, and `--no-config` reads no config file). */
const RIPGREP_ENVIRONMENT: NodeJS.ProcessEnv = {};

/** Walk order (each directory's entries sorted by name, depth first), as `walkFiles` and `rg --sort path` list files. */
function compareWalkOrder(a: string, b: string): number {
  const left = a.split("/");
  const right = b.split("/");
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    if (left[i] !== right[i]) return left[i]! < right[i]! ? -1 : 1;
  }
  return left.length - right.length;
}

/**
 * Reads ripgrep's plain output as `startSearch` asks for it (`--heading --with-filename
 * --line-number --null`), calling `onFile` with each file's raw path, `onMatch` with each of its
 * matching lines (raw, without the LF), `onBinary` when the file turned out binary after its
 * first matches and `onFileEnd` when the file's lines are over; resolves when the stream is
 * closed (ended or destroyed). The output cannot be misread, whatever the names and contents:
 * a file's heading is its path and a NUL (a path holds no NUL, and may hold LFs); then each
 * matching line is `N:text` (the line number first; the text holds no LF); a file found binary
 * after its first matches ends with ripgrep's warning, which starts with the file's path, and
 * every path ripgrep prints starts with `./` (startRipgrep): so it is the one line of a file
 * not starting with a digit; files are parted by an empty line (a lone CR before the LF in a
 * walk-ordered search with `--crlf`), which nothing else is. A file named on the command line
 * and binary before its first match gets only a warning, without a heading: nothing. A long
 * line is joined once, when complete.
 */
function eachRipgrepRecord(
  stream: Readable,
  on: { onFile(raw: Buffer): void; onMatch(line: Buffer): void; onBinary(): void; onFileEnd(): void },
): Promise<void> {
  let inFile = false;
  let pending: Buffer[] = [];
  const record = (piece: Buffer) => {
    if (!inFile) {
      inFile = true;
      on.onFile(piece);
    } else if (piece.length > 0 && piece[0]! >= 0x30 && piece[0]! <= 0x39) on.onMatch(piece);
    else if (piece.length === 0 || (piece.length === 1 && piece[0] === 0x0d)) {
      inFile = false;
      on.onFileEnd();
    } else on.onBinary();
  };
  stream.on("data", (chunk: Buffer) => {
    let start = 0;
    for (let end = chunk.indexOf(inFile ? 0x0a : 0, start); end !== -1; end = chunk.indexOf(inFile ? 0x0a : 0, start)) {
      const piece = pending.length > 0 ? Buffer.concat([...pending, chunk.subarray(start, end)]) : chunk.subarray(start, end);
      pending = [];
      start = end + 1;
      record(piece);
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  return new Promise((resolve) =>
    stream.on("close", () => {
      if (inFile) on.onFileEnd();
      resolve();
    }),
  );
}

/** A matching line as ripgrep prints it (`N:text`, raw, without the LF): its line number and text. */
function parseMatchLine(line: Buffer): { number: number; text: string } {
  const colon = line.indexOf(0x3a);
  return { number: Number(line.toString("latin1", 0, colon)), text: line.toString("utf8", colon + 1) };
}

/** Whether the file at `raw` (absolute) holds a NUL byte, as ripgrep sees binary files; true when it cannot be read. */
function holdsNul(raw: Buffer): boolean {
  const read = readRegularFileSync(raw, MAX_FILE_BYTES);
  return !read || read.bytes.includes(0);
}

/** Why a file is left out, from its lstat: refused (see `refusal`), too large, or not a regular file at all. */
type Verdict = "searched" | "refused" | "tooLarge" | "skipped";

function verdictOf(stats: Stats | undefined, relative: string): Verdict {
  // Symlinks are never followed and special files never opened: neither is searched nor noted (as in walkFiles' users).
  if (!stats || !stats.isFile()) return "skipped";
  if (refusal(stats, relative) !== undefined) return "refused";
  return stats.size > MAX_FILE_BYTES ? "tooLarge" : "searched";
}

/** The lstat of `raw`, a path below folder `dir`, both as bytes: named by a string when they are UTF-8 (twice as fast), else by the bytes. */
function lstatRaw(dir: Buffer, raw: Buffer): Stats | undefined {
  const path = isUtf8(dir) && isUtf8(raw) ? `${dir.toString("utf8")}/${raw.toString("utf8")}` : Buffer.concat([dir, Buffer.from("/"), raw]);
  return lstatSync(path, { throwIfNoEntry: false });
}

interface RipgrepRun {
  child: ChildProcess;
  /** Resolves once the process has started (or failed to). */
  spawned: Promise<void>;
  /** Resolves once the process is gone, with its exit code (null when killed) and stderr. */
  closed: Promise<{ code: number | null; stderr: string }>;
  /**
   * Kills it (SIGKILL, if still running) and stops reading its output, without waiting: a
   * killed process is gone as soon as the kernel has torn it down, and waiting for that would
   * only delay the result.
   */
  stop(): void;
}

function startRipgrep(rg: string, args: string[], scope: Scope, ctx: ToolContext): RipgrepRun {
  // `./` first, so that every path ripgrep prints starts with it (see eachRipgrepRecord).
  const path = scope.rgPath === "." ? "." : `./${scope.rgPath}`;
  const child = spawn(rg, [...args, "--", path], { cwd: scope.cwd, env: RIPGREP_ENVIRONMENT, stdio: ["ignore", "pipe", "pipe"] });
  const onAbort = () => child.kill();
  ctx.signal?.addEventListener("abort", onAbort);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    if (stderr.length < 10_000) stderr += chunk;
  });
  let stoppedFor: string | undefined;
  const endWatch = watchForReadHazards(scope.cwd, (hazard) => {
    stoppedFor = hazardMessage("ripgrep", scope.cwd, hazard);
    child.kill("SIGKILL");
  });
  const closed = new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    child.on("error", (error) => {
      endWatch();
      ctx.signal?.removeEventListener("abort", onAbort);
      reject(new ToolError("failed", `could not run ripgrep (${rg}): ${error.message}`));
    });
    child.on("close", (code) => {
      endWatch();
      ctx.signal?.removeEventListener("abort", onAbort);
      if (stoppedFor !== undefined) reject(new ToolError("special_file", stoppedFor));
      else resolve({ code, stderr });
    });
  });
  // Marked handled: a caller that stops reading early never awaits `closed`; one that does gets its error.
  closed.catch(() => undefined);
  const spawned = new Promise<void>((resolve) => {
    child.once("spawn", resolve);
    child.once("error", () => resolve());
  });
  return {
    child,
    spawned,
    closed,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      child.stdout?.destroy();
    },
  };
}

interface FileMatches {
  file: string;
  matches: GrepMatch[];
}

interface SearchOutcome {
  /** Files with matches, in the order ripgrep finished them. */
  files: FileMatches[];
  /** Set when the search stopped at `limit` matches: the file that reached it. */
  stoppedAt?: string;
  /** What the lstat of each file with matches (in the glob) found, when it began. */
  verdicts: Map<string, Verdict>;
}

interface Search {
  /** Resolves when the search reached `limit` (ripgrep is then stopped) or ripgrep finished. */
  outcome: Promise<SearchOutcome>;
  /** Resolves when ripgrep reports its first file with a match. */
  firstMatch: Promise<void>;
  /** Resolves once `count` matching lines are reported (in files not yet found binary). */
  found(count: number): Promise<void>;
  /** Resolves once ripgrep has started. */
  spawned: Promise<void>;
  /** ripgrep's process id, once started. */
  readonly pid: number | undefined;
  /** Stops ripgrep; `outcome` then resolves with what was in. */
  stop(): void;
}

/** What a search prints: see eachRipgrepRecord. */
const SEARCH_OUTPUT = ["--heading", "--with-filename", "--line-number", "--null", "--color=never"];

/**
 * One ripgrep search over the scope, its plain output streamed (see eachRipgrepRecord: far less
 * for ripgrep to print and for this process to read than `--json`). A file's matches count only
 * if the file is one the tools read (checked with lstat when its heading comes: a regular file
 * with one link, within MAX_FILE_BYTES), and once the file is over without turning out binary (a
 * NUL after its first matches). The file whose matches reach `limit` is not waited for: it is
 * read here for a NUL instead (ripgrep's next heading may be far away). ripgrep is not given
 * `--max-filesize`: it would stat every file for it (a quarter slower), while files that large
 * are rare and the output of one is passed over undecoded here. Stops ripgrep once `limit`
 * matches are in. `sorted` walks in walk order (one thread); otherwise ripgrep uses all cores
 * and finishes files in any order.
 */
function startSearch(rg: string, query: GrepQuery, scope: Scope, ctx: ToolContext, limit: number, sorted: boolean): Search {
  const args = [
    ...SEARCH_OUTPUT,
    "--no-mmap",
    "--encoding=none",
    "--crlf",
    query.caseInsensitive ? "--ignore-case" : "--case-sensitive",
    ...(sorted ? ["--sort=path"] : []),
    ...walkArgs(scope),
    "--regexp",
    query.pattern,
  ];
  const run = startRipgrep(rg, args, scope, ctx);
  const cwd = Buffer.from(scope.cwd);
  const outcome: SearchOutcome = { files: [], verdicts: new Map() };
  let total = 0;
  let found = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  let printed = false;
  let reachedLimit: (() => void) | undefined;
  let matched: (() => void) | undefined;
  const firstMatch = new Promise<void>((resolve) => (matched = resolve));
  /** The file whose lines come now (ripgrep prints each file's together); no matches kept for a file left out. */
  let current: { file: string; raw: Buffer; matches: GrepMatch[] | null } | undefined;
  const complete = (file: string, matches: GrepMatch[]) => {
    outcome.files.push({ file, matches });
    total += matches.length;
    if (total < limit) return;
    outcome.stoppedAt = file;
    run.stop();
    reachedLimit?.();
  };
  const read = eachRipgrepRecord(run.child.stdout!, {
    onFile(printedPath) {
      printed = true;
      if (outcome.stoppedAt !== undefined) return;
      matched?.();
      const raw = printedPath[0] === 0x2e && printedPath[1] === 0x2f ? printedPath.subarray(2) : printedPath;
      const file = raw.toString("utf8");
      const verdict = scope.inGlob(file) ? verdictOf(lstatRaw(cwd, raw), file) : undefined;
      if (verdict) outcome.verdicts.set(file, verdict);
      current = { file, raw, matches: verdict === "searched" ? [] : null };
    },
    onMatch(line) {
      // The lines of a file left out are passed over undecoded.
      if (outcome.stoppedAt !== undefined || !current?.matches) return;
      const { number, text } = parseMatchLine(line);
      current.matches.push(matchOf(current.file, number, text));
      found++;
      for (const waiter of waiting) if (found === waiter.count) waiter.resolve();
      if (total + current.matches.length < limit) return;
      const { file, raw, matches } = current;
      current = undefined;
      if (!holdsNul(Buffer.concat([cwd, Buffer.from("/"), raw]))) complete(file, matches);
    },
    onBinary() {
      if (current) current.matches = null;
    },
    onFileEnd() {
      const ended = current;
      current = undefined;
      if (outcome.stoppedAt === undefined && ended?.matches && ended.matches.length > 0) complete(ended.file, ended.matches);
    },
  });
  const finished = Promise.all([run.closed, read]).then(([{ code, stderr }]) => {
    // A bad pattern stops ripgrep before it prints anything; unreadable files only add warnings.
    if (outcome.stoppedAt === undefined && code === 2 && !printed) {
      throw new ToolError("invalid_arguments", `invalid pattern: ${stderr.trim()}`);
    }
  });
  const stopped = new Promise<void>((resolve) => (reachedLimit = resolve));
  let stop: () => void = () => undefined;
  const stoppedFromOutside = new Promise<void>((resolve) => {
    stop = () => {
      run.stop();
      resolve();
    };
  });
  const result = Promise.race([finished, stopped, stoppedFromOutside]).then(() => {
    throwIfCancelled(ctx.signal);
    return outcome;
  });
  // Once stopped, a failure reported by the dying process is of no interest; a caller that
  // abandons the search does not wait for `outcome`.
  finished.catch(() => undefined);
  result.catch(() => undefined);
  return {
    outcome: result,
    firstMatch,
    found: (count) => (count <= found ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ count, resolve }))),
    spawned: run.spawned,
    get pid() {
      return run.child.pid;
    },
    stop,
  };
}

/** The files of the scope grep does not search, and says so. */
interface LeftOut {
  tooLarge: string[];
  /** Files the file tools refuse (hard-linked: another link may be outside the workspace). */
  refused: string[];
}

interface Listing {
  /** The files left out, in walk order. */
  leftOut(): Promise<LeftOut>;
  stop(): void;
}

/** Files lstat-ed per turn of the event loop while a listing runs beside a search. */
const STAT_SLICE = 256;

/** In walk order, the files of `found` noted. */
function leftOutOf(found: readonly { file: string; verdict: Verdict }[]): LeftOut {
  const ordered = [...found].sort((a, b) => compareWalkOrder(a.file, b.file));
  return {
    tooLarge: ordered.filter((entry) => entry.verdict === "tooLarge").map((entry) => entry.file),
    refused: ordered.filter((entry) => entry.verdict === "refused").map((entry) => entry.file),
  };
}

/**
 * Lists the scope with `rg --files` (the same walk as the search) and lstats each file, for the
 * notes on files not searched: these must not depend on what a file holds, so every file is
 * checked, not only those with matches. The files are checked while the search runs (a slice per
 * turn of the event loop, so the search's output is never held up for long).
 */
function listLeftOut(rg: string, scope: Scope, ctx: ToolContext): Listing {
  const run = startRipgrep(rg, ["--files", "--null", ...walkArgs(scope)], scope, ctx);
  const cwd = Buffer.from(scope.cwd);
  /** Listed paths, workspace-relative, raw and as text. */
  const listed: { raw: Buffer; file: string }[] = [];
  const found: { file: string; verdict: Verdict }[] = [];
  let checked = 0;
  let background: NodeJS.Immediate | undefined;
  const checkUpTo = (end: number) => {
    for (; checked < end; checked++) {
      const { raw, file } = listed[checked]!;
      if (!scope.inGlob(file)) continue;
      const verdict = verdictOf(lstatRaw(cwd, raw), file);
      if (verdict === "refused" || verdict === "tooLarge") found.push({ file, verdict });
    }
  };
  const checkInBackground = () => {
    background = undefined;
    checkUpTo(Math.min(listed.length, checked + STAT_SLICE));
    if (checked < listed.length) background = setImmediate(checkInBackground);
  };
  let rest = Buffer.alloc(0);
  run.child.stdout!.on("data", (chunk: Buffer) => {
    const data = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk;
    let start = 0;
    for (let end = data.indexOf(0, start); end !== -1; end = data.indexOf(0, start)) {
      const raw = data.subarray(start, end);
      start = end + 1;
      const relative = raw[0] === 0x2e && raw[1] === 0x2f ? raw.subarray(2) : raw;
      listed.push({ raw: Buffer.from(relative), file: relative.toString("utf8") });
    }
    rest = Buffer.from(data.subarray(start));
    if (background === undefined && checked < listed.length) background = setImmediate(checkInBackground);
  });
  const stop = () => {
    if (background !== undefined) clearImmediate(background);
    background = undefined;
    run.stop();
  };
  return {
    async leftOut() {
      const { code, stderr } = await run.closed;
      stop();
      throwIfCancelled(ctx.signal);
      if (code === 2 && listed.length === 0) throw new ToolError("failed", `ripgrep could not list the files: ${stderr.trim()}`);
      checkUpTo(listed.length);
      return leftOutOf(found);
    },
    stop,
  };
}

/** The entries of folder `dir` (raw path), sorted by name as ripgrep sorts them; none when it cannot be read. */
function readFolder(dir: Buffer): Dirent<Buffer>[] {
  try {
    return readdirSync(dir, { withFileTypes: true, encoding: "buffer" }).sort((a, b) => Buffer.compare(a.name, b.name));
  } catch {
    return [];
  }
}

/** Files a walk from here (walkLeftOut) lstats before `find` is left to list the rest. */
const WALK_FILES_MAX = 5_000;

/**
 * The notes for the files of the scope up to `upTo` in walk order (all without it), without
 * another process: the folders read from here in walk order (each one's entries sorted by name,
 * depth first; the always-skipped folders pruned, and each folder gone into checked against the
 * ignore rules first), each regular file lstat-ed, until the walk is past `upTo`; the few files
 * found left out are checked against the ignore rules too (`areWalked`, the same rules as
 * ripgrep's walk). Undefined when the walk would lstat more than WALK_FILES_MAX files.
 */
async function walkLeftOut(
  scope: Scope,
  upTo: string | undefined,
  ctx: ToolContext,
  known: ReadonlyMap<string, Verdict>,
): Promise<LeftOut | undefined> {
  const root = join(scope.cwd, scope.rgPath);
  const areWalkedHere = walkedChecker(root);
  const found: { file: string; verdict: Verdict; absolute: string; reported: boolean }[] = [];
  /** The folders (workspace-relative) of the files ripgrep reported, and their ancestors. */
  const knownFolders = new Set<string>();
  for (const file of known.keys()) {
    for (let slash = file.indexOf("/"); slash !== -1; slash = file.indexOf("/", slash + 1)) knownFolders.add(file.slice(0, slash));
  }
  let files = 0;
  /** Walks `dir` (raw absolute path; `relative` its workspace-relative path); true once past `upTo` or over the limit. */
  const walk = async (dir: Buffer, relative: string): Promise<boolean> => {
    throwIfCancelled(ctx.signal);
    // A folder that cannot be read (or is gone) is passed over, as ripgrep passes over it.
    const entries = readFolder(dir);
    const path = (name: Buffer) => Buffer.concat([dir, Buffer.from("/"), name]);
    // An entry past `upTo` in walk order: in a folder holding it, one named after its part below the folder.
    const limit = upTo?.startsWith(relative) ? upTo.slice(relative.length).split("/")[0]! : undefined;
    const isPast = (name: string) => limit !== undefined && name > limit;
    const folders = entries.filter((entry) => entry.isDirectory() && !ALWAYS_SKIPPED_NAMES.has(entry.name.toString("utf8")));
    // A folder holding a file ripgrep reported is one its walk went into: only the others are checked,
    // and not those past `upTo`, which the walk never goes into.
    const unknown = folders.filter((entry) => {
      const name = entry.name.toString("utf8");
      return !knownFolders.has(`${relative}${name}`) && !isPast(name);
    });
    const verdicts =
      unknown.length === 0
        ? []
        : await areWalkedHere(
            unknown.map((entry) => path(entry.name).toString("utf8")),
            true,
          );
    const walked = new Set(folders.filter((entry) => !unknown.includes(entry) || verdicts[unknown.indexOf(entry)]));
    for (const entry of entries) {
      const name = entry.name.toString("utf8");
      if (isPast(name)) return true;
      const file = `${relative}${name}`;
      if (walked.has(entry)) {
        if (await walk(path(entry.name), `${file}/`)) return true;
      } else if (entry.isFile() && scope.inGlob(file)) {
        if (++files > WALK_FILES_MAX) return true;
        const verdict = known.get(file) ?? verdictOf(lstatRaw(dir, entry.name), file);
        if (verdict === "refused" || verdict === "tooLarge")
          found.push({ file, verdict, absolute: path(entry.name).toString("utf8"), reported: known.has(file) });
      }
    }
    return false;
  };
  await walk(Buffer.from(root), scope.rgPath === "." ? "" : `${scope.rgPath}/`);
  if (files > WALK_FILES_MAX) return undefined;
  // Files ripgrep reported are in its walk; the others are checked.
  const unknown = found.filter((entry) => !entry.reported);
  const walked = unknown.length === 0 ? [] : await areWalkedHere(unknown.map((entry) => entry.absolute));
  return leftOutOf(found.filter((entry) => entry.reported || walked[unknown.indexOf(entry)]));
}

/**
 * The notes for a whole scope without an lstat from here per file: `find` (which lstats in C)
 * lists the regular files with more than one link or over MAX_FILE_BYTES, the always-skipped
 * folders pruned, and those few are checked against the ignore rules (`areWalked`, the same
 * rules as ripgrep's walk). Without `find` on the PATH, the `rg --files` listing.
 */
function findLeftOut(rg: string, scope: Scope, ctx: ToolContext): Listing {
  const find = programOnPath("find", ctx.env);
  if (!find) return listLeftOut(rg, scope, ctx);
  const pruned = [...ALWAYS_SKIPPED_NAMES].flatMap((name, index) => [...(index > 0 ? ["-o"] : []), "-name", name]);
  // `./` first: find takes an argument starting with `-` for an expression.
  const start = scope.rgPath === "." ? "." : `./${scope.rgPath}`;
  const args = [
    start,
    "-mindepth",
    "1",
    "(",
    ...pruned,
    ")",
    "-prune",
    "-o",
    "-type",
    "f",
    "(",
    "-links",
    "+1",
    "-o",
    "-size",
    `+${MAX_FILE_BYTES}c`,
    ")",
    "-print0",
  ];
  const child = spawn(find, args, { cwd: scope.cwd, stdio: ["ignore", "pipe", "ignore"] });
  const onAbort = () => child.kill("SIGKILL");
  ctx.signal?.addEventListener("abort", onAbort);
  const chunks: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<void>((resolve, reject) => {
    child.on("error", (error) => reject(new ToolError("failed", `could not run find (${find}): ${error.message}`)));
    child.on("close", () => resolve());
  }).finally(() => ctx.signal?.removeEventListener("abort", onAbort));
  // Marked handled: `leftOut` awaits it when asked; an abandoned listing is not.
  closed.catch(() => undefined);
  return {
    async leftOut() {
      await closed;
      throwIfCancelled(ctx.signal);
      const cwd = Buffer.from(scope.cwd);
      const found = Buffer.concat(chunks)
        .toString("latin1")
        .split("\0")
        .filter(Boolean)
        .map((latin1) => {
          const raw = Buffer.from(latin1.startsWith("./") ? latin1.slice(2) : latin1, "latin1");
          return { raw, file: raw.toString("utf8") };
        })
        .filter(({ file }) => scope.inGlob(file))
        .map(({ raw, file }) => ({ file, raw, verdict: verdictOf(lstatRaw(cwd, raw), file) }))
        .filter(({ verdict }) => verdict === "refused" || verdict === "tooLarge");
      const root = join(scope.cwd, scope.rgPath);
      const walked = await areWalked(
        root,
        found.map(({ file }) => join(scope.cwd, file)),
      );
      return leftOutOf(found.filter((_, index) => walked[index]));
    },
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}

/**
 * How much CPU time the walk-ordered search may use before the search on all cores replaces it.
 * Most searches end sooner: those of a small tree, and those that find the first `limit`
 * matches early in the walk; a search over a large tree that finds few matches is then twice as
 * fast. Counted in ripgrep's own CPU time where Linux tells it (/proc/PID/schedstat), so that a
 * busy machine, which slows the process, does not end its head start early; elsewhere in wall
 * time from its start.
 */
const SORTED_HEAD_START_MS = 15;

/** When the walk-ordered search has found no match within this much CPU time, the all-cores one replaces it. */
const ALL_CORES_AFTER_MS = 5;

/**
 * A walk-ordered search that has found this many matches by the end of its head start goes on
 * to the limit: the all-cores search would likely reach the limit too, and then this one would
 * have to run again.
 */
const COMMITTED_MATCHES = 50;

/** How often a head start looks at the CPU time ripgrep has used. */
const CPU_POLL_MS = 2;

/** The CPU time (ms) process `pid` has used so far, from Linux's /proc; undefined where it cannot be read. */
function cpuTimeMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/**
 * Resolves once process `pid` has used `ms` of CPU time since this call (or, where that cannot
 * be read, after `ms` of wall time), unless cleared first.
 */
function headStart(pid: number | undefined, ms: number): { elapsed: Promise<void>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const start = cpuTimeMs(pid);
  const elapsed = new Promise<void>((resolve) => {
    if (start === undefined) {
      timer = setTimeout(resolve, ms);
      return;
    }
    timer = setInterval(() => {
      const used = cpuTimeMs(pid);
      // Gone: its search's outcome settles the race.
      if (used !== undefined && used - start >= ms) resolve();
    }, CPU_POLL_MS);
  });
  return { elapsed, clear: () => clearInterval(timer) };
}

/**
 * Runs a walk-ordered search, then lists the files left out up to where it stopped (from here:
 * walkLeftOut, or `find` for a whole large scope); undefined (the search stopped) when `giveUp`
 * comes first.
 */
async function sortedSearch(
  rg: string,
  query: GrepQuery,
  scope: Scope,
  ctx: ToolContext,
  limit: number,
  giveUp?: (started: Search) => Promise<void>,
) {
  const search = startSearch(rg, query, scope, ctx, limit, true);
  const outcome = await (giveUp ? Promise.race([search.outcome, giveUp(search).then(() => undefined)]) : search.outcome);
  if (outcome === undefined) {
    search.stop();
    return undefined;
  }
  const { stoppedAt } = outcome;
  let leftOut = await walkLeftOut(scope, stoppedAt, ctx, outcome.verdicts);
  if (!leftOut) {
    const all = await findLeftOut(rg, scope, ctx).leftOut();
    const upTo = (files: string[]) => (stoppedAt === undefined ? files : files.filter((file) => compareWalkOrder(file, stoppedAt) <= 0));
    leftOut = { tooLarge: upTo(all.tooLarge), refused: upTo(all.refused) };
  }
  return { matches: outcome.files.flatMap((entry) => entry.matches), leftOut };
}

/**
 * grep through ripgrep, which walks the scope itself; results in walk order, ripgrep stopped
 * once `limit` matches are in. A walk-ordered search (one thread) streams the matches and stops
 * at the limit. Its head start is counted in the CPU time ripgrep uses (see SORTED_HEAD_START_MS):
 * when it has found nothing within ALL_CORES_AFTER_MS, or fewer than COMMITTED_MATCHES when it
 * has not ended within `headStartMs` (a large tree with few matches), a search on all cores replaces it, its
 * results put in walk order afterwards. If that one reaches the limit (then not necessarily the
 * first matches in walk order), the walk-ordered search runs again, to its limit. The notes on
 * files left out come from a listing beside the all-cores search, and after the walk-ordered one.
 */
async function ripgrepDirectory(
  rg: string,
  query: GrepQuery,
  scope: Scope,
  ctx: ToolContext,
  limit: number,
  headStartMs: number,
): Promise<{ matches: GrepMatch[]; leftOut: LeftOut }> {
  if (headStartMs > 0) {
    const timers: { clear(): void }[] = [];
    const quick = await sortedSearch(rg, query, scope, ctx, limit, async (sorted) => {
      await sorted.spawned;
      const after = (ms: number) => {
        const timer = headStart(sorted.pid, ms);
        timers.push(timer);
        return timer.elapsed;
      };
      const deadline = after(headStartMs);
      const matching = await Promise.race([
        sorted.firstMatch.then(() => true),
        after(Math.min(ALL_CORES_AFTER_MS, headStartMs)).then(() => false),
      ]);
      if (!matching) return;
      const committed = await Promise.race([deadline.then(() => false), sorted.found(COMMITTED_MATCHES).then(() => true)]);
      if (!committed) return;
      // Goes on to the limit: no more need to watch its CPU time.
      for (const timer of timers) timer.clear();
      await new Promise<never>(() => undefined);
    }).finally(() => timers.forEach((timer) => timer.clear()));
    if (quick) return quick;
  }
  const search = startSearch(rg, query, scope, ctx, limit, false);
  const listing = findLeftOut(rg, scope, ctx);
  let outcome: SearchOutcome;
  try {
    outcome = await search.outcome;
  } catch (error) {
    listing.stop();
    throw error;
  }
  if (outcome.stoppedAt === undefined) {
    const files = outcome.files.sort((a, b) => compareWalkOrder(a.file, b.file));
    return { matches: files.flatMap((entry) => entry.matches), leftOut: await listing.leftOut() };
  }
  listing.stop();
  return (await sortedSearch(rg, query, scope, ctx, limit))!;
}

/** ripgrep on the one file a path names, once candidateFiles has checked it (no file: nothing to search). */
function singleFileRipgrep(rg: string): GrepEngine {
  return async (query, files, ctx, limit) => {
    const [file] = files;
    if (file === undefined) return [];
    const scope: Scope = { cwd: realPathOf(resolve(ctx.workspace)), rgPath: file, glob: undefined, inGlob: () => true };
    const outcome = await startSearch(rg, query, scope, ctx, limit, true).outcome;
    return outcome.files.flatMap((entry) => entry.matches);
  };
}

// ---------------------------------------------------------------- in-process

/** A JavaScript RegExp for a ripgrep (Rust regex) pattern, as far as the dialects allow. */
export function compileRegex(pattern: string, caseInsensitive: boolean): RegExp {
  let source = pattern.replace(/\(\?P</g, "(?<");
  let flags = caseInsensitive ? "i" : "";
  if (source.startsWith("(?i)")) {
    source = source.slice(4);
    flags = "i";
  }
  try {
    return new RegExp(source, `${flags}u`);
  } catch {
    // Rust allows escaping any punctuation (`\-`, `\#`); only non-Unicode JavaScript regexes do too.
    try {
      return new RegExp(source, flags);
    } catch (error) {
      throw new ToolError("invalid_arguments", `invalid pattern: ${(error as Error).message}`);
    }
  }
}

const inProcessEngine: GrepEngine = async (query, files, ctx, limit) => {
  // Checked even with nothing to search, as ripgrep checks it.
  const regex = compileRegex(query.pattern, query.caseInsensitive);
  const matches: GrepMatch[] = [];
  for (const file of files) {
    throwIfCancelled(ctx.signal);
    // A file gone or unreadable since it was listed is skipped, as ripgrep skips it.
    const bytes = await readFile(join(ctx.workspace, file)).catch(() => undefined);
    if (!bytes || bytes.includes(0)) continue;
    const lines = bytes.toString("utf8").split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    for (const [index, line] of lines.entries()) {
      // ripgrep runs with --crlf: a CR before the LF is part of the line ending, not of the line.
      if (regex.test(line.endsWith("\r") ? line.slice(0, -1) : line)) matches.push(matchOf(file, index + 1, line));
      if (matches.length >= limit) return matches;
    }
  }
  return matches;
};

// ---------------------------------------------------------------- the tool

interface Candidates extends LeftOut {
  files: string[];
}

/**
 * The `glob` argument as a test of workspace-relative paths: without a slash it matches file
 * names, with one whole paths (picomatch's `basename` option would match nothing then).
 */
function globMatcher(glob: string | undefined): (relative: string) => boolean {
  if (glob === undefined) return () => true;
  return picomatch(glob, { dot: true, basename: !glob.includes("/") });
}

async function candidateFiles(ctx: ToolContext, root: string, glob: string | undefined): Promise<Candidates> {
  const inGlob = globMatcher(glob);
  const candidates: Candidates = { files: [], tooLarge: [], refused: [] };
  for await (const file of walkFiles(ctx.workspace, root, ctx.signal)) {
    if (file.isSymlink || !inGlob(file.relative)) continue;
    const stats = await stat(file.absolute);
    if (!stats.isFile()) continue;
    if (refusal(stats, file.relative) !== undefined) {
      candidates.refused.push(file.relative);
      continue;
    }
    (stats.size > MAX_FILE_BYTES ? candidates.tooLarge : candidates.files).push(file.relative);
  }
  return candidates;
}

function report(matches: GrepMatch[], candidates: LeftOut, where: string): string {
  const notes: string[] = [];
  if (candidates.tooLarge.length > 0) {
    notes.push(`(not searched, over ${MAX_FILE_BYTES / (1024 * 1024)} MiB: ${candidates.tooLarge.join(", ")})`);
  }
  if (candidates.refused.length > 0) {
    notes.push(`(not searched, hard-linked: another link may be a file outside the workspace: ${candidates.refused.join(", ")})`);
  }
  if (matches.length === 0) return [`No matches ${where}`, ...notes].join("\n");
  const shown = matches.slice(0, MAX_MATCHES);
  const files = new Set(shown.map((match) => match.file)).size;
  const header =
    matches.length > MAX_MATCHES
      ? `Showing the first ${MAX_MATCHES} matching lines (in ${files} files); there are more: narrow the pattern, path or glob`
      : `${shown.length} matching line${shown.length === 1 ? "" : "s"} in ${files} file${files === 1 ? "" : "s"}`;
  return [header, ...shown.map((match) => `${match.file}:${match.line}:${match.text}`), ...notes].join("\n");
}

const schema = z.strictObject({
  pattern: z.string().describe("Regular expression (ripgrep / Rust syntax), matched against each line"),
  path: z.string().min(1).optional().describe("File or directory to search, relative to the workspace root (default: the root)"),
  glob: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Only search files matching this glob: without a slash it matches file names ("*.ts"), with one workspace-relative paths ("src/**/*.ts")',
    ),
  case_insensitive: z.boolean().optional().describe("Ignore case (default false)"),
});

export interface GrepToolOptions {
  /** The ripgrep binary; null forces the in-process engine; undefined looks it up (see findRipgrep). */
  ripgrep?: string | null;
  /** How much CPU time the walk-ordered search uses before the all-cores one replaces it (SORTED_HEAD_START_MS); 0 starts with the all-cores one (for tests). */
  sortedHeadStartMs?: number;
}

export function createGrepTool(options: GrepToolOptions = {}): ToolDefinition<z.infer<typeof schema>> {
  return {
    name: "grep",
    description:
      "Search file contents with a regular expression. Returns matching lines as `path:line:text`, files in path order, " +
      `at most ${MAX_MATCHES} lines. Searches the files glob would list: .gitignore is respected, dotfiles are searched, ` +
      "binary files are skipped.",
    effect: "read",
    subject: { path: "path", fallback: "." },
    schema,
    async run({ pattern, path = ".", glob, case_insensitive = false }, ctx) {
      const root = await statInWorkspace(ctx.workspace, path);
      const ripgrep = options.ripgrep === undefined ? findRipgrep(ctx.env) : (options.ripgrep ?? undefined);
      const query = { pattern, caseInsensitive: case_insensitive };
      const where = `for ${JSON.stringify(pattern)} in ${root.relative}${glob ? ` (files matching ${glob})` : ""}`;
      if (!ripgrep || !root.stats.isDirectory()) {
        const candidates = await candidateFiles(ctx, root.absolute, glob);
        const engine = ripgrep ? singleFileRipgrep(ripgrep) : inProcessEngine;
        return { content: report(await engine(query, candidates.files, ctx, MAX_MATCHES + 1), candidates, where) };
      }
      const scope: Scope = { cwd: realPathOf(resolve(ctx.workspace)), rgPath: root.relative, glob, inGlob: globMatcher(glob) };
      const { matches, leftOut } = await ripgrepDirectory(
        ripgrep,
        query,
        scope,
        ctx,
        MAX_MATCHES + 1,
        options.sortedHeadStartMs ?? SORTED_HEAD_START_MS,
      );
      return { content: report(matches, leftOut, where) };
    },
  };
}

export const grepTool = createGrepTool();
