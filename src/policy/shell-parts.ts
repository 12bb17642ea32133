/**
 * Splits a shell command into the simple commands bash would run, so the policy can check each one
 * (`echo hi && rm -rf ~` is two commands, and `echo $(rm -rf ~)` too).
 *
 * A purpose-built scanner rather than `shell-quote`: that parser drops backticks, does not see
 * `$( … )` inside double quotes (which bash expands), has no nesting, and expands `$HOME` to "" —
 * each of which would hide a command from the policy. This scanner follows bash's quoting rules
 * (single, double, `$'…'`, backslashes), and splits on `&&`, `||`, `;`, `|`, `&` and newlines; it
 * descends into `$( … )`, backticks, `<( … )`, `${ … }`, subshells, `{ …; }`, heredoc bodies that
 * expand, `bash -c '…'`, `eval …`, `find -exec` and wrappers (`env`, `timeout`, `xargs`, `flock`
 * …). Words are split on unquoted `$IFS` and brace-expanded (`{/*,x}` is two words) as bash does.
 * A shell (or `xargs`) whose stdin is visible in the command — a here-string, a heredoc body, or a
 * pipe from `echo`/`printf` — has that text checked as the script (or arguments) it runs.
 * It is not a full bash parser: where it is unsure it errs towards finding more commands, never
 * fewer, and what it cannot follow is reported (`tooDeep`). Shell can never be fully sandboxed by
 * parsing: variables, scripts and interpreters (`python -c`) run code no scanner can see.
 */

/** A redirection of a simple command, e.g. `{ op: ">>", target: "log.txt" }`. */
export interface Redirect {
  op: string;
  target: string;
  /** A heredoc's body as written (`<<EOF` … `EOF`), once the scanner has read it. */
  body?: string;
  /** The target as a glob pattern, when it has an unquoted `*`, `?` or `[` (see `ShellPart.globs`). */
  glob?: string;
}

/** One simple command. */
export interface ShellPart {
  /** Its source text, trimmed: what users see and raw patterns match. */
  text: string;
  /** Words after quote removal and brace expansion; `$VAR`, `~`, globs and substitutions are left as written. */
  words: string[];
  redirects: Redirect[];
  /**
   * At the index of each word with an unquoted `*`, `?` or `[`: the word as a glob pattern, its
   * quoted characters escaped (`"a*"b?` → `a\*b?`). Absent when no word is a glob.
   */
  globs?: (string | undefined)[];
  /**
   * Not a plain command of the command line: inside a subshell, a command substitution or another
   * shell's script (`(ls)`, `$(ls)`, `bash -c 'ls'`), or made up by the scanner (`find -exec`, `xargs`).
   */
  nested?: true;
}

export interface ParsedShellCommand {
  /** Every simple command, nested ones included, in source order. */
  parts: ShellPart[];
  /** The command and every script nested in it (`$( … )`, `bash -c`, …), outermost first. */
  scripts: string[];
  /**
   * Each pipeline of two or more commands, its parts normalised and joined by ` | `
   * (`curl x |& timeout 9 sh` → `curl x | sh`): what patterns spanning a pipe are tested against.
   */
  pipelines: string[];
  /** Scripts nested deeper than the scanner follows, or words expanding to too many: they could not be checked. */
  tooDeep: string[];
  /**
   * What bash would reject as a syntax error, each with the script it is in: an unclosed quote,
   * backtick, `(`, `$(` or `${`, or a `&&`, `||` or `|` with no command after it (`ls &&`).
   */
  incomplete: { script: string; what: string }[];
}

export function parseShellCommand(command: string): ParsedShellCommand {
  const parsed: ParsedShellCommand = { parts: [], scripts: [], pipelines: [], tooDeep: [], incomplete: [] };
  new ShellScanner(command, 0, parsed).run();
  return parsed;
}

/**
 * The words that name the command and its arguments: leading `VAR=value` assignments and
 * wrappers that run their argument as a command (`env`, `nohup`, `timeout 5`, `xargs` …) are
 * skipped, and `/usr/bin/rm` is named `rm`. Empty for a bare assignment.
 */
export function commandWords(words: readonly string[]): string[] {
  const [name, ...args] = words.slice(commandStart(words).index);
  return name === undefined ? [] : [commandName(name), ...args];
}

/** Where the command name is in `words` (`words.length` when there is none), and where each wrapper before it is. */
function commandStart(words: readonly string[]): { index: number; wrappers: number[] } {
  const wrappers: number[] = [];
  let index = 0;
  while (index < words.length) {
    const word = words[index]!;
    if (ASSIGNMENT.test(word)) {
      index += 1;
      continue;
    }
    const wrapper = WRAPPERS.get(commandName(word));
    if (wrapper === undefined) break;
    wrappers.push(index);
    index += 1;
    let operands = wrapper.operands ?? 0;
    while (index < words.length) {
      const argument = words[index]!;
      if (argument.startsWith("-") || ASSIGNMENT.test(argument)) index += wrapper.values?.includes(argument) ? 2 : 1;
      else if (operands > 0) {
        operands -= 1;
        index += 1;
      } else if (DURATION.test(argument)) index += 1;
      else break;
    }
  }
  return { index, wrappers };
}

/** The part as its command words and redirections, one space apart: what normalised patterns match. */
export function normalisedText(part: ShellPart): string {
  const redirects = part.redirects.map((redirect) => `${redirect.op} ${redirect.target}`);
  return [...commandWords(part.words), ...redirects].join(" ");
}

