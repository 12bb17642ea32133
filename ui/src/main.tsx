import { render } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  evalOfHash,
  follow,
  get,
  post,
  threadApi,
  threadOfHash,
  withToken,
  type ActionResult,
  type Approval,
  type Change,
  type CheckpointState,
  type Message,
  type Nested,
  type Step,
  type StepDetail,
  type StepDiff,
  type StepsPage,
  type ThreadPage,
  type ThreadSummary,
  type ToolTurn,
} from "./api.js";
import { Eval, evalHref, Evals, TableHead, threadHref } from "./evals.js";
import { html as diffHtml } from "diff2html";
import "diff2html/bundles/css/diff2html.min.css";
import "./style.css";

/** The page the hash names: `#/` the threads, `#/thread/<id>` one thread, `#/evals` the evals, `#/eval/<id>` one eval. */
function useRoute(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash;
}

function App() {
  const hash = useRoute();
  const threadId = threadOfHash(hash);
  const evalId = evalOfHash(hash);
  return (
    <div class="app">
      <header class="top">
        <a href="#/" class="brand">
          loopgraph
        </a>
        <span class="sub">inspector</span>
      </header>
      {threadId !== undefined ? (
        <Thread threadId={threadId} />
      ) : evalId !== undefined ? (
        <Eval evalId={evalId} />
      ) : hash === "#/evals" ? (
        <Evals />
      ) : (
        <Threads />
      )}
    </div>
  );
}

const STATUSES = ["all", "running", "paused", "finished", "failed", "interrupted", "limited", "queued"];

