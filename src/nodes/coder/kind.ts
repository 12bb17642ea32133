import { z } from "zod";
import { unknownName } from "../../diagnostics/suggest.js";
import { modelSpec, nodeCommon, positiveInt } from "../../format/node-schema.js";
import type { CoderNodeDefinition } from "./definition.js";
import { SUBAGENT_MAX_STEPS, SUBAGENT_NAME, SUBAGENT_NAME_RULE, SUBAGENT_TOOLS } from "../../tools/subagent-config.js";
import { defineNodeKind } from "../../runtime/node-kind.js";
import { loopDetectionConfigSchema, toLoopDetectionOptions } from "../../tools/loop-detection.js";
import { BUILTIN_TOOLS } from "../../tools/registry.js";
import { TOOL_NAMES, type ToolEffect } from "../../tools/types.js";
import { createCoderNode } from "./node.js";
import { CODER_MODES } from "../../state/thread.js";
import { outputSchemaProblem } from "../../tools/complete-task.js";
import { COMPLEXITY_MODES } from "./complexity.js";
import { DEFAULT_PLANNING, PLANNING_MAXIMA, type PlanningConfig } from "../../tools/planning-config.js";

/** A node's `planning:` as the Coder reads it: the keys it sets. */
function planningConfigOf(raw: { reminders?: number; two_action_rule?: boolean; stop_check?: number; findings?: number }): PlanningConfig {
  return {
    ...(raw.reminders !== undefined && { reminders: raw.reminders }),
    ...(raw.two_action_rule !== undefined && { twoActionRule: raw.two_action_rule }),
    ...(raw.stop_check !== undefined && { stopCheck: raw.stop_check }),
    ...(raw.findings !== undefined && { findings: raw.findings }),
  };
}

const coderNode = z.strictObject({
  kind: z.literal("coder"),
  ...nodeCommon,
  prompt: z.string().describe("Markdown system prompt, relative to the graph file (default: loopgraph's prompts/coder.md)").optional(),
  max_steps: positiveInt.describe("Model calls per Coder turn before it stops with a step-limit failure (default 25)").default(25),
  tools: z
    .array(
      z.string().refine((name) => (TOOL_NAMES as readonly string[]).includes(name) || MCP_TOOL_PATTERN.test(name), {
        error: (issue) =>
          `${unknownName("tool", String(issue.input), TOOL_NAMES)}, or name an MCP server's tools as server__tool (wildcard *)`,
      }),
    )
    .min(1)
    .describe(
      "Tools the Coder may use: built-in names, and MCP servers' tools as server__tool with * wildcards (default: all, MCP tools included)",
    )
    .optional(),
  loop_detection: loopDetectionConfigSchema.describe("Repeated tool calls: warn, then fail").default(loopDetectionConfigSchema.parse({})),
  compression: z
    .strictObject({
      budget_tokens: positiveInt.describe("Summarise older turns once the history passes this many tokens (default 60000)").default(60_000),
      keep_recent_turns: positiveInt.describe("Latest turns always kept verbatim (default 3)").default(3),
    })
    .default({ budget_tokens: 60_000, keep_recent_turns: 3 }),
  mode: z
    .enum(CODER_MODES)
    .describe(
      "What the Coder may do: agent (every tool), ask (only read), plan (read, then present a plan for approval before acting); the run's --mode comes first (default agent)",
    )
    .optional(),
  subagents: z
    .record(
      z.string().regex(SUBAGENT_NAME, { error: SUBAGENT_NAME_RULE }),
      z.strictObject({
        description: z.string().describe("One line on what it is for: the Coder is told").optional(),
        prompt: z
          .string()
          .describe("Its Markdown system prompt, relative to the graph file (default: loopgraph's prompts/subagent.md)")
          .optional(),
        tools: z
          .array(z.enum(SUBAGENT_TOOLS as [string, ...string[]]))
          .min(1)
          .describe(
            "Its tools (default: read_file, list_dir, glob, grep); a subagent cannot start subagents, nor use a tool its Coder lacks",
          )
          .optional(),
        max_steps: positiveInt
          .describe(`Model calls before it must answer (default ${SUBAGENT_MAX_STEPS}, at most the Coder's max_steps)`)
          .optional(),
        model: modelSpec.describe("Its model, provider:model (default: the Coder's)").optional(),
        output: z
          .record(z.string(), z.unknown())
          .superRefine((schema, check) => {
            const problem = outputSchemaProblem(schema);
            if (problem) check.addIssue({ code: "custom", message: `the output schema ${problem}` });
          })
          .describe("The JSON Schema of its result, an object it hands in with complete_task (default: summary, findings, files_touched)")
          .optional(),
      }),
    )
    .describe("Subagent types the Coder's task calls may name (agent: <name>), besides the default read-only one")
    .default({}),
  workspace: z
    .enum(["shared", "worktree"])
    .describe(
      "Where the Coder works: shared (the run's workspace) or worktree (its own git worktree on the branch loopgraph/<thread>/<node>-<i>, which a merge node applies); default worktree when it runs in a map or beside another coder, else shared",
    )
    .optional(),
  complexity: z
    .enum(COMPLEXITY_MODES)
    .describe(
      "auto: before its first model call, each turn's task is classified simple, moderate or complex by rules, and the matching strategy goes into the prompt (agent mode); off: no analysis (default auto)",
    )
    .default("auto"),
  planning: z
    .strictObject({
      reminders: z
        .int()
        .min(0)
        .max(PLANNING_MAXIMA.reminders)
        .describe(
          `A reminder of the task, the plan's progress and the errors so far, with the result of every this many tool calls (0: never; default ${DEFAULT_PLANNING.reminders})`,
        )
        .optional(),
      two_action_rule: z
        .boolean()
        .describe(
          "After every two reads, searches or listings since the last finding, the model is told to save what it found (default true)",
        )
        .optional(),
      stop_check: z
        .int()
        .min(0)
        .max(PLANNING_MAXIMA.stop_check)
        .describe(
          `An answer with plan items not done is sent back this many times at most, then the turn fails with plan_unfinished (0: no check; default ${DEFAULT_PLANNING.stopCheck})`,
        )
        .optional(),
      findings: z
        .int()
        .min(0)
        .max(PLANNING_MAXIMA.findings)
        .describe(
          `Findings the thread keeps (save_finding), the oldest dropped beyond (0: no save_finding tool; default ${DEFAULT_PLANNING.findings})`,
        )
        .optional(),
    })
    .describe("The built-in planning behaviour; each key over the config files' planning: (docs/coder.md)")
    .optional(),
  result_budget_chars: positiveInt
    .describe("Tool results longer than this are cut to head and tail; the full text is saved as an artifact (default 30000)")
    .default(30_000),
});

