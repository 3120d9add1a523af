//! The lifecycle around a run, one for every host: **probe** (what the endpoint says) →
//! **pin** (fills into the form, then `RunConfig::try_from`) → **calibrate** (`/tokenize`)
//! → **behaviour probes** (what the endpoint does) → run (the host drives a
//! [`RunSession`](crate::session::RunSession)) → **build and sign** the report.
//!
//! The core decides; a host only moves bytes and reads its clock, through [`Host`] — the
//! browser tab (`web::lifecycle`) and the native command (`native::host`) implement it, the
//! tests implement it over a simulated server. Which URLs are read and in which order,
//! which headers a request carries (the API key only to its own origin), which requests the
//! behaviour probes send and when, what their timings mean, what a probe keeps as evidence
//! and which fills a pins file's open fields take: all of it is here, so both hosts do the
//! same and drift cannot happen.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

use crate::behaviour::{
    self as bh, batching, batching_verdict, cache_verdict_of, prefix_cache, slowdown, slowdown_of,
    BatchingVerdict, CacheVerdict, Timed,
};
use crate::dialect::Dialect;
use crate::metrics::RunHost;
use crate::metrics::{ClientEnv, Slo};
use crate::pins::{self, wire_name, Provenance, RawConfig, RawField};
use crate::probe::{self, Engine, Fill};
use crate::prompt::{self, Calibration, CalibrationError};
use crate::record::{RequestRecord, RequestTimeline, StreamEnd};
use crate::report::{FiguredReport, ProbeSnapshot, Report, ReportBody, ReportError};
use crate::sign::{KeyPair, SignatureBlock};

pub use super::http::{secrets, ApiKey, HttpRequest, StreamSink};

/// What a host gives the lifecycle: a clock, randomness and a network. It decides nothing.
///
/// The futures need not be `Send` (a browser's are not), so the trait is used generically,
/// never as `dyn`.
pub trait Host {
    /// Which host this is (its limits judge its runs: [`RunHost::limits`]).
    fn run_host(&self) -> RunHost;
    /// The host's monotonic clock, µs.
    fn now_us(&self) -> u64;
    /// 32 random bytes (nonces), or why there are none.
    fn random_seed(&self) -> Result<[u8; 32], String>;
    /// Whether the host is a page served over https (which cannot call an `http://`
    /// endpoint: mixed content).
    fn page_is_https(&self) -> bool {
        false
    }
    /// Sends a plain request; its status and body text, or why there was no answer.
    fn request(&self, req: HttpRequest) -> impl Future<Output = Result<(u16, String), String>>;
    /// Sends a request and hands its headers and body to `sink` as they arrive, each with
    /// the host clock's reading; returns that reading when the body ended (or why it broke
    /// off).
    fn stream(
        &self,
        req: HttpRequest,
        sink: &mut dyn StreamSink,
    ) -> impl Future<Output = Result<u64, String>>;
    /// Waits `ms` milliseconds.
    fn sleep_ms(&self, ms: u32) -> impl Future<Output = ()>;
}

/// Errors of the lifecycle's steps (each a message a user can act on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifecycleError {
    /// The endpoint URL is not `http(s)://host:port[/path]`.
    #[error("the endpoint URL is not http(s)://host:port: {0:?}")]
    BadUrl(String),
    /// An https page cannot call an http:// endpoint.
    #[error("Mixed content: this page is HTTPS and cannot call an http:// endpoint. Serve the endpoint over HTTPS or open pinbench over http://.")]
    MixedContent,
    /// `/v1/models` could not be read.
    #[error("Could not read {url}: {message}. {hint}")]
    Unreachable {
        /// What was read.
        url: String,
        /// The host's reason.
        message: String,
        /// What usually causes it on this host.
        hint: &'static str,
    },
    /// `/v1/models` answered, but not as expected.
    #[error(transparent)]
    Probe(#[from] probe::ProbeError),
    /// The behaviour probes need these pins first.
    #[error(
        "Set the endpoint, its API and the model id first (probing the endpoint fills the model)."
    )]
    NotPinned,
    /// A behaviour probe request failed.
    #[error("a probe request failed: {0}")]
    ProbeRequest(String),
    /// No random bytes for nonces.
    #[error("no random source: {0}")]
    NoRandomness(String),
    /// The `/tokenize` calibration failed.
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    /// A dataset's lengths could not be had.
    #[error("The dataset: {0}")]
    Dataset(String),
    /// The report could not be built from the records.
    #[error("Could not build the report: {0}")]
    Build(String),
    /// The signer refused.
    #[error("Could not sign the report: {0}")]
    Sign(String),
}

