/**
 * A web chat with a loopgraph graph through `loopgraph serve`, on LangGraph's own React hook
 * (`useStream` of @langchain/langgraph-sdk): the server speaks the LangGraph server API, so the
 * hook needs nothing loopgraph-specific but the token and the shape of an approval request.
 * Built by `npm run build` into dist/examples/serve-chat/, with `react` standing for `preact/compat`.
 */
import type { Message } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./style.css";

/** What loopgraph asks when a tool call needs the user's approval (the value of the run's interrupt). */
interface ApprovalRequest {
  kind: "approval";
  node: string;
  tool: string;
  args: unknown;
  reason: string;
  /** For a file edit: the unified diff of what it would change. */
  diff?: string;
}

/** The answer that resumes a run paused for an approval. */
type ApprovalAnswer = { decision: "approve" } | { decision: "reject"; reason: string };

/** The token `loopgraph serve --static` wrote into the page (the requests' `x-api-key`). */
const token = document.querySelector<HTMLMetaElement>('meta[name="loopgraph-serve-token"]')?.content ?? "";
/** The graph to chat with: `?graph=NAME` (`loopgraph graphs list`), the Coder by default. */
const graph = new URLSearchParams(location.search).get("graph") ?? "coder";
/** The thread is kept in the URL's hash, so a reload shows the same conversation. */
const threadOfHash = () => /^#thread=(.+)$/.exec(location.hash)?.[1] ?? null;

function App() {
  const [threadId, setThreadId] = useState(threadOfHash);
  const showThread = (id: string | null) => {
    setThreadId(id);
    history.replaceState(null, "", `${location.pathname}${location.search}${id === null ? "" : `#thread=${id}`}`);
  };
  const stream = useStream<{ messages: Message[] }, { InterruptType: ApprovalRequest }>({
    apiUrl: location.origin,
    apiKey: token,
    assistantId: graph,
    messagesKey: "messages",
    threadId,
    onThreadId: showThread,
  });
  // A loopgraph thread has one task: a new task is a new thread. The hook is given no thread
  // first, and the task is sent on the render after, which creates one.
  const [task, setTask] = useState<string>();
  useEffect(() => {
    if (task === undefined || threadId !== null) return;
    setTask(undefined);
    const message: Message = { type: "human", content: task };
    // Shown at once: the server's first state comes with the run's first step.
    void stream.submit({ messages: [message] }, { optimisticValues: { messages: [message] } });
  }, [task, threadId]);
  const approval = stream.interrupts.map((pending) => pending.value).find(isApproval);
  const answer = (resume: ApprovalAnswer) => void stream.submit(null, { command: { resume } });
  return (
    <main>
      <header>
        loopgraph chat <span class="graph">{graph}</span>
        {threadId && <span class="thread">{threadId}</span>}
      </header>
      <ol class="messages">
        {stream.messages.map((message, index) => (
          <MessageView key={message.id ?? index} message={message} />
        ))}
      </ol>
      {stream.error !== undefined && stream.error !== null && <p class="error">{errorText(stream.error)}</p>}
      {approval && !stream.isLoading && <ApprovalPanel request={approval} onAnswer={answer} />}
      <TaskForm
        busy={stream.isLoading || task !== undefined}
        blocked={approval !== undefined}
        onSend={(text) => {
          showThread(null);
          setTask(text);
        }}
        onStop={() => void stream.stop()}
      />
    </main>
  );
}

/** One message, as text (never HTML): who said it, what, and the tools an answer calls. */
function MessageView({ message }: { message: Message }) {
  const calls = message.type === "ai" ? (message.tool_calls ?? []) : [];
  const who = message.type === "tool" ? `tool ${message.name ?? ""}` : message.type;
  return (
    <li class={`message ${message.type}`}>
      <span class="who">{who}</span>
      <div class="text">{textOf(message.content)}</div>
      {calls.map((call) => (
        <div class="call" key={call.id}>
          calls {call.name}
        </div>
      ))}
    </li>
  );
}

/** The approval a paused run waits for: the tool, its arguments, why it asks; Approve, or Reject with a reason. */
function ApprovalPanel({ request, onAnswer }: { request: ApprovalRequest; onAnswer: (answer: ApprovalAnswer) => void }) {
  const [reason, setReason] = useState("");
  return (
    <section class="approval" aria-label="approval">
      <h2>
        Approve <code>{request.tool}</code>?
      </h2>
      <p class="reason">{request.reason}</p>
      <pre class="args">{JSON.stringify(request.args, null, 2)}</pre>
      {request.diff && <pre class="diff">{request.diff}</pre>}
      <div class="buttons">
        <button type="button" onClick={() => onAnswer({ decision: "approve" })}>
          Approve
        </button>
        <input placeholder="why not (said to the model)" value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
        <button type="button" onClick={() => onAnswer({ decision: "reject", reason: reason.trim() || "rejected by the user" })}>
          Reject
        </button>
      </div>
    </section>
  );
}

/** The task input: Send when idle, Stop while a run goes; nothing to send while an approval waits. */
function TaskForm(props: { busy: boolean; blocked: boolean; onSend: (text: string) => void; onStop: () => void }) {
  const [text, setText] = useState("");
  const send = (event: Event) => {
    event.preventDefault();
    if (!text.trim() || props.busy || props.blocked) return;
    props.onSend(text.trim());
    setText("");
  };
  return (
    <form class="task" onSubmit={send}>
      <textarea
        placeholder={props.blocked ? "answer the approval first" : "a task for the agent (each task is a new thread)"}
        value={text}
        disabled={props.blocked}
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => event.key === "Enter" && (event.ctrlKey || event.metaKey) && send(event)}
      />
      {props.busy ? (
        <button type="button" onClick={props.onStop}>
          Stop
        </button>
      ) : (
        <button type="submit" disabled={props.blocked}>
          Send
        </button>
      )}
    </form>
  );
}

function isApproval(value: unknown): value is ApprovalRequest {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "approval";
}

/** A message's text: a string, or the text parts of a list of content blocks. */
function textOf(content: Message["content"]): string {
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
}

render(<App />, document.getElementById("app")!);
