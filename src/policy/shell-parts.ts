/**
 * Splits a shell command into the simple commands bash would run, so the policy can check each one
 * (`echo hi && rm -rf ~` is two commands, and `echo $(rm -rf ~)` too).
 *
 * A purpose-built scanner rather than `shell-quote`: that parser drops backticks, does not see
 * `$( … )` inside double quotes (which bash expands), has no nesting, and expands `$HOME` to "" —
 * each of which would hide a command from the policy. This scanner follows bash's quoting rules
 * (single, double, `$'…'`, backslashes), and splits on `&&`, `||`, `;`, `|`, `&` and newlines; it
 * descends into `$( … )`, backticks, `<( … )`, subshells, `{ …; }`, heredoc bodies that expand,
 * `bash -c '…'`, `eval …`, `find -exec` and wrappers (`env`, `timeout`, `xargs`, `watch` …).
 * It is not a full bash parser: where it is unsure it errs towards finding more commands, never
 * fewer, and what it cannot follow is reported (`tooDeep`). Shell can never be fully sandboxed by
 * parsing: variables, scripts and interpreters (`python -c`) run code no scanner can see.
 */

/** A redirection of a simple command, e.g. `{ op: ">>", target: "log.txt" }`. */
export interface Redirect {
  op: string;
  target: string;
}

/** One simple command. */
export interface ShellPart {
  /** Its source text, trimmed: what users see and raw patterns match. */
  text: string;
  /** Words after quote removal; `$VAR`, `~`, globs and substitutions are left as written. */
  words: string[];
  redirects: Redirect[];
}

export interface ParsedShellCommand {
  /** Every simple command, nested ones included, in source order. */
  parts: ShellPart[];
  /** The command and every script nested in it (`$( … )`, `bash -c`, …), outermost first. */
  scripts: string[];
  /** Scripts nested deeper than the scanner follows: they could not be checked. */
  tooDeep: string[];
}

export function parseShellCommand(command: string): ParsedShellCommand {
  const parsed: ParsedShellCommand = { parts: [], scripts: [], tooDeep: [] };
  new ShellScanner(command, 0, parsed).run();
  return parsed;
}

/**
 * The words that name the command and its arguments: leading `VAR=value` assignments and
 * wrappers that run their argument as a command (`env`, `nohup`, `timeout 5`, `xargs` …) are
 * skipped, and `/usr/bin/rm` is named `rm`. Empty for a bare assignment.
 */
