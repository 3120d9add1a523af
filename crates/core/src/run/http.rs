//! Requests as the core decides them: method, URL, every header (the API key only to its
//! own origin) and the body, for the lifecycle's plain requests and the run's streams
//! alike; a host sends them as they are.

use serde::{Deserialize, Serialize};

use crate::dialect::Dialect;
use crate::pins;
use crate::record::RequestTimeline;

/// One HTTP request as the core decided it: method, URL, every header and the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// Full URL.
    pub url: String,
    /// Headers to send, in order.
    pub headers: Vec<(String, String)>,
    /// Body (JSON) of a `POST`.
    pub body: Option<String>,
}

impl HttpRequest {
    /// A `GET` of `url`.
    pub fn get(url: String) -> Self {
        Self {
            method: "GET",
            url,
            headers: Vec::new(),
            body: None,
        }
    }

    /// A `POST` of a JSON body.
    pub fn post_json(url: String, body: String) -> Self {
        Self {
            method: "POST",
            url,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(body),
        }
    }

    /// A streaming `POST` of a JSON body to a model endpoint in `dialect`, with the API
    /// key (in the dialect's own header) when it is bound to the URL's origin. Only the
    /// headers the dialect needs: one unexpected header fails a vendor's CORS preflight.
    pub fn stream(dialect: Dialect, url: String, body: String, key: Option<&ApiKey>) -> Self {
        let mut r = Self::post_json(url, body);
        r.headers
            .push(("accept".into(), "text/event-stream".into()));
        let key = key.and_then(|k| k.for_url(&r.url)).map(str::to_owned);
        match dialect {
            Dialect::Messages => {
                r.headers
                    .push(("anthropic-version".into(), "2023-06-01".into()));
                // Anthropic answers a browser's request only with this header.
                r.headers.push((
                    "anthropic-dangerous-direct-browser-access".into(),
                    "true".into(),
                ));
                if let Some(k) = key {
                    r.headers.push(("x-api-key".into(), k));
                }
            }
            Dialect::Gemini => {
                if let Some(k) = key {
                    r.headers.push(("x-goog-api-key".into(), k));
                }
            }
            Dialect::Completions | Dialect::Chat | Dialect::Responses => {
                if let Some(k) = key {
                    r.headers
                        .push(("authorization".into(), format!("Bearer {k}")));
                }
            }
        }
        r
    }
}

/// Where a streamed response's events go, timestamped by the host as they arrive.
pub trait StreamSink {
    /// Response headers arrived at `t_us`.
    fn on_headers(&mut self, t_us: u64, status: u16, content_type: Option<&str>);
    /// Body bytes arrived at `t_us`.
    fn on_bytes(&mut self, t_us: u64, bytes: &[u8]);
}

impl StreamSink for RequestTimeline {
    fn on_headers(&mut self, t_us: u64, status: u16, content_type: Option<&str>) {
        RequestTimeline::on_headers(self, t_us, status, content_type);
    }
    fn on_bytes(&mut self, t_us: u64, bytes: &[u8]) {
        RequestTimeline::on_bytes(self, t_us, bytes);
    }
}

/// An API key and the origin it was given for: it is sent to that origin only, so a pins
/// file or a link that names another endpoint cannot collect it. Serialised only into the
/// page's message to its run worker; never into a report, a link or storage.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// The key.
    pub value: String,
    /// `scheme://host:port` it belongs to.
    pub origin: String,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey(<redacted> for {})", self.origin)
    }
}

impl ApiKey {
    /// A key for the origin of `url`; `None` when the key is empty or the URL is not
    /// `http(s)://host:port`.
    pub fn for_endpoint(value: &str, url: &str) -> Option<Self> {
        let value = value.trim();
        (!value.is_empty()).then_some(())?;
        Some(Self {
            value: value.to_owned(),
            origin: pins::origin_of(url)?,
        })
    }

    /// The key, when `url` (a request URL: any path and query) is on its origin.
    pub fn for_url(&self, url: &str) -> Option<&str> {
        (request_origin(url).as_deref() == Some(self.origin.as_str())).then_some(&self.value)
    }
}

/// `scheme://host[:port]` of a request URL (lower case), `None` when it has credentials
/// or is not `http(s)`.
fn request_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    (scheme == "http" || scheme == "https").then_some(())?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    (!authority.is_empty() && !authority.contains('@')).then_some(())?;
    Some(format!("{scheme}://{}", authority.to_ascii_lowercase()))
}

