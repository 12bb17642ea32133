export { BUILTIN_ASK_PRIORITY, BUILTIN_DENY_PRIORITY, BUILTIN_RULES, TOO_DEEP_TO_CHECK, WORKSPACE_CONFINEMENT } from "./builtin-rules.js";
export { evaluatePolicy, toolFacts, type PolicyCall, type PolicyOptions } from "./evaluate.js";
export { toolMatches } from "./match.js";
export { applicableGraphRules, type GraphRules } from "./graph-rules.js";
export { alwaysAnswerFor, decideToolCall, type AlwaysAnswer, type GateDecision } from "./gate.js";
export {
  MAX_RULE_PRIORITY,
  loadPolicyFile,
  loadUserPolicy,
  loadUserRules,
  parsePolicyFile,
  policyRuleSchema,
  policyRulesSchema,
  toPolicyRules,
  userPolicyFiles,
  type PolicyFile,
  type PolicyRulesSection,
} from "./rule-file.js";
export { parseShellCommand, type ParsedShellCommand, type ShellPart } from "./shell-parts.js";
export type { PolicyCause, PolicyVerdict } from "./types.js";
export type { CommandScope, PolicyDecision, PolicyRule, RuleSource } from "../state/rules.js";
export type { ApprovalMode } from "../state/thread.js";
