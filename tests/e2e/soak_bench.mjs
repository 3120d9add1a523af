// Soak bench (a measurement, not a test): the app runs a long closed loop in its worker
// against the reference server (tiny profile, HTTP/2, 64 -> 32 tokens) with NO automation
// attached — Chromium is spawned headless on a link that starts the run by itself and posts
// its report to a loopback collector. Every SAMPLE_S seconds it reads the resident memory
// of every Chromium process of this browser (/proc), by process type (renderer: the page
// and its worker; gpu; utility: the network service; browser), and prints a table; at the
// end the report's size per request, the worker's event-loop lag and the client verdict.
// The memory growth per request over the run, and the last ten minutes against the first ten
// after warm-up (a tenth of the run each, for runs under 30 minutes), say whether memory is
// bounded.
// Usage: node tests/e2e/soak_bench.mjs dist [concurrency=32] [seconds=600] [sample_s=30]
// (needs dist/ and the debug reference server; docs/MEASUREMENTS.md has the figures)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import { spawn } from "node:child_process";
import { startRefserver } from "./refserver.mjs";
import { WORKLOAD } from "./app_run.mjs";

const dist = path.resolve(process.argv[2] ?? "dist");
const C = Number(process.argv[3] ?? 32);
const SECONDS = Number(process.argv[4] ?? 600);
const SAMPLE_S = Number(process.argv[5] ?? 30);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pinbench-soak-"));
const certPath = path.join(tmp, "ref-cert.der");
const ref = await startRefserver(["--cert-out", certPath, "--idle-exit-secs", String(SECONDS + 600)]);
const base = `https://127.0.0.1:${ref.https}`;

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css", ".svg": "image/svg+xml" };
let resolveResult;
const result = new Promise((r) => { resolveResult = r; });
let started = null;
const web = http.createServer((req, res) => {
  const u = new URL(req.url, "http://x");
  const headers = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp", "Cache-Control": "no-cache", "Access-Control-Allow-Origin": "*" };
  if (u.pathname === "/__bench/collect") {
    if (req.method === "OPTIONS") { res.writeHead(204, { ...headers, "Access-Control-Allow-Headers": "content-type", "Access-Control-Allow-Methods": "POST" }).end(); return; }
    const parts = [];
    req.on("data", (d) => parts.push(d));
    req.on("end", () => {
      res.writeHead(204, headers).end();
      const kind = u.searchParams.get("event") ?? "result";
      if (kind === "start") started = Date.now();
      if (kind === "result") resolveResult({ text: Buffer.concat(parts).toString("utf8"), params: u.searchParams });
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

const pins = {
  endpoint_url: base, dialect: "completions", model_id: "pinbench-tiny", model_params: "100M", model_engine: "pinbench-ref",
  max_model_len: "4096", kv_capacity: "16384", max_num_seqs: "16", scheduling: "continuous",
  ...WORKLOAD, concurrency: String(C), warmup: "5s", measured: `${SECONDS}s`, cooldown: "0s",
};
const link = `${origin}/?autorun=1&collect=${encodeURIComponent(`${origin}/__bench/collect`)}#pins=${encodeURIComponent(JSON.stringify(pins))}`;

/** Resident memory (MB) of every process under `root`, by Chromium process type. */
function rss(root) {
  const procs = new Map();
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      procs.set(Number(d), { ppid: Number(f[1]), rssPages: Number(f[21]) });
    } catch { /* gone */ }
  }
  const inTree = (pid) => { for (let p = pid, n = 0; p > 1 && n < 64; p = procs.get(p)?.ppid ?? 0, n++) if (p === root) return true; return false; };
  const by = { renderer: 0, gpu: 0, utility: 0, browser: 0, other: 0 };
  const page = 4096 / 1e6;
  for (const [pid, s] of procs) {
    if (!inTree(pid)) continue;
    let cmd = "";
    try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"); } catch { continue; }
    const type = /--type=([a-z-]+)/.exec(cmd)?.[1] ?? (pid === root ? "browser" : "other");
    by[type in by ? type : "other"] += s.rssPages * page;
  }
  return by;
}

const dir = fs.mkdtempSync(path.join(tmp, "chromium-"));
const chrome = spawn(process.env.CHROMIUM ?? "/usr/bin/chromium", [
  "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--ignore-certificate-errors",
  "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
  "--disable-renderer-backgrounding", "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
  `--user-data-dir=${dir}`, link,
], { stdio: "ignore", detached: true });
// Requests so far from the server's token counter (its truth keeps only the last 100,000
// requests, and reading it whole every sample would load the run it measures).
const truth = async () => {
  const text = await (await fetch(`http://127.0.0.1:${ref.http}/metrics`)).text();
  return Math.floor(Number(/^pinbench:tokens_total (\d+)/m.exec(text)?.[1]) / Number(pins.output_tokens));
};
const samples = [];
const t0 = Date.now();
const fmt = (x) => x.toFixed(0).padStart(7);
console.log(`soak: c=${C}, ${SECONDS} s measured, a sample every ${SAMPLE_S} s (MB resident)`);
console.log("     s  requests  renderer     gpu utility browser   total");
const timer = setInterval(async () => {
  const m = rss(chrome.pid);
  const total = Object.values(m).reduce((a, b) => a + b, 0);
  let n = NaN;
  try { n = await truth(); } catch { /* server busy */ }
  const s = { t: (Date.now() - t0) / 1000, n, ...m, total };
  samples.push(s);
  console.log(`${fmt(s.t)} ${String(n).padStart(9)} ${fmt(m.renderer)} ${fmt(m.gpu)} ${fmt(m.utility)} ${fmt(m.browser)} ${fmt(total)}`);
}, SAMPLE_S * 1000);
const deadline = setTimeout(() => { console.error("soak: no result in time"); process.exit(1); }, (SECONDS + 600) * 1000);
try {
  const { text, params } = await result;
  clearInterval(timer);
  clearTimeout(deadline);
  const report = JSON.parse(text);
  const n = report.body.records.length;
  const env = report.body.client.env;
  console.log(`report: ${n} requests, ${(text.length / 1e6).toFixed(1)} MB (${(text.length / n).toFixed(0)} bytes per request); client verdict ${report.body.client.invalid ? "INVALID" : "valid"}; worker lag p99 ${(env.event_loop_lag_p99_us / 1000).toFixed(1)} ms, max ${(env.event_loop_lag_max_us / 1000).toFixed(1)} ms; page lag p99 ${(Number(params.get("page_lag_p99_us")) / 1000).toFixed(1)} ms`);
  for (const f of report.body.client.findings ?? []) console.log(`  finding: ${f}`);
  // Growth per request between the first sample after warm-up and the last.
  const s = samples.filter((x) => Number.isFinite(x.n) && x.n > 0);
  if (s.length >= 3) {
    const [a, b] = [s[1], s[s.length - 1]];
    const per = (k) => ((b[k] - a[k]) * 1e6 / (b.n - a.n) / 1e3).toFixed(1);
    console.log(`growth per request (${a.n} → ${b.n}): renderer ${per("renderer")} KB, utility ${per("utility")} KB, browser ${per("browser")} KB, total ${per("total")} KB`);
    // Windows: ten minutes on a run of 30 minutes or more (the first from the second
    // sample, after the run's warm-up), else a tenth of the run.
    const win = SECONDS >= 1800 ? 600 : SECONDS / 10;
    const w0 = s[1].t;
    const end = s[s.length - 1].t;
    const mean = (xs) => xs.reduce((x, y) => x + y.total, 0) / xs.length;
    const firstW = s.filter((x) => x.t >= w0 && x.t < w0 + win), lastW = s.filter((x) => x.t > end - win);
    const first = mean(firstW), last = mean(lastW);
    console.log(`total resident: ${w0.toFixed(0)}–${(w0 + win).toFixed(0)} s ${first.toFixed(0)} MB (${firstW.length} samples), last ${win.toFixed(0)} s ${last.toFixed(0)} MB (${lastW.length} samples): ${((last / first - 1) * 100).toFixed(1)} % — ${Math.abs(last / first - 1) <= 0.1 ? "flat (within 10 %)" : "NOT within 10 %"}`);
  }
} finally {
  try { process.kill(-chrome.pid, "SIGKILL"); } catch { /* gone */ }
  ref.stop();
  web.close();
}
