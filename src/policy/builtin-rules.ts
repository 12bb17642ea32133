/**
 * The rules that always apply. Destructive commands are denied at BUILTIN_DENY_PRIORITY, above
 * every priority a rule file may use, so no graph or user file can lower this floor. Sensitive
 * files and history-rewriting git commands ask at BUILTIN_ASK_PRIORITY: a user rule with a higher
 * priority may allow them (e.g. a project's harmless `.env.test`).
 *
 * Shell patterns are tested against each simple command (as written, and normalised: quotes
 * removed, `VAR=x`/`env`/`nohup`… prefixes dropped, `/bin/rm` named `rm`) and against each whole
 * script, so `^rm` also catches `FOO=1 /bin/r'm' -rf /` and pipelines such as `curl … | sh` are seen.
 */
import { homedir } from "node:os";
import { escapeRegExp } from "./match.js";
import type { PolicyRule } from "../state/rules.js";

export const BUILTIN_DENY_PRIORITY = 1000;
export const BUILTIN_ASK_PRIORITY = 100;

/**
 * Named in verdicts that deny a path outside the workspace. Not a pattern rule (resolving
 * symlinks needs the file system), so it is in no rule list.
 */
export const WORKSPACE_CONFINEMENT: PolicyRule = {
  tool: "*",
  decision: "deny",
  priority: BUILTIN_DENY_PRIORITY,
  reason: "tools may only touch paths inside the workspace",
  source: "builtin",
  origin: "workspace confinement",
};

/** Named in verdicts that deny a shell command nested too deeply for the scanner to follow. */
export const TOO_DEEP_TO_CHECK: PolicyRule = {
  tool: "shell",
  decision: "deny",
  priority: BUILTIN_DENY_PRIORITY,
  reason: "is too complex to check: it nests commands too deeply, or a word expands to too many",
  source: "builtin",
  origin: "shell scanner",
};

// Word boundaries in shell text and paths.
const END = String.raw`(?=$|[\s;|&)<>'"])`;
const START = String.raw`(?:^|[\s/=:<>'"(])`;
const NAME_CHAR = String.raw`[^\s/;|&()<>'"]`;
const WORD_END = String.raw`(?=$|\s)`;

const HOME = homedir();
/** `~user`: that user's home (`~root`). */
const TILDE_USER = String.raw`~[A-Za-z_][A-Za-z0-9_.-]*`;
const HOME_FORMS = [
  String.raw`~`,
  TILDE_USER,
  String.raw`\$HOME`,
  String.raw`\$\{HOME\}`,
  ...(HOME.length > 1 ? [escapeRegExp(HOME)] : []),
];
/** `/`, `/*`, `~`, `~/`, `$HOME/*`, the home directory's path … */
const ROOT_OR_HOME = String.raw`(?:/+[.*]?|(?:${HOME_FORMS.join("|")})/*\*?)`;
const ANY_HOME = String.raw`(?:${HOME_FORMS.join("|")}|/root|/home/[^/\s]+|/Users/[^/\s]+)`;
const INTERPRETER = String.raw`(?:(?:ba|z|da|k|mk|fi)?sh|python[0-9.]*|perl|ruby|node|php|bun|deno)`;
/** What runs a script from its stdin: an interpreter (also `busybox sh`), or `. /dev/stdin`. */
const RUNS_STDIN = String.raw`(?:(?:busybox\s+)?['"]?(?:\S*/)?${INTERPRETER}['"]?|(?:source|\.)\s+(?:/dev/stdin|/dev/fd/0|/proc/self/fd/0))${END}`;
/** A function name in a definition (`f()`, `function f`), for fork bombs. */
const FUNCTION_NAME = String.raw`[^\s(){}|;&<>'"]+`;
const DISK_DEVICE = String.raw`/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|mapper/|md\d|dm-|loop\d)`;

