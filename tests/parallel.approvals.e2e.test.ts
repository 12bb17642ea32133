/**
 * Approvals in several branches of one step at once (a map of two Coders that each ask): the run
 * pauses with every pending call listed; `resume --approve CALL_ID` answers one (its branch goes on,
 * the other still waits), `--reject --call CALL_ID` the other, `--approve` alone all of them.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git, parseEvents, ROOT, runCli } from "./helpers/cli.js";
import { finalState, historyOf, resume, run } from "./helpers/e2e.js";
import { tempWorkspace, type Workspace } from "./helpers/workspace.js";

/** A map of two worktree Coders (no review), each asking to run one command in approval mode ask. */
const TWO_ASKING = {
  graph: join(ROOT, "tests/fixtures/parallel/two-asks.yaml"),
  script: join(ROOT, "tests/fixtures/parallel/two-asks.script.yaml"),
};

interface CoderOutput {
  toolCalls: { name: string; ok: boolean; errorKind?: string }[];
}

const shellCalls = async (ws: Workspace, thread: string) =>
  (await finalState<{ outputs: { coder: CoderOutput[] } }>(ws.db, thread)).outputs.coder.map((coder) =>
    coder.toolCalls.map((call) => `${call.name}:${call.ok ? "ok" : (call.errorKind ?? "failed")}`),
  );

describe("approvals in several branches at once", () => {
  it("lists every pending call; answers them one by one by id: the answered branch goes on, the other still waits", async () => {
    const ws = tempWorkspace({ git: true });
    const { graph, script } = TWO_ASKING;
    const paused = await run(ws, { graph, thread: "two", task: "t", script, approval: "ask", json: false });
    expect(paused.code, paused.stderr + paused.stdout).toBe(3);
    expect(paused.stdout).toContain("2 calls wait for approval, each answered on its own:");
    expect(paused.stdout).toMatch(/call_0_0 {2}coder\[0\] wants to run shell: echo 0 > ran-0\.txt/);
    expect(paused.stdout).toMatch(/call_2_0 {2}coder\[1\] wants to run shell: echo 1 > ran-1\.txt/);
    expect(paused.stdout).toContain("--approve   (one: --approve CALL_ID)");
    const pending = (await historyOf(ws.db, "two")).thread.pause?.pending as { id: string; value: { callId: string } }[];
    expect(pending.map((question) => question.value.callId)).toEqual(["call_0_0", "call_2_0"]);

    const wrong = await resume(ws, "two", "--approve", "nope");
    expect([wrong.code, wrong.stderr]).toEqual([2, 'loopgraph: no pending call "nope": the calls waiting are call_0_0, call_2_0\n']);
    const edited = await resume(ws, "two", "--approve", "--set-arg", "command=true");
    expect(edited.code).toBe(2);
    expect(edited.stderr).toContain(
      "--edit-args and --set-arg change one call, and 2 are waiting (call_0_0, call_2_0): name it with --approve CALL_ID",
    );

    const one = await resume(ws, "two", "--approve", "call_2_0", "--json");
    expect(one.code, one.stderr).toBe(3);
    const interrupt = parseEvents(one.stdout).find((event) => event.type === "interrupt")!;
    expect(interrupt.pending).toBeUndefined();
    expect((interrupt.value as { callId: string }).callId).toBe("call_0_0");

    const other = await resume(ws, "two", "--reject", "not this one", "--call", "call_0_0");
    expect(other.code, other.stderr).toBe(0);
    expect(await shellCalls(ws, "two")).toEqual([["shell:rejected"], ["shell:ok"]]);
    expect(git(ws.dir, "show", "loopgraph/two/coder-1:ran-1.txt")).toBe("1\n");
    expect(git(ws.dir, "ls-tree", "--name-only", "loopgraph/two/coder-0")).not.toContain("ran-0.txt");
  });

  it("`--approve` alone answers every pending call together", async () => {
    const ws = tempWorkspace({ git: true });
    const { graph, script } = TWO_ASKING;
    expect((await run(ws, { graph, thread: "all", task: "t", script, approval: "ask" })).code).toBe(3);
    const resumed = await resume(ws, "all", "--approve");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await shellCalls(ws, "all")).toEqual([["shell:ok"], ["shell:ok"]]);
    const shown = await runCli(["inspect", "all", "--db", ws.db]);
    expect(shown.stdout).toMatch(/[├└] coder\[1\]/);
  });
});
