// The vendors' official SDKs (npm `openai`, `@anthropic-ai/sdk`, `@google/genai`, pinned in
// package.json) stream from the reference server in each dialect — OpenAI chat
// completions and Responses, Anthropic Messages, Gemini — with the server emulating a
// reasoning model shown and hidden: each SDK must read the answer text, the reasoning
// text and the usage that the server's truth says it sent. This proves the reference
// server speaks each wire format as the vendors' own clients expect it.
// Usage: node tests/e2e/sdks.mjs
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { startRefserver } from "./refserver.mjs";

const failures = [];
const check = (ok, msg) => { console.log(`${ok ? "ok  " : "FAIL"} ${msg}`); if (!ok) failures.push(msg); };
const MODEL = "pinbench-tiny";
const PROMPT = "Say something about the sea.";

async function truthOf(ref, id) {
  const all = await (await fetch(`http://127.0.0.1:${ref.http}/truth`)).json();
  const t = all.find((x) => x.response_id === id);
  if (!t) throw new Error(`no truth for ${id}`);
  return t;
}

/** Compares what an SDK read with the truth of its response. */
function compare(label, got, t, counts) {
  check(got.text === t.text, `${label}: answer text (${got.text.length} chars) equals the server's (${t.text.length})`);
  check(got.reasoning === t.reasoning_text, `${label}: reasoning text (${got.reasoning.length} chars) equals the server's (${t.reasoning_text.length})`);
  for (const [k, v] of Object.entries(counts)) check(v === t[k], `${label}: ${k} ${v} equals the server's ${t[k]}`);
}

async function run(mode) {
  const ref = await startRefserver(["--reasoning", mode, "--reasoning-tokens", "5..9"]);
  const base = `http://127.0.0.1:${ref.http}`;
  const visible = mode === "visible";
  try {
    // OpenAI chat completions (reasoning as vLLM's `reasoning_content`).
    {
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "test-key", maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: PROMPT }], max_completion_tokens: 40, stream: true, stream_options: { include_usage: true } });
      const got = { text: "", reasoning: "" }; let id = null, usage = null;
      for await (const c of stream) {
        id ??= c.id;
        const d = c.choices?.[0]?.delta ?? {};
        got.text += d.content ?? ""; got.reasoning += d.reasoning_content ?? "";
        if (c.usage) usage = c.usage;
      }
      const t = await truthOf(ref, id);
      compare(`openai chat, reasoning ${mode}`, got, t, { completion_tokens: usage.completion_tokens, prompt_tokens: usage.prompt_tokens, reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 });
    }
    // OpenAI Responses.
    {
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: "test-key", maxRetries: 0 });
      const stream = await client.responses.create({ model: MODEL, input: PROMPT, max_output_tokens: 40, stream: true, reasoning: { effort: "low" } });
      const got = { text: "", reasoning: "" }; let id = null, usage = null;
      for await (const e of stream) {
        if (e.type === "response.created") id = e.response.id;
        if (e.type === "response.output_text.delta") got.text += e.delta;
        if (e.type === "response.reasoning_text.delta") got.reasoning += e.delta;
        if (e.type === "response.completed" || e.type === "response.incomplete") usage = e.response.usage;
      }
      const t = await truthOf(ref, id);
      compare(`openai responses, reasoning ${mode}`, got, t, { completion_tokens: usage.output_tokens, prompt_tokens: usage.input_tokens, reasoning_tokens: usage.output_tokens_details.reasoning_tokens });
    }
    // Anthropic Messages (thinking shown as thinking deltas, hidden as an empty block with its signature).
    {
      const client = new Anthropic({ baseURL: base, apiKey: "test-key", maxRetries: 0 });
      const stream = client.messages.stream({ model: MODEL, max_tokens: 40, messages: [{ role: "user", content: PROMPT }], thinking: { type: "enabled", budget_tokens: 1024 } });
      const got = { text: "", reasoning: "" };
      stream.on("text", (d) => { got.text += d; });
      stream.on("thinking", (d) => { got.reasoning += d; });
      const msg = await stream.finalMessage();
      const t = await truthOf(ref, msg.id);
      const thinkingBlocks = msg.content.filter((b) => b.type === "thinking");
      const want = mode === "none" ? 0 : 1;
      check(thinkingBlocks.length === want && thinkingBlocks.every((b) => b.signature === `sig-${t.id}`), `anthropic, reasoning ${mode}: ${want} thinking block(s), signed`);
      compare(`anthropic messages, reasoning ${mode}`, got, t, { completion_tokens: msg.usage.output_tokens, prompt_tokens: msg.usage.input_tokens + msg.usage.cache_read_input_tokens + msg.usage.cache_creation_input_tokens });
    }
    // Gemini.
    {
      const ai = new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: base } });
      const stream = await ai.models.generateContentStream({ model: MODEL, contents: PROMPT, config: { maxOutputTokens: 40, thinkingConfig: { includeThoughts: visible } } });
      const got = { text: "", reasoning: "" }; let id = null, usage = null;
      for await (const c of stream) {
        id ??= c.responseId;
        for (const p of c.candidates?.[0]?.content?.parts ?? []) {
          if (p.thought) got.reasoning += p.text ?? ""; else got.text += p.text ?? "";
        }
        if (c.usageMetadata) usage = c.usageMetadata;
      }
      const t = await truthOf(ref, id);
      compare(`gemini, reasoning ${mode}`, got, t, { completion_tokens: usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0), prompt_tokens: usage.promptTokenCount, reasoning_tokens: usage.thoughtsTokenCount ?? 0 });
    }
  } finally {
    ref.stop();
  }
}

for (const mode of ["none", "visible", "hidden"]) {
  try {
    await run(mode);
  } catch (e) {
    check(false, `reasoning ${mode}: ${e.stack ?? e}`);
  }
}
if (failures.length) {
  console.error(`\nSDK checks FAILED:\n${failures.join("\n")}`);
  process.exit(1);
}
console.log("the three SDKs read what the reference server's truth says");
