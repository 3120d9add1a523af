//! Vendors by origin: which API a hosted endpoint speaks, how it takes its key, which pins
//! it never discloses and why, whether it holds an output length, and what is known of
//! its CORS behaviour. Pasting `https://api.anthropic.com` picks Anthropic Messages with
//! its headers; a request a browser blocks gets a message that says what that vendor
//! allows and the `pinbench run` command line that runs the same pins natively.
//!
//! CORS facts and their sources (a fact pinbench has not seen is said to be unchecked):
//! OpenAI answers browsers; Anthropic only with `anthropic-dangerous-direct-browser-access:
//! true`, and an organisation can turn browser access off ("CORS requests are not allowed
//! for this Organization because of its settings", anthropic-sdk-typescript#703); Mistral
//! answers browsers but refuses a preflight that asks for a header it does not list
//! (`x-stainless-timeout`, infiolab/infio-copilot#146) — pinbench sends only its
//! dialect's headers.

use crate::dialect::Dialect;

/// What is known of a vendor's answers to a browser's cross-origin requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cors {
    /// It answers a browser (with the headers pinbench sends): the sentence says how.
    Allowed(&'static str),
    /// pinbench has not checked it.
    Unchecked,
}

/// One hosted API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vendor {
    /// Its name.
    pub name: &'static str,
    /// The API's host name.
    pub host: &'static str,
    /// The path under the host that holds `/v1` (`/openai` for Groq), empty when none.
    pub base_path: &'static str,
    /// The APIs it serves; the first is the one a probe picks.
    pub dialects: &'static [Dialect],
    /// The environment variable its SDKs read the key from (for the native command).
    pub key_env: &'static str,
    /// Its CORS behaviour.
    pub cors: Cors,
    /// Whether it takes `ignore_eos` / `min_tokens` (none of these does).
    pub holds_length: bool,
    /// The server pins it never discloses (form field) and why.
    pub undisclosed: &'static [(&'static str, &'static str)],
}

const CLOSED: &str = "a closed model: the vendor publishes no parameter count, precision, serving stack, batch limits, KV budget or scheduling";
const HOSTED: &str = "the vendor does not say how it serves the model (engine, KV budget, batch limits, prefill/decode split, scheduling)";

const CLOSED_PINS: &[(&str, &str)] = &[
    ("model_params", CLOSED),
    ("model_quant", CLOSED),
    ("model_engine", CLOSED),
    ("kv_capacity", CLOSED),
    ("max_num_seqs", CLOSED),
    ("phases", CLOSED),
    ("scheduling", CLOSED),
];

const HOSTED_PINS: &[(&str, &str)] = &[
    ("model_engine", HOSTED),
    ("kv_capacity", HOSTED),
    ("max_num_seqs", HOSTED),
    ("phases", HOSTED),
    ("scheduling", HOSTED),
];

const OPENAI_COMPATIBLE: &[Dialect] = &[Dialect::Chat, Dialect::Completions];