/// What a probe read: the pins it found (with their provenance) and, for the report, what
/// each answer said that became a pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probed {
    /// The engine recognised from `/v1/models`.
    pub engine: Option<Engine>,
    /// Every value found, as a form field's text with its source.
    pub fills: Vec<Fill>,
    /// The hosted API the URL names, whose fills come from the vendor table (no request
    /// was sent).
    pub vendor: Option<&'static crate::vendors::Vendor>,
    /// One per URL read: its status and the fields that became pins (never whole bodies,
    /// which may hold local paths and other details of the server's machine).
    pub snapshots: Vec<ProbeSnapshot>,
}

/// Probes an endpoint: `GET /v1/models`, then the follow-up reads the core asks of the
/// engine it recognised (never others: a 404 would be a console error in a browser).
pub async fn probe<H: Host>(host: &H, endpoint_url: &str) -> Result<Probed, LifecycleError> {
    let base = pins::parse_base_url(endpoint_url)
        .ok_or_else(|| LifecycleError::BadUrl(endpoint_url.to_owned()))?;
    if host.page_is_https() && base.starts_with("http://") {
        return Err(LifecycleError::MixedContent);
    }
    // A hosted API says nothing of how it serves (and reads need its key): what is known
    // of it comes from the vendor table, with no request.
    if let Some(v) = crate::vendors::by_url(&base) {
        return Ok(Probed {
            engine: None,
            fills: probe::vendor_fills(v),
            vendor: Some(v),
            snapshots: Vec::new(),
        });
    }
    let models_url = format!("{base}/v1/models");
    let (status, text) = host
        .request(HttpRequest::get(models_url.clone()))
        .await
        .map_err(|message| LifecycleError::Unreachable {
            url: models_url.clone(),
            message,
            hint: unreachable_hint(host.run_host()),
        })?;
    let read = probe::read_models(&models_url, status, &text)?;
    let mut fetched = vec![(models_url, status)];
    let mut fills = read.fills;
    for f in read.follow_ups {
        let url = format!("{base}{}", f.path);
        let req = match f.body {
            Some(b) => HttpRequest::post_json(url.clone(), b),
            None => HttpRequest {
                method: f.method,
                ..HttpRequest::get(url.clone())
            },
        };
        if let Ok((st, body)) = host.request(req).await {
            probe::read_answer(f.kind, &url, st, &body, &mut fills);
            fetched.push((url, st));
        }
    }
    let snapshots = fetched
        .into_iter()
        .map(|(url, st)| {
            // Inserted one by one: collecting into a map would pull a sort into the wasm.
            let mut said = serde_json::Map::new();
            for f in &fills {
                if let Provenance::Probed { url: u, field } = &f.provenance {
                    if *u == url {
                        said.insert(field.clone(), f.text.clone().into());
                    }
                }
            }
            ProbeSnapshot::new(&url, st, &serde_json::Value::Object(said).to_string())
        })
        .collect();
    Ok(Probed {
        engine: read.engine,
        fills,
        vendor: None,
        snapshots,
    })
}

/// Why `/v1/models` may not answer, on this host.
fn unreachable_hint(host: RunHost) -> &'static str {
    match host {
        RunHost::Worker | RunHost::MainThread => "The server is down, or it refuses this page's origin (CORS): vLLM --allowed-origins, TGI --cors-allow-origin, Ollama OLLAMA_ORIGINS; llama.cpp and SGLang allow any origin.",
        RunHost::Native => "The server is down or not listening there, or (https) its certificate is not trusted: pass --ca-cert for a self-signed one.",
    }
}

