/**
 * What an "always" answer to a shell command covers: the same program (and subcommand), run with
 * options that neither write nor execute, for the programs of the table below. A program not in
 * the table, one whose operands are programs (`sed` scripts beyond `-n 'N,Mp'`, `awk`, `python -c`,
 * `node -e`), and one that runs the project's own scripts (`npm test`, `npm run`, `make`: the agent
 * can edit what they run) are covered only exactly as approved.
 *
 * A command is covered only when bash would run exactly the words the scanner sees:
 * - the program is the first word: no `VAR=x` before it (`GIT_EXTERNAL_DIFF=x git diff` runs x), no
 *   wrapper, no path (`./bin/git`, `/tmp/x/git` are other programs);
 * - no word holds `$` or a backtick: expansions can run code the scanner cannot see (`${v@P}`
 *   expands a prompt string with its command substitutions, `$((a[$(cmd)]))` evaluates), and
 *   no `<(…)`/`>(…)`;
 * - redirections only read a file or write to `/dev/null` or another descriptor (`2>&1`);
 * - every option is in the program's table (unknown options are not covered), with the value it
 *   takes (`head -n 5`, `-n5`, `--lines=5`); one-letter options may be bundled (`ls -la`).
 *
 * This is judged on each simple command, so `git status && rm -rf x` is two commands, and the
 * second is decided on its own.
 */
import type { CommandScope } from "../state/rules.js";
import type { Redirect, ShellPart } from "./shell-parts.js";

/** The options a program may be run with and still neither write nor execute. */
interface ReadOnlyOptions {
  /** Options without a value, space-separated. One-letter ones may be bundled (`-la`). */
  flags?: string;
  /** Options that take a value: `-n 5`, `-n5`, `--lines 5`, `--lines=5`. */
  values?: string;
  /** Long options with an optional value, attached only: `--color`, `--color=auto`. */
  optional?: string;
  /** `-5` is an option (`head -5`, `git log -3`). */
  numeric?: boolean;
  /** Options are whole words, never bundles (find's `-name`). */
  wordOptions?: boolean;
  /** What operands may be: at most this many, or each matching this. Default: any. */
  operands?: number | RegExp;
  /** Operands are allowed only with one of these options (`git branch --list PATTERN`; `git branch NAME` creates one). */
  operandsOnlyWith?: readonly string[];
  /** One of these options must be given (`tar -t`: listing, not extracting). */
  requires?: readonly string[];
  /** No option value may match this (`tar -f host:file` runs a remote shell). */
  unsafeValue?: RegExp;
  /** The program's script (the value of one of these options, else the first operand) must match `pattern`. */
  script?: { options: readonly string[]; pattern: RegExp };
}

/** A program with subcommands: each has its own options; `globalFlags` may come before the subcommand. */
type Program = ReadOnlyOptions | { globalFlags?: string; subcommands: Readonly<Record<string, ReadOnlyOptions>> };

const GREP: ReadOnlyOptions = {
  flags:
    "-a -b -c -E -F -G -h -H -i -I -l -L -n -o -P -q -r -R -s -T -U -v -w -x -y -z -Z --text --byte-offset --count " +
    "--extended-regexp --fixed-strings --basic-regexp --no-filename --with-filename --ignore-case --no-ignore-case " +
    "--files-with-matches --files-without-match --line-number --only-matching --perl-regexp --quiet --silent --recursive " +
    "--dereference-recursive --no-messages --initial-tab --binary --invert-match --word-regexp --line-regexp --null-data " +
    "--null --line-buffered",
  values:
    "-A -B -C -d -D -e -f -m --after-context --before-context --context --directories --devices --regexp --file " +
    "--max-count --include --exclude --exclude-dir --exclude-from --label --binary-files",
  optional: "--color --colour",
  numeric: true,
};

const GIT_DIFF_OPTIONS = {
  flags:
    "-p -u -s -z -R -a -b -w --patch --no-patch --raw --stat --numstat --shortstat --name-only --name-status --summary " +
    "--minimal --patience --histogram --no-renames --text --ignore-all-space --ignore-space-change --ignore-blank-lines " +
    "--ignore-space-at-eol --ignore-cr-at-eol --no-color --no-ext-diff --no-textconv --full-index --binary --no-prefix " +
    "--check --exit-code --quiet",
  values:
    "-U -S -G --unified --diff-filter --src-prefix --dst-prefix --line-prefix --inter-hunk-context --stat-width --diff-algorithm --anchored",
  optional:
    "--color --word-diff --color-words --find-renames --find-copies --relative --dirstat --submodule --stat --ignore-submodules --color-moved --abbrev",
};

