// Accessibility: axe-core (npm) on the Run screen (empty, pinned, after a run), Reports
// (a signed report open), Compare (two reports), Claims and the card, light and dark: zero serious
// or critical violations. Usage: node tests/e2e/a11y.mjs dist
import fs from "node:fs";
import { createRequire } from "node:module";
import { serveDist, launch, checker, serveJson } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";

const require = createRequire(import.meta.url);
const axePath = require.resolve("axe-core/axe.min.js");
const dist = process.argv[2] ?? "dist";
const { server: web, url } = await serveDist(dist);
const ref = await startRefserver();
const browser = await launch(["--ignore-certificate-errors"]);
const { check, finish } = checker();

const files = await serveJson();
const reportUrl = files.url;

/** Runs axe on the page; reports serious and critical violations. */
async function audit(page, name) {
  await page.addScriptTag({ path: axePath });
  const res = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")), help: v.help }));
  });
  const bad = res.filter((v) => v.impact === "serious" || v.impact === "critical");
  const minor = res.filter((v) => !bad.includes(v));
  if (minor.length) console.log(`     ${name}: minor/moderate: ${minor.map((v) => v.id).join(", ")}`);
  check(bad.length === 0, `${name}: no serious or critical axe violations${bad.length ? ": " + JSON.stringify(bad) : ""}`);
}

try {
  for (const scheme of ["light", "dark"]) {
    const ctx = await browser.newContext({ colorScheme: scheme, acceptDownloads: true });
    const page = await ctx.newPage();
    await page.goto(url);
    await page.getByTestId("pin-endpoint_url").waitFor();
    await audit(page, `${scheme}: Run, empty form`);
    await page.getByTestId("pin-endpoint_url").fill(`https://127.0.0.1:${ref.https}`);
    await page.getByTestId("probe").click();
    await page.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 15000 });
    await page.getByTestId("preset-single").click();
    await page.getByTestId("pin-measured").fill("6");
    await page.getByTestId("all-pinned").waitFor();
    await audit(page, `${scheme}: Run, pinned`);
    await page.getByTestId("start").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') !== null, null, { polling: 500, timeout: 120000 });
    await audit(page, `${scheme}: Run, live view and results`);
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-report").click()]);
    const reportText = fs.readFileSync(await download.path(), "utf8");
    files.set(reportText);

    await page.getByTestId("nav-reports").click();
    await page.getByTestId("paste-input").fill(reportText);
    await page.getByTestId("open-paste").click();
    await page.locator('[data-testid="reports-section"] [data-testid="report-body"], .viewer [data-testid="report-body"]').first().waitFor({ timeout: 15000 });
    await audit(page, `${scheme}: Reports, a signed report open`);
    // A second file: the same report with one byte of its body changed (opens as modified).
    const other = JSON.parse(reportText);
    other.body.created = "2026-01-01T00:00:00.000Z";
    await page.getByTestId("paste-input").fill(JSON.stringify(other));
    await page.getByTestId("open-paste").click();
    await page.getByTestId("nav-compare").click();
    await page.getByTestId("compare-table").waitFor({ timeout: 15000 });
    await audit(page, `${scheme}: Compare`);
    await page.getByTestId("nav-claims").click();
    await page.getByTestId("claim-input").fill("Llama 3.1 70B at 2,100 tokens/s per user on 8×H100, 3× faster than vLLM");
    await page.getByTestId("claim-check").click();
    await page.getByTestId("claim-result").waitFor();
    await audit(page, `${scheme}: Claims`);

    const card = await ctx.newPage();
    await card.goto(`${url}card/?theme=${scheme}&src=${encodeURIComponent(reportUrl)}`);
    await card.getByTestId("card-headline").waitFor({ timeout: 15000 });
    await audit(card, `${scheme}: card`);
    await ctx.close();
  }
} finally {
  await browser.close();
  ref.stop();
  web.close();
  files.close();
}
finish("a11y");
