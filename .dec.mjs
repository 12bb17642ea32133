import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { HumanMessage } from "@langchain/core/messages";
const serde = new JsonPlusSerializer();
const msgs = Array.from({length: 400}, (_, i) => new HumanMessage({content: "x".repeat(1024), id: "id" + i}));
const enc = await Promise.all(msgs.map(async m => (await serde.dumpsTyped(m))[1]));
const te = new TextEncoder(), td = new TextDecoder();
async function single() { return Promise.all(enc.map(b => serde.loadsTyped("json", b))); }
async function batch() { const parts = enc.map(b => td.decode(b)); return serde.loadsTyped("json", "[" + parts.join(",") + "]"); }
async function batchBytes() { let n = 2 + enc.length - 1; for (const b of enc) n += b.length; const out = new Uint8Array(n); let o = 0; out[o++] = 91; enc.forEach((b, i) => { if (i) out[o++] = 44; out.set(b, o); o += b.length; }); out[o++] = 93; return serde.loadsTyped("json", out); }
for (const f of [single, batch, batchBytes, single, batch, batchBytes]) { for (let i = 0; i < 5; i++) await f(); const s = performance.now(); for (let i = 0; i < 20; i++) await f(); console.log(f.name, ((performance.now() - s) / 20).toFixed(2)); }