/// The secrets a run must never write into its records: the API key and the values of
/// any extra headers (a server that echoes a request back cannot leak them into a report).
pub fn secrets(key: Option<&ApiKey>, extra_headers: &[(String, String)]) -> Vec<String> {
    key.map(|k| k.value.clone())
        .into_iter()
        .chain(extra_headers.iter().map(|(_, v)| v.clone()))
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{LengthEnforcement, ReasoningMode, ReasoningRequest, RequestSpec};

    fn spec(reasoning: ReasoningRequest) -> RequestSpec {
        RequestSpec {
            model: "m-1".into(),
            prompt: "hi".into(),
            max_tokens: 256,
            enforcement: LengthEnforcement::None,
            temperature: None,
            extra: Default::default(),
            nonce: None,
            include_usage: true,
            continuous_usage: false,
            reasoning,
            history: Vec::new(),
        }
    }

    /// The exact request of each vendor: path, headers (the key in the dialect's own
    /// header, nothing more) and body.
    #[test]
    fn each_vendor_gets_its_own_request() {
        let cases = [
            (
                Dialect::Responses,
                "https://api.openai.com",
                ReasoningRequest {
                    mode: ReasoningMode::Hidden,
                    effort: Some("high".into()),
                    budget_tokens: None,
                },
                "/v1/responses",
                vec![("authorization", "Bearer k")],
                serde_json::json!({"model":"m-1","input":"hi","max_output_tokens":256,"stream":true,"reasoning":{"effort":"high"}}),
            ),
            (
                Dialect::Messages,
                "https://api.anthropic.com",
                ReasoningRequest {
                    mode: ReasoningMode::Visible,
                    effort: None,
                    budget_tokens: Some(2048),
                },
                "/v1/messages",
                vec![
                    ("anthropic-version", "2023-06-01"),
                    ("anthropic-dangerous-direct-browser-access", "true"),
                    ("x-api-key", "k"),
                ],
                serde_json::json!({"model":"m-1","max_tokens":256,"messages":[{"role":"user","content":"hi"}],"stream":true,"thinking":{"type":"enabled","budget_tokens":2048}}),
            ),
            (
                Dialect::Gemini,
                "https://generativelanguage.googleapis.com",
                ReasoningRequest {
                    mode: ReasoningMode::Visible,
                    effort: None,
                    budget_tokens: Some(1024),
                },
                "/v1beta/models/m-1:streamGenerateContent?alt=sse",
                vec![("x-goog-api-key", "k")],
                serde_json::json!({"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":256,"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}}}),
            ),
            (
                Dialect::Chat,
                "https://api.deepseek.com",
                ReasoningRequest {
                    mode: ReasoningMode::Visible,
                    effort: Some("low".into()),
                    budget_tokens: None,
                },
                "/v1/chat/completions",
                vec![("authorization", "Bearer k")],
                serde_json::json!({"model":"m-1","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":256,"stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"low"}),
            ),
        ];
        for (dialect, base, reasoning, path, auth, body) in cases {
            let key = ApiKey::for_endpoint("k", base).expect("key");
            let url = format!("{base}{}", dialect.path("m-1"));
            assert!(url.ends_with(path), "{dialect:?}: {url}");
            let s = spec(reasoning);
            let r = HttpRequest::stream(dialect, url, s.body(dialect).to_string(), Some(&key));
            let mut want = vec![
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
            ];
            want.extend(auth);
            let got: Vec<(&str, &str)> = r
                .headers
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            assert_eq!(got, want, "{dialect:?}");
            let sent: serde_json::Value =
                serde_json::from_str(r.body.as_deref().expect("body")).expect("json");
            assert_eq!(sent, body, "{dialect:?}");
        }
    }

    /// A key given for one origin never goes to another, in any dialect's header.
    #[test]
    fn a_key_stays_with_its_origin_in_every_dialect() {
        let key = ApiKey::for_endpoint("k", "https://api.anthropic.com").expect("key");
        for d in Dialect::ALL {
            let r = HttpRequest::stream(
                d,
                format!("https://evil.example{}", d.path("m")),
                "{}".into(),
                Some(&key),
            );
            assert!(
                r.headers.iter().all(|(_, v)| v != "k" && v != "Bearer k"),
                "{d:?}: {:?}",
                r.headers
            );
        }
    }
}
