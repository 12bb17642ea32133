/** What the two local HTTP servers (`loopgraph ui`, `loopgraph serve`) share: their errors, security headers and JSON bodies. */
import type { IncomingMessage, Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError } from "../errors.js";

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

/** The status of a request that failed with `error`: its own for an HttpError, 400 for a bad request (`clientErrors`, a ConfigError, bad JSON or URL), else 500. */
export function errorStatus(error: unknown, clientErrors: readonly (abstract new (...args: never[]) => Error)[] = []): number {
  if (error instanceof HttpError) return error.status;
  const bad = [ConfigError, SyntaxError, URIError, ...clientErrors];
  return bad.some((kind) => error instanceof kind) ? 400 : 500;
}

/** Listens on `host`:`port` (0: a free one) and returns the port; a port in use or an address not of this machine is a one-line error. */
export async function listenOn(server: Server, port: number | undefined, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE"
          ? new ConfigError(`port ${port} is in use: pick another with --port, or leave it out for a free one`)
          : error.code === "EADDRNOTAVAIL" || error.code === "ENOTFOUND"
            ? new ConfigError(`cannot listen on ${host}: give an address of this machine with --host`)
            : error,
      ),
    );
    server.listen(port ?? 0, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}
