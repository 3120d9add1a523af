//! The simulated engine: one OS thread running time-stepped batches.
//!
//! Each step: admit waiting requests that fit (`max_num_seqs`, and the KV budget for
//! prompt + max_tokens, reserved at admission; static batching admits only into an empty
//! batch), give prefill chunks from the step's prefill budget, and decode one token for
//! every sequence whose prefill is done. A sequence whose prefill completes in a step emits
//! its first token at that step's end. The step lasts [`Profile::step_cost_us`]; the
//! thread sleeps until its end (sub-millisecond precision), then emits the tokens.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::micros_since;
use crate::profile::{Batching, Profile};

/// Why a sequence ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// Reached `max_tokens`.
    Length,
    /// Stopped early (simulated EOS).
    Stop,
}

impl FinishReason {
    /// OpenAI's name.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Length => "length",
            FinishReason::Stop => "stop",
        }
    }
}

/// What the engine tells a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Admitted into the running batch.
    Admitted {
        /// Server µs.
        at_us: u64,
    },
    /// One more token (the `count`-th).
    Token {
        /// Tokens generated so far.
        count: u32,
        /// Server µs.
        at_us: u64,
    },
    /// The sequence finished.
    Finished {
        /// Why.
        reason: FinishReason,
        /// Server µs.
        at_us: u64,
    },
}

/// A request for the engine.
#[derive(Debug)]
pub struct Job {
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Of those, tokens found in the prefix cache (not prefilled again).
    pub cached_tokens: u32,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Stop after this many tokens (simulated EOS), if earlier than `max_tokens`.
    pub stop_at: Option<u32>,
    /// Where to send emissions; dropping the receiver cancels the job.
    pub out: UnboundedSender<Emit>,
}

/// Live counters for `/metrics`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Sequences running.
    pub running: AtomicU64,
    /// Sequences waiting.
    pub waiting: AtomicU64,
    /// KV tokens reserved.
    pub kv_used_tokens: AtomicU64,
    /// Preemptions (always 0: KV is reserved at admission, so none are needed).
    pub preemptions: AtomicU64,
    /// Tokens generated in total.
    pub tokens_total: AtomicU64,
    /// Steps run.
    pub steps_total: AtomicU64,
}

/// Handle to submit jobs.
#[derive(Clone, Debug)]
pub struct EngineHandle {
    tx: mpsc::Sender<Job>,
    /// Live counters.
    pub stats: Arc<Stats>,
}

impl EngineHandle {
    /// Submits a job; false when the engine has stopped.
    pub fn submit(&self, job: Job) -> bool {
        self.stats.waiting.fetch_add(1, Ordering::Relaxed);
        self.tx.send(job).is_ok()
    }
}

struct Seq {
    job: Job,
    prefill_left: u32,
    generated: u32,
    reserved: u64,
}

/// Starts the engine thread.
pub fn start(profile: Profile, origin: Instant) -> EngineHandle {
    let (tx, rx) = mpsc::channel::<Job>();
    let stats = Arc::new(Stats::default());
    let st = stats.clone();
    std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || run(profile, origin, rx, st))
        .map(|_| ())
        .unwrap_or_else(|e| eprintln!("engine thread failed to start: {e}"));
    EngineHandle { tx, stats }
}

fn sleep_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > Duration::from_micros(400) {
            std::thread::sleep(left - Duration::from_micros(250));
        } else {
            std::hint::spin_loop();
        }
    }
}

