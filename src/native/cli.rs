//! `pinbench`, the native command: the same lifecycle as the browser tab (the core's
//! [`crate::core::lifecycle`]: probe, pin, calibrate, behaviour probes, build, sign) and the
//! same run session, over a native HTTP/1.1 and HTTP/2 client. This file is argument
//! handling and terminal output only; every decision is the core's.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use tokio::sync::mpsc;

use super::host::{random_bytes, NativeHost};
use super::net::{Clock, NativeNet, NetEvent};
use crate::core::histogram::Hist;
use crate::core::lifecycle::{self, ApiKey, CheckOutcome, FillPolicy, Target};
use crate::core::metrics::{ClientEnv, RunHost, Slo};
use crate::core::pins::{RawConfig, RunConfig};
use crate::core::prompt::Calibration;
use crate::core::record::RequestRecord;
use crate::core::report::{ProbeSnapshot, ReportBody};
use crate::core::session::{Progress, RunSession, Wake};
use crate::core::sign::KeyPair;

/// Exit statuses, as `--help` lists them.
const EXIT_CODES: &str = "\
Exit status:
  0  done (verify: every report valid, consistent and signed by a trusted key)
  1  verify/view: a report is unsigned, modified, inconsistent or unreadable
  2  usage error, or the command failed (network, pins, files)
  3  verify/view: valid and consistent, but signed by a key not given with --trust";

/// Benchmarks LLM inference endpoints with every parameter pinned; the native host of the
/// browser app's run engine, writing the same signed reports.
#[derive(Debug, Parser)]
#[command(name = "pinbench", version, after_help = EXIT_CODES, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read what an endpoint says about itself (/v1/models and the follow-up reads of the
    /// engine it recognises) and print the pins it fills, each with where it came from:
    /// the same as the app's "Probe endpoint".
    Probe(ProbeArgs),
    /// Measure what an endpoint does and does not say: the batching regime (continuous or
    /// static), the prefix cache (on or off) and decode slowdown with context. The same as
    /// the app's "Measure server behaviour".
    #[command(alias = "behavior")]
    Behaviour(BehaviourArgs),
    /// Run a pinned benchmark and write a signed report. Pins the file leaves open are
    /// probed from the endpoint (unless --no-probe); the run starts only when every pin is set.
    Run(Box<RunArgs>),
    /// Check reports: the signature (against --trust keys) and every summary figure
    /// recomputed from the records.
    Verify(VerifyArgs),
    /// Merge reports that several clients ran with the same pins at the same time into one
    /// signed report: all records on one clock, the load summed, the aggregate over the
    /// window every client was measuring. Refuses unsigned or modified reports, differing
    /// pins and windows that do not overlap.
    Merge(MergeArgs),
    /// Seal the checkpoint of a run that did not finish (killed, crashed, Ctrl-C before
    /// the report was written) into a signed report marked partial: every request it
    /// completed, nothing it did not.
    Seal(SealArgs),
    /// Print a report's headline figures (each with its window), its pins and its client
    /// verdict, recomputed from its records.
    View(ViewArgs),
    /// Run the same pins on a schedule (a run starts every --every, at fixed times from
    /// the first) and write each signed report into --dir, named by its start time: the
    /// series the viewer draws over time. The arguments after --dir are `pinbench run`'s
    /// (except --out). A failed run is reported and the schedule goes on.
    Watch(WatchArgs),
}

/// `pinbench watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Time between the starts of two runs: `90s`, `10m`, `3h` (a run that takes longer
    /// delays the next, which says it started late).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub every: Duration,
    /// Where the reports go (created if missing): DIR/pinbench-YYYYMMDDTHHMMSSZ.json.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Stop after this many runs (default: until stopped with Ctrl-C).
    #[arg(long, value_name = "N")]
    pub count: Option<u32>,
    /// `pinbench run`'s arguments (--pins FILE, …), without --out.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 1..,
        value_name = "RUN ARGS",
        required = true
    )]
    pub run: Vec<String>,
}

/// A duration as `90s`, `10m`, `3h` or `1d` (a whole number and a unit).
fn parse_duration(t: &str) -> Result<Duration, String> {
    let t = t.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{t:?}: expected a whole number and a unit, e.g. 30s, 10m, 3h"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{t:?}: the unit is s, m, h or d")),
    };
    match n.checked_mul(secs) {
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(format!("{t:?}: expected more than 0 and fewer than 2^64 s")),
    }
}

/// How to reach the endpoint.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// Also trust this certificate (DER or PEM), e.g. the reference server's --cert-out.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<String>,
    /// Read the API key from this environment variable (sent to the endpoint's origin only).
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// Send this header with every request (e.g. "x-pinbench-fault: status=429").
    #[arg(long, value_name = "K:V", value_parser = parse_header)]
    pub header: Option<(String, String)>,
    /// Allow the API key over plain http:// to a host that is not this machine (by default
    /// it goes only over https, or to loopback).
    #[arg(long)]
    pub allow_http_key: bool,
}

/// `pinbench probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The endpoint's base URL, e.g. https://127.0.0.1:8443.
    pub url: String,
    #[command(flatten)]
    pub net: NetArgs,
    /// Print JSON (the fills with their provenance, and what each read said).
    #[arg(long)]
    pub json: bool,
}

/// `pinbench behaviour`.
#[derive(Debug, Args)]
pub struct BehaviourArgs {
    /// The endpoint's base URL.
    pub url: String,
    /// The model id (default: the first model /v1/models lists).
    #[arg(long)]
    pub model: Option<String>,
    /// The API shape: completions or chat.
    #[arg(long, default_value = "completions", value_parser = ["completions", "chat"])]
    pub api: String,
    #[command(flatten)]
    pub net: NetArgs,
    /// Print JSON (verdicts, fills and evidence).
    #[arg(long)]
    pub json: bool,
}

