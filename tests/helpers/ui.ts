/** `loopgraph ui` started by a test: the server of the web inspector, with the URL it printed. */
import { cleanEnv } from "./cli.js";
import { startCli, type RunningCli } from "./e2e.js";

/** `loopgraph ui` on a free port of 127.0.0.1, with the URL it printed, its origin and its token. */
export async function startUi(
  db: string,
  extra: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<{ ui: RunningCli; url: string; origin: string; token: string }> {
  const ui = startCli(["--db", db, "ui", ...extra], { env: cleanEnv(env) });
  const at = await ui.waitForLine((line) => line.startsWith("loopgraph ui: "));
  const url = ui.lines[at]!.slice("loopgraph ui: ".length).trim();
  const parsed = new URL(url);
  return { ui, url, origin: parsed.origin, token: parsed.searchParams.get("token")! };
}
