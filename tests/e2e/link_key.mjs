// A share link cannot steal the API key: a key remembered for one endpoint is not sent to
// the endpoint a `#pins=` link names (another origin) — the page says so, shows where
// requests will go, and sends a key there only once the user types one for it.
// Usage: node tests/e2e/link_key.mjs dist
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { serveDist, launch, watchErrors, checker } from "./lib.mjs";

// The link's endpoint: a minimal OpenAI-style stream server that records every
// Authorization header it is sent.
const seen = [];
let slow = false;
const sse = 'data: {"choices":[{"index":0,"text":" a","finish_reason":null}]}\n\n'
  + 'data: {"choices":[{"index":0,"text":" b","finish_reason":"length"}]}\n\n'
  + 'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}\n\ndata: [DONE]\n\n';
const cors = { "access-control-allow-origin": "*", "access-control-allow-headers": "authorization, content-type", "access-control-allow-methods": "GET, POST, OPTIONS" };
const other = http.createServer((req, res) => {
  if (req.method === "OPTIONS") { res.writeHead(204, cors); return res.end(); }
  seen.push(req.headers.authorization ?? "");
  req.resume();
  req.on("end", () => {
    // A careless server echoes the credential it was sent, everywhere it can.
    const echo = (req.headers.authorization ?? "").replace(/^Bearer /, "");
    if (req.method === "POST" && slow) {
      // A slow stream (a run that lasts while another tab opens hostile files), whatever
      // key was sent.
      res.writeHead(200, { ...cors, "content-type": "text/event-stream" });
      const parts = sse.split("\n\n").filter((x) => x).map((x) => x + "\n\n");
      let i = 0;
      const tick = setInterval(() => { res.write(parts[i++]); if (i === parts.length) { clearInterval(tick); res.end(); } }, 150);
    } else if (req.method === "POST" && echo) {
      res.writeHead(200, { ...cors, "content-type": "text/event-stream" });
      res.end(sse.replace("data: [DONE]", `data: {"error":{"message":"key ${echo} is over quota"}}\n\ndata: [DONE]`));
    } else if (req.method === "POST") { res.writeHead(200, { ...cors, "content-type": "text/event-stream" }); res.end(sse); }
    else { res.writeHead(401, { ...cors, "content-type": "application/json" }); res.end(`{"error":{"message":"Incorrect API key provided: ${echo || "none"}"}}`); }
  });
});
await new Promise((r) => other.listen(0, "127.0.0.1", r));
const otherUrl = `http://127.0.0.1:${other.address().port}`;

