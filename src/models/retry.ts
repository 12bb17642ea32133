import { setTimeout as delay } from "node:timers/promises";
import { ModelError } from "../errors.js";
import type { RetryNotice } from "./types.js";

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** Backoff ceiling before the first retry; doubles on each retry. */
  baseDelayMs: number;
  /** Longest wait between attempts, for backoff and for a server's retry-after alike. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 1_000, maxDelayMs: 60_000 };

/** What to do about a failed attempt. */
export type ClassifiedFailure =
  | { retryable: true; error: ModelError /** The server's requested wait. */; retryAfterMs?: number }
  | { retryable: false; error: unknown };

export interface RetryOptions {
  policy: RetryPolicy;
  classify: (error: unknown) => ClassifiedFailure;
  signal?: AbortSignal;
  onRetry?: (notice: RetryNotice) => void;
}

/**
 * Runs `attempt` until it succeeds, a failure is not retryable, or the attempts run out.
 * Aborting `signal` stops at once (also mid-wait) with the signal's reason.
 */
export async function withRetries<T>(attempt: (attemptNumber: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { policy, signal } = options;
  for (let attemptNumber = 1; ; attemptNumber++) {
    signal?.throwIfAborted();
    try {
      return await attempt(attemptNumber);
    } catch (error) {
      signal?.throwIfAborted();
      const failure = options.classify(error);
      if (!failure.retryable) throw failure.error;
      const { message, kind } = failure.error;
      if (attemptNumber >= policy.maxAttempts) {
        throw new ModelError(`${message} (gave up after ${attemptNumber} attempts)`, kind);
      }
      if (failure.retryAfterMs !== undefined && failure.retryAfterMs > policy.maxDelayMs) {
        throw new ModelError(
          `${message} (the server asks to retry after ${seconds(failure.retryAfterMs)} s, ` +
            `longer than the ${seconds(policy.maxDelayMs)} s retry limit)`,
          kind,
        );
      }
      const delayMs = failure.retryAfterMs ?? backoffDelayMs(attemptNumber, policy);
      options.onRetry?.({ attempt: attemptNumber, maxAttempts: policy.maxAttempts, delayMs, error: failure.error });
      await sleep(delayMs, signal);
    }
  }
}

/** Exponential backoff with "equal jitter": between half and all of the doubled ceiling. */
export function backoffDelayMs(failedAttempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failedAttempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Waits `ms`; an abort rejects at once with the signal's own reason. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  }
}

interface HeaderLookup {
  get(name: string): string | null;
}

/** The wait a server asks for: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date. */
export function parseRetryAfterMs(headers: HeaderLookup | undefined, now: number = Date.now()): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers?.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number.parseFloat(value) * 1_000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** An HTTP error answer from a model endpoint. */
export interface HttpFailure {
  status: number;
  headers?: HeaderLookup;
  /** The server's own error message, if any. */
  serverMessage?: string;
  /** The error code in the body, e.g. `insufficient_quota`. */
  code?: string;
}

export interface EndpointContext {
  /** Base URL, named in messages. */
  endpoint: string;
  model: string;
  /** The variable holding the key, named in auth messages. */
  apiKeyEnv?: string;
}

const RETRYABLE_CLIENT_STATUSES = new Set([408, 409, 429]);

/** Retries 408, 409, 429 (unless the quota is spent) and 5xx; an `x-should-retry` header overrides. */
export function classifyHttpFailure(failure: HttpFailure, context: EndpointContext): ClassifiedFailure {
  const { status, code } = failure;
  const { endpoint, model, apiKeyEnv } = context;
  const detail = failure.serverMessage ? `${status}: ${oneLine(failure.serverMessage)}` : `${status}`;
  const keyAdvice = apiKeyEnv ? `check ${apiKeyEnv}` : "check the server's credentials";

  if (status === 401) {
    return { retryable: false, error: new ModelError(`authentication failed at ${endpoint} (${detail}): ${keyAdvice}`, "auth") };
  }
  if (status === 403) {
    const message = `authentication failed at ${endpoint} (${detail}): ${keyAdvice} and that it may use model "${model}"`;
    return { retryable: false, error: new ModelError(message, "auth") };
  }
  if (status === 429 && code === "insufficient_quota") {
    const message = `quota exhausted at ${endpoint} (${detail}): check your plan and billing`;
    return { retryable: false, error: new ModelError(message, "rate_limit") };
  }

  const shouldRetryHeader = failure.headers?.get("x-should-retry");
  const retryable =
    shouldRetryHeader === "true" || (shouldRetryHeader !== "false" && (status >= 500 || RETRYABLE_CLIENT_STATUSES.has(status)));
  if (!retryable) {
    const message =
      status === 404
        ? `not found at ${endpoint} (${detail}): check the model name "${model}" and the base URL`
        : `${endpoint} rejected the request for model "${model}" (${detail})`;
    return { retryable: false, error: new ModelError(message, "bad_request") };
  }
  if (status === 429) {
    const error = new ModelError(`rate limited by ${endpoint} (${detail})`, "rate_limit");
    return { retryable: true, error, retryAfterMs: parseRetryAfterMs(failure.headers) };
  }
  const kind = status === 408 ? "timeout" : "server";
  const error = new ModelError(`${endpoint} failed (${detail})`, kind);
  return { retryable: true, error, retryAfterMs: parseRetryAfterMs(failure.headers) };
}

function oneLine(text: string, maxLength = 300): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > maxLength ? `${flat.slice(0, maxLength - 1)}…` : flat;
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
