//! HTTPS with ALPN: HTTP/2 is negotiated, and many streams run at once on one connection.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_is_negotiated_and_carries_concurrent_streams() {
    let dir = std::env::temp_dir().join(format!("pinbench-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let cert_path = dir.join("cert.der");
    let s = common::Server::start(&["--cert-out", cert_path.to_str().expect("utf8 path")]);
    let cert = std::fs::read(&cert_path).expect("cert written");

    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(cert))
        .expect("cert accepted");
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.tls_port))
        .await
        .expect("connects");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    assert_eq!(
        tls.get_ref().1.alpn_protocol(),
        Some(&b"h2"[..]),
        "ALPN must pick h2"
    );

    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    let streams = 16;
    let mut tasks = Vec::new();
    for _ in 0..streams {
        let mut sender = sender.clone();
        tasks.push(tokio::spawn(async move {
            let body = json!({"model": "pinbench-tiny", "prompt": " w w w w", "max_tokens": 40, "stream": true, "ignore_eos": true});
            let req = hyper::Request::post(format!("https://localhost:{}/v1/completions", 0))
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())))
                .expect("request");
            let resp = sender.send_request(req).await.expect("response");
            assert_eq!(resp.version(), hyper::Version::HTTP_2);
            let id: u64 = resp.headers()["x-request-id"].to_str().expect("ascii").parse().expect("id");
            let bytes = resp.into_body().collect().await.expect("body").to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            assert!(text.ends_with("data: [DONE]\n\n"));
            id
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.expect("task"));
    }
    // From the truth: every stream was admitted before the first one finished.
    let truths: Vec<Value> = ids
        .iter()
        .map(|id| common::get(s.port, &format!("/truth/{id}")).json())
        .collect();
    let last_admit = truths
        .iter()
        .map(|t| t["admitted_us"].as_u64().expect("admitted"))
        .max()
        .expect("some");
    let first_finish = truths
        .iter()
        .map(|t| t["finished_us"].as_u64().expect("finished"))
        .min()
        .expect("some");
    assert!(last_admit < first_finish, "{streams} h2 streams did not overlap: last admitted {last_admit}, first finished {first_finish}");
    let _ = std::fs::remove_dir_all(&dir);
}