/// How probed values meet what a form already holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillPolicy {
    /// Every probed value replaces the field (the Run screen's Probe button: the user asked).
    Replace,
    /// Only empty fields take a probed value (a pins file: what it states stays stated).
    OpenOnly,
}

/// Writes `fills` into `raw` under `policy`; returns the fields that changed, in order.
pub fn apply_fills(raw: &mut RawConfig, fills: &[Fill], policy: FillPolicy) -> Vec<&'static str> {
    let mut changed = Vec::new();
    for f in fills {
        let Some(field) = raw.field_mut(f.field) else {
            continue;
        };
        if policy == FillPolicy::OpenOnly && !field.text.trim().is_empty() {
            continue;
        }
        *field = RawField {
            text: f.text.clone(),
            source: f.provenance.clone(),
        };
        if !changed.contains(&f.field) {
            changed.push(f.field);
        }
    }
    changed
}

/// The form fields a probe can fill (what servers say about themselves).
pub const PROBED_FIELDS: &[&str] = &[
    "model_id",
    "model_params",
    "model_quant",
    "model_engine",
    "max_model_len",
    "kv_capacity",
    "max_num_seqs",
    "phases",
    "scheduling",
    "reasoning",
];

/// The fields a probe could fill that `raw` leaves empty: a pins file that states all of
/// them runs without reading the endpoint's introspection (which a gateway may not serve).
pub fn open_probe_fields(raw: &RawConfig) -> Vec<&'static str> {
    PROBED_FIELDS
        .iter()
        .copied()
        .filter(|name| raw.field(name).is_some_and(|f| f.text.trim().is_empty()))
        .collect()
}

/// The snapshots read from this endpoint (the URL may have changed since they were read),
/// and the behaviour probes' evidence for it.
pub fn snapshots_for(snapshots: &[ProbeSnapshot], base_url: &str) -> Vec<ProbeSnapshot> {
    let prefix = format!("{base_url}/");
    snapshots
        .iter()
        .filter(|p| p.url.starts_with(&prefix))
        .cloned()
        .collect()
}

/// Replaces the behaviour probes' evidence in `kept` by `new` (the endpoint's own reads
/// stay).
pub fn replace_behaviour_evidence(kept: &mut Vec<ProbeSnapshot>, new: Vec<ProbeSnapshot>) {
    kept.retain(|s| !s.url.contains(MEASURED_MARK));
    kept.extend(new);
}

/// What marks a snapshot as the behaviour probes' evidence rather than a read.
const MEASURED_MARK: &str = "measured by pinbench";

/// The endpoint, API and model the behaviour probes talk to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Base URL (`http(s)://host:port`).
    pub base_url: String,
    /// The API shape.
    pub dialect: Dialect,
    /// Model id.
    pub model: String,
}

impl Target {
    /// The target a form names, or [`LifecycleError::NotPinned`] while any of the three is
    /// missing.
    pub fn of_form(raw: &RawConfig) -> Result<Self, LifecycleError> {
        let base_url =
            pins::parse_base_url(&raw.endpoint_url.text).ok_or(LifecycleError::NotPinned)?;
        let dialect = match raw.dialect.text.trim() {
            "chat" => Dialect::Chat,
            "completions" => Dialect::Completions,
            _ => return Err(LifecycleError::NotPinned),
        };
        let model = raw.model_id.text.trim().to_owned();
        if model.is_empty() {
            return Err(LifecycleError::NotPinned);
        }
        Ok(Self {
            base_url,
            dialect,
            model,
        })
    }
}

