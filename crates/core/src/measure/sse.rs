//! A Server-Sent Events decoder following the WHATWG HTML "event stream interpretation"
//! algorithm, fed with arbitrary byte slices.
//!
//! Grammar (WHATWG §9.2.5): a stream is lines ended by CRLF, LF or CR. A leading U+FEFF
//! (BOM) is dropped once. An empty line dispatches the pending event; a line starting with
//! `:` is a comment; otherwise `field:value` (one leading space of the value is removed) or
//! a bare `field` with an empty value. Fields: `event` sets the type, `data` appends the
//! value and a LF, `id` sets the last event id (unless it contains NUL), `retry` sets the
//! reconnection time if it is all ASCII digits. Others are ignored. On dispatch, the final
//! LF of the data is removed; an event with no `data` line is not dispatched.
//!
//! Bytes are split into lines before UTF-8 decoding, so a code point split across two
//! `push` calls decodes correctly. Invalid UTF-8 is decoded with U+FFFD and recorded as an
//! anomaly (never silently). A line longer than the limit yields
//! [`SseError::LineTooLong`] and is skipped to its end with bounded memory.

/// Default limit on one line's length in bytes (1 MiB).
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// Event type (`message` when no `event:` field was given).
    pub event: String,
    /// Data lines joined with LF.
    pub data: String,
    /// The last event id at dispatch time (empty when none was set).
    pub id: String,
}

/// Problems in an event stream. Decoding continues after each of them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line exceeded the limit; it was discarded up to its end.
    #[error("SSE line longer than {limit} bytes was discarded")]
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// The stream ended inside an event (no terminating blank line).
    #[error("SSE stream ended inside an event (data so far: {pending_data:?}, partial line: {partial_line:?})")]
    Truncated {
        /// Data lines accumulated for the undispatched event.
        pending_data: String,
        /// An unterminated last line.
        partial_line: String,
    },
}

/// Non-fatal irregularities, counted so that none is silent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseAnomalies {
    /// Lines that were not valid UTF-8 (decoded with U+FFFD).
    pub invalid_utf8_lines: u32,
    /// Comment lines seen (`:` keep-alives).
    pub comments: u32,
    /// Lines with a field name other than event/data/id/retry.
    pub unknown_fields: u32,
}

/// Incremental SSE decoder: `push` bytes, get the events they complete.
#[derive(Debug)]
pub struct SseDecoder {
    max_line: usize,
    line: Vec<u8>,
    skipping: bool,
    after_cr: bool,
    /// Bytes held back at the start while deciding whether they are a BOM.
    head: Option<Vec<u8>>,
    data: String,
    has_data: bool,
    event_type: String,
    last_id: String,
    retry_ms: Option<u64>,
    anomalies: SseAnomalies,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

impl SseDecoder {
    /// A decoder whose lines may be at most `max_line_bytes` long.
    pub fn new(max_line_bytes: usize) -> Self {
        Self {
            max_line: max_line_bytes.max(1),
            line: Vec::new(),
            skipping: false,
            after_cr: false,
            head: Some(Vec::new()),
            data: String::new(),
            has_data: false,
            event_type: String::new(),
            last_id: String::new(),
            retry_ms: None,
            anomalies: SseAnomalies::default(),
        }
    }

    /// The reconnection time from the last valid `retry:` field.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Irregularities seen so far.
    pub fn anomalies(&self) -> &SseAnomalies {
        &self.anomalies
    }

    /// Feeds bytes; returns the events (and errors) they complete, in stream order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Result<SseEvent, SseError>> {
        let mut out = Vec::new();
        if let Some(head) = self.head.as_mut() {
            head.extend_from_slice(bytes);
            if head.len() < BOM.len() && BOM.starts_with(head) {
                return out;
            }
            let head = self.head.take().unwrap_or_default();
            let rest = head.strip_prefix(&BOM[..]).unwrap_or(&head);
            self.feed(rest, &mut out);
        } else {
            self.feed(bytes, &mut out);
        }
        out
    }