const GIT_LOG_OPTIONS = {
  flags:
    "--oneline --graph --all --no-decorate --abbrev-commit --no-abbrev-commit --reverse --merges --no-merges --first-parent " +
    "--follow --full-history --left-right --cherry-pick --topo-order --date-order --author-date-order --boundary --source " +
    "--relative-date --full-diff --parents --children --walk-reflogs -g --regexp-ignore-case -i -E -F -P --all-match " +
    "--invert-grep --basic-regexp --extended-regexp --fixed-strings --perl-regexp --use-mailmap --no-walk --mailmap " +
    "--simplify-by-decoration -m --cc --root",
  values:
    "-n --max-count --skip --since --after --until --before --author --committer --grep --format --pretty --date --encoding --max-parents --min-parents",
  optional: "--decorate --branches --tags --remotes",
};

/** Joins option lists (space-separated strings) of several tables. */
const join = (...lists: (string | undefined)[]) => lists.filter(Boolean).join(" ");

/**
 * The read-only options of each program. Left out on purpose, for example: `sort -o`/`-T`/
 * `--compress-program`, `uniq IN OUT`, `diff -l` (runs `pr`), `file -C`/`-z`/`-p`, `tree -o`/`-R`,
 * `date -s`, `find -delete`/`-exec`/`-ok`/`-fprint*`/`-fls`, `rg --pre`/`-z`/`--hostname-bin`,
 * `tar -x`/`-c`/`-I`/`--to-command`, git's `--output`, `--ext-diff`, `--textconv`,
 * `--show-signature` (runs gpg), and git's global options (`-c`, `-C`, `--exec-path`…: the
 * subcommand must follow `git` directly).
 */
