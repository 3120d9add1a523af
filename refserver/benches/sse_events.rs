//! How many SSE events/s the reference server sustains when its steps cost nothing, so it
//! is never the bottleneck of client-fidelity tests. Prints a table.
//! Run: `cargo bench -p pinbench-refserver --bench sse_events`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pinbench-refserver"))
        .args([
            "--port",
            "0",
            "--tls-port",
            "-1",
            "--idle-exit-secs",
            "60",
            "--zero-step-cost",
            "--max-num-seqs",
            "1024",
            "--kv-capacity",
            "100000000",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready");
    let port = pinbench_refserver::port_in_ready_line(&line, "http=").expect("port");
    println!("| streams | tokens/request | events/s | requests/s |");
    println!("|---:|---:|---:|---:|");
    for (streams, tokens) in [(1usize, 1000u32), (16, 1000), (64, 1000), (64, 64)] {
        let (events, requests, secs) = run(port, streams, tokens, Duration::from_secs(3));
        println!(
            "| {streams} | {tokens} | {:.0} | {:.1} |",
            events as f64 / secs,
            requests as f64 / secs
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn run(port: u16, streams: usize, tokens: u32, dur: Duration) -> (u64, u64, f64) {
    let events = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let handles: Vec<_> = (0..streams)
        .map(|_| {
            let (events, requests, stop) = (events.clone(), requests.clone(), stop.clone());
            std::thread::spawn(move || {
                let body = format!(r#"{{"model":"pinbench-tiny","prompt":"w w w w","max_tokens":{tokens},"stream":true,"ignore_eos":true}}"#);
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return };
                    let req = format!("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                    if s.write_all(req.as_bytes()).is_err() {
                        return;
                    }
                    let mut buf = [0u8; 65536];
                    let mut prev = 0u8;
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                let mut count = 0;
                                for &b in &buf[..n] {
                                    if b == b'\n' && prev == b'\n' {
                                        count += 1;
                                    }
                                    prev = b;
                                }
                                events.fetch_add(count, Ordering::Relaxed);
                            }
                        }
                    }
                    requests.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(dur);
    let (e, r) = (
        events.load(Ordering::Relaxed),
        requests.load(Ordering::Relaxed),
    );
    let secs = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    (e, r, secs)
}