/** Credential stores under any home directory, and the system's password and sudo files: denied. */
const HOME_CREDENTIALS = [
  ".ssh",
  ".aws",
  ".gnupg",
  ".kube",
  ".docker",
  ".azure",
  ".config/gcloud",
  ".netrc",
  ".git-credentials",
  ".npmrc",
  ".pypirc",
  ".pgpass",
];
const SYSTEM_CREDENTIALS = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers"];

/** A path segment that stands for any name (a user's directory in `/home/<name>`): matched against a glob segment as written. */
const ANY_NAME = /^(?!\.\.?$)[^/]+$/;

/**
 * The credential paths of the deny rule, as path segments: what a glob in a shell word is matched
 * against (`/e?c/shadow`, `~/.ss?`), see glob-forms.ts. A RegExp segment is any segment it
 * matches as written (`/home/*`, `~root`).
 */
export const CREDENTIAL_PATHS: readonly (readonly (string | RegExp)[])[] = [
  ...[
    ["~"],
    [new RegExp(`^${TILDE_USER}$`)],
    ["$HOME"],
    ["${HOME}"],
    ...(HOME.length > 1 ? [HOME.split("/")] : []),
    ["", "root"],
    ["", "home", ANY_NAME],
    ["", "Users", ANY_NAME],
  ].flatMap((home) => HOME_CREDENTIALS.map((credential) => [...home, ...credential.split("/")])),
  ...SYSTEM_CREDENTIALS.map((path) => path.split("/")),
];

const denyCommand = (pattern: string, reason: string): PolicyRule => ({
  tool: "shell",
  pattern,
  decision: "deny",
  priority: BUILTIN_DENY_PRIORITY,
  reason,
  source: "builtin",
});

const askCommand = (pattern: string, reason: string): PolicyRule => ({
  tool: "shell",
  pattern,
  decision: "ask",
  priority: BUILTIN_ASK_PRIORITY,
  reason,
  source: "builtin",
});

const FORK_BOMB = "a fork bomb: it exhausts the machine's processes";
const RUNS_DOWNLOAD = "runs a download as a script: it runs unreviewed code from the network";