export const READ_ONLY_PROGRAMS: Readonly<Record<string, Program>> = {
  echo: { flags: "-n -e -E" },
  // No options: `printf -v VAR` assigns a variable.
  printf: {},
  cat: {
    flags: "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs --show-nonprinting",
  },
  head: { flags: "-q -v -z --quiet --silent --verbose --zero-terminated", values: "-n -c --lines --bytes", numeric: true },
  tail: {
    flags: "-f -F -q -v -z --retry --quiet --silent --verbose --zero-terminated",
    values: "-n -c -s --lines --bytes --sleep-interval --pid --max-unchanged-stats",
    optional: "--follow",
    numeric: true,
  },
  wc: { flags: "-c -m -l -L -w --bytes --chars --lines --max-line-length --words", values: "--files0-from", optional: "--total" },
  ls: {
    flags:
      "-a -A -b -B -c -C -d -f -F -g -G -h -H -i -k -l -L -m -n -N -o -p -q -Q -r -R -s -S -t -u -U -v -x -X -Z -1 " +
      "--all --almost-all --escape --ignore-backups --directory --classify --file-type --no-group --human-readable --si " +
      "--dereference-command-line --dereference --inode --kibibytes --numeric-uid-gid --literal --hide-control-chars " +
      "--show-control-chars --quote-name --reverse --recursive --size --group-directories-first --full-time --author --context --zero",
    values: "-I -T -w --ignore --hide --tabsize --width --block-size --sort --time --time-style --format --quoting-style --indicator-style",
    optional: "--color --hyperlink",
  },
  grep: GREP,
  egrep: GREP,
  fgrep: GREP,
  rg: {
    flags:
      "-a -b -c -F -h -H -i -I -l -L -n -N -o -p -P -q -s -S -u -U -v -w -x -0 -. --text --byte-offset --count " +
      "--count-matches --fixed-strings --hidden --no-hidden --ignore-case --case-sensitive --smart-case --no-filename " +
      "--with-filename --files --files-with-matches --files-without-match --follow --line-number --no-line-number " +
      "--only-matching --pretty --pcre2 --quiet --unrestricted --multiline --invert-match --word-regexp --line-regexp " +
      "--null --no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-parent --no-ignore-global --no-ignore-exclude " +
      "--no-ignore-files --json --no-json --vimgrep --heading --no-heading --column --no-column --trim --no-messages " +
      "--stats --sort-files --type-list --glob-case-insensitive --passthru --crlf --no-config --one-file-system --no-unicode",
    values:
      "-A -B -C -e -f -g -m -M -r -t -T -j -E -d --after-context --before-context --context --regexp --file --glob --iglob " +
      "--max-count --max-columns --replace --type --type-not --threads --encoding --max-depth --max-filesize --sort --sortr " +
      "--type-add --engine --path-separator --context-separator --colors --ignore-file",
    optional: "--color",
  },
  find: {
    wordOptions: true,
    flags:
      "-L -H -P -print -print0 -prune -ls -empty -true -false -depth -xdev -mount -follow -readable -writable -executable " +
      "-nouser -nogroup -not -a -o -and -or -noleaf -daystart -quit",
    values:
      "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -type -xtype -maxdepth -mindepth -mtime " +
      "-mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -newermt -newerct -newerat -newermm -size -perm -user -group " +
      "-uid -gid -links -inum -samefile -lname -ilname -fstype -used -printf",
  },
  // Only printing lines by number: a sed script can write (`w`, `s///w`) and execute (`e`, `s///e`).
  sed: {
    flags: "-n -E -r -s -u -z --quiet --silent --regexp-extended --separate --unbuffered --null-data --posix --debug",
    values: "-e -l --expression --line-length",
    script: { options: ["-e", "--expression"], pattern: /^\d+(?:,\d+)?p$/ },
  },
  sort: {
    flags:
      "-b -c -C -d -f -g -h -i -M -m -n -r -R -s -u -V -z --ignore-leading-blanks --dictionary-order --ignore-case " +
      "--general-numeric-sort --human-numeric-sort --ignore-nonprinting --month-sort --merge --numeric-sort --random-sort " +
      "--reverse --stable --unique --version-sort --zero-terminated --debug",
    values: "-k -t -S --key --field-separator --buffer-size --parallel --sort --files0-from",
    optional: "--check",
  },
  // One operand: `uniq IN OUT` writes OUT.
  uniq: {
    flags: "-c -d -D -i -u -z --count --repeated --ignore-case --unique --zero-terminated",
    values: "-f -s -w --skip-fields --skip-chars --check-chars",
    optional: "--all-repeated --group",
    operands: 1,
  },
  cut: {
    flags: "-n -s -z --complement --only-delimited --zero-terminated",
    values: "-b -c -d -f --bytes --characters --delimiter --fields --output-delimiter",
  },
  tr: { flags: "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1" },
  diff: {
    flags:
      "-a -b -B -c -d -e -E -i -n -N -p -q -r -s -t -T -u -w -y -Z --text --ignore-space-change --ignore-blank-lines " +
      "--minimal --ed --ignore-tab-expansion --ignore-case --rcs --new-file --show-c-function --brief --recursive " +
      "--report-identical-files --expand-tabs --initial-tab --side-by-side --ignore-trailing-space --ignore-all-space " +
      "--strip-trailing-cr --suppress-common-lines --suppress-blank-empty --speed-large-files --unidirectional-new-file --no-dereference",
    values:
      "-C -D -F -I -S -U -W -x -X --ifdef --show-function-line --ignore-matching-lines --starting-file --width --exclude " +
      "--exclude-from --label --from-file --to-file --tabsize --horizon-lines",
    optional: "--color --context --unified --normal",
  },
  stat: { flags: "-L -f -t --dereference --file-system --terse", values: "-c --format --printf", optional: "--cached" },
  file: {
    flags:
      "-b -d -E -h -i -k -l -L -N -r -s -S -0 --brief --debug --mime --mime-type --mime-encoding --keep-going --list " +
      "--dereference --no-dereference --no-pad --raw --special-files --print0 --extension --apple",
    values: "-e -F -f -m -P --exclude --exclude-quiet --separator --files-from --magic-file --parameter",
  },
  du: {
    flags:
      "-0 -a -b -c -D -h -H -k -l -L -m -P -s -S -x --null --all --apparent-size --bytes --total --dereference-args " +
      "--human-readable --si --count-links --dereference --no-dereference --separate-dirs --summarize --one-file-system --inodes",
    values: "-B -d -t -X --block-size --max-depth --threshold --exclude --exclude-from --files0-from --time-style",
    optional: "--time",
  },
  df: {
    flags: "-a -h -H -i -k -l -P -T --all --human-readable --si --inodes --local --portability --print-type --total --no-sync --sync",
    values: "-B -t -x --block-size --type --exclude-type",
    optional: "--output",
  },
  pwd: { flags: "-L -P --logical --physical", operands: 0 },
  which: { flags: "-a -s" },
  // Operands only `+FORMAT`: `date MMDDhhmm` sets the clock.
  date: {
    flags: "-u -R --utc --universal --rfc-email --debug",
    values: "-d -f -r -I --date --file --reference --rfc-3339",
    optional: "--iso-8601",
    operands: /^\+/,
  },
  tree: {
    flags:
      "-a -d -l -f -x -i -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -C -n -A -S -J -X --noreport --dirsfirst --prune --du " +
      "--si --inodes --device --gitignore --matchdirs --ignore-case",
    values: "-L -P -I --filelimit --timefmt --sort --charset --gitfile",
  },
  tar: {
    flags:
      "-t -v -z -j -J -Z -a --list --verbose --gzip --gunzip --bzip2 --xz --lzma --zstd --lzip --lzop --auto-compress " +
      "--numeric-owner --full-time --wildcards --no-wildcards --anchored --ignore-case --utc --force-local",
    values: "-f --file --exclude --occurrence",
    requires: ["-t", "--list"],
    unsafeValue: /:/,
  },
  git: {
    // Not `-c`, `-C`, `--exec-path`, `--git-dir`…: they change what git runs or where.
    globalFlags: "-P --no-pager",
    subcommands: {
      status: {
        flags: "-s -b -v -z --short --branch --long --verbose --show-stash --ahead-behind --no-ahead-behind --renames --no-renames --null",
        values: "-u",
        optional: "--porcelain --untracked-files --ignored --column --find-renames --ignore-submodules",
      },
      log: {
        flags: join(GIT_LOG_OPTIONS.flags, GIT_DIFF_OPTIONS.flags),
        values: join(GIT_LOG_OPTIONS.values, GIT_DIFF_OPTIONS.values),
        optional: join(GIT_LOG_OPTIONS.optional, GIT_DIFF_OPTIONS.optional),
        numeric: true,
      },
      show: {
        flags: join(GIT_LOG_OPTIONS.flags, GIT_DIFF_OPTIONS.flags),
        values: join(GIT_LOG_OPTIONS.values, GIT_DIFF_OPTIONS.values),
        optional: join(GIT_LOG_OPTIONS.optional, GIT_DIFF_OPTIONS.optional),
      },
      diff: { ...GIT_DIFF_OPTIONS, flags: join(GIT_DIFF_OPTIONS.flags, "--cached --staged --no-index --merge-base") },
      branch: {
        flags: "-a -r -v -l --list --all --remotes --verbose --show-current --no-color --no-column --ignore-case --omit-empty",
        values: "--contains --no-contains --merged --no-merged --points-at --sort --format",
        optional: "--color --column --abbrev",
        operandsOnlyWith: ["-l", "--list"],
      },
      "rev-parse": {
        flags:
          "--verify -q --quiet --show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir --absolute-git-dir " +
          "--is-inside-work-tree --is-inside-git-dir --is-bare-repository --is-shallow-repository --symbolic " +
          "--symbolic-full-name --all --sq --not --revs-only --no-revs --flags --no-flags",
        values: "--default --prefix --since --after --until --before --path-format",
        optional: "--short --abbrev-ref --show-object-format --branches --tags --remotes",
      },
      "ls-files": {
        flags:
          "-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others --ignored --stage --unmerged --killed " +
          "--directory --no-empty-directory --eol --exclude-standard --error-unmatch --full-name --recurse-submodules --deduplicate",
        values: "-x -X --exclude --exclude-from --exclude-per-directory --with-tree --format",
        optional: "--abbrev",
      },
      blame: {
        flags:
          "-b -e -f -l -n -p -s -t -w --root --show-stats --incremental --porcelain --line-porcelain --show-name --show-number --show-email --minimal",
        values: "-L --date --since --abbrev --ignore-rev --ignore-revs-file",
        optional: "--progress --no-progress --color-lines --color-by-age",
      },
    },
  },
};

