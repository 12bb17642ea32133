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
  /** Why the policy asks. */
  reason: string;
  /** For a file edit: the unified diff of what it would change (secrets redacted). */
  diff?: string;
  /** What answering "always" would allow from then on, in words (e.g. `` `git status` with read-only options, for the rest of this thread ``). */
  always?: string;
}

export interface ApprovalAnswer {
  decision: "approve" | "reject" | "always";
  /** With reject: said to the model. */
  reason?: string;
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
    (answer.reason === undefined || typeof answer.reason === "string")
  );
}

/** Whether `request` asked about this call of `node` (by the call's id when the request has one). */
export function asksAbout(request: ApprovalRequest, node: string, call: { id: string; name: string; args: unknown }): boolean {
  if (request.node !== node || request.tool !== call.name) return false;
  return request.callId !== undefined ? request.callId === call.id : JSON.stringify(request.args) === JSON.stringify(call.args);
}
