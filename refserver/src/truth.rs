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
    /// Of those, tokens the prefix cache held (not prefilled again).
    pub cached_tokens: u32,
    /// Generated tokens sent.
    pub completion_tokens: u32,
    /// Finish reason.
    pub finish_reason: Option<String>,
    /// HTTP status sent.
    pub status: u16,
    /// Faults applied (the spec), if any.
    pub faults: Option<String>,
    /// The response id as the request's API wrote it (`cmpl-N`, `msg_N`, …).
    pub response_id: String,
    /// Of the generated tokens, reasoning (sent or not).
    pub reasoning_tokens: u32,
    /// Leading `chunks` that carried reasoning (visible reasoning only).
    pub reasoning_chunks: u32,
    /// First answer token's event written, µs.
    pub first_answer_us: Option<u64>,
    /// The answer text sent (a client's text must equal it).
    pub text: String,
    /// The reasoning text sent (empty when hidden).
    pub reasoning_text: String,
}

/// Bytes of truth kept at most (oldest dropped first).
pub const MAX_BYTES: usize = 256 << 20;

impl Truth {
    /// Approximate bytes this record holds.
    fn bytes(&self) -> usize {
        std::mem::size_of::<Truth>()
            + self.path.len()
            + self.chunks.len() * std::mem::size_of::<(u64, u32)>()
            + self.finish_reason.as_ref().map_or(0, String::len)
            + self.faults.as_ref().map_or(0, String::len)
            + self.response_id.len()
            + self.text.len()
            + self.reasoning_text.len()
    }
}

/// All truths, by id, bounded in count and in bytes.
#[derive(Debug, Default)]
pub struct TruthStore {
    inner: Mutex<(BTreeMap<u64, Truth>, usize)>,
}

impl TruthStore {
    /// Inserts or replaces a record.
    pub fn put(&self, t: Truth) {
        if let Ok(mut g) = self.inner.lock() {
            let (m, bytes) = &mut *g;
            *bytes += t.bytes();
            if let Some(old) = m.insert(t.id, t) {
                *bytes = bytes.saturating_sub(old.bytes());
            }
            while m.len() > MAX_KEPT || *bytes > MAX_BYTES {
                match m.pop_first() {
                    Some((_, old)) => *bytes = bytes.saturating_sub(old.bytes()),
                    None => break,
                }
            }
        }
    }

    /// One record.
    pub fn get(&self, id: u64) -> Option<Truth> {
        self.inner.lock().ok()?.0.get(&id).cloned()
    }

    /// Records with id ≥ `since`, in id order.
    pub fn since(&self, since: u64) -> Vec<Truth> {
        self.inner
            .lock()
            .map(|g| g.0.range(since..).map(|(_, t)| t.clone()).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_bounded_in_bytes_dropping_the_oldest() {
        let store = TruthStore::default();
        // 40 records of 1 M chunks each (16 MB apiece): at most 256 MiB kept.
        for id in 0..40u64 {
            store.put(Truth {
                id,
                chunks: vec![(0, 1); 1 << 20],
                ..Truth::default()
            });
        }
        let kept = store.since(0);
        assert!(kept.len() < 40 && kept.len() >= 15, "{}", kept.len());
        assert_eq!(kept.last().map(|t| t.id), Some(39), "the newest stays");
    }
}
