// Measurement, not a test: where the page's main thread spends a run. Samples a CPU
// profile (Chrome DevTools Protocol) while the app runs a closed loop at c against the
// reference server (tiny profile, h2), and prints self time by function: "(program)" is
// Chromium's own native work, "(idle)" is idle, wasm-function[...] is pinbench's core.
// Usage: node tests/e2e/profile_run.mjs [c]   (needs dist/ and the debug refserver)
import { serveDist, launch } from "./lib.mjs";
import { startRefserver } from "./refserver.mjs";
import { appDriver, pinRun } from "./app_run.mjs";
const { server: web, url } = await serveDist("dist");
const ref = await startRefserver();
const browser = await launch(["--ignore-certificate-errors"]);
const { newPage } = appDriver(browser, url);
const c = Number(process.argv[2] ?? 8);
try {
  const { page } = await newPage();
  await pinRun(page, `https://127.0.0.1:${ref.https}`, c, [c, 8 * c, c]);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
  await cdp.send("Profiler.start");
  await page.getByTestId("start").click();
  await page.waitForFunction((n) => Number(/completed ([0-9]+)/.exec(document.querySelector('[data-testid="live"]')?.textContent ?? "")?.[1]) >= n, 10 * c, { polling: 500, timeout: 300000 });
  const { profile } = await cdp.send("Profiler.stop");
  const self = new Map();
  const dt = (profile.endTime - profile.startTime) / profile.samples.length;
  const counts = new Map();
  for (const s of profile.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  let total = 0;
  for (const n of profile.nodes) {
    const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").pop()}`;
    const t = (counts.get(n.id) ?? 0) * dt / 1000;
    total += t;
    self.set(k, (self.get(k) ?? 0) + t);
  }
  console.log(`total sampled ${total.toFixed(0)} ms over ${((profile.endTime - profile.startTime) / 1000).toFixed(0)} ms`);
  [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25).forEach(([k, v]) => console.log(v.toFixed(1).padStart(8), k));
} finally {
  await browser.close(); web.close(); ref.stop();
}