/// What the behaviour probes found.
#[derive(Clone, Debug, PartialEq)]
pub struct Behaviour {
    /// The batching regime.
    pub batching: BatchingVerdict,
    /// The prefix cache.
    pub prefix_cache: CacheVerdict,
    /// TPOT at the longest probed prompt ÷ at the shortest, when measured.
    pub slowdown_ratio: Option<f64>,
    /// Pins filled (the scheduling pin, when the batching verdict is clear).
    pub fills: Vec<Fill>,
    /// Evidence for the report.
    pub snapshots: Vec<ProbeSnapshot>,
    /// One line per probe, for a person.
    pub lines: Vec<String>,
}

/// Runs both futures to completion, polling each in turn (the core has no runtime; the
/// host's executor wakes it).
async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut ra, mut rb) = (None, None);
    poll_fn(move |cx| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        match (ra.take(), rb.take()) {
            (Some(x), Some(y)) => Poll::Ready((x, y)),
            (x, y) => {
                (ra, rb) = (x, y);
                Poll::Pending
            }
        }
    })
    .await
}

/// Sends one streaming request and times it into a record (the core's timeline: a
/// timestamp per read).
pub async fn timed_stream<H: Host>(
    host: &H,
    req: HttpRequest,
    dialect: Dialect,
    prompt_tokens: u32,
    output_tokens: u32,
) -> Result<RequestRecord, String> {
    let mut tl = RequestTimeline::new(0, 0, dialect, prompt_tokens, output_tokens, host.now_us());
    let end = host.stream(req, &mut tl).await?;
    Ok(tl.finish(end, StreamEnd::Eof))
}

/// Measures what the endpoint does: the batching regime (a short request sent while a long
/// one decodes), the prefix cache (the same prompt twice, and behind fresh nonces) and
/// decode slowdown (TPOT at three prompt lengths, one stream). One request at a time but
/// for the batching pair.
pub async fn behaviour<H: Host>(
    host: &H,
    target: &Target,
    key: Option<&ApiKey>,
) -> Result<Behaviour, LifecycleError> {
    let seed = host.random_seed().map_err(LifecycleError::NoRandomness)?;
    let seed = u64::from_le_bytes([
        seed[0], seed[1], seed[2], seed[3], seed[4], seed[5], seed[6], seed[7],
    ]);
    let nonce = |i: u32| prompt::nonce(i, seed);
    let url = format!("{}{}", target.base_url, target.dialect.path(&target.model));
    let (dialect, model) = (target.dialect, target.model.as_str());
    let run = |body: String, p: u32, o: u32| {
        let req = HttpRequest::stream(dialect, url.clone(), body, key);
        async move {
            let rec = timed_stream(host, req, dialect, p, o)
                .await
                .map_err(LifecycleError::ProbeRequest)?;
            Timed::of(&rec).ok_or_else(|| LifecycleError::ProbeRequest(rec.outcome.kind()))
        }
    };
    let mut fills = Vec::new();
    let mut snapshots = Vec::new();
    let mut lines = Vec::new();
    // Batching: A (long), then B while A decodes.
    let [a_body, b_body] = bh::batching_requests(dialect, model, [Some(nonce(1)), Some(nonce(2))]);
    let (a, b) = join(
        run(a_body, batching::PROMPT_TOKENS, batching::A_TOKENS),
        async {
            host.sleep_ms(batching::B_DELAY_MS).await;
            run(b_body, batching::PROMPT_TOKENS, batching::B_TOKENS).await
        },
    )
    .await;
    let (a, b) = (a?, b?);
    let (batching_v, why) = batching_verdict(&a, &b);
    let scheduling = match batching_v {
        BatchingVerdict::Continuous => Some("continuous"),
        BatchingVerdict::Static => Some("static"),
        BatchingVerdict::Unclear => None,
    };
    if let Some(s) = scheduling {
        fills.push(Fill {
            field: "scheduling",
            text: s.to_owned(),
            provenance: bh::probed("batching (staggered requests)", &why),
        });
    }
    lines.push(format!("batching: {} — {why}", wire_name(&batching_v)));
    snapshots.push(ProbeSnapshot::new(
        &format!("{url} — {MEASURED_MARK}: batching"),
        200,
        &serde_json::json!({"verdict": batching_v, "evidence": why, "a": a, "b": b}).to_string(),
    ));
    // Prefix cache: the same prompt cold and warm, and behind fresh nonces.
    let mut ttfts = [0u64; 5];
    let bodies = bh::cache_requests(
        dialect,
        model,
        Some(format!("{} ", nonce(3))),
        [nonce(4), nonce(5)],
    );
    for (t, body) in ttfts.iter_mut().zip(bodies) {
        *t = run(
            body,
            prefix_cache::PROMPT_TOKENS,
            prefix_cache::OUTPUT_TOKENS,
        )
        .await?
        .ttft_us();
    }
    let (cache_v, cwhy) = cache_verdict_of(ttfts);
    lines.push(format!("prefix cache: {} — {cwhy}", wire_name(&cache_v)));
    snapshots.push(ProbeSnapshot::new(
        &format!("{url} — {MEASURED_MARK}: prefix cache"),
        200,
        &serde_json::json!({"verdict": cache_v, "evidence": cwhy}).to_string(),
    ));
    // Decode slowdown: TPOT at three prompt lengths, one stream.
    let mut points = Vec::new();
    for (i, p) in (10u32..).zip(slowdown::PROMPTS) {
        let body = bh::request_body(
            dialect,
            model,
            p,
            i,
            Some(nonce(i)),
            slowdown::OUTPUT_TOKENS,
        );
        if let Some(t) = run(body, p, slowdown::OUTPUT_TOKENS).await?.tpot_us {
            points.push((p, t));
        }
    }
    let mut slowdown_ratio = None;
    if let Some((s, text)) = slowdown_of(&points) {
        lines.push(format!("decode slowdown: {text}"));
        slowdown_ratio = Some(s.ratio);
        snapshots.push(ProbeSnapshot::new(
            &format!("{url} — {MEASURED_MARK}: decode slowdown"),
            200,
            &serde_json::json!({"points": s.points, "ratio": s.ratio, "evidence": text})
                .to_string(),
        ));
    }
    Ok(Behaviour {
        batching: batching_v,
        prefix_cache: cache_v,
        slowdown_ratio,
        fills,
        snapshots,
        lines,
    })
}

