// The viewer end to end in headless Chromium: signature states, trust, compare, embed
// (hosted iframe and link-only card), imports, hostile files, CSV and card SVG exports.
// Usage: node tests/e2e/viewer.mjs dist FIXTURE_DIR
// FIXTURE_DIR holds the synthetic signed reports written by `pinbench-fixtures`.
import http from "node:http";
import fs from "node:fs";
import zlib from "node:zlib";
import os from "node:os";
import path from "node:path";
import { serveDist, launch, watchErrors, checker } from "./lib.mjs";

const [root = "dist", dir = "target/e2e-fixtures"] = process.argv.slice(2);
const imports = "tests/fixtures/imports";

/** A report whose every record's chunk data (the first, DEFLATE form) inflates to 64 MiB. */
function chunkBomb(reportText) {
  const z = zlib.deflateRawSync(Buffer.alloc(64 << 20), { level: 9 }).toString("base64");
  const doc = JSON.parse(reportText);
  for (const r of doc.body.records) r.chunks = z;
  return JSON.stringify(doc);
}

/** A 56-character HdrHistogram V2 whose header claims a 2 GiB payload. */
function histogramBomb() {
  const b = Buffer.alloc(40);
  b.writeUInt32BE(0x1c849313, 0); b.writeUInt32BE(0x80000000, 4); b.writeUInt32BE(0, 8); b.writeUInt32BE(3, 12);
  b.writeBigUInt64BE(1n, 16); b.writeBigUInt64BE(2048n, 24); b.writeDoubleBE(1.0, 32);
  return b.toString("base64");
}
const fx = (name) => path.join(dir, name);
const { check, finish } = checker();

