import pc from "picocolors";
import { NOTHING_TO_STOP, sendCommand } from "../engine/commands.js";
import { statusCommand } from "./status-command.js";
import { dbFlag, type GlobalOptions } from "./run-commands.js";

export async function sendCommandCli(threadId: string, words: string[], options: GlobalOptions): Promise<number> {
  const text = words.join(" ");
  const sent = await sendCommand(threadId, text, { db: options.db });
  const db = dbFlag(options.db);
  if (sent.kind === "message") {
    process.stdout.write(`sent to the Mediator of thread ${sent.threadId} (#${sent.id})\n`);
    process.stdout.write(pc.dim(`a chat open on it answers now; otherwise: loopgraph chat --thread ${sent.threadId}${db}\n`));
    return 0;
  }
  if (sent.command.command === "status") return statusCommand(threadId, options);
  if (sent.nothingToStop) {
    process.stdout.write(`${NOTHING_TO_STOP}\n`);
    return 0;
  }
  process.stdout.write(`queued for thread ${sent.threadId}: ${JSON.stringify(sent.command)} (#${sent.id})\n`);
  if (sent.chat !== undefined && sent.threadStatus !== "running") {
    process.stdout.write(pc.dim(`a chat open on thread ${sent.chat} takes it up now; otherwise: loopgraph chat --thread ${sent.chat}${db}\n`));
  } else if (sent.threadStatus !== "running") {
    process.stdout.write(pc.dim(`the thread is ${sent.threadStatus}: it takes the command when it continues (loopgraph resume ${sent.threadId}${db})\n`));
  }
  return 0;
}
