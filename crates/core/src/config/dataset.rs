//! Length distributions from data: a dataset file whose rows give (prompt, output)
//! lengths that a run samples, joint per row (a long question's answer is not drawn apart
//! from it). Two formats:
//! - **ShareGPT JSON** (what vLLM's `bench serve --dataset-name sharegpt` reads): an array
//!   of `{"conversations": [{"from", "value"}, …]}`; a row is a conversation's first two
//!   messages, the prompt and its answer (vLLM's rule; conversations with fewer are left
//!   out). Its lengths are texts, counted in tokens by the endpoint's own `/tokenize`
//!   before the run ([`crate::lifecycle::dataset_lengths`]), never estimated.
//! - **A CSV of lengths**: a header naming a prompt-length column (`input_tokens`,
//!   `prompt_tokens`, `input_length`, `prompt_len`, …) and an output-length column
//!   (`output_tokens`, `completion_tokens`, `output_length`, `output_len`, …), in tokens.
//!
//! A run takes the rows in the file's own fixed order (a permutation seeded by the file's
//! SHA-256, so two runs of one file send the same lengths in the same order), the first
//! [`MAX_SAMPLED`] of them at most, cycling when it needs more. The text sent is synthetic
//! at the sampled lengths. The file's SHA-256, name, format and row count are the pin.

use serde::{Deserialize, Serialize};

/// Bytes a dataset file may have (ShareGPT V3's unfiltered file is 642 MB: take a slice).
pub const MAX_BYTES: usize = 256 << 20;

/// Rows a dataset may hold.
pub const MAX_ROWS: usize = 1_000_000;

/// Distinct rows a run uses at most (a ShareGPT row costs two `/tokenize` calls).
pub const MAX_SAMPLED: usize = 1000;

/// A dataset file's format. Read from its name ([`DatasetFormat::wire`]) through a string:
/// a derived enum reader costs the card page a kilobyte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum DatasetFormat {
    /// ShareGPT-shaped JSON: conversations of texts.
    #[serde(rename = "sharegpt")]
    ShareGpt,
    /// A CSV of token lengths.
    LengthsCsv,
}

impl DatasetFormat {
    /// The format's name.
    pub fn label(self) -> &'static str {
        match self {
            DatasetFormat::ShareGpt => "ShareGPT JSON",
            DatasetFormat::LengthsCsv => "CSV of lengths",
        }
    }

    /// The format as the dataset pin's text names it (`format=`).
    pub fn wire(self) -> &'static str {
        match self {
            DatasetFormat::ShareGpt => "sharegpt",
            DatasetFormat::LengthsCsv => "lengths_csv",
        }
    }

    /// The format `format=` names.
    pub fn from_wire(t: &str) -> Option<Self> {
        match t {
            "sharegpt" => Some(DatasetFormat::ShareGpt),
            "lengths_csv" | "csv" => Some(DatasetFormat::LengthsCsv),
            _ => None,
        }
    }
}

impl TryFrom<String> for DatasetFormat {
    type Error = String;

    fn try_from(t: String) -> Result<Self, String> {
        [DatasetFormat::ShareGpt, DatasetFormat::LengthsCsv]
            .into_iter()
            .find(|f| f.wire() == t)
            .ok_or_else(|| {
                format!("unknown dataset format `{t}`, expected sharegpt or lengths_csv")
            })
    }
}

/// One row: its lengths in tokens (a CSV) or its texts (ShareGPT, counted later).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DatasetRow {
    /// Lengths in tokens.
    Lengths {
        /// Prompt tokens.
        input: u32,
        /// Output tokens.
        output: u32,
    },
    /// A prompt and the answer it got.
    Texts {
        /// The prompt (the conversation's first message).
        prompt: String,
        /// The answer (its second).
        completion: String,
    },
}

/// A parsed dataset file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dataset {
    /// Its format.
    pub format: DatasetFormat,
    /// The rows, in file order.
    pub rows: Vec<DatasetRow>,
    /// Entries left out (conversations of fewer than two messages, zero lengths).
    pub skipped: u32,
    /// SHA-256 of the file's bytes, lower-case hex.
    pub sha256: String,
}

/// The lengths a run samples, in the order it sends them (cycling): what the host hands
/// the run ([`crate::session::RunSession::set_dataset`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetLengths {
    /// SHA-256 of the dataset file they come from.
    pub sha256: String,
    /// (prompt, output) tokens per row used.
    pub rows: Vec<(u32, u32)>,
    /// The rows' own prompts, in the same order, when the run sends them
    /// ([`crate::pins::LengthDist::DatasetText`]); empty when its text is synthetic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub texts: Vec<String>,
}

