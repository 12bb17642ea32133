/**
 * A shell word with an unquoted `*`, `?` or `[` is a glob: bash replaces it with the paths it
 * matches, so `cat /e?c/shadow` reads /etc/shadow although no rule's pattern matches the text.
 * Each glob is matched, segment by segment, against the sensitive paths the built-in rules know
 * (credentials outside the workspace, and the names of secret files), and every path it can match
 * becomes another form of the command: `cat /etc/shadow`. The evaluator tests these forms for an
 * ask or a deny only (they never allow).
 *
 * Matching against known paths rather than expanding the glob on the file system: the decision
 * does not depend on what exists when the policy runs (a glob that matches nothing today may match
 * tomorrow, or in the sandbox's view, or after a `cd` the scanner cannot follow), it needs no file
 * system access and no bound on a directory walk, and it covers every home (`/home/*`) without
 * listing them. The price is a deny for a glob that could reach a credential file even where none
 * exists (`ls /etc/*` is denied: its expansion includes /etc/shadow).
 */
import picomatch from "picomatch";
import { CREDENTIAL_PATHS, SENSITIVE_NAMES } from "./builtin-rules.js";
import { normalisedText, type ShellPart } from "./shell-parts.js";

/** The part written with each glob replaced, one at a time, by each sensitive path it can match. */
export function sensitiveGlobForms(part: ShellPart): string[] {
  const forms = new Set<string>();
  part.globs?.forEach((glob, index) => {
    if (glob === undefined) return;
    for (const path of sensitiveMatches(glob)) forms.add(normalisedText({ ...part, words: part.words.with(index, path) }));
  });
  part.redirects.forEach((redirect, index) => {
    if (redirect.glob === undefined) return;
    for (const path of sensitiveMatches(redirect.glob))
      forms.add(normalisedText({ ...part, redirects: part.redirects.with(index, { ...redirect, target: path }) }));
  });
  return [...forms];
}

/** The sensitive paths a glob can match, each followed by the rest of the glob (`~/.ss?/id_rsa` → `~/.ssh/id_rsa`). */
export function sensitiveMatches(glob: string): string[] {
  const segments = glob.split("/");
  const matches = new Set<string>();
  for (const path of CREDENTIAL_PATHS) {
    const matched = matchPrefix(segments, 0, path, 0);
    if (matched) matches.add(matched.map(unescape).join("/"));
  }
  // A secret file's name anywhere in the path, when the glob segment spells its start (`.en?`,
  // `id_*`): one that starts with a wildcard (`*`, `*.json`) means any file, not that one.
  segments.forEach((segment, index) => {
    if (/^[*?[]/.test(segment)) return;
    for (const name of SENSITIVE_NAMES) {
      if (segmentMatches(segment, name)) matches.add(segments.with(index, name).map(unescape).join("/"));
    }
  });
  return [...matches];
}

/**
 * `glob` (from segment `g`) matched against the start of `path` (from segment `p`): the path's
 * segments as written, then the rest of the glob; undefined when it cannot match. `**` matches
 * any number of segments (bash with `globstar`), else a segment matches one segment.
 */
function matchPrefix(glob: readonly string[], g: number, path: readonly (string | RegExp)[], p: number): string[] | undefined {
  if (p === path.length) return glob.slice(g);
  if (g === glob.length) return undefined;
  const segment = glob[g]!;
  const target = path[p]!;
  if (segment === "**") {
    const skipped = matchPrefix(glob, g + 1, path, p);
    if (skipped) return skipped;
  }
  const matches = target instanceof RegExp ? target.test(segment) : segmentMatches(segment, target);
  if (!matches) return undefined;
  const rest = segment === "**" ? matchPrefix(glob, g, path, p + 1) : matchPrefix(glob, g + 1, path, p + 1);
  return rest && [target instanceof RegExp ? segment : target, ...rest];
}

/** Bash's matching of one path segment: `*` and `?` do not match a leading dot, `[!a]` negates. */
const SEGMENT_OPTIONS = { dot: false, nobrace: true, noextglob: true, nonegate: true, noglobstar: true, posix: true } as const;

function segmentMatches(glob: string, name: string): boolean {
  if (glob === "" || name === "") return glob === name;
  let matcher = matchers.get(glob);
  if (matcher === undefined) {
    if (matchers.size >= 1000) matchers.clear();
    matcher = picomatch(glob, SEGMENT_OPTIONS);
    matchers.set(glob, matcher);
  }
  return matcher(name);
}

/** Compiled segment globs: each is tried against every sensitive path. */
const matchers = new Map<string, (name: string) => boolean>();

function unescape(segment: string): string {
  return segment.replace(/\\(.)/g, "$1");
}
