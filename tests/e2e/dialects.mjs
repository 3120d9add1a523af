// End-to-end in the tab: every API dialect (OpenAI chat completions, OpenAI Responses,
// Anthropic Messages, Gemini) against the reference server emulating a reasoning model,
// visible and hidden: every token accounted for against the server's truth (reasoning and
// answer apart), TTFT and the time to the first answer token against the server's, hidden
// reasoning outside every decode rate. Then what the server does to a run: throttled
// answers (429 with Retry-After and rate-limit headers) reach the server verdict, a vendor
// origin is pinned from the vendor table, and a run the browser blocks (CORS) says so with
// the `pinbench run` command line of the same pins.
// Usage: node tests/e2e/dialects.mjs dist
import os from "node:os";
import path from "node:path";
import { serveDist, launch, checker, startAndDownload } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";
import { appDriver, runAgainstTruth } from "./app_run.mjs";
import { decodeChunks } from "./report.mjs";

const dist = process.argv[2] ?? "dist";
const { server: web, url } = await serveDist(dist);
const browser = await launch();
const { check, finish } = checker();
const { fill, newPage } = appDriver(browser, url);

// A tab's TTFT may trail the server's by the loopback transfer, the page's scheduling and
// Playwright's CDP events (attached here: this is a correctness test, the fidelity bench
// measures accuracy without them); it never leads it by more than clock granularity.
const TTFT_TOLERANCE_US = 60_000;
const EARLY_US = 2_000;