/// `pinbench run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The pins: the share link's JSON form, an object of pin name -> text (e.g.
    /// {"endpoint_url": "https://127.0.0.1:8443", "concurrency": "8", …}).
    #[arg(long, value_name = "FILE")]
    pub pins: PathBuf,
    /// Where to write the report.
    #[arg(long, value_name = "FILE", default_value = "pinbench-report.json")]
    pub out: PathBuf,
    /// A trace file to replay (Mooncake JSONL, BurstGPT CSV or Azure LLM inference CSV):
    /// its SHA-256, rows and lengths become the trace pin; the pins' `trace` field gives
    /// `scale=` and `offset=`, and `load_mode` must be `replay`.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// A dataset file whose rows give the lengths (ShareGPT JSON, counted by the
    /// endpoint's /tokenize, or a CSV of input_tokens,output_tokens): its SHA-256 and rows
    /// become the dataset pin; the pins' prompt_tokens and output_tokens must be `dataset`
    /// (prompt_tokens `dataset_text` sends the rows' own prompts).
    #[arg(long, value_name = "FILE")]
    pub dataset: Option<PathBuf>,
    /// Do not probe the endpoint for pins the file leaves open (every pin must be set).
    #[arg(long)]
    pub no_probe: bool,
    #[command(flatten)]
    pub key: KeyArgs,
    /// Replace the report (and a checkpoint) already at these paths.
    #[arg(long)]
    pub force: bool,
    /// Where completed records are appended as the run goes (a killed run loses nothing:
    /// `pinbench seal` makes a signed partial report of it). Default: OUT.partial.jsonl;
    /// removed once the report is written.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    #[command(flatten)]
    pub net: NetArgs,
    /// Goodput SLO: TTFT at most this many ms.
    #[arg(long, value_name = "MS", default_value = "")]
    pub slo_ttft_ms: String,
    /// Goodput SLO: TPOT at most this many ms.
    #[arg(long, value_name = "MS", default_value = "")]
    pub slo_tpot_ms: String,
    /// Goodput SLO: end-to-end latency at most this many ms.
    #[arg(long, value_name = "MS", default_value = "")]
    pub slo_e2e_ms: String,
    /// SLO search: find the largest load whose run meets this SLO (repeatable; all must be
    /// met), e.g. `ttft:p99<=500ms` (ttft, tpot or e2e; p50, p90, p95 or p99). The load is
    /// the concurrency of a closed loop or the request rate of an open one (its arrival
    /// process and in-flight cap kept). Each probe is a full run of the pins (its own
    /// warm-up) at one load, replacing the pins' own: from --search-min, doubling while the
    /// SLOs hold, then bisecting to --search-resolution. The report's load steps are the
    /// probes, in order.
    #[arg(long = "search", value_name = "SLO", value_parser = crate::core::search::SloTarget::parse)]
    pub search: Vec<crate::core::search::SloTarget>,
    /// SLO search: the first (smallest) load — a concurrency (closed loop) or req/s (open
    /// loop, decimals allowed).
    #[arg(long, value_name = "N", default_value = "1")]
    pub search_min: String,
    /// SLO search: the largest load probed.
    #[arg(long, value_name = "N", default_value = "256")]
    pub search_max: String,
    /// SLO search: stop when the highest load that met the SLOs and the lowest that did
    /// not are at most this far apart.
    #[arg(long, value_name = "N", default_value = "1")]
    pub search_resolution: String,
    /// Wait until this wall-clock instant (Unix ms) before the first request, so N copies
    /// started by a job runner start together.
    #[arg(long, value_name = "UNIX_MS")]
    pub start_at: Option<u64>,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

/// `pinbench verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A trusted signer: its base64 public key or its key id (ed25519:…). Repeatable.
    #[arg(long, value_name = "KEY")]
    pub trust: Vec<String>,
    /// Report files.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
}

/// `pinbench merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Where to write the merged report.
    #[arg(long, value_name = "FILE", default_value = "pinbench-merged.json")]
    pub out: PathBuf,
    /// Replace a report already at --out.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub key: KeyArgs,
    /// A signer whose reports may be merged: its base64 public key or its key id
    /// (ed25519:…). Repeatable. Every source must be signed by one of them.
    #[arg(long, value_name = "KEY")]
    pub trust: Vec<String>,
    /// Merge reports signed by any valid key (the merged report still lists each signer).
    #[arg(long)]
    pub any_signer: bool,
    /// The reports to merge.
    #[arg(required = true, num_args = 2..)]
    pub reports: Vec<PathBuf>,
}

/// The signing key.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// Signing key: the app's exported JSON or a base64 secret (default
    /// ~/.config/pinbench/signing-key.json).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Create the signing key when there is none at that path (otherwise a missing key
    /// file is an error: a typo in the path must not sign with a new key).
    #[arg(long)]
    pub new_key: bool,
}

/// `pinbench seal`.
#[derive(Debug, Args)]
pub struct SealArgs {
    /// The checkpoint a killed or interrupted `pinbench run` left (OUT.partial.jsonl).
    pub checkpoint: PathBuf,
    /// Where to write the partial report.
    #[arg(long, value_name = "FILE", default_value = "pinbench-partial.json")]
    pub out: PathBuf,
    /// Replace a report already at --out.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub key: KeyArgs,
}

/// `pinbench view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The report file.
    pub report: PathBuf,
    /// Trusted signers (as for `verify`).
    #[arg(long, value_name = "KEY")]
    pub trust: Vec<String>,
    /// Print JSON: the headline figures per step, the verdict and the check.
    #[arg(long)]
    pub json: bool,
}

fn parse_header(v: &str) -> Result<(String, String), String> {
    let (k, h) = v
        .split_once(':')
        .ok_or_else(|| format!("wants K:V, got {v:?}"))?;
    Ok((k.trim().to_owned(), h.trim().to_owned()))
}

/// Errors of the command (each is printed as one message; none panics).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments.
    #[error("{0}")]
    Usage(String),
    /// The pins file cannot be read or is incomplete.
    #[error("{0}")]
    Pins(String),
    /// The network could not be set up.
    #[error(transparent)]
    Net(#[from] super::net::NetError),
    /// A lifecycle step failed (probe, behaviour probes, calibration).
    #[error(transparent)]
    Lifecycle(#[from] lifecycle::LifecycleError),
    /// The report could not be built, signed or written.
    #[error("{0}")]
    Report(String),
}

impl NetArgs {
    fn host(&self) -> NativeHost {
        NativeHost::new(self.ca_cert.clone(), self.header.clone())
    }

    /// The API key from the environment, bound to `url`'s origin.
    fn api_key(&self, url: &str) -> Result<Option<ApiKey>, CliError> {
        let Some(name) = &self.api_key_env else {
            return Ok(None);
        };
        let value = std::env::var(name)
            .map_err(|_| CliError::Usage(format!("the environment variable {name} is not set")))?;
        let key = ApiKey::for_endpoint(&value, url);
        if let Some(k) = &key {
            let loopback = crate::core::pins::is_loopback_url(url);
            if k.origin.starts_with("http://") && !loopback && !self.allow_http_key {
                return Err(CliError::Usage(format!(
                    "the API key would go over plain http to {}: use https, or pass --allow-http-key",
                    k.origin
                )));
            }
        }
        Ok(key)
    }
}

/// A single-threaded runtime with a local task set (the host's futures are not `Send`).
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, CliError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Report(format!("no async runtime: {e}")))?;
    Ok(tokio::task::LocalSet::new().block_on(&rt, f))
}

