// Shared helpers for end-to-end tests: a static server for dist/ (cross-origin isolated,
// like `trunk serve`) and a headless Debian Chromium driven by playwright-core.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".wasm": "application/wasm",
  ".css": "text/css",
  ".svg": "image/svg+xml",
  ".json": "application/json",
};

/** Serves `root` on 127.0.0.1 (random port) with COOP/COEP headers. Resolves to {server, url}. */
export function serveDist(dir) {
  const root = path.resolve(dir);
  const server = http.createServer((req, res) => {
    const urlPath = decodeURIComponent(new URL(req.url, "http://x").pathname);
    let file = path.join(root, urlPath === "/" ? "index.html" : urlPath);
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    // A folder's own index.html, as static hosts serve it (card/ → card/index.html).
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, "index.html");
    if (!fs.existsSync(file)) file = path.join(root, "index.html");
    res.writeHead(200, {
      "Content-Type": TYPES[path.extname(file)] ?? "application/octet-stream",
      "Cross-Origin-Opener-Policy": "same-origin",
      "Cross-Origin-Embedder-Policy": "require-corp",
      // `no-cache`, not `no-store`: every load revalidates (no stale build), and Chromium
      // reports a `no-store` fetch read to its end through `body.getReader()` as failed
      // (`requestfailed … net::ERR_ABORTED`) in about 4 of 5 fetches although every byte
      // arrived — Playwright issue #42742; measured here with a 12 KB trace file: 25–32
      // of 40 reads flagged under `no-store`, 0 of 40 under `no-cache` or none.
      "Cache-Control": "no-cache",
    });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/` }));
  });
}

/**
 * Serves one JSON document with CORS and CORP (as a wiki's file store serves a report), on
 * 127.0.0.1. Resolves to {url, set(text), close()}.
 */
export function serveJson(path = "/report.json") {
  let text = "{}";
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "application/json", "Access-Control-Allow-Origin": "*", "Cross-Origin-Resource-Policy": "cross-origin" });
    res.end(text);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({
    url: `http://127.0.0.1:${server.address().port}${path}`,
    set: (t) => { text = t; },
    close: () => server.close(),
  })));
}

/**
 * Launches headless Debian Chromium (no downloads; the background-networking flags keep it
 * off this machine's closed network). Chromium here now and then dies of SIGSEGV as it
 * starts (its crash handler writes a dump; seen in CI's fidelity bench and in a full run's
 * viewer bench, never after a page was open): such a launch has run nothing of pinbench
 * and measured nothing, so it is tried once more, and said so. A second failure throws.
 */
export async function launch(extraArgs = []) {
  const once = () => chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: [
      "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--no-first-run", "--disable-quic", "--disable-renderer-backgrounding",
      "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows", ...extraArgs,
    ],
  });
  try {
    return await once();
  } catch (e) {
    console.log(`NOTE: Chromium failed to start (${String(e.message).split("\n")[0].slice(0, 200)}); launching it again, once.`);
    return once();
  }
}

/** Records console errors, page errors and failed requests of a page. */
export function watchErrors(page) {
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => errors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`http ${r.status()}: ${r.url()}`); });
  return errors;
}

/** Collects pass/fail lines; `finish(name)` prints the verdict and exits non-zero on failure. */
export function checker() {
  const failures = [];
  return {
    failures,
    check(ok, msg) {
      if (!ok) failures.push(msg);
      console.log(`${ok ? "ok  " : "FAIL"} ${msg}`);
    },
    finish(name) {
      if (failures.length) {
        console.error(`\n${name} FAILED:\n${failures.join("\n")}`);
        process.exit(1);
      }
      console.log(`${name} ok`);
    },
  };
}

/**
 * Clicks Start, waits for the results (polling every 500 ms: Playwright's default waitFor
 * polls every animation frame, which keeps the page's main thread busy and perturbs the very
 * timings under test), downloads the signed report and returns {file, report}.
 */
export async function startAndDownload(page, file, timeout = 300000) {
  await page.getByTestId("start").click();
  await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') !== null, null, { polling: 500, timeout });
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-report").click()]);
  await download.saveAs(file);
  return { file, report: JSON.parse(fs.readFileSync(file, "utf8")) };
}
