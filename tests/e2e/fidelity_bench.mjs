// Fidelity bench: how far each client's timings are from the reference server's truth,
// with NO automation client attached to the measuring browser (Playwright's CDP network
// events inflate a browser's timing error 3-5x at c >= 8). Chromium is spawned headless on
// a link that starts the run by itself; the page posts its result to a loopback collector
// served here. Against one reference server (tiny profile, HTTP/2, 64 -> 32 tokens, warm-up
// 1 s, measured window FIDELITY_MEASURED_S (default 10) s, cool-down 1 s), one after the
// other, at each concurrency:
//   native   pinbench's native host (`pinbench run`, `--profile native`)
//   node-h2  a minimal node http2 client (the native reference)
//   minimal  a minimal plain-JS loop in a dedicated Worker: timestamp, keep the bytes, decode
//            after the run (the browser's own floor)
//   pinbench pinbench's Worker host (the app, started by `?autorun=1#pins=…`)
// It prints TTFT and inter-chunk error against the truth (p50/p99), aggregate tok/s against
// the truth, CPU per token (all the client's processes; the browser's page main thread
// separately), the page's event-loop lag during pinbench's run, and machine load, then asserts the targets that hold on this machine with a
// margin that still catches a 2x regression (ASSERT=0 only prints).
// Usage: node tests/e2e/fidelity_bench.mjs dist [c,c,...]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import http2 from "node:http2";
import { spawn, execFileSync } from "node:child_process";
import { startRefserver } from "./refserver.mjs";
import { truthErrors, compareWithTruth, WORKLOAD } from "./app_run.mjs";
import { quantile } from "./report.mjs";

const dist = path.resolve(process.argv[2] ?? "dist");
const levels = (process.argv[3] ?? "1,8,32").split(",").map(Number);
const MEASURED_S = Number(process.env.FIDELITY_MEASURED_S ?? 10);
const ASSERT = process.env.ASSERT !== "0";
const target = process.env.CARGO_TARGET_DIR ?? path.resolve("target");
const nativeBin = path.join(target, "native", "pinbench");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pinbench-fidelity-"));
const certPath = path.join(tmp, "ref-cert.der");
const ref = await startRefserver(["--cert-out", certPath]);
const base = `https://127.0.0.1:${ref.https}`;
const truthBase = `http://127.0.0.1:${ref.http}`;
const TICK = 100; // /proc/*/stat clock ticks per second (USER_HZ on Linux)

