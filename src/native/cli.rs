//! `pinbench run --pins pins.json`: the same run session as the browser's, driven by a
//! native HTTP client on a single-threaded runtime, writing the same signed report.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use super::net::{Clock, NativeNet, NetEvent};
use crate::core::histogram::Hist;
use crate::core::metrics::{ClientEnv, RunHost, Slo};
use crate::core::pins::{RawConfig, RunConfig};
use crate::core::prompt::{self, Calibration, CalibrationError};
use crate::core::record::RequestRecord;
use crate::core::report::{Report, ReportBody};
use crate::core::session::{Progress, RunSession, Wake};
use crate::core::sign::KeyPair;

/// Usage text of `pinbench run`.
pub const USAGE: &str = "\
usage: pinbench run --pins FILE [options]

Runs a pinned benchmark natively (the same run session as the browser app) and writes a
signed report. FILE is the share link's JSON form: an object of pin name -> text, e.g.
{\"endpoint_url\": \"https://127.0.0.1:8443\", \"model_id\": \"m\", \"concurrency\": \"8\", …};
every pin must be set (the run does not probe).

options:
  --out FILE           where to write the report (default pinbench-report.json)
  --key FILE           signing key: the app's exported JSON or a base64 secret, created
                       there when missing (default ~/.config/pinbench/signing-key.json)
  --ca-cert FILE       also trust this certificate (DER or PEM), e.g. the reference
                       server's --cert-out
  --api-key-env NAME   read the API key from this environment variable
  --header K:V         send this header with every request (e.g. x-pinbench-fault)
  --slo-ttft-ms N, --slo-tpot-ms N, --slo-e2e-ms N   goodput SLOs
  --start-at UNIX_MS   wait until this wall-clock instant before the first request (N
                       copies started by a job runner then start together)
  --quiet              no progress bar

usage: pinbench merge --out FILE [--key FILE] A.json B.json …

Merges reports that several clients ran with the same pins at the same time into one
signed report: all records on one clock, the load summed, and the aggregate over the
window every client was measuring. Refuses unsigned or modified reports, differing pins
and windows that do not overlap.";

/// Errors of the command (each is printed as one message; none panics).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments.
    #[error("{0}\n\n{USAGE}")]
    Usage(String),
    /// The pins file cannot be read or is incomplete.
    #[error("{0}")]
    Pins(String),
    /// The network could not be set up.
    #[error(transparent)]
    Net(#[from] super::net::NetError),
    /// The report could not be built, signed or written.
    #[error("{0}")]
    Report(String),
}

struct Args {
    pins: PathBuf,
    out: PathBuf,
    key: Option<PathBuf>,
    ca_cert: Option<String>,
    api_key: Option<String>,
    header: Option<(String, String)>,
    slo: (String, String, String),
    quiet: bool,
    start_at_ms: Option<u64>,
}

fn parse_args(args: &[String]) -> Result<Args, CliError> {
    let mut a = Args {
        pins: PathBuf::new(),
        out: PathBuf::from("pinbench-report.json"),
        key: None,
        ca_cert: None,
        api_key: None,
        header: None,
        slo: Default::default(),
        quiet: false,
        start_at_ms: None,
    };
    let mut pins = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| CliError::Usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--pins" => pins = Some(PathBuf::from(val()?)),
            "--out" => a.out = PathBuf::from(val()?),
            "--key" => a.key = Some(PathBuf::from(val()?)),
            "--ca-cert" => a.ca_cert = Some(val()?),
            "--api-key-env" => {
                let name = val()?;
                a.api_key = Some(std::env::var(&name).map_err(|_| {
                    CliError::Usage(format!("the environment variable {name} is not set"))
                })?);
            }
            "--header" => {
                let v = val()?;
                let (k, h) = v
                    .split_once(':')
                    .ok_or_else(|| CliError::Usage(format!("--header wants K:V, got {v:?}")))?;
                a.header = Some((k.trim().to_owned(), h.trim().to_owned()));
            }
            "--slo-ttft-ms" => a.slo.0 = val()?,
            "--slo-tpot-ms" => a.slo.1 = val()?,
            "--slo-e2e-ms" => a.slo.2 = val()?,
            "--quiet" => a.quiet = true,
            "--start-at" => {
                let v = val()?;
                a.start_at_ms = Some(v.parse().map_err(|_| {
                    CliError::Usage(format!("--start-at wants Unix milliseconds, got {v:?}"))
                })?);
            }
            other => return Err(CliError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    a.pins = pins.ok_or_else(|| CliError::Usage("--pins FILE is required".into()))?;
    Ok(a)
}

/// Reads a pins file (the share link's JSON form) into a pinned configuration.
pub fn read_pins(path: &std::path::Path) -> Result<RunConfig, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Pins(format!("could not read {}: {e}", path.display())))?;
    let raw = RawConfig::from_share_json(&text).ok_or_else(|| {
        CliError::Pins(format!(
            "{} is not a JSON object of pin name -> text",
            path.display()
        ))
    })?;
    RunConfig::try_from(&raw).map_err(|e| {
        let lines: Vec<String> = e.problems().iter().map(|p| format!("  - {p}")).collect();
        CliError::Pins(format!(
            "{}: not every pin is set; missing or invalid:\n{}",
            path.display(),
            lines.join("\n")
        ))
    })
}

