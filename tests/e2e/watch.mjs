// End-to-end: `pinbench watch` runs the same pins on a schedule against the reference
// server (every 2 s, three runs) and writes a signed report per run into a folder, named
// by its start; the tab's Reports screen opens that folder (a non-report file beside them
// is skipped), Compare calls the runs comparable and draws each headline figure over time.
// Usage: node tests/e2e/watch.mjs dist
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { serveDist, launch, checker, watchErrors } from "./lib.mjs";
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
  const files = fs.readdirSync(reports).filter((f) => f.endsWith(".json")).sort();
  check(files.length === 3 && files.every((f) => /^pinbench-\d{8}T\d{6}Z\.json$/.test(f)), `three reports named by their start (${files})`);
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
} finally {
  await browser.close();
  ref.stop();
  web.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
finish();
