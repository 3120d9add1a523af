//! Engine profiles: the hardware and model a simulated engine stands for.

use serde::{Deserialize, Serialize};

/// Continuous or static batching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Batching {
    /// Requests join and leave the batch at every step (vLLM-like).
    Continuous,
    /// A batch runs until all of it has finished; arrivals wait.
    Static,
}

/// Everything the simulated engine needs. Fields have units in their names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile name.
    pub name: String,
    /// API model id.
    pub model_id: String,
    /// Model parameters.
    pub params: u64,
    /// Bytes per parameter (2 = bf16).
    pub bytes_per_param: f64,
    /// Memory bandwidth, bytes/s.
    pub mem_bandwidth_bytes_per_s: f64,
    /// Effective compute, FLOP/s.
    pub compute_flops: f64,
    /// KV cache bytes per token of context.
    pub kv_bytes_per_token: u64,
    /// KV cache capacity, tokens.
    pub kv_capacity_tokens: u64,
    /// Most sequences running at once.
    pub max_num_seqs: u32,
    /// Longest prompt + output.
    pub max_model_len: u32,
    /// Batching mode.
    pub batching: Batching,
    /// Prefill tokens per step (chunked prefill budget).
    pub prefill_budget_tokens: u32,
    /// Fixed cost of every step, µs.
    pub step_overhead_us: u64,
    /// Tokens per SSE event (1 = every token its own event).
    pub tokens_per_event: u32,
    /// Set the cost of every step to zero (for throughput benchmarks of the server).
    #[serde(default)]
    pub zero_step_cost: bool,
    /// A block-level prefix cache: the full 16-token blocks a prompt shares, from its
    /// start, with prompts prefilled before are not prefilled again (at least one token
    /// always is); a nonce before the prompt defeats it. Each request's truth says how
    /// many tokens it found cached.
    #[serde(default)]
    pub prefix_cache: bool,
}

impl Profile {
    /// A tiny, fast profile for tests: a whole run takes seconds, and every effect
    /// (context growth, queueing, batching) is visible at small sizes.
    pub fn tiny() -> Self {
        Self {
            name: "tiny".into(),
            model_id: "pinbench-tiny".into(),
            params: 100_000_000,
            bytes_per_param: 2.0,
            mem_bandwidth_bytes_per_s: 200e9,
            compute_flops: 20e12,
            kv_bytes_per_token: 200_000,
            kv_capacity_tokens: 16_384,
            max_num_seqs: 16,
            max_model_len: 4_096,
            batching: Batching::Continuous,
            prefill_budget_tokens: 2_048,
            step_overhead_us: 500,
            tokens_per_event: 1,
            zero_step_cost: false,
            prefix_cache: false,
        }
    }

    /// Llama-3.1-8B-like in bf16 on one H100 SXM (3.35 TB/s, ~400 TFLOP/s effective);
    /// KV 128 KiB/token (32 layers × 8 KV heads × 128 dims × K,V × 2 bytes); 90% of 80 GB.
    pub fn h100_8b() -> Self {
        Self {
            name: "8b-h100".into(),
            model_id: "llama-3.1-8b-sim".into(),
            params: 8_030_000_000,
            bytes_per_param: 2.0,
            mem_bandwidth_bytes_per_s: 3.35e12,
            compute_flops: 400e12,
            kv_bytes_per_token: 131_072,
            kv_capacity_tokens: 430_000,
            max_num_seqs: 256,
            max_model_len: 131_072,
            batching: Batching::Continuous,
            prefill_budget_tokens: 8_192,
            step_overhead_us: 1_000,
            tokens_per_event: 1,
            zero_step_cost: false,
            prefix_cache: false,
        }
    }

    /// Llama-3.1-70B-like in bf16 on 8×H100 with tensor parallelism (26.8 TB/s, ~3.2
    /// PFLOP/s effective); KV 320 KiB/token (80 layers); ~1.3 M tokens of KV.
    pub fn h100x8_70b() -> Self {
        Self {
            name: "70b-8xh100".into(),
            model_id: "llama-3.1-70b-sim".into(),
            params: 70_600_000_000,
            bytes_per_param: 2.0,
            mem_bandwidth_bytes_per_s: 26.8e12,
            compute_flops: 3.2e15,
            kv_bytes_per_token: 327_680,
            kv_capacity_tokens: 1_330_000,
            max_num_seqs: 256,
            max_model_len: 16_384,
            batching: Batching::Continuous,
            prefill_budget_tokens: 8_192,
            step_overhead_us: 3_000,
            tokens_per_event: 1,
            zero_step_cost: false,
            prefix_cache: false,
        }
    }

    /// A built-in profile by name.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "tiny" => Some(Self::tiny()),
            "8b-h100" => Some(Self::h100_8b()),
            "70b-8xh100" => Some(Self::h100x8_70b()),
            _ => None,
        }
    }

    /// Names of the built-in profiles.
    pub const NAMES: [&'static str; 3] = ["tiny", "8b-h100", "70b-8xh100"];

    /// Cost of one step, µs: fixed overhead, the weights and every decoding sequence's KV
    /// read from memory, plus prefill compute (2 · params · tokens FLOPs).
    pub fn step_cost_us(&self, decode_context_tokens: u64, prefill_tokens: u64) -> u64 {
        if self.zero_step_cost {
            return 0;
        }
        let bytes = self.params as f64 * self.bytes_per_param
            + (decode_context_tokens * self.kv_bytes_per_token) as f64;
        let mut secs = bytes / self.mem_bandwidth_bytes_per_s;
        secs += 2.0 * self.params as f64 * prefill_tokens as f64 / self.compute_flops;
        self.step_overhead_us + (secs * 1e6).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_follow_the_physics() {
        let p = Profile::tiny();
        // Weights: 2e8 B / 2e11 B/s = 1 ms; plus 0.5 ms overhead.
        assert_eq!(p.step_cost_us(0, 0), 1_500);
        // 1000 tokens of context: 2e8 B more = +1 ms.
        assert_eq!(p.step_cost_us(1_000, 0), 2_500);
        // Prefill of 1000 tokens: 2e11 FLOPs / 2e13 = 10 ms (plus the weights read).
        assert_eq!(p.step_cost_us(0, 1_000), 11_500);
        let h = Profile::h100_8b();
        let one = h.step_cost_us(1_000, 0);
        assert!((5_800..6_000).contains(&one), "8B decode step {one} µs");
        assert!(Profile::named("70b-8xh100").is_some() && Profile::named("x").is_none());
    }
}
