//! The native network of a run: one streaming POST per request, over HTTP/1.1 (one
//! connection per request in flight, reused when idle) or HTTP/2 (every stream on one
//! connection, as a browser does), with TLS when the endpoint is `https://`. Each body
//! frame is timestamped when its task receives it and handed to the session's driver
//! through a channel; the network makes no decision of its own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::core::http::HttpRequest;
use crate::core::record::{
    error_message_from_body, Outcome, StreamEnd, WireTiming, MAX_ERROR_BODY,
};
use crate::core::session::{Outgoing, Transport};

/// Errors setting up the network.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The endpoint URL cannot be used.
    #[error("endpoint {0:?} is not an http(s)://host[:port] URL")]
    Url(String),
    /// A trusted certificate file could not be read.
    #[error("could not read the certificate {path}: {message}")]
    Cert {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// TLS could not be configured.
    #[error("TLS configuration failed: {0}")]
    Tls(String),
    /// The first connection failed.
    #[error("could not connect to {addr}: {message}")]
    Connect {
        /// host:port.
        addr: String,
        /// Why.
        message: String,
    },
}

/// Microseconds since the run's start (the host clock every record uses).
#[derive(Clone, Copy, Debug)]
pub struct Clock(Instant);

impl Clock {
    /// Starts the clock now.
    pub fn start() -> Self {
        // The host owns the clock; the core is only ever given its readings.
        #[allow(clippy::disallowed_methods)]
        let now = Instant::now();
        Clock(now)
    }

    /// The wall clock (Unix µs) at this clock's zero.
    pub fn epoch_us(self) -> u64 {
        // The host owns the clock; the core is only ever given its readings.
        #[allow(clippy::disallowed_methods)]
        let wall = std::time::SystemTime::now();
        let now = wall
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        now.saturating_sub(self.now_us())
    }

