import Database from "better-sqlite3";
const db = new Database("/tmp/prof.db");
const sql = `WITH RECURSIVE chain(hop, version, kind, type, data, base_version, keep) AS (
         SELECT 0, version, kind, type, data, base_version, keep FROM loopgraph_checkpoint_blobs
         WHERE thread_id = @threadId AND checkpoint_ns = @ns AND channel = @channel AND version = @version
         UNION ALL
         SELECT chain.hop + 1, b.version, b.kind, b.type, b.data, b.base_version, b.keep
         FROM chain CROSS JOIN loopgraph_checkpoint_blobs AS b
           ON b.thread_id = @threadId AND b.checkpoint_ns = @ns AND b.channel = @channel
          AND b.version = chain.base_version
       )
       SELECT version, kind, type, data, base_version, keep FROM chain ORDER BY hop`;
console.log(db.prepare("EXPLAIN QUERY PLAN " + sql).all({threadId:"t", ns:"", channel:"messages", version:"x"}));
const rows = db.prepare("select version, kind, length(data) l, keep from loopgraph_checkpoint_blobs where channel='messages' order by cast(version as real) desc limit 40").all();
console.log(rows.slice(0,40).map(r => `${r.kind}:${r.keep}:${r.l}`).join(" "));
const v = rows[0].version;
const st = db.prepare(sql);
let s = performance.now(); for (let i = 0; i < 100; i++) st.all({threadId:"t", ns:"", channel:"messages", version:v}); console.log("chain ms", (performance.now()-s)/100, st.all({threadId:"t", ns:"", channel:"messages", version:v}).length);
console.log(db.prepare("select kind, count(*) n, sum(length(data)) b from loopgraph_checkpoint_blobs group by kind").all());
console.log(db.prepare("select count(*) n, sum(length(checkpoint)) c, sum(length(metadata)) m, sum(length(channel_versions)) v from loopgraph_checkpoints").all());
console.log(db.prepare("select count(*) n, sum(length(value)) b from loopgraph_checkpoint_writes").all());
console.log(db.prepare("select checkpoint, metadata, channel_versions from loopgraph_checkpoints limit 1 offset 600").all().map(r => [r.checkpoint.toString(), r.metadata.toString(), r.channel_versions]));