/// The `/tokenize` calibration a pinned run needs (none unless its prompt exactness is
/// the server's tokenizer).
pub async fn calibrate<H: Host>(
    host: &H,
    cfg: &pins::RunConfig,
) -> Result<Calibration, LifecycleError> {
    if cfg.prompt_exactness.value != pins::PromptExactness::ServerTokenizer {
        return Ok(Calibration::default());
    }
    Ok(prompt::calibrate_run(cfg, |url, body| async move {
        host.request(HttpRequest::post_json(url, body)).await.ok()
    })
    .await?)
}

/// The lengths a run takes from `dataset` (the file its pin names), in the order it sends
/// them: a CSV's own; a ShareGPT file's texts counted by the endpoint's `/tokenize` — the
/// prompt as the run sends a prompt ([`prompt::tokenize_bodies`], template included), the
/// answer as a plain prompt (BOS included, as vLLM's bench counts it) — never estimated:
/// a row the server does not count stops the run from starting. With the prompt pinned
/// as `dataset_text`, the rows' prompts come along, to be sent as they are.
pub async fn dataset_lengths<H: Host>(
    host: &H,
    cfg: &pins::RunConfig,
    dataset: &crate::dataset::Dataset,
) -> Result<crate::dataset::DatasetLengths, LifecycleError> {
    let Some(pin) = cfg.dataset.as_ref().map(|d| &d.value) else {
        return Err(LifecycleError::Dataset(
            "the run takes no lengths from a dataset".into(),
        ));
    };
    if pin.sha256 != dataset.sha256 {
        return Err(LifecycleError::Dataset(format!(
            "the file is not the one pinned (SHA-256 {} ≠ {})",
            dataset.sha256, pin.sha256
        )));
    }
    if let Some(known) = dataset.known_lengths() {
        return Ok(known);
    }
    let url = format!("{}/tokenize", cfg.endpoint.base_url);
    let model = &cfg.model.id.value;
    let count = |bodies: Vec<String>| {
        let url = url.clone();
        async move {
            for body in bodies {
                let answer = host
                    .request(HttpRequest::post_json(url.clone(), body))
                    .await;
                if let Ok((200, text)) = answer {
                    if let Some(n) =
                        prompt::tokenize_count(&text).and_then(|n| u32::try_from(n).ok())
                    {
                        return Some(n);
                    }
                }
            }
            None
        }
    };
    let send_text = cfg.prompt_len.value == pins::LengthDist::DatasetText {};
    let mut rows = Vec::new();
    let mut texts = Vec::new();
    for i in dataset.order() {
        let Some(crate::dataset::DatasetRow::Texts { prompt, completion }) = dataset.rows.get(i)
        else {
            return Err(LifecycleError::Dataset("a row holds no texts".into()));
        };
        let (p, o) = join(
            count(prompt::tokenize_bodies(cfg.endpoint.dialect, model, prompt)),
            count(prompt::tokenize_bodies(
                Dialect::Completions,
                model,
                completion,
            )),
        )
        .await;
        match (p, o) {
            (Some(p), Some(o)) if p > 0 && o > 0 => {
                rows.push((p, o));
                if send_text {
                    texts.push(prompt.clone());
                }
            }
            _ => {
                return Err(LifecycleError::Dataset(format!(
                    "{url} did not count row {} of the file: a ShareGPT file's texts are counted with the server's own tokenizer; give a CSV of token lengths (input_tokens,output_tokens) for an endpoint without /tokenize",
                    i + 1
                )))
            }
        }
    }
    Ok(crate::dataset::DatasetLengths {
        sha256: dataset.sha256.clone(),
        rows,
        texts,
    })
}

