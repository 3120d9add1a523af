// End-to-end: `pinbench watch` runs the same pins on a schedule against the reference
// server (every 2 s, three runs) and writes a signed report per run into a folder, named
// by its start; the tab's Reports screen opens that folder (a non-report file beside them
// is skipped), Compare calls the runs comparable and draws each headline figure over time.
// The watch keeps the runs' signed cards in its series file: the card page draws their
// trend line and links the latest report. Then an SLO search's report in the viewer, with
// a claim placed on its frontier.
// Usage: node tests/e2e/watch.mjs dist
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { serveDist, serveJson, launch, checker, watchErrors } from "./lib.mjs";
import { startRefserver, tinyPins } from "./refserver.mjs";

const dist = process.argv[2] ?? "dist";
const target = process.env.CARGO_TARGET_DIR ?? path.resolve("target");
const bin = path.join(target, "native", "pinbench");
const { check, finish } = checker();
const ref = await startRefserver(["--profile", "tiny"]);
const { server: web, url } = await serveDist(dist);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pinbench-watch-"));
const p = (f) => path.join(dir, f);
const pins = tinyPins(ref, { output_tokens: "16", concurrency: "2", warmup: "2", measured: "12", cooldown: "0" });
fs.writeFileSync(p("pins.json"), JSON.stringify(pins));
const reports = p("reports");
const browser = await launch();

