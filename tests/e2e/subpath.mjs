// Host anywhere: the release bundle served from a sub-path (/tools/pinbench/, with the
// headers the README's recipes send) runs a benchmark in its worker and signs the report;
// a page of another origin (a wiki) embeds the card of a hosted report, and the full app
// refuses to render inside that other origin's frame.
// Usage: node tests/e2e/subpath.mjs dist
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { launch, checker, watchErrors, startAndDownload, serveJson } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";
import { fill } from "./app_run.mjs";

const dist = path.resolve(process.argv[2] ?? "dist");
const PREFIX = "/tools/pinbench/";
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css", ".svg": "image/svg+xml" };
const { check, finish } = checker();

function listen(handler) {
  const server = http.createServer(handler);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, port: server.address().port })));
}

// The bundle under a sub-path, with the nginx recipe's headers.
const host = await listen((req, res) => {
  const u = new URL(req.url, "http://x");
  if (!u.pathname.startsWith(PREFIX)) { res.writeHead(404).end(); return; }
  const rel = decodeURIComponent(u.pathname.slice(PREFIX.length)) || "index.html";
  let file = path.join(dist, rel);
  if (file.startsWith(dist) && fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, "index.html");
  if (!file.startsWith(dist) || !fs.existsSync(file)) file = path.join(dist, "index.html");
  const card = u.pathname.startsWith(`${PREFIX}card/`);
  res.writeHead(200, {
    "Content-Type": TYPES[path.extname(file)] ?? "application/octet-stream",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "cross-origin",
    "Content-Security-Policy": card ? "frame-ancestors *" : "frame-ancestors 'self'",
  });
  fs.createReadStream(file).pipe(res);
});
const app = `http://127.0.0.1:${host.port}${PREFIX}`;

const files = await serveJson();
const reportUrl = files.url;

// Another origin: a wiki page with the card's iframe, and one framing the whole app.
const wiki = await listen((req, res) => {
  const u = new URL(req.url, "http://x");
  const src = u.pathname === "/app" ? app : `${app}card/?theme=dark&src=${encodeURIComponent(reportUrl)}`;
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  res.end(`<!doctype html><title>wiki</title><h1>Team page</h1><iframe id="f" src="${src}" width="600" height="200" style="border:0" title="pinbench result card"></iframe>`);
});

const ref = await startRefserver();
const browser = await launch(["--ignore-certificate-errors"]);
try {
  const page = await (await browser.newContext({ acceptDownloads: true })).newPage();
  const errors = watchErrors(page);
  await page.goto(app);
  await page.getByTestId("pin-endpoint_url").waitFor({ timeout: 15000 });
  check(await page.evaluate(() => crossOriginIsolated), "the app is cross-origin isolated under the sub-path");
  await fill(page, "endpoint_url", `https://127.0.0.1:${ref.https}`);
  await page.getByTestId("probe").click();
  await page.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 10000 });
  await page.getByTestId("preset-single").click();
  await fill(page, "measured", "4");
  await page.getByTestId("all-pinned").waitFor({ timeout: 5000 });
  const { report } = await startAndDownload(page, path.join(os.tmpdir(), `pinbench-subpath-${process.pid}.json`), 120000);
  check(report.body.client.env.host === "worker", `a run from the sub-path measures in its worker (${report.body.client.env.host})`);
  check(report.signature && report.body.records.length === 6, "… and downloads a signed report");
  check(errors.length === 0, `no console errors (${errors.join("; ")})`);
  files.set(JSON.stringify(report));

  const wikiPage = await (await browser.newContext()).newPage();
  await wikiPage.goto(`http://127.0.0.1:${wiki.port}/`);
  const frame = wikiPage.frameLocator("#f");
  await frame.getByTestId("card-headline").waitFor({ timeout: 15000 });
  check((await frame.getByTestId("card-sig").getAttribute("data-state")) !== "invalid", "the card embeds in another origin's page and verifies");
  const framedApp = await (await browser.newContext()).newPage();
  await framedApp.goto(`http://127.0.0.1:${wiki.port}/app`);
  await framedApp.waitForTimeout(3000);
  // Playwright reaches into cross-origin frames: none may hold the app's shell.
  let shells = 0;
  for (const f of framedApp.frames()) shells += await f.locator('[data-testid="app-title"]').count().catch(() => 0);
  const blocked = shells === 0;
  check(blocked, "the full app is not rendered inside another origin's frame");
} finally {
  await browser.close();
  ref.stop();
  host.server.close();
  files.close();
  wiki.server.close();
}
finish("sub-path hosting");
