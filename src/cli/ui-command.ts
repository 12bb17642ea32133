import { spawn } from "node:child_process";
import { join } from "node:path";
import { priceTable } from "../config/environment-settings.js";
import { ConfigError } from "../errors.js";
import { packageRoot } from "../package.js";
import { storeOf, type GlobalOptions } from "./global-options.js";

export interface UiCommandOptions extends GlobalOptions {
  port?: number;
  open?: boolean;
}

/**
 * `loopgraph ui [--port N] [--open]`: the web inspector on 127.0.0.1, until Ctrl-C. It prints the
 * URL with its token (a request without the token is refused); `--open` hands it to the desktop's
 * browser (xdg-open).
 */
export async function uiCommand(options: UiCommandOptions): Promise<number> {
  const root = packageRoot();
  if (!root) throw new ConfigError("loopgraph's package files are not found beside its program: reinstall loopgraph");
  const { startUiServer } = await import("../ui/server.js");
  const server = await startUiServer({
    ...storeOf(options),
    ...(options.port !== undefined && { port: options.port }),
    assetsDir: join(root, "dist", "ui"),
    cli: { node: process.execPath, script: process.argv[1]! },
    prices: priceTable(options.settings),
  });
  process.stdout.write(`loopgraph ui: ${server.url}\n  (only this machine can reach it, and only with the token; Ctrl-C stops it)\n`);
  if (options.open) {
    const opener = spawn("xdg-open", [server.url], { stdio: "ignore", detached: true });
    opener.on("error", () => process.stdout.write("  could not start a browser (xdg-open): open the URL yourself\n"));
    opener.unref();
  }
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  return 0;
}
