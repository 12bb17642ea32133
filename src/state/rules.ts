/** Policy rules: stored in the graph state (answers "always") as well as read from files. */

export type PolicyDecision = "allow" | "deny" | "ask";

export type RuleSource = "builtin" | "graph" | "user" | "session";

/** A program (and subcommand) run with options that neither write nor execute: `git status -s`, `ls -la src`. */
export interface CommandScope {
  /** The program, as the first word of the command (`git`; not `/usr/bin/git` or `env git`). */
  name: string;
  /** Its subcommand, for programs whose options depend on it (`git status`). */
  subcommand?: string;
  readOnly: true;
  /**
   * Also where the command is nested: in a subshell, a command substitution or another shell's
   * script (`(ls)`, `$(ls)`, `bash -c 'ls'`), set when the command approved was nested. Without
   * it, only a plain command of the command line is covered, as approved.
   */
  nested?: true;
}

export interface PolicyRule {
  /** Tool name, with `*` and `?` wildcards (e.g. `shell`, `*_file`, `*`). */
  tool: string;
  /**
   * Regular expression tested against the call's subject: each part of a shell command
   * (split on `&&`, `||`, `;`, `|`, …, nested ones included; as written and normalised), or the
   * path for file tools (workspace-relative and real absolute), or the JSON arguments otherwise.
   * A whole shell command is a subject too, but only for `ask` and `deny` rules.
   * Absent (and no `commands`): the rule matches every call of the tool.
   */
  pattern?: string;
  /**
   * For shell commands (set by "always" answers): simple commands the rule matches besides its
   * `pattern`, each the program (and subcommand) run with read-only options only
   * (src/policy/read-only-options.ts). A rule with `pattern` and `commands` matches what either matches.
   */
  commands?: CommandScope[];
  decision: PolicyDecision;
  /** Higher wins; ties go to the stricter decision (deny > ask > allow). */
  priority: number;
  /** An `ask` that approval mode `auto` keeps asking (it turns other asks into allows): history-destroying git commands. */
  asksInAuto?: boolean;
  /** Said to the model and the user when the rule decides. */
  reason?: string;
  /** An allow rule's tools only read (MCP tools marked so): calls of one model turn may run at once. */
  readOnly?: true;
  source: RuleSource;
  /** Where the rule was written, for messages: e.g. `.loopgraph/policy.yaml rules[2]`. */
  origin?: string;
}
