//! Reading a [`RunConfig`] from JSON (a report's `config`, a checkpoint, the run worker's
//! request) through a `serde_json::Value`, with one small reader per type.
//!
//! Why not `#[derive(Deserialize)]`: serde's derived readers of the config's 21 types (each
//! `Pinned<T>` its own copy) were 50 KB of the app's wasm, these 26 KB (6 KB less after
//! gzip). The JSON accepted is the same, and so are the refusals — a missing or unknown
//! field, an unknown `kind` or variant, a value of the wrong type or out of range — each
//! named with the path of the value (`kv: capacity: value: value: unknown variant …`).
//! `tests/config_reader.rs` checks this against serde's derived reader over about 5,000
//! configurations, valid and mutated. A card's body is read by these functions too
//! (`core::card`).
//!
//! Two differences: a `Value` keeps the last of two equal keys, where serde refuses them
//! (reports are refused for duplicate keys before they are read,
//! [`crate::report::open`]; checkpoints and the worker's requests are written by
//! this program); and serde's derived readers also read a struct from an array of its
//! fields in order, a form nothing writes, which these refuse.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{
    Arrival, CachePolicy, Disclosure, Endpoint, KvCapacity, KvPin, LengthDist, Load, LoadStep,
    ModelPin, PhaseMode, Pinned, PromptExactness, Provenance, RunConfig, Sampling, Scheduling,
    Span, WindowPlan,
};
use crate::dialect::{Dialect, LengthEnforcement};

/// A refusal: the path of the value and what is wrong with it.
pub type R<T> = Result<T, String>;

/// Reads a configuration from its JSON tree.
pub fn run_config(v: &Value) -> R<RunConfig> {
    let m = object(
        v,
        &[
            "endpoint",
            "model",
            "prompt_len",
            "prompt_exactness",
            "output_len",
            "output_enforcement",
            "load",
            "kv",
            "phases",
            "scheduling",
            "window",
            "cache",
            "sampling",
        ],
    )?;
    Ok(RunConfig {
        endpoint: field(m, "endpoint", endpoint)?,
        model: field(m, "model", model)?,
        prompt_len: field(m, "prompt_len", |v| pinned(v, length_dist))?,
        prompt_exactness: field(m, "prompt_exactness", |v| {
            pinned(v, |v| {
                unit(
                    v,
                    &[
                        ("server_tokenizer", PromptExactness::ServerTokenizer),
                        ("usage_calibrated", PromptExactness::UsageCalibrated),
                        ("approximate", PromptExactness::Approximate),
                    ],
                )
            })
        })?,
        output_len: field(m, "output_len", |v| pinned(v, length_dist))?,
        output_enforcement: field(m, "output_enforcement", |v| {
            pinned(v, |v| {
                unit(
                    v,
                    &[
                        ("ignore_eos", LengthEnforcement::IgnoreEos),
                        ("min_tokens", LengthEnforcement::MinTokens),
                        ("both", LengthEnforcement::Both),
                        ("none", LengthEnforcement::None),
                    ],
                )
            })
        })?,
        load: field(m, "load", |v| pinned(v, load))?,
        kv: field(m, "kv", kv)?,
        phases: field(m, "phases", |v| {
            pinned(v, |v| {
                unit(
                    v,
                    &[
                        ("colocated", PhaseMode::Colocated),
                        ("disaggregated", PhaseMode::Disaggregated),
                        ("chunked_prefill", PhaseMode::ChunkedPrefill),
                        ("undisclosed", PhaseMode::Undisclosed),
                    ],
                )
            })
        })?,
        scheduling: field(m, "scheduling", |v| {
            pinned(v, |v| {
                unit(
                    v,
                    &[
                        ("continuous", Scheduling::Continuous),
                        ("static", Scheduling::Static),
                        ("undisclosed", Scheduling::Undisclosed),
                    ],
                )
            })
        })?,
        window: field(m, "window", |v| pinned(v, window))?,
        cache: field(m, "cache", |v| {
            pinned(v, |v| {
                let m = object(v, &["nonce_prefix"])?;
                Ok(CachePolicy {
                    nonce_prefix: field(m, "nonce_prefix", boolean)?,
                })
            })
        })?,
        sampling: field(m, "sampling", |v| pinned(v, sampling))?,
    })
}

fn endpoint(v: &Value) -> R<Endpoint> {
    let m = object(v, &["base_url", "dialect"])?;
    Ok(Endpoint {
        base_url: field(m, "base_url", string)?,
        dialect: field(m, "dialect", |v| {
            unit(
                v,
                &[
                    ("completions", Dialect::Completions),
                    ("chat", Dialect::Chat),
                ],
            )
        })?,
    })
}

