import { z } from "zod";
import type { TodoItem, ToolDefinition } from "./types.js";

const STATUS_MARKS: Record<TodoItem["status"], string> = { completed: "[x]", in_progress: "[>]", pending: "[ ]" };

const schema = z.strictObject({
  items: z
    .array(
      z.strictObject({
        content: z.string().trim().min(1).describe("What to do, in one line"),
        status: z.enum(["pending", "in_progress", "completed"]),
      }),
    )
    .describe("The whole plan, in order; it replaces the previous one"),
});

export const todoWriteTool: ToolDefinition<z.infer<typeof schema>> = {
  name: "todo_write",
  description:
    "Record your plan as a todo list (shown to the user). Send the complete list each time, with each item's status: " +
    "pending, in_progress (one at a time) or completed. Update it as you work.",
  effect: "state",
  schema,
  async run({ items }) {
    const todos: TodoItem[] = items.map(({ content, status }) => ({ content, status }));
    const done = todos.filter((todo) => todo.status === "completed").length;
    const lines = todos.map((todo) => `${STATUS_MARKS[todo.status]} ${todo.content}`);
    const header = todos.length === 0 ? "Todo list cleared." : `Todo list updated (${done}/${todos.length} completed):`;
    return { content: [header, ...lines].join("\n"), todos };
  },
};
