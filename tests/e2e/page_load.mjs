// Loads the release build in headless Chromium and fails on any console error, page error
// or failed request; checks the shell renders, navigates, and the page is cross-origin
// isolated. Usage: node tests/e2e/page_load.mjs dist
import { serveDist, launch, watchErrors } from "./lib.mjs";

const root = process.argv[2] ?? "dist";
const { server, url } = await serveDist(root);
const browser = await launch();
let failed = false;
try {
  const page = await browser.newPage();
  const errors = watchErrors(page);
  const t0 = Date.now();
  await page.goto(url, { waitUntil: "load" });
  await page.getByTestId("app-title").waitFor({ timeout: 15000 });
  const loadMs = Date.now() - t0;
  const title = await page.getByTestId("app-title").textContent();
  if (title !== "pinbench") throw new Error(`title is ${JSON.stringify(title)}`);
  for (const id of ["run", "reports", "compare"]) {
    await page.getByTestId(`nav-${id}`).click();
    const section = await page.getByTestId("section-title").textContent();
    if (section.toLowerCase() !== id) throw new Error(`nav-${id} shows ${section}`);
  }
  const isolated = await page.evaluate(() => self.crossOriginIsolated);
  if (!isolated) throw new Error("page is not cross-origin isolated");
  await page.waitForTimeout(300);
  if (errors.length) throw new Error(`errors while loading:\n${errors.join("\n")}`);
  console.log(`page load ok: shell rendered in ${loadMs} ms, nav works, crossOriginIsolated=${isolated}, 0 console errors`);
} catch (e) {
  failed = true;
  console.error(`page load FAILED: ${e.message}`);
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