fn model(v: &Value) -> R<ModelPin> {
    let m = object(v, &["id", "params", "quantization", "engine"])?;
    Ok(ModelPin {
        id: field(m, "id", |v| pinned(v, string))?,
        params: field(m, "params", |v| pinned(v, |v| disclosure(v, uint64)))?,
        quantization: field(m, "quantization", |v| pinned(v, |v| disclosure(v, string)))?,
        engine: field(m, "engine", |v| pinned(v, |v| disclosure(v, string)))?,
    })
}

fn kv(v: &Value) -> R<KvPin> {
    let m = object(v, &["max_model_len", "capacity", "max_num_seqs"])?;
    Ok(KvPin {
        max_model_len: field(m, "max_model_len", |v| pinned(v, |v| disclosure(v, uint32)))?,
        capacity: field(m, "capacity", |v| pinned(v, |v| disclosure(v, kv_capacity)))?,
        max_num_seqs: field(m, "max_num_seqs", |v| pinned(v, |v| disclosure(v, uint32)))?,
    })
}

fn kv_capacity(v: &Value) -> R<KvCapacity> {
    let (kind, m) = tagged(v, &["tokens", "gpu_memory_utilization"])?;
    Ok(match kind {
        0 => {
            let m = variant(m, &["tokens"])?;
            KvCapacity::Tokens {
                tokens: field(m, "tokens", uint64)?,
            }
        }
        _ => {
            let m = variant(m, &["milli"])?;
            KvCapacity::GpuMemoryUtilization {
                milli: field(m, "milli", uint32)?,
            }
        }
    })
}

fn length_dist(v: &Value) -> R<LengthDist> {
    let (kind, m) = tagged(v, &["fixed", "uniform", "normal_clipped"])?;
    Ok(match kind {
        0 => {
            let m = variant(m, &["tokens"])?;
            LengthDist::Fixed {
                tokens: field(m, "tokens", uint32)?,
            }
        }
        1 => {
            let m = variant(m, &["min", "max"])?;
            LengthDist::Uniform {
                min: field(m, "min", uint32)?,
                max: field(m, "max", uint32)?,
            }
        }
        _ => {
            let m = variant(m, &["mean", "std", "min", "max"])?;
            LengthDist::NormalClipped {
                mean: field(m, "mean", uint32)?,
                std: field(m, "std", uint32)?,
                min: field(m, "min", uint32)?,
                max: field(m, "max", uint32)?,
            }
        }
    })
}

fn load(v: &Value) -> R<Load> {
    let m = object(v, &["steps", "stall_timeout_ms"])?;
    Ok(Load {
        steps: field(m, "steps", |v| {
            let items = v.as_array().ok_or_else(|| invalid(v, "a sequence"))?;
            let mut steps = Vec::with_capacity(items.len());
            for (i, s) in items.iter().enumerate() {
                steps.push(load_step(s).map_err(|e| format!("[{i}].{e}"))?);
            }
            Ok(steps)
        })?,
        stall_timeout_ms: field(m, "stall_timeout_ms", uint64)?,
    })
}

/// One load step (`{"kind": "closed" | "open", …}`).
pub fn load_step(v: &Value) -> R<LoadStep> {
    let (kind, m) = tagged(v, &["closed", "open"])?;
    Ok(match kind {
        0 => {
            let m = variant(m, &["concurrency"])?;
            LoadStep::Closed {
                concurrency: field(m, "concurrency", uint32)?,
            }
        }
        _ => {
            let m = variant(m, &["rate_milli_rps", "arrival", "in_flight_cap"])?;
            LoadStep::Open {
                rate_milli_rps: field(m, "rate_milli_rps", uint64)?,
                arrival: field(m, "arrival", arrival)?,
                in_flight_cap: field(m, "in_flight_cap", uint32)?,
            }
        }
    })
}

fn arrival(v: &Value) -> R<Arrival> {
    let (kind, m) = tagged(v, &["poisson", "gamma"])?;
    Ok(match kind {
        0 => {
            variant(m, &[])?;
            Arrival::Poisson
        }
        _ => {
            let m = variant(m, &["shape_milli"])?;
            Arrival::Gamma {
                shape_milli: field(m, "shape_milli", uint32)?,
            }
        }
    })
}

fn window(v: &Value) -> R<WindowPlan> {
    let m = object(v, &["warmup", "measured", "cooldown"])?;
    Ok(WindowPlan {
        warmup: field(m, "warmup", span)?,
        measured: field(m, "measured", span)?,
        cooldown: field(m, "cooldown", span)?,
    })
}