function Threads() {
  const [threads, setThreads] = useState<ThreadSummary[] | undefined>();
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState("all");
  const [search, setSearch] = useState("");
  useEffect(() => {
    const load = () =>
      get<{ threads: ThreadSummary[] }>("/api/threads").then(
        (page) => setThreads(page.threads),
        (e: Error) => setError(e.message),
      );
    void load();
    const timer = setInterval(load, 2000);
    return () => clearInterval(timer);
  }, []);
  if (error) return <p class="error">{error}</p>;
  if (!threads) return <p>loading…</p>;
  const needle = search.toLowerCase();
  const shown = threads.filter(
    (t) =>
      (status === "all" || t.status === status) &&
      (needle === "" || [t.threadId, t.graphName, t.task].some((text) => text.toLowerCase().includes(needle))),
  );
  return (
    <main>
      <h1>
        Threads{" "}
        <a href="#/evals" class="h-link">
          Evals
        </a>
      </h1>
      <div class="filters">
        <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)} aria-label="status">
          {STATUSES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
        <input
          type="search"
          placeholder="search thread, graph, task"
          value={search}
          onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
        />
      </div>
      <table class="threads">
        <TableHead columns={["thread", "status", "graph", "task", "checkpoints", "tokens", "updated", "linked"]} />
        <tbody>
          {shown.map((t) => (
            <tr key={t.threadId}>
              <td>
                <a href={threadHref(t.threadId)}>{t.threadId}</a>
              </td>
              <td>
                <StatusBadge thread={t} />
              </td>
              <td>{t.graphName}</td>
              <td class="task">{t.task}</td>
              <td>{t.checkpoints}</td>
              <td>{t.tokens ? `${t.tokens.inputTokens}→${t.tokens.outputTokens}` : "-"}</td>
              <td>{t.updatedAt.replace("T", " ").slice(0, 19)}</td>
              <td>{t.linked ? <a href={threadHref(t.linked)}>{t.linked}</a> : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown.length === 0 ? <p class="dim">no threads{threads.length > 0 ? " match" : " yet: start one with loopgraph run"}</p> : null}
    </main>
  );
}

function StatusBadge({ thread }: { thread: ThreadSummary }) {
  const why =
    thread.status === "paused" && thread.pause ? ` (${thread.pause.reason}${thread.pause.node ? ` at ${thread.pause.node}` : ""})` : "";
  return <span class={`status status-${thread.status}`}>{thread.status + why}</span>;
}

/** Older steps loaded above the newest page: each block's steps (in tree order) and the index of its first. */
type Block = { steps: Step[]; from: number };
type Loaded = { page: ThreadPage; older: Block[] };

/**
 * The steps shown before a newer page arrives, kept: the older blocks, and the steps of the
 * previous newest page that the new one no longer holds (a live run moved it on).
 */
function keptBefore(previous: Loaded | undefined, next: ThreadPage): Block[] {
  if (!previous) return [];
  const from = next.history.range.from;
  const blocks = [...previous.older, { steps: previous.page.history.checkpoints, from: previous.page.history.range.from }];
  return blocks
    .map((block) => ({
      from: block.from,
      steps: block.steps.filter((step) => (step.index ?? 0) < from).map(({ head: _, ...step }) => step),
    }))
    .filter((block) => block.steps.length > 0);
}

function Thread({ threadId }: { threadId: string }) {
  const [loaded, setLoaded] = useState<Loaded>();
  const [error, setError] = useState<string>();
  const [selected, setSelected] = useState<string>();
  const [details, setDetails] = useState<Record<string, StepDetail>>({});
  /** Counts the live updates: what is shown on demand is fetched again on each. */
  const [version, setVersion] = useState(0);
  const base = threadApi(threadId);
  useEffect(() => {
    let alive = true;
    setLoaded(undefined);
    setDetails({});
    const load = () =>
      get<ThreadPage>(base).then(
        (next) => alive && (setLoaded((previous) => ({ page: next, older: keptBefore(previous, next) })), setError(undefined)),
        (e: Error) => alive && setError(e.message),
      );
    void load();
    const stop = follow(threadId, () => {
      void load();
      setVersion((count) => count + 1);
    });
    return () => {
      alive = false;
      stop();
    };
  }, [threadId]);
  if (error && !loaded) return <p class="error">{error}</p>;
  if (!loaded) return <p>loading…</p>;
  const { page, older } = loaded;
  const { thread } = page;
  const first = older[0]?.from ?? page.history.range.from;
  const loadOlder = () =>
    void get<StepsPage>(`${base}/steps?before=${first}`).then(
      (more) =>
        setLoaded((current) => current && { ...current, older: [{ steps: more.checkpoints, from: more.range.from }, ...current.older] }),
      (e: Error) => setError(e.message),
    );
  const open = (checkpointId: string) => {
    setSelected(checkpointId);
    if (!details[checkpointId])
      void get<StepDetail>(`${base}/steps/${encodeURIComponent(checkpointId)}`).then(
        (detail) => setDetails((known) => ({ ...known, [checkpointId]: detail })),
        (e: Error) => setError(e.message),
      );
  };
  const steps = [...older.flatMap((block) => block.steps), ...page.history.checkpoints];
  return (
    <main>
      <h1 class="thread-title">
        {thread.threadId} <StatusBadge thread={thread} />
      </h1>
      <p class="meta">
        graph <b>{thread.graphName}</b> · {page.tokens.inputTokens} tokens in, {page.tokens.outputTokens} out · updated{" "}
        {thread.updatedAt.replace("T", " ").slice(0, 19)}
        {page.linked ? (
          <>
            {" "}
            · linked: <a href={threadHref(page.linked)}>{page.linked}</a>
          </>
        ) : null}
      </p>
      {page.eval ? (
        <p class="trial" data-testid="trial">
          trial {page.eval.task} {page.eval.variant}#{page.eval.repetition} of eval <a href={evalHref(page.eval.id)}>{page.eval.id}</a>
        </p>
      ) : null}
      {thread.task ? <p class="task-line">task: {thread.task}</p> : null}
      <p class="links">
        <a
          href={withToken(`/api/threads/${encodeURIComponent(thread.threadId)}/export-script`)}
          download={`${thread.threadId}.script.yaml`}
        >
          Download the exported script
        </a>{" "}
        <span class="dim">(its model answers as a scripted-model file, as inspect --export-script)</span>
      </p>
      {thread.error ? <p class={thread.status === "failed" ? "error" : "warn"}>{thread.error}</p> : null}
      {resumable(page) ? <ResumeBox threadId={thread.threadId} /> : null}
      {page.approvals ? (
        page.approvals.map(({ call, request }) => <ApprovalBox key={call} threadId={thread.threadId} approval={request} call={call} />)
      ) : page.approval ? (
        <ApprovalBox threadId={thread.threadId} approval={page.approval} />
      ) : null}
      <div class="columns">
        <section class="graph-panel">
          <h2>Graph</h2>
          {page.graph.mermaid ? <Graph text={page.graph.mermaid} /> : <p class="warn">{page.graph.problem}</p>}
        </section>
        {page.looper ? (
          <section class="looper">
            <h2>Looper</h2>
            <pre class="status-block">{page.looper.text}</pre>
            {LOOP_GOES_ON.has(page.looper.threadStatus) ? <LooperCommands threadId={thread.threadId} /> : null}
          </section>
        ) : null}
      </div>
      <section>
        <h2>Timeline</h2>
        {first > 0 ? (
          <button class="older" data-testid="older" onClick={loadOlder}>
            {first} older step{first === 1 ? "" : "s"}: show {Math.min(first, PAGE_STEPS)} more
          </button>
        ) : null}
        <Timeline steps={steps} inFlight={page.inFlight} details={details} selected={selected} onSelect={open} />
        {selected ? (
          <CheckpointView
            threadId={thread.threadId}
            step={steps.find((c) => c.checkpointId === selected)}
            changes={details[selected]?.changes}
            runs={RUNS.has(thread.status)}
          />
        ) : null}
      </section>
      <OnDemand<{ diffs: StepDiff[]; problem?: string }> title="Files changed, step by step" path={`${base}/files`} version={version}>
        {(files) => <Files files={files} />}
      </OnDemand>
      <OnDemand<{ toolCalls: ToolTurn[] }> title="Tool calls" path={`${base}/tool-calls`} version={version}>
        {({ toolCalls }) => <ToolCalls turns={toolCalls} />}
      </OnDemand>
      <OnDemand<{ messages: Message[] }> title="Messages and the [AUTO] log" path={`${base}/messages`} version={version}>
        {({ messages }) => <Messages messages={messages} />}
      </OnDemand>
    </main>
  );
}

/** The steps an older page brings (the server's page size). */
const PAGE_STEPS = 200;

/** A section that grows with the thread: fetched when opened, again on each live update while open. */
function OnDemand<T>({
  title,
  path,
  version,
  children,
}: {
  title: string;
  path: string;
  version: number;
  children: (value: T) => preact.JSX.Element;
}) {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState<T>();
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    if (!open) return;
    let alive = true;
    void get<T>(path).then(
      (next) => alive && (setValue(next), setProblem(undefined)),
      (e: Error) => alive && setProblem(e.message),
    );
    return () => {
      alive = false;
    };
  }, [open, path, version]);
  return (
    <section>
      <details class="on-demand" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
        <summary>
          <h2>{title}</h2>
        </summary>
        {problem ? <p class="warn">{problem}</p> : value === undefined ? <p class="dim">loading…</p> : children(value)}
      </details>
    </section>
  );
}