/// Reads a pins file (the share link's JSON form) into raw form fields, all declared.
pub fn read_raw_pins(path: &Path) -> Result<RawConfig, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Pins(format!("could not read {}: {e}", path.display())))?;
    RawConfig::from_share_json(&text).ok_or_else(|| {
        CliError::Pins(format!(
            "{} is not a JSON object of pin name -> text",
            path.display()
        ))
    })
}

/// Parses raw fields into a pinned configuration, listing every missing pin.
pub fn pin(raw: &RawConfig, path: &Path) -> Result<RunConfig, CliError> {
    RunConfig::try_from(raw).map_err(|e| {
        let lines: Vec<String> = e.problems().iter().map(|p| format!("  - {p}")).collect();
        CliError::Pins(format!(
            "{}: not every pin is set; missing or invalid:\n{}",
            path.display(),
            lines.join("\n")
        ))
    })
}

/// Reads a pins file into a pinned configuration (every pin must be set).
pub fn read_pins(path: &Path) -> Result<RunConfig, CliError> {
    pin(&read_raw_pins(path)?, path)
}

/// The JSON form of a probe's fills.
fn fills_json(fills: &[crate::core::probe::Fill]) -> Vec<serde_json::Value> {
    fills
        .iter()
        .map(|f| serde_json::json!({"field": f.field, "text": f.text, "provenance": f.provenance}))
        .collect()
}

fn print_fills(fills: &[crate::core::probe::Fill]) {
    for f in fills {
        println!(
            "  {:<18} {:<28} {}",
            f.field,
            f.text,
            crate::core::view::provenance_label(&f.provenance)
        );
    }
}

/// `pinbench probe URL`.
pub fn probe(a: &ProbeArgs) -> Result<(), CliError> {
    let host = a.net.host();
    let p = block_on(lifecycle::probe(&host, &a.url))??;
    if a.json {
        let doc = serde_json::json!({
            "engine": p.engine.map(|e| e.name()),
            "fills": fills_json(&p.fills),
            "reads": p.snapshots,
        });
        println!("{doc:#}");
    } else {
        println!(
            "{}: {} ({} pins)",
            a.url,
            p.engine.map_or("engine not recognised", |e| e.name()),
            p.fills.len()
        );
        print_fills(&p.fills);
    }
    Ok(())
}

/// `pinbench behaviour URL`.
pub fn behaviour(a: &BehaviourArgs) -> Result<(), CliError> {
    let host = a.net.host();
    let key = a.net.api_key(&a.url)?;
    let b = block_on(async {
        let mut raw = RawConfig::default();
        raw.endpoint_url.text = a.url.clone();
        raw.dialect.text = a.api.clone();
        match &a.model {
            Some(m) => raw.model_id.text = m.clone(),
            None => {
                let p = lifecycle::probe(&host, &a.url).await?;
                lifecycle::apply_fills(&mut raw, &p.fills, FillPolicy::OpenOnly);
            }
        }
        let target = Target::of_form(&raw)?;
        lifecycle::behaviour(&host, &target, key.as_ref()).await
    })??;
    if a.json {
        let doc = serde_json::json!({
            "batching": b.batching,
            "prefix_cache": b.prefix_cache,
            "slowdown_ratio": b.slowdown_ratio,
            "fills": fills_json(&b.fills),
            "evidence": b.snapshots,
        });
        println!("{doc:#}");
    } else {
        for l in &b.lines {
            println!("{l}");
        }
        print_fills(&b.fills);
    }
    Ok(())
}

/// `pinbench verify`: the exit status of the worst report.
pub fn verify(a: &VerifyArgs) -> i32 {
    let mut worst = CheckOutcome::Trusted;
    for p in &a.reports {
        let (o, lines) = match std::fs::read_to_string(p) {
            Ok(text) => lifecycle::check_report(&text, &a.trust),
            Err(e) => (CheckOutcome::Bad, vec![e.to_string()]),
        };
        for l in lines {
            println!("{}: {l}", p.display());
        }
        worst = worst.max(o);
    }
    worst.exit_code()
}

/// `pinbench view FILE`: prints the report; the exit status is its check's.
pub fn view(a: &ViewArgs) -> Result<i32, CliError> {
    let text = std::fs::read_to_string(&a.report)
        .map_err(|e| CliError::Report(format!("could not read {}: {e}", a.report.display())))?;
    let (outcome, lines) = lifecycle::check_report(&text, &a.trust);
    let opened = crate::core::report::open(&text)
        .map_err(|e| CliError::Report(format!("{}: {e}", a.report.display())))?;
    let figures = opened
        .report
        .body
        .figures()
        .map_err(|e| CliError::Report(format!("{}: {e}", a.report.display())))?;
    if a.json {
        let steps: Vec<serde_json::Value> = figures
            .steps
            .iter()
            .map(|s| {
                let figs: Vec<serde_json::Value> = crate::core::view::headline(s)
                    .into_iter()
                    .map(|f| serde_json::json!({"key": f.key, "label": f.label, "value": f.value, "window": f.window, "scope": f.scope}))
                    .collect();
                serde_json::json!({"step": s.step, "load": s.load.to_string(), "figures": figs})
            })
            .collect();
        let c = &opened.report.body.client;
        let doc = serde_json::json!({
            "steps": steps,
            "client": {"host": c.env.host, "invalid": c.invalid, "findings": c.findings},
            "check": {"outcome": format!("{outcome:?}"), "lines": lines},
        });
        println!("{doc:#}");
    } else {
        print!(
            "{}",
            crate::core::view::report_text(&opened.report, &figures)
        );
        for l in lines {
            println!("check: {l}");
        }
    }
    Ok(outcome.exit_code())
}

/// Reads a trace file to replay and writes its pin into `raw` (keeping the pin's
/// `scale=` and `offset=`).
fn read_trace(
    path: &std::path::Path,
    raw: &mut RawConfig,
) -> Result<crate::core::trace::Trace, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::Usage(format!("could not read {}: {e}", path.display())))?;
    let trace = crate::core::trace::parse(&bytes)
        .map_err(|e| CliError::Pins(format!("{} is not a trace: {e}", path.display())))?;
    let name = path
        .file_name()
        .map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
    let text =
        crate::core::pins::trace_file_pin(&raw.trace.text, &name, &trace).ok_or_else(|| {
            CliError::Pins(format!(
                "the trace pin '{}' has a bad scale= or offset=",
                raw.trace.text
            ))
        })?;
    raw.trace = crate::core::pins::RawField::declared(text);
    Ok(trace)
}

