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
    fn nonces_differ_by_index() {
        assert_ne!(nonce(1, 9), nonce(2, 9));
        assert_ne!(nonce(1, 9), nonce(1, 10));
    }
}