/** What the Coder's tools do, as `replay --from` announces it. */
const TOOL_EFFECTS: Partial<Record<ToolEffect, string>> = { edit: "writes files", execute: "runs shell", commit: "commits to git" };

/** A node's tool list entry naming MCP servers' tools: `server__tool`, `*` anywhere. */
const MCP_TOOL_PATTERN = /^[A-Za-z0-9*-]+__[A-Za-z0-9_*-]+$/;
/** Every MCP tool the run's servers have (the default, with all built-in tools). */
export const ALL_MCP_TOOLS = "*__*";

/** The Coder: a model with the built-in tools, confined to the workspace, every tool step checkpointed. */
export const coderKind = defineNodeKind({
  kind: "coder",
  schema: coderNode,
  usesModel: true,
  readsTask: true,
  resolve(raw, common, files): CoderNodeDefinition | undefined {
    const promptFile = files.prompt(raw.prompt, "prompt", "coder.md");
    const subagents: CoderNodeDefinition["subagents"] = {};
    for (const [name, agent] of Object.entries(raw.subagents)) {
      const agentPrompt = files.prompt(agent.prompt, `subagents.${name}.prompt`, "subagent.md");
      if (agentPrompt === undefined) return undefined;
      subagents[name] = {
        ...(agent.description && { description: agent.description }),
        promptFile: agentPrompt,
        ...(agent.tools && { tools: agent.tools }),
        ...(agent.max_steps !== undefined && { maxSteps: agent.max_steps }),
        ...(agent.model && { model: agent.model }),
        ...(agent.output && { output: agent.output }),
      };
    }
    return promptFile === undefined
      ? undefined
      : {
          ...common,
          kind: "coder",
          promptFile,
          maxSteps: raw.max_steps,
          tools: raw.tools ?? [...TOOL_NAMES, ALL_MCP_TOOLS],
          loopDetection: toLoopDetectionOptions(raw.loop_detection),
          compression: { budgetTokens: raw.compression.budget_tokens, keepRecentTurns: raw.compression.keep_recent_turns },
          resultBudgetChars: raw.result_budget_chars,
          ...(raw.mode && { mode: raw.mode }),
          // Only when set: a graph without it keeps the fingerprint it had.
          ...(raw.workspace === "worktree" && { workspace: "worktree" as const }),
          ...(raw.complexity === "off" && { complexity: "off" as const }),
          ...(raw.planning && { planning: planningConfigOf(raw.planning) }),
          subagents,
        };
  },
  // Coders at work at the same time never share a working tree, unless the graph says `workspace: shared`.
  runningBesideItsKind: (def, raw) => (raw.workspace === undefined ? { ...def, workspace: "worktree" as const } : def),
  files: (def) => [def.promptFile, ...Object.values(def.subagents).flatMap((agent) => (agent.promptFile ? [agent.promptFile] : []))],
  sideEffects(def) {
    const effects = BUILTIN_TOOLS.filter((tool) => def.tools.includes(tool.name)).map((tool) => TOOL_EFFECTS[tool.effect]);
    return [...new Set(effects.filter((effect) => effect !== undefined))];
  },
  create: (def, graph, ctx, build) => createCoderNode(def, graph, ctx, build.failureRouted),
});
