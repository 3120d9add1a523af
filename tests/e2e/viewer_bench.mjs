// Speed bench (a measurement, not a test): how long the viewer takes to open, verify,
// recompute and render a large report, from handing the file to the page until the
// report view with its charts is in the DOM. Prints a table.
// Usage: node tests/e2e/viewer_bench.mjs dist FIXTURE_DIR [runs]
import fs from "node:fs";
import path from "node:path";
import { serveDist, launch } from "./lib.mjs";

const [root = "dist", dir = "target/e2e-fixtures", runsArg = "3"] = process.argv.slice(2);
const file = path.join(dir, "report_big.json");
const report = JSON.parse(fs.readFileSync(file, "utf8"));
const n = report.body.records.length;
const mb = (fs.statSync(file).size / 1e6).toFixed(1);
const { server, url } = await serveDist(root);
const browser = await launch();
const rows = [];
try {
  for (let i = 0; i < Number(runsArg); i++) {
    const page = await browser.newPage();
    await page.goto(url);
    await page.getByTestId("nav-reports").click();
    const t0 = Date.now();
    await page.getByTestId("open-file").setInputFiles(file);
    await page.waitForFunction(() => document.querySelector('[data-testid="report-view"] [data-testid="chart-ttft-cdf"]') !== null, null, { polling: "raf", timeout: 120000 });
    const ms = Date.now() - t0;
    const state = await page.getByTestId("sig-state").getAttribute("data-state");
    const recompute = await page.getByTestId("recompute-state").getAttribute("data-state");
    const timing = await page.getByTestId("open-timing").textContent();
    rows.push({ ms, state, recompute, timing });
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
console.log(`\nviewer speed: ${n} requests, ${mb} MB (file handed to the page → report rendered with charts)`);
console.log("| run | ms, end to end | signature | recompute | the page's own stage timings |");
console.log("|---:|---:|---|---|---|");
rows.forEach((r, i) => console.log(`| ${i + 1} | ${r.ms} | ${r.state} | ${r.recompute} | ${r.timing} |`));
const sorted = rows.map((r) => r.ms).sort((a, b) => a - b);
console.log(`median ${sorted[Math.floor(sorted.length / 2)]} ms`);
