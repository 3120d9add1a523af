//! Synthetic prompts of a requested length in tokens.
//!
//! A prompt is words from a fixed list, each with a leading space (one token each on
//! common tokenizers, and exactly one on the reference server's). The number of words for
//! N tokens comes from a measured tokens-per-word ratio: from the server's `/tokenize`
//! (exact), from `usage.prompt_tokens` during warm-up (calibrated), or 1.0 (approximate —
//! the report flags it). A nonce prefix, when pinned, is one word built from random bits
//! whose token cost is measured the same way and subtracted.

const WORDS: [&str; 32] = [
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with",
    " be", " by", " on", " not", " he", " this", " are", " or", " his", " from", " at", " which",
    " but", " have", " an", " had", " they", " you", " were", " their",
];

/// Measured tokens per word, ×1000.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Calibration {
    /// Tokens per prompt word × 1000.
    pub tokens_per_word_milli: u64,
    /// Tokens a nonce prefix costs.
    pub nonce_tokens: u32,
}

impl Default for Calibration {
    fn default() -> Self {
        Self {
            tokens_per_word_milli: 1000,
            nonce_tokens: 1,
        }
    }
}

impl Calibration {
    /// From a measured sample: `words` words gave `tokens` tokens.
    pub fn from_sample(words: u32, tokens: u64, nonce_tokens: u32) -> Self {
        Self {
            tokens_per_word_milli: (tokens * 1000 / u64::from(words.max(1))).max(1),
            nonce_tokens,
        }
    }
}

/// The calibration sample: `n` words.
pub fn sample_text(n: u32) -> String {
    words(n, 0)
}

fn words(n: u32, offset: u32) -> String {
    (0..n)
        .map(|i| WORDS[((i + offset) as usize) % WORDS.len()])
        .collect()
}

/// The nonce word for a request (unique per index and seed).
pub fn nonce(index: u32, seed: u64) -> String {
    format!(
        " n{:x}",
        seed.rotate_left(13) ^ (u64::from(index) * 0x9E37_79B9)
    )
}

/// Words in the calibration sample.
pub const CALIBRATION_WORDS: u32 = 256;

/// The calibration's texts: the word sample and a nonce word, each counted with the
/// server's `/tokenize` by every host before a `server_tokenizer` run.
pub fn calibration_texts() -> (String, String) {
    (sample_text(CALIBRATION_WORDS), nonce(12345, 0xfeed_beef))
}

/// The `/tokenize` request bodies to try, in order: the vLLM / reference server form,
/// then llama.cpp's (without special tokens).
pub fn tokenize_bodies(model: &str, text: &str) -> [String; 2] {
    [
        serde_json::json!({"model": model, "prompt": text}).to_string(),
        serde_json::json!({"content": text, "add_special": false}).to_string(),
    ]
}

/// The token count in a `/tokenize` answer (`count`, else the length of `tokens`);
/// `None` when it has none — a server that ignored this form answers with no tokens.
pub fn tokenize_count(answer: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(answer).ok()?;
    v.get("count")
        .and_then(|c| c.as_u64())
        .or_else(|| {
            v.get("tokens")
                .and_then(|t| t.as_array())
                .map(|a| a.len() as u64)
        })
        .filter(|&n| n > 0)
}

/// A prompt of about `tokens` tokens (exactly, when the calibration is exact), with the
/// nonce included when given.
pub fn build(tokens: u32, cal: Calibration, nonce: Option<&str>, variant: u32) -> String {
    let body_tokens = match nonce {
        Some(_) => tokens.saturating_sub(cal.nonce_tokens),
        None => tokens,
    };
    let n_words = ((u64::from(body_tokens) * 1000 + cal.tokens_per_word_milli / 2)
        / cal.tokens_per_word_milli.max(1)) as u32;
    let mut out = String::new();
    if let Some(n) = nonce {
        out.push_str(n);
    }
    out.push_str(&words(n_words.max(1), variant));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_calibration_gives_the_word_count() {
        let cal = Calibration::default();
        let p = build(128, cal, None, 0);
        assert_eq!(p.split(' ').filter(|w| !w.is_empty()).count(), 128);
        let with_nonce = build(128, cal, Some(&nonce(7, 42)), 3);
        assert_eq!(with_nonce.split(' ').filter(|w| !w.is_empty()).count(), 128);
        assert!(with_nonce.starts_with(" n"));
    }

    #[test]
    fn ratio_scales_the_word_count() {
        let cal = Calibration::from_sample(100, 150, 3);
        assert_eq!(cal.tokens_per_word_milli, 1500);
        let p = build(300, cal, Some(" nabc"), 0);
        // (300 - 3) tokens / 1.5 per word = 198 words, plus the nonce word.
        assert_eq!(p.split(' ').filter(|w| !w.is_empty()).count(), 199);
    }

    #[test]
    fn tokenize_answers_of_both_forms_are_counted() {
        assert_eq!(tokenize_count(r#"{"count":7,"tokens":[1,2]}"#), Some(7));
        assert_eq!(tokenize_count(r#"{"tokens":[1,2,3]}"#), Some(3));
        assert_eq!(tokenize_count(r#"{"tokens":[]}"#), None);
        assert_eq!(tokenize_count("not json"), None);
        let [a, b] = tokenize_bodies("m", " the");
        assert!(a.contains("\"prompt\"") && b.contains("\"add_special\":false"));
    }

    #[test]
    fn nonces_differ_by_index() {
        assert_ne!(nonce(1, 9), nonce(2, 9));
        assert_ne!(nonce(1, 9), nonce(1, 10));
    }
}
