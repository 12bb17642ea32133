import { AIMessage, type AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import { ModelError } from "../errors.js";
import {
  classifyHttpFailure,
  DEFAULT_RETRY_POLICY,
  withRetries,
  type ClassifiedFailure,
  type EndpointContext,
  type HttpFailure,
  type RetryPolicy,
} from "./retry.js";
import type { ModelSpec, ProviderEndpoint } from "./spec.js";
import { countInputTokens, countOutputTokens } from "./tokens.js";
import { toolCallsFromRaw } from "./tool-arguments.js";
import type { ChatModel, ModelCallOptions, ModelCallResult, ToolSpec } from "./types.js";
import type { TokenUsage } from "../state/graph-state.js";

export interface NetworkModelOptions {
  retry?: Partial<RetryPolicy>;
  /** An attempt that receives no data for this long is abandoned as a timeout (and retried). */
  idleTimeoutMs?: number;
}

/**
 * Two minutes without a byte: enough for reasoning models that think long before their first
 * token, short enough that a hung server is noticed (`--model-timeout`, LOOPGRAPH_MODEL_TIMEOUT).
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

/** What the streaming loop needs of a LangChain chat model. */
export interface StreamingChat {
  stream(messages: BaseMessage[], options: { signal: AbortSignal }): Promise<AsyncIterable<AIMessageChunk>>;
  bindTools?(tools: ReturnType<typeof toOpenAITool>[]): { stream: StreamingChat["stream"] };
}

/**
 * A provider's side of a network model: its LangChain chat model (built with every retry of its
 * own off: withRetries is the only retry layer) and how its SDK reports failures.
 */
export interface ProviderDriver {
  /** The chat model; its module loads on the first call, so a run on another model never pays for it. */
  chat(spec: ModelSpec, endpoint: ProviderEndpoint): Promise<StreamingChat>;
  /** The HTTP answer an error of the SDK carries (status, headers, the body's message), if it is one. */
  httpFailure(error: unknown): HttpFailure | undefined;
  /** Whether an error in the cause chain is the SDK's own class for a connection that failed (a network error, retried). */
  isConnectionError?(error: Error): boolean;
  /** Provider-specific failures the generic rules do not know (an error event mid-stream). */
  classifyOther?(error: unknown, context: EndpointContext): ClassifiedFailure | undefined;
}

/** A model behind a network API, streamed through LangChain: `openai:` and its presets, `anthropic:`, `google:`. */
export function createStreamingModel(
  driver: ProviderDriver,
  spec: ModelSpec,
  endpoint: ProviderEndpoint,
  options: NetworkModelOptions = {},
): ChatModel {
  return new StreamingModel(driver, spec, endpoint, options);
}

class StreamingModel implements ChatModel {
  readonly spec: string;
  private chat?: Promise<StreamingChat>;
  private readonly policy: RetryPolicy;
  private readonly idleTimeoutMs: number;
  private readonly context: EndpointContext;

  constructor(
    private readonly driver: ProviderDriver,
    private readonly parsed: ModelSpec,
    private readonly endpoint: ProviderEndpoint,
    options: NetworkModelOptions,
  ) {
    this.spec = `${parsed.provider}:${parsed.model}`;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.context = { endpoint: endpoint.baseURL, model: parsed.model, apiKeyEnv: endpoint.apiKeyEnv };
  }

  async call(messages: BaseMessage[], options: ModelCallOptions): Promise<ModelCallResult> {
    const chat = await (this.chat ??= this.driver.chat(this.parsed, this.endpoint));
    const reply = await withRetries(() => this.streamReply(chat, messages, options), {
      policy: this.policy,
      classify: (error) => classifyFailure(error, this.context, this.driver),
      signal: options.signal,
      onRetry: options.onRetry,
    });
    return toCallResult(reply, messages, options.tools);
  }

  /**
   * One attempt. Streams with `.stream()`, never `.invoke()`: LangChain's streaming `invoke` path
   * estimates tokens with getNumTokens, which downloads encodings from the internet.
   */
  private async streamReply(chat: StreamingChat, messages: BaseMessage[], options: ModelCallOptions): Promise<AIMessageChunk> {
    const attempt = new AbortController();
    const forwardAbort = () => attempt.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", forwardAbort, { once: true });
    const idleTimeout = new ModelError(
      `no data from ${this.context.endpoint} for ${Math.round(this.idleTimeoutMs / 100) / 10} s (--model-timeout)`,
      "timeout",
    );
    let idleTimer: NodeJS.Timeout | undefined;
    const restartIdleTimer = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => attempt.abort(idleTimeout), this.idleTimeoutMs);
    };

    try {
      restartIdleTimer();
      const model = options.tools?.length && chat.bindTools ? chat.bindTools(options.tools.map(toOpenAITool)) : chat;
      const stream = await model.stream(messages.map(withInvalidCallsAnswerable), { signal: attempt.signal });
      let reply: AIMessageChunk | undefined;
      const named = new Set<number>();
      for await (const chunk of stream) {
        restartIdleTimer();
        if (chunk.text) options.onToken?.(chunk.text);
        for (const [position, call] of (chunk.tool_call_chunks ?? []).entries()) {
          const index = call.index ?? position;
          if (!call.name || named.has(index)) continue;
          named.add(index);
          options.onToolCallStart?.(call.name, named.size - 1);
        }
        reply = reply ? reply.concat(chunk) : chunk;
      }
      attempt.signal.throwIfAborted();
      if (!reply) throw new ModelError(`${this.context.endpoint} sent an empty response`, "network");
      return reply;
    } catch (error) {
      // Whatever shape the SDK gave the aborted request, report why it was aborted.
      if (attempt.signal.aborted) throw attempt.signal.reason;
      throw error;
    } finally {
      clearTimeout(idleTimer);
      options.signal?.removeEventListener("abort", forwardAbort);
    }
  }
}