    /// Ends the stream. Reports an event cut off by the end of the stream, if any.
    pub fn finish(&mut self) -> Option<SseError> {
        if let Some(head) = self.head.take() {
            let mut out = Vec::new();
            self.feed(&head, &mut out);
            // Events completed by the held-back bytes cannot exist (no line end among < 3
            // bytes that are a BOM prefix), so `out` is empty here.
        }
        let partial_line = if self.skipping {
            String::new()
        } else {
            let line = std::mem::take(&mut self.line);
            self.decode_line(line)
        };
        let pending_data = std::mem::take(&mut self.data);
        if partial_line.is_empty() && !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseError::Truncated {
            pending_data,
            partial_line,
        })
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(pos) => {
                    self.append(&rest[..pos], out);
                    self.after_cr = rest[pos] == b'\r';
                    self.end_line(out);
                    rest = &rest[pos + 1..];
                }
                None => {
                    self.append(rest, out);
                    rest = &[];
                }
            }
        }
    }

    fn append(&mut self, bytes: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        if self.skipping || bytes.is_empty() {
            return;
        }
        if self.line.len() + bytes.len() > self.max_line {
            self.line = Vec::new();
            self.skipping = true;
            out.push(Err(SseError::LineTooLong {
                limit: self.max_line,
            }));
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    fn decode_line(&mut self, bytes: Vec<u8>) -> String {
        match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => {
                self.anomalies.invalid_utf8_lines += 1;
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        }
    }

    fn end_line(&mut self, out: &mut Vec<Result<SseEvent, SseError>>) {
        if self.skipping {
            self.skipping = false;
            return;
        }
        let bytes = std::mem::take(&mut self.line);
        if bytes.is_empty() {
            self.dispatch(out);
            return;
        }
        let line = self.decode_line(bytes);
        if line.starts_with(':') {
            self.anomalies.comments += 1;
            return;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event_type = value.to_owned(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" => {
                if !value.contains('\0') {
                    self.last_id = value.to_owned();
                }
            }
            "retry" => {
                if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                    // Saturate absurdly long digit strings instead of failing.
                    self.retry_ms = Some(value.parse().unwrap_or(u64::MAX));
                }
            }
            _ => self.anomalies.unknown_fields += 1,
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Result<SseEvent, SseError>>) {
        let event_type = std::mem::take(&mut self.event_type);
        if !self.has_data {
            self.data.clear();
            return;
        }
        self.has_data = false;
        let mut data = std::mem::take(&mut self.data);
        if data.ends_with('\n') {
            data.pop();
        }
        out.push(Ok(SseEvent {
            event: if event_type.is_empty() {
                "message".to_owned()
            } else {
                event_type
            },
            data,
            id: self.last_id.clone(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ev(event: &str, data: &str, id: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.into(),
        }
    }

    fn all(
        bytes: &[u8],
    ) -> (
        Vec<Result<SseEvent, SseError>>,
        Option<SseError>,
        SseDecoder,
    ) {
        let mut d = SseDecoder::default();
        let out = d.push(bytes);
        let fin = d.finish();
        (out, fin, d)
    }

    fn events(bytes: &[u8]) -> Vec<SseEvent> {
        all(bytes)
            .0
            .into_iter()
            .map(|r| r.expect("event"))
            .collect()
    }

    /// Known answers: (input, expected events).
    #[test]
    fn known_answer_streams() {
        let cases: Vec<(&[u8], Vec<SseEvent>)> = vec![
            (b"data: a\n\n", vec![ev("message", "a", "")]),
            (b"data:a\r\n\r\n", vec![ev("message", "a", "")]),
            (
                b"data: a\r\rdata: b\r\r",
                vec![ev("message", "a", ""), ev("message", "b", "")],
            ),
            (b"data: x\ndata: y\n\n", vec![ev("message", "x\ny", "")]),
            (b"data\n\n", vec![ev("message", "", "")]),
            (b"data:\n\n", vec![ev("message", "", "")]),
            (
                b"data:  two spaces\n\n",
                vec![ev("message", " two spaces", "")],
            ),
            (b": keep-alive\n\ndata: z\n\n", vec![ev("message", "z", "")]),
            (b"event: error\ndata: {}\n\n", vec![ev("error", "{}", "")]),
            (
                b"id: 7\ndata: a\n\ndata: b\n\n",
                vec![ev("message", "a", "7"), ev("message", "b", "7")],
            ),
            (
                b"id: 7\ndata: a\n\nid\ndata: b\n\n",
                vec![ev("message", "a", "7"), ev("message", "b", "")],
            ),
            (b"id: a\0b\ndata: a\n\n", vec![ev("message", "a", "")]),
            (b"event: x\n\ndata: a\n\n", vec![ev("message", "a", "")]),
            (b"\xEF\xBB\xBFdata: bom\n\n", vec![ev("message", "bom", "")]),
            (b"data: a:b: c\n\n", vec![ev("message", "a:b: c", "")]),
            (
                "data: \u{e9}\u{1F600}\n\n".as_bytes(),
                vec![ev("message", "\u{e9}\u{1F600}", "")],
            ),
            (b"foo: bar\ndata: q\n\n", vec![ev("message", "q", "")]),
            (b"\n\n\n", vec![]),
        ];
        for (input, want) in cases {
            assert_eq!(
                events(input),
                want,
                "input {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn second_bom_is_data_not_stripped() {
        let got = events(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n");
        assert!(
            got.is_empty(),
            "a second BOM makes the field name unknown: {got:?}"
        );
    }

    #[test]
    fn retry_field_sets_reconnection_time_only_when_digits() {
        let (_, _, d) = all(b"retry: 1500\n\nretry: 12x\n\n");
        assert_eq!(d.retry_ms(), Some(1500));
    }

    #[test]
    fn comments_and_unknown_fields_are_counted() {
        let (_, _, d) = all(b": ping\n: ping\nweird: 1\n\n");
        assert_eq!(d.anomalies().comments, 2);
        assert_eq!(d.anomalies().unknown_fields, 1);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_recorded() {
        let (out, _, d) = all(b"data: a\xFFb\n\n");
        assert_eq!(out, vec![Ok(ev("message", "a\u{FFFD}b", ""))]);
        assert_eq!(d.anomalies().invalid_utf8_lines, 1);
    }

    #[test]
    fn utf8_split_across_pushes_decodes() {
        let bytes = "data: \u{20AC}\u{1F600}\n\n".as_bytes();
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        for b in bytes {
            out.extend(d.push(std::slice::from_ref(b)));
        }
        assert_eq!(out, vec![Ok(ev("message", "\u{20AC}\u{1F600}", ""))]);
        assert_eq!(d.anomalies().invalid_utf8_lines, 0);
    }

    #[test]
    fn over_long_line_is_an_error_with_bounded_memory() {
        let mut d = SseDecoder::new(16);
        let mut out = d.push(b"data: ");
        for _ in 0..10_000 {
            out.extend(d.push(b"xxxxxxxxxx"));
            assert!(
                d.line.capacity() <= 64,
                "line buffer grew to {}",
                d.line.capacity()
            );
        }
        out.extend(d.push(b"\n\ndata: ok\n\n"));
        assert_eq!(
            out,
            vec![
                Err(SseError::LineTooLong { limit: 16 }),
                Ok(ev("message", "ok", ""))
            ]
        );
    }

    #[test]
    fn truncated_stream_is_reported_with_its_data() {
        let (out, fin, _) = all(b"data: a\n\ndata: b\ndata: c");
        assert_eq!(out, vec![Ok(ev("message", "a", ""))]);
        assert_eq!(
            fin,
            Some(SseError::Truncated {
                pending_data: "b\n".into(),
                partial_line: "data: c".into()
            })
        );
        assert_eq!(all(b"data: a\n\n").1, None);
        assert_eq!(all(b"").1, None);
    }

    #[test]
    fn lone_cr_then_lf_in_next_push_is_one_line_end() {
        let mut d = SseDecoder::default();
        let mut out = d.push(b"data: a\r");
        out.extend(d.push(b"\n\r"));
        out.extend(d.push(b"\n"));
        assert_eq!(out, vec![Ok(ev("message", "a", ""))]);
    }

    fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"data: ".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"event: e\n".to_vec()),
            Just(b"id: 1\n".to_vec()),
            Just(b"retry: 30\n".to_vec()),
            Just(b": c\n".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\r".to_vec()),
            Just("\u{1F600}\u{e9}".as_bytes().to_vec()),
            Just(b"\xEF\xBB\xBF".to_vec()),
            Just(b"\xFF".to_vec()),
            Just(br#"{"choices":[{"text":"hi"}]}"#.to_vec()),
            "[a-z :]{0,12}".prop_map(|s| s.into_bytes()),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn same_events_however_the_bytes_are_split(
            bytes in stream_strategy(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut whole = SseDecoder::new(64);
            let want = whole.push(&bytes);
            let want_fin = whole.finish();

            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut split = SseDecoder::new(64);
            let mut got = Vec::new();
            let mut start = 0;
            for c in cuts.into_iter().chain(std::iter::once(bytes.len())) {
                got.extend(split.push(&bytes[start..c]));
                start = c;
            }
            prop_assert_eq!(got, want);
            prop_assert_eq!(split.finish(), want_fin);
            prop_assert_eq!(split.retry_ms(), whole.retry_ms());
            prop_assert_eq!(split.anomalies(), whole.anomalies());
        }
    }
}