    /// Microseconds since the start.
    pub fn now_us(self) -> u64 {
        u64::try_from(self.0.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// What happened to a request, timestamped where it was received.
#[derive(Debug)]
pub enum NetEvent {
    /// Response headers.
    Headers {
        /// Request id.
        id: u32,
        /// When, µs.
        t_us: u64,
        /// HTTP status.
        status: u16,
        /// `content-type`.
        content_type: Option<String>,
        /// Every header, when [`crate::core::record::wants_headers`] asked for them.
        pairs: Vec<(String, String)>,
    },
    /// A body frame.
    Bytes {
        /// Request id.
        id: u32,
        /// When, µs.
        t_us: u64,
        /// The bytes.
        data: Bytes,
    },
    /// The request ended.
    End {
        /// Request id.
        id: u32,
        /// When, µs.
        t_us: u64,
        /// How.
        end: StreamEnd,
        /// The protocol it went over (`h2`, `http/1.1`), when it got that far.
        protocol: Option<String>,
        /// Its wire times.
        wire: Option<WireTiming>,
    },
}

enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// Connections to one endpoint.
struct Conns {
    host: String,
    port: u16,
    tls: Option<tokio_rustls::TlsConnector>,
    h2: RefCell<Option<http2::SendRequest<Full<Bytes>>>>,
    h1_idle: RefCell<Vec<http1::SendRequest<Full<Bytes>>>>,
}

impl Conns {
    /// Connections to the endpoint of `url` (none is opened yet).
    fn for_url(url: &str, ca_cert: Option<&str>) -> Result<Self, NetError> {
        let uri: hyper::Uri = url.parse().map_err(|_| NetError::Url(url.to_owned()))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(NetError::Url(url.to_owned())),
        };
        let host = uri
            .host()
            .ok_or_else(|| NetError::Url(url.to_owned()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            Some(tokio_rustls::TlsConnector::from(tls_config(ca_cert)?))
        } else {
            None
        };
        Ok(Conns {
            host,
            port,
            tls,
            h2: RefCell::new(None),
            h1_idle: RefCell::new(Vec::new()),
        })
    }

    /// A new connection: TLS with ALPN (h2 preferred) for https, else HTTP/1.1.
    async fn connect(&self) -> Result<Sender, String> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        match &self.tls {
            None => {
                let (s, conn) = http1::handshake(TokioIo::new(tcp))
                    .await
                    .map_err(|e| e.to_string())?;
                tokio::spawn(conn);
                Ok(Sender::H1(s))
            }
            Some(tls) => {
                let name = rustls::pki_types::ServerName::try_from(self.host.clone())
                    .map_err(|e| e.to_string())?;
                let stream = tls.connect(name, tcp).await.map_err(|e| e.to_string())?;
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                let io = TokioIo::new(stream);
                if h2 {
                    let (s, conn) = http2::Builder::new(TokioExecutor::new())
                        .initial_stream_window_size(4 << 20)
                        .initial_connection_window_size(16 << 20)
                        .handshake(io)
                        .await
                        .map_err(|e| e.to_string())?;
                    tokio::spawn(conn);
                    Ok(Sender::H2(s))
                } else {
                    let (s, conn) = http1::handshake(io).await.map_err(|e| e.to_string())?;
                    tokio::spawn(conn);
                    Ok(Sender::H1(s))
                }
            }
        }
    }

    /// A sender for one request: the shared HTTP/2 connection, an idle HTTP/1.1 one, or
    /// a new connection. Returns it and, for a new connection, when connecting began.
    async fn sender(&self, clock: Clock) -> Result<(Sender, Option<u64>), String> {
        let h2 = self.h2.borrow().clone();
        if let Some(s) = h2.filter(|s| !s.is_closed()) {
            return Ok((Sender::H2(s), None));
        }
        loop {
            let idle = self.h1_idle.borrow_mut().pop();
            match idle {
                Some(mut s) if !s.is_closed() => {
                    if s.ready().await.is_ok() {
                        return Ok((Sender::H1(s), None));
                    }
                }
                Some(_) => {}
                None => break,
            }
        }
        let t = clock.now_us();
        let s = self.connect().await?;
        if let Sender::H2(h) = &s {
            *self.h2.borrow_mut() = Some(h.clone());
        }
        Ok((s, Some(t)))
    }
}

/// The network of one run; implements the session's [`Transport`].
pub struct NativeNet {
    conns: Rc<Conns>,
    clock: Clock,
    tx: mpsc::UnboundedSender<NetEvent>,
    aborts: HashMap<u32, oneshot::Sender<()>>,
    extra_header: Option<(String, String)>,
}

/// The TLS client configuration: Mozilla's roots, plus a certificate to trust (DER or
/// PEM), e.g. the reference server's self-signed one (`--cert-out`).
fn tls_config(extra_cert: Option<&str>) -> Result<Arc<rustls::ClientConfig>, NetError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_cert {
        let bytes = std::fs::read(path).map_err(|e| NetError::Cert {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let der = if bytes.starts_with(b"-----BEGIN") {
            let text = String::from_utf8_lossy(&bytes);
            let b64: String = text
                .lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<Vec<_>>()
                .join("");
            crate::core::base64::decode(b64.trim()).map_err(|e| NetError::Cert {
                path: path.to_owned(),
                message: e.to_string(),
            })?
        } else {
            bytes
        };
        roots
            .add(rustls::pki_types::CertificateDer::from(der))
            .map_err(|e| NetError::Cert {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| NetError::Tls(e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

impl NativeNet {
    /// Connects once to `url` (to learn its protocol; the connection is kept for the
    /// run) and returns the network and the channel its events arrive on.
    pub async fn open(
        url: &str,
        ca_cert: Option<&str>,
        extra_header: Option<(String, String)>,
        clock: Clock,
    ) -> Result<(Self, mpsc::UnboundedReceiver<NetEvent>), NetError> {
        let conns = Rc::new(Conns::for_url(url, ca_cert)?);
        let (host, port) = (conns.host.clone(), conns.port);
        let first = conns.connect().await.map_err(|message| NetError::Connect {
            addr: format!("{host}:{port}"),
            message,
        })?;
        match first {
            Sender::H2(s) => *conns.h2.borrow_mut() = Some(s),
            Sender::H1(s) => conns.h1_idle.borrow_mut().push(s),
        }
        let (tx, rx) = mpsc::unbounded_channel();
        Ok((
            Self {
                conns,
                clock,
                tx,
                aborts: HashMap::new(),
                extra_header,
            },
            rx,
        ))
    }

    /// The protocol the endpoint speaks (`h2` or `http/1.1`).
    pub fn protocol(&self) -> &'static str {
        if self.conns.h2.borrow().is_some() {
            "h2"
        } else {
            "http/1.1"
        }
    }

    /// Forgets a request's abort handle once it ended.
    pub fn ended(&mut self, id: u32) {
        self.aborts.remove(&id);
    }
}

impl Transport for NativeNet {
    /// The request is written by its task (the session's stamp is the send time: the
    /// task starts at once on this thread).
    fn send(&mut self, req: &Outgoing) -> Option<u64> {
        let (abort_tx, abort_rx) = oneshot::channel();
        self.aborts.insert(req.id, abort_tx);
        let job = Job {
            conns: self.conns.clone(),
            clock: self.clock,
            tx: self.tx.clone(),
            out: req.clone(),
            extra_header: self.extra_header.clone(),
        };
        tokio::task::spawn_local(job.run(abort_rx));
        None
    }

    fn abort(&mut self, id: u32) {
        if let Some(a) = self.aborts.remove(&id) {
            let _ = a.send(());
        }
    }
}

struct Job {
    conns: Rc<Conns>,
    clock: Clock,
    tx: mpsc::UnboundedSender<NetEvent>,
    out: Outgoing,
    extra_header: Option<(String, String)>,
}

#[derive(Default)]
struct Seen {
    protocol: Option<String>,
    wire: Option<WireTiming>,
}

impl Job {
    async fn run(self, abort: oneshot::Receiver<()>) {
        let mut seen = Seen::default();
        let end = tokio::select! {
            r = self.stream(&mut seen) => r.unwrap_or_else(|m| StreamEnd::Failed(Outcome::Network { message: m })),
            _ = abort => StreamEnd::Failed(Outcome::Aborted {}),
        };
        let t_us = self.clock.now_us();
        if let Some(w) = seen.wire.as_mut() {
            w.response_end_us = t_us;
        }
        let _ = self.tx.send(NetEvent::End {
            id: self.out.id,
            t_us,
            end,
            protocol: seen.protocol,
            wire: seen.wire,
        });
    }

    async fn stream(&self, seen: &mut Seen) -> Result<StreamEnd, String> {
        let id = self.out.id;
        let (sender, connect_start) = self.conns.sender(self.clock).await?;
        seen.protocol = Some(sender.protocol().into());
        let request_start = self.clock.now_us();
        let mut wire = WireTiming {
            connect_start_us: connect_start.unwrap_or(request_start),
            request_start_us: request_start,
            response_start_us: 0,
            response_end_us: 0,
        };
        let (resp, h1) = send(sender, &self.out.request, self.extra_header.as_ref()).await?;
        let t = self.clock.now_us();
        wire.response_start_us = t;
        seen.wire = Some(wire);
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let pairs = if crate::core::record::wants_headers(status) {
            resp.headers()
                .iter()
                .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect()
        } else {
            Vec::new()
        };
        let _ = self.tx.send(NetEvent::Headers {
            id,
            t_us: t,
            status,
            content_type,
            pairs,
        });
        let mut body = resp.into_body();
        if !(200..300).contains(&status) {
            // At most MAX_ERROR_BODY bytes of it (the connection is dropped after).
            let mut bytes = Vec::new();
            while bytes.len() < MAX_ERROR_BODY {
                match body.frame().await {
                    Some(Ok(f)) => {
                        if let Ok(d) = f.into_data() {
                            bytes.extend_from_slice(&d);
                        }
                    }
                    _ => break,
                }
            }
            bytes.truncate(MAX_ERROR_BODY);
            return Ok(StreamEnd::Failed(Outcome::Http {
                status,
                message: error_message_from_body(&String::from_utf8_lossy(&bytes)),
            }));
        }
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let Ok(data) = frame.into_data() {
                let t_us = self.clock.now_us();
                let _ = self.tx.send(NetEvent::Bytes { id, t_us, data });
            }
        }
        if let Some(s) = h1.filter(|s| !s.is_closed()) {
            self.conns.h1_idle.borrow_mut().push(s);
        }
        Ok(StreamEnd::Eof)
    }
}

impl Sender {
    fn protocol(&self) -> &'static str {
        match self {
            Sender::H1(_) => "http/1.1",
            Sender::H2(_) => "h2",
        }
    }
}

/// Sends the core's request as it is (plus a test's extra header; `Host` over HTTP/1.1)
/// on `sender`; returns the response, and the HTTP/1.1 connection to reuse once its body
/// is read.
async fn send(
    sender: Sender,
    req: &HttpRequest,
    extra_header: Option<&(String, String)>,
) -> Result<
    (
        hyper::Response<hyper::body::Incoming>,
        Option<http1::SendRequest<Full<Bytes>>>,
    ),
    String,
> {
    let uri: hyper::Uri = req.url.parse().map_err(|e| format!("{e}"))?;
    let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
    let method = hyper::Method::from_bytes(req.method.as_bytes()).map_err(|e| e.to_string())?;
    let mut b = hyper::Request::builder().method(method).uri(uri);
    if matches!(sender, Sender::H1(_)) {
        b = b.header(hyper::header::HOST, authority);
    }
    for (k, v) in req.headers.iter().chain(extra_header) {
        b = b.header(k.as_str(), v.as_str());
    }
    let body = Full::new(Bytes::from(req.body.clone().unwrap_or_default()));
    let http = b.body(body).map_err(|e| e.to_string())?;
    match sender {
        Sender::H1(mut s) => {
            let r = s.send_request(http).await.map_err(|e| e.to_string())?;
            Ok((r, Some(s)))
        }
        Sender::H2(mut s) => {
            s.ready().await.map_err(|e| e.to_string())?;
            let r = s.send_request(http).await.map_err(|e| e.to_string())?;
            Ok((r, None))
        }
    }
}

/// Largest body a plain request reads, bytes (an answer is a small JSON document; a
/// server that sends more is cut off rather than read into memory without bound).
pub const MAX_PLAIN_BODY: usize = 8 << 20;

/// One request the core decided (method, URL, headers, body) on a fresh connection. With a
/// `sink`, the response's headers and body frames go to it as they arrive, each timestamped
/// by `clock`, and the result's body is empty; without one, the body (at most
/// [`MAX_PLAIN_BODY`] bytes) is returned as text. Returns the status, the body and the
/// clock's reading when the body ended.
pub async fn exchange(
    req: &HttpRequest,
    ca_cert: Option<&str>,
    extra_header: Option<&(String, String)>,
    clock: Clock,
    mut sink: Option<&mut dyn crate::core::lifecycle::StreamSink>,
) -> Result<(u16, String, u64), String> {
    let conns = Conns::for_url(&req.url, ca_cert).map_err(|e| e.to_string())?;
    let (sender, _) = conns.sender(clock).await?;
    let (resp, _) = send(sender, req, extra_header).await?;
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(s) = sink.as_mut() {
        s.on_headers(clock.now_us(), status, content_type.as_deref());
    }
    let mut body = resp.into_body();
    let mut text = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        if let Ok(data) = frame.into_data() {
            match sink.as_mut() {
                Some(s) => s.on_bytes(clock.now_us(), &data),
                None => {
                    if text.len() + data.len() > MAX_PLAIN_BODY {
                        return Err(format!(
                            "{} answered more than {} MB",
                            req.url,
                            MAX_PLAIN_BODY >> 20
                        ));
                    }
                    text.extend_from_slice(&data);
                }
            }
        }
    }
    Ok((
        status,
        String::from_utf8_lossy(&text).into_owned(),
        clock.now_us(),
    ))
}
