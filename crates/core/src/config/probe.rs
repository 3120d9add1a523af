//! Reading an endpoint's introspection answers into pins (pure: the host fetches, this
//! module decides what was said).
//!
//! A probe starts with `GET /v1/models`. Its first entry tells the engine
//! ([`Engine::recognise`]) and which follow-up reads that engine answers
//! ([`ProbeRead::follow_ups`]); each answer is read by [`read_answer`]. Every value found
//! becomes a [`Fill`]: a form field, its text, and where it came from (URL and field), so
//! the form can show `probed` with its source.

use serde_json::Value;

use super::pins::{param_count_text, parse_param_count, Provenance};
use super::vendors::Vendor;

/// An inference engine recognised from what its endpoint says about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// vLLM (`owned_by: "vllm"`).
    Vllm,
    /// SGLang (`owned_by: "sglang"`).
    Sglang,
    /// llama.cpp's `llama-server` (`owned_by: "llamacpp"`, or a `meta` object).
    LlamaCpp,
    /// Hugging Face TGI (`owned_by` equal to the model id; confirmed by `/info`).
    Tgi,
    /// Ollama's OpenAI-compatible endpoint (`owned_by: "library"` or `"ollama"`).
    Ollama,
    /// OpenAI's hosted API (`owned_by: "openai"`, `"system"`, `"openai-internal"`).
    OpenAi,
    /// The pinbench reference server (`pinbench` object in the entry).
    PinbenchRef,
}

impl Engine {
    /// Recognises the engine from the first `/v1/models` entry, `None` when unknown.
    pub fn recognise(entry: &Value) -> Option<Engine> {
        if entry.get("pinbench").is_some_and(Value::is_object) {
            return Some(Engine::PinbenchRef);
        }
        if entry.get("meta").is_some_and(Value::is_object) {
            return Some(Engine::LlamaCpp);
        }
        let owned_by = entry.get("owned_by").and_then(Value::as_str)?;
        Some(match owned_by.to_ascii_lowercase().as_str() {
            "vllm" => Engine::Vllm,
            "sglang" => Engine::Sglang,
            "llamacpp" | "llama.cpp" => Engine::LlamaCpp,
            "library" | "ollama" => Engine::Ollama,
            "openai" | "system" | "openai-internal" => Engine::OpenAi,
            _ if entry.get("id").and_then(Value::as_str) == Some(owned_by) => Engine::Tgi,
            _ => return None,
        })
    }

    /// The engine's name as the engine pin starts (a version follows when known).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::LlamaCpp => "llama.cpp",
            Engine::Tgi => "TGI",
            Engine::Ollama => "Ollama",
            Engine::OpenAi => "OpenAI API",
            Engine::PinbenchRef => "pinbench-ref",
        }
    }

    /// Recognises an engine pin's text (declared or probed) by its first word.
    pub fn from_pin(text: &str) -> Option<Engine> {
        let t = text.trim().to_ascii_lowercase();
        [
            Engine::Vllm,
            Engine::Sglang,
            Engine::LlamaCpp,
            Engine::Tgi,
            Engine::Ollama,
            Engine::OpenAi,
            Engine::PinbenchRef,
        ]
        .into_iter()
        .find(|e| t.starts_with(&e.name().to_ascii_lowercase()))
    }

    /// Whether the engine streams usage in every chunk when asked
    /// (`stream_options.continuous_usage_stats`, vLLM): per-chunk token counts are then
    /// exact, which matters when chunks carry several tokens (speculative decoding).
    pub fn streams_continuous_usage(self) -> bool {
        self == Engine::Vllm
    }
}

/// One follow-up read a recognised engine answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowUp {
    /// What this read is (decides how [`read_answer`] reads it).
    pub kind: FollowUpKind,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// Path under the base URL.
    pub path: &'static str,
    /// JSON body for a `POST`.
    pub body: Option<String>,
}

/// The kinds of follow-up read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FollowUpKind {
    /// vLLM `GET /version`.
    VllmVersion,
    /// vLLM `GET /metrics` (the cache config info gauge).
    VllmMetrics,
    /// llama.cpp `GET /props`.
    LlamaProps,
    /// SGLang `GET /get_server_info`.
    SglangServerInfo,
    /// TGI `GET /info`.
    TgiInfo,
    /// Ollama `GET /api/version`.
    OllamaVersion,
    /// Ollama `POST /api/show`.
    OllamaShow,
}

