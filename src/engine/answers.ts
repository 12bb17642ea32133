/**
 * Answers to a paused run's questions (approvals, `--answer`): which of the pending questions an
 * answer is for, and the LangGraph command that resumes them. Branches of one step may each ask
 * (a map's instances, a fan-out): the answer goes to each question it names by its interrupt id,
 * and a branch left unanswered asks again when the step runs on.
 */
import { Command } from "@langchain/langgraph";
import { ConfigError } from "../errors.js";
import { isApprovalRequest, type ApprovalRequest } from "../runtime/approval.js";
import type { PauseInfo, PendingQuestion } from "./run-types.js";

export interface Answering {
  /** Resumes the run with the answer to the chosen questions. */
  command: Command;
  /** The approval requests answered: their calls take the answer, whatever the policy says now. */
  requests: ApprovalRequest[];
}

/** The id a user names a pending question by: its tool call's id, else its interrupt id. */
export function questionId(question: PendingQuestion): string {
  return isApprovalRequest(question.value) && question.value.callId ? question.value.callId : question.id;
}

/**
 * The command answering `pause`'s questions with `answer`: all of them, or the one `call` names
 * (a tool call's id, or a question's interrupt id). A wrong or ambiguous name, or an edit of the
 * arguments for several calls at once, is refused.
 */
export function answerPaused(pause: PauseInfo | undefined, answer: unknown, call?: string): Answering {
  const several = pause?.pending;
  if (!several) {
    const only = pause?.value;
    if (call !== undefined && !(isApprovalRequest(only) && only.callId === call)) {
      const waiting = isApprovalRequest(only) && only.callId ? `call ${only.callId}` : "one question";
      throw new ConfigError(`no pending call "${call}": the thread waits for ${waiting}`);
    }
    return { command: new Command({ resume: answer }), requests: isApprovalRequest(only) ? [only] : [] };
  }
  const chosen = call === undefined ? several : several.filter((question) => question.id === call || questionId(question) === call);
  const ids = several.map(questionId).join(", ");
  if (chosen.length === 0) throw new ConfigError(`no pending call "${call}": the calls waiting are ${ids}`);
  if (chosen.length > 1 && call !== undefined)
    throw new ConfigError(
      `"${call}" names ${chosen.length} pending calls: name one by its interrupt id (${chosen.map((q) => q.id).join(", ")})`,
    );
  const edits = typeof answer === "object" && answer !== null && ("args" in answer || "set" in answer);
  if (edits && chosen.length > 1)
    throw new ConfigError(
      `--edit-args and --set-arg change one call, and ${chosen.length} are waiting (${ids}): name it with --approve CALL_ID`,
    );
  return {
    command: new Command({ resume: Object.fromEntries(chosen.map((question) => [question.id, answer])) }),
    requests: chosen.map((question) => question.value).filter(isApprovalRequest),
  };
}