fn random_bytes() -> Result<[u8; 32], CliError> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .map_err(|e| CliError::Report(format!("no randomness (/dev/urandom): {e}")))?;
    Ok(b)
}

fn load_key(path: Option<&std::path::Path>) -> Result<KeyPair, CliError> {
    let default = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".config/pinbench/signing-key.json"));
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => default
            .ok_or_else(|| CliError::Report("no HOME for the signing key: pass --key".into()))?,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let secret = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["secret_key"].as_str().map(str::to_owned))
                .unwrap_or_else(|| text.trim().to_owned());
            KeyPair::from_secret_base64(&secret).map_err(|e| {
                CliError::Report(format!("{} is not a signing key: {e}", path.display()))
            })
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CliError::Report(format!(
            "could not read {}: {e}",
            path.display()
        ))),
        Err(_) => {
            let k = KeyPair::from_secret(random_bytes()?);
            let doc = serde_json::json!({"alg": "Ed25519", "key_id": k.key_id(), "public_key": k.public_key_base64(), "secret_key": k.secret_base64()});
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            write_private(&path, &doc.to_string())?;
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

/// Runs the core's calibration procedure against the server's `/tokenize`.
async fn calibrate(cfg: &RunConfig, ca: Option<&str>) -> Result<Calibration, CalibrationError> {
    let clock = Clock::start();
    prompt::calibrate_run(cfg, |url, body| async move {
        super::net::post_json(&url, &body, ca, clock).await.ok()
    })
    .await
}

fn progress_line(p: &Progress, protocol: &str) -> String {
    let secs = p.now_us.saturating_sub(p.started_us) as f64 / 1e6;
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
        if secs > 0.0 { p.tokens as f64 / secs } else { 0.0 },
    )
}

/// What one native run measured.
pub struct NativeRun {
    /// Records in dispatch order.
    pub records: Vec<RequestRecord>,
    /// The loop's environment.
    pub env: ClientEnv,
}

/// Runs the session over the native network until it finishes (or Ctrl-C stops it).
async fn drive(
    cfg: RunConfig,
    calibration: Calibration,
    mut net: NativeNet,
    mut rx: mpsc::UnboundedReceiver<NetEvent>,
    clock: Clock,
    quiet: bool,
    secrets: Vec<String>,
) -> Result<NativeRun, CliError> {
    let mut session = RunSession::new(cfg, calibration, random_bytes()?, clock.now_us());
    session.set_secrets(secrets);
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
                } => session.on_headers(id, t_us, status, content_type.as_deref()),
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
    let mut records = session.finish(clock.now_us());
    for r in &mut records {
        if let Some((p, w)) = wire.remove(&r.index) {
            r.protocol = p;
            r.wire = w;
        }
    }
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
        },
    })
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

