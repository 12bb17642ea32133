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
  /** Why the policy asks. */
  reason: string;
}

export interface ApprovalAnswer {
  decision: "approve" | "reject" | "always";
  /** With reject: said to the model. */
  reason?: string;
}

export function isApprovalRequest(value: unknown): value is ApprovalRequest {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "approval";
}
