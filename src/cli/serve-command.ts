import { ConfigError } from "../errors.js";
import { storeOf, type GlobalOptions } from "./global-options.js";

export interface ServeCommandOptions extends GlobalOptions {
  port?: number;
  host?: string;
  /** `--no-auth` (commander sets `auth: false`). */
  auth?: boolean;
  cors?: string[];
  static?: string;
  model?: string;
  queue?: boolean;
}

/**
 * `loopgraph serve`: the LangGraph server API on 127.0.0.1 (docs/serve.md), until Ctrl-C, which
 * stops its runs as Ctrl-C stops a run (at a checkpoint, resumable). It prints its URL and token.
 */
export async function serveCommand(options: ServeCommandOptions): Promise<number> {
  for (const origin of options.cors ?? []) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin))
      throw new ConfigError(`--cors ${origin}: give an origin, such as http://localhost:5173 (no path)`);
  }
  const { startServeServer } = await import("../serve/server.js");
  const server = await startServeServer({
    store: storeOf(options),
    cwd: process.cwd(),
    settings: options.settings,
    ...(options.model !== undefined && { model: options.model }),
    ...(options.port !== undefined && { port: options.port }),
    ...(options.host !== undefined && { host: options.host }),
    ...(options.auth === false && { noAuth: true }),
    ...(options.cors !== undefined && { corsOrigins: options.cors }),
    ...(options.static !== undefined && { staticDir: options.static }),
    ...(options.queue && { queue: true }),
  });
  const lines = [`loopgraph serve: ${server.url}`];
  lines.push(server.token ? `  token: ${server.token}  (send it as x-api-key: the SDK's apiKey)` : "  no token asked (--no-auth)");
  if (options.static !== undefined) lines.push(`  app: ${server.url}/app/${server.token ? `?token=${server.token}` : ""}`);
  lines.push("  (Ctrl-C stops it; its runs stop at a checkpoint and can be resumed)");
  process.stdout.write(`${lines.join("\n")}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  return 0;
}
