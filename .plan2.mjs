import Database from "better-sqlite3";
const db = new Database("/tmp/prof.db");
const keysOnly = `WITH RECURSIVE chain(hop, version, base_version) AS (
         SELECT 0, version, base_version FROM loopgraph_checkpoint_blobs
         WHERE thread_id = @threadId AND checkpoint_ns = @ns AND channel = @channel AND version = @version
         UNION ALL
         SELECT chain.hop + 1, b.version, b.base_version
         FROM chain CROSS JOIN loopgraph_checkpoint_blobs AS b
           ON b.thread_id = @threadId AND b.checkpoint_ns = @ns AND b.channel = @channel AND b.version = chain.base_version
       )
       SELECT chain.hop, b.version, b.kind, b.type, b.data, b.base_version, b.keep FROM chain CROSS JOIN loopgraph_checkpoint_blobs AS b
       ON b.thread_id = @threadId AND b.checkpoint_ns = @ns AND b.channel = @channel AND b.version = chain.version`;
const rows = db.prepare("select version from loopgraph_checkpoint_blobs where channel='messages' order by cast(version as real) desc limit 1").all();
const v = rows[0].version;
for (const [name, sql] of [["keys", keysOnly], ["keysNoData", keysOnly.replace("b.data,", "")], ["single", "select data from loopgraph_checkpoint_blobs where thread_id=@threadId and checkpoint_ns=@ns and channel=@channel and version=@version"]]) {
const st = db.prepare(sql);
const p = {threadId:"t", ns:"", channel:"messages", version:v};
for (let i = 0; i < 50; i++) st.all(p);
let s = performance.now(); for (let i = 0; i < 200; i++) st.all(p); console.log(name, (performance.now()-s)/200, st.all(p).length);
}
console.log(db.pragma("page_size"), db.pragma("cache_size"));