/// What checking a report file came to, worst last: the order is the exit status's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CheckOutcome {
    /// Signed by a trusted key, unmodified, every summary figure recomputes.
    Trusted,
    /// Valid and consistent, but the signer is not in the trust list (anyone can make a key).
    UnknownSigner,
    /// Unsigned, modified, inconsistent or unreadable.
    Bad,
}

impl CheckOutcome {
    /// The exit status a command gives for it (documented in `pinbench verify --help`).
    pub fn exit_code(self) -> i32 {
        match self {
            CheckOutcome::Trusted => 0,
            CheckOutcome::UnknownSigner => 3,
            CheckOutcome::Bad => 1,
        }
    }
}

/// A key that signs reports: a software key ([`KeyPair`]) or one the host keeps and that
/// answers later (a non-extractable WebCrypto key).
pub trait Signer {
    /// The 32-byte Ed25519 public key.
    fn public_key(&self) -> [u8; 32];
    /// The Ed25519 signature of `bytes`, or why there is none.
    fn sign(&self, bytes: &[u8]) -> impl Future<Output = Result<[u8; 64], String>>;
}

impl Signer for KeyPair {
    fn public_key(&self) -> [u8; 32] {
        KeyPair::public_key(self)
    }

    fn sign(&self, bytes: &[u8]) -> impl Future<Output = Result<[u8; 64], String>> {
        std::future::ready(Ok(KeyPair::sign(self, bytes)))
    }
}

/// What a run measured, with what its report needs besides the records.
#[derive(Clone, Debug)]
pub struct Finished {
    /// When the run started (ISO 8601, by the host's wall clock).
    pub created: String,
    /// The pins it ran with.
    pub cfg: pins::RunConfig,
    /// Goodput SLOs, if set.
    pub slo: Option<Slo>,
    /// What the probes read (only this endpoint's are kept: [`snapshots_for`]).
    pub probes: Vec<ProbeSnapshot>,
    /// The measuring loop's environment.
    pub env: ClientEnv,
    /// Every record, in dispatch order.
    pub records: Vec<RequestRecord>,
    /// An SLO search's plan, probes and answer, when the load steps are its probes.
    pub search: Option<crate::search::SearchRecord>,
}

