// Load beyond one client: three native runners (as N copies started by a job runner) run
// the same pins against the reference server at the same wall-clock instant, then
// `pinbench merge` makes one signed report. Its aggregate over the window all three were
// measuring is compared with the server's truth over the same window (target within 2%);
// a source with other pins is refused. Usage: node tests/e2e/merge.mjs
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { checker } from "./lib.mjs";
import { startRefserver, tinyPins } from "./refserver.mjs";
import { decodeChunks } from "./report.mjs";

const target = process.env.CARGO_TARGET_DIR ?? path.resolve("target");
const bin = path.join(target, "native", "pinbench");
const { check, finish } = checker();
const ref = await startRefserver(["--profile", "tiny"]);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pinbench-merge-"));
const N = 3;

const pins = tinyPins(ref);
fs.writeFileSync(path.join(dir, "pins.json"), JSON.stringify(pins));
fs.writeFileSync(path.join(dir, "other.json"), JSON.stringify({ ...pins, output_tokens: "16", measured: "2s", warmup: "0", cooldown: "0" }));

function runOne(i, pinsFile, startAt) {
  return new Promise((resolve, reject) => {
    const out = path.join(dir, `client-${i}.json`);
    const p = spawn(bin, ["run", "--pins", pinsFile, "--out", out, "--key", path.join(dir, `key-${i}.json`), "--new-key", "--quiet", "--start-at", String(startAt)], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr.on("data", (d) => { err += d; });
    p.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`client ${i} exited ${code}: ${err}`))));
  });
}