/// Reads a dataset file whose rows give the lengths and writes its pin into `raw`.
fn read_dataset(
    path: &std::path::Path,
    raw: &mut crate::core::pins::RawConfig,
) -> Result<crate::core::dataset::Dataset, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let d = crate::core::dataset::parse(&bytes)
        .map_err(|e| CliError::Pins(format!("{} is not a dataset: {e}", path.display())))?;
    let name = path
        .file_name()
        .map_or_else(|| "dataset".into(), |n| n.to_string_lossy().into_owned());
    raw.dataset = crate::core::pins::RawField::declared(
        crate::core::pins::DatasetRef::of(&name, &d).form_text(),
    );
    Ok(d)
}

/// A built-in trace, from its file compiled into this command (the tab fetches the same
/// file from the bundle's `traces/` folder).
fn builtin_trace(name: &str) -> Result<crate::core::trace::Trace, CliError> {
    let text = match crate::core::trace::builtin(name).map(|b| b.file) {
        Some("mooncake_conversation_head60.jsonl") => {
            include_str!("../../tests/fixtures/traces/mooncake_conversation_head60.jsonl")
        }
        _ => return Err(CliError::Pins(format!("no built-in trace is named {name}"))),
    };
    crate::core::trace::parse(text.as_bytes())
        .map_err(|e| CliError::Pins(format!("the built-in trace {name}: {e}")))
}

fn load_key(k: &KeyArgs) -> Result<KeyPair, CliError> {
    let path = k.key.as_deref();
    let default = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".config/pinbench/signing-key.json"));
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => default
            .ok_or_else(|| CliError::Report("no HOME for the signing key: pass --key".into()))?,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => KeyPair::from_key_file(&text)
            .map_err(|e| CliError::Report(format!("{} is not a signing key: {e}", path.display()))),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CliError::Report(format!(
            "could not read {}: {e}",
            path.display()
        ))),
        Err(_) if !k.new_key => Err(CliError::Report(format!(
            "no signing key at {}: pass --key with your key file, or --new-key to create one there",
            path.display()
        ))),
        Err(_) => {
            let k = KeyPair::from_secret(random_bytes().map_err(CliError::Report)?);
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            write_private(&path, &k.to_key_file())?;
            eprintln!(
                "pinbench: created a signing key {} in {}",
                k.key_id(),
                path.display()
            );
            Ok(k)
        }
    }
}

fn write_private(path: &std::path::Path, text: &str) -> Result<(), CliError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CliError::Report(format!("could not write {}: {e}", path.display())))
}

/// ISO 8601 UTC of a Unix time in milliseconds (days to civil date, Howard Hinnant's
/// algorithm).
pub fn iso8601(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        unix_ms % 1000
    )
}

fn progress_line(p: &Progress, protocol: &str) -> String {
    let done = p.planned.map_or(String::new(), |n| {
        let width = 24usize;
        let filled = (p.dispatched as usize * width / n.max(1) as usize).min(width);
        format!("[{}{}] ", "#".repeat(filled), ".".repeat(width - filled))
    });
    let errors = crate::core::view::errors_text(&p.errors);
    format!(
        "step {}/{} {}{}dispatched {}{} · completed {} · in flight {}/{} · {:.0} tok/s aggregate since start · {protocol} · errors: {errors}",
        p.step.0 + 1,
        p.step.1.max(1),
        p.phase.as_deref().map(|ph| format!("({ph}) ")).unwrap_or_default(),
        done,
        p.dispatched,
        p.planned.map(|n| format!("/{n}")).unwrap_or_default(),
        p.completed,
        p.in_flight.0,
        p.in_flight.1,
        p.aggregate_tok_per_s(),
    )
}

/// What one native run measured.
pub struct NativeRun {
    /// Records in dispatch order.
    pub records: Vec<RequestRecord>,
    /// The loop's environment.
    pub env: ClientEnv,
    /// An SLO search's probes and answer, when the run was one.
    pub search: Option<crate::core::search::SearchRecord>,
}

