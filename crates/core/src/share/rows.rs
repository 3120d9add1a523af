//! The pins of a run as rows (a field, its value as text, where it came from, whether it is
//! pinned) and the two number formats every row and card uses: what reports, cards,
//! imports and comparisons list, and what the viewer shows (`present::view` re-exports
//! them). Below both, so that `share` never depends on `present`.

use std::fmt::Write as _;

use crate::decimal::{fixed, Fixed, Shortest};
pub use crate::pins::fmt_params;
use crate::pins::{wire_name, PinId, Provenance, RunConfig};

/// Whether a pin has a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PinStatus {
    /// A value, declared, probed or measured.
    Pinned,
    /// The server does not say, and the run said so explicitly.
    Undisclosed,
    /// The source leaves it free (imports from other tools).
    Unpinned,
}

impl PinStatus {
    /// Short label.
    pub fn label(self) -> &'static str {
        match self {
            PinStatus::Pinned => "pinned",
            PinStatus::Undisclosed => "undisclosed",
            PinStatus::Unpinned => "unpinned",
        }
    }
}

/// One pin field as the viewer lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinRow {
    /// The pin it belongs to.
    pub pin: PinId,
    /// Stable field key (`model.params`, `load`, …), used in test ids and comparisons.
    pub key: &'static str,
    /// Human label.
    pub label: &'static str,
    /// The value as text (empty when unpinned).
    pub value: String,
    /// Where it came from.
    pub provenance: String,
    /// Pinned, undisclosed or unpinned.
    pub status: PinStatus,
}

/// Human text of a provenance.
pub fn provenance_label(p: &Provenance) -> String {
    match p {
        Provenance::Declared {} => "declared".into(),
        Provenance::Probed { url, field } => format!("probed: {url} ({field})"),
        Provenance::Measured { what } => format!("measured: {what}"),
        Provenance::Vendor { vendor, why } => format!("vendor table: {vendor}: {why}"),
    }
}

fn row(
    pin: PinId,
    key: &'static str,
    label: &'static str,
    value: String,
    prov: &Provenance,
) -> PinRow {
    let status = if value == "undisclosed" {
        PinStatus::Undisclosed
    } else {
        PinStatus::Pinned
    };
    PinRow {
        pin,
        key,
        label,
        value,
        provenance: provenance_label(prov),
        status,
    }
}

/// Every pin of a run configuration, in docs/DEFINITIONS.md §1 order (the keys of
/// [`crate::compare::KEYS`]).
pub fn pin_rows(c: &RunConfig) -> Vec<PinRow> {
    let m = &c.model;
    let w = &c.window.value;
    let mut extra = String::new();
    for (k, v) in &c.sampling.value.extra {
        let _ = write!(extra, ", {k}={v}");
    }
    vec![
        row(
            PinId::Endpoint,
            "endpoint",
            "endpoint",
            format!("{} ({:?})", c.endpoint.base_url, c.endpoint.dialect),
            &Provenance::Declared {},
        ),
        row(
            PinId::Model,
            "model.id",
            "model id",
            m.id.value.clone(),
            &m.id.provenance,
        ),
        row(
            PinId::Model,
            "model.params",
            "parameters",
            params_text(&m.params.value),
            &m.params.provenance,
        ),
        row(
            PinId::Model,
            "model.quantization",
            "quantization",
            m.quantization.value.to_string(),
            &m.quantization.provenance,
        ),
        row(
            PinId::Model,
            "model.engine",
            "engine",
            m.engine.value.to_string(),
            &m.engine.provenance,
        ),
        row(
            PinId::PromptLength,
            "prompt_len",
            "prompt length (tokens)",
            // Lengths from a dataset: which file, its format and the rows used.
            match &c.dataset {
                Some(d) => d.value.to_string(),
                None => c.prompt_len.value.to_string(),
            },
            &c.prompt_len.provenance,
        ),
        row(
            PinId::PromptLength,
            "prompt_exactness",
            "prompt exactness",
            wire_name(&c.prompt_exactness.value),
            &c.prompt_exactness.provenance,
        ),
        row(
            PinId::OutputLength,
            "output_len",
            "output length (tokens)",
            format!(
                "{} ({})",
                c.output_len.value,
                wire_name(&c.output_enforcement.value)
            ),
            &c.output_len.provenance,
        ),
        row(
            PinId::Load,
            "load",
            "load (concurrency / rate)",
            // A replay's load is its trace: which file, its time scale and offset.
            match &c.trace {
                Some(t) => format!("{}; {}", t.value, c.load.value.steps_text()),
                None => c.load.value.steps_text(),
            },
            &c.load.provenance,
        ),
        row(
            PinId::Load,
            "load.stall_timeout",
            "stall timeout",
            format!("{} ms", c.load.value.stall_timeout_ms),
            &c.load.provenance,
        ),
        row(
            PinId::KvBudget,
            "kv.capacity",
            "KV cache capacity",
            c.kv.capacity.value.to_string(),
            &c.kv.capacity.provenance,
        ),
        row(
            PinId::KvBudget,
            "kv.max_model_len",
            "max model length",
            c.kv.max_model_len.value.to_string(),
            &c.kv.max_model_len.provenance,
        ),
        row(
            PinId::KvBudget,
            "kv.max_num_seqs",
            "max concurrent sequences",
            c.kv.max_num_seqs.value.to_string(),
            &c.kv.max_num_seqs.provenance,
        ),
        row(
            PinId::PrefillDecode,
            "phases",
            "prefill/decode mix",
            wire_name(&c.phases.value),
            &c.phases.provenance,
        ),
        row(
            PinId::Scheduling,
            "scheduling",
            "scheduling",
            wire_name(&c.scheduling.value),
            &c.scheduling.provenance,
        ),
        row(
            PinId::Window,
            "window",
            "window",
            format!(
                "warm-up {}, measured {}, cool-down {}",
                w.warmup, w.measured, w.cooldown
            ),
            &c.window.provenance,
        ),
        row(
            PinId::CachePolicy,
            "cache",
            "cache policy",
            match (c.cache.value.nonce_prefix, c.cache.value.shared_prefix) {
                (true, None) => "nonce prefix per request".into(),
                (false, None) => "no nonce (prefix cache may hit)".into(),
                (nonce, Some(p)) => format!(
                    "shared prefix of {} tokens{}, then {}",
                    p.tokens,
                    if p.groups == 1 {
                        String::new()
                    } else {
                        format!(" in {} groups", p.groups)
                    },
                    if nonce {
                        "a nonce per request"
                    } else {
                        "no nonce (more may hit)"
                    }
                ),
            },
            &c.cache.provenance,
        ),
        row(
            PinId::Sampling,
            "sampling",
            "sampling",
            format!(
                "temperature={}{extra}",
                Shortest(c.sampling.value.temperature)
            ),
            &c.sampling.provenance,
        ),
        // A reasoning figure and an answer-only one are not the same number.
        match &c.reasoning {
            Some(p) => row(
                PinId::Reasoning,
                "reasoning",
                "reasoning",
                crate::pins::reasoning_form(&p.value),
                &p.provenance,
            ),
            None => row(
                PinId::Reasoning,
                "reasoning",
                "reasoning",
                "not pinned (a report made before the reasoning pin)".into(),
                &Provenance::default(),
            ),
        },
        // Before the pin existed every run was independent single turns.
        {
            let conv = c.conversation();
            let text = if conv.is_multi_turn() {
                format!(
                    "{} turns per conversation, think {} s, each turn resends the history",
                    conv.turns,
                    crate::pins::milli(conv.think_ms)
                )
            } else {
                "single turn (independent requests)".to_owned()
            };
            let provenance = c
                .conversation
                .as_ref()
                .map_or_else(Provenance::default, |p| p.provenance.clone());
            row(
                PinId::Conversation,
                "conversation",
                "conversation",
                text,
                &provenance,
            )
        },
    ]
}

