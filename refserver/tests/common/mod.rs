//! Test helpers: start the real binary on free ports, and a small HTTP/1.1 client.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `pinbench-refserver`, killed (by PID) when dropped.
pub struct Server {
    child: Child,
    /// HTTP port.
    pub port: u16,
    /// HTTPS port.
    pub tls_port: u16,
}

impl Server {
    /// Starts the server with extra arguments (the tiny profile by default).
    pub fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pinbench-refserver"))
            .args(["--port", "0", "--tls-port", "0", "--idle-exit-secs", "120"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready line");
        let port_of = |key: &str| -> u16 {
            pinbench_refserver::port_in_ready_line(&line, key)
                .unwrap_or_else(|| panic!("no {key} in {line:?}"))
        };
        let (port, tls_port) = (port_of("http="), port_of("https="));
        Server {
            child,
            port,
            tls_port,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response.
#[derive(Debug)]
pub struct Resp {
    /// Status code.
    pub status: u16,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body (de-chunked).
    pub body: Vec<u8>,
    /// False when a chunked body ended without its final chunk (connection reset).
    pub complete: bool,
}

impl Resp {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    /// Body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// Body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One HTTP/1.1 request with `Connection: close`.
pub fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("writes");
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse(&raw)
}

/// POSTs JSON.
pub fn post(port: u16, path: &str, body: &serde_json::Value, headers: &[(&str, &str)]) -> Resp {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    request(port, "POST", path, &h, body.to_string().as_bytes())
}

/// GETs a path.
pub fn get(port: u16, path: &str) -> Resp {
    request(port, "GET", path, &[], b"")
}

fn parse(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    if !chunked {
        return Resp {
            status,
            headers,
            body: rest.to_vec(),
            complete: true,
        };
    }
    let mut body = Vec::new();
    let mut complete = false;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..eol]).trim(), 16)
            .unwrap_or(usize::MAX);
        rest = &rest[eol + 2..];
        if size == 0 {
            complete = true;
            break;
        }
        if size == usize::MAX || rest.len() < size {
            break;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[(size + 2).min(rest.len())..];
    }
    Resp {
        status,
        headers,
        body,
        complete,
    }
}

/// The `data:` payloads of an SSE body.
pub fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// `n` tokens exactly under the server's tokenizer.
pub fn prompt(n: usize) -> String {
    " w".repeat(n)
}

/// A temporary directory of one test, removed when dropped.
pub struct Tmp(std::path::PathBuf);

impl Tmp {
    /// A fresh directory for `name` (and this process).
    pub fn new(name: &str) -> Tmp {
        let dir = std::env::temp_dir().join(format!("pinbench-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Tmp(dir)
    }
    /// A file in it.
    pub fn path(&self, f: &str) -> String {
        self.0.join(f).to_string_lossy().into_owned()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `pinbench run` with this pins file (and extra arguments) into `tmp`; checks that the
/// report is signed and every figure recomputes, and returns it.
pub fn native_run(tmp: &Tmp, pins_text: &str, extra: &[&str]) -> pinbench::core::report::Report {
    std::fs::write(tmp.path("pins.json"), pins_text).expect("pins written");
    let mut args: Vec<String> = [
        "--pins",
        &tmp.path("pins.json"),
        "--out",
        &tmp.path("report.json"),
        "--key",
        &tmp.path("key.json"),
        "--new-key",
        "--force",
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    pinbench::native::cli::run_args(&args).expect("the native run succeeds");
    let text = std::fs::read_to_string(tmp.path("report.json")).expect("report written");
    let opened = pinbench::core::report::open(&text).expect("the report opens");
    assert!(
        matches!(
            opened.verification,
            pinbench::core::report::Verification::Valid { .. }
        ),
        "signed: {:?}",
        opened.verification
    );
    let mismatches = pinbench::core::report::recompute(&opened.report).expect("recomputes");
    assert!(
        mismatches.is_empty(),
        "every figure recomputes: {mismatches:?}"
    );
    opened.report
}
