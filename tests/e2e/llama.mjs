// End-to-end against a real engine: llama.cpp's llama-server with Gemma 3 270M (built and
// cached by scripts/llama.sh), driven through the app at c = 1 (128→64) and c = 4
// (1024→64) with ignore_eos. Every request must have exactly the requested prompt tokens
// (as llama-server counts them, BOS included) and exactly 64 output tokens, and each
// request's decode time must agree with llama-server's own timings.predicted_ms within 10%.
// Usage: node tests/e2e/llama.mjs dist
import fs from "node:fs";
import os from "node:os";
import net from "node:net";
import path from "node:path";
import { spawn } from "node:child_process";
import { serveDist, launch, watchErrors, checker, startAndDownload } from "./lib.mjs";
import { decodeChunks } from "./report.mjs";
import { fill } from "./app_run.mjs";

const cache = path.join(process.env.PINBENCH_CACHE ?? path.join(os.homedir(), ".cache/pinbench"), "llama");
const freePort = () => new Promise((res) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); }); });
const port = await freePort();
const llama = spawn(path.join(cache, "llama-server"), ["-m", path.join(cache, "gemma-3-270m-q4_k_m.gguf"), "--host", "127.0.0.1", "--port", String(port),
  "-np", "4", "-cb", "-c", "8192", "-t", "1", "--alias", "gemma-3-270m", "--metrics", "--slots", "--no-webui"], { stdio: "ignore" });
const base = `http://127.0.0.1:${port}`;
for (let i = 0; i < 120; i++) {
  try { if ((await fetch(`${base}/health`)).ok) break; } catch { /* not up yet */ }
  await new Promise((r) => setTimeout(r, 500));
}
const { server: web, url } = await serveDist(process.argv[2] ?? "dist");
const browser = await launch();
const { check, failures, finish } = checker();
try {
  for (const [c, counts, promptTokens] of [[1, [1, 4, 0], 128], [4, [4, 8, 0], 1024]]) {
    const ctx = await browser.newContext({ acceptDownloads: true });
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    await page.goto(url);
    await page.getByTestId("pin-endpoint_url").fill(base);
    await page.getByTestId("probe").click();
    await page.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 10000 });
    check(await page.getByTestId("pin-model_id").inputValue() === "gemma-3-270m", `c=${c}: probe fills the model id from llama-server`);
    check(await page.getByTestId("pin-max_num_seqs").inputValue() === "4", `c=${c}: probe fills max seqs from /props total_slots`);
    const pins = { model_quant: "Q4_K_M", prompt_tokens: String(promptTokens), prompt_exactness: "server_tokenizer", output_tokens: "64",
      output_enforcement: "ignore_eos", load_mode: "closed", concurrency: String(c), stall_timeout_s: "60", kv_capacity: "8192",
      phases: "colocated", scheduling: "continuous", warmup: String(counts[0]), measured: String(counts[1]), cooldown: String(counts[2]),
      nonce_prefix: "on", shared_prefix: "none", turns: "1", temperature: "0", sampling_extra: "{\"cache_prompt\":false}", reasoning: "none" };
    for (const [k, v] of Object.entries(pins)) await fill(page, k, v);
    await page.getByTestId("all-pinned").waitFor({ timeout: 5000 });
    const file = path.join(os.tmpdir(), `pinbench-llama-${process.pid}-${c}.json`);
    const { report } = await startAndDownload(page, file);
    fs.rmSync(file, { force: true });
    const recs = report.body.records;
    check(recs.length === counts[0] + counts[1] + counts[2] && recs.every((r) => r.outcome.kind === "ok"), `c=${c}: all ${recs.length} requests completed`);
    const outs = recs.map((r) => [r.usage?.completion_tokens, decodeChunks(r.chunks).reduce((s, ch) => s + ch[1], 0)]);
    check(outs.every(([u, k]) => u === 64 && k === 64), `c=${c}: every request has exactly 64 output tokens (${JSON.stringify(outs.map((o) => o[1]))})`);
    const ratios = recs.map((r) => {
      const ch = decodeChunks(r.chunks);
      return (ch[ch.length - 1][0] - ch[0][0]) / r.server_timings.predicted_us;
    });
    console.log(`c=${c}: client decode span / llama predicted_ms: ${ratios.map((x) => x.toFixed(3)).join(" ")}`);
    check(ratios.every((x) => Math.abs(x - 1) <= 0.10), `c=${c}: each request's decode time within 10% of llama-server's timings.predicted_ms`);
    const prompt = report.body.summary.steps[0].prompt_len;
    console.log(`c=${c}: prompt tokens requested ${prompt.requested_total}, achieved ${prompt.achieved_total} (exact ${prompt.exact}/${prompt.known})`);
    const prompts = recs.map((r) => r.usage?.prompt_tokens);
    check(prompt.exact === prompt.known && prompts.every((p) => p === promptTokens), `c=${c}: every prompt has exactly ${promptTokens} tokens as llama-server counts them (${JSON.stringify(prompts)})`);
    check(errors.length === 0, `c=${c}: no console errors (${errors.join("; ")})`);
    await ctx.close();
  }
} catch (e) {
  failures.push(String(e.stack ?? e));
  console.error(e);
} finally {
  await browser.close();
  web.close();
  llama.kill("SIGTERM");
}
finish("llama flow");
