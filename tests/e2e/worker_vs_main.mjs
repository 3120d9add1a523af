// Measurement (prints a table, asserts nothing): the same plain-JS streaming loop run on the
// page's main thread and in a dedicated Web Worker, against the reference server over h2 at
// c = 8, each chunk's arrival gap compared with the server's truth. It answers "does the
// run loop need a Web Worker?" independently of pinbench's own code.
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
    const r = await fetch(base + "/v1/completions", { method: "POST", headers: { "content-type": "application/json" }, body });
    const reader = r.body.getReader(); const dec = new TextDecoder(); const rec = [];
    for (;;) { const { done, value } = await reader.read(); const t = performance.now(); if (done) break;
      for (const m of dec.decode(value).matchAll(/"pinbench_emit_us":(\\d+)/g)) rec.push([t * 1000, Number(m[1])]); }
    out.push(rec);
  }
  await Promise.all(Array.from({ length: c }, async () => { for (let i = 0; i < n; i++) await one(); }));
  return out;
}`;

function gapErrors(streams) {
  const d = [];
  for (const s of streams) for (let i = 2; i < s.length; i++) d.push(Math.abs((s[i][0] - s[i - 1][0]) - (s[i][1] - s[i - 1][1])));
  return d;
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
    rows.push(`| ${c} | ${where} | ${e.length} | ${(quantile(e, 0.5) / 1000).toFixed(2)} | ${(quantile(e, 0.99) / 1000).toFixed(2)} |`);
  }
}
console.log("| c | loop on | gaps | |client-server| p50 ms | p99 ms |\n|---:|---|---:|---:|---:|\n" + rows.join("\n"));
await browser.close();
web.close();
ref.stop();
