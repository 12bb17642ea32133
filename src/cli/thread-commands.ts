import pc from "picocolors";
import { looperStatus, NOTHING_TO_STOP, sendCommand } from "../engine/commands.js";
import type { GlobalOptions } from "./run-commands.js";

export async function sendCommandCli(threadId: string, words: string[], options: GlobalOptions): Promise<number> {
  const text = words.join(" ");
  const sent = await sendCommand(threadId, text, { db: options.db });
  if (sent.command.command === "status") return statusCommand(threadId, options);
  if (sent.nothingToStop) {
    process.stdout.write(`${NOTHING_TO_STOP}\n`);
    return 0;
  }
  process.stdout.write(`queued for thread ${sent.threadId}: ${JSON.stringify(sent.command)} (#${sent.id})\n`);
  if (sent.threadStatus !== "running") {
    const db = options.db ? ` --db ${JSON.stringify(options.db)}` : "";
    process.stdout.write(pc.dim(`the thread is ${sent.threadStatus}: it takes the command when it continues (loopgraph resume ${sent.threadId}${db})\n`));
  }
  return 0;
}

export async function statusCommand(threadId: string, options: GlobalOptions & { json?: boolean }): Promise<number> {
  const status = await looperStatus(threadId, { db: options.db });
  process.stdout.write(options.json ? `${JSON.stringify(status.json)}\n` : `${status.text}\n`);
  return 0;
}
