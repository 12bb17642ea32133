import { z } from "zod";
import { nodeCommon, positiveInt } from "../../format/node-schema.js";
import type { LooperNodeDefinition } from "./definition.js";
import { defineNodeKind } from "../../runtime/node-kind.js";
import { checkAttemptsMapped } from "./attempts.js";
import { createLooperNode, looperEnding } from "./node.js";

const looperNode = z.strictObject({
  kind: z.literal("looper"),
  ...nodeCommon,
  max_rounds: positiveInt.describe('Rounds before the loop ends with "round limit" (default 5)').default(5),
  coder: z.string().describe('Node id of the Coder phase (default "coder")').default("coder"),
  review: z.string().describe('Node id of the Review phase (default "review")').default("review"),
  judge: z.string().describe('Node id of the Judge phase (default "judge")').default("judge"),
  attempts: positiveInt
    .describe(
      "Best-of-N rounds: how many Coders attempt each round's task (a map over outputs.<looper>.attempts runs them; --attempts overrides)",
    )
    .optional(),
});

/** The Looper: routes a round's phases, applies commands, bounds the loop with its round limit. */
export const looperKind = defineNodeKind({
  kind: "looper",
  schema: looperNode,
  nodeReferences: ["coder", "review", "judge"],
  usesModel: false,
  readsTask: true,
  // A looper bounds every loop through it with its round limit (max_rounds).
  boundsLoops: true,
  resolve: (raw, common): LooperNodeDefinition => ({
    ...common,
    kind: "looper",
    maxRounds: raw.max_rounds,
    coder: raw.coder,
    review: raw.review,
    judge: raw.judge,
    ...(raw.attempts !== undefined && { attempts: raw.attempts }),
  }),
  ending: looperEnding,
  create: (def, graph, ctx) => {
    checkAttemptsMapped(def, graph);
    return createLooperNode(def, ctx);
  },
});