/// Why a dataset cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DatasetError {
    /// Neither format.
    #[error("not a dataset pinbench reads: ShareGPT JSON (an array of {{\"conversations\": [{{\"from\", \"value\"}}, …]}}) or a CSV of lengths (a header naming input_tokens and output_tokens columns)")]
    UnknownFormat,
    /// A ShareGPT file that is not its shape.
    #[error("ShareGPT JSON: {0}")]
    BadJson(String),
    /// A CSV row that does not read.
    #[error("CSV of lengths, line {line}: {why}")]
    BadRow {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// Over a limit.
    #[error("the dataset is too large: {0}")]
    TooLarge(String),
    /// No usable row.
    #[error("the dataset has no usable row (a prompt and an answer)")]
    Empty,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    conversations: Vec<Message>,
}

/// Reads a dataset file (format found from its first character and header).
pub fn parse(bytes: &[u8]) -> Result<Dataset, DatasetError> {
    let (sha256, text) =
        crate::trace::digest_and_text(bytes, MAX_BYTES).map_err(DatasetError::TooLarge)?;
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let (format, rows, skipped) = if text.starts_with('[') {
        let convs: Vec<Conversation> =
            serde_json::from_str(text).map_err(|e| DatasetError::BadJson(e.to_string()))?;
        if convs.len() > MAX_ROWS {
            return Err(DatasetError::TooLarge(format!("more than {MAX_ROWS} rows")));
        }
        let total = convs.len();
        let rows: Vec<DatasetRow> = convs
            .into_iter()
            .filter_map(|c| {
                let mut m = c.conversations.into_iter();
                let (p, a) = (m.next()?, m.next()?);
                (!p.value.is_empty() && !a.value.is_empty()).then_some(DatasetRow::Texts {
                    prompt: p.value,
                    completion: a.value,
                })
            })
            .collect();
        let skipped = u32::try_from(total - rows.len()).unwrap_or(u32::MAX);
        (DatasetFormat::ShareGpt, rows, skipped)
    } else {
        let (rows, skipped) = lengths_csv(text)?;
        (DatasetFormat::LengthsCsv, rows, skipped)
    };
    if rows.is_empty() {
        return Err(DatasetError::Empty);
    }
    Ok(Dataset {
        format,
        rows,
        skipped,
        sha256,
    })
}

/// Header names of the prompt-length column, and of the output-length column.
const INPUT_COLUMNS: &[&str] = &[
    "input_tokens",
    "prompt_tokens",
    "input_length",
    "input_len",
    "prompt_length",
    "prompt_len",
    "input",
    "prompt",
];
const OUTPUT_COLUMNS: &[&str] = &[
    "output_tokens",
    "completion_tokens",
    "output_length",
    "output_len",
    "completion_length",
    "completion_len",
    "output",
    "completion",
];

fn lengths_csv(text: &str) -> Result<(Vec<DatasetRow>, u32), DatasetError> {
    let mut lines = text.lines().enumerate();
    let header: Vec<String> = lines
        .next()
        .map(|(_, h)| {
            h.split(',')
                .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    let col = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| header.iter().position(|h| h == n))
    };
    let (Some(i), Some(o)) = (col(INPUT_COLUMNS), col(OUTPUT_COLUMNS)) else {
        return Err(DatasetError::UnknownFormat);
    };
    let mut rows = Vec::new();
    let mut skipped = 0u32;
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        if rows.len() >= MAX_ROWS {
            return Err(DatasetError::TooLarge(format!("more than {MAX_ROWS} rows")));
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let count = |k: usize| -> Result<u32, DatasetError> {
            let v = cells.get(k).copied().unwrap_or("").trim_matches('"');
            let int = v.strip_suffix(".0").unwrap_or(v);
            int.parse().map_err(|_| DatasetError::BadRow {
                line: n + 1,
                why: format!("the token count {v:?} does not read"),
            })
        };
        let (input, output) = (count(i)?, count(o)?);
        if input == 0 || output == 0 {
            skipped += 1;
            continue;
        }
        rows.push(DatasetRow::Lengths { input, output });
    }
    Ok((rows, skipped))
}

impl Dataset {
    /// Rows a run uses: the file's, at most [`MAX_SAMPLED`].
    pub fn sampled(&self) -> usize {
        self.rows.len().min(MAX_SAMPLED)
    }