/// The end of every run, on every host: the report built from the records (figures,
/// client verdict by the host's limits, this endpoint's probe evidence), then signed
/// with a fresh card of its figures.
pub async fn finish(
    mut run: Finished,
    signer: &impl Signer,
) -> Result<FiguredReport, LifecycleError> {
    let probes = snapshots_for(&run.probes, &run.cfg.endpoint.base_url);
    // A search's load steps are its probes, the pinned step's kind kept.
    if let (Some(s), Some(&base)) = (&run.search, run.cfg.load.value.steps.first()) {
        run.cfg.load.value.steps = s
            .probes
            .iter()
            .map(|p| crate::search::probe_step(base, p.load))
            .collect();
    }
    let (mut body, figures) =
        ReportBody::build_figured(run.created, run.cfg, run.slo, probes, run.env, run.records)
            .map_err(built)?;
    body.search = run.search;
    sign_figured(body, figures, signer).await
}

/// Signs a body built elsewhere (a merge, an interrupted run's checkpoint), its figures
/// computed from its records.
pub async fn sign_body(
    body: ReportBody,
    signer: &impl Signer,
) -> Result<FiguredReport, LifecycleError> {
    let figures = body.figures().map_err(built)?;
    sign_figured(body, figures, signer).await
}

fn built(e: ReportError) -> LifecycleError {
    LifecycleError::Build(e.to_string())
}

async fn sign_figured(
    body: ReportBody,
    figures: crate::metrics::Summary,
    signer: &impl Signer,
) -> Result<FiguredReport, LifecycleError> {
    let mut report = Report::new(body);
    let pk = signer.public_key();
    let card = report.card_to_sign(&figures).map_err(built)?;
    let sig = signer.sign(&card).await.map_err(LifecycleError::Sign)?;
    report.attach_card_signature(SignatureBlock::ed25519(&pk, &sig));
    let body = report.signed_bytes().map_err(built)?;
    let sig = signer.sign(&body).await.map_err(LifecycleError::Sign)?;
    report.attach_signature(SignatureBlock::ed25519(&pk, &sig));
    Ok(FiguredReport { report, figures })
}

/// Checks a report's text: its signature against the trusted keys (base64 public keys or
/// key ids), then every summary figure recomputed from its records. One line per finding.
pub fn check_report(text: &str, trust: &[String]) -> (CheckOutcome, Vec<String>) {
    let opened = match crate::report::open(text) {
        Ok(o) => o,
        Err(e) => return (CheckOutcome::Bad, vec![e.to_string()]),
    };
    let mut lines = Vec::new();
    let mut outcome = match &opened.verification {
        crate::report::Verification::Valid { key_id, public_key } => {
            if trust.iter().any(|t| t == key_id || t == public_key) {
                lines.push(format!("signature valid, trusted signer (key {key_id})"));
                CheckOutcome::Trusted
            } else {
                lines.push(format!("valid signature, unknown signer (key {key_id}, public key {public_key}); pass --trust to accept it"));
                CheckOutcome::UnknownSigner
            }
        }
        crate::report::Verification::Unsigned => {
            lines.push("unsigned".into());
            CheckOutcome::Bad
        }
        crate::report::Verification::Invalid { reason } => {
            lines.push(format!("signature INVALID: {reason}"));
            CheckOutcome::Bad
        }
    };
    let trusted = |key_id: &str, public_key: Option<&str>| {
        trust
            .iter()
            .any(|t| t == key_id || Some(t.as_str()) == public_key)
    };
    let dups = crate::report::duplicate_records(&opened.report.body);
    if !dups.is_empty() {
        outcome = CheckOutcome::Bad;
        lines.extend(dups.into_iter().map(|d| format!("DUPLICATE {d}")));
    }
    if let Some((sources, problems)) = crate::merge::check_sources(&opened.report.body) {
        for s in &sources {
            let who = if trusted(&s.key_id, s.public_key.as_deref()) {
                "trusted signer"
            } else {
                outcome = outcome.max(CheckOutcome::UnknownSigner);
                "unknown signer"
            };
            lines.push(format!(
                "source {}: {} ({who} {}), {}, started {}, {} records, load {}",
                s.title,
                if s.problem.is_some() {
                    "NOT VERIFIED"
                } else {
                    "signature valid"
                },
                s.key_id,
                s.digest,
                s.created,
                s.records,
                s.load
            ));
        }
        if problems.is_empty() {
            lines.push(format!(
                "the {} sources re-verify and merge again into exactly these records",
                sources.len()
            ));
        } else {
            outcome = CheckOutcome::Bad;
            lines.extend(problems.into_iter().map(|p| format!("MERGE {p}")));
        }
    }
    match crate::report::recompute(&opened.report) {
        Ok(m) if m.is_empty() => lines.push("every summary figure matches its records".into()),
        Ok(m) => {
            outcome = CheckOutcome::Bad;
            for m in m {
                lines.push(format!(
                    "MISMATCH {}: stored {} recomputed {}",
                    m.path, m.stored, m.recomputed
                ));
            }
        }
        Err(e) => {
            outcome = CheckOutcome::Bad;
            lines.push(e.to_string());
        }
    }
    (outcome, lines)
}