fn span(v: &Value) -> R<Span> {
    let (kind, m) = tagged(v, &["requests", "duration"])?;
    Ok(match kind {
        0 => {
            let m = variant(m, &["count"])?;
            Span::Requests {
                count: field(m, "count", uint32)?,
            }
        }
        _ => {
            let m = variant(m, &["ms"])?;
            Span::Duration {
                ms: field(m, "ms", uint64)?,
            }
        }
    })
}

fn sampling(v: &Value) -> R<Sampling> {
    let m = object(v, &["temperature", "extra"])?;
    Ok(Sampling {
        temperature: field(m, "temperature", |v| {
            v.as_f64().ok_or_else(|| invalid(v, "f64"))
        })?,
        extra: field(m, "extra", |v| {
            let o = v.as_object().ok_or_else(|| invalid(v, "a map"))?;
            let mut extra = BTreeMap::new();
            for (k, x) in o {
                extra.insert(k.clone(), x.clone());
            }
            Ok(extra)
        })?,
    })
}

fn provenance(v: &Value) -> R<Provenance> {
    let (kind, m) = tagged(v, &["declared", "probed", "measured"])?;
    Ok(match kind {
        0 => {
            variant(m, &[])?;
            Provenance::Declared
        }
        1 => {
            let m = variant(m, &["url", "field"])?;
            Provenance::Probed {
                url: field(m, "url", string)?,
                field: field(m, "field", string)?,
            }
        }
        _ => {
            let m = variant(m, &["what"])?;
            Provenance::Measured {
                what: field(m, "what", string)?,
            }
        }
    })
}

/// `{"value": …, "provenance": …}`.
fn pinned<T>(v: &Value, read: fn(&Value) -> R<T>) -> R<Pinned<T>> {
    let m = object(v, &["value", "provenance"])?;
    Ok(Pinned {
        value: field(m, "value", read)?,
        provenance: field(m, "provenance", provenance)?,
    })
}

/// `{"value": …}` or `"undisclosed"` (serde's externally tagged form, which also
/// accepts `{"undisclosed": null}`).
fn disclosure<T>(v: &Value, read: fn(&Value) -> R<T>) -> R<Disclosure<T>> {
    let (name, inner) = enum_form(v)?;
    match (name, inner) {
        ("undisclosed", None | Some(Value::Null)) => Ok(Disclosure::Undisclosed),
        ("value", Some(x)) => read(x)
            .map(Disclosure::Value)
            .map_err(|e| format!("value: {e}")),
        ("value" | "undisclosed", _) => Err(format!("variant `{name}` has the wrong form")),
        _ => Err(unknown_variant(name, &["value", "undisclosed"])),
    }
}

/// A unit variant by name: `"name"` (or serde's `{"name": null}`).
pub fn unit<T: Copy>(v: &Value, variants: &[(&str, T)]) -> R<T> {
    let (name, inner) = enum_form(v)?;
    let names: Vec<&str> = variants.iter().map(|(n, _)| *n).collect();
    let found = variants.iter().find(|(n, _)| *n == name);
    match (found, inner) {
        (Some((_, x)), None | Some(Value::Null)) => Ok(*x),
        (Some(_), Some(_)) => Err(format!("variant `{name}` has the wrong form")),
        (None, _) => Err(unknown_variant(name, &names)),
    }
}

/// An externally tagged enum value: a string (unit variant) or an object of one member.
fn enum_form(v: &Value) -> R<(&str, Option<&Value>)> {
    match v {
        Value::String(s) => Ok((s, None)),
        Value::Object(m) if m.len() == 1 => {
            let (k, x) = m.iter().next().ok_or("an empty object")?;
            Ok((k, Some(x)))
        }
        _ => Err(invalid(v, "an enum (a string or an object of one member)")),
    }
}

/// An internally tagged value (`{"kind": "<tag>", …}`): the tag's index and the object.
pub fn tagged<'a>(v: &'a Value, kinds: &[&str]) -> R<(usize, &'a Map<String, Value>)> {
    let m = v
        .as_object()
        .ok_or_else(|| invalid(v, "an object with a \"kind\""))?;
    let kind = m
        .get("kind")
        .ok_or("missing field `kind`")?
        .as_str()
        .ok_or("kind: expected a string")?;
    let i = kinds
        .iter()
        .position(|k| *k == kind)
        .ok_or_else(|| unknown_variant(kind, kinds))?;
    Ok((i, m))
}

/// A tagged value's members besides `kind`, all in `fields`.
pub fn variant<'a>(m: &'a Map<String, Value>, fields: &[&str]) -> R<&'a Map<String, Value>> {
    match m
        .keys()
        .find(|k| *k != "kind" && !fields.contains(&k.as_str()))
    {
        Some(k) => Err(unknown_field(k, fields)),
        None => Ok(m),
    }
}

