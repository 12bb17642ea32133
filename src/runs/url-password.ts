/**
 * The password in a connection string, read one way for every use: shown without it
 * (`withoutPassword`), redacted alone (`urlPasswords`). No LangChain module is imported here: the
 * store's narrow read path (status, the thread list) uses it.
 */

/** A URL with a password in it (`postgres://user:password@host/db`): a connection string, whatever its name. */
export const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]+@/i;

/** The password of the first URL in `value` with one, as written and percent-decoded. */
export function urlPasswords(value: string): string[] {
  const match = URL_WITH_PASSWORD.exec(value);
  const password = match ? urlPassword(value.slice(match.index)) : undefined;
  if (password === undefined) return [];
  try {
    return [...new Set([password, decodeURIComponent(password)])];
  } catch {
    return [password];
  }
}

/**
 * Where the password of the URL at the start of `url` is: from the user's colon to the
 * authority's last `@` (a password may hold `@`); undefined without one.
 */
function passwordSpan(url: string): { start: number; end: number } | undefined {
  const scheme = url.indexOf("://");
  if (scheme < 0) return undefined;
  const from = scheme + 3;
  const authorityEnd = url.slice(from).search(/[\s/?#]/);
  const authority = authorityEnd < 0 ? url.slice(from) : url.slice(from, from + authorityEnd);
  const at = authority.lastIndexOf("@");
  const colon = authority.indexOf(":");
  if (at < 0 || colon < 0 || colon > at) return undefined;
  return { start: from + colon + 1, end: from + at };
}

/** The password of the URL at the start of `url`, as written (percent-encoded where it was). */
function urlPassword(url: string): string | undefined {
  const span = passwordSpan(url);
  return span && url.slice(span.start, span.end);
}

/** A connection string with its password, if it has one, replaced by `***`. */
export function withoutPassword(url: string): string {
  const span = passwordSpan(url);
  return span ? `${url.slice(0, span.start)}***${url.slice(span.end)}` : url;
}

/** Whether `text` is a URL with a scheme and an authority (`postgres://…`, `mysql://…`), as connection strings are. */
export function isDatabaseUrl(text: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(text.trim());
}
