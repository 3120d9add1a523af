// Reads a pinbench report in node: decodes the compact chunk timings.
import zlib from "node:zlib";

/** `~` + base64 of varints (current), or base64 of their DEFLATE (first form). */
export function decodeChunks(text) {
  const raw = text.startsWith("~")
    ? Buffer.from(text.slice(1), "base64")
    : zlib.inflateRawSync(Buffer.from(text, "base64"));
  const out = [];
  let pos = 0, t = 0;
  const varint = () => {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = raw[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return Number(v);
      shift += 7n;
    }
  };
  while (pos < raw.length) {
    t += varint();
    out.push([t, varint()]);
  }
  return out;
}

export function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}