const DESTRUCTIVE_COMMANDS: PolicyRule[] = [
  denyCommand(String.raw`^rm\s(?:.*\s)?${ROOT_OR_HOME}${WORD_END}`, "deletes the whole file system or your home directory"),
  denyCommand(String.raw`^rm\s(?:.*\s)?--no-preserve-root${WORD_END}`, "rm --no-preserve-root exists only to delete /"),
  denyCommand(
    String.raw`^(?:mkfs(?:\.\w+)?|mke2fs|mkswap|wipefs|fdisk|sfdisk|cfdisk|parted|blkdiscard)${WORD_END}`,
    "formats or repartitions a disk",
  ),
  denyCommand(String.raw`^dd\s(?:.*\s)?of=/dev/(?!(?:null|zero|stdout|stderr)${WORD_END})`, "dd onto a device overwrites a disk"),
  denyCommand(String.raw`(?:>\|?\s*|^tee\s(?:.*\s)?)${DISK_DEVICE}`, "writes onto a raw disk device"),
  // A function that calls itself in the background or through a pipe: `:(){ :|:& };:`, `f(){ f & f; }`.
  // The name starts a word (the lookbehind), so a long word costs one attempt, not one per character.
  denyCommand(
    String.raw`(?<![^\s;&|(){}])(?:function\s+)?(${FUNCTION_NAME})\s*(?:\(\s*\))?\s*(?:\{[^}]*?|\([^)]*?)` +
      String.raw`(?:(?<![^\s;&|{(])\1\s*(?:&(?!&)|\|(?!\|))|\|&?\s*\1(?=$|[\s;&|)}]))`,
    FORK_BOMB,
  ),
  denyCommand(String.raw`fork\s*(?:\(\s*\))?\s*while\s*fork|while\s*\(?\s*(?:1|true|True)\s*\)?\s*:?\s*(?:os\.)?fork\(\)`, FORK_BOMB),
  denyCommand(
    [
      String.raw`^(?:sudo|sudoedit|su|doas|pkexec|run0|runuser|setpriv|newgrp|ksu|calife)${WORD_END}`,
      // `sg GROUP cmd`, but not ast-grep, which is also called `sg` (`sg run`, `sg -p …`).
      String.raw`^sg\s+(?!(?:run|scan|test|new|lsp|completions|help)${WORD_END}|-[\w-])`,
    ].join("|"),
    "runs commands as root or another user: the agent must not escalate privileges",
  ),
  denyCommand(
    String.raw`\b(?:curl|wget|fetch|aria2c)\b[^;&\n]*\|&?\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+(?:\S+=\S*\s+)*)?${RUNS_STDIN}`,
    "pipes a download into an interpreter: it runs unreviewed code from the network",
  ),
  denyCommand(String.raw`(?:^|[\s;|&(])(?:${INTERPRETER}|source|\.)\s+(?:-\S+\s+)*<\(\s*(?:curl|wget)\b`, RUNS_DOWNLOAD),
  denyCommand(
    String.raw`(?:\beval\s+|\b${INTERPRETER}\s+-[A-Za-z]*[ce]\s+|(?:^|[\s;|&(])(?:${INTERPRETER}|source|\.)(?:\s+-\S+)*\s*<<<\s*)` +
      String.raw`["']?(?:\$\(|\x60)\s*(?:curl|wget)\b`,
    RUNS_DOWNLOAD,
  ),
  denyCommand(
    String.raw`^ch(?:mod|own|grp)\s(?:.*\s)?${ROOT_OR_HOME}${WORD_END}`,
    "changes permissions or owner of the whole file system or your home",
  ),
  denyCommand(
    [
      String.raw`^(?:shutdown|reboot|halt|poweroff)${WORD_END}`,
      String.raw`^(?:systemctl|loginctl)\s(?:.*\s)?(?:poweroff|reboot|halt|suspend|hibernate|kexec)${WORD_END}`,
      String.raw`^(?:init|telinit)\s+[06]${WORD_END}`,
    ].join("|"),
    "shuts down or reboots the machine",
  ),
  denyCommand(String.raw`^mv\s(?:.*\s)?/dev/null$`, "moving files onto /dev/null destroys them"),
  denyCommand(String.raw`^crontab\s(?:.*\s)?-[A-Za-z]*r`, "crontab -r deletes all your cron jobs without confirmation"),
  denyCommand(String.raw`^kill\s(?:.*\s)?-1(?=$|\s+\d*[<>&])|^killall5${WORD_END}`, "signals every process you own"),
  denyCommand(
    String.raw`${ANY_HOME}/(?:${HOME_CREDENTIALS.map(escapeRegExp).join("|")})(?=$|[/\s;|&)<>'"])` +
      String.raw`|(?:${SYSTEM_CREDENTIALS.map(escapeRegExp).join("|")})${END}`,
    "touches your credentials outside the workspace (~/.ssh, ~/.aws, ~/.gnupg …)",
  ),
];

/** Options before a git subcommand, those that take a separate value with it (`git -C repo reset`). */
const GIT_GLOBAL_OPTIONS = String.raw`(?:\s+(?:-[Cc]|--git-dir|--work-tree|--namespace|--config-env)\s+\S+|\s+-\S*)*`;
const GIT_PUSH_FORCE_OR_DELETE = String.raw`(?:--force(?:-with-lease|-if-includes)?(?:=\S*)?|--mirror|--delete|-[A-Za-z]*[fd][A-Za-z]*|\+\S+|:\S+)`;

