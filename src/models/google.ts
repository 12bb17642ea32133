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
        const chat = new ChatGoogleGenerativeAI({
          model: spec.model,
          apiKey: endpoint.apiKey,
          baseUrl: endpoint.baseURL,
          // withRetries is the only retry layer.
          maxRetries: 0,
          streamUsage: true,
        });
        adaptClient((chat as unknown as { client?: StreamingClient }).client);
        return chat as unknown as StreamingChat;
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

/** What loopgraph touches of the SDK's model (`ChatGoogleGenerativeAI.client`). */
interface StreamingClient {
  generateContentStream(...args: unknown[]): Promise<{ response: Promise<unknown> }>;
}

/**
 * Two repairs of the SDK's streaming call (`client` is LangChain's private field: should a release
 * rename it, the providers' tests of a broken stream and of parallel tool results say so):
 * - LangChain sends each tool result as a content of its own, where Google's API takes a turn's
 *   results as one content with a functionResponse part each (and refuses the split form, 400
 *   "the number of function response parts is equal to the number of function call parts"): the
 *   request's consecutive function-response contents are joined.
 * - The SDK gives the stream and a `response` promise read from a copy of it. LangChain reads only
 *   the stream: when the connection breaks mid-answer, that promise rejects with no one to catch
 *   it, an unhandled rejection that ends the process. The stream carries the same error to
 *   withRetries; the promise's is dropped.
 */
function adaptClient(client: StreamingClient | undefined): void {
  if (typeof client?.generateContentStream !== "function") return;
  const generate = client.generateContentStream.bind(client);
  client.generateContentStream = async (request, ...rest) => {
    const result = await generate(withJoinedResponses(request), ...rest);
    result.response.catch(() => undefined);
    return result;
  };
}

interface Content {
  role?: string;
  parts?: Record<string, unknown>[];
}

const onlyResponses = (content: Content | undefined): boolean =>
  (content?.parts?.length ?? 0) > 0 && content!.parts!.every((part) => part.functionResponse !== undefined);

/** The request with each run of contents made only of function responses joined into one content. */
function withJoinedResponses(request: unknown): unknown {
  const contents = (request as { contents?: Content[] } | undefined)?.contents;
  if (!Array.isArray(contents)) return request;
  const joined: Content[] = [];
  for (const content of contents) {
    const last = joined.at(-1);
    if (last && onlyResponses(last) && onlyResponses(content) && last.role === content.role) {
      joined[joined.length - 1] = { ...last, parts: [...last.parts!, ...content.parts!] };
    } else joined.push(content);
  }
  return { ...(request as object), contents: joined };
}

/**
 * The SDK replaces the error of a connection that failed (refused, or broken mid-answer) by one of
 * its own, without the cause: `[GoogleGenerativeAI Error]: Error fetching from <url>: fetch failed`,
 * `… Error reading from the stream`. Known only by that text, it is the network failure the other
 * providers' SDKs report.
 */
const CONNECTION_FAILED =
  /^\[GoogleGenerativeAI Error\]: (?:Error fetching from \S+: (fetch failed|terminated)|(Error reading from the stream))$/;

function googleFetchFailure(error: unknown, context: EndpointContext): ClassifiedFailure | undefined {
  const match = error instanceof Error ? CONNECTION_FAILED.exec(error.message) : null;
  return match ? networkFailure(context, match[1] ?? "the connection broke mid-answer") : undefined;
}
