import { resolve } from "node:path";
import { z } from "zod";
import { commitWorkspace } from "../git/commit.js";
import { STATE_DIR } from "../project.js";
import { ToolError, type ToolContext, type ToolDefinition } from "./types.js";
import { resolveInWorkspace, workspaceRelative } from "./workspace-paths.js";

const schema = z.strictObject({
  message: z
    .string()
    .min(1)
    .describe("The commit message: a summary line of at most 72 characters, then a blank line and details if useful"),
  paths: z
    .array(z.string().min(1))
    .min(1)
    .describe("Files or folders to commit, workspace-relative (default: every change in the workspace, new files included)")
    .optional(),
});

/**
 * A workspace-relative path the commit may take: inside the workspace, as written (no symbolic
 * link on the way: git would not follow it), and never in a `.git` or in loopgraph's own `.loopgraph/`.
 */
function committablePath(workspace: string, path: string): string {
  const real = workspaceRelative(workspace, resolveInWorkspace(workspace, path));
  const written = workspaceRelative(workspace, resolve(workspace, path));
  if (real !== written) throw new ToolError("invalid_arguments", `${path} goes through a symbolic link (to ${real}): name the real path`);
  const parts = written.split("/");
  if (parts.includes(".git") || parts[0] === STATE_DIR)
    throw new ToolError("protected_path", `${path} is in ${parts[0] === STATE_DIR ? STATE_DIR : ".git"}, which a commit never takes`);
  return written;
}

/** The thread a call is made in: a commit needs one (its branch and its log are the thread's). */
function threadOf(ctx: ToolContext): string {
  if (ctx.threadId === undefined) throw new ToolError("failed", "git_commit runs only in a thread of a run");
  return ctx.threadId;
}

export const gitCommitTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "git_commit",
  description:
    "Commit your changes to git, as one commit on the branch this thread works on (loopgraph makes it; you cannot run git commit yourself). " +
    "Use it when the task or the user asks for commits. Without paths, every change in the workspace is committed. Never pushes.",
  effect: "commit",
  schema,
  // The user asked reads the whole message, and what it takes.
  approvalDetails: ({ message, paths }) =>
    `${message.trimEnd()}\n\n(${paths ? `paths: ${paths.join(", ")}` : "every change in the workspace"})`,
  async run({ message, paths }, ctx) {
    const checked = paths?.map((path) => committablePath(ctx.workspace, path));
    const outcome = await commitWorkspace({
      workspace: ctx.workspace,
      threadId: threadOf(ctx),
      message,
      ...(checked && !checked.includes(".") ? { paths: checked } : {}),
      key: "git_commit",
      env: ctx.env,
      ...(ctx.secrets ? { secrets: ctx.secrets } : {}),
    });
    switch (outcome.status) {
      case "refused":
        throw new ToolError("not_allowed", `nothing committed: ${outcome.reason}`);
      case "nothing":
        return {
          content: `Nothing to commit on ${outcome.branch}: ${paths ? "those paths have" : "the workspace has"} no changes since its last commit.`,
        };
      case "committed": {
        const created = outcome.createdFrom
          ? ` (a branch made now beside ${outcome.createdFrom}, which loopgraph does not commit onto; the workspace is now on it)`
          : "";
        const lines = [
          `Committed ${outcome.commit.slice(0, 12)} on ${outcome.branch}${created}: ${outcome.files.length} file${outcome.files.length === 1 ? "" : "s"} (${outcome.files.slice(0, 20).join(", ")}${outcome.files.length > 20 ? ", …" : ""}).`,
          ...(outcome.redacted > 0
            ? [`${outcome.redacted} file(s) held a secret's value of this run (or were hard links) and were committed without it.`]
            : []),
          ...(outcome.indexProblem ? [`Note: ${outcome.indexProblem}.`] : []),
        ];
        return { content: lines.join("\n") };
      }
    }
  },
};
