// Replay bench: how late the tab sends a trace's rows, with NO automation client attached
// (Playwright's CDP network events copy every request body, and a replay's bodies are up to
// 500 KB: under automation the tab's sends are several times later). Chromium is spawned
// headless on a link that starts the `mooncake-replay` preset's run by itself against the
// reference server (8b-h100 profile, block prefix cache on) and posts its report to a
// loopback collector served here. Prints, per run, send − intended (p50, p90, max) and the
// rows sent more than 5 ms late, and the page's event-loop lag. A benchmark, not a test: it
// asserts nothing (the replay's timing is asserted natively, refserver/tests/workloads.rs).
// Usage: node tests/e2e/replay_bench.mjs dist [runs]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import { spawn } from "node:child_process";
import { startRefserver } from "./refserver.mjs";
import { quantile } from "./report.mjs";

const dist = path.resolve(process.argv[2] ?? "dist");
const runs = Number(process.argv[3] ?? 2);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pinbench-replay-bench-"));
const ref = await startRefserver(["--profile", "8b-h100", "--prefix-cache", "on"]);
const base = `https://127.0.0.1:${ref.https}`;

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css", ".svg": "image/svg+xml" };
let waiting = null;
const web = http.createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  const headers = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp", "Cache-Control": "no-store", "Access-Control-Allow-Origin": "*" };
  if (u.pathname === "/__bench/collect") {
    if (req.method === "OPTIONS") { res.writeHead(204, { ...headers, "Access-Control-Allow-Headers": "content-type", "Access-Control-Allow-Methods": "POST" }).end(); return; }
    const parts = [];
    req.on("data", (d) => parts.push(d));
    req.on("end", () => {
      res.writeHead(204, headers).end();
      if ((u.searchParams.get("event") ?? "result") === "result" && waiting) { const w = waiting; waiting = null; w({ text: Buffer.concat(parts).toString("utf8"), params: u.searchParams }); }
    });
    return;
  }
  let file = path.join(dist, u.pathname === "/" ? "index.html" : decodeURIComponent(u.pathname));
  if (!file.startsWith(dist) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) file = path.join(dist, "index.html");
  res.writeHead(200, { ...headers, "Content-Type": TYPES[path.extname(file)] ?? "application/octet-stream" });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => web.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${web.address().port}`;
const collectUrl = `${origin}/__bench/collect`;

// The reference server's 8b-h100 profile as its probe fills it, and the preset's workload.
const pins = {
  endpoint_url: base, dialect: "completions", model_id: "llama-3.1-8b-sim", model_params: "8B", model_quant: "bf16",
  model_engine: "pinbench-refserver 0.1.0", max_model_len: "131072", kv_capacity: "430000", max_num_seqs: "256",
  scheduling: "continuous", phases: "chunked_prefill", prompt_exactness: "server_tokenizer", output_enforcement: "ignore_eos",
  stall_timeout_s: "30", shared_prefix: "none", turns: "1", temperature: "0", sampling_extra: "{}", reasoning: "none",
  load_mode: "replay", trace: "mooncake-conversation-60 scale=1 offset=0s", in_flight_cap: "64",
  prompt_tokens: "trace", output_tokens: "trace", nonce_prefix: "off", warmup: "0", measured: "60", cooldown: "0",
};
const link = `${origin}/?autorun=1&collect=${encodeURIComponent(collectUrl)}#pins=${encodeURIComponent(JSON.stringify(pins))}`;

async function once() {
  const dir = fs.mkdtempSync(path.join(tmp, "chromium-"));
  const result = new Promise((resolve) => { waiting = resolve; });
  const child = spawn(process.env.CHROMIUM ?? "/usr/bin/chromium", [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--ignore-certificate-errors",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
    `--user-data-dir=${dir}`, link,
  ], { stdio: "ignore", detached: true });
  const timeout = new Promise((_, rej) => setTimeout(() => rej(new Error("no report from the tab in 180 s")), 180_000));
  try {
    return await Promise.race([result, timeout]);
  } finally {
    waiting = null;
    try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ }
  }
}

const ms = (us) => (us / 1000).toFixed(1);
console.log("run  requests  send−intended p50   p90    max (ms)  >5 ms late  worker lag p99 / max (ms)  page lag p99 (ms)");
try {
  for (let i = 1; i <= runs; i++) {
    const { text, params } = await once();
    const body = JSON.parse(text).body;
    const records = body.records;
    const env = body.client.env;
    const delays = records.map((r) => r.t_send_us - r.t_intended_us).sort((a, b) => a - b);
    const late = delays.filter((d) => d > 5000).length;
    if (process.env.REPLAY_ROWS) for (const r of [...records].sort((a, b) => a.index - b.index)) console.log(`  row ${r.index}: intended +${ms(r.t_intended_us - records[0].t_intended_us)} ms, sent ${ms(r.t_send_us - r.t_intended_us)} ms late, prompt ${r.usage?.prompt_tokens} tokens`);
    console.log(`${String(i).padStart(3)}  ${String(records.length).padStart(8)}  ${ms(quantile(delays, 0.5)).padStart(17)} ${ms(quantile(delays, 0.9)).padStart(6)} ${ms(delays.at(-1)).padStart(6)}  ${String(late).padStart(10)}  ${`${ms(env.event_loop_lag_p99_us)} / ${ms(env.event_loop_lag_max_us)}`.padStart(25)}  ${ms(Number(params.get("page_lag_p99_us") ?? NaN)).padStart(17)}`);
  }
} finally {
  ref.stop();
  web.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