export function commandWords(words: readonly string[]): string[] {
  let index = 0;
  while (index < words.length) {
    const word = words[index]!;
    if (ASSIGNMENT.test(word)) {
      index += 1;
      continue;
    }
    const wrapper = WRAPPERS.get(commandName(word));
    if (wrapper === undefined) break;
    index += 1;
    while (index < words.length && isWrapperArgument(words[index]!)) {
      index += wrapper.includes(words[index]!) ? 2 : 1;
    }
  }
  const [name, ...args] = words.slice(index);
  return name === undefined ? [] : [commandName(name), ...args];
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

/** Commands that run their arguments as a command, with their options that take a value. */
const WRAPPERS = new Map<string, readonly string[]>([
  ["command", []],
  ["builtin", []],
  ["exec", ["-a"]],
  ["nohup", []],
  ["time", []],
  ["nice", ["-n", "--adjustment"]],
  ["ionice", ["-c", "-n", "-p"]],
  // Not `-S`: its value is the command line itself (seen as a script below).
  ["env", ["-u", "--unset", "-C", "--chdir"]],
  ["stdbuf", ["-i", "-o", "-e"]],
  ["timeout", ["-s", "--signal", "-k", "--kill-after"]],
  ["xargs", ["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs", "--delimiter", "--arg-file"]],
  ["setsid", []],
  ["unbuffer", []],
  ["watch", ["-n", "--interval"]],
]);

/** Options, their values, `VAR=x` of env, and durations of timeout/nice. */
function isWrapperArgument(word: string): boolean {
  return word.startsWith("-") || ASSIGNMENT.test(word) || /^\d+(?:\.\d+)?[smhd]?$/.test(word);
}

function commandName(word: string): string {
  return word.startsWith("/") ? (word.split("/").pop() ?? word) : word;
}

/** Commands that run the argument after `-c` as a shell script. */
const SCRIPT_RUNNERS = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox", "script"]);
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

interface WordBuilder {
  value: string;
  start: number;
  /** Any quoting or escaping in the word: a quoted heredoc delimiter disables expansion. */
  quoted: boolean;
}

interface PartBuilder {
  words: string[];
  redirects: Redirect[];
  start: number;
  end: number;
}

interface PendingHeredoc {
  delimiter: string;
  expands: boolean;
  stripTabs: boolean;
}

class ShellScanner {
  private pos = 0;
  private part: PartBuilder = emptyPart();
  private word: WordBuilder | undefined;
  private pendingRedirect: { op: string; start: number } | undefined;
  private heredocs: PendingHeredoc[] = [];

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
        this.pos += next === ";" || next === "&" ? 2 : 1;
        return;
      case "|":
        this.endPart();
        this.pos += next === "|" || next === "&" ? 2 : 1;
        return;
      case "&":
        if (next === ">") {
          this.readRedirectOperator();
          return;
        }
        this.endPart();
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
    this.word ??= { value: "", start: this.pos, quoted: false };
    this.word.quoted ||= quoted;
    return this.word;
  }

  private append(text: string, quoted: boolean): void {
    this.startWord(quoted).value += text;
  }

  private finishWord(): void {
    const word = this.word;
    if (word === undefined) return;
    this.word = undefined;
    this.part.start = Math.min(this.part.start, this.pendingRedirect?.start ?? word.start);
    this.part.end = this.pos;
    if (this.pendingRedirect) {
      const { op } = this.pendingRedirect;
      this.pendingRedirect = undefined;
      this.part.redirects.push({ op, target: word.value });
      if (op === "<<" || op === "<<-") {
        this.heredocs.push({ delimiter: word.value, expands: !word.quoted, stripTabs: op === "<<-" });
      }
      return;
    }
    const atCommandPosition = this.part.words.length === 0;
    if (atCommandPosition && !word.quoted && COMMAND_POSITION_KEYWORDS.has(word.value)) {
      if (this.part.redirects.length === 0) this.part.start = Number.POSITIVE_INFINITY;
      return;
    }
    // `{rm,-rf,/}` runs `rm -rf /`: brace expansion of the command word.
    const braceList = /^\{([^{}]*,[^{}]*)\}$/.exec(word.value);
    if (atCommandPosition && !word.quoted && braceList) this.part.words.push(...braceList[1]!.split(","));
    else this.part.words.push(word.value);
  }

  private endPart(): void {
    this.finishWord();
    this.pendingRedirect = undefined;
    const { words, redirects, start, end } = this.part;
    this.part = emptyPart();
    if (words.length === 0 && redirects.length === 0) return;
    this.addPart({ text: this.src.slice(start, end).trim(), words, redirects });
  }

  private addPart(part: ShellPart): void {
    this.out.parts.push(part);
    this.descendIntoPart(part);
  }

  /** Commands a part runs through its arguments: `bash -c '…'`, `eval …`, `find -exec …`. */
  private descendIntoPart(part: ShellPart): void {
    const [name = "", ...args] = commandWords(part.words);
    if (/\s/.test(name) && name !== part.words[0]) {
      // A command "word" with spaces after a wrapper is a script it runs: `watch 'a | b'`.
      this.nested([name, ...args].join(" "));
    } else if (SCRIPT_RUNNERS.has(name)) {
      const commandOption = args.findIndex((arg) => /^-[A-Za-z]*c[A-Za-z]*$/.test(arg));
      const script = commandOption < 0 ? undefined : args.slice(commandOption + 1).find((arg) => !arg.startsWith("-"));
      if (script !== undefined) this.nested(script);
    } else if (name === "eval") {
      this.nested(args.join(" "));
    } else if (name === "find") {
      args.forEach((arg, index) => {
        if (!FIND_ACTIONS.has(arg)) return;
        const rest = args.slice(index + 1);
        const end = rest.findIndex((word) => word === ";" || word === "+");
        const words = end < 0 ? rest : rest.slice(0, end);
        if (words.length === 0) return;
        if (this.depth < MAX_NESTING) this.addPart({ text: words.join(" "), words, redirects: [] });
        else this.out.tooDeep.push(words.join(" "));
      });
    }
  }

  private nested(script: string): void {
    new ShellScanner(script, this.depth + 1, this.out).run();
  }

  // -- quoting and expansions ------------------------------------------------------------------

  private readSingleQuoted(): void {
    const end = this.src.indexOf("'", this.pos + 1);
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
        if (escaped !== "\n") this.appendIfWord("$`\"\\".includes(escaped) ? escaped : `\\${escaped}`);
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
    return limit;
  }

  private appendIfWord(text: string): void {
    if (this.word) this.word.value += text;
  }

  private readDollar(): void {
    const next = this.src[this.pos + 1];
    if (next === "(") {
      const substitution = this.balancedFrom(this.pos + 1);
      this.nested(substitution.inner);
      this.append(this.src.slice(this.pos, substitution.end), false);
      this.pos = substitution.end;
    } else if (next === "{") {
      const close = this.src.indexOf("}", this.pos);
      const end = close < 0 ? this.src.length : close + 1;
      this.append(this.src.slice(this.pos, end), false);
      this.pos = end;
    } else if (next === "'") {
      this.readAnsiCQuoted();
    } else if (next === '"') {
      this.startWord(true);
      this.pos = this.readExpanding(this.pos + 2, '"');
    } else {
      this.append("$", false);
      this.pos += 1;
    }
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
    this.append(value, true);
    this.pos = i + 1;
  }

  /** Reads `` `…` `` at `from`, descends into it and returns the position after it. */
  private readBackticks(from: number, startsWord = true): number {
    let i = from + 1;
    while (i < this.src.length && this.src[i] !== "`") i += this.src[i] === "\\" ? 2 : 1;
    const end = Math.min(i + 1, this.src.length);
    this.nested(this.src.slice(from + 1, i).replace(/\\([`$\\])/g, "$1"));
    if (startsWord) this.append(this.src.slice(from, end), false);
    else this.appendIfWord(this.src.slice(from, end));
    return end;
  }

  private readProcessSubstitution(): void {
    const substitution = this.balancedFrom(this.pos + 1);
    this.nested(substitution.inner);
    this.append(this.src.slice(this.pos, substitution.end), false);
    this.pos = substitution.end;
  }

  /** The text inside the parenthesis at `open` and the position after its match (or the end). */
  private balancedFrom(open: number): { inner: string; end: number } {
    let depth = 0;
    let i = open;
    while (i < this.src.length) {
      const c = this.src[i]!;
      if (c === "\\") i += 2;
      else if (c === "'") i = this.after("'", i + 1);
      else if (c === '"') i = this.afterDoubleQuoted(i + 1);
      else if (c === "`") i = this.after("`", i + 1);
      else {
        if (c === "(") depth += 1;
        if (c === ")" && --depth === 0) return { inner: this.src.slice(open + 1, i), end: i + 1 };
        i += 1;
      }
    }
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
    const fd = this.word && !this.word.quoted && /^\d+$/.test(this.word.value) ? this.word : undefined;
    if (fd) this.word = undefined;
    else this.finishWord();
    this.pendingRedirect = { op: (fd?.value ?? "") + op, start: fd?.start ?? this.pos };
    this.pos += op.length;
  }

  /** After a newline: the bodies of the heredocs started on the line just ended. */
  private readHeredocBodies(): void {
    for (const heredoc of this.heredocs) {
      const bodyStart = this.pos;
      let lineStart = this.pos;
      while (lineStart < this.src.length) {
        const newline = this.src.indexOf("\n", lineStart);
        const lineEnd = newline < 0 ? this.src.length : newline;
        const line = this.src.slice(lineStart, lineEnd);
        if ((heredoc.stripTabs ? line.replace(/^\t+/, "") : line) === heredoc.delimiter) break;
        lineStart = lineEnd + 1;
      }
      const bodyEnd = Math.min(lineStart, this.src.length);
      if (heredoc.expands) this.readExpanding(bodyStart, undefined, bodyEnd);
      const delimiterEnd = this.src.indexOf("\n", bodyEnd);
      this.pos = delimiterEnd < 0 ? this.src.length : delimiterEnd + 1;
    }
    this.heredocs = [];
  }
}

function emptyPart(): PartBuilder {
  return { words: [], redirects: [], start: Number.POSITIVE_INFINITY, end: 0 };
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
