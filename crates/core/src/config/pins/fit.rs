//! The fit check: concurrency × (prompt + output) against the KV budget and the
//! context length, before a run.

use super::parse::{
    parse_base_url, parse_choice, parse_kv_capacity, parse_list, parse_positive_u32,
};
use super::*;

/// Inputs of the fit check; each may be unknown (a form being filled, or undisclosed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FitInputs {
    /// Most concurrent requests the client will have in flight.
    pub concurrency: Option<u32>,
    /// Largest prompt, tokens.
    pub prompt_max: Option<u32>,
    /// Largest output, tokens.
    pub output_max: Option<u32>,
    /// Server max model length.
    pub max_model_len: Option<u32>,
    /// Server KV capacity, tokens.
    pub kv_tokens: Option<u64>,
    /// Server max concurrent sequences.
    pub max_num_seqs: Option<u32>,
    /// Whether the endpoint is `http://` (browsers then speak only HTTP/1.1 to it, with at
    /// most [`HTTP1_CONNECTIONS_PER_HOST`] connections); `None` while the URL is not set.
    pub cleartext: Option<bool>,
}

/// Browsers open at most this many HTTP/1.1 connections per host:port.
pub const HTTP1_CONNECTIONS_PER_HOST: u32 = 6;

/// Whether a base URL is `http://` (`None` when it is not a base URL).
fn cleartext_of(url: &str) -> Option<bool> {
    parse_base_url(url).map(|u| u.starts_with("http://"))
}

impl FitInputs {
    /// Reads what a raw form already pins (fields that do not parse count as unknown).
    pub fn from_raw(raw: &RawConfig) -> Self {
        fn known(f: &RawField) -> Option<&str> {
            Some(f.text.trim()).filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("undisclosed"))
        }
        let closed = parse_choice(
            &raw.load_mode.text,
            &[
                ("closed", Some(true)),
                ("open", Some(false)),
                ("replay", None),
            ],
        );
        let concurrency = match closed {
            Some(Some(true)) => known(&raw.concurrency)
                .and_then(|t| parse_list(t, parse_positive_u32))
                .and_then(|v| v.into_iter().max()),
            Some(_) => known(&raw.in_flight_cap).and_then(parse_positive_u32),
            None => None,
        };
        // A replay's lengths are its trace's.
        let trace = match closed {
            Some(None) => known(&raw.trace).and_then(parse_trace),
            _ => None,
        };
        let prompt_max = known(&raw.prompt_tokens)
            .and_then(parse_length_dist)
            .map(|d| d.max());
        let output_max = known(&raw.output_tokens)
            .and_then(parse_length_dist)
            .map(|d| d.max());
        // A conversation's last turn carries every earlier message and answer.
        let conversation = known(&raw.turns).and_then(parse_conversation);
        let prefix = known(&raw.shared_prefix)
            .and_then(parse_shared_prefix)
            .flatten()
            .map_or(0, |p| p.tokens);
        let prompt_max = match (conversation, prompt_max, output_max) {
            (Some(c), Some(p), Some(o)) => Some(c.context_max(p, o, prefix)),
            (Some(c), Some(_), None) if c.is_multi_turn() => None,
            _ => prompt_max,
        };
        let (prompt_max, output_max) = match &trace {
            Some(t) => (Some(t.input_max), Some(t.output_max)),
            None => (prompt_max, output_max),
        };
        Self {
            concurrency,
            prompt_max,
            output_max,
            max_model_len: known(&raw.max_model_len).and_then(parse_positive_u32),
            kv_tokens: known(&raw.kv_capacity)
                .and_then(parse_kv_capacity)
                .and_then(|c| match c {
                    KvCapacity::Tokens { tokens } => Some(tokens),
                    KvCapacity::GpuMemoryUtilization { .. } => None,
                }),
            max_num_seqs: known(&raw.max_num_seqs).and_then(parse_positive_u32),
            cleartext: cleartext_of(&raw.endpoint_url.text),
        }
    }

    /// Reads a pinned configuration.
    pub fn from_config(cfg: &RunConfig) -> Self {
        Self {
            concurrency: cfg
                .load
                .value
                .steps
                .iter()
                .map(|s| s.max_concurrency())
                .max(),
            prompt_max: Some(match &cfg.trace {
                Some(t) => t.value.input_max,
                None => cfg.conversation().context_max(
                    cfg.prompt_len.value.max(),
                    cfg.output_len.value.max(),
                    cfg.cache.value.shared_prefix.map_or(0, |p| p.tokens),
                ),
            }),
            output_max: Some(
                cfg.trace
                    .as_ref()
                    .map_or(cfg.output_len.value.max(), |t| t.value.output_max),
            ),
            max_model_len: cfg.kv.max_model_len.value.known().copied(),
            kv_tokens: match cfg.kv.capacity.value {
                Disclosure::Value(KvCapacity::Tokens { tokens }) => Some(tokens),
                _ => None,
            },
            max_num_seqs: cfg.kv.max_num_seqs.value.known().copied(),
            cleartext: cleartext_of(&cfg.endpoint.base_url),
        }
    }
}

