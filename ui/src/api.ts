/** The server's API: every request carries the token the page was opened with. */
import type { EvalReport } from "../../src/eval/report-schema.js";

const token = document.querySelector<HTMLMetaElement>('meta[name="loopgraph-token"]')?.content ?? "";

/** A request the boot script (boot.ts) made while the page's own script was still loading. */
interface EarlyRequest {
  path: string;
  response: Promise<Response>;
}

declare global {
  interface Window {
    loopgraphEarly?: EarlyRequest;
  }
}

/** Starts the request of `path` now; the page's first `get` of it takes its answer (once). */
export function requestEarly(path: string): void {
  window.loopgraphEarly = { path, response: fetch(path, { headers: { "x-loopgraph-token": token } }) };
}

/** The thread a page's hash names (`#/thread/<id>`), if any. */
export function threadOfHash(hash: string): string | undefined {
  const match = /^#\/thread\/(.+)$/.exec(hash);
  return match ? decodeURIComponent(match[1]!) : undefined;
}

/** The eval a page's hash names (`#/eval/<id>`), if any. */
export function evalOfHash(hash: string): string | undefined {
  const match = /^#\/eval\/(.+)$/.exec(hash);
  return match ? decodeURIComponent(match[1]!) : undefined;
}

/** The API path of an eval's page. */
export const evalApi = (evalId: string): string => `/api/evals/${encodeURIComponent(evalId)}`;

/** The API path of a thread's page. */
export const threadApi = (threadId: string): string => `/api/threads/${encodeURIComponent(threadId)}`;

export async function get<T>(path: string): Promise<T> {
  const early = window.loopgraphEarly?.path === path ? window.loopgraphEarly : undefined;
  if (early) window.loopgraphEarly = undefined;
  const response = await (early?.response ?? fetch(path, { headers: { "x-loopgraph-token": token } }));
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

/** A step as a page lists it; its changes and nested steps come when it is opened (StepDetail). */
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
  what: string;
  /** Root steps: the index in the thread (oldest first), the guide that draws the branch tree of forks before the node, how long it took. */
  index?: number;
  guide?: string;
  seconds?: number;
  /** A step where several tasks ran together (a map's instances, a fan-out's nodes): one lane each. */
  lanes?: { node: string; index?: number; tokens: TokenUsage; seconds?: number }[];
}

/** A graph nested in a step: a Coder's turn, a subagent, a subgraph. */
export interface Nested {
  ns: string;
  parentNs: string;
  from?: string;
  node: string;
  checkpoints: Step[];
}

/** Which of the thread's steps a page holds: indexes [from, to) of `total`, oldest first. */
export interface Range {
  from: number;
  to: number;
  total: number;
}

/** Some of the thread's root steps, in tree order. */
export interface StepsPage {
  checkpoints: Step[];
  range: Range;
}

/** A step opened: its changes from its parent, and the graphs nested in it. */
export interface StepDetail {
  checkpointId: string;
  changes: Change[];
  nested: Nested[];
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
  /** The eval trial the thread ran. */
  eval?: { id: string; task: string; variant: string; repetition: number };
  graph: { mermaid?: string; problem?: string };
  /** The newest steps (or those from the index the page asked from). */
  history: StepsPage & { branches: { branch: number; from?: string }[]; head?: string };
  /** The graphs of a node that has not finished: their steps so far. */
  inFlight: Nested[];
  /** The run's tokens, and those of a node that has not finished. */
  tokens: TokenUsage;
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
  approval?: Approval;
  /** Several calls waiting at once (branches of one step): each answered on its own, by `call`. */
  approvals?: { call: string; request: Approval }[];
}

/** Each turn's tool calls of each Coder node (fetched when shown). */
export interface ToolTurn {
  node: string;
  turn: number;
  checkpointId: string;
  calls: { id: string; name: string; args: unknown; ok: boolean; errorKind?: string; preview: string; artifact?: string }[];
}

export interface Message {
  type: string;
  name?: string;
  content: string;
  auto: boolean;
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

/** An eval as the evals page lists it. */
export interface EvalListed {
  id: string;
  suite: string;
  status: string;
  createdAt: string;
  updatedAt: string;
  variants: { label: string; graph: string; model: string | null; passed: number }[];
  trials: { total: number; finished: number };
}

/** One eval: its report (the record is there too, as the store keeps it). */
export interface EvalPage {
  report: EvalReport;
}
