import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { eventBus, messageTopic, runGraph, type ThreadMessage } from "../src/index.js";
import { ROOT } from "./helpers/cli.js";
import { onCleanup, tempWorkspace } from "./helpers/workspace.js";
import { settingsOf } from "../src/config/environment-settings.js";

describe("event bus", () => {
  it("publishes a thread's messages on message:<thread>, in the order of its message log, and nothing on other threads' topics", async () => {
    const repo = tempWorkspace({ git: true, files: { "notes.txt": "start\n" } });
    const received: ThreadMessage[] = [];
    const elsewhere: ThreadMessage[] = [];
    onCleanup(eventBus.subscribe(messageTopic("bus"), (message) => received.push(message)));
    onCleanup(eventBus.subscribe(messageTopic("other"), (message) => elsewhere.push(message)));

    const outcome = await runGraph({
      graph: "coder-review",
      task: "write add()",
      threadId: "bus",
      workspace: repo.dir,
      db: repo.db,
      approval: "auto",
      settings: settingsOf({}),
      noSandbox: true,
      model: `scripted:${join(ROOT, "examples/coder-review.script.yaml")}`,
    });
    expect(outcome.status, outcome.error).toBe("finished");

    const logged = outcome.state.messages
      .map((message) => (typeof message.content === "string" ? message.content : ""))
      .filter((content) => content.startsWith("[AUTO]"));
    const published = received.filter((message) => message.auto);
    expect(published.map((message) => message.content)).toEqual(logged);
    expect(published.every((message) => message.threadId === "bus" && message.node === "looper")).toBe(true);
    expect(received.some((message) => message.node === "judge")).toBe(true);
    expect(elsewhere).toEqual([]);
  });
});
