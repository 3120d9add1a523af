// End-to-end: a claim becomes a link and the link opens the Run screen with the claim's
// pins declared (and nothing else); a report's "Run these pins against my endpoint" leads
// to a re-run whose Compare verdict is "comparable" once the same server pins are probed.
// Usage: node tests/e2e/claims_rerun.mjs dist
import fs from "node:fs";
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { serveDist, launch, checker, watchErrors, startAndDownload } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";
import { pinRun, fill } from "./app_run.mjs";

const dist = process.argv[2] ?? "dist";
const { server: web, url } = await serveDist(dist);
const ref = await startRefserver();
const browser = await launch(["--ignore-certificate-errors"]);
const { check, finish } = checker();
const base = `https://127.0.0.1:${ref.https}`;

try {
  // A claim → its analysis → a link → the Run screen with the declared pins.
  {
    const page = await (await browser.newContext()).newPage();
    const errors = watchErrors(page);
    await page.goto(url);
    await page.getByTestId("nav-claims").click();
    await page.getByTestId("claim-input").fill("Llama 3.1 70B at 2,100 tokens/s per user on 8×H100, 3× faster than vLLM");
    await page.getByTestId("claim-check").click();
    check((await page.getByTestId("claim-verdict").textContent()).startsWith("Not checkable"), "the headline claim is not checkable as stated");
    const reasons = await page.getByTestId("claim-reasons").textContent();
    check(reasons.includes("No prompt") && reasons.includes("No concurrency"), "it says what is missing (lengths, concurrency)");
    check((await page.getByTestId("claim-metric").textContent()).includes("Per-stream"), "it says the number is per-stream");
    check((await page.getByTestId("claim-context").textContent()).includes("baseline: vLLM"), "vLLM is the comparison's baseline, not the engine");

    await page.getByTestId("claim-input").fill("Llama-3.1-8B bf16, 100 input tokens -> 300 output tokens, 10 parallel requests: 180 tokens/s output speed per stream");
    await page.getByTestId("claim-check").click();
    check((await page.getByTestId("claim-verdict").textContent()).startsWith("Checkable"), "a claim with model, lengths and concurrency is checkable");
    check((await page.getByTestId("claim-pin-concurrency").textContent()).includes("10"), "its concurrency is read (10)");
    const link = await page.getByTestId("claim-link").getAttribute("href");
    const run = await (await browser.newContext()).newPage();
    await run.goto(link);
    await run.getByTestId("link-pins").waitFor({ timeout: 10000 });
    check(await run.getByTestId("pin-prompt_tokens").inputValue() === "100", "the link opens the Run screen with the prompt length (100)");
    check(await run.getByTestId("pin-output_tokens").inputValue() === "300", "… the output length (300)");
    check(await run.getByTestId("pin-concurrency").inputValue() === "10", "… the concurrency (10)");
    check(await run.getByTestId("pin-model_id").inputValue() === "Llama-3.1-8B", "… the model");
    check((await run.getByTestId("source-prompt_tokens").textContent()).startsWith("declared"), "each stated value is marked declared");
    check(await run.getByTestId("pin-endpoint_url").inputValue() === "", "the endpoint stays open");
    check(await run.getByTestId("missing-kv_capacity").count() === 1, "unstated pins stay open in the checklist (KV capacity)");
    check(errors.length === 0, `no console errors (${errors.join("; ")})`);
  }

  // A received report → Run these pins → a comparable re-run.
  {
    const ctx = await browser.newContext({ acceptDownloads: true });
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(url);
    await pinRun(page, base, 2, [1, 6, 0]);
    await page.getByTestId("start").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') !== null, null, { polling: 500, timeout: 120000 });
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-report").click()]);
    const received = fs.readFileSync(await download.path(), "utf8");

    // Another browser receives the file.
    const other = await (await browser.newContext({ acceptDownloads: true })).newPage();
    await other.goto(url);
    await other.getByTestId("nav-reports").click();
    await other.getByTestId("paste-input").fill(received);
    await other.getByTestId("open-paste").click();
    await other.getByTestId("rerun").click();
    await other.getByTestId("rerun-banner").waitFor({ timeout: 5000 });
    check(await other.getByTestId("pin-prompt_tokens").inputValue() === "64", "re-run: the workload pins come from the report (prompt 64)");
    check(await other.getByTestId("pin-concurrency").inputValue() === "2", "re-run: … concurrency 2");
    check(await other.getByTestId("pin-measured").inputValue() === "6", "re-run: … the measured window");
    check(await other.getByTestId("pin-endpoint_url").inputValue() === "", "re-run: the endpoint is left to the user");
    check(await other.getByTestId("pin-model_id").inputValue() === "", "re-run: server pins are left to the probe");
    await fill(other, "endpoint_url", base);
    await fill(other, "dialect", "completions");
    await other.getByTestId("probe").click();
    await other.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 10000 });
    // The received report pinned the precision and phases by hand: pin the same values.
    await fill(other, "model_quant", "bf16");
    await fill(other, "phases", "colocated");
    await other.getByTestId("all-pinned").waitFor({ timeout: 5000 });
    await other.getByTestId("start").click();
    await other.getByTestId("compare-verdict").waitFor({ timeout: 120000 });
    const verdict = await other.getByTestId("compare-verdict").getAttribute("data-state");
    const sentence = await other.getByTestId("compare-verdict").textContent();
    check(verdict === "comparable", `re-run: Compare opens with both reports and says comparable (${sentence})`);
    check(await other.locator('[data-testid="compare-table"] thead th').count() >= 3, "re-run: both reports are side by side");
    check(errors.length === 0, `no console errors (${errors.join("; ")})`);
  }
  // Behaviour probes: a static batcher with a prefix cache is measured as such, and the
  // scheduling pin is filled as probed, with the evidence in the report.
  {
    const oddCert = path.join(os.tmpdir(), `pinbench-odd-${process.pid}.der`);
    const odd = await startRefserver(["--batching", "static", "--prefix-cache", "on", "--cert-out", oddCert]);
    try {
      const page = await (await browser.newContext({ acceptDownloads: true })).newPage();
      await page.goto(url);
      await fill(page, "endpoint_url", `https://127.0.0.1:${odd.https}`);
      await page.getByTestId("probe").click();
      await page.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 10000 });
      await fill(page, "scheduling", "undisclosed");
      await page.getByTestId("probe-behaviour").click();
      await page.getByTestId("behaviour-message").filter({ hasText: /decode slowdown:|stopped/ }).waitFor({ timeout: 60000 });
      const said = await page.getByTestId("behaviour-message").textContent();
      console.log(said);
      check(said.includes("batching: static"), "behaviour: a static batcher is measured as static");
      check(said.includes("prefix cache: on"), "behaviour: a prefix cache is measured as on");
      check(await page.getByTestId("pin-scheduling").inputValue() === "static", "behaviour: the scheduling pin is filled");
      check((await page.getByTestId("source-scheduling").getAttribute("title")).includes("measured by pinbench: batching"), "behaviour: … as probed, with its evidence");
      // The native command runs the same probes from the core's lifecycle: same verdicts.
      const cliBin = path.join(process.env.CARGO_TARGET_DIR ?? path.resolve("target"), "native", "pinbench");
      const cli = JSON.parse(execFileSync(cliBin, ["behaviour", "--json", `https://127.0.0.1:${odd.https}`, "--ca-cert", oddCert], { encoding: "utf8" }));
      console.log(`pinbench behaviour: batching ${cli.batching}, prefix cache ${cli.prefix_cache}, slowdown ${cli.slowdown_ratio}`);
      check(cli.batching === "static" && cli.prefix_cache === "on", `behaviour: pinbench behaviour says what the tab says (batching ${cli.batching}, prefix cache ${cli.prefix_cache})`);
      check(cli.fills.length === 1 && cli.fills[0].field === "scheduling" && cli.fills[0].text === await page.getByTestId("pin-scheduling").inputValue(), "behaviour: … and fills the same scheduling pin");
      await fill(page, "model_quant", "bf16");
      await page.getByTestId("preset-single").click();
      await fill(page, "measured", "3");
      await page.getByTestId("all-pinned").waitFor({ timeout: 5000 });
      const { report } = await startAndDownload(page, path.join(os.tmpdir(), `pinbench-behaviour-${process.pid}.json`), 120000);
      const kept = report.body.probes.map((p) => p.url).filter((u) => u.includes("measured by pinbench"));
      console.log(`probes in the report: ${report.body.probes.map((p) => p.url).join(" | ")}`);
      check(kept.length === 3, `behaviour: the report keeps the three probes' evidence (${kept.length})`);
    } finally {
      odd.stop();
    }
  }
} finally {
  await browser.close();
  ref.stop();
  web.close();
}
finish("claims and re-run");