fn run(p: Profile, origin: Instant, rx: mpsc::Receiver<Job>, stats: Arc<Stats>) {
    let mut waiting: VecDeque<Seq> = VecDeque::new();
    let mut running: Vec<Seq> = Vec::new();
    let mut kv_used: u64 = 0;
    let mut step_start = Instant::now();
    loop {
        if running.is_empty() && waiting.is_empty() {
            match rx.recv() {
                Ok(job) => waiting.push_back(new_seq(job)),
                Err(_) => return,
            }
            step_start = Instant::now();
        }
        while let Ok(job) = rx.try_recv() {
            waiting.push_back(new_seq(job));
        }
        // Cancelled jobs (client gone) leave.
        let before = waiting.len();
        waiting.retain(|s| !s.job.out.is_closed());
        stats
            .waiting
            .fetch_sub((before - waiting.len()) as u64, Ordering::Relaxed);
        running.retain(|s| {
            let keep = !s.job.out.is_closed();
            if !keep {
                kv_used -= s.reserved;
            }
            keep
        });
        // Admission.
        if p.batching == Batching::Continuous || running.is_empty() {
            while let Some(front) = waiting.front() {
                let fits = running.len() < p.max_num_seqs as usize
                    && kv_used + front.reserved <= p.kv_capacity_tokens;
                if !fits {
                    if running.is_empty() {
                        // Can never fit: the HTTP layer rejects these; finish it defensively.
                        if let Some(s) = waiting.pop_front() {
                            stats.waiting.fetch_sub(1, Ordering::Relaxed);
                            let _ = s.job.out.send(Emit::Finished {
                                reason: FinishReason::Length,
                                at_us: micros_since(origin),
                            });
                        }
                        continue;
                    }
                    break;
                }
                if let Some(s) = waiting.pop_front() {
                    kv_used += s.reserved;
                    stats.waiting.fetch_sub(1, Ordering::Relaxed);
                    let _ = s.job.out.send(Emit::Admitted {
                        at_us: micros_since(origin),
                    });
                    running.push(s);
                }
            }
        }
        stats.running.store(running.len() as u64, Ordering::Relaxed);
        stats.kv_used_tokens.store(kv_used, Ordering::Relaxed);
        if running.is_empty() {
            continue;
        }
        // Plan the step.
        let mut budget = p.prefill_budget_tokens;
        let mut prefill_tokens = 0u64;
        let mut decode_ctx = 0u64;
        let mut emits = vec![false; running.len()];
        for (i, s) in running.iter_mut().enumerate() {
            if s.prefill_left == 0 {
                decode_ctx += u64::from(s.job.prompt_tokens) + u64::from(s.generated);
                emits[i] = true;
            } else if budget > 0 {
                let take = s.prefill_left.min(budget);
                budget -= take;
                s.prefill_left -= take;
                prefill_tokens += u64::from(take);
                emits[i] = s.prefill_left == 0;
            }
        }
        let cost = p.step_cost_us(decode_ctx, prefill_tokens);
        let deadline = step_start + Duration::from_micros(cost);
        sleep_until(deadline);
        step_start = Instant::now();
        let at_us = micros_since(origin);
        stats.steps_total.fetch_add(1, Ordering::Relaxed);
        let mut i = 0;
        running.retain_mut(|s| {
            let emit = emits[i];
            i += 1;
            if !emit {
                return true;
            }
            s.generated += 1;
            stats.tokens_total.fetch_add(1, Ordering::Relaxed);
            let _ = s.job.out.send(Emit::Token {
                count: s.generated,
                at_us,
            });
            let reason = if s.generated >= s.job.max_tokens {
                Some(FinishReason::Length)
            } else if s.job.stop_at.is_some_and(|n| s.generated >= n) {
                Some(FinishReason::Stop)
            } else {
                None
            };
            match reason {
                Some(reason) => {
                    let _ = s.job.out.send(Emit::Finished { reason, at_us });
                    kv_used -= s.reserved;
                    false
                }
                None => true,
            }
        });
        stats.running.store(running.len() as u64, Ordering::Relaxed);
        stats.kv_used_tokens.store(kv_used, Ordering::Relaxed);
    }
}

fn new_seq(job: Job) -> Seq {
    let reserved = u64::from(job.prompt_tokens) + u64::from(job.max_tokens);
    // A prompt of 0 tokens still needs one forward pass.
    let prefill_left = job.prompt_tokens.saturating_sub(job.cached_tokens).max(1);
    Seq {
        job,
        prefill_left,
        generated: 0,
        reserved,
    }
}