/** Statuses of a thread a process runs or will run: its files and its head are not to be changed under it. */
const RUNS = new Set(["running", "queued"]);
/** Statuses of a loop that takes commands (Add, Stop) now or when it goes on. */
const LOOP_GOES_ON = new Set(["running", "paused", "queued"]);

/** Whether `loopgraph resume` would take the thread on: it failed, was interrupted, or is paused at anything but an approval (Approve and Reject answer that). */
const resumable = (page: ThreadPage): boolean =>
  page.thread.status === "failed" ||
  page.thread.status === "interrupted" ||
  (page.thread.status === "paused" && page.approval === undefined);

/** What a command the page ran did: its exit code and output, or that it goes on in the background (and where its output goes). */
const describeAnswer = (answer: ActionResult): string =>
  answer.exitCode === undefined
    ? `${answer.command}: running${answer.log ? ` (its output goes to ${answer.log})` : ""}`
    : `${answer.command}: exit ${answer.exitCode}${answer.output ? `\n${answer.output}` : ""}`;

/** An action of the page on the thread: it runs the CLI command that does it; `result` says what that did. */
function useAction(threadId: string) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<string>();
  const act = async (kind: string, body: Record<string, unknown> = {}) => {
    setBusy(true);
    try {
      setResult(describeAnswer(await post<ActionResult>(`/api/threads/${encodeURIComponent(threadId)}/actions/${kind}`, body)));
    } catch (error) {
      setResult(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };
  return { busy, result, act };
}

/** Resume a failed, interrupted or paused thread, as `loopgraph resume <thread>`. */
function ResumeBox({ threadId }: { threadId: string }) {
  const { busy, result, act } = useAction(threadId);
  return (
    <div class="actions" data-testid="resume">
      <button disabled={busy} onClick={() => void act("resume")}>
        Resume
      </button>
      {result ? <pre class="result">{result}</pre> : null}
    </div>
  );
}

let graphCount = 0;

/** Mermaid, from its own script (ui/src/mermaid.ts), fetched once, with the page's token as every request. */
let mermaidLoaded: Promise<typeof import("mermaid").default> | undefined;
function loadMermaid(): Promise<typeof import("mermaid").default> {
  // A URL made at run time: the bundler leaves the import to the browser instead of inlining Mermaid here.
  const url = withToken("/assets/mermaid.js");
  mermaidLoaded ??= (import(url) as Promise<typeof import("./mermaid.js")>).then((module) => module.default);
  return mermaidLoaded;
}

/** The run drawn on its graph (Mermaid, bundled): visited nodes filled, the current one outlined. */
function Graph({ text }: { text: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    let alive = true;
    void loadMermaid().then(async (mermaid) => {
      mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral" });
      try {
        const { svg } = await mermaid.render(`graph-${++graphCount}`, text);
        if (alive && box.current) box.current.innerHTML = svg;
      } catch (error) {
        if (alive) setProblem(error instanceof Error ? error.message : String(error));
      }
    });
    return () => {
      alive = false;
    };
  }, [text]);
  return problem ? <pre class="warn">{problem}</pre> : <div class="graph" ref={box} data-testid="graph" />;
}

