//! What every number the app shows means: what it measures, from which instant to which,
//! whether it is one stream's or all streams' together, and over which window. The app
//! and the viewer show these beside each number; `docs/DEFINITIONS.md` §2 says the same
//! at length. Also the sources of the peer tools' definitions the translator uses.

/// One number's definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Definition {
    /// The key of the figure (a headline figure's key, or a live figure's).
    pub key: &'static str,
    /// What it is called.
    pub name: &'static str,
    /// What it measures.
    pub measures: &'static str,
    /// From which instant to which.
    pub span: &'static str,
    /// `per-stream`, `aggregate`, `per-request` or `count`.
    pub scope: &'static str,
    /// Which requests and time it covers.
    pub window: &'static str,
}

/// Every definition.
pub const DEFINITIONS: &[Definition] = &[
    Definition {
        key: "aggregate_steady",
        name: "aggregate output tok/s (steady window)",
        measures: "output tokens received from all streams together per second",
        span: "token chunks arriving inside the steady window ÷ its length",
        scope: "aggregate",
        window: "steady window: while the offered load was fully in flight (no ramp-up or tail)",
    },
    Definition {
        key: "aggregate_measured",
        name: "aggregate output tok/s (measured window)",
        measures: "output tokens received from all streams together per second",
        span: "first measured send → last measured end; tokens of the measured requests ÷ that span",
        scope: "aggregate",
        window: "measured window, ramp-up and tail included",
    },
    Definition {
        key: "per_stream_decode",
        name: "per-stream decode tok/s",
        measures: "one stream's output speed once its first token has arrived",
        span: "first token chunk → last token chunk; tokens after the first chunk ÷ that span, per request (p50 of requests shown)",
        scope: "per-stream",
        window: "measured requests that succeeded",
    },
    Definition {
        key: "ttft",
        name: "TTFT (time to first token)",
        measures: "how long a request waits for its first output token",
        span: "fetch() / send → first chunk carrying a token",
        scope: "per-request",
        window: "measured requests that succeeded",
    },
    Definition {
        key: "tpot",
        name: "TPOT (time per output token)",
        measures: "the average time between output tokens after the first",
        span: "(last token chunk − first token chunk) ÷ (tokens − tokens of the first chunk), per request",
        scope: "per-request",
        window: "measured requests that succeeded",
    },
    Definition {
        key: "e2e",
        name: "E2E latency",
        measures: "how long a whole request takes",
        span: "fetch() / send → end of the stream",
        scope: "per-request",
        window: "measured requests that succeeded",
    },
    Definition {
        key: "concurrency",
        name: "achieved concurrency",
        measures: "requests actually in flight on the wire (mean and max) against the target",
        span: "send → end of each request, overlapped",
        scope: "aggregate",
        window: "the window named beside it",
    },
    Definition {
        key: "goodput",
        name: "goodput",
        measures: "requests per second that met every SLO set (a request without a TPOT fails a TPOT SLO)",
        span: "measured requests meeting the SLOs ÷ the measured window's length",
        scope: "aggregate",
        window: "measured window",
    },
    Definition {
        key: "requests",
        name: "requests ok / measured",
        measures: "measured requests that succeeded, of all measured requests",
        span: "—",
        scope: "count",
        window: "measured window",
    },
    Definition {
        key: "live_aggregate",
        name: "aggregate tok/s, since start (live)",
        measures: "output tokens received from all streams per second so far, requests in flight included",
        span: "run start → now",
        scope: "aggregate",
        window: "everything so far, warm-up included (the report's figures use the measured and steady windows)",
    },
    Definition {
        key: "live_ttft",
        name: "TTFT p50 / p90 / p99 so far (live)",
        measures: "time to first token of the requests completed so far",
        span: "send → first token chunk",
        scope: "per-request",
        window: "every completed request so far, warm-up included",
    },
    Definition {
        key: "live_tpot",
        name: "TPOT p50 / p90 / p99 so far (live)",
        measures: "time per output token after the first, of the requests completed so far",
        span: "(last token chunk − first) ÷ (tokens − first chunk's tokens)",
        scope: "per-request",
        window: "every completed request so far, warm-up included",
    },
];

/// The definition of the figure with this key.
pub fn definition(key: &str) -> Option<&'static Definition> {
    DEFINITIONS.iter().find(|d| d.key == key)
}

impl Definition {
    /// The definition in one paragraph.
    pub fn text(&self) -> String {
        format!(
            "{}: {}. From → to: {}. Scope: {}. Window: {}.",
            self.name, self.measures, self.span, self.scope, self.window
        )
    }
}

/// Where each peer's definitions in the metric translator come from.
pub const PEER_SOURCES: &[(&str, &str)] = &[
    (
        "vLLM",
        "https://github.com/vllm-project/vllm/blob/main/vllm/benchmarks/serve.py",
    ),
    ("AIPerf", "https://github.com/ai-dynamo/aiperf"),
    ("guidellm", "https://github.com/vllm-project/guidellm"),
    ("llmperf", "https://github.com/ray-project/llmperf"),
    (
        "Artificial Analysis",
        "https://artificialanalysis.ai/methodology",
    ),
    (
        "MLPerf server",
        "https://github.com/mlcommons/inference_policies/blob/master/inference_rules.adoc",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_headline_figure_has_a_definition() {
        let keys = [
            "aggregate_steady",
            "aggregate_measured",
            "per_stream_decode",
            "ttft",
            "tpot",
            "e2e",
            "concurrency",
            "goodput",
            "requests",
        ];
        for k in keys {
            let d = definition(k).unwrap_or_else(|| panic!("{k}"));
            assert!(!d.span.is_empty() && !d.window.is_empty() && !d.scope.is_empty());
        }
        let mut all: Vec<&str> = DEFINITIONS.iter().map(|d| d.key).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), DEFINITIONS.len(), "keys are unique");
        assert_eq!(PEER_SOURCES.len(), 6);
    }
}