const servers = [];
try {
  for (const mode of ["visible", "hidden"]) {
    const ref = await startRefserver(["--reasoning", mode, "--reasoning-tokens", "6..20"]);
    servers.push(ref);
    const base = `http://127.0.0.1:${ref.http}`;
    for (const dialect of ["chat", "responses", "messages", "gemini"]) {
      const at = (what) => `${dialect}, reasoning ${mode}: ${what}`;
      const { page, errors } = await newPage();
      const { report, truths } = await runAgainstTruth(page, base, 2, [1, 6, 1], {
        truthBase: base,
        dialect,
        reasoning: mode,
        output_enforcement: "none",
        output_tokens: "40",
      });
      const resultsText = await page.getByTestId("results").textContent();
      check(errors.length === 0, at(`no page errors (${errors.join("; ")})`));
      check(report.body.config.endpoint.dialect === dialect, at("the report names the dialect"));
      check(report.body.records.length === 8, at(`one record per request (${report.body.records.length})`));
      const step = report.body.summary.steps[0];
      check(step.reasoning != null && step.reasoning.ttfa_us != null, at("the step has reasoning figures with a time to first answer"));
      check(/time to first answer token p50/i.test(resultsText), at("the results' headline shows the time to first answer token"));
      const table = await page.getByTestId("records-table").textContent();
      check(/first answer/.test(table) && (mode === "visible" ? /\d+ tokens, tokens/ : /tokens, hidden/).test(table), at("the requests table shows each request's reasoning and first answer"));
      const byId = new Map(truths.map((t) => [t.response_id, t]));
      let matched = 0;
      for (const r of report.body.records) {
        const t = byId.get(r.response_id);
        const what = at(`request ${r.index} (${r.response_id})`);
        if (!t) { check(false, `${what}: has its server truth`); continue; }
        matched++;
        const chunks = decodeChunks(r.chunks);
        const chunkTokens = chunks.reduce((s, c) => s + c[1], 0);
        const rr = r.reasoning ?? {};
        const ok = r.outcome.kind === "ok" && r.usage?.completion_tokens === t.completion_tokens && r.usage?.prompt_tokens === t.prompt_tokens;
        let tokens;
        if (mode === "visible") {
          tokens = rr.shown === "tokens" && rr.tokens === t.reasoning_tokens && rr.in_chunks === t.reasoning_chunks && chunkTokens === t.completion_tokens;
        } else {
          const counted = dialect === "messages" ? undefined : t.reasoning_tokens; // Anthropic does not count thinking apart
          tokens = rr.shown === "hidden" && rr.in_chunks === 0 && rr.tokens === counted && chunkTokens === t.completion_tokens - t.reasoning_tokens;
        }
        // TTFT of any kind, and the first answer token, against the server's own.
        const firstAny = Math.min(rr.t_first_us ?? Infinity, chunks[0]?.[0] ?? Infinity);
        const ttft = firstAny - r.t_send_us;
        const serverTtft = t.first_token_us - t.received_us;
        const answer = chunks[rr.in_chunks ?? 0];
        const ttfa = answer ? answer[0] - r.t_send_us : NaN;
        const serverTtfa = t.first_answer_us - t.received_us;
        const near = (c, s) => c + EARLY_US >= s && c <= s + TTFT_TOLERANCE_US;
        check(ok && tokens && near(ttft, serverTtft) && near(ttfa, serverTtfa),
          `${what}: outcome ${r.outcome.kind}, usage ${r.usage?.completion_tokens}/${t.completion_tokens}, reasoning ${rr.shown} ${rr.tokens}/${t.reasoning_tokens} in ${rr.in_chunks}/${t.reasoning_chunks} chunks, timed tokens ${chunkTokens}; TTFT ${ttft} vs ${serverTtft} µs, first answer ${ttfa} vs ${serverTtfa} µs`);
        if (mode === "hidden" && dialect !== "messages") {
          // The hidden tokens' time is before the first visible token: TTFT = first answer.
          check(ttft === ttfa, `${what}: hidden reasoning is before the first visible token`);
        }
      }
      check(matched === 8, at(`every request matched to the truth (${matched})`));
      if (mode === "hidden" && dialect !== "messages") {
        check(step.reasoning.untimed_tokens > 0 && step.reasoning.untimed_tokens === step.reasoning.tokens, at(`hidden reasoning never timed (${step.reasoning.untimed_tokens} of ${step.reasoning.tokens})`));
      }
      await page.context().close();
    }
  }

  // Rate limiting: every 3rd request is refused with 429 (Retry-After, rate-limit headers
  // exposed to the page by CORS).
  {
    const ref = await startRefserver(["--fault", "status=429", "--fault-every", "3"]);
    servers.push(ref);
    const base = `http://127.0.0.1:${ref.http}`;
    const { page } = await newPage();
    const { report, truths } = await runAgainstTruth(page, base, 2, [1, 7, 1], { truthBase: base, dialect: "chat", output_enforcement: "ignore_eos" });
    const refused = truths.filter((t) => t.status === 429).length;
    const throttled = report.body.records.filter((r) => r.throttle);
    check(refused >= 2 && throttled.length === refused, `429: every refusal recorded as throttled (${throttled.length} of ${refused})`);
    check(throttled.every((r) => r.throttle.signal === "http_429" && r.throttle.retry_after_ms === 1000 && r.throttle.headers["x-ratelimit-remaining-requests"] === "0"),
      `429: Retry-After and the exposed rate-limit headers kept (${JSON.stringify(throttled[0]?.throttle)})`);
    const verdict = await page.getByTestId("server-verdict").textContent();
    const findings = await page.getByTestId("server-findings").textContent();
    check(/shaped this run/.test(verdict) && findings.includes(`refused or cut ${refused} of 9 requests`), `429: the server verdict says rate limiting shaped the load (${findings.slice(0, 120)})`);
    await page.context().close();
  }

  // A vendor origin is pinned from the vendor table, with no request.
  {
    const { page } = await newPage();
    await fill(page, "endpoint_url", "https://api.anthropic.com");
    await page.getByTestId("probe").click();
    const msg = page.getByTestId("probe-message");
    await msg.filter({ hasText: "Probed" }).waitFor({ timeout: 10000 });
    const text = await msg.textContent();
    check(text.includes("Anthropic (pinbench's vendor table; no request sent)") && text.includes("anthropic-dangerous-direct-browser-access"), `vendor: the probe names the vendor and its CORS rule (${text.slice(0, 160)})`);
    check(await page.getByTestId("pin-dialect").inputValue() === "messages", "vendor: Anthropic picks the Messages API");
    check(await page.getByTestId("pin-model_params").inputValue() === "undisclosed", "vendor: parameter count undisclosed");
    check((await page.getByTestId("source-model_params").textContent()).startsWith("vendor"), "vendor: marked as from the vendor table");
    check(await page.getByTestId("pin-output_enforcement").inputValue() === "none", "vendor: no output-length enforcement");
    await page.context().close();
  }

  // A server that refuses the page's origin: the browser blocks every request; the results
  // say so and give the native command line.
  {
    const ref = await startRefserver(["--allow-origin", "https://elsewhere.example"]);
    servers.push(ref);
    const { page } = await newPage();
    const pins = {
      endpoint_url: `http://127.0.0.1:${ref.http}`, dialect: "chat", model_id: "pinbench-tiny", model_params: "270M",
      model_quant: "bf16", model_engine: "pinbench-ref", max_model_len: "4096", kv_capacity: "16384", max_num_seqs: "16",
      phases: "colocated", scheduling: "continuous", prompt_tokens: "64", prompt_exactness: "approximate", output_tokens: "16",
      output_enforcement: "ignore_eos", stall_timeout_s: "10", nonce_prefix: "on", shared_prefix: "none", turns: "1", temperature: "0", sampling_extra: "{}",
      reasoning: "none", load_mode: "closed", concurrency: "2", warmup: "0", measured: "4", cooldown: "0",
    };
    for (const [k, v] of Object.entries(pins)) await fill(page, k, v);
    await page.getByTestId("all-pinned").waitFor({ timeout: 5000 });
    await startAndDownload(page, path.join(os.tmpdir(), `pinbench-blocked-${process.pid}.json`), 120000);
    const blocked = await page.getByTestId("blocked").textContent();
    check(/4 of 4 requests got no answer/.test(blocked) && blocked.includes("pinbench run --pins <(printf '%s' '{") && blocked.includes("--api-key-env PINBENCH_API_KEY"),
      `blocked: the results say so, with the native command (${blocked.slice(0, 200)}…)`);
    await page.context().close();
  }
} catch (e) {
  check(false, `dialects: ${e.stack ?? e}`);
} finally {
  for (const s of servers) s.stop();
  await browser.close();
  web.close();
}
finish("dialects");
