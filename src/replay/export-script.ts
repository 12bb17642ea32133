import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "../errors.js";
import { messageFromRecord } from "../models/recorded.js";
import { formatScript, responseFromMessage, type ScriptedResponse } from "../models/scripted.js";
import { requireThread, withStore, type StoreOptions } from "../store/store.js";

export interface ScriptExport {
  /** The file written (absolute). */
  file: string;
  responses: number;
  /** Model calls that failed in the run: a script cannot answer with an error, so they are left out. */
  failedCalls: Array<{ node: string; kind: string; error: string }>;
}

/**
 * `loopgraph inspect <thread> --export-script FILE`: the thread's recorded model answers, in the
 * order they were made, as a scripted-model file (docs/scripted-model.md). Each response names its node, so a
 * run with `--model scripted:FILE` gives every node the answers it had, whatever the order of
 * parallel calls.
 */
export async function exportScript(threadId: string, file: string, options: StoreOptions): Promise<ScriptExport> {
  return withStore(options, "read", async (store) => {
    await requireThread(store, threadId);
    const responses: ScriptedResponse[] = [];
    const failedCalls: ScriptExport["failedCalls"] = [];
    for (const record of await store.recordings.list(threadId)) {
      if (record.kind !== "model") continue;
      if (record.error) failedCalls.push({ node: record.node, kind: record.error.kind, error: record.error.message });
      else responses.push(responseFromMessage(record.node, messageFromRecord(record.output)));
    }
    const path = resolve(options.cwd ?? process.cwd(), file);
    const header = `# Exported from thread ${threadId} with \`loopgraph inspect ${threadId} --export-script\`.\n`;
    try {
      writeFileSync(path, header + formatScript(responses));
    } catch (error) {
      throw new ConfigError(`cannot write ${path}: ${(error as Error).message}`);
    }
    return { file: path, responses: responses.length, failedCalls };
  });
}
