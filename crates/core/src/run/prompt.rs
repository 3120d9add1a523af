//! Synthetic prompts of a requested length in tokens, and their calibration.
//!
//! A prompt is words from a fixed list, each with a leading space (one token each on
//! common tokenizers, and exactly one on the reference server's). A nonce prefix, when
//! pinned, is [`NONCE_WORDS`] words of the same list chosen by random bits, so it costs
//! what any words cost and needs no measurement of its own.
//!
//! The number of words for N tokens comes from a [`Calibration`]: a line fitted through
//! the server's counts of three prompts (`tokens = intercept + slope × words`; the
//! intercept holds the BOS token and, for chat, the template), measured in the form the
//! run sends (`prompt` for completions, `messages` for chat). A `server_tokenizer` run then
//! checks each target length by counting the final prompt (nonce included) and adjusting
//! by words until the count is exact; a target that cannot be hit fails the calibration,
//! so an "exact" run never runs inexact prompts. [`Calibrator`] is that procedure as a
//! state machine: hosts only send the `/tokenize` bodies it asks for.

use serde::{Deserialize, Serialize};

use crate::dialect::Dialect;
use crate::pins::LengthDist;

const WORDS: [&str; 32] = [
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with",
    " be", " by", " on", " not", " he", " this", " are", " or", " his", " from", " at", " which",
    " but", " have", " an", " had", " they", " you", " were", " their",
];

pub use crate::pins::NONCE_WORDS;

/// Words per calibration sample: three points of the fitted line.
pub const CALIBRATION_WORDS: [u32; 3] = [16, 128, 1024];

/// Tries at adjusting one target's word count before giving up.
const MAX_TRIES: u32 = 6;

/// Prompt tokens as a function of words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Tokens of a prompt of zero words (BOS, chat template), × 1000.
    pub intercept_milli: i64,
    /// Tokens per word × 1000.
    pub tokens_per_word_milli: u64,
    /// Target lengths whose word count was checked with the server's tokenizer:
    /// `(tokens, words)`.
    #[serde(default)]
    pub verified: Vec<(u32, u32)>,
}

impl Default for Calibration {
    /// One token per word and nothing else: the approximate guess.
    fn default() -> Self {
        Self {
            intercept_milli: 0,
            tokens_per_word_milli: 1000,
            verified: Vec::new(),
        }
    }
}

impl Calibration {
    /// The line through `(words, tokens)` samples (first and last), `None` when the
    /// counts do not grow with the words.
    pub fn fit(samples: &[(u32, u64)]) -> Option<Self> {
        let (&(w1, c1), &(w2, c2)) = (samples.first()?, samples.last()?);
        if w2 <= w1 || c2 <= c1 {
            return None;
        }
        let (dw, dc) = (u64::from(w2 - w1), c2 - c1);
        let tpw = (dc * 1000 + dw / 2) / dw;
        let intercept = i64::try_from(c1 * 1000).ok()? - i64::from(w1) * i64::try_from(tpw).ok()?;
        Some(Self {
            intercept_milli: intercept,
            tokens_per_word_milli: tpw.max(1),
            verified: Vec::new(),
        })
    }

    /// Words for a prompt of `tokens` tokens: a verified count, else the fitted line
    /// (at least one word).
    pub fn words_for(&self, tokens: u32) -> u32 {
        if let Some(&(_, w)) = self.verified.iter().find(|(t, _)| *t == tokens) {
            return w;
        }
        let body = i64::from(tokens) * 1000 - self.intercept_milli;
        let tpw = i64::try_from(self.tokens_per_word_milli.max(1)).unwrap_or(i64::MAX);
        let words = (body + tpw / 2).div_euclid(tpw);
        u32::try_from(words.max(1)).unwrap_or(u32::MAX)
    }
}

fn words(n: u32, offset: u32) -> String {
    (0..n)
        .map(|i| WORDS[((i + offset) as usize) % WORDS.len()])
        .collect()
}