/// An object whose members are all in `fields`.
pub fn object<'a>(v: &'a Value, fields: &[&str]) -> R<&'a Map<String, Value>> {
    let m = v.as_object().ok_or_else(|| invalid(v, "an object"))?;
    match m.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(k) => Err(unknown_field(k, fields)),
        None => Ok(m),
    }
}

/// A member, read by `read`; a refusal is prefixed with the member's name.
pub fn field<T>(m: &Map<String, Value>, name: &str, read: fn(&Value) -> R<T>) -> R<T> {
    let v = m
        .get(name)
        .ok_or_else(|| format!("missing field `{name}`"))?;
    read(v).map_err(|e| format!("{name}: {e}"))
}

/// A string.
pub fn string(v: &Value) -> R<String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| invalid(v, "a string"))
}

/// A boolean.
pub fn boolean(v: &Value) -> R<bool> {
    v.as_bool().ok_or_else(|| invalid(v, "a boolean"))
}

/// A non-negative integer below 2^64.
pub fn uint64(v: &Value) -> R<u64> {
    v.as_u64().ok_or_else(|| invalid(v, "u64"))
}

/// A non-negative integer below 2^32.
pub fn uint32(v: &Value) -> R<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| invalid(v, "u32"))
}

/// "invalid value: <what `v` is>, expected <expected>".
pub fn invalid(v: &Value, expected: &str) -> String {
    let got = match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) => format!("number `{n}`"),
        Value::String(s) => format!("string \"{s}\""),
        Value::Array(_) => "a sequence".to_owned(),
        Value::Object(_) => "a map".to_owned(),
    };
    format!("invalid value: {got}, expected {expected}")
}

/// serde's refusal text for a member that is not one of `fields` (the readers say what serde says).
pub fn unknown_field(k: &str, fields: &[&str]) -> String {
    format!("unknown field `{k}`, expected {}", one_of(fields))
}

fn unknown_variant(k: &str, variants: &[&str]) -> String {
    format!("unknown variant `{k}`, expected {}", one_of(variants))
}

fn one_of(names: &[&str]) -> String {
    match names {
        [] => "no fields".to_owned(),
        [one] => format!("`{one}`"),
        _ => format!("one of `{}`", names.join("`, `")),
    }
}

/// A `LoadStep` read by `load_step`, for `#[serde(deserialize_with)]`: how
/// `tests/config_reader.rs` holds `load_step` to `LoadStep`'s serde reader. (A card's step
/// is read by `core::card` through `load_step` directly.)
pub fn deserialize_load_step<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LoadStep, D::Error> {
    use serde::Deserialize as _;
    let v = Value::deserialize(d)?;
    load_step(&v).map_err(serde::de::Error::custom)
}

/// An optional member: missing or `null` is `None` (as serde reads an `Option` field).
pub fn optional<T>(m: &Map<String, Value>, name: &str, read: fn(&Value) -> R<T>) -> R<Option<T>> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => read(v).map(Some).map_err(|e| format!("{name}: {e}")),
    }
}

/// A member with a default: missing is the default; `null` is read (and refused where
/// `T` is not optional), as serde's `#[serde(default)]` does.
pub fn defaulted<T: Default>(m: &Map<String, Value>, name: &str, read: fn(&Value) -> R<T>) -> R<T> {
    match m.get(name) {
        None => Ok(T::default()),
        Some(_) => field(m, name, read),
    }
}

/// `[a, b]`: a pair (a tuple of two), each read by `read`.
pub fn pair<T>(v: &Value, read: fn(&Value) -> R<T>) -> R<(T, T)> {
    match v.as_array().map(Vec::as_slice) {
        Some([a, b]) => Ok((
            read(a).map_err(|e| format!("[0]: {e}"))?,
            read(b).map_err(|e| format!("[1]: {e}"))?,
        )),
        Some(items) => Err(format!(
            "invalid length {}, expected a tuple of size 2",
            items.len()
        )),
        None => Err(invalid(v, "a tuple of size 2")),
    }
}

/// An object of exactly these integer members, read in this order.
pub fn integers<const N: usize>(v: &Value, names: &[&str; N]) -> R<[u64; N]> {
    let m = object(v, names)?;
    let mut n = [0u64; N];
    for (x, name) in n.iter_mut().zip(names) {
        *x = field(m, name, uint64)?;
    }
    Ok(n)
}

/// A sequence, each element read by `read`.
pub fn list<T>(v: &Value, read: fn(&Value) -> R<T>) -> R<Vec<T>> {
    let items = v.as_array().ok_or_else(|| invalid(v, "a sequence"))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, x) in items.iter().enumerate() {
        out.push(read(x).map_err(|e| format!("[{i}]: {e}"))?);
    }
    Ok(out)
}
