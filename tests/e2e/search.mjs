// End-to-end: an SLO search run from the Run screen against a reference server that runs at
// most 4 sequences at once (`--max-num-seqs 4`: a fifth request waits for a whole answer,
// about 0.2 s at 64 → 128 tokens). TTFT p99 ≤ 100 ms holds up to concurrency 4 and breaks
// past it (natively: ~7 ms at 4, ~270 ms at 5), so the search finds 4 to within its
// resolution of 1; the report's load steps are its probes in order; the results show the
// answer and the probes; the downloaded report verifies natively (every probe judged again
// from its records). A bad SLO is refused with a message and nothing runs.
// Usage: node tests/e2e/search.mjs dist
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { serveDist, launch, checker, startAndDownload } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";
import { appDriver } from "./app_run.mjs";

const dist = process.argv[2] ?? "dist";
const target = process.env.CARGO_TARGET_DIR ?? path.resolve("target");
const verifyBin = path.join(target, "debug", "pinbench-verify");
const { server: web, url } = await serveDist(dist);
const ref = await startRefserver(["--max-num-seqs", "4"]);
const browser = await launch(["--ignore-certificate-errors"]);
const { check, finish } = checker();
const { newPage, pinRun } = appDriver(browser, url);

try {
  const { page, errors } = await newPage();
  await pinRun(page, `https://127.0.0.1:${ref.https}`, 2, [4, 24, 0], { output_tokens: "128" });
  // A bad SLO: refused before anything is sent.
  await page.getByTestId("search-slos").fill("ttft:p99<500");
  await page.getByTestId("start").click();
  const refused = page.getByText("SLO search:", { exact: false }).first();
  await refused.waitFor({ timeout: 5000 });
  check((await refused.textContent()).includes("expected METRIC:pPCT<=MSms"), "a malformed SLO is refused with what the form expects");
  await page.getByTestId("search-slos").fill("ttft:p99<=100ms");
  await page.getByTestId("search-min").fill("1");
  await page.getByTestId("search-max").fill("16");
  await page.getByTestId("search-resolution").fill("1");
  const file = path.join(os.tmpdir(), `pinbench-search-${process.pid}.json`);
  const { report } = await startAndDownload(page, file, 300000);
  const search = report.body.search;
  const probes = (search?.probes ?? []).map((p) => [p.load, p.values_us[0], p.met]);
  console.log(`probes (concurrency, TTFT p99 µs, met): ${JSON.stringify(probes)}; found ${search?.found}`);
  check(search?.found === 4, `the search finds the server's knee, concurrency 4 (found ${search?.found})`);
  const loads = probes.map((p) => p[0]);
  check(JSON.stringify(loads) === JSON.stringify([1, 2, 4, 8, 6, 5]), `the probes double, then bisect to the resolution (${loads})`);
  const steps = report.body.config.load.value.steps.map((s) => s.concurrency);
  check(JSON.stringify(steps) === JSON.stringify(loads), `the report's load steps are the probes in order (${steps})`);
  const perStep = loads.map((_, k) => report.body.records.filter((r) => r.step === k).length);
  check(perStep.every((n) => n === 28), `each probe ran its own warm-up and measured window (${perStep} requests)`);
  check(report.body.summary.steps[2].goodput?.met === report.body.summary.steps[2].goodput?.judged,
    "the answer's probe has every measured request within the search's limit (its goodput)");
  const found = await page.getByTestId("search-found").first().textContent();
  check(found.includes("meeting every SLO is concurrency 4"), `the results say what the search found (${found.trim()})`);
  check(await page.locator('[data-testid="search-probes"] tbody tr').count() === 6, "the results list the six probes");
  const out = execFileSync(verifyBin, ["--trust", report.signature.public_key, file]).toString();
  check(out.includes("trusted signer") && out.includes("every summary figure matches its records"), "the report verifies natively, its probes judged again from the records");
  check(errors.length === 0, `no page errors (${errors.join("; ")})`);
  fs.rmSync(file, { force: true });
} finally {
  await browser.close();
  ref.stop();
  web.close();
}
finish("search");