/**
 * The steps shown, oldest first (forks marked by branch); under each step opened, the steps of the
 * graphs it ran; at the end, those of a node that has not finished.
 */
function Timeline({
  steps,
  inFlight,
  details,
  selected,
  onSelect,
}: {
  steps: Step[];
  inFlight: Nested[];
  details: Record<string, StepDetail>;
  selected?: string;
  onSelect: (id: string) => void;
}) {
  const rows: preact.JSX.Element[] = [];
  const nestedRows = (all: Nested[], ns: string, step: Step, depth: number) => {
    for (const inner of all.filter((inner) => inner.parentNs === ns && inner.from === step.parentId && step.nodes.includes(inner.node)))
      addTimeline(all, inner, depth);
  };
  const addTimeline = (all: Nested[], inner: Nested, depth: number) => {
    for (const nestedStep of inner.checkpoints) {
      rows.push(
        <tr class="nested" key={nestedStep.checkpointId}>
          <td />
          <td />
          <td style={{ paddingLeft: `${depth * 1.2}em` }}>↳ {nestedStep.nodes.join(",")}</td>
          <td class="what">{nestedStep.what}</td>
          <td>
            {nestedStep.tokens.inputTokens + nestedStep.tokens.outputTokens
              ? `${nestedStep.tokens.inputTokens}→${nestedStep.tokens.outputTokens}`
              : "-"}
          </td>
          <td />
          <td>{nestedStep.status === "done" ? "" : nestedStep.status}</td>
        </tr>,
      );
      nestedRows(all, inner.ns, nestedStep, depth + 1);
    }
  };
  for (const step of steps) {
    rows.push(
      <tr
        key={step.checkpointId}
        class={`step${selected === step.checkpointId ? " selected" : ""}${step.head ? " head" : ""}`}
        onClick={() => onSelect(step.checkpointId)}
      >
        <td>{step.index}</td>
        <td>{step.branch > 0 ? `fork ${step.branch}` : ""}</td>
        <td class="node">
          <span class="guide">{step.guide}</span>
          {step.nodes.join(",")}
        </td>
        <td class="what">{step.what}</td>
        <td>{step.tokens.inputTokens + step.tokens.outputTokens ? `${step.tokens.inputTokens}→${step.tokens.outputTokens}` : "-"}</td>
        <td>{step.seconds === undefined ? "-" : `${step.seconds.toFixed(1)}s`}</td>
        <td>{step.status === "done" ? "" : step.status}</td>
      </tr>,
    );
    for (const lane of step.lanes ?? []) {
      const name = lane.index === undefined ? lane.node : `${lane.node}[${lane.index}]`;
      rows.push(
        <tr class="lane" key={`${step.checkpointId}-${name}`}>
          <td />
          <td />
          <td style={{ paddingLeft: "1.2em" }}>∥ {name}</td>
          <td />
          <td>{lane.tokens.inputTokens + lane.tokens.outputTokens ? `${lane.tokens.inputTokens}→${lane.tokens.outputTokens}` : "-"}</td>
          <td>{lane.seconds === undefined ? "-" : `${lane.seconds.toFixed(1)}s`}</td>
          <td />
        </tr>,
      );
    }
    const opened = details[step.checkpointId];
    if (opened) nestedRows(opened.nested, "", step, 1);
  }
  // The steps of a node still running (or paused inside, at an approval): no step of the root graph to go under yet.
  const running = inFlight.filter((inner) => inner.parentNs === "" && inner.checkpoints.length > 0);
  if (running.length > 0) {
    rows.push(
      <tr class="in-flight" key="in-flight">
        <td colSpan={7}>steps of a node that has not finished:</td>
      </tr>,
    );
    for (const inner of running) addTimeline(inFlight, inner, 1);
  }
  return (
    <table class="timeline" data-testid="timeline">
      <thead>
        <tr>
          <th>#</th>
          <th>branch</th>
          <th>node</th>
          <th>what it did</th>
          <th>tokens</th>
          <th>time</th>
          <th>status</th>
        </tr>
      </thead>
      <tbody>{rows}</tbody>
    </table>
  );
}

