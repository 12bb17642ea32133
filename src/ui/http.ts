/** What the two local HTTP servers (`loopgraph ui`, `loopgraph serve`) share: their errors, security headers and JSON bodies. */
import type { IncomingMessage } from "node:http";

/** A request refused with its HTTP status and a one-line reason. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The largest JSON body either server reads. */
const MAX_BODY = 1_000_000;

/** The request's JSON body (a JSON object: anything else is a 400; no body is `{}`). */
export async function readJsonObject(request: IncomingMessage): Promise<Record<string, unknown>> {
  if (!String(request.headers["content-type"] ?? "").startsWith("application/json"))
    throw new HttpError(415, "send JSON (content-type: application/json)");
  let text = "";
  for await (const chunk of request) {
    text += String(chunk);
    if (text.length > MAX_BODY) throw new HttpError(413, "the request is too large");
  }
  const value: unknown = text ? JSON.parse(text) : {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new HttpError(400, "send a JSON object");
  return value as Record<string, unknown>;
}

/** Headers of every answer: no framing, no sniffing, the token never sent on as a referrer, no caching. */
export const BASE_SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};
