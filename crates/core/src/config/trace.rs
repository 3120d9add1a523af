//! Real request traces, read for replay: Mooncake JSONL (`timestamp` ms, `input_length`,
//! `output_length`, `hash_ids` of 512-token blocks that mark shared prefixes), BurstGPT
//! CSV (`Timestamp` s, `Request tokens`, `Response tokens`; rows with no response are
//! the trace's failed requests and are skipped) and the Azure LLM inference trace CSV
//! (`TIMESTAMP` as a date and time, `ContextTokens`, `GeneratedTokens`). Every row
//! becomes an arrival time relative to the first row, a prompt and an output length, and
//! (Mooncake) the ids of its prompt's blocks. The file's SHA-256 is its identity in the
//! pins. A built-in slice of a real trace runs with no file at all.

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Tokens per Mooncake `hash_ids` block.
pub const MOONCAKE_BLOCK_TOKENS: u32 = 512;

/// Rows a trace may hold (a replay that long is a week of traffic).
pub const MAX_ROWS: usize = 1_000_000;

/// Bytes a trace file may have.
pub const MAX_BYTES: usize = 256 << 20;

/// A trace file's format. Read from its name ([`TraceFormat::wire`]) through a string:
/// a derived enum reader costs the card page a kilobyte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum TraceFormat {
    /// Mooncake's JSONL (kvcache-ai/Mooncake `FAST25-release/traces/`).
    Mooncake,
    /// BurstGPT's CSV (HPMLL/BurstGPT `data/`).
    BurstGpt,
    /// The Azure LLM inference trace CSV (Azure/AzurePublicDataset).
    Azure,
}

impl TraceFormat {
    /// The format's name.
    pub fn label(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "Mooncake JSONL",
            TraceFormat::BurstGpt => "BurstGPT CSV",
            TraceFormat::Azure => "Azure LLM inference trace CSV",
        }
    }

    /// The format as the trace pin's text names it (`format=`).
    pub fn wire(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::BurstGpt => "burst_gpt",
            TraceFormat::Azure => "azure",
        }
    }
}

impl TryFrom<String> for TraceFormat {
    type Error = String;

    fn try_from(t: String) -> Result<Self, String> {
        [
            TraceFormat::Mooncake,
            TraceFormat::BurstGpt,
            TraceFormat::Azure,
        ]
        .into_iter()
        .find(|f| f.wire() == t)
        .ok_or_else(|| format!("unknown trace format `{t}`, expected mooncake, burst_gpt or azure"))
    }
}

/// One request of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRow {
    /// Arrival after the trace's first row, µs.
    pub t_us: u64,
    /// Prompt tokens.
    pub input: u32,
    /// Output tokens.
    pub output: u32,
    /// Mooncake: the ids of the prompt's 512-token blocks (equal ids: equal text).
    pub blocks: Vec<u64>,
}

/// A parsed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Its format.
    pub format: TraceFormat,
    /// The rows, in arrival order.
    pub rows: Vec<TraceRow>,
    /// Rows left out: the trace's failed requests (no output) or empty prompts.
    pub skipped: u32,
    /// SHA-256 of the file's bytes, lower-case hex.
    pub sha256: String,
}

/// What a trace holds, for its pin and its summary line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceFacts {
    /// Rows replayed.
    pub rows: u32,
    /// First to last arrival, µs.
    pub span_us: u64,
    /// Longest prompt, tokens.
    pub input_max: u32,
    /// Longest output, tokens.
    pub output_max: u32,
    /// Prompt tokens in blocks an earlier row also had (Mooncake), of all prompt tokens:
    /// the share a perfect prefix cache could serve, ‰.
    pub shared_permille: u32,
}

/// Why a trace cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// Not one of the three formats.
    #[error("not a trace pinbench reads: Mooncake JSONL (timestamp, input_length, output_length), BurstGPT CSV (Timestamp, Request tokens, Response tokens) or Azure CSV (TIMESTAMP, ContextTokens, GeneratedTokens)")]
    UnknownFormat,
    /// A row that does not read.
    #[error("{format}, line {line}: {why}")]
    BadRow {
        /// The format.
        format: &'static str,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// Over a limit.
    #[error("the trace is too large: {0}")]
    TooLarge(String),
    /// No row to replay.
    #[error("the trace has no request to replay")]
    Empty,
}

