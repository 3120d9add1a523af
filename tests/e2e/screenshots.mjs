// Screenshots of the Run form, a live run, the results and the card, at 1280×800 and
// 390×844, light and dark, against the reference server (8B-on-H100 profile).
// Usage: node tests/e2e/screenshots.mjs [dist] [out-dir]
// (out-dir defaults to $CARGO_TARGET_DIR/screenshots). Prints the files it wrote.
import fs from "node:fs";
import path from "node:path";
import { serveDist, launch, serveJson } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";

const dist = process.argv[2] ?? "dist";
const out = path.resolve(process.argv[3] ?? path.join(process.env.CARGO_TARGET_DIR ?? "target", "screenshots"));
fs.mkdirSync(out, { recursive: true });
const { server: web, url } = await serveDist(dist);
const ref = await startRefserver(["--profile", "8b-h100"]);
const browser = await launch(["--ignore-certificate-errors"]);
const SIZES = [["desktop", 1280, 800], ["phone", 390, 844]];
const written = [];

// The finished report, served with CORS for the card (as a wiki's file store would).
const files = await serveJson();
const reportUrl = files.url;

async function shoot(page, name, scheme, locator) {
  for (const [size, w, h] of SIZES) {
    await page.setViewportSize({ width: w, height: h });
    if (locator) await locator.scrollIntoViewIfNeeded();
    const file = path.join(out, `${name}-${size}-${scheme}.png`);
    await page.screenshot({ path: file });
    written.push(file);
  }
  await page.setViewportSize({ width: SIZES[0][1], height: SIZES[0][2] });
}

try {
  for (const scheme of ["light", "dark"]) {
    const ctx = await browser.newContext({ colorScheme: scheme, viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    const page = await ctx.newPage();
    await page.goto(url);
    await page.getByTestId("pin-endpoint_url").fill(`https://127.0.0.1:${ref.https}`);
    await page.getByTestId("probe").click();
    await page.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 15000 });
    await page.getByTestId("preset-chat").click();
    await page.getByTestId("all-pinned").waitFor();
    await shoot(page, "run-form", scheme);
    await page.getByTestId("start").click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="live-charts"] path[stroke="#2563eb"]').length >= 2, null, { polling: 250, timeout: 30000 });
    await page.waitForTimeout(2500);
    await shoot(page, "live-run", scheme, page.getByTestId("live-view"));
    await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') !== null, null, { polling: 500, timeout: 180000 });
    // Screenshots during a run delay the page's event loop (and the report says so): the
    // results come from a second run left alone.
    await page.getByTestId("start").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') === null, null, { polling: 100, timeout: 10000 });
    await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') !== null, null, { polling: 500, timeout: 180000 });
    await shoot(page, "results", scheme, page.getByTestId("results").getByTestId("headline").first());
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-report").click()]);
    files.set(fs.readFileSync(await download.path(), "utf8"));
    const card = await ctx.newPage();
    for (const [size, w, h] of SIZES) {
      await card.setViewportSize({ width: w, height: h });
      await card.goto(`${url}card/?theme=${scheme}&src=${encodeURIComponent(reportUrl)}`);
      await card.getByTestId("card-headline").waitFor({ timeout: 15000 });
      const file = path.join(out, `card-${size}-${scheme}.png`);
      await card.screenshot({ path: file });
      written.push(file);
    }
    await ctx.close();
  }
} finally {
  await browser.close();
  ref.stop();
  web.close();
  files.close();
}
console.log(written.join("\n"));
console.log(`screenshots: ${written.length} files in ${out}`);