/// The fit check's conclusion, worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitVerdict {
    /// Requests longer than the context: the server will reject (or truncate) them.
    Rejects,
    /// The browser cannot keep that many requests in flight to this endpoint: the run
    /// would measure the client's limit.
    ClientLimited,
    /// The server will have to queue or preempt requests.
    Queues,
    /// Not enough is known to say.
    Unknown,
    /// Everything fits.
    Fits,
}

impl FitVerdict {
    /// The verdict in words.
    pub fn label(self) -> &'static str {
        match self {
            FitVerdict::Rejects => "requests longer than the context will be rejected",
            FitVerdict::ClientLimited => "this browser cannot send that load to this endpoint",
            FitVerdict::Queues => "the server will have to queue or preempt",
            FitVerdict::Unknown => "not enough is known to say",
            FitVerdict::Fits => "everything fits",
        }
    }
}

/// The fit check: its verdict and plain sentences.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FitCheck {
    /// Worst finding.
    pub verdict: FitVerdict,
    /// One sentence per finding.
    pub lines: Vec<String>,
}

/// Concurrency × (prompt + output) against the KV budget, max sequences and max length.
pub fn fit_check(i: &FitInputs) -> FitCheck {
    let mut lines = Vec::new();
    let mut verdict = FitVerdict::Fits;
    let worse = |v: FitVerdict, verdict: &mut FitVerdict| *verdict = (*verdict).min(v);
    let per_seq = match (i.prompt_max, i.output_max) {
        (Some(p), Some(o)) => Some(u64::from(p) + u64::from(o)),
        _ => {
            lines.push(
                "Prompt and output lengths are not pinned yet: the fit cannot be checked.".into(),
            );
            worse(FitVerdict::Unknown, &mut verdict);
            None
        }
    };
    match (per_seq, i.max_model_len) {
        (Some(s), Some(m)) if s > u64::from(m) => {
            lines.push(format!("A request needs up to {s} tokens of context but max model length is {m}: the server will reject or cut such requests."));
            worse(FitVerdict::Rejects, &mut verdict);
        }
        (Some(s), Some(m)) => lines.push(format!(
            "A request needs up to {s} tokens of context; max model length {m} holds it."
        )),
        (Some(_), None) => {
            lines.push(
                "Max model length is undisclosed: whether the longest requests fit is unknown."
                    .into(),
            );
            worse(FitVerdict::Unknown, &mut verdict);
        }
        (None, _) => {}
    }
    match (i.concurrency, i.max_num_seqs) {
        (Some(c), Some(m)) if c > m => {
            lines.push(format!("Concurrency {c} exceeds the server's {m} concurrent sequences: {} requests will wait in the server queue.", c - m));
            worse(FitVerdict::Queues, &mut verdict);
        }
        (Some(c), Some(m)) => lines.push(format!(
            "Concurrency {c} is within the server's {m} concurrent sequences."
        )),
        (None, _) => {
            lines.push("Load is not pinned yet: concurrency is unknown.".into());
            worse(FitVerdict::Unknown, &mut verdict);
        }
        (Some(_), None) => {
            lines.push("Max concurrent sequences is undisclosed.".into());
            worse(FitVerdict::Unknown, &mut verdict);
        }
    }
    match (i.concurrency, per_seq, i.kv_tokens) {
        (Some(c), Some(s), Some(kv)) => {
            let need = u64::from(c) * s;
            if need > kv {
                let fit = kv / s.max(1);
                lines.push(format!("{c} streams × {s} tokens = {need} KV tokens, but the KV cache holds {kv}: only {fit} sequences fit at full length; the rest will queue or be preempted."));
                worse(FitVerdict::Queues, &mut verdict);
            } else {
                lines.push(format!(
                    "{c} streams × {s} tokens = {need} KV tokens of {kv} ({}%).",
                    need * 100 / kv.max(1)
                ));
            }
        }
        (Some(_), Some(_), None) => {
            lines.push(
                "KV capacity in tokens is undisclosed: whether the load fits the cache is unknown."
                    .into(),
            );
            worse(FitVerdict::Unknown, &mut verdict);
        }
        _ => {}
    }
    if let (Some(c), Some(true)) = (i.concurrency, i.cleartext) {
        if c > HTTP1_CONNECTIONS_PER_HOST {
            lines.insert(0, format!("Concurrency {c} over http://: browsers speak only HTTP/1.1 to an http:// endpoint and open at most {HTTP1_CONNECTIONS_PER_HOST} connections to it, so at most {HTTP1_CONNECTIONS_PER_HOST} requests would be in flight and the run would be judged client-limited. Use the endpoint's https:// address (HTTP/2; the reference server's is https://127.0.0.1:8443), or a concurrency of at most {HTTP1_CONNECTIONS_PER_HOST}."));
            worse(FitVerdict::ClientLimited, &mut verdict);
        }
    }
    FitCheck { verdict, lines }
}
