// Driving the Run screen against the reference server, and comparing what the app
// measured with the server's truth. Shared by run_flow.mjs and fidelity_bench.mjs.
import os from "node:os";
import path from "node:path";
import { watchErrors, startAndDownload } from "./lib.mjs";
import { decodeChunks, quantile } from "./report.mjs";

/** The workload pins every run here uses (64→32 tokens, exact lengths, nonce on). */
export const WORKLOAD = {
  model_quant: "bf16", prompt_tokens: "64", prompt_exactness: "server_tokenizer", output_tokens: "32",
  output_enforcement: "ignore_eos", stall_timeout_s: "30", phases: "colocated", nonce_prefix: "on", shared_prefix: "none", turns: "1",
  temperature: "0", sampling_extra: "{}", reasoning: "none", load_mode: "closed",
};

/** Sets the pin field `name` to `text`: types into a text box, picks in a select. */
export async function fill(page, name, text) {
  const el = page.getByTestId(`pin-${name}`);
  if (await el.evaluate((e) => e.tagName) === "SELECT") await el.selectOption(text);
  else await el.fill(text);
}

/** Probes `base` and pins a closed loop at `concurrency` with windows `counts`. */
export async function pinRun(page, base, concurrency, counts, extra = {}) {
  await fill(page, "endpoint_url", base);
  await page.getByTestId("probe").click();
  await page.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 10000 });
  for (const [k, v] of Object.entries(WORKLOAD)) await fill(page, k, v);
  await fill(page, "concurrency", String(concurrency));
  await fill(page, "warmup", String(counts[0]));
  await fill(page, "measured", String(counts[1]));
  await fill(page, "cooldown", String(counts[2]));
  for (const [k, v] of Object.entries(extra)) if (k !== "truthBase") await fill(page, k, v);
  await page.getByTestId("all-pinned").waitFor({ timeout: 5000 });
}

/** Page helpers bound to a browser and the app's URL. */
export function appDriver(browser, url) {
  async function newPage(context) {
    const ctx = context ?? await browser.newContext({ ignoreHTTPSErrors: true, acceptDownloads: true });
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(url);
    await page.getByTestId("pin-endpoint_url").waitFor();
    return { page, errors };
  }
  return { fill, newPage, pinRun };
}

/**
 * Pins and runs, downloads the signed report, and fetches the server's truth records of
 * the run (`extra.truthBase` is the server's plain-HTTP base). `onStart(page)` runs just
 * before Start is clicked.
 */
export async function runAgainstTruth(page, base, concurrency, counts, extra, onStart) {
  await pinRun(page, base, concurrency, counts, extra);
  const truthBase = extra.truthBase;
  const since = (await (await fetch(`${truthBase}/truth`)).json()).reduce((m, t) => Math.max(m, t.id), 0) + 1;
  const file = path.join(os.tmpdir(), `pinbench-e2e-${process.pid}-${concurrency}.json`);
  if (onStart) await onStart(page);
  const { report } = await startAndDownload(page, file, 300000);
  const truths = await (await fetch(`${truthBase}/truth?since=${since}`)).json();
  return { file, report, truths };
}

/**
 * Client vs server truth for the measured requests of step 0 of a pinbench report.
 * Requests are matched by response id (chunk `id` = cmpl-<truth id>); warm-up absorbs
 * connection setup (TLS), which the client's TTFT includes by definition and the server
 * cannot see. Returns |client − server| distributions (µs) and aggregate tok/s on each side.
 */
export function truthErrors(report, truths) {
  const step = report.body.summary.steps[0];
  const excluded = new Set([...step.requests.warmup, ...step.requests.cooldown]);
  const all = report.body.records.filter((r) => r.outcome.kind === "ok");
  const measured = all
    .filter((r) => !excluded.has(r.index))
    .map((r) => ({ t_send_us: r.t_send_us, response_id: r.response_id, chunks: decodeChunks(r.chunks), usage: r.usage, requested: r.output_tokens_requested }));
  const e = compareWithTruth(measured, truths);
  const byId = new Set(truths.map((t) => `cmpl-${t.id}`));
  return { ...e, expected: measured.length, records: all.length, unmatched: all.filter((r) => !byId.has(r.response_id)).length };
}

/**
 * Any client's measured requests ({t_send_us, response_id, chunks: [[t_us, tokens]…],
 * usage?, requested?}) against the server's truth: |client − server| TTFT and gap
 * distributions (µs) and aggregate tok/s on each side over its own span of token chunks.
 */
export function compareWithTruth(recs, truths) {
  const byId = new Map(truths.map((t) => [`cmpl-${t.id}`, t]));
  const matched = recs.filter((r) => byId.has(r.response_id) && r.chunks.length > 0);
  const tr = matched.map((r) => byId.get(r.response_id));
  const ttftDiff = [], gapDiff = [];
  let tokensClient = 0, tokensServer = 0, exact = true;
  matched.forEach((r, i) => {
    const t = tr[i];
    const chunks = r.chunks;
    ttftDiff.push(Math.abs((chunks[0][0] - r.t_send_us) - (t.first_token_us - t.received_us)));
    for (let k = 1; k < Math.min(chunks.length, t.chunks.length); k++) {
      gapDiff.push(Math.abs((chunks[k][0] - chunks[k - 1][0]) - (t.chunks[k][0] - t.chunks[k - 1][0])));
    }
    tokensClient += chunks.reduce((s, c) => s + c[1], 0);
    tokensServer += t.completion_tokens;
    if (r.usage && (r.usage.completion_tokens !== t.completion_tokens || r.requested !== t.completion_tokens)) exact = false;
  });
  const span = (xs) => Math.max(...xs) - Math.min(...xs);
  const aggClient = tokensClient / span(matched.flatMap((r) => r.chunks.map((c) => c[0]))) * 1e6;
  const aggServer = tokensServer / span(tr.flatMap((t) => t.chunks.map((c) => c[0]))) * 1e6;
  const dist = (xs) => ({ p50: quantile(xs, 0.5), p99: quantile(xs, 0.99) });
  return {
    matched: matched.length,
    expected: recs.length,
    ttft: dist(ttftDiff),
    gap: dist(gapDiff),
    aggClient,
    aggServer,
    tokensClient,
    tokensServer,
    exact,
  };
}
