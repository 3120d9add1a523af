//! The native host of the core's lifecycle ([`crate::core::lifecycle::Host`]): its clock,
//! `/dev/urandom` and the native network. It decides nothing.

use std::time::Duration;

use super::net::{self, Clock};
use crate::core::lifecycle::{Host, HttpRequest, StreamSink};
use crate::core::metrics::RunHost;

/// The network and clock of the native command.
#[derive(Clone, Debug)]
pub struct NativeHost {
    /// A certificate to trust besides Mozilla's roots (DER or PEM file).
    pub ca_cert: Option<String>,
    /// A header sent with every request (e.g. `x-pinbench-fault`).
    pub extra_header: Option<(String, String)>,
    /// The host clock.
    pub clock: Clock,
}

impl NativeHost {
    /// A host whose clock starts now.
    pub fn new(ca_cert: Option<String>, extra_header: Option<(String, String)>) -> Self {
        Self {
            ca_cert,
            extra_header,
            clock: Clock::start(),
        }
    }
}

/// 32 bytes from `/dev/urandom`.
pub fn random_bytes() -> Result<[u8; 32], String> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .map_err(|e| format!("no randomness (/dev/urandom): {e}"))?;
    Ok(b)
}

impl Host for NativeHost {
    fn run_host(&self) -> RunHost {
        RunHost::Native
    }

    fn now_us(&self) -> u64 {
        self.clock.now_us()
    }

    fn random_seed(&self) -> Result<[u8; 32], String> {
        random_bytes()
    }

    async fn request(&self, req: HttpRequest) -> Result<(u16, String), String> {
        net::exchange(
            &req,
            self.ca_cert.as_deref(),
            self.extra_header.as_ref(),
            self.clock,
            None,
        )
        .await
        .map(|(status, body, _)| (status, body))
    }

    async fn stream(&self, req: HttpRequest, sink: &mut dyn StreamSink) -> Result<u64, String> {
        net::exchange(
            &req,
            self.ca_cert.as_deref(),
            self.extra_header.as_ref(),
            self.clock,
            Some(sink),
        )
        .await
        .map(|(_, _, end)| end)
    }

    async fn sleep_ms(&self, ms: u32) {
        tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
    }
}