/// Formats µs as ms with two decimals.
pub fn fmt_ms(us: u64) -> String {
    format!("{} ms", Fixed(us as f64 / 1000.0, 2))
}

/// Formats a milli-rate as a rate with one decimal.
pub fn fmt_rate(m: u64) -> String {
    fixed(m as f64 / 1000.0, 1)
}

/// A parameter count pin as text: [`fmt_params`], or `undisclosed`.
pub fn params_text(p: &crate::pins::Disclosure<u64>) -> String {
    match p {
        crate::pins::Disclosure::Value(n) => fmt_params(*n),
        crate::pins::Disclosure::Undisclosed => "undisclosed".into(),
    }
}

/// What a step's reasoning was, in one phrase: how it was shown, how many tokens were
/// counted and how many of those were never timed.
pub fn reasoning_text(r: &crate::metrics::ReasoningFigures) -> String {
    let shown: Vec<String> = r.shown.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let mut t = format!(
        "reasoning shown as {}: {} reasoning tokens counted, {} of them never timed (outside TPOT)",
        shown.join(", "),
        r.tokens,
        r.untimed_tokens
    );
    if r.unknown > 0 {
        t.push_str(&format!(
            "; {} requests' reasoning tokens unknown",
            r.unknown
        ));
    }
    t
}

/// A per-token figure's note on requests whose per-token timing was estimated.
pub fn inexact_note(inexact: u32, of: u32) -> String {
    format!("; per-token timing estimated or unverified for {inexact} of {of} requests")
}

/// What a per-token figure's window adds: how many of `of` requests had their per-token
/// timing estimated, and what reasoning the figure holds.
pub fn per_token_note(
    inexact: u32,
    of: u32,
    reasoning: Option<&crate::metrics::ReasoningFigures>,
) -> String {
    let mut t = String::new();
    if inexact > 0 {
        t.push_str(&inexact_note(inexact, of));
    }
    if let Some(r) = reasoning {
        t.push_str(&format!("; {}", reasoning_text(r)));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::fmt_params;

    #[test]
    fn parameter_counts_read_in_human_units_and_stay_exact() {
        for (n, text) in [
            (8_030_000_000, "8.03 B"),
            (70_600_000_000, "70.6 B"),
            (270_000_000, "270 M"),
            (268_098_176, "268.098176 M"),
            (1_500_000_000_000, "1.5 T"),
            (2_000, "2 K"),
            (999, "999"),
            (0, "0"),
        ] {
            assert_eq!(fmt_params(n), text, "{n}");
        }
        assert_eq!(crate::pins::param_count_text(8_030_000_000), "8.03B");
        assert_eq!(crate::pins::param_count_text(100_000_000), "100M");
        // The form parses three decimals: a count no unit says exactly stays an integer.
        assert_eq!(crate::pins::param_count_text(268_098_176), "268098176");
        // Different counts never print alike.
        assert_ne!(fmt_params(8_031_000_000), fmt_params(8_032_000_000));
    }
}
