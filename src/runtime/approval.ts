/**
 * Approvals: a tool call that the policy leaves to the user raises a LangGraph interrupt with an
 * ApprovalRequest; the run pauses (or a terminal prompt answers at once) and resumes with an
 * ApprovalAnswer.
 */

/** The value of the LangGraph interrupt raised when a tool call needs the user's approval. */
export interface ApprovalRequest {
  kind: "approval";
  node: string;
  tool: string;
  args: unknown;
  /** The model's id of the tool call asked about: the answer applies to this call and no other. */
  callId?: string;
  /** The node runs as an instance of a map: its index (the user sees `node[i]`). */
  instance?: number;
  /** Why the policy asks. */
  reason: string;
  /** For a file edit: the unified diff of what it would change (secrets redacted). */
  diff?: string;
  /** What answering "always" would allow from then on, in words (e.g. `` `git status` with read-only options, for the rest of this thread ``). */
  always?: string;
  /** Text to read before answering, shown whole: the plan presented in plan mode. */
  details?: string;
}

export interface ApprovalAnswer {
  decision: "approve" | "reject" | "always";
  /** With reject: said to the model. */
  reason?: string;
  /** With approve: the call runs with these arguments instead of the model's (edited by the user). */
  args?: Record<string, unknown>;
  /** With approve: arguments changed one by one (`path` dotted, e.g. `contents` or `options.depth`), over `args` or the model's. */
  set?: { path: string; value: unknown }[];
}

/** The arguments an approval answer runs the call with: the model's, or the user's edit of them. */
export function editedArgs(answer: ApprovalAnswer, args: unknown): unknown {
  if (answer.decision !== "approve" || (answer.args === undefined && answer.set === undefined)) return args;
  const edited = structuredClone(answer.args ?? (args as Record<string, unknown>)) as Record<string, unknown>;
  for (const { path, value } of answer.set ?? []) {
    const keys = path.split(".");
    let target = edited;
    for (const key of keys.slice(0, -1)) {
      const next = target[key];
      target = (target[key] = next !== null && typeof next === "object" && !Array.isArray(next) ? next : {}) as Record<string, unknown>;
    }
    target[keys.at(-1)!] = value;
  }
  return edited;
}

export function isApprovalRequest(value: unknown): value is ApprovalRequest {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "approval";
}

const DECISIONS: readonly string[] = ["approve", "reject", "always"];

export function isApprovalAnswer(value: unknown): value is ApprovalAnswer {
  const answer = value as Partial<ApprovalAnswer> | null;
  return (
    typeof answer === "object" &&
    answer !== null &&
    DECISIONS.includes(String(answer.decision)) &&
    (answer.reason === undefined || typeof answer.reason === "string") &&
    (answer.args === undefined || (typeof answer.args === "object" && answer.args !== null && !Array.isArray(answer.args))) &&
    (answer.set === undefined ||
      (Array.isArray(answer.set) && answer.set.every((change) => typeof change?.path === "string" && change.path !== "")))
  );
}

/** Whether `request` asked about this call of `node` (by the call's id when the request has one). */
export function asksAbout(request: ApprovalRequest, node: string, call: { id: string; name: string; args: unknown }): boolean {
  if (request.node !== node || request.tool !== call.name) return false;
  return request.callId !== undefined ? request.callId === call.id : JSON.stringify(request.args) === JSON.stringify(call.args);
}