/**
 * The read-only scope of a simple command: its program (and subcommand), when it is run with
 * read-only options only (see the top of this file); else undefined.
 */
export function readOnlyScope(part: ShellPart): CommandScope | undefined {
  const [name = "", ...args] = part.words;
  const program = Object.hasOwn(READ_ONLY_PROGRAMS, name) ? READ_ONLY_PROGRAMS[name]! : undefined;
  if (program === undefined) return undefined;
  if (part.words.some((word) => /[$`]|[<>]\(/.test(word))) return undefined;
  if (!part.redirects.every(readsOrDiscards)) return undefined;
  if (!("subcommands" in program)) return hasReadOnlyOptions(program, args) ? { name, readOnly: true } : undefined;
  const globalFlags = words(program.globalFlags);
  const skipped = args.findIndex((arg) => !globalFlags.has(arg));
  const [subcommand = "", ...rest] = skipped < 0 ? [] : args.slice(skipped);
  const options = Object.hasOwn(program.subcommands, subcommand) ? program.subcommands[subcommand]! : undefined;
  return options && hasReadOnlyOptions(options, rest) ? { name, subcommand, readOnly: true } : undefined;
}

/**
 * Whether `scope` covers the simple command `part`. A nested command (`(ls)`) is covered only by
 * a scope approved nested: the user approved the plain command, not every form that runs it.
 */
export function coversReadOnly(scope: CommandScope, part: ShellPart): boolean {
  if (part.nested && !scope.nested) return false;
  const own = readOnlyScope(part);
  return own !== undefined && own.name === scope.name && own.subcommand === scope.subcommand;
}

/** The scope in words, for the approval prompt: `` `git status` with read-only options ``. */
export function describeScope(scope: CommandScope): string {
  const where = scope.nested ? ", also nested (in a subshell or a substitution)" : "";
  return `\`${[scope.name, scope.subcommand].filter(Boolean).join(" ")}\` with read-only options${where}`;
}

/** Reads a file (not a device such as bash's `/dev/tcp/…`), or writes to `/dev/null` or another descriptor (`2>&1`). */
function readsOrDiscards(redirect: Redirect): boolean {
  const { op, target } = redirect;
  if (/[$`]|[<>]\(/.test(target)) return false;
  if (/^\d*<$/.test(op)) return !target.startsWith("/dev/") || target === "/dev/null";
  if (/^\d*[<>]&$/.test(op) && /^(?:\d+-?|-)$/.test(target)) return true;
  return /^(?:\d*>>?|&>>?|\d*>\||\d*>&)$/.test(op) && target === "/dev/null";
}

function hasReadOnlyOptions(spec: ReadOnlyOptions, args: readonly string[]): boolean {
  const flags = words(spec.flags, "--help --version");
  const values = words(spec.values);
  const optional = words(spec.optional);
  const seen = new Set<string>();
  const optionValues: { option: string; value: string }[] = [];
  const operandList: string[] = [];
  let endOfOptions = false;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (endOfOptions || arg === "-" || !arg.startsWith("-")) {
      operandList.push(arg);
    } else if (arg === "--") {
      endOfOptions = true;
    } else if (spec.numeric && /^-\d+$/.test(arg)) {
      seen.add("-N");
    } else if (arg.startsWith("--") || spec.wordOptions) {
      const equals = arg.indexOf("=");
      const option = equals < 0 ? arg : arg.slice(0, equals);
      seen.add(option);
      if (values.has(option)) {
        const value = equals < 0 ? args[++i] : arg.slice(equals + 1);
        if (value !== undefined) optionValues.push({ option, value });
      } else if (!(optional.has(option) || (flags.has(option) && equals < 0))) {
        return false;
      }
    } else {
      // One-letter options, bundled: `-la`, `-n5`, `-tvf archive.tar`.
      for (let j = 1; j < arg.length; j += 1) {
        const option = `-${arg[j]}`;
        seen.add(option);
        if (values.has(option)) {
          const value = j < arg.length - 1 ? arg.slice(j + 1) : args[++i];
          if (value !== undefined) optionValues.push({ option, value });
          break;
        }
        if (!flags.has(option)) return false;
      }
    }
  }
  if (spec.requires && !spec.requires.some((option) => seen.has(option))) return false;
  if (spec.unsafeValue && optionValues.some(({ value }) => spec.unsafeValue!.test(value))) return false;
  if (spec.script) {
    const { options, pattern } = spec.script;
    const scripts = optionValues.filter(({ option }) => options.includes(option)).map(({ value }) => value);
    if (scripts.length === 0) scripts.push(operandList.shift() ?? "");
    if (!scripts.every((script) => pattern.test(script))) return false;
  }
  if (operandList.length > 0 && spec.operandsOnlyWith && !spec.operandsOnlyWith.some((option) => seen.has(option))) return false;
  if (typeof spec.operands === "number") return operandList.length <= spec.operands;
  return spec.operands === undefined || operandList.every((operand) => spec.operands instanceof RegExp && spec.operands.test(operand));
}

function words(...lists: (string | undefined)[]): Set<string> {
  return new Set(lists.flatMap((list) => list?.split(/\s+/).filter(Boolean) ?? []));
}
