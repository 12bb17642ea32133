import type { ClassifiedFailure, EndpointContext, HttpFailure } from "./retry.js";
import type { ModelSpec, ProviderEndpoint } from "./spec.js";
import { createStreamingModel, networkFailure, type NetworkModelOptions, type StreamingChat } from "./streaming-chat.js";
import type { ChatModel } from "./types.js";

type GoogleModule = typeof import("@langchain/google-genai");
let googleModule: Promise<GoogleModule> | undefined;

/** A Gemini model of Google's Generative Language API (`google:<model>`, or `gemini:`), through @langchain/google-genai. */
export function createGoogleModel(spec: ModelSpec, endpoint: ProviderEndpoint, options: NetworkModelOptions = {}): ChatModel {
  return createStreamingModel(
    {
      async chat(): Promise<StreamingChat> {
        const { ChatGoogleGenerativeAI } = await (googleModule ??= import("@langchain/google-genai"));
        return new ChatGoogleGenerativeAI({
          model: spec.model,
          apiKey: endpoint.apiKey,
          baseUrl: endpoint.baseURL,
          // withRetries is the only retry layer.
          maxRetries: 0,
          streamUsage: true,
        }) as unknown as StreamingChat;
      },
      httpFailure: googleHttpFailure,
      classifyOther: googleFetchFailure,
    },
    spec,
    endpoint,
    options,
  );
}

/**
 * An HTTP answer as @google/generative-ai reports it (GoogleGenerativeAIFetchError): `status`,
 * and a message `[GoogleGenerativeAI Error]: Error fetching from <url>: [429 Too Many Requests] <the server's message>`.
 * The SDK keeps no response headers, so a server's wait is not known: backoff decides.
 */
function googleHttpFailure(error: unknown): HttpFailure | undefined {
  const failed = error as { status?: unknown; message?: unknown };
  if (typeof failed?.status !== "number") return undefined;
  const text = typeof failed.message === "string" ? failed.message : "";
  const serverMessage = /\] (?!.*\] )(.*)$/s.exec(text)?.[1]?.trim();
  return { status: failed.status, ...(serverMessage ? { serverMessage } : {}) };
}

/**
 * The SDK replaces the error of a fetch that failed (a refused or broken connection) by one of its
 * own, `[GoogleGenerativeAI Error]: Error fetching from <url>: fetch failed`, without the cause:
 * known only by that text, it is the network failure the other providers' SDKs report.
 */
const FETCH_FAILED = /^\[GoogleGenerativeAI Error\]: Error fetching from \S+: (fetch failed|terminated)$/;

function googleFetchFailure(error: unknown, context: EndpointContext): ClassifiedFailure | undefined {
  const detail = error instanceof Error ? FETCH_FAILED.exec(error.message)?.[1] : undefined;
  return detail ? networkFailure(context, detail) : undefined;
}