    /// The rows a run uses, in its order: a permutation of the file's rows seeded by its
    /// SHA-256 (Fisher–Yates over a SplitMix64 stream), cut to [`Self::sampled`].
    pub fn order(&self) -> Vec<usize> {
        let mut seed = [0u8; 8];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = u8::from_str_radix(self.sha256.get(2 * i..2 * i + 2).unwrap_or("00"), 16)
                .unwrap_or(0);
        }
        let mut state = u64::from_le_bytes(seed);
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut idx: Vec<usize> = (0..self.rows.len()).collect();
        for i in (1..idx.len()).rev() {
            let j = usize::try_from(next() % (i as u64 + 1)).unwrap_or(0);
            idx.swap(i, j);
        }
        idx.truncate(self.sampled());
        idx
    }

    /// The lengths of a CSV's rows in the run's order; `None` for a file of texts (they
    /// are counted against the endpoint: [`crate::lifecycle::dataset_lengths`]).
    pub fn known_lengths(&self) -> Option<DatasetLengths> {
        let rows = self
            .order()
            .into_iter()
            .map(|i| match self.rows.get(i)? {
                DatasetRow::Lengths { input, output } => Some((*input, *output)),
                DatasetRow::Texts { .. } => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(DatasetLengths {
            sha256: self.sha256.clone(),
            rows,
            texts: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAREGPT: &str =
        include_str!("../../../../tests/fixtures/datasets/fastchat_dummy_conversation_head40.json");

    #[test]
    fn a_sharegpt_file_gives_each_conversations_first_prompt_and_answer() {
        let d = parse(SHAREGPT.as_bytes()).expect("reads");
        assert_eq!(d.format, DatasetFormat::ShareGpt);
        assert_eq!(d.rows.len(), 40);
        assert_eq!(d.skipped, 0);
        assert_eq!(
            d.rows[0],
            DatasetRow::Texts {
                prompt: "Who are you?".into(),
                completion: "I am Vicuna, a language model trained by researchers from Large Model Systems Organization (LMSYS).".into(),
            }
        );
        assert_eq!(d.known_lengths(), None);
        assert_eq!(d.sha256.len(), 64);
        // Its name in a report and in the pin's text is one.
        for f in [DatasetFormat::ShareGpt, DatasetFormat::LengthsCsv] {
            let json = serde_json::to_string(&f).expect("json");
            assert_eq!(json, format!("\"{}\"", f.wire()));
            assert_eq!(crate::json::from_str::<DatasetFormat>(&json), Ok(f));
        }
        assert!(crate::json::from_str::<DatasetFormat>("\"share_gpt\"").is_err());
    }

    #[test]
    fn conversations_without_an_answer_are_left_out_and_counted() {
        let d = parse(
            br#"[{"conversations":[{"from":"human","value":"hi"}]},
                 {"conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"a"}]},
                 {"id":"x"}]"#,
        )
        .expect("reads");
        assert_eq!((d.rows.len(), d.skipped), (1, 2));
        assert_eq!(parse(b"[]"), Err(DatasetError::Empty));
        assert!(matches!(
            parse(br#"[{"conversations":7}]"#),
            Err(DatasetError::BadJson(_))
        ));
    }

    #[test]
    fn a_csv_of_lengths_reads_its_named_columns() {
        let d =
            parse(b"id,prompt_len,output_len\n1,100,20\n2,0,5\n3,2048.0,\"7\"\n").expect("reads");
        assert_eq!(d.format, DatasetFormat::LengthsCsv);
        assert_eq!(
            d.rows,
            vec![
                DatasetRow::Lengths {
                    input: 100,
                    output: 20
                },
                DatasetRow::Lengths {
                    input: 2048,
                    output: 7
                }
            ]
        );
        assert_eq!(d.skipped, 1);
        assert_eq!(parse(b"a,b\n1,2\n"), Err(DatasetError::UnknownFormat));
        assert_eq!(
            parse(b"input_tokens,output_tokens\n1,x\n"),
            Err(DatasetError::BadRow {
                line: 2,
                why: "the token count \"x\" does not read".into()
            })
        );
    }

    #[test]
    fn the_order_is_a_fixed_permutation_of_the_files_rows() {
        let csv: String = std::iter::once("input_tokens,output_tokens\n".to_owned())
            .chain((1..=50).map(|i| format!("{i},{}\n", 100 + i)))
            .collect();
        let d = parse(csv.as_bytes()).expect("reads");
        let order = d.order();
        assert_eq!(order, d.order(), "the same file gives the same order");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>(), "every row once");
        assert_ne!(order, sorted, "shuffled");
        let l = d.known_lengths().expect("a CSV knows its lengths");
        assert_eq!(l.rows.len(), 50);
        assert!(l.rows.iter().all(|&(i, o)| o == 100 + i));
        // Another file (one more row) is another order.
        let d2 = parse(format!("{csv}51,151\n").as_bytes()).expect("reads");
        assert_ne!(d2.order()[..50], order[..]);
    }

    #[test]
    fn at_most_max_sampled_rows_are_used() {
        let csv: String = std::iter::once("input_tokens,output_tokens\n".to_owned())
            .chain((1..=1500).map(|i| format!("{i},1\n")))
            .collect();
        let d = parse(csv.as_bytes()).expect("reads");
        assert_eq!(d.order().len(), MAX_SAMPLED);
    }
}