const { server: web, url } = await serveDist(process.argv[2] ?? "dist");
const browser = await launch();
const { check, failures, finish } = checker();
const secret = "sk-remembered-0123456789abcdef";
try {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const errors = watchErrors(page);
  const consoleText = [];
  page.on("console", (m) => consoleText.push(m.text()));
  // 1. The key is typed for the default endpoint and remembered.
  await page.goto(url);
  await page.getByTestId("pin-endpoint_url").fill("http://127.0.0.1:9");
  await page.getByTestId("api-key").fill(secret);
  await page.getByTestId("remember-key").check();
  // 2. A link names another endpoint, with every pin set.
  const pins = {
    endpoint_url: otherUrl, dialect: "completions", model_id: "m", model_params: "1B", model_quant: "bf16",
    model_engine: "e", prompt_tokens: "8", prompt_exactness: "approximate", output_tokens: "2",
    output_enforcement: "ignore_eos", load_mode: "closed", concurrency: "1", stall_timeout_s: "10",
    max_model_len: "2048", kv_capacity: "8192", max_num_seqs: "4", phases: "colocated", scheduling: "continuous",
    warmup: "0", measured: "1", cooldown: "0", nonce_prefix: "on", shared_prefix: "none", turns: "1", temperature: "0", sampling_extra: "{}", reasoning: "none",
  };
  await page.goto(`${url}#pins=${encodeURIComponent(JSON.stringify(pins))}`);
  await page.reload();
  const banner = await page.getByTestId("link-pins").textContent();
  check(banner.includes("came from a link") && banner.includes(otherUrl), `the page says the pins came from a link and where requests go ("${banner}")`);
  check(await page.getByTestId("api-key").inputValue() === "", "the remembered key is not filled in for the link's endpoint");
  check((await page.getByTestId("api-key-note").textContent()).includes("not sent"), "the page says the remembered key is not sent there");
  await page.getByTestId("all-pinned").waitFor({ timeout: 5000 });
  await page.getByTestId("start").click();
  await page.getByTestId("download-report").waitFor({ timeout: 60000 });
  check(seen.length > 0 && seen.every((a) => !a.includes(secret)), `the link's endpoint got ${seen.length} requests and never the remembered key (${JSON.stringify(seen)})`);
  // 3. Typing a key for this endpoint is the explicit confirmation: now it is sent.
  seen.length = 0;
  await page.getByTestId("remember-key").uncheck();
  await page.getByTestId("api-key").fill("sk-typed-for-this-endpoint-42");
  await page.getByTestId("start").click();
  await page.waitForFunction(() => document.querySelector('[data-testid="start"]') && !document.querySelector('[data-testid="start"]').disabled, null, { timeout: 60000 });
  await page.getByTestId("download-report").waitFor({ timeout: 60000 });
  check(seen.some((a) => a === "Bearer sk-typed-for-this-endpoint-42"), `a key typed for the endpoint is sent (${JSON.stringify(seen)})`);
  // Canary: the server echoed the key in an in-stream error; it appears nowhere shared.
  const typed = "sk-typed-for-this-endpoint-42";
  const [dl] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-report").click()]);
  const reportText = fs.readFileSync(await dl.path(), "utf8");
  check(reportText.includes("[redacted]") && !reportText.includes(typed), "canary: the echoed key is redacted in the report");
  const link = await page.getByTestId("share-link").inputValue();
  check(!link.includes(typed), "canary: the share link does not carry the key");
  const stored = await page.evaluate(() => JSON.stringify(Object.entries(localStorage)));
  check(!stored.includes(typed), "canary: storage does not hold the key (remember is off for it)");
  check(!consoleText.some((t) => t.includes(typed)), "canary: the console never shows the key");
  check(errors.length === 0, `no console errors (${errors.join("; ")})`);
  // 4. Hostile files in another tab do not disturb a run: a histogram bomb, a chunk bomb
  // and duplicate keys are opened in tab B while tab A runs.
  slow = true;
  const runsBefore = seen.length;
  await page.getByTestId("pin-measured").fill("40");
  await page.getByTestId("start").click();
  const b = await ctx.newPage();
  const bErrors = watchErrors(b);
  await b.goto(url);
  await b.getByTestId("nav-reports").click();
  const fixtureText = fs.readFileSync("tests/fixtures/report_signed.json", "utf8");
  const doc = JSON.parse(fixtureText);
  const hb = Buffer.alloc(40);
  hb.writeUInt32BE(0x1c849313, 0); hb.writeUInt32BE(0x80000000, 4); hb.writeUInt32BE(3, 12); hb.writeBigUInt64BE(1n, 16); hb.writeBigUInt64BE(2048n, 24);
  doc.body.summary.steps[0].histograms.ttft_us = hb.toString("base64");
  const bombDoc = JSON.parse(fixtureText);
  const z = zlib.deflateRawSync(Buffer.alloc(64 << 20)).toString("base64");
  for (const r of bombDoc.body.records) r.chunks = z;
  const files = [
    ["histogram-bomb.json", JSON.stringify(doc)],
    ["chunk-bomb.json", JSON.stringify(bombDoc)],
    ["dup.json", fixtureText.replace('"created":', '"created":"x","created":')],
  ].map(([n, t]) => { const f = path.join(os.tmpdir(), `pinbench-${process.pid}-${n}`); fs.writeFileSync(f, t); return f; });
  const messages = [];
  // Tab A is mid-run when tab B starts on the bombs.
  const aRunning = await page.getByTestId("start").isDisabled();
  const during0 = seen.length;
  for (const f of files) {
    const name = path.basename(f);
    await b.getByTestId("open-file").setInputFiles(f);
    await b.waitForFunction((n) => document.querySelector('[data-testid="open-error"]')?.textContent.startsWith(n)
      || document.querySelectorAll('[data-testid^="entry-"]').length > 0 && n.startsWith("pinbench") && document.body.textContent.includes(n), name, { timeout: 60000 });
    messages.push((await b.getByTestId("open-error").textContent()) || "");
  }
  const during1 = seen.length;
  check(messages.some((m) => m.includes("duplicate key")) && messages.some((m) => m.includes("when decoded") || m.includes("token chunks in all")), `tab B: the hostile files get their messages (${messages.map((m) => m.slice(0, 60)).join(" | ")})`);
  check(aRunning, `tab A: its run was going when tab B began opening them (${during1 - during0} of its requests were sent meanwhile)`);
  await page.getByTestId("download-report").waitFor({ timeout: 60000 });
  await page.waitForFunction(() => !document.querySelector('[data-testid="start"]').disabled, null, { timeout: 60000 });
  check(seen.length - runsBefore === 40, `tab A: its run went on and finished, all ${seen.length - runsBefore} of 40 requests`);
  check(bErrors.length === 0 || bErrors.every((e) => !/RuntimeError|unreachable|abort/i.test(e)), `tab B: no wasm abort (${bErrors.join("; ")})`);
  for (const f of files) fs.rmSync(f, { force: true });
  await ctx.close();
} catch (e) {
  failures.push(String(e.stack ?? e));
  console.error(e);
} finally {
  await browser.close();
  web.close();
  other.close();
}
finish("link key flow");
