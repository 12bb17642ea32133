import type { NodeDefinition } from "../../format/types.js";

/** The Looper: hand-written round logic (no model) between the Coder, Review and Judge phases. */
export interface LooperNodeDefinition extends NodeDefinition {
  kind: "looper";
  /** Rounds before the loop ends with "round limit" (default 5; `--max-rounds` overrides). */
  maxRounds: number;
  /** Node ids of the phases. */
  coder: string;
  review: string;
  judge: string;
  /**
   * Best-of-N rounds: how many Coders attempt each round's task, each in its own worktree (the
   * graph maps the coder over `outputs.<looper>.attempts`); the Judge picks one, which the looper
   * applies to the workspace. Unset: one Coder, in the workspace.
   */
  attempts?: number;
}