try {
  const since = (await (await fetch(`http://127.0.0.1:${ref.http}/truth`)).json()).reduce((m, t) => Math.max(m, t.id), 0) + 1;
  const startAt = Date.now() + 2000;
  const files = await Promise.all([...Array(N).keys()].map((i) => runOne(i, path.join(dir, "pins.json"), startAt)));
  const merged = path.join(dir, "merged.json");
  const keyId = (i) => JSON.parse(fs.readFileSync(path.join(dir, `key-${i}.json`), "utf8")).key_id;
  const trust = [...Array(N).keys()].flatMap((i) => ["--trust", keyId(i)]);
  const mergeArgs = (out, ...more) => ["merge", "--out", path.join(dir, out), "--key", path.join(dir, "merger.json"), "--new-key", ...more];
  // Untrusted signers are refused unless asked for.
  const untrusted = spawnSync(bin, mergeArgs("u.json", "--trust", keyId(0), ...files), { encoding: "utf8" });
  check(untrusted.status !== 0 && untrusted.stderr.includes("not trusted"), `a source signed by a key not trusted is refused (${untrusted.stderr.trim().split("\n")[0]})`);
  // The same report twice, and a copy of it, cannot be merged (they would double its load and tokens).
  fs.copyFileSync(files[0], path.join(dir, "copy.json"));
  for (const [what, pair] of [["itself", [files[0], files[0]]], ["a copy of it", [files[0], path.join(dir, "copy.json")]]]) {
    const r = spawnSync(bin, mergeArgs("dup.json", ...trust, ...pair), { encoding: "utf8" });
    check(r.status !== 0 && r.stderr.includes("the same report"), `a report merged with ${what} is refused (${r.stderr.trim().split("\n")[0]})`);
  }
  const m = spawnSync(bin, mergeArgs("merged.json", ...trust, ...files), { encoding: "utf8" });
  check(m.status === 0, `pinbench merge succeeds (${m.stderr.trim()})`);
  const report = JSON.parse(fs.readFileSync(merged, "utf8"));
  const info = report.body.merged;
  check(info.sources.length === N && info.sources.every((s) => s.digest.startsWith("sha256:") && s.key_id.startsWith("ed25519:")), "the merged report lists each source's digest and key id");
  check(report.signature && report.signature.key_id !== info.sources[0].key_id, "the merged report is signed by the merger");
  check(report.body.config.load.value.steps[0].concurrency === 4 * N, `the merged load is the sum (c=${report.body.config.load.value.steps[0].concurrency})`);
  const verify = spawnSync(path.join(target, "debug", "pinbench-verify"), [merged], { encoding: "utf8" });
  check(verify.status === 3 || verify.status === 0, `the merged report verifies and recomputes (pinbench-verify exit ${verify.status})`);
  const sourceLines = verify.stdout.split("\n").filter((l) => l.includes(": source client-"));
  check(sourceLines.length === N && sourceLines.every((l) => l.includes("signature valid")) && verify.stdout.includes("re-verify and merge again"), `pinbench-verify re-verifies every source and merges them again:\n${sourceLines.join("\n")}`);
  // A merged report whose kept source was altered (one record dropped, then the merged
  // report re-signed by whoever altered it) fails verification.
  const forged = JSON.parse(fs.readFileSync(merged, "utf8"));
  forged.body.merged.sources[1].document.body.records.pop();
  fs.writeFileSync(path.join(dir, "forged.json"), JSON.stringify(forged));
  const fv = spawnSync(path.join(target, "debug", "pinbench-verify"), [path.join(dir, "forged.json")], { encoding: "utf8" });
  check(fv.status === 1 && fv.stdout.includes("MERGE source client-1.json"), `a merged report with an altered source fails verification (exit ${fv.status})`);
  // A report holding a record twice fails verification.
  const dup = JSON.parse(fs.readFileSync(files[0], "utf8"));
  dup.body.records.push(dup.body.records[0]);
  fs.writeFileSync(path.join(dir, "dup-records.json"), JSON.stringify(dup));
  const dv = spawnSync(path.join(target, "debug", "pinbench-verify"), [path.join(dir, "dup-records.json")], { encoding: "utf8" });
  check(dv.status === 1 && dv.stdout.includes("DUPLICATE"), `a report with a duplicate record fails verification (exit ${dv.status})`);

  // The server's truth over the same window: map the server's clock onto the merged one
  // by the median offset of first tokens (client receipt − server emission).
  const truths = (await (await fetch(`http://127.0.0.1:${ref.http}/truth?since=${since}`)).json());
  const byId = new Map(truths.map((t) => [`cmpl-${t.id}`, t]));
  const offsets = [];
  for (const r of report.body.records) {
    const t = byId.get(r.response_id);
    const c = decodeChunks(r.chunks);
    if (t && c.length && t.chunks.length) offsets.push(c[0][0] - t.chunks[0][0]);
  }
  offsets.sort((a, b) => a - b);
  const off = offsets[Math.floor(offsets.length / 2)];
  const [a, b] = info.common_us;
  let serverTokens = 0;
  for (const t of truths) for (const [emit, n] of t.chunks) if (emit + off >= a && emit + off < b) serverTokens += n;
  const truth = serverTokens / ((b - a) / 1e6);
  const client = info.common_aggregate_output_milli / 1000;
  const err = Math.abs(client - truth) / truth;
  console.log(`merged: ${N} clients x c=4, common window ${((b - a) / 1e6).toFixed(3)} s; aggregate ${client.toFixed(1)} tok/s vs server truth ${truth.toFixed(1)} tok/s (${(err * 100).toFixed(2)}%); ${offsets.length} requests matched`);
  check(offsets.length === report.body.records.filter((r) => r.outcome.kind === "ok").length, "every merged record has its server truth");
  check(err <= 0.02, `the merged aggregate matches the server's truth within 2% (${(err * 100).toFixed(2)}%)`);

  // Refusals: other pins, or a window that does not overlap.
  const other = await runOne(9, path.join(dir, "other.json"), Date.now());
  const bad = spawnSync(bin, mergeArgs("bad.json", "--any-signer", files[0], other), { encoding: "utf8" });
  check(bad.status !== 0 && bad.stderr.includes("pins differ"), `a source with other pins is refused (${bad.stderr.trim().split("\n")[0]})`);
} finally {
  ref.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
finish("merge");