const short = (value: unknown, max = 240): string => {
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

function ChangeLine({ change }: { change: Change }) {
  const sign = change.kind === "added" ? "+" : change.kind === "removed" ? "-" : "~";
  return (
    <div class={`change change-${change.kind}`}>
      {sign} {change.path}: {short(change.kind === "removed" ? change.before : change.value)}
    </div>
  );
}

/** One checkpoint: its changes from the one before (fetched when it was opened), and its whole state (when asked for). */
function CheckpointView({ threadId, step, changes, runs }: { threadId: string; step?: Step; changes?: Change[]; runs: boolean }) {
  const [state, setState] = useState<CheckpointState>();
  useEffect(() => {
    setState(undefined);
    if (step)
      void get<CheckpointState>(`/api/threads/${encodeURIComponent(threadId)}/checkpoints/${encodeURIComponent(step.checkpointId)}`).then(
        setState,
      );
  }, [threadId, step?.checkpointId]);
  if (!step) return null;
  return (
    <div class="checkpoint" data-testid="checkpoint">
      <h3>
        checkpoint {step.checkpointId} · step {step.step} · {step.nodes.join(",")}
      </h3>
      <div class="changes">
        {changes === undefined ? (
          <span class="dim">loading…</span>
        ) : changes.length ? (
          changes.map((change) => <ChangeLine change={change} />)
        ) : (
          <span class="dim">no change</span>
        )}
      </div>
      <details>
        <summary>state</summary>
        <pre class="state">{state ? JSON.stringify(state.values, null, 2) : "loading…"}</pre>
      </details>
      <CheckpointActions threadId={threadId} checkpointId={step.checkpointId} runs={runs} />
    </div>
  );
}

/**
 * From this checkpoint: fork with an edited state (`replay --from --set`), rewind the files (preview
 * first). While a process runs the thread, only the preview: a fork or a rewind would change its
 * head or its files under it.
 */
function CheckpointActions({ threadId, checkpointId, runs }: { threadId: string; checkpointId: string; runs: boolean }) {
  const [edits, setEdits] = useState("");
  const { busy, result, act } = useAction(threadId);
  const from = (kind: string, body: Record<string, unknown>) => void act(kind, { checkpoint: checkpointId, ...body });
  return (
    <div class="checkpoint-actions">
      <h3>From this checkpoint</h3>
      {runs ? null : (
        <textarea
          rows={2}
          placeholder={"state edits, one per line: task=Fix it again\nvars.retries=3"}
          value={edits}
          onInput={(e) => setEdits((e.target as HTMLTextAreaElement).value)}
        />
      )}
      <div class="actions">
        {runs ? null : (
          <button disabled={busy} onClick={() => from("fork", { set: edits.split("\n").filter((line) => line.trim() !== "") })}>
            Fork from here
          </button>
        )}
        <button disabled={busy} onClick={() => from("rewind", { dryRun: true })}>
          Rewind preview
        </button>
        {runs ? null : (
          <button
            disabled={busy}
            class="reject"
            onClick={() => confirm("Put the workspace's files back as they were at this checkpoint?") && from("rewind", {})}
          >
            Rewind files
          </button>
        )}
      </div>
      {result ? (
        <pre class="result" data-testid="action-result">
          {result}
        </pre>
      ) : null}
    </div>
  );
}

/** The file changes of each file-changing tool step, from the workspace snapshots. */
function Files({ files }: { files: { diffs: StepDiff[]; problem?: string } }) {
  return (
    <div>
      {files.problem ? <p class="warn">{files.problem}</p> : null}
      {files.diffs.length === 0 && !files.problem ? <p class="dim">no file changed</p> : null}
      {files.diffs.map((diff) => (
        <div class="file-step" key={diff.seq} data-testid="file-step">
          <h3>
            {diff.seq}. {diff.node} · {diff.tool} · {diff.paths.join(", ")}
          </h3>
          <Diff text={diff.patch} />
          {diff.cut ? <p class="dim">cut: the patch is longer than shown</p> : null}
        </div>
      ))}
    </div>
  );
}

function ToolCalls({ turns }: { turns: ToolTurn[] }) {
  return (
    <div>
      {turns.length === 0 ? <p class="dim">no tool call</p> : null}
      {turns.map(({ node, turn, checkpointId, calls }) => (
        <div key={`${checkpointId}:${node}`} data-testid="tool-turn">
          <h3>
            {node}, turn {turn}
          </h3>
          <table class="tools">
            <tbody>
              {calls.map((call) => (
                <tr key={call.id} class={call.ok ? "" : "failed"}>
                  <td class="tool">{call.name}</td>
                  <td>
                    <code>{short(call.args, 200)}</code>
                  </td>
                  <td>
                    {call.ok ? "" : <b>{call.errorKind ?? "failed"}: </b>}
                    <span class="preview">{call.preview}</span>
                    {call.artifact ? <div class="dim">cut for the model: the whole result is in {call.artifact}</div> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </div>
  );
}

function Messages({ messages }: { messages: Message[] }) {
  return (
    <ol class="messages">
      {messages.map((message, index) => (
        <li key={index} class={`message message-${message.type}${message.auto ? " auto" : ""}`}>
          <span class="who">{message.name ?? message.type}</span> <span class="text">{message.content}</span>
        </li>
      ))}
    </ol>
  );
}

/** A unified diff or patch, drawn by diff2html (which escapes the text it shows): a file header, then its lines, added and removed marked. */
function Diff({ text }: { text: string }) {
  const html = useMemo(() => diffHtml(text, { drawFileList: false, outputFormat: "line-by-line", matching: "lines" }), [text]);
  return <div class="diff" data-testid="diff" dangerouslySetInnerHTML={{ __html: html }} />;
}

/**
 * A tool call the run waits on: what it would do, and approve or reject (with a reason), as
 * `resume --approve` / `--reject`; with several waiting, each box answers its own (`--call`).
 */
function ApprovalBox({ threadId, approval, call }: { threadId: string; approval: Approval; call?: string }) {
  const [reason, setReason] = useState("");
  const { busy, result, act } = useAction(threadId);
  const who = approval.instance === undefined ? approval.node : `${approval.node}[${approval.instance}]`;
  const which = call === undefined ? {} : { call };
  return (
    <section class="approval" data-testid="approval">
      <h2>
        Waiting for approval: {who} wants to call {approval.tool}
        {call === undefined ? null : <span class="call"> ({call})</span>}
      </h2>
      <p>{approval.reason}</p>
      <pre class="args">{JSON.stringify(approval.args, null, 2)}</pre>
      {approval.details ? <pre class="details">{approval.details}</pre> : null}
      {approval.diff ? <Diff text={approval.diff} /> : null}
      <div class="actions">
        <button disabled={busy} onClick={() => void act("approve", which)}>
          Approve
        </button>
        <input
          placeholder="reason for the agent (reject)"
          value={reason}
          onInput={(e) => setReason((e.target as HTMLInputElement).value)}
        />
        <button disabled={busy} class="reject" onClick={() => void act("reject", { reason, ...which })}>
          Reject
        </button>
      </div>
      {result ? <pre class="result">{result}</pre> : null}
    </section>
  );
}

/** A command to the thread's loop, as `loopgraph send`: stop it, or add a task for after this round. */
function LooperCommands({ threadId }: { threadId: string }) {
  const [task, setTask] = useState("");
  const { busy, result, act } = useAction(threadId);
  const send = (body: { command: "stop" } | { command: "add"; task: string }) => act("send", body);
  return (
    <div class="looper-commands">
      <input placeholder="a task for after this round" value={task} onInput={(e) => setTask((e.target as HTMLInputElement).value)} />
      <button disabled={busy || task.trim() === ""} onClick={() => void send({ command: "add", task })}>
        Add
      </button>
      <button disabled={busy} class="reject" onClick={() => void send({ command: "stop" })}>
        Stop
      </button>
      {result ? <pre class="result">{result}</pre> : null}
    </div>
  );
}

render(<App />, document.getElementById("app")!);
