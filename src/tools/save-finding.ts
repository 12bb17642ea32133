import { z } from "zod";
import type { ToolDefinition } from "./types.js";

/** The longest finding kept: a note, not a copy of a file. */
export const FINDING_MAX_CHARS = 600;

const schema = z.strictObject({
  finding: z
    .string()
    .trim()
    .min(1)
    .max(FINDING_MAX_CHARS)
    .describe("One thing you learned that is worth keeping: a fact, where something is (file:line), a decision, what failed and why"),
});

/**
 * A finding saved to the thread's findings (the Coder's state, checkpointed and carried to the
 * node's later turns), which the Coder's prompt lists. Changes nothing in the workspace.
 */
export const saveFindingTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "save_finding",
  description:
    "Save one finding to the thread's findings: what you learned from reading or searching that you will need later " +
    "(facts, file locations, decisions, causes of failures). Findings stay listed in your instructions for the rest of the " +
    "thread, later turns too, when older messages are long gone. One finding per call, a few lines at most.",
  effect: "state",
  schema,
  async run({ finding }) {
    return { content: "Finding saved.", finding };
  },
};