/// Runs the session over the native network until it finishes (or Ctrl-C stops it).
async fn drive(
    cfg: RunConfig,
    (calibration, trace, dataset): (
        Calibration,
        Option<&crate::core::trace::Trace>,
        Option<&crate::core::dataset::DatasetLengths>,
    ),
    (mut net, mut rx): (NativeNet, mpsc::UnboundedReceiver<NetEvent>),
    clock: Clock,
    quiet: bool,
    (api_key, extra_headers): (Option<ApiKey>, Vec<(String, String)>),
    (mut ckpt, search): (Checkpointer, Option<crate::core::search::SearchPlan>),
) -> Result<NativeRun, CliError> {
    let mut session = RunSession::new(
        cfg,
        calibration,
        random_bytes().map_err(CliError::Report)?,
        clock.now_us(),
    );
    if let Some(t) = trace {
        session.set_trace(t).map_err(CliError::Pins)?;
    }
    if let Some(d) = dataset {
        session.set_dataset(d).map_err(CliError::Pins)?;
    }
    if session.lacks_dataset() {
        return Err(CliError::Pins(
            "the pins take lengths from a dataset that is not at hand (pass it with --dataset FILE)"
                .into(),
        ));
    }
    if session.lacks_trace() {
        return Err(CliError::Pins(
            "the pins replay a trace that is not at hand (a file: pass it with --trace FILE)"
                .into(),
        ));
    }
    if let Some(plan) = search {
        session.set_search(plan).map_err(CliError::Pins)?;
    }
    session.set_credentials(api_key, &extra_headers);
    let protocol = net.protocol();
    let tty = std::io::stderr().is_terminal();
    // Event-loop lag of this runtime: how late a 20 ms tick fires.
    let lag = std::rc::Rc::new(std::cell::RefCell::new(Hist::new()));
    let lag_task = {
        let lag = lag.clone();
        tokio::task::spawn_local(async move {
            let mut last = clock.now_us();
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let now = clock.now_us();
                lag.borrow_mut()
                    .record(now.saturating_sub(last).saturating_sub(20_000));
                last = now;
            }
        })
    };
    let mut wire: std::collections::HashMap<
        u32,
        (Option<String>, Option<crate::core::record::WireTiming>),
    > = std::collections::HashMap::new();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    // Ctrl-C stops the run once (its future is not polled again after it fired).
    let mut interrupted = false;
    let mut last_print = 0u64;
    let mut wake = session.poll(clock.now_us(), &mut net);
    loop {
        let now = clock.now_us();
        // Stored records leave the session: its memory does not grow with the run.
        ckpt.append(session.take_completed(), &mut wire, now)?;
        if !quiet && now.saturating_sub(last_print) >= if tty { 200_000 } else { 5_000_000 } {
            last_print = now;
            let line = progress_line(&session.progress(), protocol);
            if tty {
                eprint!("\r\x1b[2K{line}");
            } else {
                eprintln!("{line}");
            }
        }
        let ev = match wake {
            Wake::Finished => break,
            Wake::At(t) => {
                let sleep = tokio::time::sleep(Duration::from_micros(t.saturating_sub(now)));
                tokio::select! {
                    ev = rx.recv() => ev,
                    _ = sleep => None,
                    _ = &mut ctrl_c, if !interrupted => { interrupted = true; session.stop(clock.now_us(), &mut net); None }
                }
            }
            Wake::Event => {
                let tick = tokio::time::sleep(Duration::from_millis(200));
                tokio::select! {
                    ev = rx.recv() => ev,
                    _ = tick => None,
                    _ = &mut ctrl_c, if !interrupted => { interrupted = true; session.stop(clock.now_us(), &mut net); None }
                }
            }
        };
        let mut next = ev;
        while let Some(ev) = next {
            match ev {
                NetEvent::Headers {
                    id,
                    t_us,
                    status,
                    content_type,
                    pairs,
                } => {
                    session.on_headers(id, t_us, status, content_type.as_deref());
                    if !pairs.is_empty() {
                        session.on_header_pairs(
                            id,
                            pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                        );
                    }
                }
                NetEvent::Bytes { id, t_us, data } => session.on_bytes(id, t_us, &data),
                NetEvent::End {
                    id,
                    t_us,
                    end,
                    protocol,
                    wire: w,
                } => {
                    net.ended(id);
                    wire.insert(id, (protocol, w));
                    session.on_end(id, t_us, end);
                }
            }
            next = rx.try_recv().ok();
        }
        wake = session.poll(clock.now_us(), &mut net);
    }
    lag_task.abort();
    if !quiet {
        let line = progress_line(&session.progress(), protocol);
        if tty {
            eprintln!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
    }
    ckpt.append(session.take_completed(), &mut wire, u64::MAX)?;
    let search = session.search();
    if let Some(s) = &search {
        eprintln!(
            "pinbench search: {}",
            match s.found {
                Some(c) => format!(
                    "the largest load meeting every SLO is {} ({} probes, resolution {})",
                    s.plan.dimension.text(c),
                    s.probes.len(),
                    s.plan.dimension.step_text(s.plan.resolution)
                ),
                None => format!(
                    "not even {} meets every SLO",
                    s.plan.dimension.text(s.plan.min)
                ),
            }
        );
    }
    // Requests the session still held (aborted in flight) join the file; the report is
    // built from what the file holds: every record of the run.
    ckpt.append(session.finish(clock.now_us()), &mut wire, u64::MAX)?;
    let records = ckpt.read_back()?;
    let lag = lag.borrow();
    Ok(NativeRun {
        records,
        env: ClientEnv {
            timer_resolution_us: 1,
            cross_origin_isolated: false,
            event_loop_lag_p99_us: lag.quantile(0.99).unwrap_or(0),
            event_loop_lag_max_us: lag.max().unwrap_or(0),
            host: Some(RunHost::Native),
            clock_epoch_us: Some(clock.epoch_us()),
            wire_timing_read: None,
        },
        search,
    })
}

/// Refuses to replace an existing file unless told to.
fn fresh_output(path: &Path, force: bool) -> Result<(), CliError> {
    if path.exists() && !force {
        return Err(CliError::Report(format!(
            "{} exists: pass --force to replace it, or choose another --out",
            path.display()
        )));
    }
    Ok(())
}

/// Writes a report: to a temporary file beside it, then renamed over it (a crash never
/// leaves half a report), and never over an existing file unless `force`.
fn write_report(path: &Path, text: &str, force: bool) -> Result<(), CliError> {
    fresh_output(path, force)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".writing");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| CliError::Report(format!("could not write {}: {e}", path.display())))
}

/// Signs a report body built here (a merge, a sealed checkpoint) and writes it.
fn sign_and_write(
    body: ReportBody,
    key: &KeyPair,
    out: &Path,
    force: bool,
) -> Result<(), CliError> {
    let report = block_on(lifecycle::sign_body(body, key))?
        .map_err(|e| CliError::Report(e.to_string()))?
        .report;
    let text = report
        .to_json()
        .map_err(|e| CliError::Report(e.to_string()))?;
    write_report(out, &text, force)
}

/// Wire facts the native network reports per request, added to its record.
type WireById =
    std::collections::HashMap<u32, (Option<String>, Option<crate::core::record::WireTiming>)>;

/// The run's checkpoint file (JSON Lines): a first line with the run's checkpoint
/// header (when, the pins, the host), then every completed record, appended and flushed
/// about once a second, so a killed run loses at most the last second.
struct Checkpointer {
    file: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
    written: usize,
    last_us: u64,
}

impl Checkpointer {
    fn create(
        path: &Path,
        created: &str,
        cfg: &RunConfig,
        clock: Clock,
        search: Option<crate::core::search::SearchPlan>,
    ) -> Result<Self, CliError> {
        let err = |e: std::io::Error| {
            CliError::Report(format!(
                "could not write the checkpoint {}: {e}",
                path.display()
            ))
        };
        let head = crate::core::report::Checkpoint {
            created: created.to_owned(),
            config: cfg.clone(),
            env: ClientEnv {
                timer_resolution_us: 1,
                cross_origin_isolated: false,
                event_loop_lag_p99_us: 0,
                event_loop_lag_max_us: 0,
                host: Some(RunHost::Native),
                clock_epoch_us: Some(clock.epoch_us()),
                wire_timing_read: None,
            },
            planned: None,
            records: Vec::new(),
            dropped: 0,
            search,
        };
        let line = serde_json::to_string(&head).map_err(|e| CliError::Report(e.to_string()))?;
        // A second's records fit in the buffer: one write a second, at the flush.
        let mut file =
            std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(err)?);
        writeln!(file, "{line}")
            .and_then(|()| file.flush())
            .map_err(err)?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            written: 0,
            last_us: 0,
        })
    }

    /// Appends the records completed since the last call, each serialised as it completes
    /// (a second's records serialised at once held the loop for milliseconds, delaying the
    /// timestamps of every stream), and writes them to the file at most once a second
    /// (`now_us` = `u64::MAX`: now).
    fn append(
        &mut self,
        records: Vec<RequestRecord>,
        wire: &mut WireById,
        now_us: u64,
    ) -> Result<(), CliError> {
        let flush = now_us >= self.last_us.saturating_add(1_000_000);
        if records.is_empty() && !flush {
            return Ok(());
        }
        let err = |e: std::io::Error| {
            CliError::Report(format!(
                "could not write the checkpoint {}: {e}",
                self.path.display()
            ))
        };
        for mut r in records {
            if let Some((p, w)) = wire.remove(&r.index) {
                r.protocol = p;
                r.wire = w;
            }
            let line = serde_json::to_string(&r).map_err(|e| CliError::Report(e.to_string()))?;
            writeln!(self.file, "{line}").map_err(err)?;
            self.written += 1;
        }
        if flush {
            self.last_us = now_us;
            self.file.flush().map_err(err)?;
        }
        Ok(())
    }

    /// Every record the file holds, in dispatch order (the run is over and its last
    /// records were appended with `now_us` = `u64::MAX`, so the file is complete).
    fn read_back(&self) -> Result<Vec<RequestRecord>, CliError> {
        let (cp, torn) = read_checkpoint(&self.path)?;
        if torn || cp.records.len() != self.written {
            return Err(CliError::Report(format!(
                "the checkpoint {} holds {} of the run's {} records",
                self.path.display(),
                cp.records.len(),
                self.written
            )));
        }
        Ok(cp.records)
    }
}

