#!/usr/bin/env node
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { ExitCode, GraphValidationError, LoopgraphError } from "../errors.js";

// Command modules load LangGraph and the model SDKs: import them only when a command runs, so
// `--help` and bad-argument errors answer at once.
const commands = {
  run: () => import("./run-commands.js"),
  inspect: () => import("./inspect-command.js"),
  graphs: () => import("./graphs-command.js"),
  thread: () => import("./thread-commands.js"),
  replay: () => import("./replay-command.js"),
};

function parsePositiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError("expected a whole number of at least 1");
  return parsed;
}

const approvalOption = () =>
  new Option("--approval <mode>", "tool calls: ask (edits and shell ask), auto-edit (shell asks), auto (only denied rules stop), deny (never ask)")
    .choices(["ask", "auto-edit", "auto", "deny"])
    .default("ask");

function buildProgram(setExitCode: (code: number) => void): Command {
  const program = new Command("loopgraph")
    .description("Durable, inspectable, replayable agent workflows declared as YAML graphs.")
    .version("0.1.0")
    .option("--db <file>", "checkpoint database (default: $LOOPGRAPH_DB or .loopgraph/loopgraph.db)")
    .showHelpAfterError()
    .exitOverride();

  const withGlobals = <T extends object>(options: T): T & { db?: string } => ({ ...program.opts<{ db?: string }>(), ...options });

  program
    .command("run <graph>")
    .description("start a run of a graph (a name in ./graphs or the built-in graphs, or a path)")
    .option("--task <text>", "the task given to the graph")
    .option("--thread <id>", "thread id (default: generated)")
    .option("--workspace <dir>", "directory the nodes work in (default: current directory)")
    .option("--model <provider:model>", "model for nodes that name none (default: $LOOPGRAPH_MODEL)")
    .addOption(approvalOption())
    .option("--max-rounds <n>", "round limit of the Looper (default: the graph's, 5)", parsePositiveInt)
    .option("--json", "print newline-delimited JSON events")
    .action(async (graph: string, options) => setExitCode(await (await commands.run()).runCommand(graph, withGlobals(options))));

  program
    .command("resume <thread>")
    .description("continue a paused, interrupted, failed or crashed run from its last checkpoint")
    .option("--model <provider:model>", "use this model instead of the one recorded with the run")
    .addOption(approvalOption().default(undefined, "the run's"))
    .option("--approve", "approve the tool call the run is waiting on")
    .option("--reject [reason]", "reject the tool call the run is waiting on; the reason is told to the agent")
    .option("--answer <text>", "answer to the question the run is waiting on")
    .option("--json", "print newline-delimited JSON events")
    .action(async (thread: string, options) => setExitCode(await (await commands.run()).resumeCommand(thread, withGlobals(options))));

  program
    .command("send <thread> <message...>")
    .description('send a command to a thread\'s loop from any terminal: stop, status, "add: <task>", "start: <task>" or JSON')
    .action(async (thread: string, words: string[]) => setExitCode(await (await commands.thread()).sendCommandCli(thread, words, withGlobals({}))));

  program
    .command("stop <thread>")
    .description("stop a thread's loop after the node in progress")
    .action(async (thread: string) => setExitCode(await (await commands.thread()).sendCommandCli(thread, ["stop"], withGlobals({}))));

  program
    .command("status <thread>")
    .description("the Looper status block of a thread (no model call)")
    .option("--json", "print JSON")
    .action(async (thread: string, options) => setExitCode(await (await commands.thread()).statusCommand(thread, withGlobals(options))));

  program
    .command("inspect [thread]")
    .description("list threads; with a thread, its checkpoint history and state diffs")
    .option("--checkpoint <id>", "the full state at this checkpoint (an id or a unique prefix)")
    .option("--export-script <file>", "write the thread's recorded model answers as a scripted-model file (replay it with --model scripted:<file>)")
    .option("--json", "print JSON")
    .action(async (thread: string | undefined, options) => setExitCode(await (await commands.inspect()).inspectCommand(thread, withGlobals(options))));

  program
    .command("replay <thread>")
    .description("re-run a thread from a checkpoint into a new thread; --recorded: with the recorded model answers and tool results, no model, no side effects")
    .option("--from <checkpoint>", "start at this checkpoint (an id or a unique prefix; default: the thread's beginning)")
    .option("--recorded", "use the recorded model answers and tool results; report where the run departs from the record (exit 1)")
    .option("--json", "print newline-delimited JSON events, then the replay's result")
    .action(async (thread: string, options) => setExitCode(await (await commands.replay()).replayCommand(thread, withGlobals(options))));

  const graphs = program.command("graphs").description("list, validate and draw graph files");
  graphs
    .command("list")
    .option("--json", "print JSON")
    .description("graphs in ./graphs and the built-in ones")
    .action(async (options) => setExitCode(await (await commands.graphs()).graphsListCommand(options)));
  graphs
    .command("validate <file...>")
    .description("check graph files; errors as file:line:col: message")
    .action(async (files: string[]) => setExitCode(await (await commands.graphs()).graphsValidateCommand(files)));
  graphs
    .command("draw <file>")
    .description("print the graph as a Mermaid flowchart")
    .action(async (file: string) => setExitCode(await (await commands.graphs()).graphsDrawCommand(file)));
  return program;
}

async function main(argv: string[]): Promise<number> {
  let exitCode: number = ExitCode.Finished;
  const program = buildProgram((code) => (exitCode = code));
  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      const benign = error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help";
      return benign ? ExitCode.Finished : ExitCode.BadInput;
    }
    if (error instanceof GraphValidationError) {
      process.stderr.write(`${error.message}\n`);
      return error.exitCode;
    }
    if (error instanceof LoopgraphError) {
      process.stderr.write(`${error.message.split("\n").map((line) => `loopgraph: ${line}`).join("\n")}\n`);
      return error.exitCode;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`loopgraph: internal error: ${message.split("\n")[0]}\n`);
    if (process.env.LOOPGRAPH_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
    return ExitCode.Failed;
  }
}

const exitCode = await main(process.argv);
// Exit explicitly once output is flushed: idle HTTP keep-alive sockets must not hold the process open.
process.stdout.write("", () => process.exit(exitCode));