/** What cannot be undone from the workspace: these ask even in approval mode `auto`. */
const HISTORY_REWRITING_GIT: PolicyRule[] = [
  askCommand(
    String.raw`^git\s(?:.*\s)?push\s(?:.*\s)?${GIT_PUSH_FORCE_OR_DELETE}${WORD_END}`,
    "force-pushes or deletes on the remote: it can destroy others' work",
  ),
  askCommand(String.raw`^git\s(?:.*\s)?reset\s(?:.*\s)?--hard${WORD_END}`, "git reset --hard discards uncommitted changes"),
  // Every other reset but --soft: it drops what is staged (gone if the working tree changed since) and can move the branch.
  askCommand(
    String.raw`^git${GIT_GLOBAL_OPTIONS}\s+reset${WORD_END}(?!.*\s--soft${WORD_END})`,
    "git reset unstages changes (staged work not in the working tree is lost) and can move the branch",
  ),
  askCommand(String.raw`^git\s(?:.*\s)?clean\s(?:.*\s)?(?:--force|-[A-Za-z]*f[A-Za-z]*)${WORD_END}`, "git clean deletes untracked files"),
  askCommand(
    String.raw`^git\s(?:.*\s)?branch\s(?:.*\s)?(?:-[A-Za-z]*D[A-Za-z]*|--delete\s+--force|--force\s+--delete)${WORD_END}`,
    "deletes a branch even if it is not merged",
  ),
  askCommand(String.raw`^git\s(?:.*\s)?stash\s+(?:clear|drop)${WORD_END}`, "deletes stashed changes"),
].map((rule) => ({ ...rule, asksInAuto: true }));

/** File names that usually hold secrets: asked for by file tools, grep and shell commands alike. */
const SENSITIVE_FILES: { pattern: string; reason: string }[] = [
  {
    pattern: String.raw`${START}\.env(?:\.(?!(?:example|sample|template|dist|defaults)${END})${NAME_CHAR}+)?${END}`,
    reason: ".env files usually hold secrets (API keys, passwords)",
  },
  {
    pattern: String.raw`${START}${NAME_CHAR}*\.(?:pem|key|p12|pfx|jks|keystore|kdbx)${END}`,
    reason: "looks like a private key or key store",
  },
  {
    pattern: String.raw`${START}id_(?:rsa|dsa|ecdsa|ed25519)(?!${NAME_CHAR}*\.pub${END})${NAME_CHAR}*${END}`,
    reason: "looks like an SSH private key",
  },
  { pattern: String.raw`${START}\.ssh(?=$|[/\s;|&)<>'"])`, reason: ".ssh holds SSH keys" },
  {
    pattern: String.raw`${START}\.(?:npmrc|pypirc|netrc|git-credentials|pgpass|htpasswd)${END}`,
    reason: "this file usually holds tokens or passwords",
  },
  {
    pattern: String.raw`${START}credentials(?:\.(?:json|ya?ml|toml|ini|txt|csv|xml|conf|cfg|env))?${END}`,
    reason: "a credentials file",
  },
];

/**
 * Names the rules above ask for, as examples a glob in a shell word is matched against
 * (`cat .en?`, `cat id_*`), see glob-forms.ts.
 */
export const SENSITIVE_NAMES: readonly string[] = [
  ".env",
  ".env.local",
  "id_rsa",
  "id_dsa",
  "id_ecdsa",
  "id_ed25519",
  ".ssh",
  ".npmrc",
  ".pypirc",
  ".netrc",
  ".git-credentials",
  ".pgpass",
  ".htpasswd",
  "credentials",
  "credentials.json",
];

const SENSITIVE_FILE_TOOLS = ["*_file", "grep", "shell"];

export const BUILTIN_RULES: readonly PolicyRule[] = [
  ...DESTRUCTIVE_COMMANDS,
  ...HISTORY_REWRITING_GIT,
  ...SENSITIVE_FILES.flatMap(({ pattern, reason }) =>
    SENSITIVE_FILE_TOOLS.map(
      (tool): PolicyRule => ({
        tool,
        pattern,
        decision: "ask",
        priority: BUILTIN_ASK_PRIORITY,
        reason,
        source: "builtin",
      }),
    ),
  ),
];
