import type { ChatOpenAI } from "@langchain/openai";
import { ModelError } from "../errors.js";
import type { ClassifiedFailure, EndpointContext, HttpFailure } from "./retry.js";
import type { ModelSpec, ProviderEndpoint } from "./spec.js";
import { createStreamingModel, type NetworkModelOptions, type ProviderDriver, type StreamingChat } from "./streaming-chat.js";
import type { ChatModel } from "./types.js";

type OpenAIModule = typeof import("@langchain/openai");
type OpenAISdk = OpenAIModule["OpenAIClient"];

let openAIModule: Promise<OpenAIModule> | undefined;
/** LangChain's OpenAI module (and the SDK under it) loads on the first call: a run on another model never pays for it. */
const loadOpenAIModule = (): Promise<OpenAIModule> => (openAIModule ??= import("@langchain/openai"));

/** A model behind an OpenAI-compatible chat-completions endpoint: `openai:` and the presets. */
export function createOpenAIModel(spec: ModelSpec, endpoint: ProviderEndpoint, options: NetworkModelOptions = {}): ChatModel {
  let sdk: OpenAISdk | undefined;
  const driver: ProviderDriver = {
    async chat(): Promise<StreamingChat> {
      const { ChatOpenAI, OpenAIClient } = await loadOpenAIModule();
      sdk = OpenAIClient;
      return new ChatOpenAI({
        model: spec.model,
        apiKey: endpoint.apiKey,
        // withRetries is the only retry layer: LangChain's caller and the SDK's client retry nothing.
        maxRetries: 0,
        streamUsage: true,
        configuration: {
          // Explicit values, so that neither LangChain nor the SDK falls back to process.env.
          baseURL: endpoint.baseURL,
          organization: null,
          project: null,
          // Failures reach the caller as errors; the SDK must not also log them to the console.
          logLevel: "off",
        },
      }) as ChatOpenAI & StreamingChat;
    },
    httpFailure(error: unknown): HttpFailure | undefined {
      if (!sdk || !(error instanceof sdk.APIError) || error.status === undefined) return undefined;
      return { status: error.status, headers: error.headers, serverMessage: serverMessageOf(error), code: error.code ?? undefined };
    },
    isConnectionError: (error: Error) => sdk !== undefined && error instanceof sdk.APIConnectionError,
    classifyOther(error: unknown, context: EndpointContext): ClassifiedFailure | undefined {
      if (!sdk) return undefined;
      // An `error` event inside an otherwise successful stream: the server failed mid-answer.
      if (error instanceof sdk.APIError && !(error instanceof sdk.APIUserAbortError)) {
        return {
          retryable: true,
          error: new ModelError(`${context.endpoint} failed mid-response: ${serverMessageOf(error) ?? error.message}`, "server"),
        };
      }
      return undefined;
    },
  };
  return createStreamingModel(driver, spec, endpoint, options);
}

/** The body's own message: the SDK's `message` carries a status prefix and LangChain appends a URL. */
function serverMessageOf(error: InstanceType<OpenAISdk["APIError"]>): string | undefined {
  const body = error.error as { message?: unknown } | undefined;
  return typeof body?.message === "string" && body.message ? body.message : undefined;
}
