/** The server's API: every request carries the token the page was opened with. */
const token = document.querySelector<HTMLMetaElement>('meta[name="loopgraph-token"]')?.content ?? "";

export async function get<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { "x-loopgraph-token": token } });
  const body = (await response.json()) as T & { error?: string };
  if (!response.ok) throw new Error(body.error ?? `${response.status}`);
  return body;
}

export async function post<T>(path: string, value: unknown): Promise<T> {
  const response = await fetch(path, {
    method: "POST",
    headers: { "x-loopgraph-token": token, "content-type": "application/json" },
    body: JSON.stringify(value),
  });
  const body = (await response.json()) as T & { error?: string };
  if (!response.ok) throw new Error(body.error ?? `${response.status}`);
  return body;
}

/** Server-sent `update` events of a thread (it or its loop changed). */
export function follow(threadId: string, onUpdate: () => void): () => void {
  const source = new EventSource(`/api/threads/${encodeURIComponent(threadId)}/events?token=${encodeURIComponent(token)}`);
  source.addEventListener("update", onUpdate);
  return () => source.close();
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ThreadSummary {
  threadId: string;
  graphName: string;
  graphFile: string;
  status: string;
  task: string;
  updatedAt: string;
  createdAt: string;
  checkpoints: number;
  error?: string;
  pause?: { reason: string; node?: string; when?: string; value?: unknown };
  linked?: string;
  /** The threads page: its tokens. */
  tokens?: TokenUsage;
}

export interface Change {
  path: string;
  kind: "added" | "changed" | "removed";
  value?: unknown;
  before?: unknown;
}

export interface Step {
  checkpointId: string;
  parentId?: string;
  branch: number;
  head?: true;
  step: number;
  nodes: string[];
  createdAt: string;
  tokens: TokenUsage;
  round?: number;
  status: string;
  changes: Change[];
  what: string;
  /** Root steps: the guide that draws the branch tree of forks before the node. */
  guide?: string;
  /** A step where several tasks ran together (a map's instances, a fan-out's nodes): one lane each. */
  lanes?: { node: string; index?: number; tokens: TokenUsage; seconds?: number }[];
}

export interface Approval {
  node: string;
  /** The map instance asking: its index. */
  instance?: number;
  tool: string;
  args: unknown;
  reason: string;
  diff?: string;
  always?: string;
  details?: string;
}

export interface ThreadPage {
  thread: ThreadSummary;
  linked?: string;
  graph: { mermaid?: string; problem?: string };
  history: { checkpoints: Step[]; branches: { branch: number; from?: string }[]; head?: string };
  nested: { ns: string; parentNs: string; from?: string; node: string; checkpoints: Step[] }[];
  /** The tokens the timeline's steps show, summed. */
  tokens: TokenUsage;
  /** Each turn's tool calls of each Coder node. */
  toolCalls: {
    node: string;
    turn: number;
    checkpointId: string;
    calls: { id: string; name: string; args: unknown; ok: boolean; errorKind?: string; preview: string; artifact?: string }[];
  }[];
  /** The Looper's status block; `threadStatus` is its loop thread's status. */
  looper?: {
    text: string;
    state: string;
    round: number;
    maxRounds: number;
    subState: string | null;
    pending: string[];
    threadStatus: string;
  };
  messages: { type: string; name?: string; content: string; auto: boolean }[];
  approval?: Approval;
  /** Several calls waiting at once (branches of one step): each answered on its own, by `call`. */
  approvals?: { call: string; request: Approval }[];
  files: { diffs: StepDiff[]; problem?: string };
}

export interface StepDiff {
  seq: number;
  checkpointId: string;
  node: string;
  tool: string;
  toolCallId: string;
  paths: string[];
  patch: string;
  cut?: boolean;
}

export interface ActionResult {
  command: string;
  exitCode?: number;
  output: string;
  /** The file a command that goes on in the background writes its output to. */
  log?: string;
}

/** A link to a GET of the API that the browser follows itself (a download): the token goes in the query. */
export const withToken = (path: string): string => `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}`;

export interface CheckpointState {
  checkpointId: string;
  step: number;
  createdAt: string;
  values: Record<string, unknown>;
}
