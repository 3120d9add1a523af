// The command line keeps what it measured: a `pinbench run` killed (SIGKILL) in the middle
// leaves its checkpoint, and `pinbench seal` makes a signed report marked partial of every
// request it completed (each matched to the reference server's truth); an existing report
// is never replaced without --force; a missing key file is an error unless --new-key; an
// API key never goes over plain http to another machine unless --allow-http-key.
// Usage: node tests/e2e/cli_keeps.mjs
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { checker } from "./lib.mjs";
import { startRefserver, tinyPins } from "./refserver.mjs";

const target = process.env.CARGO_TARGET_DIR ?? path.resolve("target");
const bin = path.join(target, "native", "pinbench");
const verifyBin = path.join(target, "debug", "pinbench-verify");
const { check, finish } = checker();
const ref = await startRefserver(["--profile", "tiny"]);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pinbench-cli-"));
const pins = tinyPins(ref, { measured: "30s" });
const p = (f) => path.join(dir, f);
fs.writeFileSync(p("pins.json"), JSON.stringify(pins));
const run = (...args) => spawnSync(bin, ["run", "--pins", p("pins.json"), "--quiet", ...args], { encoding: "utf8" });

try {
  // A missing key file is not silently replaced by a new key.
  const nokey = run("--out", p("r0.json"), "--key", p("typo.json"), "--no-probe");
  check(nokey.status !== 0 && nokey.stderr.includes("--new-key") && !fs.existsSync(p("typo.json")), `a missing key file is an error (${nokey.stderr.trim()})`);
  // An API key over plain http to another machine is refused before anything is sent.
  fs.writeFileSync(p("remote.json"), JSON.stringify({ ...pins, endpoint_url: "http://192.0.2.1:8000" }));
  const remote = spawnSync(bin, ["run", "--pins", p("remote.json"), "--out", p("r1.json"), "--key", p("key.json"), "--new-key", "--api-key-env", "PB_KEY", "--no-probe"], { encoding: "utf8", env: { ...process.env, PB_KEY: "sk-secret" } });
  check(remote.status !== 0 && remote.stderr.includes("--allow-http-key"), `an API key over plain http to another host is refused (${remote.stderr.trim()})`);

  // Kill a run in the middle; its checkpoint holds what completed.
  const since = (await (await fetch(`http://127.0.0.1:${ref.http}/truth`)).json()).reduce((m, t) => Math.max(m, t.id), 0) + 1;
  const child = spawn(bin, ["run", "--pins", p("pins.json"), "--out", p("killed.json"), "--key", p("key.json"), "--new-key", "--quiet"], { stdio: "ignore" });
  const ckpt = p("killed.json.partial.jsonl");
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline && !(fs.existsSync(ckpt) && fs.readFileSync(ckpt, "utf8").split("\n").length > 40)) await new Promise((r) => setTimeout(r, 200));
  child.kill("SIGKILL");
  await new Promise((r) => child.on("exit", r));
  const lines = fs.readFileSync(ckpt, "utf8").trim().split("\n").length - 1;
  check(lines >= 30 && !fs.existsSync(p("killed.json")), `the killed run left ${lines} records in its checkpoint and no report`);
  // A new run to the same place does not overwrite the checkpoint.
  const again = run("--out", p("killed.json"), "--key", p("key.json"));
  check(again.status !== 0 && again.stderr.includes("pinbench seal"), `the checkpoint is not overwritten by a new run (${again.stderr.trim()})`);
  const seal = spawnSync(bin, ["seal", ckpt, "--out", p("partial.json"), "--key", p("key.json")], { encoding: "utf8" });
  check(seal.status === 0, `pinbench seal makes a report (${seal.stderr.trim()})`);
  const report = JSON.parse(fs.readFileSync(p("partial.json"), "utf8"));
  check(report.body.notes.some((n) => n.startsWith("Partial")), "the sealed report is marked partial");
  check(report.body.records.length >= lines, `it holds every checkpointed request (${report.body.records.length} of ${lines})`);
  const truths = (await (await fetch(`http://127.0.0.1:${ref.http}/truth?since=${since}`)).json());
  const ids = new Set(truths.map((t) => `cmpl-${t.id}`));
  const ok = report.body.records.filter((r) => r.outcome.kind === "ok");
  check(ok.length > 0 && ok.every((r) => ids.has(r.response_id)), `each of its ${ok.length} completed requests is one the server served`);
  const v = spawnSync(verifyBin, [p("partial.json")], { encoding: "utf8" });
  check(v.status === 3, `the partial report verifies and recomputes (exit ${v.status})`);
  // Sealing again onto the same report needs --force.
  const reseal = spawnSync(bin, ["seal", ckpt, "--out", p("partial.json"), "--key", p("key.json")], { encoding: "utf8" });
  check(reseal.status !== 0 && reseal.stderr.includes("--force"), `an existing report is not replaced without --force (${reseal.stderr.trim()})`);
  const forced = spawnSync(bin, ["seal", ckpt, "--out", p("partial.json"), "--key", p("key.json"), "--force"], { encoding: "utf8" });
  check(forced.status === 0, "with --force it is");
  const help = spawnSync(bin, ["seal", "--help"], { encoding: "utf8" });
  check(help.status === 0 && help.stdout.includes("partial"), "pinbench seal --help answers");
} finally {
  ref.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
finish("cli keeps");
