//! `pinbench-refserver`: see `--help`.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use pinbench_refserver::faults::Faults;
use pinbench_refserver::http::{self, AppState};
use pinbench_refserver::profile::{Batching, Profile};
use pinbench_refserver::reasoning::Reasoning;
use pinbench_refserver::{engine, micros_since, tls};
use tokio::net::TcpListener;

const HELP: &str = "pinbench-refserver: an OpenAI-compatible server backed by a simulated engine.

Usage: pinbench-refserver [options]
  --port N              HTTP/1.1 port on 127.0.0.1 (default 8000; 0 = any free port)
  --tls-port N          HTTPS (HTTP/2 + HTTP/1.1, self-signed) port (default 8443; 0 = any; -1 = off)
  --profile NAME        tiny | 8b-h100 | 70b-8xh100 (default tiny)
  --profile-file PATH   a JSON profile (see src/profile.rs for the fields)
  --batching MODE       continuous | static (overrides the profile)
  --prefix-cache on|off a block-level prefix cache: the 16-token blocks a prompt shares
                        from its start with one prefilled before are not prefilled again
                        (default off)
  --tokens-per-event N  tokens per SSE event (overrides the profile)
  --max-num-seqs N      overrides the profile
  --kv-capacity N       KV capacity in tokens (overrides the profile)
  --zero-step-cost      steps cost nothing (server throughput benchmark)
  --reasoning MODE      none | visible | hidden: each request reasons first (default none)
  --reasoning-tokens R  reasoning tokens per request: N or A..B (default 32)
  --allow-origin O      Access-Control-Allow-Origin / Timing-Allow-Origin (default *)
  --fault SPEC          faults for every request (see src/faults.rs); repeat the flag to
                        apply several specs in turn
  --fault-every N       apply the faults to every N-th request only
  --idle-exit-secs N    exit after N s without requests (default 900; 0 = never)
  --cert-out PATH       write the generated TLS certificate (DER) here, for clients to trust
Prints one line `listening http=ADDR https=ADDR` when ready.";

struct Options {
    port: u16,
    tls_port: Option<u16>,
    profile: Profile,
    allow_origin: String,
    faults: Vec<(Faults, String)>,
    fault_every: u64,
    idle_exit: Option<Duration>,
    cert_out: Option<String>,
    reasoning: Reasoning,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut o = Options {
        port: 8000,
        tls_port: Some(8443),
        profile: Profile::tiny(),
        allow_origin: "*".into(),
        faults: Vec::new(),
        fault_every: 1,
        idle_exit: Some(Duration::from_secs(900)),
        cert_out: None,
        reasoning: Reasoning::None,
    };
    let (mut reasoning_mode, mut reasoning_tokens) = ("none".to_owned(), "32".to_owned());
    let mut overrides: Vec<(String, String)> = Vec::new();
    let mut zero = false;
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--help" | "-h" => return Err(HELP.into()),
            "--port" => o.port = val()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--tls-port" => {
                let v: i32 = val()?.parse().map_err(|e| format!("--tls-port: {e}"))?;
                o.tls_port = if v < 0 {
                    None
                } else {
                    Some(u16::try_from(v).map_err(|e| format!("--tls-port: {e}"))?)
                };
            }
            "--profile" => {
                let n = val()?;
                o.profile = Profile::named(&n).ok_or_else(|| {
                    format!("unknown profile {n}; known: {}", Profile::NAMES.join(", "))
                })?;
            }
            "--profile-file" => {
                let path = val()?;
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                o.profile = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
            }
            "--batching" | "--prefix-cache" | "--tokens-per-event" | "--max-num-seqs"
            | "--kv-capacity" => overrides.push((a.clone(), val()?)),
            "--zero-step-cost" => zero = true,
            "--allow-origin" => o.allow_origin = val()?,
            "--fault" => {
                let spec = val()?;
                o.faults
                    .push((Faults::parse(&spec).map_err(|e| e.to_string())?, spec));
            }
            "--fault-every" => {
                o.fault_every = val()?.parse().map_err(|e| format!("--fault-every: {e}"))?
            }
            "--idle-exit-secs" => {
                let s: u64 = val()?
                    .parse()
                    .map_err(|e| format!("--idle-exit-secs: {e}"))?;
                o.idle_exit = (s > 0).then(|| Duration::from_secs(s));
            }
            "--cert-out" => o.cert_out = Some(val()?),
            "--reasoning" => reasoning_mode = val()?,
            "--reasoning-tokens" => reasoning_tokens = val()?,
            other => return Err(format!("unknown option {other}\n\n{HELP}")),
        }
    }
    for (k, v) in overrides {
        let n = || v.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--batching" => {
                o.profile.batching = match v.as_str() {
                    "continuous" => Batching::Continuous,
                    "static" => Batching::Static,
                    _ => return Err("--batching: continuous or static".into()),
                }
            }
            "--prefix-cache" => {
                o.profile.prefix_cache = match v.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err("--prefix-cache: on or off".into()),
                }
            }
            "--tokens-per-event" => {
                o.profile.tokens_per_event = u32::try_from(n()?).map_err(|e| e.to_string())?.max(1)
            }
            "--max-num-seqs" => {
                o.profile.max_num_seqs = u32::try_from(n()?).map_err(|e| e.to_string())?.max(1)
            }
            _ => o.profile.kv_capacity_tokens = n()?,
        }
    }
    o.profile.zero_step_cost |= zero;
    o.reasoning = Reasoning::parse(&reasoning_mode, &reasoning_tokens)?;
    Ok(o)
}

