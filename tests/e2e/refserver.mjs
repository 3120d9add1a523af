// Starts the reference server binary (built by cargo) on free ports; stops it by PID.
import { spawn } from "node:child_process";
import readline from "node:readline";
import path from "node:path";

export function startRefserver(args = []) {
  const target = process.env.CARGO_TARGET_DIR ?? path.resolve("target");
  const bin = path.join(target, "debug", "pinbench-refserver");
  const child = spawn(bin, ["--port", "0", "--tls-port", "0", "--idle-exit-secs", "300", ...args], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout });
    rl.once("line", (line) => {
      const port = (k) => Number(line.match(new RegExp(`${k}=[0-9.]+:(\\d+)`))[1]);
      resolve({ child, http: port("http"), https: port("https"), stop: () => child.kill("SIGTERM") });
    });
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`refserver exited ${code}`)));
  });
}

/**
 * Every pin of a small closed-loop run against reference server `ref` (its tiny model,
 * 64 → 32 tokens at concurrency 4, windows 1 s / 5 s / 1 s), as a pins file holds them;
 * `overrides` replaces any.
 */
export function tinyPins(ref, overrides = {}) {
  return {
    endpoint_url: `http://127.0.0.1:${ref.http}`, dialect: "completions", model_id: "pinbench-tiny", model_params: "100M",
    model_quant: "bf16", model_engine: "pinbench-refserver", prompt_tokens: "64", prompt_exactness: "server_tokenizer",
    output_tokens: "32", output_enforcement: "ignore_eos", load_mode: "closed", concurrency: "4", stall_timeout_s: "30",
    max_model_len: "4096", kv_capacity: "16384", max_num_seqs: "16", phases: "chunked_prefill", scheduling: "continuous",
    warmup: "1s", measured: "5s", cooldown: "1s", nonce_prefix: "on", shared_prefix: "none", turns: "1", temperature: "0", sampling_extra: "{}", reasoning: "none",
    ...overrides,
  };
}
