/**
 * The Coder's planning settings: the built-in planning behaviour's bounds, given under
 * `planning:` in a config file (for every Coder) or a coder node (which wins, key by key):
 *
 *     planning:
 *       reminders: 5          # a progress reminder (task, plan, errors so far) every 5 tool calls; 0: never
 *       two_action_rule: true # after every two reads, searches or listings: save what you found
 *       stop_check: 2         # a stop with plan items not done is sent back at most twice, then fails
 *       findings: 20          # findings kept in the thread (save_finding); 0: no findings tool
 *
 * Checked by hand here for the config files (no schema library loads with every command); the
 * graph's schema (src/nodes/coder/kind.ts) states the same bounds.
 */
import type { Problem } from "../diagnostics/yaml-file.js";
import { unknownKeyProblem } from "../diagnostics/yaml-file.js";

export interface PlanningSettings {
  /** A progress reminder every this many tool calls (0: never). */
  reminders: number;
  /** After every two reads, searches or listings since findings were last saved, the model is told to save them. */
  twoActionRule: boolean;
  /** How many times a stop with plan items not done is sent back to the model before the turn fails (0: never checked). */
  stopCheck: number;
  /** Findings the thread keeps (the oldest dropped beyond), 0: no `save_finding` tool. */
  findings: number;
}

/** What a config file or a node sets: any of the settings. */
export type PlanningConfig = Partial<PlanningSettings>;

export const DEFAULT_PLANNING: PlanningSettings = { reminders: 5, twoActionRule: true, stopCheck: 2, findings: 20 };

/** The largest value of each count (a bound that is no bound would let a stop check loop for long). */
export const PLANNING_MAXIMA = { reminders: 100, stop_check: 10, findings: 200 } as const;

const KEYS = ["reminders", "two_action_rule", "stop_check", "findings"] as const;

/** Checks `planning:` of a config file; returns what it sets, or the problems. */
export function checkPlanning(value: unknown): { planning: PlanningConfig; problems: Problem[] } {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return {
      planning: {},
      problems: [{ path: ["planning"], at: "value", message: `planning must be a mapping of ${KEYS.join(", ")}` }],
    };
  const planning: PlanningConfig = {};
  const problems: Problem[] = [];
  for (const [key, setting] of Object.entries(value as Record<string, unknown>)) {
    const bad = (message: string) => problems.push({ path: ["planning", key], at: "value", message });
    if (key === "two_action_rule") {
      if (typeof setting === "boolean") planning.twoActionRule = setting;
      else bad("planning.two_action_rule must be true or false");
    } else if (key === "reminders" || key === "stop_check" || key === "findings") {
      const max = PLANNING_MAXIMA[key];
      if (typeof setting !== "number" || !Number.isInteger(setting) || setting < 0 || setting > max)
        bad(`planning.${key} must be a whole number from 0 to ${max}`);
      else if (key === "stop_check") planning.stopCheck = setting;
      else planning[key] = setting;
    } else problems.push(unknownKeyProblem(["planning"], key, KEYS, `unknown key "${key}": planning has ${KEYS.join(", ")}`));
  }
  return { planning, problems };
}

/** The settings a Coder works with: the defaults, the config files' over them, the node's over those. */
export function effectivePlanning(config: PlanningConfig | undefined, node: PlanningConfig | undefined): PlanningSettings {
  return { ...DEFAULT_PLANNING, ...config, ...node };
}

/** The settings as a config file writes them, on one line: `reminders 5, two_action_rule true, …`. */
export function describePlanning(settings: PlanningSettings): string {
  return `reminders ${settings.reminders}, two_action_rule ${settings.twoActionRule}, stop_check ${settings.stopCheck}, findings ${settings.findings}`;
}