/// Every vendor pinbench knows by origin.
pub const VENDORS: &[Vendor] = &[
    Vendor {
        name: "OpenAI",
        host: "api.openai.com",
        base_path: "",
        dialects: &[Dialect::Responses, Dialect::Chat, Dialect::Completions],
        key_env: "OPENAI_API_KEY",
        cors: Cors::Allowed("OpenAI's API answers browsers with a Bearer key"),
        holds_length: false,
        undisclosed: CLOSED_PINS,
    },
    Vendor {
        name: "Anthropic",
        host: "api.anthropic.com",
        base_path: "",
        dialects: &[Dialect::Messages],
        key_env: "ANTHROPIC_API_KEY",
        cors: Cors::Allowed("Anthropic answers browsers only with the header anthropic-dangerous-direct-browser-access: true (pinbench sends it), and an organisation's settings can turn browser access off"),
        holds_length: false,
        undisclosed: CLOSED_PINS,
    },
    Vendor {
        name: "Google Gemini",
        host: "generativelanguage.googleapis.com",
        base_path: "",
        dialects: &[Dialect::Gemini],
        key_env: "GEMINI_API_KEY",
        cors: Cors::Unchecked,
        holds_length: false,
        undisclosed: CLOSED_PINS,
    },
    Vendor {
        name: "Together AI",
        host: "api.together.xyz",
        base_path: "",
        dialects: OPENAI_COMPATIBLE,
        key_env: "TOGETHER_API_KEY",
        cors: Cors::Unchecked,
        holds_length: false,
        undisclosed: HOSTED_PINS,
    },
    Vendor {
        name: "Fireworks AI",
        host: "api.fireworks.ai",
        base_path: "/inference",
        dialects: OPENAI_COMPATIBLE,
        key_env: "FIREWORKS_API_KEY",
        cors: Cors::Unchecked,
        holds_length: false,
        undisclosed: HOSTED_PINS,
    },
    Vendor {
        name: "Groq",
        host: "api.groq.com",
        base_path: "/openai",
        dialects: OPENAI_COMPATIBLE,
        key_env: "GROQ_API_KEY",
        cors: Cors::Unchecked,
        holds_length: false,
        undisclosed: HOSTED_PINS,
    },
    Vendor {
        name: "OpenRouter",
        host: "openrouter.ai",
        base_path: "/api",
        dialects: &[Dialect::Chat, Dialect::Completions],
        key_env: "OPENROUTER_API_KEY",
        cors: Cors::Unchecked,
        holds_length: false,
        undisclosed: &[
            ("model_engine", "a router: the provider that serves a request, and how, can change from one request to the next"),
            ("kv_capacity", "a router: the provider that serves a request, and how, can change from one request to the next"),
            ("max_num_seqs", "a router: the provider that serves a request, and how, can change from one request to the next"),
            ("phases", "a router: the provider that serves a request, and how, can change from one request to the next"),
            ("scheduling", "a router: the provider that serves a request, and how, can change from one request to the next"),
        ],
    },
    Vendor {
        name: "DeepSeek",
        host: "api.deepseek.com",
        base_path: "",
        dialects: &[Dialect::Chat],
        key_env: "DEEPSEEK_API_KEY",
        cors: Cors::Unchecked,
        holds_length: false,
        undisclosed: HOSTED_PINS,
    },
    Vendor {
        name: "Mistral AI",
        host: "api.mistral.ai",
        base_path: "",
        dialects: &[Dialect::Chat],
        key_env: "MISTRAL_API_KEY",
        cors: Cors::Allowed("Mistral answers browsers but refuses a preflight that asks for a header it does not list (pinbench sends only Authorization and Content-Type)"),
        holds_length: false,
        undisclosed: HOSTED_PINS,
    },
];

/// The vendor whose API is at `url` (any path), matched by host name over https.
pub fn by_url(url: &str) -> Option<&'static Vendor> {
    let url = url.trim();
    let rest = url
        .get(..8)
        .filter(|s| s.eq_ignore_ascii_case("https://"))
        .and(url.get(8..))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains('@') {
        return None;
    }
    let host = authority.to_ascii_lowercase();
    let host = host.strip_suffix(":443").unwrap_or(&host);
    VENDORS.iter().find(|v| v.host == host)
}

impl Vendor {
    /// The endpoint's base URL as pinbench pins it (without `/v1`).
    pub fn base_url(&self) -> String {
        format!("https://{}{}", self.host, self.base_path)
    }

    /// What is known of its CORS behaviour, as a sentence.
    pub fn cors_text(&self) -> String {
        match self.cors {
            Cors::Allowed(s) => format!("{s}."),
            Cors::Unchecked => format!(
                "pinbench has not checked whether {} answers a browser's cross-origin requests.",
                self.name
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendor_is_found_by_its_url_and_no_other() {
        for v in VENDORS {
            assert_eq!(by_url(&v.base_url()), Some(v), "{}", v.name);
            assert_eq!(by_url(&format!("{}/v1", v.base_url())), Some(v));
            assert_eq!(
                by_url(&format!("http://{}", v.host)),
                None,
                "http is not the vendor"
            );
        }
        assert_eq!(
            by_url("HTTPS://API.Anthropic.com:443/v1").map(|v| v.name),
            Some("Anthropic")
        );
        assert_eq!(by_url("https://api.anthropic.com.evil.example"), None);
        assert_eq!(by_url("https://user@api.anthropic.com"), None);
        assert_eq!(by_url("http://127.0.0.1:8000"), None);
        assert_eq!(by_url("https://api.anthropic.com:8443"), None);
    }
}
