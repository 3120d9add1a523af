// End-to-end: the pin gate, probing, a closed-loop run against the reference server over
// HTTP/2 at c = 1, 8 and 32 compared with the server's truth, the HTTP/1.1 connection cap,
// and the signed report download verified natively. Usage: node tests/e2e/run_flow.mjs dist
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { serveDist, launch, checker } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";
import { appDriver, runAgainstTruth, truthErrors } from "./app_run.mjs";

const dist = process.argv[2] ?? "dist";
const target = process.env.CARGO_TARGET_DIR ?? path.resolve("target");
const verifyBin = path.join(target, "debug", "pinbench-verify");
const { server: web, url } = await serveDist(dist);
const refCert = path.join(os.tmpdir(), `pinbench-runflow-${process.pid}.der`);
const ref = await startRefserver(["--cert-out", refCert]);
const cliBin = path.join(target, "native", "pinbench");
const browser = await launch(["--ignore-certificate-errors"]);
const { check, failures, finish } = checker();
// Accuracy here is measured with Playwright attached, whose CDP network events inflate the
// browser's timing error 3-5x at c >= 8: these lines are printed against the first targets,
// not asserted. The fidelity bench (tests/e2e/fidelity_bench.mjs, no automation attached)
// asserts the accuracy targets.
const measured = [];
const measure = (ok, msg) => { measured.push(`${ok ? "met    " : "NOT MET"} ${msg}`); console.log(`${ok ? "met    " : "NOT MET"} ${msg}`); };

const { fill, newPage, pinRun } = appDriver(browser, url);
const runOnce = (page, base, c, counts, extra = {}) =>
  runAgainstTruth(page, base, c, counts, { truthBase: `http://127.0.0.1:${ref.http}`, ...extra });

function compare(report, truths, label) {
  const e = truthErrors(report, truths);
  check(e.unmatched === 0, `${label}: every client record has its server truth (${e.records} records)`);
  console.log(`${label}: TTFT |client-server| p99 ${(e.ttft.p99 / 1000).toFixed(2)} ms; gap |client-server| p99 ${(e.gap.p99 / 1000).toFixed(2)} ms; aggregate client ${e.aggClient.toFixed(0)} vs server ${e.aggServer.toFixed(0)} tok/s`);
  measure(e.ttft.p99 <= 2000, `${label}: per-request TTFT difference p99 ${e.ttft.p99} µs (target <= 2000 µs)`);
  measure(e.gap.p99 <= 1000, `${label}: inter-chunk gap difference p99 ${e.gap.p99} µs (target <= 1000 µs)`);
  measure(Math.abs(e.aggClient - e.aggServer) / e.aggServer <= 0.02, `${label}: aggregate tok/s client ${e.aggClient.toFixed(0)} vs server ${e.aggServer.toFixed(0)} (target within 2%)`);
  check(e.exact && e.tokensClient === e.tokensServer, `${label}: output token counts exact (${e.tokensClient} vs ${e.tokensServer})`);
}