/**
 * Paths the part may create, change or delete, as written (`~`, `$HOME`, globs unexpanded):
 * redirection targets and the operands of commands known to write. Commands not listed here
 * (compilers, package managers, scripts) can write anywhere: this is a net for the obvious cases.
 */
export function writeTargetsOf(part: ShellPart): string[] {
  const targets = part.redirects.filter(isWriteRedirect).map((redirect) => redirect.target);
  const [name = "", ...args] = commandWords(part.words);
  // A command named at run time (`$RM`, `$(echo rm)`) may be any of these.
  if (ALL_OPERANDS_WRITTEN.has(name) || /^[$`]/.test(name)) targets.push(...operands(args));
  if (LAST_OPERAND_WRITTEN.has(name)) {
    const directory = optionValues(args, ["-t"], ["--target-directory"]);
    targets.push(...(directory.length > 0 ? directory : operands(args).slice(-1)));
  }
  if ((name === "sed" || name === "perl") && args.some((arg) => /^(?:-[A-Za-z]*i|--in-place)/.test(arg))) {
    targets.push(...operands(args));
  }
  if (name === "dd") targets.push(...args.filter((arg) => arg.startsWith("of=")).map((arg) => arg.slice(3)));
  if (name === "find" && args.some((arg) => FIND_ACTIONS.has(arg) || arg === "-delete")) {
    const firstExpression = args.findIndex((arg) => /^[-(!]/.test(arg));
    const roots = args.slice(0, firstExpression < 0 ? args.length : firstExpression);
    targets.push(...(roots.length > 0 ? roots : ["."]));
  }
  const outputOptions = OUTPUT_OPTIONS.get(name);
  if (outputOptions) targets.push(...optionValues(args, outputOptions.short, outputOptions.long));
  return targets;
}

// ---------------------------------------------------------------------------------------------
// Command knowledge

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=/;

/**
 * Commands that run their arguments as a command: their options that take a value, and how many
 * operands come before the command (`flock FILE cmd`, `taskset MASK cmd`, `timeout 5 cmd`).
 * Commands that change user or group (`sudo`, `runuser`, `sg`, `setpriv` …) are not wrappers: a
 * built-in rule denies them by name, whatever they would run.
 */
const WRAPPERS = new Map<string, { values?: readonly string[]; operands?: number }>([
  ["command", {}],
  ["builtin", {}],
  ["exec", { values: ["-a"] }],
  ["nohup", {}],
  ["time", {}],
  ["nice", { values: ["-n", "--adjustment"] }],
  ["ionice", { values: ["-c", "-n", "-p"] }],
  // Not `-S`: its value is the command line itself (seen as a script below).
  ["env", { values: ["-u", "--unset", "-C", "--chdir"] }],
  ["stdbuf", { values: ["-i", "-o", "-e"] }],
  ["timeout", { values: ["-s", "--signal", "-k", "--kill-after"], operands: 1 }],
  ["xargs", { values: ["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs", "--delimiter", "--arg-file"] }],
  ["setsid", {}],
  ["unbuffer", {}],
  ["watch", { values: ["-n", "--interval"] }],
  // `flock FILE -c 'script'` leaves the script as the command word (seen as a script below).
  ["flock", { values: ["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"], operands: 1 }],
  ["taskset", { operands: 1 }],
  ["chrt", { values: ["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"], operands: 1 }],
  ["chroot", { values: ["--userspec", "--groups"], operands: 1 }],
  ["unshare", { values: ["-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--map-user", "--map-group"] }],
  ["cgexec", { values: ["-g"] }],
  ["numactl", { values: ["-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind", "--preferred", "--interleave"] }],
  ["prlimit", { values: ["-p", "--pid"] }],
  ["strace", { values: ["-o", "-e", "-p", "-s", "-u", "-a", "-O", "-P", "-I", "-b", "-E", "-X", "-S"] }],
  // Multi-call binaries: `busybox rm -rf /` is `rm -rf /`.
  ["busybox", {}],
  ["toybox", {}],
]);

/** A duration or number right after a wrapper (`nice 5`, `watch 2`): skipped, so the command after it is seen. */
const DURATION = /^\d+(?:\.\d+)?[smhd]?$/;

function commandName(word: string): string {
  return word.startsWith("/") ? (word.split("/").pop() ?? word) : word;
}

/** Shells: they run the argument after `-c` as a script, or else a script file, or else their stdin. */
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"]);
/** Commands that run the argument after `-c` as a shell script. */
const SCRIPT_RUNNERS = new Set([...SHELLS, "busybox", "script"]);
/** Paths that name a process's own stdin: `bash /dev/stdin`, `. /dev/fd/0`. */
const STDIN_FILES = new Set(["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);
const FIND_ACTIONS = new Set(["-exec", "-execdir", "-ok", "-okdir"]);

const ALL_OPERANDS_WRITTEN = new Set([
  "rm",
  "rmdir",
  "unlink",
  "shred",
  "touch",
  "mkdir",
  "truncate",
  "chmod",
  "chown",
  "chgrp",
  "tee",
  "mv",
  // Both operands: a link inside the workspace that points out of it is an escape for later writes.
  "ln",
]);
const LAST_OPERAND_WRITTEN = new Set(["cp", "install", "rsync", "scp"]);
const OUTPUT_OPTIONS = new Map<string, { short: string[]; long: string[] }>([
  ["curl", { short: ["-o"], long: ["--output"] }],
  ["wget", { short: ["-O", "-P"], long: ["--output-document", "--directory-prefix"] }],
  ["tar", { short: ["-C"], long: ["--directory"] }],
  ["unzip", { short: ["-d"], long: [] }],
]);

const FD_DUPLICATE_TARGET = /^(?:\d+|-)$/;

/**
 * What a simple command does beyond what its words say, which a rule allowing the command by its
 * words does not cover: a redirection that writes a file (`git log > out.txt`; not /dev/null), or
 * a prompt or escape expansion of a variable (`${v@P}` runs the `$(…)` the value holds). The
 * first such thing, for a reason; undefined when there is none.
 */
export function beyondItsWords(part: ShellPart): { kind: "redirect" | "expansion"; reason: string } | undefined {
  const written = part.redirects.find((redirect) => isWriteRedirect(redirect) && redirect.target !== "/dev/null");
  if (written) return { kind: "redirect", reason: `it writes ${written.target} (${written.op})` };
  const transform = /\$\{[^}]*@[PE]\}/.exec(part.text);
  if (transform) return { kind: "expansion", reason: `${transform[0]} expands the value as a prompt or escapes, which can run commands` };
  return undefined;
}

function isWriteRedirect(redirect: Redirect): boolean {
  if (!redirect.op.includes(">")) return false;
  return !(redirect.op.endsWith("&") && FD_DUPLICATE_TARGET.test(redirect.target));
}

/** Arguments that are not options (everything after `--`). */
function operands(args: readonly string[]): string[] {
  const end = args.indexOf("--");
  const before = (end < 0 ? args : args.slice(0, end)).filter((arg) => !arg.startsWith("-") || arg === "-");
  return end < 0 ? before : [...before, ...args.slice(end + 1)];
}

/** Values of an option given as `-o value`, `-ovalue`, `--output value` or `--output=value`. */
function optionValues(args: readonly string[], short: readonly string[], long: readonly string[]): string[] {
  const values: string[] = [];
  args.forEach((arg, index) => {
    const next = args[index + 1];
    if (short.includes(arg) || long.includes(arg)) {
      if (next !== undefined) values.push(next);
      return;
    }
    const longWithValue = long.find((option) => arg.startsWith(`${option}=`));
    if (longWithValue) values.push(arg.slice(longWithValue.length + 1));
    else if (short.some((option) => arg.startsWith(option) && arg.length > option.length && !arg.startsWith("--"))) {
      values.push(arg.slice(2));
    }
  });
  return values;
}

// ---------------------------------------------------------------------------------------------
// The scanner

/** Scripts nested deeper than this are not scanned but reported (no real command nests this deep). */
const MAX_NESTING = 12;

/** Reserved words that may start a command; dropped so `then rm -rf /` is checked as `rm -rf /`. */
const COMMAND_POSITION_KEYWORDS = new Set([
  "{",
  "}",
  "!",
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "while",
  "until",
  "for",
  "select",
  "case",
  "esac",
  "function",
  "coproc",
]);

const REDIRECT_OPERATOR = /^(?:&>>|&>|<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)/;
/** A redirection of stdin (fd 0): the last one decides what the command reads. */
const STDIN_REDIRECT = /^0?(?:<<<|<<-|<<|<&|<>|<)$/;

/** Brace expansion of one word stops here (`{a,b}{c,d}…` grows exponentially): more is not checked. */
const MAX_BRACE_EXPANSIONS = 1024;
/** Text a visible stdin may be: a longer one is not followed. */
const MAX_STDIN_CHARS = 100_000;

/** One character of a word, and whether quoting (or an expansion's text) makes it literal: no brace or glob syntax. */
interface WordChar {
  c: string;
  literal: boolean;
}

interface WordBuilder {
  chars: WordChar[];
  start: number;
  /** Any quoting or escaping in the word: a quoted heredoc delimiter disables expansion. */
  quoted: boolean;
}

interface PartBuilder {
  words: string[];
  globs: (string | undefined)[];
  redirects: Redirect[];
  start: number;
  end: number;
}

interface PendingHeredoc {
  redirect: Redirect;
  expands: boolean;
  stripTabs: boolean;
}

/** A simple command of this script, and the one piped into it (`a | b`: b's `pipedFrom` is a). */
interface Unit {
  part: ShellPart;
  pipedFrom?: Unit;
}

class ShellScanner {
  private pos = 0;
  private part: PartBuilder = emptyPart();
  private word: WordBuilder | undefined;
  private pendingRedirect: { op: string; start: number } | undefined;
  private heredocs: PendingHeredoc[] = [];
  /** The simple commands of this script (not the nested ones), in order. */
  private units: Unit[] = [];
  /** The command before a `|` or `|&`: the next command reads its output. */
  private pipeFrom: Unit | undefined;
  /** A `&&`, `||`, `|` or `|&` still waiting for the command after it. */
  private dangling: string | undefined;
  /** After the keyword `function`: the next word is the name it defines (`function f { …; }`), not a command with `{ …` as arguments. */
  private definesFunction = false;

  constructor(
    private readonly src: string,
    private readonly depth: number,
    private readonly out: ParsedShellCommand,
  ) {}

  run(): void {
    if (this.src.trim() === "") return;
    this.out.scripts.push(this.src.trim());
    if (this.depth > MAX_NESTING) {
      this.out.tooDeep.push(this.src.trim());
      return;
    }
    while (this.pos < this.src.length) this.step();
    this.endPart();
    if (this.dangling) this.markIncomplete(`\`${this.dangling}\` with no command after it`);
    // Heredoc bodies come after the line that uses them: stdin is known only now.
    for (const unit of this.units) this.descendIntoStdin(unit);
    this.addPipelines();
  }

  private step(): void {
    const c = this.src[this.pos]!;
    const next = this.src[this.pos + 1];
    switch (c) {
      case " ":
      case "\t":
      case "\r":
        this.finishWord();
        this.pos += 1;
        return;
      case "\n":
        this.endPart();
        this.pos += 1;
        this.readHeredocBodies();
        return;
      case "\\":
        if (next === "\n") {
          this.pos += 2;
          return;
        }
        this.append(next ?? "", true);
        this.pos += 2;
        return;
      case "'":
        this.readSingleQuoted();
        return;
      case '"':
        this.startWord(true);
        this.pos = this.readExpanding(this.pos + 1, '"');
        return;
      case "$":
        this.readDollar();
        return;
      case "`":
        this.pos = this.readBackticks(this.pos);
        return;
      case "#":
        if (this.word === undefined) {
          const end = this.src.indexOf("\n", this.pos);
          this.pos = end < 0 ? this.src.length : end;
          return;
        }
        break;
      case ";":
        this.endPart();
        this.expectCommand(undefined);
        this.pos += next === ";" || next === "&" ? 2 : 1;
        return;
      case "|": {
        const unit = this.endPart();
        // `|` and `|&` pipe the output on; `||` does not.
        if (next !== "|") this.pipeFrom = unit;
        this.expectCommand(next === "|" || next === "&" ? `|${next}` : "|");
        this.pos += next === "|" || next === "&" ? 2 : 1;
        return;
      }
      case "&":
        if (next === ">") {
          this.readRedirectOperator();
          return;
        }
        this.endPart();
        this.expectCommand(next === "&" ? "&&" : undefined);
        this.pos += next === "&" ? 2 : 1;
        return;
      case "<":
      case ">":
        if (next === "(") {
          this.readProcessSubstitution();
          return;
        }
        this.readRedirectOperator();
        return;
      case "(": {
        this.endPart();
        this.pipeFrom = undefined;
        this.dangling = undefined;
        const group = this.balancedFrom(this.pos);
        this.nested(group.inner);
        this.pos = group.end;
        return;
      }
      case ")":
        // Unbalanced here: a `case` pattern such as `a)`.
        this.endPart();
        this.pos += 1;
        return;
    }
    this.append(c, false);
    this.pos += 1;
  }

  // -- words -----------------------------------------------------------------------------------

  private startWord(quoted: boolean): WordBuilder {
    this.word ??= { chars: [], start: this.pos, quoted: false };
    this.word.quoted ||= quoted;
    return this.word;
  }

  private append(text: string, literal: boolean): void {
    const word = this.startWord(literal);
    for (const c of text) word.chars.push({ c, literal });
  }

  /** The text of an expansion (`$( … )`, `${ … }`, `$VAR`…): part of the word, but no brace or glob syntax of its own. */
  private appendExpansion(text: string): void {
    const word = this.startWord(false);
    for (const c of text) word.chars.push({ c, literal: true });
  }

  private finishWord(): void {
    const word = this.word;
    if (word === undefined) return;
    this.word = undefined;
    this.dangling = undefined;
    const value = textOf(word.chars);
    this.part.start = Math.min(this.part.start, this.pendingRedirect?.start ?? word.start);
    this.part.end = this.pos;
    if (this.pendingRedirect) {
      const { op } = this.pendingRedirect;
      this.pendingRedirect = undefined;
      const glob = globPattern(word.chars);
      const redirect: Redirect = { op, target: value, ...(glob !== undefined && { glob }) };
      this.part.redirects.push(redirect);
      if (op === "<<" || op === "<<-") this.heredocs.push({ redirect, expands: !word.quoted, stripTabs: op === "<<-" });
      return;
    }
    const atCommandPosition = this.part.words.length === 0;
    if (atCommandPosition && !word.quoted && COMMAND_POSITION_KEYWORDS.has(value)) {
      if (this.part.redirects.length === 0) this.part.start = Number.POSITIVE_INFINITY;
      this.definesFunction = value === "function";
      return;
    }
    // Assignments before the command are not brace-expanded; every other word is (`{rm,-rf,/}`, `rm -rf {/*,x}`).
    const isAssignment = ASSIGNMENT.test(value) && this.part.words.every((earlier) => ASSIGNMENT.test(earlier));
    const expanded = isAssignment ? [word.chars] : expandBraces(word.chars);
    if (expanded === undefined) {
      this.out.tooDeep.push(value);
      return;
    }
    for (const chars of expanded) {
      this.part.words.push(textOf(chars));
      this.part.globs.push(globPattern(chars));
    }
    if (this.definesFunction) {
      // The body that follows is commands of its own, as in `f() { …; }`.
      this.definesFunction = false;
      this.endPart();
    }
  }

  /** After an operator: the command that must follow `&&`, `||` or `|` (`ls &&` is a syntax error), or none (`;`, `&`). */
  private expectCommand(operator: string | undefined): void {
    if (this.dangling) this.markIncomplete(`\`${this.dangling}\` with no command after it`);
    this.dangling = operator;
  }

  /** Notes what bash would reject in this script, once per kind: the policy lets no rule allow such a command. */
  private markIncomplete(what: string): void {
    const script = this.src.trim();
    if (!this.out.incomplete.some((known) => known.script === script && known.what === what)) this.out.incomplete.push({ script, what });
  }

  private endPart(): Unit | undefined {
    this.finishWord();
    this.pendingRedirect = undefined;
    const { words, globs, redirects, start, end } = this.part;
    this.part = emptyPart();
    if (words.length === 0 && redirects.length === 0) return undefined;
    const part: ShellPart = {
      text: this.src.slice(start, end).trim(),
      words,
      redirects,
      ...(globs.some((glob) => glob !== undefined) && { globs }),
      ...(this.depth > 0 && { nested: true as const }),
    };
    const unit: Unit = { part, ...(this.pipeFrom && { pipedFrom: this.pipeFrom }) };
    this.pipeFrom = undefined;
    this.units.push(unit);
    this.addPart(part);
    return unit;
  }

  private addPart(part: ShellPart): void {
    this.out.parts.push(part);
    this.descendIntoPart(part);
  }

  /** A part made up by the scanner (`find -exec …`, what `xargs` runs), unless it is nested too deeply. */
  private addDerivedPart(words: string[]): void {
    if (words.length === 0) return;
    if (this.depth < MAX_NESTING) this.addPart({ text: words.join(" "), words, redirects: [], nested: true });
    else this.out.tooDeep.push(words.join(" "));
  }

  /** Commands a part runs through its arguments: `bash -c '…'`, `eval …`, `find -exec …`. */
  private descendIntoPart(part: ShellPart): void {
    const [name = "", ...args] = commandWords(part.words);
    if (/\s/.test(name) && name !== part.words[0]) {
      // A command "word" with spaces after a wrapper is a script it runs: `watch 'a | b'`.
      this.nested([name, ...args].join(" "));
    } else if (SCRIPT_RUNNERS.has(name)) {
      const commandOption = args.findIndex(isCommandOption);
      const script = commandOption < 0 ? undefined : args.slice(commandOption + 1).find((arg) => !arg.startsWith("-"));
      if (script !== undefined) this.nested(script);
    } else if (name === "eval") {
      this.nested(args.join(" "));
    } else if (name === "find") {
      args.forEach((arg, index) => {
        if (!FIND_ACTIONS.has(arg)) return;
        const rest = args.slice(index + 1);
        const end = rest.findIndex((word) => word === ";" || word === "+");
        this.addDerivedPart(end < 0 ? rest : rest.slice(0, end));
      });
    }
  }

  /**
   * What a part runs from its stdin, when the command shows that text: a shell or `. /dev/stdin`
   * runs it as a script (`echo 'rm -rf /' | bash`, `bash <<< …`, a heredoc), `xargs` appends it
   * to its command (`echo /* | xargs rm -rf`). Stdin that comes from a file or another program
   * (`cat script.sh | bash`) is not visible: the script is what that file holds at run time.
   */
  private descendIntoStdin(unit: Unit): void {
    const { words } = unit.part;
    const { index, wrappers } = commandStart(words);
    const [name = "", ...args] = commandWords(words);
    const xargs = wrappers.find((at) => commandName(words[at]!) === "xargs");
    const runsStdin =
      (SHELLS.has(name) && !args.some(isCommandOption) && readsScriptFromStdin(args)) ||
      ((name === "." || name === "source") && STDIN_FILES.has(args[0] ?? ""));
    if (!runsStdin && xargs === undefined) return;
    const stdin = this.visibleStdin(unit);
    if (stdin === undefined) return;
    if (runsStdin) this.nested(stdin);
    else this.xargsRuns(words.slice(xargs! + 1, index), words.slice(index), stdin);
  }

  /** The commands `xargs` runs: `command` with the items of `stdin` appended, or put in place of `-I`'s string. */
  private xargsRuns(options: string[], command: string[], stdin: string): void {
    const run = command.length > 0 ? command : ["echo"];
    const replace = options.reduce<string | undefined>((found, option, i) => {
      if (option === "-I") return options[i + 1];
      if (/^-I./.test(option)) return option.slice(2);
      if (option === "-i" || option === "--replace") return "{}";
      if (/^(?:-i|--replace=)./.test(option)) return option.slice(option.startsWith("-i") ? 2 : 10);
      return found;
    }, undefined);
    if (replace === undefined) {
      this.addDerivedPart([...run, ...xargsItems(stdin)]);
      return;
    }
    const lines = stdin
      .split("\n")
      .map((line) => line.trimStart())
      .filter((line) => line !== "");
    for (const line of lines.slice(0, 64)) this.addDerivedPart(run.map((word) => word.split(replace).join(line)));
  }

  /** The text a part reads on stdin, when the command shows it: a here-string, a heredoc, or what `echo`/`printf` pipe in. */
  private visibleStdin(unit: Unit, hops = 0): string | undefined {
    const input = unit.part.redirects.filter((redirect) => STDIN_REDIRECT.test(redirect.op)).at(-1);
    if (input) {
      if (input.op.endsWith("<<<")) return `${input.target}\n`;
      if (input.op.endsWith("<<") || input.op.endsWith("<<-")) return input.body;
      return undefined; // a file or a descriptor
    }
    const producer = unit.pipedFrom;
    if (producer === undefined || hops > 8) return undefined;
    const [name, ...args] = commandWords(producer.part.words);
    const output =
      name === "echo"
        ? echoOutput(args)
        : name === "printf"
          ? printfOutput(args)
          : name === "cat" && operands(args).every((arg) => arg === "-")
            ? this.visibleStdin(producer, hops + 1)
            : undefined;
    return output !== undefined && output.length <= MAX_STDIN_CHARS ? output : undefined;
  }

  /** Each pipeline of this script, normalised, for patterns that span a pipe (`curl … | sh`). */
  private addPipelines(): void {
    const feeding = new Set(this.units.map((unit) => unit.pipedFrom));
    for (const last of this.units) {
      if (last.pipedFrom === undefined || feeding.has(last)) continue;
      const pipeline: string[] = [];
      for (let unit: Unit | undefined = last; unit; unit = unit.pipedFrom) pipeline.unshift(normalisedText(unit.part));
      this.out.pipelines.push(pipeline.join(" | "));
    }
  }

  private nested(script: string): void {
    new ShellScanner(script, this.depth + 1, this.out).run();
  }

  // -- quoting and expansions ------------------------------------------------------------------

  private readSingleQuoted(): void {
    const end = this.src.indexOf("'", this.pos + 1);
    if (end < 0) this.markIncomplete("an unclosed '");
    const close = end < 0 ? this.src.length : end;
    this.append(this.src.slice(this.pos + 1, close), true);
    this.pos = close + 1;
  }

  /**
   * Reads double-quoted text (or an expanding heredoc body, `terminator` undefined) from `from`,
   * appending its value to the current word when there is one, and descending into command
   * substitutions. Returns the position after the terminator.
   */
  private readExpanding(from: number, terminator: '"' | undefined, limit = this.src.length): number {
    let i = from;
    while (i < limit) {
      const c = this.src[i]!;
      if (c === terminator) return i + 1;
      if (c === "\\" && i + 1 < limit) {
        const escaped = this.src[i + 1]!;
        if (escaped !== "\n") this.appendIfWord('$`"\\'.includes(escaped) ? escaped : `\\${escaped}`);
        i += 2;
      } else if (c === "$" && this.src[i + 1] === "(") {
        const substitution = this.balancedFrom(i + 1);
        this.nested(substitution.inner);
        this.appendIfWord(this.src.slice(i, substitution.end));
        i = substitution.end;
      } else if (c === "`") {
        i = this.readBackticks(i, false);
      } else {
        this.appendIfWord(c);
        i += 1;
      }
    }
    if (terminator !== undefined) this.markIncomplete(`an unclosed ${terminator}`);
    return limit;
  }

  private appendIfWord(text: string): void {
    if (this.word) this.append(text, true);
  }

  private readDollar(): void {
    const next = this.src[this.pos + 1];
    if (next === "(") {
      const substitution = this.balancedFrom(this.pos + 1);
      this.nested(substitution.inner);
      this.appendExpansion(this.src.slice(this.pos, substitution.end));
      this.pos = substitution.end;
    } else if (next === "{") {
      const end = this.parameterEnd(this.pos + 1);
      if (SPLITS_ON_IFS.test(this.src.slice(this.pos + 2, end))) {
        // Unquoted `${IFS}` expands to blanks that split words: `rm${IFS}-rf${IFS}/` is `rm -rf /`.
        this.finishWord();
        this.pos = end;
        return;
      }
      // `${v=`cmd`}`, `${v:-$(cmd)}`: the substitutions inside run too.
      const word = this.word;
      this.word = undefined;
      this.readExpanding(this.pos + 2, undefined, Math.max(this.pos + 2, end - 1));
      this.word = word;
      this.appendExpansion(this.src.slice(this.pos, end));
      this.pos = end;
    } else if (next === "'") {
      this.readAnsiCQuoted();
    } else if (next === '"') {
      this.startWord(true);
      this.pos = this.readExpanding(this.pos + 2, '"');
    } else if (SPLITS_ON_IFS.test(this.src.slice(this.pos + 1, this.pos + 5))) {
      this.finishWord();
      this.pos += 4;
    } else {
      this.append("$", false);
      this.pos += 1;
    }
  }

  /**
   * The position after the `}` that closes the `${` whose brace is at `open`. As in bash, only
   * `${` nests; quotes, `$( … )` and backticks hide a `}`.
   */
  private parameterEnd(open: number): number {
    let depth = 0;
    let i = open;
    while (i < this.src.length) {
      const c = this.src[i]!;
      const quotedEnd = this.quotedEnd(i);
      if (quotedEnd !== undefined) i = quotedEnd;
      else if (c === "$" && this.src[i + 1] === "(") i = this.balancedFrom(i + 1).end;
      else if (c === "$" && this.src[i + 1] === "{") {
        depth += 1;
        i += 2;
      } else if (c === "{" && i === open) {
        depth += 1;
        i += 1;
      } else if (c === "}" && --depth === 0) return i + 1;
      else i += 1;
    }
    this.markIncomplete("an unclosed ${");
    return this.src.length;
  }

  /** `$'…'`: C escapes, so `$'\x72m' -rf /` is seen as `rm -rf /`. */
  private readAnsiCQuoted(): void {
    let i = this.pos + 2;
    let value = "";
    while (i < this.src.length && this.src[i] !== "'") {
      if (this.src[i] === "\\" && i + 1 < this.src.length) {
        const escape = decodeAnsiCEscape(this.src, i + 1);
        value += escape.value;
        i = escape.end;
      } else {
        value += this.src[i];
        i += 1;
      }
    }
    if (i >= this.src.length) this.markIncomplete("an unclosed $'");
    this.append(value, true);
    this.pos = i + 1;
  }

  /** Reads `` `…` `` at `from`, descends into it and returns the position after it. */
  private readBackticks(from: number, startsWord = true): number {
    let i = from + 1;
    while (i < this.src.length && this.src[i] !== "`") i += this.src[i] === "\\" ? 2 : 1;
    if (i >= this.src.length) this.markIncomplete("an unclosed `");
    const end = Math.min(i + 1, this.src.length);
    this.nested(this.src.slice(from + 1, i).replace(/\\([`$\\])/g, "$1"));
    if (startsWord) this.appendExpansion(this.src.slice(from, end));
    else this.appendIfWord(this.src.slice(from, end));
    return end;
  }

  private readProcessSubstitution(): void {
    const substitution = this.balancedFrom(this.pos + 1);
    this.nested(substitution.inner);
    this.appendExpansion(this.src.slice(this.pos, substitution.end));
    this.pos = substitution.end;
  }

  /** Where the escape or quoted text at `i` (`\\x`, `'…'`, `"…"`, `` `…` ``) ends; undefined when none starts there. */
  private quotedEnd(i: number): number | undefined {
    switch (this.src[i]) {
      case "\\":
        return i + 2;
      case "'":
        return this.after("'", i + 1);
      case '"':
        return this.afterDoubleQuoted(i + 1);
      case "`":
        return this.after("`", i + 1);
      default:
        return undefined;
    }
  }

  /** The text inside the parenthesis at `open` and the position after its match (or the end). */
  private balancedFrom(open: number): { inner: string; end: number } {
    let depth = 0;
    let i = open;
    while (i < this.src.length) {
      const c = this.src[i]!;
      const quotedEnd = this.quotedEnd(i);
      if (quotedEnd !== undefined) i = quotedEnd;
      else {
        if (c === "(") depth += 1;
        if (c === ")" && --depth === 0) return { inner: this.src.slice(open + 1, i), end: i + 1 };
        i += 1;
      }
    }
    this.markIncomplete("an unclosed (");
    return { inner: this.src.slice(open + 1), end: this.src.length };
  }

  private after(quote: string, from: number): number {
    const close = this.src.indexOf(quote, from);
    return close < 0 ? this.src.length : close + 1;
  }

  private afterDoubleQuoted(from: number): number {
    let i = from;
    while (i < this.src.length && this.src[i] !== '"') i += this.src[i] === "\\" ? 2 : 1;
    return i + 1;
  }

  // -- redirections and heredocs ---------------------------------------------------------------

  private readRedirectOperator(): void {
    const op = REDIRECT_OPERATOR.exec(this.src.slice(this.pos))![0];
    // `2>err.log`: digits right before the operator are its file descriptor, not a word.
    const fd = this.word && !this.word.quoted && /^\d+$/.test(textOf(this.word.chars)) ? this.word : undefined;
    if (fd) this.word = undefined;
    else this.finishWord();
    this.pendingRedirect = { op: (fd ? textOf(fd.chars) : "") + op, start: fd?.start ?? this.pos };
    this.pos += op.length;
  }

  /** After a newline: the bodies of the heredocs started on the line just ended. */
  private readHeredocBodies(): void {
    for (const heredoc of this.heredocs) {
      const delimiter = heredoc.redirect.target;
      const bodyStart = this.pos;
      let lineStart = this.pos;
      const lines: string[] = [];
      while (lineStart < this.src.length) {
        const newline = this.src.indexOf("\n", lineStart);
        const lineEnd = newline < 0 ? this.src.length : newline;
        const line = this.src.slice(lineStart, lineEnd);
        const stripped = heredoc.stripTabs ? line.replace(/^\t+/, "") : line;
        if (stripped === delimiter) break;
        lines.push(stripped);
        lineStart = lineEnd + 1;
      }
      const bodyEnd = Math.min(lineStart, this.src.length);
      heredoc.redirect.body = lines.map((line) => `${line}\n`).join("");
      if (heredoc.expands) this.readExpanding(bodyStart, undefined, bodyEnd);
      const delimiterEnd = this.src.indexOf("\n", bodyEnd);
      this.pos = delimiterEnd < 0 ? this.src.length : delimiterEnd + 1;
    }
    this.heredocs = [];
  }
}

/** `IFS` as the name of an expansion (`$IFS`, `${IFS}`, `${IFS:0:1}`), not `$IFSX` or `${#IFS}`. */
const SPLITS_ON_IFS = /^IFS(?![A-Za-z0-9_])/;

/** `-c`, `-lc`, `-xc`: the option after which a shell takes its script. */
function isCommandOption(arg: string): boolean {
  return /^-[A-Za-z]*c[A-Za-z]*$/.test(arg);
}

/** Whether a shell (without `-c`) runs its stdin: no script file, `-s`, or a script file that is stdin. */
function readsScriptFromStdin(args: readonly string[]): boolean {
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === "--") return args[i + 1] === undefined || STDIN_FILES.has(args[i + 1]!);
    if (/^-[A-Za-z]*s[A-Za-z]*$/.test(arg)) return true;
    // Options that take a value: `-o pipefail`, `+O extglob`, `--rcfile FILE`.
    if (/^[-+][A-Za-z]*[oO]$/.test(arg) || arg === "--rcfile" || arg === "--init-file") i += 1;
    else if (!/^[-+]./.test(arg)) return STDIN_FILES.has(arg);
  }
  return true;
}

function emptyPart(): PartBuilder {
  return { words: [], globs: [], redirects: [], start: Number.POSITIVE_INFINITY, end: 0 };
}

function textOf(chars: readonly WordChar[]): string {
  return chars.map((char) => char.c).join("");
}

/**
 * The word as a glob pattern (quoted characters escaped) when it has an unquoted `*`, `?` or `[`,
 * else undefined. Characters glob libraries read as syntax beyond bash's (braces, parentheses,
 * `|`, `+`, `@`) are escaped too: after brace expansion they are literal.
 */
function globPattern(chars: readonly WordChar[]): string | undefined {
  if (!chars.some((char) => !char.literal && "*?[".includes(char.c))) return undefined;
  return chars
    .map(({ c, literal }) => ((literal && /[^A-Za-z0-9_/.~-]/.test(c)) || (!literal && "{}()|+@\\".includes(c)) ? `\\${c}` : c))
    .join("");
}

/**
 * Bash's brace expansion of a word: `a{b,c}d` → `abd acd`, nested and repeated groups included
 * (`{x..y}` sequences are left as written). Only unquoted braces and commas count. Undefined when
 * the word expands to more than MAX_BRACE_EXPANSIONS words.
 */
function expandBraces(chars: readonly WordChar[]): WordChar[][] | undefined {
  const results = new Map<string, WordChar[]>();
  const pending: (readonly WordChar[])[] = [chars];
  while (pending.length > 0) {
    const word = pending.pop()!;
    const group = firstBraceGroup(word);
    if (group === undefined) {
      results.set(textOf(word), [...word]);
      if (results.size > MAX_BRACE_EXPANSIONS) return undefined;
      continue;
    }
    const { open, commas, close } = group;
    const bounds = [open, ...commas, close];
    // Reversed, so the first alternative is expanded (and listed) first.
    for (let i = bounds.length - 2; i >= 0; i -= 1) {
      pending.push([...word.slice(0, open), ...word.slice(bounds[i]! + 1, bounds[i + 1]), ...word.slice(close + 1)]);
    }
    if (pending.length + results.size > MAX_BRACE_EXPANSIONS) return undefined;
  }
  return [...results.values()];
}

/** The first unquoted `{…}` with a top-level comma: where it opens, its commas and where it closes. */
function firstBraceGroup(chars: readonly WordChar[]): { open: number; commas: number[]; close: number } | undefined {
  const isSyntax = (i: number, c: string) => chars[i]!.c === c && !chars[i]!.literal;
  for (let open = 0; open < chars.length; open += 1) {
    if (!isSyntax(open, "{")) continue;
    let depth = 0;
    const commas: number[] = [];
    for (let i = open; i < chars.length; i += 1) {
      if (isSyntax(i, "{")) depth += 1;
      else if (isSyntax(i, ",") && depth === 1) commas.push(i);
      else if (isSyntax(i, "}") && --depth === 0) {
        if (commas.length > 0) return { open, commas, close: i };
        break;
      }
    }
  }
  return undefined;
}

/** What `echo ARGS` prints; with `-e`, backslash escapes decoded. */
function echoOutput(args: readonly string[]): string {
  let index = 0;
  let escapes = false;
  while (index < args.length && /^-[neE]+$/.test(args[index]!)) {
    escapes = /e[^E]*$/.test(args[index]!) || (escapes && !args[index]!.includes("E"));
    index += 1;
  }
  const text = `${args.slice(index).join(" ")}\n`;
  return escapes ? decodeBackslashEscapes(text) : text;
}

/** What `printf FORMAT ARGS` prints, near enough: each conversion takes the next argument, the format repeats while arguments remain. */
function printfOutput(args: readonly string[]): string | undefined {
  const [format, ...values] = args[0] === "--" ? args.slice(1) : args;
  if (format === undefined || format.startsWith("-v")) return undefined; // `-v VAR` prints nothing
  let output = "";
  let used = 0;
  do {
    const before = used;
    output += format.replace(/%(?:%|[-+ #0]*\d*(?:\.\d*)?[A-Za-z])/g, (conversion) => (conversion === "%%" ? "%" : (values[used++] ?? "")));
    if (used === before) break;
  } while (used < values.length && output.length <= MAX_STDIN_CHARS);
  return decodeBackslashEscapes(output);
}

/** The arguments `xargs` reads from its input: blank-separated, with quotes and backslashes as xargs reads them. */
function xargsItems(input: string): string[] {
  const items: string[] = [];
  const pattern = /'([^']*)'|"([^"]*)"|\\(.)|(\s+)|([^\s'"\\]+)/gs;
  let current: string | undefined;
  for (const match of input.matchAll(pattern)) {
    if (match[4] !== undefined) {
      if (current !== undefined) items.push(current);
      current = undefined;
    } else current = (current ?? "") + (match[1] ?? match[2] ?? match[3] ?? match[5] ?? "");
  }
  if (current !== undefined) items.push(current);
  return items;
}

function decodeBackslashEscapes(text: string): string {
  let value = "";
  let i = 0;
  while (i < text.length) {
    if (text[i] === "\\" && i + 1 < text.length) {
      const escape = decodeAnsiCEscape(text, i + 1);
      value += escape.value;
      i = escape.end;
    } else {
      value += text[i];
      i += 1;
    }
  }
  return value;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/** The escape after the backslash at `start - 1` inside `$'…'`, and where it ends. */
function decodeAnsiCEscape(src: string, start: number): { value: string; end: number } {
  const c = src[start]!;
  if (c in SIMPLE_ESCAPES) return { value: SIMPLE_ESCAPES[c]!, end: start + 1 };
  const numeric = [
    { pattern: /^x([0-9A-Fa-f]{1,2})/, radix: 16 },
    { pattern: /^u([0-9A-Fa-f]{1,4})/, radix: 16 },
    { pattern: /^U([0-9A-Fa-f]{1,8})/, radix: 16 },
    { pattern: /^([0-7]{1,3})/, radix: 8 },
  ];
  for (const { pattern, radix } of numeric) {
    const match = pattern.exec(src.slice(start, start + 9));
    if (match) {
      const codePoint = Math.min(Number.parseInt(match[1]!, radix), 0x10ffff);
      return { value: String.fromCodePoint(codePoint), end: start + match[0].length };
    }
  }
  return { value: `\\${c}`, end: start + 1 };
}
