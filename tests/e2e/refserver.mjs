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
