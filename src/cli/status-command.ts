import { storeOf, type GlobalOptions } from "./global-options.js";
import { looperStatus } from "../engine/status.js";

/** `loopgraph status <thread> [--json]`: loads no LangChain module (see engine/status.ts). */
export async function statusCommand(threadId: string, options: GlobalOptions & { json?: boolean }): Promise<number> {
  const status = await looperStatus(threadId, storeOf(options));
  process.stdout.write(options.json ? `${JSON.stringify(status.json)}\n` : `${status.text}\n`);
  return 0;
}