/// `pinbench merge --out FILE [--key FILE] A.json B.json …`.
pub fn merge(args: &[String]) -> Result<(), CliError> {
    let mut out = PathBuf::from("pinbench-merged.json");
    let mut key = None;
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => {
                out = PathBuf::from(
                    it.next()
                        .ok_or_else(|| CliError::Usage("--out needs a value".into()))?,
                )
            }
            "--key" => {
                key =
                    Some(PathBuf::from(it.next().ok_or_else(|| {
                        CliError::Usage("--key needs a value".into())
                    })?))
            }
            f if f.starts_with("--") => {
                return Err(CliError::Usage(format!("unknown argument {f:?}")))
            }
            f => files.push(PathBuf::from(f)),
        }
    }
    let mut sources = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| CliError::Report(format!("could not read {}: {e}", f.display())))?;
        let opened = crate::core::report::open(&text)
            .map_err(|e| CliError::Report(format!("{}: {e}", f.display())))?;
        let title = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        sources.push((title, opened));
    }
    let key = load_key(key.as_deref())?;
    let created = iso8601(unix_ms_now());
    let body = crate::core::share::merge::merge(&sources, created)
        .map_err(|e| CliError::Report(format!("cannot merge: {e}")))?;
    let info = body.merged.clone();
    let mut report = Report::new(body);
    report
        .sign(&key)
        .map_err(|e| CliError::Report(format!("could not sign the merged report: {e}")))?;
    let text = report
        .to_json()
        .map_err(|e| CliError::Report(e.to_string()))?;
    std::fs::write(&out, text)
        .map_err(|e| CliError::Report(format!("could not write {}: {e}", out.display())))?;
    if let Some(i) = info {
        eprintln!(
            "pinbench: merged {} reports into {} (signed by {}); common window {:.3} s, aggregate output {} tok/s",
            i.sources.len(),
            out.display(),
            key.key_id(),
            (i.common_us.1 - i.common_us.0) as f64 / 1e6,
            crate::core::pins::milli(i.common_aggregate_output_milli)
        );
    }
    Ok(())
}

/// `pinbench run …`: returns the process exit code's message on failure.
pub fn run(args: &[String]) -> Result<(), CliError> {
    let a = parse_args(args)?;
    let cfg = read_pins(&a.pins)?;
    let slo = Slo::from_ms_fields(&a.slo.0, &a.slo.1, &a.slo.2).map_err(CliError::Usage)?;
    let key = load_key(a.key.as_deref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Report(format!("no async runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    if let Some(at) = a.start_at_ms {
        std::thread::sleep(Duration::from_millis(at.saturating_sub(unix_ms_now())));
    }
    let created = iso8601(unix_ms_now());
    let run = local.block_on(&rt, async {
        let calibration = match cfg.prompt_exactness.value {
            crate::core::pins::PromptExactness::ServerTokenizer => {
                calibrate(&cfg, a.ca_cert.as_deref())
                    .await
                    .map_err(|e| CliError::Pins(e.to_string()))?
            }
            _ => Calibration::default(),
        };
        let clock = Clock::start();
        let url = format!("{}{}", cfg.endpoint.base_url, cfg.endpoint.dialect.path());
        let (net, rx) = NativeNet::open(
            &url,
            a.ca_cert.as_deref(),
            a.api_key.clone(),
            a.header.clone(),
            clock,
        )
        .await?;
        let secrets = a
            .api_key
            .iter()
            .cloned()
            .chain(a.header.iter().map(|(_, v)| v.clone()))
            .collect();
        drive(cfg.clone(), calibration, net, rx, clock, a.quiet, secrets).await
    })?;
    let (body, figures) =
        ReportBody::build_figured(created, cfg, slo, Vec::new(), run.env, run.records)
            .map_err(|e| CliError::Report(format!("could not build the report: {e}")))?;
    let invalid = body.client.invalid;
    let findings = body.client.findings.clone();
    let mut report = Report::new(body);
    report
        .sign_figured(&key, &figures)
        .map_err(|e| CliError::Report(format!("could not sign the report: {e}")))?;
    let text = report
        .to_json()
        .map_err(|e| CliError::Report(e.to_string()))?;
    std::fs::write(&a.out, text)
        .map_err(|e| CliError::Report(format!("could not write {}: {e}", a.out.display())))?;
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_known_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_796_083_200_000), "2026-12-01T00:00:00.000Z");
    }

    #[test]
    fn arguments_are_checked() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(matches!(parse_args(&s(&[])), Err(CliError::Usage(_))));
        assert!(matches!(
            parse_args(&s(&["--pins"])),
            Err(CliError::Usage(_))
        ));
        assert!(matches!(
            parse_args(&s(&["--pins", "p", "--header", "nocolon"])),
            Err(CliError::Usage(_))
        ));
        let a = parse_args(&s(&[
            "--pins", "p.json", "--out", "r.json", "--header", "x-a: 1",
        ]))
        .expect("args");
        assert_eq!(a.header, Some(("x-a".into(), "1".into())));
        assert_eq!(a.out, PathBuf::from("r.json"));
    }
}
