//! Ground truth: what the server did for each request, in server monotonic µs.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

/// Requests kept (oldest dropped first).
pub const MAX_KEPT: usize = 100_000;

/// One request's truth.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Truth {
    /// Request id (also in the `x-request-id` header and the chunks' `id`).
    pub id: u64,
    /// Endpoint path.
    pub path: String,
    /// Body fully received, µs.
    pub received_us: u64,
    /// Admitted into the batch, µs.
    pub admitted_us: Option<u64>,
    /// Response headers handed to the connection, µs.
    pub headers_us: Option<u64>,
    /// First token-carrying event written, µs.
    pub first_token_us: Option<u64>,
    /// Every token-carrying event: `[written µs, tokens]`.
    pub chunks: Vec<(u64, u32)>,
    /// Last byte written (or failure), µs.
    pub finished_us: Option<u64>,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Generated tokens sent.
    pub completion_tokens: u32,
    /// Finish reason.
    pub finish_reason: Option<String>,
    /// HTTP status sent.
    pub status: u16,
    /// Faults applied (the spec), if any.
    pub faults: Option<String>,
}

/// All truths, by id.
#[derive(Debug, Default)]
pub struct TruthStore {
    inner: Mutex<BTreeMap<u64, Truth>>,
}

impl TruthStore {
    /// Inserts or replaces a record.
    pub fn put(&self, t: Truth) {
        if let Ok(mut m) = self.inner.lock() {
            m.insert(t.id, t);
            while m.len() > MAX_KEPT {
                m.pop_first();
            }
        }
    }

    /// One record.
    pub fn get(&self, id: u64) -> Option<Truth> {
        self.inner.lock().ok()?.get(&id).cloned()
    }

    /// Records with id ≥ `since`, in id order.
    pub fn since(&self, since: u64) -> Vec<Truth> {
        self.inner
            .lock()
            .map(|m| m.range(since..).map(|(_, t)| t.clone()).collect())
            .unwrap_or_default()
    }
}