/** A tool as OpenAI describes it; LangChain's Anthropic and Google models take this form too. */
function toOpenAITool(tool: ToolSpec) {
  return {
    type: "function" as const,
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/**
 * The final message; usage from the server, or counted locally when the server sent none.
 * The streamed argument text of each tool call is authoritative: LangChain reads it with a
 * partial-JSON parser that completes a truncated object (and executing that would write half a
 * file), so each call is read again strictly. A call whose text is not one JSON object goes to
 * `invalid_tool_calls` with its raw text and the reason; none is dropped, and a call the server
 * sent without an id gets `call_<index>`.
 */
function toCallResult(reply: AIMessageChunk, messages: BaseMessage[], tools?: ToolSpec[]): ModelCallResult {
  const chunks = (reply.tool_call_chunks ?? []).filter((chunk) => chunk.name || chunk.args || chunk.id);
  const calls =
    chunks.length > 0
      ? toolCallsFromRaw(
          chunks.map((chunk, i) => ({ id: chunk.id ?? `call_${chunk.index ?? i}`, name: chunk.name ?? "", args: chunk.args ?? "" })),
        )
      : { tool_calls: reply.tool_calls, invalid_tool_calls: reply.invalid_tool_calls };
  const message = new AIMessage({
    id: reply.id,
    content: textOnly(reply.content),
    ...calls,
    response_metadata: reply.response_metadata,
  });
  const usage: TokenUsage = reply.usage_metadata
    ? { inputTokens: reply.usage_metadata.input_tokens, outputTokens: reply.usage_metadata.output_tokens }
    : { inputTokens: countInputTokens(messages, tools), outputTokens: countOutputTokens(message) };
  message.usage_metadata = {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
  return { message, usage };
}

/**
 * The answer's text. Anthropic's streamed content is a list of parts (text, and the tool calls'
 * input as `input_json_delta` parts): the tool calls are kept apart (`tool_calls`), so the content
 * keeps the text parts, joined, as other providers give it.
 */
function textOnly(content: AIMessageChunk["content"]): AIMessage["content"] {
  if (typeof content === "string") return content;
  return content
    .flatMap((part) => (typeof part === "string" ? [part] : part.type === "text" && typeof part.text === "string" ? [part.text] : []))
    .join("");
}

/**
 * An earlier answer with invalid tool calls, as the server must see it: LangChain sends only
 * `tool_calls`, so the invalid ones are added there, with `{}` as arguments (some servers parse
 * the arguments of the history and would refuse the raw text). Each is answered by its
 * `invalid_arguments` tool result, which says what was wrong.
 */
function withInvalidCallsAnswerable(message: BaseMessage): BaseMessage {
  if (!AIMessage.isInstance(message) || !message.invalid_tool_calls?.length) return message;
  return new AIMessage({
    id: message.id,
    name: message.name,
    content: message.content,
    additional_kwargs: message.additional_kwargs,
    response_metadata: message.response_metadata,
    tool_calls: [
      ...(message.tool_calls ?? []),
      ...message.invalid_tool_calls.map((call, i) => ({
        id: call.id ?? `call_invalid_${i}`,
        name: call.name ?? "",
        args: {},
        type: "tool_call" as const,
      })),
    ],
  });
}

const NETWORK_ERROR_CODE = /^(ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|UND_ERR_)/;

/** The same rules for every provider: HTTP answers by status, timeouts and broken connections retried, the rest as they are. */
function classifyFailure(error: unknown, context: EndpointContext, driver: ProviderDriver): ClassifiedFailure {
  if (error instanceof ModelError) {
    return error.kind === "timeout" || error.kind === "network" ? { retryable: true, error } : { retryable: false, error };
  }
  const http = driver.httpFailure(error);
  if (http) return classifyHttpFailure(http, context);
  // LangChain turns an SDK's connection timeout into a plain Error named TimeoutError.
  if (error instanceof Error && error.name === "TimeoutError") {
    return { retryable: true, error: new ModelError(`${context.endpoint} timed out`, "timeout") };
  }
  const causes = causeChain(error);
  if (causes.some((cause) => isNetworkFailure(cause) || driver.isConnectionError?.(cause))) {
    return networkFailure(context, causes.at(-1)?.message ?? "connection failed");
  }
  return driver.classifyOther?.(error, context) ?? { retryable: false, error };
}

/** A connection that failed: retried, and reported in the same words for every provider. */
export function networkFailure(context: EndpointContext, detail: string): ClassifiedFailure {
  return { retryable: true, error: new ModelError(`network error talking to ${context.endpoint}: ${detail}`, "network") };
}

function isNetworkFailure(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    (error instanceof TypeError && /fetch failed|terminated/.test(error.message)) ||
    (typeof code === "string" && NETWORK_ERROR_CODE.test(code))
  );
}

function causeChain(error: unknown): Error[] {
  const chain: Error[] = [];
  for (let current = error; current instanceof Error && chain.length < 10; current = current.cause) chain.push(current);
  return chain;
}