#[tokio::main]
async fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(if msg == HELP { 0 } else { 2 });
        }
    };
    if let Err(e) = run(opts).await {
        eprintln!("pinbench-refserver: {e}");
        std::process::exit(1);
    }
}

async fn run(o: Options) -> Result<(), Box<dyn std::error::Error>> {
    let origin = Instant::now();
    let engine = engine::start(o.profile.clone(), origin);
    let state = Arc::new(
        AppState::new(
            o.profile.clone(),
            engine,
            origin,
            o.allow_origin,
            o.faults,
            o.fault_every,
        )
        .with_reasoning(o.reasoning),
    );
    let http = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], o.port))).await?;
    let http_addr = http.local_addr()?;
    let mut tls_addr = None;
    if let Some(port) = o.tls_port {
        let (cfg, cert) = tls::self_signed()?;
        if let Some(path) = &o.cert_out {
            std::fs::write(path, &cert)?;
        }
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
        tls_addr = Some(listener.local_addr()?);
        tokio::spawn(accept_loop(
            listener,
            state.clone(),
            Some(tokio_rustls::TlsAcceptor::from(cfg)),
        ));
    }
    let p = &o.profile;
    println!(
        "listening http={http_addr} https={} profile={} model={} batching={} max_num_seqs={} kv_tokens={} max_model_len={}",
        tls_addr.map(|a| a.to_string()).unwrap_or_else(|| "off".into()),
        p.name,
        p.model_id,
        http::batching_name(p),
        p.max_num_seqs,
        p.kv_capacity_tokens,
        p.max_model_len
    );
    tokio::spawn(accept_loop(http, state.clone(), None));
    let idle = o.idle_exit;
    let st = state.clone();
    let watchdog = async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if let Some(limit) = idle {
                let last = st.last_activity_us.load(Ordering::Relaxed);
                let quiet = micros_since(st.origin).saturating_sub(last);
                if st.in_flight.load(Ordering::Relaxed) == 0 && quiet > limit.as_micros() as u64 {
                    eprintln!(
                        "pinbench-refserver: idle for {} s, exiting",
                        limit.as_secs()
                    );
                    return;
                }
            }
        }
    };
    tokio::select! {
        _ = watchdog => {}
        _ = tokio::signal::ctrl_c() => eprintln!("pinbench-refserver: interrupted, exiting"),
        _ = terminate() => eprintln!("pinbench-refserver: terminated, exiting"),
    }
    Ok(())
}

async fn terminate() {
    #[cfg(unix)]
    {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
            return;
        }
    }
    std::future::pending::<()>().await;
}

/// Accepts connections forever, over TLS when an acceptor is given.
async fn accept_loop(
    listener: TcpListener,
    state: Arc<AppState>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    // At most MAX_CONNECTIONS at once; a connection beyond that is closed at once.
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            // E.g. out of file descriptors: wait rather than spin.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            drop(tcp);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let (tls, st) = (tls.clone(), state.clone());
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                Some(acceptor) => {
                    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
                    if let Ok(Ok(stream)) = handshake.await {
                        serve_conn(TokioIo::new(stream), st).await;
                    }
                }
                None => {
                    // A connection that sends nothing is dropped (the first request's
                    // bytes must come within the timeout); idle keep-alive connections
                    // between requests are left to the client, as before.
                    let mut first = [0u8; 1];
                    let peek = tokio::time::timeout(HEADER_READ_TIMEOUT, tcp.peek(&mut first));
                    if let Ok(Ok(n)) = peek.await {
                        if n > 0 {
                            serve_conn(TokioIo::new(tcp), st).await;
                        }
                    }
                }
            }
        });
    }
}

/// Most connections served at once.
const MAX_CONNECTIONS: usize = 4096;
/// Longest a TLS handshake may take.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Longest a new connection may take to send its first bytes.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn serve_conn<I>(io: TokioIo<I>, state: Arc<AppState>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| http::handle(state.clone(), req));
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(io, svc)
        .await;
}
