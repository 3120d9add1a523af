// Measurement (prints a table, asserts nothing): the same plain-JS streaming loop run on the
// page's main thread and in a dedicated Web Worker, against the reference server over h2 at
// c = 1, 8, 32, each chunk's arrival gap and each request's TTFT compared with the server's
// truth. It answers "does the run loop need a Web Worker?" independently of pinbench's code.
// Usage: node tests/e2e/worker_vs_main.mjs dist
import { serveDist, launch } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";
import { quantile } from "./report.mjs";

const { server: web, url } = await serveDist(process.argv[2] ?? "dist");
const ref = await startRefserver();
const browser = await launch(["--ignore-certificate-errors"]);
const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
const page = await ctx.newPage();
await page.goto(url);

// The loop: c streams, n requests each; records per chunk (arrival ms, emit µs from the event).
const LOOP = `async function runLoop(base, c, n) {
  const out = [];
  const body = JSON.stringify({ model: "pinbench-tiny", prompt: " w".repeat(64), max_tokens: 32, stream: true, ignore_eos: true });
  async function one() {
    const t0 = performance.now() * 1000;
    const r = await fetch(base + "/v1/completions", { method: "POST", headers: { "content-type": "application/json" }, body });
    const reader = r.body.getReader(); const dec = new TextDecoder(); const rec = []; let id = null;
    for (;;) { const { done, value } = await reader.read(); const t = performance.now(); if (done) break;
      const text = dec.decode(value);
      id = id ?? (/"id":"cmpl-(\\d+)"/.exec(text)?.[1] ?? null);
      for (const m of text.matchAll(/"pinbench_emit_us":(\\d+)/g)) rec.push([t * 1000, Number(m[1])]); }
    out.push({ t0, id: Number(id), rec });
  }
  await Promise.all(Array.from({ length: c }, async () => { for (let i = 0; i < n; i++) await one(); }));
  return out;
}`;

function gapErrors(streams) {
  const d = [];
  for (const { rec: s } of streams) for (let i = 2; i < s.length; i++) d.push(Math.abs((s[i][0] - s[i - 1][0]) - (s[i][1] - s[i - 1][1])));
  return d;
}

/** |client TTFT − server TTFT| per request (server: first token − request received). */
async function ttftErrors(streams) {
  const truths = new Map((await (await fetch(`http://127.0.0.1:${ref.http}/truth`)).json()).map((t) => [t.id, t]));
  return streams.filter((s) => truths.has(s.id) && s.rec.length).map((s) => {
    const t = truths.get(s.id);
    return Math.abs((s.rec[0][0] - s.t0) - (t.first_token_us - t.received_us));
  });
}

const base = `https://127.0.0.1:${ref.https}`;
const rows = [];
for (const c of [1, 8, 32]) {
  const main = await page.evaluate(async ([src, base, c]) => { eval(src + "; globalThis.runLoop = runLoop;"); return await globalThis.runLoop(base, c, 4); }, [LOOP, base, c]);
  const worker = await page.evaluate(async ([src, base, c]) => {
    const blob = new Blob([src + "; onmessage = async (e) => postMessage(await runLoop(...e.data));"], { type: "text/javascript" });
    const w = new Worker(URL.createObjectURL(blob));
    return await new Promise((res) => { w.onmessage = (e) => res(e.data); w.postMessage([base, c, 4]); });
  }, [LOOP, base, c]);
  for (const [where, data] of [["main thread", main], ["worker", worker]]) {
    const e = gapErrors(data);
    const t = await ttftErrors(data);
    const ms = (x) => (x / 1000).toFixed(2);
    rows.push(`| ${c} | ${where} | ${e.length} | ${ms(quantile(e, 0.5))} | ${ms(quantile(e, 0.99))} | ${t.length} | ${ms(quantile(t, 0.5))} | ${ms(quantile(t, 0.99))} |`);
  }
}
console.log("| c | loop on | gaps | gap error p50 ms | p99 ms | requests | TTFT error p50 ms | p99 ms |\n|---:|---|---:|---:|---:|---:|---:|---:|\n" + rows.join("\n"));
await browser.close();
web.close();
ref.stop();
