import type { z } from "zod";
import type { Sandbox } from "./sandbox.js";

/** The built-in tools of the Coder. */
export const TOOL_NAMES = [
  "read_file",
  "write_file",
  "edit_file",
  "list_dir",
  "glob",
  "grep",
  "shell",
  "todo_write",
  "save_finding",
  "task",
  "git_commit",
] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** Typed failures of a tool call; each goes back to the model as a tool result. */
export type ToolErrorKind =
  | "tool_not_found"
  | "invalid_arguments"
  | "blocked"
  | "timeout"
  | "file_not_found"
  | "outside_workspace"
  | "not_unique"
  | "not_found"
  | "rejected"
  | "protected_path"
  | "special_file"
  | "not_read"
  | "not_allowed"
  | "failed";

export class ToolError extends Error {
  constructor(
    readonly kind: ToolErrorKind,
    message: string,
    /** A file holding the complete text when `message` is only a view of it (see ToolOutput). */
    readonly fullOutput?: FullOutput,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

/** Throws a `failed` ToolError when the call was cancelled; long-running tools call it between steps. */
export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ToolError("failed", "cancelled before it finished");
}

/**
 * How a tool affects the workspace: approval modes decide by this (read < edit < execute);
 * `external`: another program's tool (an MCP server's), asked about in every mode but `deny`;
 * `plan`: a plan presented for the user's approval (plan mode), asked about likewise;
 * `commit`: a commit loopgraph makes in the user's repository, asked about but in `auto`.
 */
export type ToolEffect = "read" | "edit" | "execute" | "state" | "external" | "plan" | "commit";

export interface TodoItem {
  content: string;
  status: "pending" | "in_progress" | "completed";
}

export interface ToolContext {
  /** Absolute, symlink-resolved workspace root. Every path a tool touches must stay inside it. */
  workspace: string;
  /** loopgraph's environment (the run's settings'), never the agent's: the agent's commands get what its policy keeps of it (environment.ts). */
  env: NodeJS.ProcessEnv;
  /** Where oversized results are saved: `.loopgraph/artifacts/<thread>/` (absolute). */
  artifactsDir: string;
  /** The thread the call is made in (a commit's branch and log are the thread's). */
  threadId?: string;
  signal?: AbortSignal;
  /** Results longer than this (characters) are cut to head and tail; default 30 000. */
  resultBudgetChars?: number;
  /** Where the agent's commands run (default: the best this machine has, see sandbox.ts). */
  sandbox?: Sandbox;
  /** Values redacted from what the tool saves (artifacts) and returns: the run's secrets. */
  secrets?: readonly string[];
  /** Set in the environment of the agent's commands besides what they keep of `env` (see RunContext.commandVariables). */
  commandVariables?: Readonly<Record<string, string>>;
  /** Where the shell tool records the process group of each command while it runs (see `CommandGroups`). */
  commandGroups?: CommandGroups;
  /**
   * The files read (or written) in this Coder turn, workspace-relative, each with its stamp then
   * (`fileStamp`): `edit_file` refuses a file not in it, or changed on disk since. Unset: no check.
   */
  fileStamps?: Readonly<Record<string, string>>;
  /** Told a command's output as it arrives (redacted), while it runs: for the user to watch; the model gets the result. */
  onOutput?: (stream: "stdout" | "stderr", text: string) => void;
  /** Runs a subagent for the `task` tool (the Coder sets it): its answer, as the call's output. */
  subagent?: (args: { description: string; prompt: string; agent?: string }) => Promise<ToolOutput>;
}

/**
 * The process groups of the commands a thread runs, recorded with the thread while they run: if
 * loopgraph is killed and the command outlives it, the process that takes the thread over kills
 * what is left of the group before the step runs again.
 */
export interface CommandGroups {
  /** The store's write, a promise it may reject (a store locked by another program, full, gone): the shell tool does not wait for it. */
  started(pgid: number): void | Promise<void>;
  ended(pgid: number): void | Promise<void>;
}

/** What a tool returns on success. */
export interface ToolOutput {
  /** Text for the model. */
  content: string;
  /** Workspace-relative paths the call created, changed or deleted (for the Coder result). */
  filesChanged?: string[];
  /** todo_write: the new plan. */
  todos?: TodoItem[];
  /** save_finding: the finding to add to the thread's findings. */
  finding?: string;
  /** present_plan: the user approved the plan (the Coder leaves plan mode). */
  planApproved?: boolean;
  /** complete_task: the subagent's result, checked against its output schema (it ends the subagent). */
  submitted?: Record<string, unknown>;
  /** Files the call read or wrote, workspace-relative, with their stamp after it (see ToolContext.fileStamps). */
  fileStamps?: Record<string, string>;
  /**
   * A file already holding the complete text when `content` is only a view of it (shell output
   * beyond its in-memory cap): truncation points the model there instead of saving `content` again.
   */
  fullOutput?: FullOutput;
}

/** The size of a text: bytes, newlines, and whether it ends with one. */
export interface TextSize {
  bytes: number;
  newlines: number;
  endsWithNewline: boolean;
}

/** A file already holding a tool's complete output, of which the result's text is only a view. */
export interface FullOutput {
  /** Absolute path. */
  file: string;
  /** Its size, when the tool counted it as it wrote it (otherwise the file is read to count it). */
  size?: TextSize;
  /** Lines at the start of the view that the file does not hold (the shell's status line). */
  viewOnlyLines?: number;
}

/**
 * What the policy decides a call on: the argument holding the path it touches (checked against the
 * workspace first; `glob`: a pattern, whose fixed prefix is the path), or the argument holding a
 * shell command (each of its parts decided on its own). A tool with neither is decided on its
 * JSON arguments.
 */
export type PolicySubject = { path: string; fallback?: string; glob?: boolean } | { command: string };

export interface ToolDefinition<Args = unknown> {
  name: string;
  description: string;
  /** What the call does to the workspace: approval modes decide by it. */
  effect: ToolEffect;
  subject?: PolicySubject;
  schema: z.ZodType<Args>;
  /** The arguments' JSON Schema as the model is told it, when `schema` only checks their shape (an MCP server's tool). */
  parameters?: Record<string, unknown>;
  /**
   * A call made of other steps that are checkpointed and recorded on their own (the `task` tool's
   * subagent): the call itself is neither recorded as one effect nor snapshotted.
   */
  composite?: boolean;
  run(args: Args, ctx: ToolContext): Promise<ToolOutput>;
  /** A file-editing tool: the file's content now (undefined: no such file) and what the call would make it, changing nothing. */
  preview?(args: Args, ctx: ToolContext): Promise<FileChangePreview>;
  /** Text the user asked to approve a call reads whole first (present_plan: the plan). */
  approvalDetails?(args: Args): string;
}

/** What a file edit would do, for the user asked to approve it. */
export interface FileChangePreview {
  /** Workspace-relative. */
  path: string;
  before?: string;
  after: string;
}

/** The outcome of one call, as recorded in the state and shown to the model. */
export interface ToolResult {
  ok: boolean;
  /** Set when ok is false. */
  errorKind?: ToolErrorKind;
  /** What the model sees: the output (possibly cut to head and tail) or the error message. */
  content: string;
  /** Absolute path of the full output when `content` was cut. */
  artifact?: string;
  filesChanged?: string[];
  todos?: TodoItem[];
  finding?: string;
  fileStamps?: Record<string, string>;
  planApproved?: boolean;
  submitted?: Record<string, unknown>;
}

export interface ToolCallRequest {
  id: string;
  name: string;
  /** The arguments; for a call with `invalidArguments`, the raw text the model sent. */
  args: unknown;
  /** Set when the model's argument text is not one JSON object: why. Such a call never runs. */
  invalidArguments?: string;
}