/// splitmix64 of a seed and an index: neighbouring indices give unrelated bits.
fn mix(index: u32, seed: u64) -> u64 {
    let mut z = seed ^ u64::from(index).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` (at most [`NONCE_WORDS`]) words picked by 5 bits of `z` each.
fn random_words(z: u64, n: u32) -> String {
    (0..n.min(NONCE_WORDS))
        .map(|i| WORDS[((z >> (5 * i)) & 31) as usize])
        .collect()
}

/// The nonce prefix for a request: [`NONCE_WORDS`] words picked by bits of the seed and
/// index (unique per both).
pub fn nonce(index: u32, seed: u64) -> String {
    random_words(mix(index, seed), NONCE_WORDS)
}

/// A prompt of `tokens` tokens (exactly, when the calibration verified that length), with
/// the nonce as its first words when given.
pub fn build(tokens: u32, cal: &Calibration, nonce: Option<&str>, variant: u32) -> String {
    let total = cal.words_for(tokens);
    let mut out = String::new();
    let body = match nonce {
        Some(n) => {
            out.push_str(n);
            total.saturating_sub(NONCE_WORDS).max(1)
        }
        None => total,
    };
    out.push_str(&words(body, variant));
    out
}

/// The shared prefix of group `group` in a run whose prefixes are drawn from `seed`:
/// `words_n` words, the first [`NONCE_WORDS`] of them the group's own random words (so two
/// groups, or two runs, differ within their first block and share no cached block), the
/// rest common words.
pub fn shared_prefix(words_n: u32, group: u32, seed: u64) -> String {
    let mut out = random_words(mix(group, !seed), words_n.min(NONCE_WORDS));
    out.push_str(&words(words_n.saturating_sub(NONCE_WORDS), 0));
    out
}

/// A prompt of `tokens` tokens that begins with `prefix` (`prefix_words` words, from
/// [`shared_prefix`]), then the nonce when given (unique per request: what a prefix cache
/// can reuse is then the prefix alone), then words offset by `variant` (at least one).
pub fn build_after(
    prefix: &str,
    prefix_words: u32,
    tokens: u32,
    cal: &Calibration,
    nonce: Option<&str>,
    variant: u32,
) -> String {
    let total = cal.words_for(tokens);
    let nonce_words = if nonce.is_some() { NONCE_WORDS } else { 0 };
    let body = total.saturating_sub(prefix_words + nonce_words).max(1);
    let mut out = String::with_capacity(prefix.len() + 8 * body as usize);
    out.push_str(prefix);
    if let Some(n) = nonce {
        out.push_str(n);
    }
    out.push_str(&words(body, variant));
    out
}

/// The text of a trace's block `id` in a run drawn from `seed`: [`NONCE_WORDS`] words of
/// the block's own, then common words; `words_n` words in all (a shorter block is a
/// prefix of a longer one with the same id).
fn block_text(id: u64, seed: u64, words_n: u32) -> String {
    let z = mix(
        (id ^ (id >> 32)) as u32,
        seed ^ id.rotate_left(17) ^ 0x7472_6163_6521,
    );
    let mut out = random_words(z, words_n.min(NONCE_WORDS));
    out.push_str(&words(
        words_n.saturating_sub(NONCE_WORDS),
        (id % 32) as u32,
    ));
    out
}

/// A replayed trace row's prompt of `tokens` tokens: its blocks' texts in order (Mooncake
/// blocks of 512 tokens, the first shortened by the calibration's intercept so block
/// boundaries fall where the trace put them), equal blocks equal text, so what the
/// trace's rows share the server's cache can reuse. A row without block ids (BurstGPT,
/// Azure) gets a unique text of its own (`variant`).
pub fn trace_prompt(
    blocks: &[u64],
    tokens: u32,
    cal: &Calibration,
    seed: u64,
    variant: u32,
) -> String {
    const BLOCK: u32 = crate::trace::MOONCAKE_BLOCK_TOKENS;
    let total = cal.words_for(tokens);
    if blocks.is_empty() {
        return build(tokens, cal, Some(&nonce(variant, seed)), variant);
    }
    let tpw = cal.tokens_per_word_milli.max(1);
    let head = u32::try_from(cal.intercept_milli.max(0) / 1000).unwrap_or(0);
    let mut out = String::new();
    let mut used = 0u32;
    for (k, id) in blocks.iter().enumerate() {
        let start = (k as u32).saturating_mul(BLOCK);
        let block_tokens = tokens.saturating_sub(start).min(BLOCK);
        let content = if k == 0 {
            block_tokens.saturating_sub(head)
        } else {
            block_tokens
        };
        let mut n = u32::try_from((u64::from(content) * 1000 + tpw / 2) / tpw).unwrap_or(0);
        if k + 1 == blocks.len() {
            // The last block makes the prompt's length exact.
            n = total.saturating_sub(used).max(1);
        }
        out.push_str(&block_text(*id, seed, n));
        used += n;
    }
    out
}

/// A later turn's new user message of about `tokens` tokens (the calibration's tokens
/// per word; no BOS or template: those are counted once, in the conversation's start),
/// words offset by `variant`.
pub fn message(tokens: u32, cal: &Calibration, variant: u32) -> String {
    let tpw = cal.tokens_per_word_milli.max(1);
    let n = (u64::from(tokens) * 1000 + tpw / 2) / tpw;
    words(u32::try_from(n.max(1)).unwrap_or(u32::MAX), variant)
}

/// The `/tokenize` request bodies that count `text` as the run will send it, in order:
/// chat — vLLM's and the reference server's `messages` form (template included);
/// completions — vLLM's `prompt` form, then llama.cpp's `content` with `add_special`
/// (BOS included, as its usage counts it).
pub fn tokenize_bodies(dialect: Dialect, model: &str, text: &str) -> Vec<String> {
    match dialect {
        // The vendors' APIs count the prompt as chat messages too.
        Dialect::Chat | Dialect::Responses | Dialect::Messages | Dialect::Gemini => {
            vec![serde_json::json!({
                "model": model,
                "messages": [{"role": "user", "content": text}],
            })
            .to_string()]
        }
        Dialect::Completions => vec![
            serde_json::json!({"model": model, "prompt": text}).to_string(),
            serde_json::json!({"content": text, "add_special": true}).to_string(),
        ],
    }
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

/// The lengths a calibration checks: the one length, or both ends of a distribution.
pub fn targets(d: &LengthDist) -> Vec<u32> {
    match *d {
        LengthDist::Fixed { tokens } => vec![tokens],
        // A replay's lengths are every row's: the fitted line sets them (see
        // [`Calibrator`]), checked by the server's usage.
        // So are a dataset's.
        LengthDist::Trace {} | LengthDist::Dataset {} | LengthDist::DatasetText {} => Vec::new(),
        LengthDist::Uniform { min, max } | LengthDist::NormalClipped { min, max, .. } => {
            if min == max {
                vec![min]
            } else {
                vec![min, max]
            }
        }
    }
}

/// Why prompts cannot be made exact.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalibrationError {
    /// No form of `/tokenize` answered with a count.
    #[error("The server has no /tokenize endpoint for this API ({dialect}): pin prompt exactness as usage_calibrated or approximate.")]
    NoTokenizer {
        /// The API the run speaks.
        dialect: &'static str,
    },
    /// The counts did not grow with the prompt.
    #[error("The server's /tokenize counts did not grow with the prompt ({samples:?}): pin prompt exactness as usage_calibrated or approximate.")]
    NoFit {
        /// `(words, tokens)` measured.
        samples: Vec<(u32, u64)>,
    },
    /// A target length could not be hit exactly.
    #[error("Prompts of exactly {target} tokens cannot be built for this tokenizer (closest: {got}): pin prompt exactness as usage_calibrated or approximate, or another length.")]
    NotExact {
        /// Requested tokens.
        target: u32,
        /// The closest count reached.
        got: u64,
    },
}

/// What the calibrator needs next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CalStep {
    /// Count this prompt: try the bodies in order (`(form, body)`), and report the first
    /// that gave a count with [`Calibrator::answer`].
    Tokenize(Vec<(usize, String)>),
    /// Finished.
    Done(Result<Calibration, CalibrationError>),
}

/// The calibration procedure: three samples for the fit, then each target length counted
/// and adjusted until exact.
#[derive(Clone, Debug)]
pub struct Calibrator {
    dialect: Dialect,
    model: String,
    targets: Vec<u32>,
    /// The `/tokenize` form that answered (index into [`tokenize_bodies`]).
    form: Option<usize>,
    samples: Vec<(u32, u64)>,
    cal: Option<Calibration>,
    /// Target being checked: (index into targets, words, tries, closest count).
    checking: (usize, u32, u32, u64),
    result: Option<Result<Calibration, CalibrationError>>,
}

impl Calibrator {
    /// A calibrator for prompts of the run's API, model and lengths.
    pub fn new(dialect: Dialect, model: &str, prompt_len: &LengthDist) -> Self {
        Self {
            dialect,
            model: model.into(),
            targets: targets(prompt_len),
            form: None,
            samples: Vec::new(),
            cal: None,
            checking: (0, 0, 0, 0),
            result: None,
        }
    }

    fn text(&self) -> String {
        match &self.cal {
            None => words(CALIBRATION_WORDS[self.samples.len()], 0),
            Some(cal) => {
                let (i, w, _, _) = self.checking;
                let c = Calibration {
                    verified: vec![(self.targets[i], w)],
                    ..cal.clone()
                };
                build(self.targets[i], &c, Some(&nonce(7, 0x5eed)), 0)
            }
        }
    }

    /// The next step.
    pub fn next(&self) -> CalStep {
        if let Some(r) = &self.result {
            return CalStep::Done(r.clone());
        }
        let bodies = tokenize_bodies(self.dialect, &self.model, &self.text());
        CalStep::Tokenize(
            bodies
                .into_iter()
                .enumerate()
                .filter(|(i, _)| self.form.is_none_or(|f| f == *i))
                .collect(),
        )
    }

    /// The count of the last asked prompt: `Some((form, count))` from the first body that
    /// answered, `None` when none did.
    pub fn answer(&mut self, answer: Option<(usize, u64)>) {
        if self.result.is_some() {
            return;
        }
        let Some((form, count)) = answer else {
            self.result = Some(Err(CalibrationError::NoTokenizer {
                dialect: match self.dialect {
                    Dialect::Chat | Dialect::Responses | Dialect::Messages | Dialect::Gemini => {
                        "chat messages"
                    }
                    Dialect::Completions => "completions",
                },
            }));
            return;
        };
        self.form = Some(form);
        let Some(cal) = &mut self.cal else {
            self.samples
                .push((CALIBRATION_WORDS[self.samples.len()], count));
            if self.samples.len() == CALIBRATION_WORDS.len() {
                match Calibration::fit(&self.samples) {
                    Some(c) if self.targets.is_empty() => self.result = Some(Ok(c)),
                    Some(c) => {
                        let w = c.words_for(self.targets[0]);
                        self.cal = Some(c);
                        self.checking = (0, w, 0, 0);
                    }
                    None => {
                        self.result = Some(Err(CalibrationError::NoFit {
                            samples: self.samples.clone(),
                        }))
                    }
                }
            }
            return;
        };
        let (i, w, tries, closest) = self.checking;
        let target = self.targets[i];
        let closest = if tries == 0
            || count.abs_diff(u64::from(target)) < closest.abs_diff(u64::from(target))
        {
            count
        } else {
            closest
        };
        if count == u64::from(target) {
            cal.verified.push((target, w));
            if i + 1 == self.targets.len() {
                self.result = Some(Ok(cal.clone()));
            } else {
                let next = cal.words_for(self.targets[i + 1]);
                self.checking = (i + 1, next, 0, 0);
            }
            return;
        }
        if tries + 1 >= MAX_TRIES {
            self.result = Some(Err(CalibrationError::NotExact {
                target,
                got: closest,
            }));
            return;
        }
        // Move by the missing tokens in words (at least one word).
        let diff = i64::from(target) - i64::try_from(count).unwrap_or(i64::MAX);
        let tpw = i64::try_from(cal.tokens_per_word_milli.max(1)).unwrap_or(1000);
        let step = (diff * 1000 / tpw).clamp(-i64::from(w) + 1, i64::from(u32::MAX));
        let step = if step == 0 { diff.signum() } else { step };
        let w = u32::try_from((i64::from(w) + step).max(1)).unwrap_or(u32::MAX);
        self.checking = (i, w, tries + 1, closest);
    }
}

/// Runs a [`Calibrator`] to its end over `count`, the host's `/tokenize` call: given a
/// request body, the server's count, or `None` when that body got no count. Each asked
/// prompt's bodies are tried in order; the first that counts is kept for the rest.
pub async fn calibrate_with<F, Fut>(
    mut c: Calibrator,
    mut count: F,
) -> Result<Calibration, CalibrationError>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Option<u64>>,
{
    loop {
        match c.next() {
            CalStep::Done(r) => return r,
            CalStep::Tokenize(bodies) => {
                let mut got = None;
                for (form, body) in bodies {
                    if let Some(n) = count(body).await {
                        got = Some((form, n));
                        break;
                    }
                }
                c.answer(got);
            }
        }
    }
}

/// The calibration of a pinned run against its server's `/tokenize`, over the host's
/// `post(url, body)`: the answer's status and text, or `None` when the request failed.
/// Only a 200 answer counts.
pub async fn calibrate_run<F, Fut>(
    cfg: &crate::pins::RunConfig,
    post: F,
) -> Result<Calibration, CalibrationError>
where
    F: Fn(String, String) -> Fut,
    Fut: std::future::Future<Output = Option<(u16, String)>>,
{
    let url = format!("{}/tokenize", cfg.endpoint.base_url);
    let c = Calibrator::new(
        cfg.endpoint.dialect,
        &cfg.model.id.value,
        &cfg.prompt_len.value,
    );
    let post = &post;
    calibrate_with(c, |body| {
        let answer = post(url.clone(), body);
        async move {
            match answer.await {
                Some((200, text)) => tokenize_count(&text),
                _ => None,
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_words(p: &str) -> usize {
        p.split(' ').filter(|w| !w.is_empty()).count()
    }

    #[test]
    fn one_token_per_word_gives_the_word_count() {
        let cal = Calibration::default();
        assert_eq!(count_words(&build(128, &cal, None, 0)), 128);
        let with_nonce = build(128, &cal, Some(&nonce(7, 42)), 3);
        assert_eq!(count_words(&with_nonce), 128);
        assert!(with_nonce.starts_with(&nonce(7, 42)));
    }

    #[test]
    fn the_fit_has_a_slope_and_an_intercept() {
        // vLLM's /tokenize adds a BOS token: 16 words → 17 tokens, 1024 → 1025.
        let cal = Calibration::fit(&[(16, 17), (128, 129), (1024, 1025)]).expect("fit");
        assert_eq!(
            (cal.intercept_milli, cal.tokens_per_word_milli),
            (1000, 1000)
        );
        // 4096 tokens: 4095 words + BOS (the ratio alone gave 4085 tokens).
        assert_eq!(cal.words_for(4096), 4095);
        assert_eq!(cal.words_for(8192), 8191);
        // Chat: a 13-token template and BOS.
        let chat = Calibration::fit(&[(16, 30), (128, 142), (1024, 1038)]).expect("fit");
        assert_eq!(chat.words_for(128), 114);
        // Two tokens per word, and a fit that does not grow.
        let two = Calibration::fit(&[(16, 33), (1024, 2049)]).expect("fit");
        assert_eq!(two.words_for(201), 100);
        assert_eq!(Calibration::fit(&[(16, 5), (1024, 5)]), None);
    }

    /// A server whose tokenizer counts BOS, a template, and one word of every 50 as two
    /// tokens (not linear): the calibrator still hits each target exactly.
    fn server_count(body: &str, template: u64) -> u64 {
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        let text = v["prompt"]
            .as_str()
            .or_else(|| v["messages"][0]["content"].as_str())
            .expect("text");
        let w = count_words(text) as u64;
        1 + template + w + w / 50
    }

    fn drive(
        dialect: Dialect,
        dist: LengthDist,
        template: u64,
    ) -> Result<Calibration, CalibrationError> {
        let mut c = Calibrator::new(dialect, "m", &dist);
        let mut asked = 0;
        loop {
            match c.next() {
                CalStep::Done(r) => return r,
                CalStep::Tokenize(bodies) => {
                    asked += 1;
                    assert!(asked < 40, "the calibrator ends");
                    let (form, body) = &bodies[0];
                    c.answer(Some((*form, server_count(body, template))));
                }
            }
        }
    }

    #[test]
    fn calibrator_hits_every_target_exactly() {
        for (dialect, template) in [(Dialect::Completions, 0), (Dialect::Chat, 13)] {
            for t in [128u32, 1024, 4096, 8192] {
                let cal = drive(dialect, LengthDist::Fixed { tokens: t }, template).expect("exact");
                let p = build(t, &cal, Some(&nonce(99, 1)), 5);
                let body = tokenize_bodies(dialect, "m", &p).remove(0);
                assert_eq!(
                    server_count(&body, template),
                    u64::from(t),
                    "{dialect:?} {t}"
                );
                // Without a nonce the same word count holds.
                let p = build(t, &cal, None, 2);
                let body = tokenize_bodies(dialect, "m", &p).remove(0);
                assert_eq!(server_count(&body, template), u64::from(t));
            }
        }
        let cal = drive(
            Dialect::Completions,
            LengthDist::Uniform { min: 100, max: 900 },
            0,
        )
        .expect("exact");
        assert_eq!(cal.verified.len(), 2);
    }

    #[test]
    fn unreachable_targets_and_missing_tokenizers_fail() {
        // Every word is 2 tokens plus BOS: odd totals cannot be reached.
        let mut c = Calibrator::new(
            Dialect::Completions,
            "m",
            &LengthDist::Fixed { tokens: 100 },
        );
        loop {
            match c.next() {
                CalStep::Done(r) => {
                    assert_eq!(
                        r,
                        Err(CalibrationError::NotExact {
                            target: 100,
                            got: 101
                        })
                    );
                    break;
                }
                CalStep::Tokenize(b) => {
                    let v: serde_json::Value = serde_json::from_str(&b[0].1).expect("json");
                    let w = count_words(v["prompt"].as_str().expect("prompt")) as u64;
                    c.answer(Some((0, 1 + 2 * w)));
                }
            }
        }
        let mut c = Calibrator::new(Dialect::Chat, "m", &LengthDist::Fixed { tokens: 100 });
        c.answer(None);
        assert!(matches!(
            c.next(),
            CalStep::Done(Err(CalibrationError::NoTokenizer { .. }))
        ));
    }

    #[test]
    fn the_form_that_answered_is_kept() {
        let mut c = Calibrator::new(Dialect::Completions, "m", &LengthDist::Fixed { tokens: 64 });
        match c.next() {
            CalStep::Tokenize(b) => assert_eq!(b.len(), 2),
            other => panic!("{other:?}"),
        }
        c.answer(Some((1, 17)));
        match c.next() {
            CalStep::Tokenize(b) => {
                assert_eq!(b.len(), 1);
                assert!(b[0].1.contains("add_special"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tokenize_answers_of_both_forms_are_counted() {
        assert_eq!(tokenize_count(r#"{"count":7,"tokens":[1,2]}"#), Some(7));
        assert_eq!(tokenize_count(r#"{"tokens":[1,2,3]}"#), Some(3));
        assert_eq!(tokenize_count(r#"{"tokens":[]}"#), None);
        assert_eq!(tokenize_count("not json"), None);
    }

    #[test]
    fn a_shared_prefix_is_the_same_within_a_group_and_nothing_after_it_is() {
        let cal = Calibration::default();
        let (a, b) = (shared_prefix(40, 0, 9), shared_prefix(40, 1, 9));
        assert_eq!(count_words(&a), 40);
        assert_eq!(a, shared_prefix(40, 0, 9), "one text per group and seed");
        assert_ne!(a, b);
        assert_ne!(a, shared_prefix(40, 0, 10), "each run draws its own");
        // Groups differ within their first 16 tokens (the first cache block).
        let first = |t: &str| t.split(' ').take(17).collect::<Vec<_>>().join(" ");
        assert_ne!(first(&a), first(&b));
        // Short prefixes are the group's own words only.
        assert_eq!(count_words(&shared_prefix(5, 0, 9)), 5);
        let p1 = build_after(&a, 40, 128, &cal, Some(&nonce(1, 3)), 1);
        let p2 = build_after(&a, 40, 128, &cal, Some(&nonce(2, 3)), 2);
        assert_eq!((count_words(&p1), count_words(&p2)), (128, 128));
        assert!(p1.starts_with(&a) && p2.starts_with(&a));
        assert_eq!(&p1[a.len()..], format!("{}{}", nonce(1, 3), words(76, 1)));
        // The word right after the prefix differs (the nonces' first words may not).
        let common = p1
            .bytes()
            .zip(p2.bytes())
            .take_while(|(x, y)| x == y)
            .count();
        assert!(common >= a.len() && common < a.len() + nonce(1, 3).len());
        // A prompt no longer than its prefix still has one word of its own.
        assert_eq!(count_words(&build_after(&a, 40, 40, &cal, None, 0)), 41);
    }

    #[test]
    fn a_trace_rows_blocks_are_shared_text_and_the_length_holds() {
        // BOS counted: 1 token before the words.
        let cal = Calibration::fit(&[(16, 17), (1024, 1025)]).expect("fit");
        let a = trace_prompt(&[0, 1, 2], 1300, &cal, 7, 0);
        let b = trace_prompt(&[0, 1, 9], 1100, &cal, 7, 1);
        assert_eq!((count_words(&a), count_words(&b)), (1299, 1099));
        // Blocks 0 and 1 (511 + 512 words after BOS) are the same text; block 2 is not.
        let wa: Vec<&str> = a.split_whitespace().collect();
        let wb: Vec<&str> = b.split_whitespace().collect();
        assert_eq!(wa[..1023], wb[..1023]);
        assert_ne!(wa[1023..1035], wb[1023..1035]);
        // Another run's seed: other texts.
        assert_ne!(
            trace_prompt(&[0], 100, &cal, 8, 0),
            trace_prompt(&[0], 100, &cal, 7, 0)
        );
        // No blocks: a unique text.
        assert_eq!(count_words(&trace_prompt(&[], 100, &cal, 7, 3)), 99);
    }

    #[test]
    fn nonces_differ_by_index_and_seed_and_are_words() {
        assert_ne!(nonce(1, 9), nonce(2, 9));
        assert_ne!(nonce(1, 9), nonce(1, 10));
        assert_eq!(count_words(&nonce(3, 4)), NONCE_WORDS as usize);
    }
}