// ---- the page server and the loopback collector -----------------------------------------
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css", ".svg": "image/svg+xml" };
const MINIMAL_PAGE = `<!doctype html><meta charset="utf-8"><title>minimal loop</title><script type="module">
const q = new URLSearchParams(location.search);
const w = new Worker("/__bench/minimal-worker.js");
await fetch(q.get("collect") + "?event=start", { method: "POST", body: "{}" });
w.onmessage = (e) => fetch(q.get("collect"), { method: "POST", body: JSON.stringify(e.data) });
w.postMessage({ base: q.get("base"), c: Number(q.get("c")), warm: Number(q.get("warm")), measured: Number(q.get("measured")), cool: Number(q.get("cool")) });
</script>`;
// The browser's floor: per read only a timestamp and the bytes kept; decoding after the run.
const MINIMAL_WORKER = `onmessage = async (e) => {
  const { base, c, warm, measured, cool } = e.data;
  const body = JSON.stringify({ model: "pinbench-tiny", prompt: " the".repeat(64), max_tokens: 32, stream: true, ignore_eos: true, stream_options: { include_usage: true } });
  const t0 = performance.now();
  const end = t0 + (warm + measured + cool) * 1000;
  const out = [];
  async function one() {
    const t_send = performance.now();
    const r = await fetch(base + "/v1/completions", { method: "POST", headers: { "content-type": "application/json" }, body });
    const reader = r.body.getReader(); const reads = [];
    for (;;) { const { done, value } = await reader.read(); const t = performance.now(); if (done) break; reads.push([t, value]); }
    out.push({ t_send, reads });
  }
  await Promise.all(Array.from({ length: c }, async () => { while (performance.now() < end) await one(); }));
  const recs = out.map(({ t_send, reads }) => {
    const dec = new TextDecoder(); let buf = "", id = null; const chunks = [];
    for (const [t, v] of reads) {
      buf += dec.decode(v, { stream: true });
      let k;
      while ((k = buf.indexOf("\\n\\n")) >= 0) {
        const ev = buf.slice(0, k); buf = buf.slice(k + 2);
        const data = ev.split("\\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
        if (!data || data === "[DONE]") continue;
        const j = JSON.parse(data); id = id ?? j.id;
        if (j.choices?.[0]?.text) chunks.push([Math.round(t * 1000), 1]);
      }
    }
    const phase = t_send < t0 + warm * 1000 ? "warmup" : t_send < t0 + (warm + measured) * 1000 ? "measured" : "cooldown";
    return { t_send_us: Math.round(t_send * 1000), response_id: id, chunks, phase };
  });
  postMessage(recs);
};`;

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
      const kind = u.searchParams.get("event") ?? "result";
      if (waiting && waiting.kind === kind) { const w = waiting; waiting = null; w.resolve({ text: Buffer.concat(parts).toString("utf8"), params: u.searchParams }); }
      else if (kind === "start" && waiting?.onStart) waiting.onStart();
    });
    return;
  }
  if (u.pathname === "/__bench/minimal.html") { res.writeHead(200, { ...headers, "Content-Type": TYPES[".html"] }).end(MINIMAL_PAGE); return; }
  if (u.pathname === "/__bench/minimal-worker.js") { res.writeHead(200, { ...headers, "Content-Type": TYPES[".js"] }).end(MINIMAL_WORKER); return; }
  let file = path.join(dist, u.pathname === "/" ? "index.html" : decodeURIComponent(u.pathname));
  if (file.startsWith(dist) && fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, "index.html");
  if (!file.startsWith(dist) || !fs.existsSync(file)) file = path.join(dist, "index.html");
  res.writeHead(200, { ...headers, "Content-Type": TYPES[path.extname(file)] ?? "application/octet-stream" });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => web.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${web.address().port}`;
const collectUrl = `${origin}/__bench/collect`;

// ---- CPU and load from /proc -------------------------------------------------------------
const stat = (p) => { try { const s = fs.readFileSync(p, "utf8"); const f = s.slice(s.lastIndexOf(")") + 2).split(" "); return { ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]) }; } catch { return null; } };
function treeCpu(root) {
  const procs = new Map();
  for (const d of fs.readdirSync("/proc")) if (/^\d+$/.test(d)) { const s = stat(`/proc/${d}/stat`); if (s) procs.set(Number(d), s); }
  const inTree = (pid) => { for (let p = pid, n = 0; p > 1 && n < 64; p = procs.get(p)?.ppid ?? 0, n++) if (p === root) return true; return false; };
  let total = 0, main = 0;
  for (const [pid, s] of procs) {
    if (!inTree(pid)) continue;
    total += s.cpu;
    let cmd = ""; try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"); } catch { /* gone */ }
    if (cmd.includes("--type=renderer")) main += stat(`/proc/${pid}/task/${pid}/stat`)?.cpu ?? 0;
  }
  return { total: total / TICK, main: main / TICK };
}
const machine = () => { const f = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number); return { busy: f[0] + f[1] + f[2] + f[5] + f[6], all: f.reduce((a, b) => a + b, 0) }; };
const loadavg = () => fs.readFileSync("/proc/loadavg", "utf8").split(" ")[0];

const pins = (c) => ({
  endpoint_url: base, dialect: "completions", model_id: "pinbench-tiny", model_params: "100M", model_engine: "pinbench-ref",
  max_model_len: "4096", kv_capacity: "16384", max_num_seqs: "16", scheduling: "continuous",
  ...WORKLOAD, concurrency: String(c), warmup: "1s", measured: `${MEASURED_S}s`, cooldown: "1s",
});
const since = async () => (await (await fetch(`${truthBase}/truth`)).json()).reduce((m, t) => Math.max(m, t.id), 0) + 1;
const truthsSince = async (s) => (await (await fetch(`${truthBase}/truth?since=${s}`)).json());

function launchChromium(url) {
  const dir = fs.mkdtempSync(path.join(tmp, "chromium-"));
  const child = spawn(process.env.CHROMIUM ?? "/usr/bin/chromium", [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--ignore-certificate-errors",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
    "--enable-logging=stderr", "--v=0", `--user-data-dir=${dir}`, url,
  ], { stdio: ["ignore", "ignore", fs.openSync(path.join(dir, "chromium.log"), "w")], detached: true });
  // The page's console (Chromium's log) is kept, to say why a run posted no result.
  const log = () => { try { return fs.readFileSync(path.join(dir, "chromium.log"), "utf8"); } catch { return ""; } };
  return { pid: child.pid, log, stop: () => { try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ } } };
}

/** Runs a browser page to its posted result; CPU from the page's start event to the result. */
async function browserRun(url) {
  let cpu0 = null, m0 = null, chrome = null;
  const result = new Promise((resolve) => { waiting = { kind: "result", resolve, onStart: () => { cpu0 = treeCpu(chrome.pid); m0 = machine(); } }; });
  chrome = launchChromium(url);
  const timeout = new Promise((_, rej) => setTimeout(() => {
    const console_ = chrome.log().split("\n").filter((l) => l.includes("CONSOLE") || (l.includes("ERROR") && !l.includes("dbus"))).slice(-40).join("\n");
    rej(new Error(`no result from ${url.slice(0, 80)}… in 180 s; the browser's log:\n${console_}`));
  }, 180000));
  try {
    const { text, params } = await Promise.race([result, timeout]);
    const cpu1 = treeCpu(chrome.pid), m1 = machine();
    const c0 = cpu0 ?? { total: 0, main: 0 };
    return { text, params, cpu: cpu1.total - c0.total, main: cpu1.main - c0.main, busy: m0 ? (m1.busy - m0.busy) / (m1.all - m0.all) : NaN };
  } finally {
    waiting = null;
    chrome.stop();
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function runNative(c) {
  const pinsFile = path.join(tmp, `pins-${c}.json`), out = path.join(tmp, `native-${c}.json`);
  fs.writeFileSync(pinsFile, JSON.stringify(pins(c)));
  const m0 = machine();
  const text = execFileSync("bash", ["-c", `"$0" run --pins "$1" --out "$2" --ca-cert "$3" --key "$4" --new-key --force --quiet && times`, nativeBin, pinsFile, out, certPath, path.join(tmp, "key.json")]).toString();
  const m1 = machine();
  const [, children] = text.trim().split("\n");
  const secs = (children.match(/(\d+)m([\d.]+)s/g) ?? []).map((x) => { const [, m, s] = x.match(/(\d+)m([\d.]+)s/); return Number(m) * 60 + Number(s); });
  return { report: JSON.parse(fs.readFileSync(out, "utf8")), cpu: secs.reduce((a, b) => a + b, 0), busy: (m1.busy - m0.busy) / (m1.all - m0.all) };
}

/** A minimal node http2 closed loop, the native reference. */
async function runNodeH2(c) {
  const ca = fs.readFileSync(certPath);
  const session = http2.connect(base, { ca: `-----BEGIN CERTIFICATE-----\n${ca.toString("base64").match(/.{1,64}/g).join("\n")}\n-----END CERTIFICATE-----\n`, checkServerIdentity: () => undefined });
  const body = JSON.stringify({ model: "pinbench-tiny", prompt: " the".repeat(64), max_tokens: 32, stream: true, ignore_eos: true });
  const now = () => Number(process.hrtime.bigint() / 1000n);
  const t0 = now(), end = t0 + (2 + MEASURED_S) * 1e6;
  const recs = [];
  const one = () => new Promise((resolve, reject) => {
    const t_send = now();
    const s = session.request({ ":method": "POST", ":path": "/v1/completions", "content-type": "application/json" });
    const chunks = []; let buf = "", id = null;
    s.setEncoding("utf8");
    s.on("data", (d) => {
      const t = now(); buf += d; let k;
      while ((k = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, k); buf = buf.slice(k + 2);
        const data = ev.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
        if (!data || data === "[DONE]") continue;
        const j = JSON.parse(data); id = id ?? j.id;
        if (j.choices?.[0]?.text) chunks.push([t, 1]);
      }
    });
    s.on("end", () => { recs.push({ t_send_us: t_send, response_id: id, chunks, phase: t_send < t0 + 1e6 ? "warmup" : t_send < t0 + (1 + MEASURED_S) * 1e6 ? "measured" : "cooldown" }); resolve(); });
    s.on("error", reject);
    s.end(body);
  });
  const cpu0 = process.cpuUsage(), m0 = machine();
  await Promise.all(Array.from({ length: c }, async () => { while (now() < end) await one(); }));
  const cpu = process.cpuUsage(cpu0), m1 = machine();
  session.close();
  return { recs, cpu: (cpu.user + cpu.system) / 1e6, busy: (m1.busy - m0.busy) / (m1.all - m0.all) };
}

const rows = [];
const results = {};
const line = (name, c, e, cpuS, mainS, busy) => {
  const ms = (x) => (x / 1000).toFixed(1);
  const perTok = (s) => (Number.isFinite(s) ? (s * 1e6 / e.tokensClient).toFixed(0) : "—");
  const agg = (e.aggClient - e.aggServer) / e.aggServer * 100;
  results[`${name}@${c}`] = { ...e, agg, cpuPerToken: cpuS * 1e6 / e.tokensClient, mainPerToken: mainS * 1e6 / e.tokensClient };
  rows.push(`| ${name} | ${c} | ${e.matched} | ${ms(e.ttft.p50)} / ${ms(e.ttft.p99)} | ${ms(e.gap.p50)} / ${ms(e.gap.p99)} | ${e.aggClient.toFixed(0)} vs ${e.aggServer.toFixed(0)} (${agg >= 0 ? "+" : ""}${agg.toFixed(2)}%) | ${perTok(cpuS)} | ${perTok(mainS)} | ${(busy * 100).toFixed(0)}% / ${loadavg()} |`);
  console.log(rows[rows.length - 1]);
};

/** The browser pair of a level: the minimal worker loop, then pinbench's worker. */
async function browserPair(c, tag) {
  {
    const s = await since();
    const q = new URLSearchParams({ base, c, warm: 1, measured: MEASURED_S, cool: 1, collect: collectUrl });
    const r = await browserRun(`${origin}/__bench/minimal.html?${q}`);
    const recs = JSON.parse(r.text).filter((x) => x.phase === "measured");
    line(`minimal${tag}`, c, compareWithTruth(recs, await truthsSince(s)), r.cpu, r.main, r.busy);
  }
  {
    const s = await since();
    const link = `${origin}/?autorun=1&collect=${encodeURIComponent(collectUrl)}#pins=${encodeURIComponent(JSON.stringify(pins(c)))}`;
    // A run that posts nothing is started once more, its browser's log printed: one full
    // CI-like run timed out here once while the bench alone passed. Twice fails.
    const r = await browserRun(link).catch(async (e) => {
      console.log(`NO RESULT, started again: ${e.message}`);
      return browserRun(link);
    });
    const report = JSON.parse(r.text);
    if (report.body.client.env.host !== "worker") throw new Error(`the app measured on ${report.body.client.env.host}, not in its worker`);
    line(`pinbench${tag}`, c, truthErrors(report, await truthsSince(s)), r.cpu, r.main, r.busy);
    const lag = r.params.get("page_lag_p99_us");
    results[`pinbench${tag}@${c}`].pageLagP99 = lag === null || lag === "" ? NaN : Number(lag);
    console.log(`pinbench${tag} c=${c}: the page's event-loop lag during the run p99 ${(Number(r.params.get("page_lag_p99_us")) / 1000).toFixed(1)} ms, max ${(Number(r.params.get("page_lag_max_us")) / 1000).toFixed(1)} ms`);
  }
}

/** The asserted bound of pinbench's timing error over the minimal loop's (2x its 1.5x target). */
const WORKER_RATIO_ASSERT = 3;
/** The asserted bound of a client's aggregate tok/s against the truth, % (2x its 1% target). */
const AGG_ASSERT = 2;

/** pinbench's p99 timing errors over the minimal loop's, for the pair tagged `tag`. */
const pairRatios = (c, tag) => {
  const p = results[`pinbench${tag}@${c}`], m = results[`minimal${tag}@${c}`];
  return { ttft: p.ttft.p99 / Math.max(m.ttft.p99, 1000), gap: p.gap.p99 / Math.max(m.gap.p99, 1000) };
};

try {
  for (const c of levels) {
    {
      const s = await since();
      const r = await runNative(c);
      line("native", c, truthErrors(r.report, await truthsSince(s)), r.cpu, NaN, r.busy);
    }
    {
      const s = await since();
      const r = await runNodeH2(c);
      line("node-h2", c, compareWithTruth(r.recs.filter((x) => x.phase === "measured"), await truthsSince(s)), r.cpu, NaN, r.busy);
    }
    await browserPair(c, "");
  }
  // The pinbench/minimal ratio divides one p99 by another, on a 2-core machine shared with
  // Chromium and the server: a level over the asserted 3x is measured once more, as a fresh
  // pair, and CI asserts on the better of the two pairs (a real 3x regression fails both).
  // So is a browser aggregate over its asserted 2%: a stall of the whole machine across the
  // measured window's start (both browser clients' TTFT p99 errors then reach ~300 ms at
  // c=32) moves that much of the stream's tokens into the window; a real bias fails both.
  for (const c of levels) {
    const r = pairRatios(c, "");
    const agg = results[`pinbench@${c}`].agg;
    if (Math.max(r.ttft, r.gap) > WORKER_RATIO_ASSERT || Math.abs(agg) > AGG_ASSERT) {
      console.log(`c=${c}: pinbench/minimal p99 ratio TTFT ${r.ttft.toFixed(2)}x, gap ${r.gap.toFixed(2)}x, pinbench aggregate ${agg.toFixed(2)}% from the truth: over ${WORKER_RATIO_ASSERT}x or ${AGG_ASSERT}%, measuring the pair once more`);
      await browserPair(c, " again");
    }
  }
} finally {
  web.close();
  ref.stop();
}

console.log(`\nfidelity against the reference server's truth (tiny profile, h2, 64→32, measured ${MEASURED_S} s; CPU per token: all the client's processes / page main thread):`);
console.log("| client | c | requests | TTFT error p50 / p99 ms | gap error p50 / p99 ms | aggregate tok/s client vs truth | CPU µs/token | main thread µs/token | machine busy / load |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
console.log(rows.join("\n"));

// Targets (met / not met) and what CI asserts: 2x the target where the machine cannot
// hold the target every time, so a 2x regression still fails.
const failures = [];
const judge = (ok, hard, msg) => { console.log(`${ok ? "met    " : "NOT MET"} ${msg}`); if (ASSERT && !hard) failures.push(msg); };
// Every figure a judgement uses must have been measured (a missing one is never read as 0),
// and every measured request must be matched to the server's truth.
const hardFail = (m) => { console.log(`FAILED  ${m}`); if (ASSERT) failures.push(m); };
for (const [k, r] of Object.entries(results)) {
  for (const [name, v] of [["TTFT p50", r.ttft?.p50], ["TTFT p99", r.ttft?.p99], ["gap p50", r.gap?.p50], ["gap p99", r.gap?.p99], ["aggregate", r.agg]]) {
    if (!Number.isFinite(v)) hardFail(`${k}: ${name} was not measured`);
  }
  if (!(r.matched > 0 && r.matched === r.expected && (r.unmatched ?? 0) === 0)) hardFail(`${k}: ${r.matched} of ${r.expected} measured requests matched to the server's truth (${r.unmatched ?? 0} records with no truth)`);
}
for (const c of levels) {
  if (c === 32 && !Number.isFinite(results[`pinbench@${c}`]?.pageLagP99)) hardFail(`pinbench@${c}: the page's event-loop lag was not posted`);
  if (c === 8 && !Number.isFinite(results[`pinbench@${c}`]?.mainPerToken)) hardFail(`pinbench@${c}: the page main thread's CPU was not measured`);
}
for (const c of levels) {
  const p = results[`pinbench@${c}`], m = results[`minimal@${c}`], n = results[`native@${c}`], h = results[`node-h2@${c}`];
  for (const [k, lbl] of [["ttft", "TTFT"], ["gap", "gap"]]) {
    const ratio = pairRatios(c, "")[k];
    const again = results[`pinbench again@${c}`] ? pairRatios(c, " again")[k] : null;
    const best = again === null ? ratio : Math.min(ratio, again);
    judge(ratio <= 1.5, best <= WORKER_RATIO_ASSERT, `c=${c}: pinbench worker ${lbl} error p99 ${(p[k].p99 / 1000).toFixed(1)} ms is ${ratio.toFixed(2)}x the minimal loop's${again === null ? "" : ` (measured again: ${again.toFixed(2)}x)`} (target 1.5x, asserted ${WORKER_RATIO_ASSERT}x on the better pair)`);
    const nr = n[k].p99 / Math.max(h[k].p99, 1000);
    // Asserted against at least 5 ms: below that both native clients are at this loaded
    // machine's scheduling noise (a single late wake-up of a 2-core box is several ms).
    const nrAssert = n[k].p99 / Math.max(h[k].p99, 5000);
    judge(nr <= 1.5, nrAssert <= 3, `c=${c}: native host ${lbl} error p99 ${(n[k].p99 / 1000).toFixed(1)} ms is ${nr.toFixed(2)}x node http2's (target 1.5x; asserted 3x of max(node, 5 ms))`);
  }
  for (const [name, r] of [["pinbench", p], ["native", n]]) {
    const again = name === "pinbench" ? results[`pinbench again@${c}`] : undefined;
    const best = again ? Math.min(Math.abs(r.agg), Math.abs(again.agg)) : Math.abs(r.agg);
    judge(Math.abs(r.agg) <= 1, best <= AGG_ASSERT, `c=${c}: ${name} aggregate tok/s within ${r.agg.toFixed(2)}% of the truth${again ? ` (measured again: ${again.agg.toFixed(2)}%)` : ""} (target 1%, asserted ${AGG_ASSERT}% on the better run)`);
  }
  const vllm = { 1: 500, 8: 230, 32: 80 }[c];
  if (vllm) judge(n.cpuPerToken <= vllm, n.cpuPerToken <= 2 * vllm, `c=${c}: native CPU ${n.cpuPerToken.toFixed(0)} µs/token vs vLLM bench serve's ~${vllm} (asserted 2x)`);
  if (c === 32) judge(p.pageLagP99 < 20000, p.pageLagP99 < 40000, `c=32: the page's event-loop lag during the run p99 ${(p.pageLagP99 / 1000).toFixed(1)} ms (target under 20 ms, asserted 40 ms)`);
  if (c === 8) judge(p.mainPerToken <= 232, p.mainPerToken <= 464, `c=8: page main-thread CPU ${p.mainPerToken.toFixed(0)} µs/token (target half of 464, asserted 464)`);
}
if (failures.length) {
  console.error(`\nfidelity bench FAILED:\n${failures.join("\n")}`);
  process.exit(1);
}
console.log("fidelity bench ok");
