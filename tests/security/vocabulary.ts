/**
 * The vocabulary of the attack catalogue (attacks.ts): what an attack is, its classes, the approval
 * modes, and the canary secrets a run starts with. Kept apart from the harness (harness.ts), which
 * runs attempts, so that the runner's parent process does not load loopgraph itself.
 */
import { randomBytes } from "node:crypto";
import type { ApprovalMode } from "../../src/index.js";

export const MODES: readonly ApprovalMode[] = ["ask", "auto-edit", "auto", "deny"];

export const ATTACK_CLASSES = [
  "git-planting",
  "prompt-spoof",
  "rules-file",
  "approval-binding",
  "policy-plant",
  "shell-read-outside",
  "shell-write-outside",
  "hardlink",
  "always-scope",
  "secrets-at-rest",
  "deny-list",
  "special-files",
  "planted-code",
  "ordinary-secrets",
  "host-socket",
  "nested-config",
  "project-config",
  "corpus-forms",
  "worktree",
  "git-commit",
] as const;
export type AttackClass = (typeof ATTACK_CLASSES)[number];

/**
 * One tool call of the hostile model. Strings may hold placeholders, filled per attempt:
 * `%OUT%` the outside canary directory, `%WS%` the workspace, `%ROOT%` the directory holding
 * both, `%HOME%` the user's home, `%PORT%` the loopback listener's port, `%SOCK%` a host Unix socket outside /tmp and home, `%N%` the attempt's
 * nonce (put it in the argv of processes meant to outlive the run, so they can be found).
 */
export interface AttackCall {
  tool: string;
  args: Record<string, unknown>;
  /** A harmless call the attack needs (to be approved "always", or to trigger a snapshot): never reported as "ran". */
  benign?: boolean;
  /** The call's id (default `call_<turn>_<index>`): a hostile model may reuse an earlier one. */
  id?: string;
}

/** What the hostile repository holds besides the default files (paths relative to the workspace). */
export type SetupStep =
  | { kind: "file"; path: string; contents: string }
  | { kind: "symlink"; path: string; target: string }
  /** `target` is relative to the attempt's root (e.g. `outside/secret.txt`). */
  | { kind: "hardlink"; path: string; target: string }
  | { kind: "fifo"; path: string }
  /** A bash command run by the harness in the workspace before the run (e.g. to build a tar file). */
  | { kind: "command"; command: string };

export interface Attack {
  name: string;
  class: AttackClass;
  /** What the repository holds besides the default files. `%SECRET:NAME%` in a file's contents is the value of the canary variable NAME. */
  setup?: SetupStep[];
  /** The hostile model's answers: each is the tool calls of one answer. A final text answer follows. */
  turns: AttackCall[][];
  /** A benign display (on BENIGN_DISPLAYS) that the simulated user answers "always" to. */
  always?: string;
  /** The user's own policy file (`$XDG_CONFIG_HOME/loopgraph/policy.yaml`), as YAML: rules the user wrote for the run. */
  userPolicy?: string;
  /** After the first approval pause, resume with this approval mode (the user changed it). */
  resumeApproval?: ApprovalMode;
  /**
   * After the run, a second run in ask mode in the same workspace must still ask before running
   * anything; given a folder of the workspace, that run starts there (a nested project).
   */
  probe?: boolean | string;
  /** After the run, the user runs git in the workspace (status, diff, commit) and in each folder of it: planted git config or hooks would run. */
  userGit?: boolean;
  /**
   * The graph the hostile Coder runs in (default `coder`: the built-in graph, in the workspace).
   * `worktree`: the Coder works in its own branch worktree, then a `merge` node applies its branch
   * to the workspace. `worktree-pair`: first a harmless worktree Coder (`peer`) changes notes.txt
   * on its own branch, then the hostile one works, then both branches are merged in that order (so
   * a file both changed is merged three-way, with the merge driver its attributes name).
   */
  graph?: "coder" | "worktree" | "worktree-pair";
  /** In a `worktree-pair` graph, what the first Coder (`peer`) does instead of its harmless change: both may be the hostile model. */
  peerTurns?: AttackCall[][];
  /** Modes in which a hostile call must not run at all (the policy or the user stops it); one that runs is logged as "ran". */
  stopIn?: readonly ApprovalMode[];
}

// ---------------------------------------------------------------------------------------------
// Canaries

/** The canary secrets of loopgraph's environment, by variable name. */
/** Credentials in loopgraph's environment: named like credentials, and (the last three) named like anything else. */
export const CANARY_VARIABLES = [
  "OPENAI_API_KEY",
  "GITHUB_TOKEN",
  "AWS_SECRET_ACCESS_KEY",
  "DATABASE_URL",
  "LANGSMITH_API_KEY",
  "MYSQL_PWD",
  "DB_PASS",
  "SENTRY_DSN",
] as const;

const hex = (bytes: number): string => randomBytes(bytes).toString("hex");

/** Fresh canary values for the environment of a process that runs attempts. */
export function newCanaryEnvironment(): Record<(typeof CANARY_VARIABLES)[number], string> {
  return {
    OPENAI_API_KEY: `sk-canary-${hex(12)}`,
    GITHUB_TOKEN: `ghp_canary${hex(12)}`,
    AWS_SECRET_ACCESS_KEY: `AwsCanary${hex(16)}`,
    DATABASE_URL: `postgres://user:pw-canary${hex(10)}@127.0.0.1/db`,
    LANGSMITH_API_KEY: `lsv2_canary${hex(12)}`,
    MYSQL_PWD: `mysqlCanary${hex(8)}`,
    DB_PASS: `DbCanary${hex(8)}`,
    SENTRY_DSN: `https://canary${hex(8)}@o1.ingest.example/42`,
  };
}