try {
  // Pin gate.
  {
    const { page, errors } = await newPage();
    check(await page.getByTestId("start").isDisabled(), "gate: Start is disabled on an empty form");
    for (const f of ["model_id", "prompt_tokens", "kv_capacity", "max_num_seqs", "scheduling"]) {
      check(await page.getByTestId(`missing-${f}`).count() === 1, `gate: checklist names ${f}`);
    }
    await page.getByTestId("missing-kv_capacity").getByRole("link").click();
    const focused = await page.evaluate(() => document.activeElement?.id);
    check(focused === "pin-kv_capacity", `gate: a checklist link moves the focus to its field (${focused})`);
    await fill(page, "endpoint_url", `https://127.0.0.1:${ref.https}`);
    await page.getByTestId("probe").click();
    await page.getByTestId("probe-message").filter({ hasText: "Probed" }).waitFor({ timeout: 10000 });
    check(await page.getByTestId("pin-model_id").inputValue() === "pinbench-tiny", "probe: fills the model id");
    check((await page.getByTestId("source-model_id").textContent()).startsWith("probed"), "probe: model id marked probed");
    check(await page.getByTestId("pin-kv_capacity").inputValue() === "16384", "probe: fills the KV capacity");
    check((await page.getByTestId("source-kv_capacity").textContent()).startsWith("probed"), "probe: KV capacity marked probed");
    // `pinbench probe` reads the same endpoint through the core's lifecycle: every pin it
    // fills is in the tab's form with the same value and the same source.
    const cli = JSON.parse(execFileSync(cliBin, ["probe", "--json", `https://127.0.0.1:${ref.https}`, "--ca-cert", refCert], { encoding: "utf8" }));
    check(cli.engine === "pinbench-ref" && cli.fills.length === 10, `pinbench probe: recognises the engine (${cli.engine}) and fills ${cli.fills.length} pins`);
    for (const f of cli.fills) {
      const value = await page.getByTestId(`pin-${f.field}`).inputValue();
      const title = await page.getByTestId(`source-${f.field}`).getAttribute("title");
      const want = `read from ${f.provenance.url} (${f.provenance.field})`;
      check(value === f.text && title === want, `pinbench probe and the tab's Probe agree on ${f.field}: ${f.text} (${want}) vs the tab's ${value} (${title})`);
    }
    check(await page.getByTestId("start").isDisabled(), "gate: still disabled while workload pins are missing");
    // API key: memory only unless "remember" is ticked.
    await page.getByTestId("api-key").fill("sk-remember-me");
    await page.reload();
    check(await page.getByTestId("api-key").inputValue() === "", "api key: not kept across a reload by default");
    await fill(page, "endpoint_url", `https://127.0.0.1:${ref.https}`);
    await page.getByTestId("api-key").fill("sk-remember-me");
    await page.getByTestId("remember-key").check();
    await page.reload();
    check(await page.getByTestId("api-key").inputValue() === "", "api key: a remembered key is not filled in for another endpoint");
    await fill(page, "endpoint_url", `https://127.0.0.1:${ref.https}`);
    check(await page.getByTestId("api-key").inputValue() === "sk-remember-me", "api key: kept when remember is ticked, for the endpoint it was entered for");
    await page.getByTestId("remember-key").uncheck();
    await page.reload();
    await fill(page, "endpoint_url", `https://127.0.0.1:${ref.https}`);
    check(await page.getByTestId("api-key").inputValue() === "", "api key: forgotten when remember is unticked");
    // Signing key: import the fixture's test key (secret = 32 bytes of 0x42) and see its fingerprint.
    const fixtureKeyId = JSON.parse(fs.readFileSync("tests/fixtures/report_signed.json", "utf8")).signature.key_id;
    check(!(await page.getByTestId("key-id").textContent()).includes(fixtureKeyId), "key: a fresh browser has its own key");
    await page.getByTestId("key-import").fill(Buffer.alloc(32, 0x42).toString("base64"));
    await page.getByTestId("key-import-button").click();
    await page.getByTestId("key-message").filter({ hasText: "imported" }).waitFor({ timeout: 5000 });
    check((await page.getByTestId("key-id").textContent()).includes(fixtureKeyId), `key: imported key shows its fingerprint ${fixtureKeyId}`);
    const [keyFile] = await Promise.all([page.waitForEvent("download"), page.getByTestId("key-export").click()]);
    const exported = JSON.parse(fs.readFileSync(await keyFile.path(), "utf8"));
    check(exported.key_id === fixtureKeyId && exported.secret_key === Buffer.alloc(32, 0x42).toString("base64"), "key: export returns the same key");
    check(errors.length === 0, `gate: no console errors (${errors.join("; ")})`);
  }
  // Accuracy against the truth, over HTTP/2.
  for (const c of [1, 8, 32]) {
    const { page } = await newPage();
    const { file, report, truths } = await runOnce(page, `https://127.0.0.1:${ref.https}`, c, [c, 4 * c, c]);
    compare(report, truths, `h2 c=${c}`);
    check((await page.getByTestId("ttft-split").textContent()).includes("requestStart → responseStart"), `h2 c=${c}: results split TTFT into browser, wire+server and delivery parts`);
    const probes = report.body.probes;
    check(probes.length >= 1 && probes[0].url.endsWith("/v1/models") && probes[0].status === 200 && probes[0].body.includes("pinbench-tiny"), `h2 c=${c}: the report keeps what the probe read (${probes.map((p) => p.url).join(", ")})`);
    const protos = report.body.client.protocols;
    check(protos.h2 > 0, `h2 c=${c}: requests went over h2 (${JSON.stringify(protos)})`);
    check(report.body.client.env.host === "worker", `h2 c=${c}: measured in the dedicated Web Worker (${report.body.client.env.host})`);
    if (c === 32) {
      const lag = await page.getByTestId("page-lag").textContent();
      const p99 = Number(/p99 ([0-9.]+) ms/.exec(lag)?.[1] ?? NaN);
      // Measured under Playwright, whose CDP instrumentation of the worker's requests runs on
      // the page; the fidelity bench asserts it with no automation attached.
      measure(p99 < 20, `h2 c=32: the page's event-loop lag during the run p99 ${p99} ms (target under 20 ms; ${lag})`);
    }
    if (c === 8) {
      // Shareable link: carries every pin, never the API key.
      await page.getByTestId("api-key").fill("sk-test-secret");
      const link = await page.getByTestId("share-link").inputValue();
      check(!link.includes("sk-test-secret"), "share link: never carries the API key");
      const { page: shared } = await newPage();
      await shared.goto(link);
      await shared.reload();
      await shared.getByTestId("all-pinned").waitFor({ timeout: 5000 });
      check(await shared.getByTestId("pin-concurrency").inputValue() === "8", "share link: opens with every pin set (concurrency 8)");
      check(await shared.getByTestId("api-key").inputValue() === "", "share link: the API key field stays empty");
      const signer = JSON.parse(fs.readFileSync(file, "utf8")).signature.public_key;
      let unknownStatus = 0;
      try { execFileSync(verifyBin, [file]); } catch (e) { unknownStatus = e.status; }
      check(unknownStatus === 3, `signature: an untrusted signer exits 3 (got ${unknownStatus})`);
      const out = execFileSync(verifyBin, ["--trust", signer, file]).toString();
      check(out.includes("trusted signer"), "signature: downloaded report verifies natively with its key trusted");
      // Change the first digit of the first send time (one byte).
      const text = fs.readFileSync(file, "utf8").replace(/"t_send_us":(\d)/, (m, d) => `"t_send_us":${(Number(d) % 9) + 1}`);
      fs.writeFileSync(file, text);
      let failed = false;
      try { execFileSync(verifyBin, ["--trust", signer, file]); } catch { failed = true; }
      check(failed, "signature: one changed byte fails verification");
    }
    fs.rmSync(file, { force: true });
  }
  // HTTP/1.1 connection cap.
  {
    const { page } = await newPage();
    const { report } = await runOnce(page, `http://127.0.0.1:${ref.http}`, 16, [0, 32, 0]);
    const s = report.body.summary.steps[0];
    console.log(`http/1.1 c=16: achieved max ${s.concurrency.achieved_max}, mean ${s.concurrency.achieved_mean_milli / 1000}; findings: ${report.body.client.findings[0]}`);
    check(s.concurrency.achieved_max === 6, `http/1.1 c=16: achieved concurrency max ${s.concurrency.achieved_max} on the wire (6 connections)`);
    check(s.concurrency.achieved_mean_milli < 8000, `http/1.1 c=16: achieved mean concurrency ${s.concurrency.achieved_mean_milli / 1000} is far below the target 16`);
    check(report.body.client.invalid && report.body.client.findings.some((f) => f.includes("client")), "http/1.1 c=16: report names the client as the limit");
  }
  // Stop: the requests in flight are aborted (the server sees its streams end early), and
  // the report keeps them as `aborted` beside the ones that completed.
  {
    const { page } = await newPage();
    await pinRun(page, `https://127.0.0.1:${ref.https}`, 4, [0, 40, 0], { output_tokens: "1500" });
    const since = (await (await fetch(`http://127.0.0.1:${ref.http}/truth`)).json()).reduce((m, t) => Math.max(m, t.id), 0) + 1;
    await page.getByTestId("start").click();
    await page.waitForFunction(() => /completed [1-9]/.test(document.querySelector('[data-testid="live"]')?.textContent ?? ""), null, { polling: 250, timeout: 60000 });
    await page.getByTestId("stop").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') !== null, null, { polling: 250, timeout: 30000 });
    const [dl] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-report").click()]);
    const stopped = JSON.parse(fs.readFileSync(await dl.path(), "utf8"));
    const kinds = {};
    for (const r of stopped.body.records) kinds[r.outcome.kind] = (kinds[r.outcome.kind] ?? 0) + 1;
    check((kinds.aborted ?? 0) >= 1 && (kinds.ok ?? 0) >= 1 && stopped.body.records.length < 40, `stop: the report keeps completed and aborted requests, and no more were sent (${JSON.stringify(kinds)})`);
    check(!(await page.getByTestId("start").isDisabled()), "stop: Start is enabled again");
    const truths = await (await fetch(`http://127.0.0.1:${ref.http}/truth?since=${since}`)).json();
    const cut = truths.filter((t) => t.completion_tokens < 1500);
    check(cut.length >= 1 && cut.length <= (kinds.aborted ?? 0), `stop: the server saw ${cut.length} stream(s) end before 1500 tokens (${kinds.aborted ?? 0} aborted)`);
  }
  // A sweep (closed loop c = 1, 4) and an open loop (Poisson 40 req/s, cap 8, 1 s measured).
  {
    const { page } = await newPage();
    // Goodput SLOs: a generous TTFT limit every request meets, and an impossible TPOT one.
    await page.getByTestId("slo-ttft").fill("10000");
    const { report } = await runOnce(page, `https://127.0.0.1:${ref.https}`, "1,4", [2, 8, 0]);
    const steps = report.body.summary.steps;
    const g = steps.map((x) => x.goodput);
    check(g.every((x) => x && x.slo.ttft_us === 10000000 && x.met === x.judged && x.judged === 8), `goodput: the TTFT SLO is in the report and every measured request meets it (${JSON.stringify(g.map((x) => x && [x.met, x.judged]))})`);
    check(await page.getByTestId("result-charts").locator("svg").count() >= 8, "results: charts are drawn under the table");
    check(steps.length === 2 && steps[0].load.concurrency === 1 && steps[1].load.concurrency === 4, `sweep: one report with a step per concurrency (${steps.map((x) => JSON.stringify(x.load)).join(", ")})`);
    const agg = steps.map((x) => x.windows.measured.aggregate_output_milli / 1000);
    check(agg[1] > agg[0], `sweep: aggregate tok/s rises from c=1 to c=4 (${agg.map((a) => a.toFixed(0)).join(" → ")})`);
    check(report.body.records.length === 20, `sweep: 10 requests per step (${report.body.records.length})`);
  }
  {
    const { page } = await newPage();
    const { report } = await runOnce(page, `https://127.0.0.1:${ref.https}`, 1, ["0", "1s", "0"], { load_mode: "open", rate_rps: "40", arrival: "poisson", in_flight_cap: "8" });
    const st = report.body.summary.steps[0];
    const n = st.requests.measured;
    check(st.load.kind === "open" && n >= 20 && n <= 65, `open loop: ${n} requests dispatched in a 1 s window at 40 req/s (Poisson)`);
    check(st.requests.measured_ok === n, `open loop: all ${n} completed`);
  }
  // Coordinated omission: an open loop whose in-flight cap binds (40 req/s offered, cap 1,
  // ~60 ms requests, so at most ~17 req/s are served) keeps each arrival's intended time
  // and says so.
  {
    const { page } = await newPage();
    const { report } = await runOnce(page, `https://127.0.0.1:${ref.https}`, 1, ["0", "2s", "0"], { load_mode: "open", rate_rps: "40", arrival: "poisson", in_flight_cap: "1" });
    const o = report.body.summary.steps[0].open_loop;
    console.log(`open loop, cap binding: ${JSON.stringify(o)}`);
    check(o && o.offered_rate_milli === 40000 && o.held_by_cap > 0 && o.achieved_rate_milli < 30000, `open loop, cap binding: offered 40 req/s, achieved ${o && o.achieved_rate_milli / 1000} req/s, ${o && o.held_by_cap} of ${o && o.arrivals} held back`);
    check(o && o.ttft_from_arrival_us.p50 > report.body.summary.steps[0].ttft_us.p50, "open loop, cap binding: TTFT from the intended arrival exceeds TTFT from the send");
    check(report.body.client.invalid && report.body.client.findings.some((f) => f.includes("held back") && f.includes("offered 40 req/s")), "open loop, cap binding: the client verdict says the cap held arrivals back");
    const shown = await page.getByTestId("open-loop").first().textContent();
    check(shown.includes("offered 40 req/s") && shown.includes("held back"), `open loop, cap binding: results show offered vs achieved (${shown})`);
    check(report.body.records.every((r) => r.t_intended_us !== undefined && r.t_intended_us <= r.t_send_us), "open loop: every record keeps its intended arrival time");
  }
  // A run survives the UI: switch to Reports and Compare during the run and back.
  {
    const { page, errors } = await newPage();
    await pinRun(page, `https://127.0.0.1:${ref.https}`, 4, ["0", "3s", "0"]);
    await page.getByTestId("start").click();
    await page.waitForTimeout(500);
    await page.getByTestId("nav-reports").click();
    await page.waitForTimeout(1000);
    await page.getByTestId("nav-compare").click();
    await page.waitForTimeout(1000);
    await page.getByTestId("nav-run").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="download-report"]') !== null, null, { polling: 500, timeout: 60000 });
    await page.getByTestId("nav-reports").click();
    await page.getByTestId("nav-run").click();
    // A finished report not downloaded survives a reload (the page asks before leaving).
    const dialogs = [];
    page.on("dialog", (d) => { dialogs.push(d.type()); d.accept(); });
    await page.reload();
    await page.getByTestId("download-report").waitFor({ timeout: 10000 });
    check(dialogs.includes("beforeunload"), `finished run: leaving with the report not downloaded asks first (${dialogs.join(", ")})`);
    const note = await page.getByTestId("storage-note").textContent();
    check(note.includes("not been downloaded"), `finished run: after a reload the report is back (${note})`);
    const [dl] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download-report").click()]);
    const rep = JSON.parse(fs.readFileSync(await dl.path(), "utf8"));
    check(rep.body.records.length > 0 && rep.body.records.every((r) => r.outcome.kind === "ok"), `switching screens: the run completed (${rep.body.records.length} requests) and its report downloads after going back and forth`);
    check(rep.body.client.env.host === "worker", `switching screens: measured in the dedicated worker (${rep.body.client.env.host})`);
    check(errors.length === 0, `switching screens: no console errors (${errors.join("; ")})`);
    // Downloaded, it is no longer kept: a reload shows no report.
    await page.waitForTimeout(500);
    await page.reload();
    await page.getByTestId("start").waitFor();
    await page.waitForTimeout(1000);
    check(await page.getByTestId("download-report").count() === 0, "finished run: once downloaded, the report is not kept");
  }
  // A closed tab keeps its completed requests: reopening offers a signed report of them.
  {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, acceptDownloads: true });
    const { page } = await newPage(ctx);
    await pinRun(page, `https://127.0.0.1:${ref.https}`, 2, [0, 400, 0]);
    await page.getByTestId("start").click();
    await page.waitForFunction(() => /completed ([0-9]+)/.exec(document.querySelector('[data-testid="live"]')?.textContent ?? "")?.[1] >= 6, null, { polling: 500, timeout: 60000 });
    const seen = Number(/completed ([0-9]+)/.exec(await page.getByTestId("live").textContent())[1]);
    // The worker hands completed records to the page's checkpoint every second.
    await page.waitForTimeout(1500);
    // Its parts are stored gzip-compressed (bytes), its head as text.
    const stored = await page.evaluate(() => new Promise((resolve, reject) => {
      const r = indexedDB.open("pinbench");
      r.onerror = () => reject(r.error);
      r.onsuccess = () => {
        const s = r.result.transaction("checkpoints", "readonly").objectStore("checkpoints");
        const keys = s.getAllKeys(), values = s.getAll();
        values.onsuccess = () => {
          const kind = (x) => typeof x === "string" ? "text" : (x instanceof Uint8Array && x[0] === 0x1f && x[1] === 0x8b) ? "gzip" : "other";
          resolve(keys.result.map((k, i) => [String(k), kind(values.result[i])]));
          r.result.close();
        };
      };
    }));
    const parts = stored.filter(([k]) => k.includes("#")), heads = stored.filter(([k]) => !k.includes("#"));
    check(parts.length > 0 && parts.every(([, f]) => f === "gzip") && heads.length === 1 && heads[0][1] === "text", `a run's checkpoint: its parts gzip-compressed, its head text (${stored.map(([k, f]) => `${k.slice(-9)} ${f}`).join(", ")})`);
    // A second tab sees the run as live there, not as interrupted.
    const { page: second } = await newPage(ctx);
    await second.getByTestId("run-live-elsewhere").waitFor({ timeout: 5000 });
    check(await second.getByTestId("interrupted-run").count() === 0, `second tab: the live run is shown as going in another tab, not interrupted (${await second.getByTestId("run-live-elsewhere").textContent()})`);
    await second.close();
    const dialogs = [];
    page.on("dialog", (d) => { dialogs.push(d.type()); d.accept(); });
    await page.close({ runBeforeUnload: true });
    await page.waitForEvent("close", { timeout: 5000 }).catch(() => {});
    check(dialogs.includes("beforeunload"), `closed tab: closing during a run asks first (${dialogs.join(", ")})`);
    const { page: again } = await newPage(ctx);
    await again.getByTestId("interrupted-run").waitFor({ timeout: 5000 });
    const banner = await again.getByTestId("interrupted-run").textContent();
    const kept = Number(/: ([0-9]+) completed requests were kept/.exec(banner)?.[1] ?? -1);
    check(kept >= seen && kept < 400, `closed tab: reopening offers the ${kept} completed requests (≥ ${seen} seen before closing)`);
    const inLocalStorage = await again.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("pinbench.checkpoint.")).length);
    check(inLocalStorage === 0, `closed tab: the checkpoint is in IndexedDB, not localStorage (${inLocalStorage} localStorage items)`);
    await again.getByTestId("interrupted-report").click();
    await again.getByTestId("download-report").waitFor();
    const [dl] = await Promise.all([again.waitForEvent("download"), again.getByTestId("download-report").click()]);
    const file = path.join(os.tmpdir(), `pinbench-e2e-${process.pid}-interrupted.json`);
    await dl.saveAs(file);
    const rep = JSON.parse(fs.readFileSync(file, "utf8"));
    check(rep.body.records.length === kept && rep.body.notes?.[0]?.startsWith("Partial"), `closed tab: the report holds the ${rep.body.records.length} kept requests and says it was interrupted`);
    let verified = false;
    try { verified = execFileSync(verifyBin, ["--trust", rep.signature.public_key, file]).toString().includes("trusted signer"); } catch { verified = false; }
    check(verified, "closed tab: the interrupted run's report verifies natively");
    check(await again.getByTestId("interrupted-run").count() === 0, "closed tab: the checkpoint is gone once used");
    await ctx.close();
  }
  // Faults: every 3rd request gets, in turn, a 429, a reset after 3 tokens, a 3 s stall.
  {
    const faulty = await startRefserver(["--fault", "status=429", "--fault", "reset_after=3", "--fault", "stall_ms=3000@2", "--fault-every", "3"]);
    try {
      const { page } = await newPage();
      const { report } = await runOnce(page, `https://127.0.0.1:${faulty.https}`, 4, [0, 24, 0], { stall_timeout_s: "1", truthBase: `http://127.0.0.1:${faulty.http}` });
      const errs = report.body.summary.steps[0].errors_by_kind;
      console.log(`faults: errors by kind ${JSON.stringify(errs)}`);
      check(errs.http_429 === 3, `faults: three 429s in the report (${errs.http_429})`);
      check(errs.network === 3, `faults: three resets in the report as network errors (${errs.network})`);
      check(errs.stalled === 2, `faults: two stalls in the report (${errs.stalled})`);
      check(report.body.records.length === 24, `faults: the run completed all 24 requests (${report.body.records.length})`);
    } finally {
      faulty.stop();
    }
  }
} catch (e) {
  failures.push(String(e.stack ?? e));
  console.error(e);
} finally {
  await browser.close();
  web.close();
  ref.stop();
}
console.log(`\naccuracy against the reference server's truth:\n${measured.join("\n")}`);
finish("run flow");
