import type { HttpFailure } from "./retry.js";
import type { ModelSpec, ProviderEndpoint } from "./spec.js";
import { createStreamingModel, type NetworkModelOptions, type StreamingChat } from "./streaming-chat.js";
import type { ChatModel } from "./types.js";

type AnthropicModule = typeof import("@langchain/anthropic");
let anthropicModule: Promise<AnthropicModule> | undefined;

/** The most an answer may take (the Messages API requires a bound): room for a long file written by a tool call. */
const MAX_OUTPUT_TOKENS = 16_384;

/** A model of Anthropic's Messages API (`anthropic:<model>`), through @langchain/anthropic. */
export function createAnthropicModel(spec: ModelSpec, endpoint: ProviderEndpoint, options: NetworkModelOptions = {}): ChatModel {
  return createStreamingModel(
    {
      async chat(): Promise<StreamingChat> {
        const { ChatAnthropic } = await (anthropicModule ??= import("@langchain/anthropic"));
        return new ChatAnthropic({
          model: spec.model,
          apiKey: endpoint.apiKey,
          anthropicApiUrl: endpoint.baseURL,
          maxTokens: MAX_OUTPUT_TOKENS,
          // withRetries is the only retry layer.
          maxRetries: 0,
          streamUsage: true,
          clientOptions: { maxRetries: 0, logLevel: "off" },
        }) as unknown as StreamingChat;
      },
      httpFailure: sdkHttpFailure,
    },
    spec,
    endpoint,
    options,
  );
}

/**
 * An HTTP answer as the Anthropic SDK (and LangChain's wrapping of its errors) reports it: a
 * numeric `status`, the response `headers`, and the body `{ type: "error", error: { type, message } }`.
 */
function sdkHttpFailure(error: unknown): HttpFailure | undefined {
  const failed = error as { status?: unknown; headers?: unknown; error?: unknown; message?: unknown };
  if (typeof failed?.status !== "number") return undefined;
  const body = failed.error as { error?: { message?: unknown; type?: unknown }; message?: unknown } | undefined;
  const message = body?.error?.message ?? body?.message;
  const type = body?.error?.type;
  return {
    status: failed.status,
    headers: headerLookup(failed.headers),
    ...(typeof message === "string" && message ? { serverMessage: message } : {}),
    ...(typeof type === "string" ? { code: type } : {}),
  };
}

/** Response headers as a Headers object or a plain record, read by name. */
function headerLookup(headers: unknown): HttpFailure["headers"] {
  if (headers && typeof (headers as Headers).get === "function") return headers as Headers;
  if (headers && typeof headers === "object") {
    const record = headers as Record<string, unknown>;
    return { get: (name: string) => (typeof record[name] === "string" ? (record[name] as string) : null) };
  }
  return undefined;
}