/// A pin value a probe found: form field, text, provenance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    /// The form field (`RawConfig` name).
    pub field: &'static str,
    /// The value as form text.
    pub text: String,
    /// Where it came from.
    pub provenance: Provenance,
}

/// What the `/v1/models` answer said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRead {
    /// The engine, when recognised.
    pub engine: Option<Engine>,
    /// Values found.
    pub fills: Vec<Fill>,
    /// Further reads to make (in order).
    pub follow_ups: Vec<FollowUp>,
}

/// Errors of reading a probe answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The endpoint needs an API key.
    #[error("{url} answered {status}: the endpoint needs an API key.")]
    Unauthorised {
        /// URL read.
        url: String,
        /// Status.
        status: u16,
    },
    /// The answer was not JSON.
    #[error("{url} did not return JSON (status {status})")]
    NotJson {
        /// URL read.
        url: String,
        /// Status.
        status: u16,
    },
}

fn probed(url: &str, field: &str) -> Provenance {
    Provenance::Probed {
        url: url.into(),
        field: field.into(),
    }
}

fn fill(out: &mut Vec<Fill>, field: &'static str, text: String, url: &str, from: &str) {
    out.retain(|f| f.field != field);
    out.push(Fill {
        field,
        text,
        provenance: probed(url, from),
    });
}

/// Reads the `GET /v1/models` answer (`url` is where it came from).
pub fn read_models(url: &str, status: u16, body: &str) -> Result<ProbeRead, ProbeError> {
    if status == 401 || status == 403 {
        return Err(ProbeError::Unauthorised {
            url: url.into(),
            status,
        });
    }
    let v: Value = serde_json::from_str(body).map_err(|_| ProbeError::NotJson {
        url: url.into(),
        status,
    })?;
    let m = &v["data"][0];
    let engine = Engine::recognise(m);
    let mut fills = Vec::new();
    let mut f = |field, text: String, from: &str| fill(&mut fills, field, text, url, from);
    if let Some(id) = m["id"].as_str() {
        f("model_id", id.to_owned(), "data[0].id");
    }
    if let Some(n) = m["max_model_len"].as_u64() {
        f("max_model_len", n.to_string(), "data[0].max_model_len");
    } else if let Some(n) = m["meta"]["n_ctx_train"].as_u64() {
        f("max_model_len", n.to_string(), "data[0].meta.n_ctx_train");
    }
    if let Some(n) = m["meta"]["n_params"].as_u64() {
        f("model_params", param_count_text(n), "data[0].meta.n_params");
    } else if let Some(n) = m["pinbench"]["params"].as_u64() {
        f(
            "model_params",
            param_count_text(n),
            "data[0].pinbench.params",
        );
    }
    let pb = &m["pinbench"];
    if let Some(n) = pb["max_num_seqs"].as_u64() {
        f(
            "max_num_seqs",
            n.to_string(),
            "data[0].pinbench.max_num_seqs",
        );
    }
    if let Some(n) = pb["kv_capacity_tokens"].as_u64() {
        f(
            "kv_capacity",
            n.to_string(),
            "data[0].pinbench.kv_capacity_tokens",
        );
    }
    if let Some(b) = pb["batching"].as_str() {
        f("scheduling", b.to_owned(), "data[0].pinbench.batching");
    }
    if let Some(ph) = pb["phases"].as_str() {
        f("phases", ph.to_owned(), "data[0].pinbench.phases");
    }
    if let Some(r) = pb["reasoning"].as_str() {
        f("reasoning", r.to_owned(), "data[0].pinbench.reasoning");
    }
    if let Some(d) = pb["dtype"].as_str() {
        f("model_quant", d.to_owned(), "data[0].pinbench.dtype");
    }
    if let Some(e) = pb["engine"].as_str() {
        f("model_engine", e.to_owned(), "data[0].pinbench.engine");
    } else if let Some(e) = engine {
        // The engine's name now; a follow-up may add its version.
        f("model_engine", e.name().to_owned(), "data[0].owned_by");
    }
    let get = |kind, path| FollowUp {
        kind,
        method: "GET",
        path,
        body: None,
    };
    let follow_ups = match engine {
        Some(Engine::Vllm) => vec![
            get(FollowUpKind::VllmVersion, "/version"),
            get(FollowUpKind::VllmMetrics, "/metrics"),
        ],
        Some(Engine::LlamaCpp) => vec![get(FollowUpKind::LlamaProps, "/props")],
        Some(Engine::Sglang) => vec![get(FollowUpKind::SglangServerInfo, "/get_server_info")],
        Some(Engine::Tgi) => vec![get(FollowUpKind::TgiInfo, "/info")],
        Some(Engine::Ollama) => {
            let model = m["id"].as_str().unwrap_or_default();
            vec![
                get(FollowUpKind::OllamaVersion, "/api/version"),
                FollowUp {
                    kind: FollowUpKind::OllamaShow,
                    method: "POST",
                    path: "/api/show",
                    body: Some(serde_json::json!({ "model": model }).to_string()),
                },
            ]
        }
        Some(Engine::OpenAi | Engine::PinbenchRef) | None => Vec::new(),
    };
    Ok(ProbeRead {
        engine,
        fills,
        follow_ups,
    })
}

