import { HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { SqliteCheckpointSaver } from "./dist/src/checkpoint/index.js";
import { rmSync } from "node:fs";
rmSync("/tmp/prof.db", {force:true}); rmSync("/tmp/prof.db-wal", {force:true});
const saver = new SqliteCheckpointSaver("/tmp/prof.db");
const t = {get:0, put:0, pw:0};
for (const m of ["getTuple","put","putWrites"]) { const f = saver[m].bind(saver); saver[m] = async (...a) => { const s = performance.now(); try { return await f(...a);} finally { t[m] = (t[m]??0) + performance.now()-s; } }; }
const g = new StateGraph(MessagesAnnotation).addNode("a", () => ({})).addEdge(START, "a").addEdge("a", END).compile({ checkpointer: saver });
const s = performance.now();
for (let i = 0; i < 400; i++) await g.invoke({ messages: [new HumanMessage("x".repeat(1024))] }, { configurable: { thread_id: "t" } });
console.log(performance.now() - s, t);
saver.close();