try {
  const w = spawnSync(bin, ["watch", "--every", "2s", "--count", "3", "--dir", reports, "--pins", p("pins.json"), "--key", p("key.json"), "--new-key", "--quiet", "--no-probe"], { encoding: "utf8" });
  check(w.status === 0, `pinbench watch ran three times (exit ${w.status}; ${w.stderr.trim().split("\n").filter((l) => l.includes("watch:")).join(" | ")})`);
  const files = fs.readdirSync(reports).filter((f) => /^pinbench-\d{8}T\d{6}Z\.json$/.test(f)).sort();
  check(files.length === 3, `three reports named by their start (${files})`);
  const seriesText = fs.readFileSync(path.join(reports, "pinbench-series.txt"), "utf8");
  const [head, ...runs] = seriesText.trim().split("\n");
  const named = runs.map((l) => l.split(" ")[0]);
  check(head === "pinbench.series/v1" && named.join() === files.join() && runs.every((l) => l.split(" ")[1]?.startsWith("card=")),
    `the series file lists the three runs in order with their cards (${named})`);
  // Each report verifies against the watch's own key.
  const verify = spawnSync(bin, ["verify", ...files.map((f) => path.join(reports, f))], { encoding: "utf8" });
  check([0, 3].includes(verify.status), `every report is signed and recomputes (exit ${verify.status})`);
  fs.writeFileSync(path.join(reports, "notes.txt"), "not a report");

  const page = await (await browser.newContext()).newPage();
  const errors = watchErrors(page);
  await page.goto(url);
  await page.getByTestId("nav-reports").click();
  await page.getByTestId("open-folder").setInputFiles(reports);
  await page.getByTestId("nav-compare").click();
  const verdict = page.getByTestId("compare-verdict");
  await verdict.waitFor({ timeout: 20000 });
  await page.locator('[data-testid="over-time"]').waitFor({ timeout: 20000 });
  check((await verdict.getAttribute("data-state")) === "comparable", `the three runs are comparable (${await verdict.textContent()})`);
  const heading = await page.locator('[data-testid="over-time"] h3').textContent();
  check(heading.includes("3 runs"), `the folder's three reports are drawn over time, the text file skipped (${heading})`);
  for (const id of ["ttft-over-time", "tpot-over-time", "aggregate-over-time"]) {
    const dots = await page.locator(`[data-testid="figure-chart-${id}"] svg circle`).count();
    check(dots >= 3, `${id}: a point per run (${dots} points)`);
  }
  check(errors.length === 0, `no page errors (${errors.join("; ")})`);

  // The card page of the series (hosted as a wiki's file store would): the latest card,
  // the trend line of its three runs, the full view of the latest report one click away.
  {
    const hosted = await serveJson("/reports/pinbench-series.txt");
    hosted.set(seriesText);
    const cardPage = await (await browser.newContext()).newPage();
    const cardErrors = watchErrors(cardPage);
    await cardPage.goto(`${url}card/?series=${encodeURIComponent(hosted.url)}`);
    const trend = cardPage.getByTestId("card-trend");
    await trend.waitFor({ timeout: 20000 });
    check(await trend.getAttribute("data-runs") === "3", `the card draws the three runs' TTFT (${await trend.textContent()})`);
    check(await cardPage.locator('[data-testid="card-trend"] polyline').count() === 2, "the trend line has its p50 and p99");
    const sig = await cardPage.getByTestId("card-sig").getAttribute("data-state");
    check(["unknown-key", "trusted"].includes(sig), `the latest card's signature is checked (${sig})`);
    const full = await cardPage.getByTestId("card-full-link").getAttribute("href");
    const latest = hosted.url.replace(/pinbench-series\.txt$/, files[2]);
    check(full.includes(encodeURIComponent(latest)), `the full view opens the latest report (${full})`);
    check(cardErrors.length === 0, `no card page errors (${cardErrors.join("; ")})`);
    hosted.close();
  }

  // An SLO search's report (its probes are its load steps) in the viewer, and a claim
  // placed on its frontier: placed when its pins are the report's, refused with why not.
  const search = spawnSync(bin, ["run", "--pins", p("pins.json"), "--out", p("search.json"), "--key", p("key.json"), "--quiet", "--no-probe",
    "--search", "ttft:p99<=5000ms", "--search-max", "4"], { encoding: "utf8" });
  check(search.status === 0 && search.stderr.includes("the largest load meeting every SLO is concurrency 4"), `pinbench run --search probes 1, 2, 4 (${search.stderr.trim().split("\n").filter((l) => l.includes("search")).join(" | ")})`);
  const page2 = await (await browser.newContext()).newPage();
  const errors2 = watchErrors(page2);
  await page2.goto(url);
  await page2.getByTestId("nav-reports").click();
  await page2.getByTestId("open-file").setInputFiles(p("search.json"));
  const found = page2.getByTestId("search-found");
  await found.waitFor({ timeout: 20000 });
  check((await found.textContent()).includes("the largest load meeting every SLO is concurrency 4"), `the viewer says what the search found (${await found.textContent()})`);
  check(await page2.locator('[data-testid="search-probes"] tbody tr').count() === 3, "the viewer lists the three probes");
  const claim = page2.getByTestId("frontier-claim");
  await claim.fill("100M model, 64 input tokens and 16 output tokens, at 8 concurrent users: 2,100 tok/s per user");
  await claim.press("Enter");
  await claim.blur();
  const placed = page2.getByTestId("frontier-verdict");
  await placed.waitFor({ timeout: 10000 });
  check((await placed.getAttribute("data-state")) === "placed" && await page2.locator('[data-testid="figure-chart-frontier-claim"] svg').count() === 1,
    `a claim with the report's pins is placed on the frontier (${await placed.textContent()})`);
  await claim.fill("100M model, 64 input tokens and 512 output tokens: 2,100 tok/s per user");
  await claim.blur();
  await page2.locator('[data-testid="frontier-verdict"][data-state="not-comparable"]').waitFor({ timeout: 10000 });
  const reasons = await page2.getByTestId("frontier-reasons").textContent();
  check(reasons.includes("differs in output_tokens"), `a claim of another output length is not comparable, and says why (${reasons})`);
  check(errors2.length === 0, `no page errors in the viewer (${errors2.join("; ")})`);
} finally {
  await browser.close();
  ref.stop();
  web.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
finish("watch");