/// Reads one follow-up's answer into `fills` (an answer that is not 200 or not of the
/// expected shape adds nothing). `url` is where it came from.
pub fn read_answer(kind: FollowUpKind, url: &str, status: u16, body: &str, fills: &mut Vec<Fill>) {
    if status != 200 {
        return;
    }
    let mut f = |field, text: String, from: &str| fill(fills, field, text, url, from);
    if kind == FollowUpKind::VllmMetrics {
        if let Some(n) = body
            .split("kv_cache_size_tokens=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .filter(|n| n.parse::<u64>().is_ok())
        {
            f(
                "kv_capacity",
                n.to_owned(),
                "vllm:cache_config_info{kv_cache_size_tokens}",
            );
        }
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return;
    };
    match kind {
        FollowUpKind::VllmVersion => {
            if let Some(ver) = v["version"].as_str() {
                f("model_engine", format!("vLLM {ver}"), "version");
            }
        }
        FollowUpKind::LlamaProps => {
            if let Some(n) = v["default_generation_settings"]["n_ctx"].as_u64() {
                f(
                    "max_model_len",
                    n.to_string(),
                    "default_generation_settings.n_ctx",
                );
            }
            if let Some(n) = v["total_slots"].as_u64() {
                f("max_num_seqs", n.to_string(), "total_slots");
            }
            if let Some(b) = v["build_info"].as_str() {
                f("model_engine", format!("llama.cpp {b}"), "build_info");
            }
        }
        FollowUpKind::SglangServerInfo => {
            if let Some(ver) = v["version"].as_str() {
                f("model_engine", format!("SGLang {ver}"), "version");
            }
            if let Some(n) = v["context_length"].as_u64() {
                f("max_model_len", n.to_string(), "context_length");
            }
            if let Some(n) = v["max_running_requests"].as_u64() {
                f("max_num_seqs", n.to_string(), "max_running_requests");
            }
            if let Some(n) = v["max_total_num_tokens"].as_u64() {
                f("kv_capacity", n.to_string(), "max_total_num_tokens");
            }
        }
        FollowUpKind::TgiInfo => {
            if let Some(ver) = v["version"].as_str() {
                f("model_engine", format!("TGI {ver}"), "version");
            }
            if let Some(n) = v["max_total_tokens"].as_u64() {
                f("max_model_len", n.to_string(), "max_total_tokens");
            }
        }
        FollowUpKind::OllamaVersion => {
            if let Some(ver) = v["version"].as_str() {
                f("model_engine", format!("Ollama {ver}"), "version");
            }
        }
        FollowUpKind::OllamaShow => {
            let count = v["model_info"]["general.parameter_count"].as_u64();
            if let Some(n) = count {
                f(
                    "model_params",
                    param_count_text(n),
                    "model_info[\"general.parameter_count\"]",
                );
            } else if let Some(n) = v["details"]["parameter_size"]
                .as_str()
                .and_then(parse_param_count)
            {
                f(
                    "model_params",
                    param_count_text(n),
                    "details.parameter_size",
                );
            }
            if let Some(q) = v["details"]["quantization_level"].as_str() {
                f("model_quant", q.to_owned(), "details.quantization_level");
            }
            let arch = v["model_info"]["general.architecture"]
                .as_str()
                .unwrap_or("");
            let key = format!("{arch}.context_length");
            if let Some(n) = v["model_info"][key.as_str()].as_u64() {
                f(
                    "max_model_len",
                    n.to_string(),
                    "model_info[\"<arch>.context_length\"]",
                );
            }
        }
        FollowUpKind::VllmMetrics => {}
    }
}

fn provenance(v: &Vendor, why: &str) -> Provenance {
    Provenance::Vendor {
        vendor: v.name.to_owned(),
        why: why.to_owned(),
    }
}

/// What pinbench knows of this vendor as form fills, each with the table as its
/// source: the API it speaks, the server pins it never discloses (with why), and no
/// output-length enforcement where it has none.
pub fn vendor_fills(v: &Vendor) -> Vec<Fill> {
    let mut out = Vec::new();
    if let Some(d) = v.dialects.first() {
        out.push(Fill {
            field: "dialect",
            text: d.name().to_owned(),
            provenance: provenance(
                v,
                &format!(
                    "{} speaks {}",
                    v.host,
                    v.dialects
                        .iter()
                        .map(|d| d.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        });
    }
    for (field, why) in v.undisclosed {
        out.push(Fill {
            field,
            text: "undisclosed".into(),
            provenance: provenance(v, why),
        });
    }
    if !v.holds_length {
        out.push(Fill {
            field: "output_enforcement",
            text: "none".into(),
            provenance: provenance(v, &format!(
                "{} takes neither ignore_eos nor min_tokens: the output length is measured and flagged",
                v.name
            )),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn engine_of(entry: Value) -> Option<Engine> {
        Engine::recognise(&entry)
    }

    #[test]
    fn engines_are_recognised_from_their_models_entry() {
        // Shapes as each server writes its /v1/models entry.
        assert_eq!(
            engine_of(
                json!({"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","created":1,"owned_by":"vllm","root":"meta-llama/Llama-3.1-8B-Instruct","parent":null,"max_model_len":8192,"permission":[]})
            ),
            Some(Engine::Vllm)
        );
        assert_eq!(
            engine_of(
                json!({"id":"qwen","object":"model","created":1,"owned_by":"sglang","root":"qwen","max_model_len":32768})
            ),
            Some(Engine::Sglang)
        );
        assert_eq!(
            engine_of(
                json!({"id":"gemma.gguf","object":"model","created":1,"owned_by":"llamacpp","meta":{"n_params":268098176}})
            ),
            Some(Engine::LlamaCpp)
        );
        assert_eq!(
            engine_of(
                json!({"id":"HuggingFaceTB/SmolLM2-135M","object":"model","created":1,"owned_by":"HuggingFaceTB/SmolLM2-135M"})
            ),
            Some(Engine::Tgi)
        );
        assert_eq!(
            engine_of(
                json!({"id":"llama3.2:1b","object":"model","created":1,"owned_by":"library"})
            ),
            Some(Engine::Ollama)
        );
        assert_eq!(
            engine_of(json!({"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"system"})),
            Some(Engine::OpenAi)
        );
        assert_eq!(
            engine_of(json!({"id":"tiny","pinbench":{"engine":"pinbench-ref 0.1.0"}})),
            Some(Engine::PinbenchRef)
        );
        assert_eq!(engine_of(json!({"id":"x","owned_by":"acme"})), None);
    }

    #[test]
    fn engine_pin_text_is_recognised_and_only_vllm_streams_continuous_usage() {
        assert_eq!(Engine::from_pin("vLLM 0.11.0"), Some(Engine::Vllm));
        assert_eq!(Engine::from_pin("vllm"), Some(Engine::Vllm));
        assert_eq!(Engine::from_pin("llama.cpp b6000"), Some(Engine::LlamaCpp));
        assert_eq!(Engine::from_pin("acme serve"), None);
        assert!(Engine::Vllm.streams_continuous_usage());
        assert!(!Engine::Sglang.streams_continuous_usage());
    }

    #[test]
    fn vllm_probe_fills_model_length_engine_version_and_kv() {
        let url = "http://h:8000/v1/models";
        let r = read_models(url, 200, r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","root":"m","max_model_len":4096}]}"#).expect("reads");
        assert_eq!(r.engine, Some(Engine::Vllm));
        let kinds: Vec<_> = r.follow_ups.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [FollowUpKind::VllmVersion, FollowUpKind::VllmMetrics]
        );
        let mut fills = r.fills;
        read_answer(
            FollowUpKind::VllmVersion,
            "http://h:8000/version",
            200,
            r#"{"version":"0.11.0"}"#,
            &mut fills,
        );
        read_answer(
            FollowUpKind::VllmMetrics,
            "http://h:8000/metrics",
            200,
            "vllm:cache_config_info{block_size=\"16\",kv_cache_size_tokens=\"123456\"} 1.0\n",
            &mut fills,
        );
        let get = |f: &str| fills.iter().find(|x| x.field == f).map(|x| x.text.clone());
        assert_eq!(get("model_id").as_deref(), Some("m"));
        assert_eq!(get("max_model_len").as_deref(), Some("4096"));
        assert_eq!(get("model_engine").as_deref(), Some("vLLM 0.11.0"));
        assert_eq!(get("kv_capacity").as_deref(), Some("123456"));
        assert_eq!(
            fills.iter().filter(|x| x.field == "model_engine").count(),
            1
        );
    }

    #[test]
    fn reference_server_probe_fills_every_server_pin() {
        let body = r#"{"object":"list","data":[{"id":"pinbench-8b","object":"model","owned_by":"pinbench","max_model_len":8192,"pinbench":{"params":8030000000,"kv_capacity_tokens":430000,"max_num_seqs":256,"batching":"continuous","phases":"chunked_prefill","dtype":"bf16","engine":"pinbench-refserver 0.1.0"}}]}"#;
        let r = read_models("http://h/v1/models", 200, body).expect("reads");
        let mut got: Vec<&str> = r.fills.iter().map(|f| f.field).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            [
                "kv_capacity",
                "max_model_len",
                "max_num_seqs",
                "model_engine",
                "model_id",
                "model_params",
                "model_quant",
                "phases",
                "scheduling"
            ]
        );
    }

    #[test]
    fn sglang_tgi_and_ollama_follow_ups_fill_their_pins() {
        let mut fills = Vec::new();
        read_answer(
            FollowUpKind::SglangServerInfo,
            "u",
            200,
            r#"{"version":"0.5.4","context_length":32768,"max_running_requests":48,"max_total_num_tokens":500000}"#,
            &mut fills,
        );
        read_answer(
            FollowUpKind::TgiInfo,
            "u",
            200,
            r#"{"version":"3.3.6","max_total_tokens":4096}"#,
            &mut fills,
        );
        let texts: Vec<_> = fills.iter().map(|f| (f.field, f.text.as_str())).collect();
        assert!(texts.contains(&("model_engine", "TGI 3.3.6")), "{texts:?}");
        assert!(texts.contains(&("max_num_seqs", "48")));
        assert!(texts.contains(&("kv_capacity", "500000")));
        assert!(texts.contains(&("max_model_len", "4096")));
        let mut fills = Vec::new();
        read_answer(
            FollowUpKind::OllamaShow,
            "u",
            200,
            r#"{"details":{"parameter_size":"1.2B","quantization_level":"Q8_0"},"model_info":{"general.architecture":"llama","llama.context_length":131072}}"#,
            &mut fills,
        );
        let texts: Vec<_> = fills.iter().map(|f| (f.field, f.text.as_str())).collect();
        assert_eq!(
            texts,
            [
                ("model_params", "1.2B"),
                ("model_quant", "Q8_0"),
                ("max_model_len", "131072")
            ]
        );
        read_answer(
            FollowUpKind::OllamaVersion,
            "u",
            404,
            "not found",
            &mut fills,
        );
        assert_eq!(fills.len(), 3, "a 404 adds nothing");
    }

    #[test]
    fn unauthorised_and_non_json_answers_are_errors() {
        assert!(matches!(
            read_models("u", 401, ""),
            Err(ProbeError::Unauthorised { .. })
        ));
        assert!(matches!(
            read_models("u", 200, "<html>"),
            Err(ProbeError::NotJson { .. })
        ));
    }
}