#[derive(Deserialize)]
struct MooncakeRow {
    timestamp: u64,
    input_length: u32,
    output_length: u32,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

/// Reads a trace file (format found from its first line).
pub fn parse(bytes: &[u8]) -> Result<Trace, TraceError> {
    let (sha256, text) = digest_and_text(bytes, MAX_BYTES).map_err(TraceError::TooLarge)?;
    let text = text.trim_start_matches('\u{feff}');
    let first = text.lines().next().unwrap_or("").trim();
    let (format, mut rows, skipped) = if first.starts_with('{') {
        let (r, s) = mooncake(text)?;
        (TraceFormat::Mooncake, r, s)
    } else {
        let header: Vec<String> = first
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        let col = |name: &str| header.iter().position(|h| h == name);
        match (
            col("timestamp"),
            col("request tokens"),
            col("response tokens"),
            col("contexttokens"),
            col("generatedtokens"),
        ) {
            (Some(t), Some(i), Some(o), _, _) => {
                let (r, s) = csv(text, TraceFormat::BurstGpt, (t, i, o), seconds_us)?;
                (TraceFormat::BurstGpt, r, s)
            }
            (Some(t), _, _, Some(i), Some(o)) => {
                let (r, s) = csv(text, TraceFormat::Azure, (t, i, o), datetime_us)?;
                (TraceFormat::Azure, r, s)
            }
            _ => return Err(TraceError::UnknownFormat),
        }
    };
    if rows.is_empty() {
        return Err(TraceError::Empty);
    }
    // Arrival order, times from the first arrival (a stable sort keeps equal times in
    // file order).
    crate::sort::sort_by_key(&mut rows, |r| r.t_us);
    let t0 = rows[0].t_us;
    for r in &mut rows {
        r.t_us -= t0;
    }
    Ok(Trace {
        format,
        rows,
        skipped,
        sha256,
    })
}

/// A file read for its rows (a trace or a dataset): its SHA-256 (lower-case hex, its
/// identity in the pins) and its text (invalid UTF-8 replaced); refused past `max` bytes.
pub fn digest_and_text(
    bytes: &[u8],
    max: usize,
) -> Result<(String, std::borrow::Cow<'_, str>), String> {
    if bytes.len() > max {
        return Err(format!("{} bytes (at most {max})", bytes.len()));
    }
    let sha256 = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    Ok((sha256, String::from_utf8_lossy(bytes)))
}

fn too_many(n: usize) -> Result<(), TraceError> {
    if n >= MAX_ROWS {
        return Err(TraceError::TooLarge(format!("more than {MAX_ROWS} rows")));
    }
    Ok(())
}

fn mooncake(text: &str) -> Result<(Vec<TraceRow>, u32), TraceError> {
    let mut rows = Vec::new();
    let mut skipped = 0u32;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        too_many(rows.len())?;
        let bad = |why: String| TraceError::BadRow {
            format: TraceFormat::Mooncake.label(),
            line: i + 1,
            why,
        };
        let r: MooncakeRow = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        let blocks_max = r.input_length.div_ceil(MOONCAKE_BLOCK_TOKENS) as usize;
        if r.hash_ids.len() > blocks_max {
            return Err(bad(format!(
                "{} hash_ids for {} input tokens (at most {blocks_max} blocks of {MOONCAKE_BLOCK_TOKENS})",
                r.hash_ids.len(),
                r.input_length
            )));
        }
        if r.input_length == 0 || r.output_length == 0 {
            skipped += 1;
            continue;
        }
        rows.push(TraceRow {
            t_us: r.timestamp.saturating_mul(1000),
            input: r.input_length,
            output: r.output_length,
            blocks: r.hash_ids,
        });
    }
    Ok((rows, skipped))
}

