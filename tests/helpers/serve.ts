/** `loopgraph serve` started by a test: the server of the LangGraph API, with the URL and token it printed. */
import { cleanEnv } from "./cli.js";
import { startCli, type RunningCli } from "./e2e.js";

/**
 * `loopgraph serve` on a free port of 127.0.0.1, in `cwd` (its project), with the URL, the token
 * and, with --static, the app's URL. Stopped when the test ends; with `standalone` (a server the
 * tests of a describe block share, started in its beforeAll), the caller stops it.
 */
export async function startServe(
  cwd: string,
  extra: string[] = [],
  options: { env?: NodeJS.ProcessEnv; standalone?: boolean } = {},
): Promise<{ serve: RunningCli; url: string; token: string; app?: string }> {
  const serve = startCli(["serve", ...extra], { cwd, env: cleanEnv(options.env ?? {}), standalone: options.standalone === true });
  const at = await serve.waitForLine((line) => line.startsWith("loopgraph serve: "));
  const url = serve.lines[at]!.slice("loopgraph serve: ".length).trim();
  await serve.waitForLine((line) => line.startsWith("  (Ctrl-C"));
  const token = serve.lines.find((line) => line.startsWith("  token: "))?.split(/\s+/)[2] ?? "";
  const app = serve.lines
    .find((line) => line.startsWith("  app: "))
    ?.slice("  app: ".length)
    .trim();
  return { serve, url, token, ...(app !== undefined && { app }) };
}
