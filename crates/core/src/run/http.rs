//! Requests as the core decides them: method, URL, every header (the API key only to its
//! own origin) and the body, for the lifecycle's plain requests and the run's streams
//! alike; a host sends them as they are.

use serde::{Deserialize, Serialize};

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

    /// A streaming `POST` of a JSON body to a model endpoint, with the API key when it is
    /// bound to the URL's origin.
    pub fn stream(url: String, body: String, key: Option<&ApiKey>) -> Self {
        let mut r = Self::post_json(url, body);
        r.headers
            .push(("accept".into(), "text/event-stream".into()));
        if let Some(k) = key.and_then(|k| k.for_url(&r.url)) {
            r.headers
                .push(("authorization".into(), format!("Bearer {k}")));
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

    /// The key, when `url` is on its origin.
    pub fn for_url(&self, url: &str) -> Option<&str> {
        (pins::origin_of(url).as_deref() == Some(self.origin.as_str())).then_some(&self.value)
    }
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