/** Serves files of `base` on 127.0.0.1, with CORS (and CORP, for COEP pages) or without. */
function serveFiles(base, cors) {
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, "http://x");
    if (u.pathname === "/embed.html") {
      const src = u.searchParams.get("src");
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(`<!doctype html><title>wiki page</title><h1>Our wiki</h1><iframe id="card" src="${src.replace(/"/g, "&quot;")}" width="600" height="200" style="border:0"></iframe>`);
      return;
    }
    if (u.pathname === "/favicon.ico") { res.writeHead(204).end(); return; }
    const file = path.join(base, path.basename(u.pathname));
    if (!fs.existsSync(file)) { res.writeHead(404).end(); return; }
    const headers = { "Content-Type": "application/json" };
    if (cors) Object.assign(headers, { "Access-Control-Allow-Origin": "*", "Cross-Origin-Resource-Policy": "cross-origin" });
    res.writeHead(200, headers);
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/` })));
}

const app = await serveDist(root);
const withCors = await serveFiles(dir, true);
const noCors = await serveFiles(dir, false);
const browser = await launch();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pinbench-viewer-"));
const write = (name, text) => { const p = path.join(tmp, name); fs.writeFileSync(p, text); return p; };

try {
  const context = await browser.newContext({ acceptDownloads: true });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: app.url });
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(app.url);
  await page.getByTestId("nav-reports").click();
  const state = () => page.getByTestId("sig-state").getAttribute("data-state");
  /** Opens a file and waits until it is listed or an error about it is shown. */
  const open = async (file) => {
    const before = await page.locator('[data-testid^="entry-"]').count();
    const name = path.basename(file);
    await page.getByTestId("open-file").setInputFiles(file);
    await page.waitForFunction(([n, name]) =>
      document.querySelectorAll('[data-testid^="entry-"]').length > n
      || document.querySelector('[data-testid="open-error"]').textContent.startsWith(name), [before, name], { timeout: 60000 });
  };
  const openError = () => page.getByTestId("open-error").textContent();

  // --- Signature: valid from an unknown key, then trusted; one byte flipped → invalid.
  await open(fx("report_c4.json"));
  check(await state() === "unknown-key", `signed report from an unknown key shows "unknown-key" (${await page.getByTestId("sig-state").textContent()})`);
  check((await page.getByTestId("sig-state").textContent()).startsWith("valid, but from an unknown key"), "says valid, but from an unknown key");
  check(await page.getByTestId("recompute-state").getAttribute("data-state") === "match", "every figure recomputes from the records");
  check((await page.getByTestId("card-state").textContent()).includes("signed, and matches"), "its card is signed and matches");
  await page.getByTestId("trust-this-name").fill("CI test key");
  await page.getByTestId("trust-this-key").click();
  await page.waitForFunction(() => document.querySelector('[data-testid="sig-state"]').dataset.state === "valid");
  check((await page.getByTestId("sig-state").textContent()).startsWith("valid: signed by CI test key"), "after trusting the key: valid, with its name");
  const text = fs.readFileSync(fx("report_c4.json"), "utf8");
  const flipped = text.replace('"llama-3.1-8b"', '"llama-3.1-9b"');
  check(flipped.length === text.length && flipped !== text, "flipped exactly one byte");
  await open(write("flipped.json", flipped));
  check(await state() === "invalid", "one flipped byte → invalid");
  check((await page.getByTestId("sig-state").textContent()).startsWith("invalid: modified"), "says invalid: modified");

  // --- Rendering: pins beside numbers, windows, charts, translator.
  await page.getByTestId("entry-0").click();
  for (const id of ["ttft-cdf", "tpot-cdf", "e2e-cdf", "inter-chunk", "tokens-per-chunk", "throughput-time", "in-flight-time", "decode-slowdown"]) {
    check(await page.getByTestId(`chart-${id}`).count() === 1, `chart ${id} rendered`);
  }
  const fig = await page.getByTestId("figure-aggregate_steady").textContent();
  check(fig.includes("aggregate") && fig.includes("steady window"), `aggregate figure names its window: ${fig}`);
  const per = await page.getByTestId("figure-per_stream_decode").textContent();
  check(per.includes("per-stream") && per.includes("measured window"), `per-stream figure names its window: ${per}`);
  check((await page.getByTestId("pin-row-load").textContent()).includes("closed loop, c=4"), "pins table shows the load");
  check((await page.getByTestId("translator").textContent()).includes("mean_tpot_ms"), "metric translator shows vLLM's names");
  await open(fx("report_sweep.json"));
  check(await page.getByTestId("chart-sweep").count() === 1, "a sweep report draws the per-stream vs aggregate curve");

  // --- CSV and card SVG exports.
  await page.getByTestId("entry-0").click();
  const [csvDl] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-csv").click()]);
  const csv = fs.readFileSync(await csvDl.path(), "utf8").trim().split("\n");
  const nRecords = JSON.parse(text).body.records.length;
  check(csv.length === nRecords + 1 && csv[0].startsWith("index,step,phase"), `CSV has a header and ${nRecords} rows (${csv.length - 1})`);
  const [svgDl] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-card-svg").click()]);
  const svg = fs.readFileSync(await svgDl.path(), "utf8");
  check(svg.startsWith("<svg") && svg.includes("llama-3.1-8b") && svg.includes("signature valid"), "card SVG export is a standalone SVG with the model and signature status");

  // --- Embed snippet (link-only form for a file opened from disk) and the card link.
  await page.getByTestId("copy-embed").click();
  await page.waitForFunction(() => document.querySelector('[data-testid="share-status"]').textContent !== "");
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  check(clip.startsWith("<iframe src=") && clip.includes("#card="), "copy embed snippet puts an <iframe> with the link-only card on the clipboard");
  const cardLink = await page.getByTestId("card-link").getAttribute("href");

  // --- Compare: c=4 vs c=8 → not comparable, concurrency highlighted; c=4 vs rerun → comparable.
  await open(fx("report_c8.json"));
  await open(fx("report_c4_rerun.json"));
  await page.getByTestId("nav-compare").click();
  const pick = async (ids) => {
    for (let i = 0; i < 10; i++) {
      const box = page.getByTestId(`compare-pick-${i}`);
      if (!(await box.count())) break;
      if ((await box.isChecked()) !== ids.includes(i)) await box.click();
    }
  };
  const entries = await page.locator('[data-testid="compare-picks"] li').allTextContents();
  const idx = (name) => entries.findIndex((t) => t.includes(name));
  await pick([idx("report_c4.json"), idx("report_c8.json")]);
  const verdict = await page.getByTestId("compare-verdict").textContent();
  check(await page.getByTestId("compare-verdict").getAttribute("data-state") === "not-comparable" && verdict.includes("differs in load"), `c=4 vs c=8: ${verdict}`);
  check(await page.getByTestId("compare-row-load").getAttribute("data-differs") === "true", "the load (concurrency) row is highlighted");
  check(await page.getByTestId("compare-row-model.params").getAttribute("data-differs") === "false", "matching pins are not highlighted");
  await pick([idx("report_c4.json"), idx("report_c4_rerun.json")]);
  check(await page.getByTestId("compare-verdict").getAttribute("data-state") === "comparable", `c=4 vs its rerun: ${await page.getByTestId("compare-verdict").textContent()}`);
  await page.getByTestId("nav-reports").click();

  // --- Imports: each lists the pins it leaves open.
  const expectOpen = {
    "vllm_bench_serve.json": ["parameters", "prompt length", "output length", "KV cache capacity", "scheduling", "sampling"],
    "aiperf_profile_export_aiperf.json": ["parameters", "output length", "KV cache capacity", "prefill/decode mix", "cache policy"],
    "guidellm_benchmarks.json": ["parameters", "output length", "max concurrent sequences", "scheduling"],
  };
  for (const [file, want] of Object.entries(expectOpen)) {
    await open(path.join(imports, file));
    const open_ = await page.getByTestId("open-pins").textContent();
    check(want.every((w) => open_.includes(w)), `${file}: lists unpinned pins (${open_.slice(0, 90)}…)`);
  }

  // --- Real files of the tools: the pins they state, and their requests recomputed
  // beside the tool's figures with the same charts as a report.
  const real = path.join(imports, "real");
  for (const [file, rows, charts] of [
    ["vllm-bench-serve-0.33.0/vllm_bench_serve.json", ["ttft_mean_ms", "tpot_mean_ms", "e2e_mean_ms"], ["ttft-cdf", "inter-chunk", "throughput-time"]],
    ["aiperf-0.13.0/profile_export.jsonl", ["ttft_mean_ms", "e2e_mean_ms"], ["ttft-cdf", "tokens-per-chunk", "in-flight-time"]],
    ["guidellm-0.8.1/benchmarks.json", ["ttft_mean_ms", "tpot_mean_ms"], ["ttft-cdf", "throughput-time"]],
  ]) {
    await open(path.join(real, file));
    await page.getByTestId("import-recomputed").waitFor({ timeout: 5000 });
    for (const r of rows) {
      const cells = await page.getByTestId(`sbs-${r}`).locator("td").allTextContents();
      check(cells.length >= 2 && cells[1] !== "—", `${file}: ${r} recomputed by pinbench (${cells.slice(0, 3).join(" | ")})`);
    }
    for (const c of charts) {
      check(await page.getByTestId(`figure-chart-${c}`).locator("svg").count() === 1, `${file}: chart ${c} drawn`);
    }
    const model = await page.getByTestId("import-view").textContent();
    check(model.includes("pinbench-tiny") || file.endsWith(".jsonl"), `${file}: the model is read from the file`);
  }

  // --- Hostile files: a clear message each, and no script runs.
  const hostile = [
    ["malformed.json", '{"schema": "pinbench.report/v1", "body": ', "not valid JSON"],
    ["wrong-version.json", text.replace("pinbench.report/v1", "pinbench.report/v7"), 'unsupported report schema "pinbench.report/v7"'],
    ["nested.json", "[".repeat(100000) + "]".repeat(100000), "nested too deeply"],
    ["duplicate-keys.json", text.replace('"created":', '"created":"1999-01-01T00:00:00.000Z","created":'), 'duplicate key "created"'],
    ["chunk-bomb.json", chunkBomb(text), "when decoded"],
  ];
  for (const [name, body, want] of hostile) {
    await open(write(name, body));
    const msg = await openError();
    check(msg.includes(want) || (name === "chunk-bomb.json" && msg.includes("token chunks in all")), `${name}: "${msg.slice(0, 140)}"`);
  }
  {
    const doc = JSON.parse(text);
    doc.body.summary.steps[0].histograms.ttft_us = histogramBomb();
    await open(write("histogram-bomb.json", JSON.stringify(doc)));
    await page.getByTestId("recompute-state").waitFor({ timeout: 10000 });
    const rc = await page.getByTestId("recompute-state").textContent();
    check(/do not match|Could not recompute/.test(rc), `histogram bomb: the file opens, its recompute says what is wrong ("${rc.slice(0, 100)}")`);
  }
  const huge = path.join(tmp, "huge.json");
  fs.writeFileSync(huge, "");
  fs.truncateSync(huge, 300 * 1024 * 1024);
  await open(huge);
  check((await openError()).includes("the viewer opens files up to"), `300 MB file refused before reading: "${(await openError()).slice(0, 90)}"`);
  const doc = JSON.parse(text);
  const stripped = { ...doc };
  delete stripped.signature;
  await open(write("stripped.json", JSON.stringify(stripped)));
  check(await state() === "unsigned", "signature stripped → unsigned");
  const other = JSON.parse(fs.readFileSync(fx("report_c8.json"), "utf8"));
  await open(write("swapped.json", JSON.stringify({ ...doc, signature: other.signature })));
  check(await state() === "invalid", "signature block swapped from another report → invalid: modified");
  await open(fx("report_xss.json"));
  check((await page.getByTestId("pin-row-model.id").textContent()).includes("<script>"), "HTML in the model name is shown as text");
  await page.getByTestId("nav-compare").click();
  await page.getByTestId("nav-reports").click();
  const xssLink = await page.getByTestId("card-link").getAttribute("href");
  const pwned = await page.evaluate(() => window.__pwned);
  check(pwned === undefined, "no script from a report ran in the viewer");

  // --- Embed: hosted card in an <iframe> on another origin; link-only card top-level.
  const hosted = `${app.url}card/?src=${encodeURIComponent(withCors.url + "report_c4.json")}&theme=dark`;
  const wiki = await context.newPage();
  const wikiErrors = watchErrors(wiki);
  await wiki.goto(`${withCors.url}embed.html?src=${encodeURIComponent(hosted)}`);
  const frame = wiki.frameLocator("#card");
  await frame.getByTestId("card-sig").waitFor({ timeout: 20000 });
  const cardText = await frame.getByTestId("card").textContent();
  check(cardText.includes("llama-3.1-8b") && cardText.includes("closed loop, c=4"), "hosted card in an iframe shows the model and pins");
  check((await frame.getByTestId("card-sig").textContent()).startsWith("signature valid"), `hosted card verifies: ${await frame.getByTestId("card-sig").textContent()}`);
  check((await frame.getByTestId("card-headline").textContent()).includes("steady window"), "card headline numbers carry their window");
  check(await frame.getByTestId("card").evaluate((e) => e.classList.contains("card--dark")), "theme=dark renders the dark card");
  const box = await wiki.locator("#card").boundingBox();
  check(box && box.width === 600 && box.height === 200, `iframe is 600×200 (${box?.width}×${box?.height})`);
  check(wikiErrors.length === 0, `no errors on the wiki page (${wikiErrors.join("; ")})`);
  const cardAssets = await frame.locator("html").evaluate(() => performance.getEntriesByType("resource").map((r) => r.name));
  check(cardAssets.some((n) => n.endsWith("card/pinbench-card_bg.wasm")) && !cardAssets.some((n) => /\/pinbench-[0-9a-f]+_bg\.wasm$/.test(n)), `the card page loads its own small wasm, not the app's (${cardAssets.filter((n) => n.endsWith(".wasm")).join(", ")})`);
  // A card address of earlier versions (?view=card) still opens the card.
  const legacy = await context.newPage();
  await legacy.goto(`${app.url}?view=card&src=${encodeURIComponent(withCors.url + "report_c4.json")}`);
  await legacy.getByTestId("card-sig").waitFor({ timeout: 20000 });
  check(new URL(legacy.url()).pathname.endsWith("/card/") && (await legacy.getByTestId("card-sig").textContent()).startsWith("signature valid"), `?view=card goes to the card page (${legacy.url().slice(0, 60)})`);
  await legacy.close();
  const linkPage = await context.newPage();
  await linkPage.goto(cardLink);
  await linkPage.getByTestId("card-sig").waitFor();
  check((await linkPage.getByTestId("card-sig").textContent()).startsWith("signature valid"), `link-only card renders and verifies: ${await linkPage.getByTestId("card-sig").textContent()}`);
  check((await linkPage.getByTestId("card-pins").textContent()).includes("closed loop, c=4"), "link-only card shows the pins");
  const tampered = cardLink.replace(/#card=(.)/, (m, c) => `#card=${c === "A" ? "B" : "A"}`);
  await linkPage.goto("about:blank");
  await linkPage.goto(tampered);
  await linkPage.waitForFunction(() => document.querySelector('[data-testid="card-sig"], [data-testid="card-error"]'));
  const tState = await linkPage.locator('[data-testid="card-sig"], [data-testid="card-error"]').first().textContent();
  check(tState.startsWith("invalid: modified") || tState.includes("damaged"), `a changed card link does not verify: ${tState.slice(0, 80)}`);
  await linkPage.goto("about:blank");
  await linkPage.goto(xssLink);
  await linkPage.getByTestId("card-sig").waitFor();
  check(await linkPage.evaluate(() => window.__pwned) === undefined && (await linkPage.getByTestId("card-model").textContent()).includes("<img"), "HTML in a card's model name stays text");

  // --- ?src= from a host without CORS: a clear message.
  const noCorsPage = await context.newPage();
  await noCorsPage.goto(`${app.url}?src=${encodeURIComponent(noCors.url + "report_c4.json")}`);
  await noCorsPage.waitForFunction(() => document.querySelector('[data-testid="src-error"]').textContent !== "");
  const corsMsg = await noCorsPage.getByTestId("src-error").textContent();
  check(corsMsg.includes("does not allow cross-origin reads"), `?src= without CORS: "${corsMsg.slice(0, 100)}"`);
  const withSrc = await context.newPage();
  await withSrc.goto(`${app.url}?src=${encodeURIComponent(withCors.url + "report_c4.json")}`);
  await withSrc.getByTestId("sig-state").waitFor();
  check(await withSrc.getByTestId("sig-state").getAttribute("data-state") === "valid", "?src= with CORS opens the report (and the trusted key is remembered)");
  const snippet = await withSrc.getByTestId("embed-snippet").textContent();
  check(snippet.includes("card/?src="), "a report opened from a URL gets the hosted embed snippet");

  const appErrors = errors.filter((e) => !e.includes("report_c4.json"));
  check(appErrors.length === 0, `no console errors in the viewer (${appErrors.join("; ")})`);
} catch (e) {
  check(false, `viewer e2e threw: ${e.stack}`);
} finally {
  await browser.close();
  for (const s of [app.server, withCors.server, noCors.server]) s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
finish("viewer e2e");
