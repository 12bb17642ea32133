import { AIMessage, type AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import type { ChatOpenAI } from "@langchain/openai";
import { ModelError } from "../errors.js";
import {
  classifyHttpFailure,
  DEFAULT_RETRY_POLICY,
  withRetries,
  type ClassifiedFailure,
  type EndpointContext,
  type RetryPolicy,
} from "./retry.js";
import type { ModelSpec, ProviderEndpoint } from "./spec.js";
import { countInputTokens, countOutputTokens } from "./tokens.js";
import { toolCallsFromRaw } from "./tool-arguments.js";
import type { ChatModel, ModelCallOptions, ModelCallResult, ToolSpec } from "./types.js";
import type { TokenUsage } from "../state/graph-state.js";

export interface OpenAIModelOptions {
  retry?: Partial<RetryPolicy>;
  /** An attempt that receives no data for this long is abandoned as a timeout (and retried). */
  idleTimeoutMs?: number;
}

/**
 * Two minutes without a byte: enough for reasoning models that think long before their first
 * token, short enough that a hung server is noticed (`--model-timeout`, LOOPGRAPH_MODEL_TIMEOUT).
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

type OpenAIModule = typeof import("@langchain/openai");
type OpenAISdk = OpenAIModule["OpenAIClient"];

let openAIModule: Promise<OpenAIModule> | undefined;
/** LangChain's OpenAI module (and the SDK under it) loads on the first call: a run on another model never pays for it. */
const loadOpenAIModule = (): Promise<OpenAIModule> => (openAIModule ??= import("@langchain/openai"));

/** A model behind an OpenAI-compatible chat-completions endpoint: `openai:` and the presets. */
export function createOpenAIModel(
  spec: ModelSpec,
  endpoint: ProviderEndpoint,
  options: OpenAIModelOptions = {},
): ChatModel {
  return new OpenAICompatibleModel(spec, endpoint, options);
}

class OpenAICompatibleModel implements ChatModel {
  readonly spec: string;
  private chat?: ChatOpenAI;
  private readonly endpoint: ProviderEndpoint;
  private readonly model: string;
  private readonly policy: RetryPolicy;
  private readonly idleTimeoutMs: number;
  private readonly context: EndpointContext;

  constructor(spec: ModelSpec, endpoint: ProviderEndpoint, options: OpenAIModelOptions) {
    this.spec = `${spec.provider}:${spec.model}`;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.context = { endpoint: endpoint.baseURL, model: spec.model, apiKeyEnv: endpoint.apiKeyEnv };
    this.endpoint = endpoint;
    this.model = spec.model;
  }

  private chatOf({ ChatOpenAI }: OpenAIModule): ChatOpenAI {
    this.chat ??= new ChatOpenAI({
      model: this.model,
      apiKey: this.endpoint.apiKey,
      // withRetries is the only retry layer: LangChain's caller and the SDK's client retry nothing.
      maxRetries: 0,
      streamUsage: true,
      configuration: {
        // Explicit values, so that neither LangChain nor the SDK falls back to process.env.
        baseURL: this.endpoint.baseURL,
        organization: null,
        project: null,
        // Failures reach the caller as errors; the SDK must not also log them to the console.
        logLevel: "off",
      },
    });
    return this.chat;
  }

  async call(messages: BaseMessage[], options: ModelCallOptions): Promise<ModelCallResult> {
    const module = await loadOpenAIModule();
    const chat = this.chatOf(module);
    const reply = await withRetries(() => this.streamReply(chat, messages, options), {
      policy: this.policy,
      classify: (error) => classifyCallFailure(error, this.context, module.OpenAIClient),
      signal: options.signal,
      onRetry: options.onRetry,
    });
    return toCallResult(reply, messages, options.tools);
  }

  /**
   * One attempt. Streams with `.stream()`, never `.invoke()`: LangChain's streaming `invoke` path
   * estimates tokens with getNumTokens, which downloads encodings from the internet.
   */
  private async streamReply(chat: ChatOpenAI, messages: BaseMessage[], options: ModelCallOptions): Promise<AIMessageChunk> {
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
      const model = options.tools?.length ? chat.bindTools(options.tools.map(toOpenAITool)) : chat;
      const stream = await model.stream(messages.map(withInvalidCallsAnswerable), { signal: attempt.signal });
      let reply: AIMessageChunk | undefined;
      for await (const chunk of stream) {
        restartIdleTimer();
        if (chunk.text) options.onToken?.(chunk.text);
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
  const chunks = reply.tool_call_chunks ?? [];
  const calls =
    chunks.length > 0
      ? toolCallsFromRaw(chunks.map((chunk, i) => ({ id: chunk.id ?? `call_${chunk.index ?? i}`, name: chunk.name ?? "", args: chunk.args ?? "" })))
      : { tool_calls: reply.tool_calls, invalid_tool_calls: reply.invalid_tool_calls };
  const message = new AIMessage({
    id: reply.id,
    content: reply.content,
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
      ...message.invalid_tool_calls.map((call, i) => ({ id: call.id ?? `call_invalid_${i}`, name: call.name ?? "", args: {}, type: "tool_call" as const })),
    ],
  });
}

const NETWORK_ERROR_CODE = /^(ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|UND_ERR_)/;

function classifyCallFailure(error: unknown, context: EndpointContext, OpenAIClient: OpenAISdk): ClassifiedFailure {
  if (error instanceof ModelError) {
    return error.kind === "timeout" || error.kind === "network" ? { retryable: true, error } : { retryable: false, error };
  }
  if (error instanceof OpenAIClient.APIError && error.status !== undefined) {
    return classifyHttpFailure(
      { status: error.status, headers: error.headers, serverMessage: serverMessageOf(error), code: error.code ?? undefined },
      context,
    );
  }
  // LangChain turns the SDK's connection timeout into a plain Error named TimeoutError.
  if (error instanceof Error && error.name === "TimeoutError") {
    return { retryable: true, error: new ModelError(`${context.endpoint} timed out`, "timeout") };
  }
  const causes = causeChain(error);
  if (causes.some((cause) => isNetworkFailure(cause, OpenAIClient))) {
    const detail = causes.at(-1)?.message ?? "connection failed";
    return { retryable: true, error: new ModelError(`network error talking to ${context.endpoint}: ${detail}`, "network") };
  }
  // An `error` event inside an otherwise successful stream: the server failed mid-answer.
  if (error instanceof OpenAIClient.APIError && !(error instanceof OpenAIClient.APIUserAbortError)) {
    const message = `${context.endpoint} failed mid-response: ${serverMessageOf(error) ?? error.message}`;
    return { retryable: true, error: new ModelError(message, "server") };
  }
  return { retryable: false, error };
}

function isNetworkFailure(error: Error, OpenAIClient: OpenAISdk): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    error instanceof OpenAIClient.APIConnectionError ||
    (error instanceof TypeError && /fetch failed|terminated/.test(error.message)) ||
    (typeof code === "string" && NETWORK_ERROR_CODE.test(code))
  );
}

function causeChain(error: unknown): Error[] {
  const chain: Error[] = [];
  for (let current = error; current instanceof Error && chain.length < 10; current = current.cause) chain.push(current);
  return chain;
}

/** The body's own message: the SDK's `message` carries a status prefix and LangChain appends a URL. */
function serverMessageOf(error: InstanceType<OpenAISdk["APIError"]>): string | undefined {
  const body = error.error as { message?: unknown } | undefined;
  return typeof body?.message === "string" && body.message ? body.message : undefined;
}
