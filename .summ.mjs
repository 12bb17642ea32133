import { readFileSync, readdirSync } from "node:fs";
const dir = "/tmp/cpuprof2"; const f = readdirSync(dir).sort().pop();
const p = JSON.parse(readFileSync(`${dir}/${f}`));
const self = new Map(); const byId = new Map(p.nodes.map(n => [n.id, n]));
const dt = new Map(); p.samples.forEach((s, i) => dt.set(s, (dt.get(s) ?? 0) + (p.timeDeltas[i] ?? 0)));
for (const n of p.nodes) { const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + (dt.get(n.id) ?? 0)); }
[...self].sort((a, b) => b[1] - a[1]).slice(0, 35).forEach(([k, v]) => console.log((v / 1000).toFixed(0).padStart(7), k));