fn csv(
    text: &str,
    format: TraceFormat,
    (t, i, o): (usize, usize, usize),
    time: fn(&str) -> Option<u64>,
) -> Result<(Vec<TraceRow>, u32), TraceError> {
    let mut rows = Vec::new();
    let mut skipped = 0u32;
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        too_many(rows.len())?;
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let cell = |k: usize| cells.get(k).copied().unwrap_or("");
        let bad = |what: &str, v: &str| TraceError::BadRow {
            format: format.label(),
            line: n + 1,
            why: format!("{what} {v:?} does not read"),
        };
        let t_us = time(cell(t)).ok_or_else(|| bad("the time", cell(t)))?;
        let count = |k: usize| -> Result<u32, TraceError> {
            let v = cell(k);
            // Counts are integers, sometimes written as `12.0`.
            let int = v.strip_suffix(".0").unwrap_or(v);
            int.parse().map_err(|_| bad("the token count", v))
        };
        let (input, output) = (count(i)?, count(o)?);
        if input == 0 || output == 0 {
            skipped += 1;
            continue;
        }
        rows.push(TraceRow {
            t_us,
            input,
            output,
            blocks: Vec::new(),
        });
    }
    Ok((rows, skipped))
}

/// Seconds (`5`, `5.25`) as µs.
fn seconds_us(t: &str) -> Option<u64> {
    crate::decimal::parse_milli(t).map(|ms| ms.saturating_mul(1000))
}

/// `2023-11-16 18:15:46.6805900` (or ISO 8601's `2026-12-04T17:20:11.051Z`) as µs
/// since 1970 (UTC, the proleptic Gregorian calendar).
pub fn datetime_us(t: &str) -> Option<u64> {
    let t = t.strip_suffix('Z').unwrap_or(t);
    let (date, time) = t.split_once([' ', 'T'])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut h = hms.split(':').map(|p| p.parse::<u64>().ok());
    let (hh, mm, ss) = (h.next()??, h.next()??, h.next()??);
    if hh > 23 || mm > 59 || ss > 60 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = u64::try_from(era * 146_097 + doe - 719_468).ok()?;
    let micros: u64 = {
        let f: String = frac.chars().chain("000000".chars()).take(6).collect();
        f.parse().ok()?
    };
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000) + micros)
}

impl Trace {
    /// What the trace holds.
    pub fn facts(&self) -> TraceFacts {
        let mut seen = std::collections::BTreeSet::new();
        let (mut shared, mut total) = (0u64, 0u64);
        for r in &self.rows {
            total += u64::from(r.input);
            let mut prefix = true;
            for (k, b) in r.blocks.iter().enumerate() {
                let len = u64::from(
                    r.input
                        .saturating_sub(k as u32 * MOONCAKE_BLOCK_TOKENS)
                        .min(MOONCAKE_BLOCK_TOKENS),
                );
                prefix &= seen.contains(b);
                if prefix {
                    shared += len;
                }
            }
            seen.extend(r.blocks.iter().copied());
        }
        TraceFacts {
            rows: self.rows.len() as u32,
            span_us: self.rows.last().map_or(0, |r| r.t_us),
            input_max: self.rows.iter().map(|r| r.input).max().unwrap_or(0),
            output_max: self.rows.iter().map(|r| r.output).max().unwrap_or(0),
            shared_permille: (shared * 1000)
                .checked_div(total)
                .map_or(0, |v| u32::try_from(v).unwrap_or(1000)),
        }
    }
}

/// A built-in trace: a real slice whose file ships with the app (`traces/FILE` beside the
/// page) and the native command; its facts are known without reading it, so its pin is
/// written with no file at hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// Its name in the trace pin.
    pub name: &'static str,
    /// The file's name (the bundle's `traces/` folder, `tests/fixtures/traces/`).
    pub file: &'static str,
    /// The file's format.
    pub format: TraceFormat,
    /// SHA-256 of the file, hex.
    pub sha256: &'static str,
    /// What the file holds.
    pub facts: TraceFacts,
}