/// The pins of a run as a form `pinbench run` takes: the workload as pinned, the
/// endpoint, its API and the model; the server pins are left to the native run's probe
/// (a vendor's come from the vendor table).
pub fn native_form(cfg: &pins::RunConfig) -> RawConfig {
    let mut raw = pins::workload_form(cfg);
    for (name, text) in [
        ("endpoint_url", cfg.endpoint.base_url.as_str()),
        ("dialect", cfg.endpoint.dialect.name()),
        ("model_id", cfg.model.id.value.as_str()),
    ] {
        if let Some(f) = raw.field_mut(name) {
            *f = RawField::declared(text.to_owned());
        }
    }
    raw
}

/// Requests a browser never got an answer to (a network failure before any header: CORS,
/// or the server down), of the records a browser host measured; 0 for the native host.
pub fn blocked_requests(records: &[RequestRecord], host: Option<RunHost>) -> usize {
    if host == Some(RunHost::Native) {
        return 0;
    }
    records
        .iter()
        .filter(|r| {
            r.t_headers_us.is_none() && matches!(r.outcome, crate::record::Outcome::Network { .. })
        })
        .count()
}

/// `text` as one shell word (POSIX single quotes).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The `pinbench run` command line that runs the pins of `raw` natively (no CORS: the
/// native host is not a browser), reading the key from the vendor's usual environment
/// variable. The pins travel inline (bash process substitution), so the line is complete.
pub fn native_command(raw: &RawConfig) -> String {
    let url = raw
        .field("endpoint_url")
        .map(|f| f.text.trim())
        .unwrap_or("");
    let env = crate::vendors::by_url(url).map_or("PINBENCH_API_KEY", |v| v.key_env);
    format!(
        "pinbench run --pins <(printf '%s' {}) --api-key-env {env} --out pinbench-report.json",
        shell_quote(&raw.to_share_json())
    )
}

/// What to tell a user whose browser blocked requests to the endpoint of `raw`: what
/// that vendor allows (when it is a known one), and the native command line.
pub fn blocked_text(raw: &RawConfig) -> String {
    let url = raw
        .field("endpoint_url")
        .map(|f| f.text.trim())
        .unwrap_or("");
    let why = match crate::vendors::by_url(url) {
        Some(v) => v.cors_text(),
        None => "The server must allow this page's origin (CORS): vLLM --allowed-origins, TGI --cors-allow-origin, Ollama OLLAMA_ORIGINS; llama.cpp and SGLang allow any origin.".into(),
    };
    format!(
        "The browser blocked requests to {url}. {why} The same pins run natively, where CORS does not apply: {}",
        native_command(raw)
    )
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
