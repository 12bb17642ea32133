import { z } from "zod";
import type { NodeCommon, NodeDefinition } from "../../format/types.js";

export const DEFAULT_MAX_DIFF_CHARS = 40_000;
const DEFAULT_CHECK_TIMEOUT_SECONDS = 600;
const MAX_CHECK_TIMEOUT_SECONDS = 3_600;

/** The package prompts (`prompts/<name>`) used when a graph names none. */
export const DEFAULT_REVIEW_PROMPTS = {
  specs_prompt: "review-specs.md",
  task_log_prompt: "review-task-log.md",
} as const;

type PromptKey = keyof typeof DEFAULT_REVIEW_PROMPTS;

/**
 * The YAML keys of a `review` node beyond `kind` and the keys every node has (snake_case).
 * The graph schema spreads `reviewNodeSchema.shape` into its `review` variant.
 */
export const reviewNodeSchema = z.strictObject({
  coder: z.string().min(1).describe('Id of the coder node whose result is reviewed (default "coder")').default("coder"),
  specs_prompt: z
    .string()
    .describe("Prompt of the specs_breakdown check, relative to the graph file (default: loopgraph's prompts/review-specs.md)")
    .optional(),
  task_log_prompt: z
    .string()
    .describe("Prompt of the task_log check, relative to the graph file (default: loopgraph's prompts/review-task-log.md)")
    .optional(),
  merge: z
    .string()
    .min(1)
    .describe(
      "Id of the merge node that applied the (mapped) coder's branches: the review reads the change it made to the workspace, the parts as one piece of work",
    )
    .optional(),
  check: z
    .strictObject({
      command: z
        .string()
        .trim()
        .min(1)
        .describe("Bash command line, run in the reviewed folder (e.g. npm test); it passes when it exits 0"),
      timeout_seconds: z
        .int()
        .positive()
        .max(MAX_CHECK_TIMEOUT_SECONDS)
        .describe(`Kill it after this many seconds (default ${DEFAULT_CHECK_TIMEOUT_SECONDS}): a timeout fails the check`)
        .default(DEFAULT_CHECK_TIMEOUT_SECONDS),
    })
    .describe("A command the review runs where the Coder worked (its worktree, for a worktree coder), as the Coder's shell runs commands")
    .optional(),
  max_diff_chars: z
    .int()
    .positive()
    .describe(`A longer diff is cut to its head and tail for the model, which is told so (default ${DEFAULT_MAX_DIFF_CHARS})`)
    .default(DEFAULT_MAX_DIFF_CHARS),
});

export type RawReviewNode = z.output<typeof reviewNodeSchema>;

/** A Review: three checks in parallel over the Coder's result and the workspace's real diff. */
export interface ReviewNodeDefinition extends NodeDefinition {
  kind: "review";
  /** Node id whose CoderResult (`outputs.<coder>`) is reviewed. */
  coder: string;
  /** Absolute path of the specs_breakdown check's system prompt. */
  specsPrompt: string;
  /** Absolute path of the task_log check's system prompt. */
  taskLogPrompt: string;
  /** The diff shown to the model is cut to head and tail beyond this many characters. */
  maxDiffChars: number;
  /** The check command run in the reviewed folder. */
  check?: { command: string; timeoutMs: number };
  /** A merge node: the work reviewed is what it applied to the workspace, the coder's parts as one. */
  merge?: string;
}

/**
 * The absolute path of a prompt: `relative` to the graph file, or the package's `defaultName` when
 * the graph names none; undefined when the file does not exist (the resolver reports it).
 */
export type ReviewPromptResolver = (key: PromptKey, relative: string | undefined, defaultName: string) => string | undefined;

/** The resolved definition, or undefined when a prompt file is missing. */
export function resolveReviewNode(
  raw: RawReviewNode,
  common: NodeCommon,
  resolvePrompt: ReviewPromptResolver,
): ReviewNodeDefinition | undefined {
  const specsPrompt = resolvePrompt("specs_prompt", raw.specs_prompt, DEFAULT_REVIEW_PROMPTS.specs_prompt);
  const taskLogPrompt = resolvePrompt("task_log_prompt", raw.task_log_prompt, DEFAULT_REVIEW_PROMPTS.task_log_prompt);
  if (specsPrompt === undefined || taskLogPrompt === undefined) return undefined;
  return {
    ...common,
    kind: "review",
    coder: raw.coder,
    specsPrompt,
    taskLogPrompt,
    maxDiffChars: raw.max_diff_chars,
    ...(raw.check && { check: { command: raw.check.command, timeoutMs: raw.check.timeout_seconds * 1000 } }),
    ...(raw.merge !== undefined && { merge: raw.merge }),
  };
}
