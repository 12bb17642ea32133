/**
 * A graph file's `policy:` rules as they apply to a run. A graph file inside the run's workspace
 * can be changed by the agent (it is one of the repository's files), so its rules may ask or deny
 * but never allow: an allow there would let the agent widen its own permissions for every later
 * run. Allows belong in the user's policy files, which the agent cannot write.
 */
import { resolve } from "node:path";
import { isInside, realPathOf } from "../tools/workspace-paths.js";
import type { PolicyRule } from "../state/rules.js";

export interface GraphRules {
  /** The rules that apply. */
  rules: PolicyRule[];
  /** Allow rules left out: the graph file is inside the workspace. */
  dropped: PolicyRule[];
}

export function applicableGraphRules(graphFile: string, rules: readonly PolicyRule[], workspace: string): GraphRules {
  const real = (path: string): string => {
    try {
      return realPathOf(resolve(path));
    } catch {
      return resolve(path);
    }
  };
  if (!isInside(real(workspace), real(graphFile))) return { rules: [...rules], dropped: [] };
  return { rules: rules.filter((rule) => rule.decision !== "allow"), dropped: rules.filter((rule) => rule.decision === "allow") };
}