/// Reads a checkpoint file line by line (never its whole text at once): its head with
/// every record, in dispatch order, and whether its last line was cut off (by a crash:
/// left out; a damaged line anywhere else is an error).
fn read_checkpoint(path: &Path) -> Result<(crate::core::report::Checkpoint, bool), CliError> {
    use std::io::BufRead;
    let err =
        |e: std::io::Error| CliError::Report(format!("could not read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(err)?;
    let mut lines = std::io::BufReader::with_capacity(1 << 20, file)
        .lines()
        .enumerate()
        .filter(|(_, l)| l.as_ref().map_or(true, |l| !l.trim().is_empty()));
    let mut cp: crate::core::report::Checkpoint = match lines.next() {
        None => return Err(CliError::Report(format!("{} is empty", path.display()))),
        Some((_, l)) => crate::core::json::from_str(&l.map_err(err)?)
            .map_err(|e| CliError::Report(format!("{}: line 1: {e}", path.display())))?,
    };
    // A line that does not read is damage unless it is the last.
    let mut unread: Option<(usize, String)> = None;
    for (n, l) in lines {
        let l = l.map_err(err)?;
        if let Some((m, e)) = unread.take() {
            return Err(CliError::Report(format!(
                "{}: line {}: {e}",
                path.display(),
                m + 1
            )));
        }
        match crate::core::json::from_str::<RequestRecord>(&l) {
            Ok(r) => cp.records.push(r),
            Err(e) => unread = Some((n, e.to_string())),
        }
    }
    crate::core::record::sort_by_index(&mut cp.records);
    Ok((cp, unread.is_some()))
}

/// `pinbench seal`: a checkpoint into a signed report marked partial.
pub fn seal(a: &SealArgs) -> Result<(), CliError> {
    fresh_output(&a.out, a.force)?;
    let (cp, torn) = read_checkpoint(&a.checkpoint)?;
    let n = cp.records.len();
    let body = cp
        .into_body()
        .map_err(|e| CliError::Report(format!("could not build the report: {e}")))?;
    let key = load_key(&a.key)?;
    sign_and_write(body, &key, &a.out, a.force)?;
    eprintln!(
        "pinbench: sealed {n} completed requests of {} into {} (partial; signed by {}){}",
        a.checkpoint.display(),
        a.out.display(),
        key.key_id(),
        if torn {
            " — its last line was cut off by the interruption and left out"
        } else {
            ""
        }
    );
    Ok(())
}

/// The wall clock now, Unix milliseconds (0 before 1970).
fn unix_ms_now() -> u64 {
    // The host owns the clock; the core is only ever given its readings.
    #[allow(clippy::disallowed_methods)]
    let now = std::time::SystemTime::now();
    now.duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `pinbench merge`.
pub fn merge(a: &MergeArgs) -> Result<(), CliError> {
    fresh_output(&a.out, a.force)?;
    if a.trust.is_empty() && !a.any_signer {
        return Err(CliError::Usage(
            "say whose reports may be merged: --trust KEY for each signer (base64 public key or key id), or --any-signer".into(),
        ));
    }
    let mut sources = Vec::new();
    for f in &a.reports {
        let text = std::fs::read_to_string(f)
            .map_err(|e| CliError::Report(format!("could not read {}: {e}", f.display())))?;
        let title = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = crate::core::share::merge::Source::open(title, text)
            .map_err(|e| CliError::Report(format!("{}: {e}", f.display())))?;
        if let crate::core::report::Verification::Valid { key_id, public_key } =
            &source.opened.verification
        {
            if !a.any_signer && !a.trust.iter().any(|t| t == key_id || t == public_key) {
                return Err(CliError::Report(format!(
                    "{}: signed by {key_id}, which is not trusted (--trust it, or --any-signer)",
                    f.display()
                )));
            }
        }
        sources.push(source);
    }
    let key = load_key(&a.key)?;
    let created = iso8601(unix_ms_now());
    let body = crate::core::share::merge::merge(&sources, created)
        .map_err(|e| CliError::Report(format!("cannot merge: {e}")))?;
    let info = body.merged.clone();
    sign_and_write(body, &key, &a.out, a.force)?;
    if let Some(i) = info {
        eprintln!(
            "pinbench: merged {} reports into {} (signed by {}); common window {:.3} s, aggregate output {} tok/s",
            i.sources.len(),
            a.out.display(),
            key.key_id(),
            (i.common_us.1 - i.common_us.0) as f64 / 1e6,
            crate::core::pins::milli(i.common_aggregate_output_milli)
        );
    }
    Ok(())
}

/// `pinbench run`: probe what the pins file leaves open, pin, calibrate, run, build, sign.
pub fn run(a: &RunArgs) -> Result<(), CliError> {
    fresh_output(&a.out, a.force)?;
    let checkpoint = a.checkpoint.clone().unwrap_or_else(|| {
        let mut p = a.out.clone().into_os_string();
        p.push(".partial.jsonl");
        PathBuf::from(p)
    });
    if checkpoint.exists() && !a.force {
        return Err(CliError::Report(format!(
            "{} holds the records of an earlier run that did not finish: seal it (pinbench seal {0}) or pass --force to replace it",
            checkpoint.display()
        )));
    }
    let mut raw = read_raw_pins(&a.pins)?;
    let trace = match &a.trace {
        Some(path) => Some(read_trace(path, &mut raw)?),
        None => None,
    };
    let dataset = match &a.dataset {
        Some(path) => Some(read_dataset(path, &mut raw)?),
        None => None,
    };
    let slo = Slo::from_ms_fields(&a.slo_ttft_ms, &a.slo_tpot_ms, &a.slo_e2e_ms)
        .map_err(CliError::Usage)?;
    let host = a.net.host();
    let mut probes: Vec<ProbeSnapshot> = Vec::new();
    let open = lifecycle::open_probe_fields(&raw);
    if !a.no_probe && !open.is_empty() {
        let url = raw.endpoint_url.text.clone();
        let p = block_on(lifecycle::probe(&host, &url))?.map_err(|e| {
            CliError::Pins(format!(
                "{} leaves {} open, and probing the endpoint for them failed: {e}",
                a.pins.display(),
                open.join(", ")
            ))
        })?;
        let filled = lifecycle::apply_fills(&mut raw, &p.fills, FillPolicy::OpenOnly);
        if !filled.is_empty() {
            eprintln!("pinbench: probed {url}: {}", filled.join(", "));
        }
        probes = p.snapshots;
    }
    let cfg = pin(&raw, &a.pins)?;
    let trace = match (trace, &cfg.trace) {
        (None, Some(t)) if t.value.builtin => Some(builtin_trace(&t.value.name)?),
        (None, Some(t)) => {
            return Err(CliError::Usage(format!(
                "{} replays the trace file {}: pass it with --trace FILE",
                a.pins.display(),
                t.value.name
            )))
        }
        (trace, _) => trace,
    };
    if let (None, Some(d)) = (&dataset, &cfg.dataset) {
        return Err(CliError::Usage(format!(
            "{} takes lengths from the dataset file {}: pass it with --dataset FILE",
            a.pins.display(),
            d.value.name
        )));
    }
    let api_key = a.net.api_key(&cfg.endpoint.base_url)?;
    let key = load_key(&a.key)?;
    if let Some(at) = a.start_at {
        std::thread::sleep(Duration::from_millis(at.saturating_sub(unix_ms_now())));
    }
    let created = iso8601(unix_ms_now());
    // An SLO search: its plan checked against the pins; its answer comes with its
    // goodput (unless goodput SLOs are given, each request held to the search's limits).
    let search = match a.search.is_empty() {
        true => None,
        false => Some(
            crate::core::search::SearchPlan::from_text(
                &cfg,
                a.search.clone(),
                (&a.search_min, &a.search_max, &a.search_resolution),
            )
            .map_err(CliError::Usage)?,
        ),
    };
    let slo = slo.or_else(|| {
        search
            .as_ref()
            .map(crate::core::search::SearchPlan::goodput_slo)
    });
    let run = block_on(async {
        let calibration = lifecycle::calibrate(&host, &cfg).await?;
        let lengths = match &dataset {
            Some(d) => Some(lifecycle::dataset_lengths(&host, &cfg, d).await?),
            None => None,
        };
        let clock = Clock::start();
        let url = format!(
            "{}{}",
            cfg.endpoint.base_url,
            cfg.endpoint.dialect.path(&cfg.model.id.value)
        );
        let extra: Vec<(String, String)> = a.net.header.iter().cloned().collect();
        let ckpt = Checkpointer::create(&checkpoint, &created, &cfg, clock, search.clone())?;
        let (net, rx) =
            NativeNet::open(&url, a.net.ca_cert.as_deref(), a.net.header.clone(), clock).await?;
        drive(
            cfg.clone(),
            (calibration, trace.as_ref(), lengths.as_ref()),
            (net, rx),
            clock,
            a.quiet,
            (api_key, extra),
            (ckpt, search),
        )
        .await
    })??;
    let finished = lifecycle::Finished {
        created,
        cfg,
        slo,
        probes,
        env: run.env,
        records: run.records,
        search: run.search,
    };
    let report = block_on(lifecycle::finish(finished, &key))?
        .map_err(|e| CliError::Report(e.to_string()))?
        .report;
    let invalid = report.body.client.invalid;
    let findings = report.body.client.findings.clone();
    let text = report
        .to_json()
        .map_err(|e| CliError::Report(e.to_string()))?;
    write_report(&a.out, &text, a.force)?;
    // The report holds every record: the checkpoints have done their work.
    let _ = std::fs::remove_file(&checkpoint);
    eprintln!(
        "pinbench: wrote {} (signed by {}){}",
        a.out.display(),
        key.key_id(),
        if invalid {
            "; client verdict: INVALID"
        } else {
            ""
        }
    );
    for f in findings {
        eprintln!("  - {f}");
    }
    let server = crate::core::server::verdict(&report.body.records, &report.body.config);
    for l in server.lines() {
        eprintln!("  - {l}");
    }
    Ok(())
}

/// The subcommand `name` read from its arguments (those after it).
fn parse_sub(name: &str, args: &[String]) -> Result<Command, CliError> {
    let argv = ["pinbench", name]
        .into_iter()
        .map(str::to_owned)
        .chain(args.iter().cloned());
    Cli::try_parse_from(argv)
        .map(|c| c.command)
        .map_err(|e| CliError::Usage(e.to_string()))
}

/// `pinbench run` from its arguments (those after `run`), for tests and scripts.
pub fn run_args(args: &[String]) -> Result<(), CliError> {
    match parse_sub("run", args)? {
        Command::Run(a) => run(&a),
        _ => Err(CliError::Usage("not a run".into())),
    }
}

/// `pinbench watch` from its arguments (those after `watch`), for tests and scripts.
pub fn watch_args(args: &[String]) -> Result<(), CliError> {
    match parse_sub("watch", args)? {
        Command::Watch(a) => watch(&a),
        _ => Err(CliError::Usage("not a watch".into())),
    }
}

/// The report file of a run started at `unix_ms`: `pinbench-YYYYMMDDTHHMMSSZ.json`.
fn watch_name(unix_ms: u64) -> String {
    let iso = iso8601(unix_ms);
    let compact: String = iso
        .get(..19)
        .unwrap_or(&iso)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    format!("pinbench-{compact}Z.json")
}

/// `pinbench watch`: `pinbench run` every `every`, at fixed times from the first start.
/// Ok when every run wrote its report; the first failure otherwise (after the last run).
pub fn watch(a: &WatchArgs) -> Result<(), CliError> {
    if a.run
        .iter()
        .any(|r| r == "--out" || r.starts_with("--out="))
    {
        return Err(CliError::Usage(
            "watch names each report itself (in --dir): leave --out out".into(),
        ));
    }
    // The run's arguments are checked before the first run, not at the first failure.
    let argv = |out: &Path| -> Vec<String> {
        ["--out".to_owned(), out.display().to_string()]
            .into_iter()
            .chain(a.run.iter().cloned())
            .collect()
    };
    Cli::try_parse_from(
        ["pinbench", "run"]
            .into_iter()
            .map(str::to_owned)
            .chain(argv(&a.dir.join("x.json"))),
    )
    .map_err(|e| CliError::Usage(e.to_string()))?;
    std::fs::create_dir_all(&a.dir)
        .map_err(|e| CliError::Usage(format!("cannot create {}: {e}", a.dir.display())))?;
    let every_ms = u64::try_from(a.every.as_millis()).unwrap_or(u64::MAX);
    let first = unix_ms_now();
    let mut failed = None;
    let (mut k, mut ran) = (0u64, 0u32);
    loop {
        let due = first.saturating_add(k.saturating_mul(every_ms));
        let now = unix_ms_now();
        if now < due {
            std::thread::sleep(Duration::from_millis(due - now));
        }
        let start = unix_ms_now();
        let out = a.dir.join(watch_name(start));
        let late = start.saturating_sub(due);
        eprintln!(
            "pinbench watch: run {} at {}{} -> {}",
            ran + 1,
            iso8601(start),
            if late > 1000 {
                format!(
                    " ({} s after its time: the previous run overran)",
                    late / 1000
                )
            } else {
                String::new()
            },
            out.display()
        );
        match run_args(&argv(&out)) {
            Ok(()) => {
                if let Err(e) = add_to_series(&a.dir, &out) {
                    eprintln!("pinbench watch: the series file was not updated: {e}");
                }
            }
            Err(e) => {
                eprintln!("pinbench watch: run {} failed: {e}", ran + 1);
                failed.get_or_insert(e);
            }
        }
        k += 1;
        ran += 1;
        if a.count.is_some_and(|n| ran >= n) {
            break;
        }
        // The next start comes after this run's end: skip the times it overran.
        let now = unix_ms_now();
        while first.saturating_add(k.saturating_mul(every_ms)) + every_ms <= now {
            eprintln!(
                "pinbench watch: the start at {} skipped (the previous run overran it)",
                iso8601(first.saturating_add(k.saturating_mul(every_ms)))
            );
            k += 1;
        }
    }
    failed.map_or(Ok(()), Err)
}

/// Adds the signed card of the report `out` to `dir`'s series file (the card page's
/// trend line: `card/?series=…/pinbench-series.txt`), written whole then renamed.
fn add_to_series(dir: &Path, out: &Path) -> Result<(), String> {
    use crate::core::series;
    let text = std::fs::read_to_string(out).map_err(|e| e.to_string())?;
    let report = crate::core::report::open(&text)
        .map_err(|e| e.to_string())?
        .report;
    let card = report.card.ok_or("the report carries no card")?;
    let name = out
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the report has no file name")?;
    let path = dir.join(series::SERIES_FILE);
    let existing = std::fs::read_to_string(&path).ok();
    let text = series::append(existing.as_deref(), name, &card)?;
    let tmp = dir.join(format!("{}.tmp", series::SERIES_FILE));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| e.to_string())
}

/// Runs the command line; returns the process's exit status.
pub fn main(cli: Cli) -> i32 {
    let (name, result) = match &cli.command {
        Command::Probe(a) => ("probe", probe(a).map(|()| 0)),
        Command::Behaviour(a) => ("behaviour", behaviour(a).map(|()| 0)),
        Command::Run(a) => ("run", run(a).map(|()| 0)),
        Command::Verify(a) => ("verify", Ok(verify(a))),
        Command::Merge(a) => ("merge", merge(a).map(|()| 0)),
        Command::Seal(a) => ("seal", seal(a).map(|()| 0)),
        Command::View(a) => ("view", view(a)),
        Command::Watch(a) => ("watch", watch(a).map(|()| 0)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pinbench {name}: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn iso8601_known_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_796_083_200_000), "2026-12-01T00:00:00.000Z");
    }

    #[test]
    fn watch_takes_a_schedule_and_the_runs_arguments() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("3h"), Ok(Duration::from_secs(10_800)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        for bad in ["", "3", "h", "0s", "1.5h", "-1m", "3 weeks"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            watch_name(1_796_083_205_123),
            "pinbench-20261201T000005Z.json"
        );
        let Ok(Cli {
            command: Command::Watch(w),
        }) = Cli::try_parse_from([
            "pinbench", "watch", "--every", "10m", "--dir", "d", "--count", "2", "--pins",
            "p.json", "--quiet",
        ])
        else {
            panic!("watch parses");
        };
        assert_eq!(
            (w.every, w.dir, w.count, w.run),
            (
                Duration::from_secs(600),
                PathBuf::from("d"),
                Some(2),
                vec!["--pins".to_owned(), "p.json".into(), "--quiet".into()]
            )
        );
        // Its own report names: no --out; and run's arguments are checked before any run.
        for run in [
            &["--pins", "p.json", "--out", "x.json"][..],
            &["--pins", "p.json", "--no-such-flag"][..],
        ] {
            let Ok(Cli {
                command: Command::Watch(w),
            }) = Cli::try_parse_from(
                [
                    "pinbench",
                    "watch",
                    "--every",
                    "1s",
                    "--dir",
                    "/nonexistent/d",
                ]
                .into_iter()
                .chain(run.iter().copied()),
            )
            else {
                panic!("watch parses");
            };
            assert!(matches!(watch(&w), Err(CliError::Usage(_))), "{run:?}");
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn arguments_are_checked() {
        let parse =
            |v: &[&str]| Cli::try_parse_from(std::iter::once("pinbench").chain(v.iter().copied()));
        assert!(parse(&[]).is_err());
        assert!(parse(&["run"]).is_err());
        assert!(parse(&["run", "--pins"]).is_err());
        assert!(parse(&["run", "--pins", "p", "--header", "nocolon"]).is_err());
        assert!(parse(&["merge", "one.json"]).is_err());
        let Ok(Cli {
            command: Command::Run(a),
        }) = parse(&[
            "run", "--pins", "p.json", "--out", "r.json", "--header", "x-a: 1",
        ])
        else {
            panic!("run parses");
        };
        assert_eq!(a.net.header, Some(("x-a".into(), "1".into())));
        assert_eq!(a.out, PathBuf::from("r.json"));
        assert!(!a.no_probe);
        let Ok(Cli {
            command: Command::Behaviour(b),
        }) = parse(&["behavior", "http://h:1", "--api", "chat"])
        else {
            panic!("behaviour parses");
        };
        assert_eq!(b.api, "chat");
        assert!(parse(&["behaviour", "http://h:1", "--api", "grpc"]).is_err());
    }
}