/// The built-in traces (a test checks each against its file; `tests/fixtures/traces/`
/// says where each was cut from, and its licence):
/// - `mooncake-conversation-60`: the first 60 requests (15 s) of Mooncake's conversation
///   trace (kvcache-ai/Mooncake, `FAST25-release/traces/conversation_trace.jsonl`).
pub const BUILTIN: &[Builtin] = &[Builtin {
    name: "mooncake-conversation-60",
    file: "mooncake_conversation_head60.jsonl",
    format: TraceFormat::Mooncake,
    sha256: "32130327c91bc3bc7faa9390ade9cc391337c94d50845713a9b31361f858cb7b",
    facts: TraceFacts {
        rows: 60,
        span_us: 15_000_000,
        input_max: 87_169,
        output_max: 929,
        shared_permille: 40,
    },
}];

/// A built-in trace by name.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTIN.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOONCAKE: &str =
        include_str!("../../../../tests/fixtures/traces/mooncake_conversation_head60.jsonl");
    const AZURE: &str = include_str!("../../../../tests/fixtures/traces/azure_conv_head40.csv");

    #[test]
    fn a_real_mooncake_slice_reads_with_its_blocks() {
        let t = parse(MOONCAKE.as_bytes()).expect("reads");
        assert_eq!(
            (t.format, t.rows.len(), t.skipped),
            (TraceFormat::Mooncake, 60, 0)
        );
        assert_eq!(
            t.rows[0],
            TraceRow {
                t_us: 0,
                input: 6758,
                output: 500,
                blocks: (0..14).collect(),
            }
        );
        assert_eq!(t.rows[10].t_us, 3_000_000);
        let f = t.facts();
        assert_eq!((f.rows, f.span_us, f.input_max), (60, 15_000_000, 87_169));
        // Every request shares block 0 (a common system prompt) with the first one.
        assert!(t.rows.iter().all(|r| r.blocks[0] == 0));
        assert!(f.shared_permille > 0 && f.shared_permille < 200, "{f:?}");
        assert_eq!(t.sha256.len(), 64);
        let b = builtin("mooncake-conversation-60").expect("built in");
        assert_eq!(
            (b.format, b.sha256, b.facts),
            (t.format, t.sha256.as_str(), f)
        );
    }

    #[test]
    fn a_real_azure_slice_reads_with_times_from_its_dates() {
        let t = parse(AZURE.as_bytes()).expect("reads");
        assert_eq!((t.format, t.rows.len()), (TraceFormat::Azure, 40));
        assert_eq!((t.rows[0].input, t.rows[0].output), (374, 44));
        // 18:15:46.6805900 → 18:15:50.9951690.
        assert_eq!(t.rows[1].t_us, 4_314_579);
        // 18:16:10.8268860, 24.146 s after the first.
        assert_eq!(t.facts().span_us, 24_146_296);
        assert_eq!(datetime_us("1970-01-02 00:00:00.5"), Some(86_400_500_000));
        assert_eq!(
            datetime_us("2024-03-01 00:00:00"),
            Some(1_709_251_200_000_000)
        );
    }

    /// BurstGPT's data files are in Git LFS (not readable here): these rows follow the
    /// published column layout, with a failed request (0 response tokens) as its files
    /// have them.
    #[test]
    fn burstgpt_rows_read_and_failed_requests_are_skipped() {
        let text = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,230,1317,Conversation log\n46.5,GPT-4,300,0,300,API log\n";
        let t = parse(text.as_bytes()).expect("reads");
        assert_eq!(
            (t.format, t.rows.len(), t.skipped),
            (TraceFormat::BurstGpt, 2, 1)
        );
        assert_eq!(t.rows[1].t_us, 40_000_000);
    }

    #[test]
    fn what_is_not_a_trace_is_refused_with_why() {
        assert_eq!(parse(b"a,b,c\n1,2,3\n"), Err(TraceError::UnknownFormat));
        assert!(matches!(
            parse(b"{\"timestamp\": 0, \"input_length\": 10}\n"),
            Err(TraceError::BadRow { line: 1, .. })
        ));
        // More blocks than the prompt has.
        assert!(matches!(
            parse(b"{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"),
            Err(TraceError::BadRow { .. })
        ));
        assert_eq!(
            parse(b"TIMESTAMP,ContextTokens,GeneratedTokens\n"),
            Err(TraceError::Empty)
        );
        assert!(matches!(
            parse(b"TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,2\n"),
            Err(TraceError::BadRow { line: 2, .. })
        ));
    }
}
