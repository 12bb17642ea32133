/**
 * A trial's check, in the workspace its run left: the files the task expects (read as the file
 * tools read them: inside the workspace, no link out, a regular file), the final answer's pattern,
 * then the task's command, run as the runs' commands run (in the OS sandbox where one can start,
 * with the agent's environment, its process group killed on timeout). The workspace is the
 * agent's work, so hostile: nothing in it is followed or trusted.
 */
import { join } from "node:path";
import { STATE_DIR } from "../project.js";
import { readChecked } from "../tools/checked-file.js";
import { availableSandbox } from "../tools/sandbox.js";
import { endingText, outputTail, runWithInput } from "../tools/shell.js";
import { ToolError } from "../tools/types.js";
import { statInWorkspace } from "../tools/workspace-paths.js";
import type { TaskCheck } from "./types.js";

/** What a trial's results keep of its check's output: its end, where test runners print their summary. */
const OUTPUT_TAIL_CHARS = 4_096;
/** An expected file larger than this is not read (a check of a few lines' worth, not of a data dump). */
const MAX_CHECKED_FILE_BYTES = 8 * 1024 * 1024;

export interface CheckPlace {
  workspace: string;
  env: NodeJS.ProcessEnv;
  noSandbox?: boolean;
  /** The run's final answer. */
  answer: string;
  timeoutMs: number;
  signal: AbortSignal;
}

export interface CheckOutcome {
  passed: boolean;
  /** One line: what did not pass. */
  reason?: string;
  /** The command's output, its end. */
  output?: string;
}

export async function checkTrial(check: TaskCheck, place: CheckPlace): Promise<CheckOutcome> {
  for (const [path, pattern] of Object.entries(check.files ?? {})) {
    const problem = await fileProblem(place.workspace, path, pattern);
    if (problem) return { passed: false, reason: problem };
  }
  if (check.answer !== undefined && !new RegExp(check.answer).test(place.answer)) {
    return { passed: false, reason: `the final answer does not match /${check.answer}/` };
  }
  if (check.command === undefined) return { passed: true };
  const outcome = await runWithInput(
    check.command,
    undefined,
    {
      workspace: place.workspace,
      env: place.env,
      artifactsDir: join(place.workspace, STATE_DIR, "artifacts", "eval-check"),
      signal: place.signal,
      sandbox: availableSandbox(place.env, { noSandbox: place.noSandbox }),
    },
    place.timeoutMs,
  );
  const output = outputTail(outcome, OUTPUT_TAIL_CHARS);
  if (outcome.exitCode === 0) return { passed: true, ...(output && { output }) };
  const summary = summaryLine(output);
  return {
    passed: false,
    reason: `\`${check.command}\` ${endingText(outcome)}${summary ? `: ${summary}` : ""}`,
    ...(output && { output }),
  };
}

/**
 * The line of a failed check's output that says most: the last one speaking of failures or
 * errors (a test runner's count, `FAILED (failures=1)`, `# fail 1`), else the last line.
 */
function summaryLine(output: string): string | undefined {
  const lines = output
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  return lines.findLast((line) => /\b(fail(ed|ures?|ing)?|errors?)\b/i.test(line)) ?? lines.at(-1);
}

/** Why an expected file fails its check (missing, not a regular file inside the workspace, its text not matching), or undefined. */
async function fileProblem(workspace: string, path: string, pattern: string): Promise<string | undefined> {
  try {
    const { absolute, relative, stats } = await statInWorkspace(workspace, path);
    if (stats.size > MAX_CHECKED_FILE_BYTES) return `${path} is larger than ${MAX_CHECKED_FILE_BYTES} bytes: not checked`;
    const text = (await readChecked(absolute, relative)).toString("utf8");
    return pattern === "" || new RegExp(pattern).test(text) ? undefined : `${path} does not match /${pattern}/`;
  } catch (error) {
    if (error instanceof ToolError) return error.message;
    throw error;
  }
}
