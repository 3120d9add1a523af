//! When to dispatch the next request: closed loop (N streams) or open loop (arrivals at
//! a rate, Poisson or gamma, with an in-flight cap), through warm-up, measured and
//! cool-down windows. Pure: time comes in as µs, randomness as a 32-byte seed.
//!
//! Phases follow one definition, [`PhaseClock`], the same one
//! [`crate::metrics::classify`] applies to the records afterwards (a property test
//! checks the two agree for every mix of counted and timed spans):
//!
//! * warm-up starts at the first dispatch `t0`. `Requests { n }`: the first `n`
//!   dispatches; `Duration { ms }`: dispatches before `t0 + ms`.
//! * the measured window starts at `t0 + ms` after a timed warm-up, else at the first
//!   dispatch after the warm-up (`t_w`). `Requests { n }`: the next `n` dispatches;
//!   `Duration { ms }`: dispatches before `t_w + ms`.
//! * cool-down: what follows, up to its own count, or for its duration from the end of
//!   the measured window (`t_w + ms` when timed, else the first cool-down dispatch).
//!
//! Open loops keep every request's **intended arrival time**: an arrival the in-flight
//! cap holds back is sent late, and the scheduler says when it was due, so its latency
//! can be reported from the arrival (no coordinated omission).

use crate::metrics::Phase;
use crate::pins::{Arrival, LoadStep, Span, WindowPlan};

/// What the runner should do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Send a request now.
    Dispatch,
    /// Nothing to send before this time (µs).
    WaitUntil(u64),
    /// Nothing to send until a request completes.
    WaitForCompletion,
    /// Every request of the step has been dispatched.
    Done,
}

/// One dispatch, as the scheduler accounted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatched {
    /// The phase this dispatch belongs to.
    pub phase: Phase,
    /// Open loop: when the arrival was due (≤ the send time). Closed loop: `None`.
    pub intended_us: Option<u64>,
    /// Open loop: the in-flight cap held this arrival back (it was due while the cap
    /// was full).
    pub held_by_cap: bool,
}

/// The phase definition shared by the scheduler and [`crate::metrics::classify`].
#[derive(Clone, Debug)]
pub struct PhaseClock {
    spans: [Span; 3],
    t0: Option<u64>,
    t_w: Option<u64>,
    t_cool: Option<u64>,
    counts: [u32; 3],
}

impl PhaseClock {
    /// A clock for one step's windows.
    pub fn new(window: WindowPlan) -> Self {
        Self {
            spans: [window.warmup, window.measured, window.cooldown],
            t0: None,
            t_w: None,
            t_cool: None,
            counts: [0; 3],
        }
    }

    /// The phase a dispatch at `t` would get (`None`: past the cool-down, so the step
    /// sends nothing more), and the window starts it would fix.
    fn peek(&self, t: u64) -> (Option<Phase>, u64, Option<u64>) {
        let t0 = self.t0.unwrap_or(t);
        let warm = match self.spans[0] {
            Span::Requests { count } => self.counts[0] < count,
            Span::Duration { ms } => t < t0.saturating_add(ms.saturating_mul(1000)),
        };
        if warm {
            return (Some(Phase::Warmup), t0, None);
        }
        let t_w = match self.spans[0] {
            Span::Duration { ms } => t0.saturating_add(ms.saturating_mul(1000)),
            Span::Requests { .. } => self.t_w.unwrap_or(t),
        };
        let measured = match self.spans[1] {
            Span::Requests { count } => self.counts[1] < count,
            Span::Duration { ms } => t < t_w.saturating_add(ms.saturating_mul(1000)),
        };
        if measured {
            return (Some(Phase::Measured), t0, Some(t_w));
        }
        let t_cool = match self.spans[1] {
            Span::Duration { ms } => t_w.saturating_add(ms.saturating_mul(1000)),
            Span::Requests { .. } => self.t_cool.unwrap_or(t),
        };
        let cool = match self.spans[2] {
            Span::Requests { count } => self.counts[2] < count,
            Span::Duration { ms } => t < t_cool.saturating_add(ms.saturating_mul(1000)),
        };
        (cool.then_some(Phase::Cooldown), t0, Some(t_w))
    }

    /// Whether a dispatch at `t` would fall past the cool-down (the step is over).
    pub fn is_over(&self, t: u64) -> bool {
        self.peek(t).0.is_none()
    }

    /// Accounts a dispatch at `t` (dispatch times never decrease) and returns its phase;
    /// a dispatch past the cool-down counts as cool-down, as `classify` would put it.
    pub fn dispatch(&mut self, t: u64) -> Phase {
        let (phase, t0, t_w) = self.peek(t);
        self.t0 = Some(t0);
        if let Some(tw) = t_w {
            self.t_w.get_or_insert(tw);
        }
        let phase = phase.unwrap_or(Phase::Cooldown);
        if phase == Phase::Cooldown && self.t_cool.is_none() {
            self.t_cool = Some(match self.spans[1] {
                Span::Duration { ms } => self
                    .t_w
                    .unwrap_or(t)
                    .saturating_add(ms.saturating_mul(1000)),
                Span::Requests { .. } => t,
            });
        }
        let i = match phase {
            Phase::Warmup => 0,
            Phase::Measured => 1,
            Phase::Cooldown => 2,
        };
        self.counts[i] += 1;
        phase
    }

    /// When the measured window started, once it has.
    pub fn measured_start_us(&self) -> Option<u64> {
        self.t_w
    }
}

/// A small deterministic generator (splitmix64) seeded by the caller's random bytes.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// From 32 random bytes.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let mut s = 0u64;
        for c in seed.chunks(8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            s ^= u64::from_le_bytes(b).rotate_left(17);
        }
        Rng(s)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Marsaglia's polar method: Box–Muller without a cosine, so no
    /// trigonometry is compiled into the wasm; one of the pair is used).
    pub fn normal(&mut self) -> f64 {
        loop {
            let (x, y) = (2.0 * self.unit() - 1.0, 2.0 * self.unit() - 1.0);
            let s = x * x + y * y;
            if s > 0.0 && s < 1.0 {
                return x * (-2.0 * s.ln() / s).sqrt();
            }
        }
    }

    /// Gamma(shape, scale 1) (Marsaglia–Tsang; shape < 1 boosted).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = self.unit();
            return self.gamma(shape + 1.0) * (u.ln() / shape).exp();
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.unit();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}

/// Dispatch planner for one load step.
#[derive(Clone, Debug)]
pub struct Scheduler {
    load: LoadStep,
    clock: PhaseClock,
    dispatched: u32,
    in_flight: u32,
    next_arrival_us: u64,
    /// The arrival now due was found waiting for the cap.
    head_held: bool,
    rng: Rng,
    /// A replay: each row's arrival after the step's start (scaled), µs, and the next row.
    replay: Option<(Vec<u64>, usize)>,
}

impl Scheduler {
    /// Starts at `t0_us` (an open loop's first arrival is due then).
    pub fn new(load: LoadStep, window: WindowPlan, t0_us: u64, seed: [u8; 32]) -> Self {
        Self {
            load,
            clock: PhaseClock::new(window),
            dispatched: 0,
            in_flight: 0,
            next_arrival_us: t0_us,
            head_held: false,
            rng: Rng::from_seed(seed),
            replay: None,
        }
    }

    /// A replay's scheduler: arrivals at the step's start plus each offset (µs, in order);
    /// the step ends after the last row, or when its windows end.
    pub fn replay(mut self, offsets_us: Vec<u64>) -> Self {
        let t0 = self.next_arrival_us;
        self.next_arrival_us = t0.saturating_add(offsets_us.first().copied().unwrap_or(0));
        self.replay = Some((offsets_us, 0));
        self
    }

    /// A replay's next row (the row of the request about to be dispatched).
    pub fn replay_row(&self) -> Option<usize> {
        self.replay.as_ref().map(|(_, i)| *i)
    }

    /// When a replay's row `row` (at or after the next one) is due, µs; `None` outside a
    /// replay or past its last row.
    pub fn replay_due(&self, row: usize) -> Option<u64> {
        let (offsets, next) = self.replay.as_ref()?;
        let (at, from) = (offsets.get(row)?, offsets.get(*next)?);
        (row >= *next).then(|| {
            self.next_arrival_us
                .saturating_add(at.saturating_sub(*from))
        })
    }

    /// Requests dispatched so far.
    pub fn dispatched(&self) -> u32 {
        self.dispatched
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// The load of this step.
    pub fn load(&self) -> LoadStep {
        self.load
    }

    /// The phase clock (for the measured window's start).
    pub fn clock(&self) -> &PhaseClock {
        &self.clock
    }

    /// Total requests the step will send, when every span counts requests.
    pub fn planned_total(&self) -> Option<u32> {
        self.clock
            .spans
            .iter()
            .map(|s| match s {
                Span::Requests { count } => Some(*count),
                Span::Duration { .. } => None,
            })
            .sum()
    }

    fn inter_arrival_us(&mut self, rate_milli_rps: u64, arrival: Arrival) -> u64 {
        let mean_s = 1000.0 / rate_milli_rps.max(1) as f64;
        let x = match arrival {
            // A replay's arrivals are its rows' times ([`Scheduler::replay`]).
            Arrival::Trace {} => return 0,
            Arrival::Poisson {} => -self.rng.unit().ln(),
            Arrival::Gamma { shape_milli } => {
                let k = f64::from(shape_milli.max(1)) / 1000.0;
                self.rng.gamma(k) / k
            }
        };
        (x * mean_s * 1e6).round() as u64
    }

    /// What to do at `now_us`.
    pub fn next(&mut self, now_us: u64) -> Next {
        match self.load {
            LoadStep::Closed { concurrency } => {
                if self.clock.is_over(now_us) {
                    Next::Done
                } else if self.in_flight < concurrency {
                    Next::Dispatch
                } else {
                    Next::WaitForCompletion
                }
            }
            LoadStep::Open { in_flight_cap, .. } => {
                if let Some((rows, i)) = &self.replay {
                    if *i >= rows.len() {
                        return Next::Done;
                    }
                }
                // The next arrival decides: past the cool-down, nothing more is sent.
                let due = self.next_arrival_us.max(now_us);
                if self.clock.is_over(due) {
                    Next::Done
                } else if now_us < self.next_arrival_us {
                    Next::WaitUntil(self.next_arrival_us)
                } else if self.in_flight < in_flight_cap {
                    Next::Dispatch
                } else {
                    self.head_held = true;
                    Next::WaitForCompletion
                }
            }
        }
    }

    /// A request was sent at `now_us`: returns its phase and, for an open loop, when it
    /// was due.
    pub fn on_dispatch(&mut self, now_us: u64) -> Dispatched {
        self.dispatched += 1;
        self.in_flight += 1;
        let phase = self.clock.dispatch(now_us);
        match self.load {
            LoadStep::Open {
                rate_milli_rps,
                arrival,
                ..
            } => {
                let intended = self.next_arrival_us.min(now_us);
                let held = std::mem::take(&mut self.head_held);
                // The next arrival follows the previous *arrival*, not the dispatch, so a
                // capped client does not slow the offered rate down.
                if let Some((rows, i)) = &mut self.replay {
                    let prev = rows.get(*i).copied().unwrap_or(0);
                    *i += 1;
                    let next = rows.get(*i).copied().unwrap_or(prev);
                    self.next_arrival_us = self
                        .next_arrival_us
                        .saturating_add(next.saturating_sub(prev));
                } else {
                    let gap = self.inter_arrival_us(rate_milli_rps, arrival);
                    self.next_arrival_us = self.next_arrival_us.saturating_add(gap);
                }
                Dispatched {
                    phase,
                    intended_us: Some(intended),
                    held_by_cap: held,
                }
            }
            LoadStep::Closed { .. } => Dispatched {
                phase,
                intended_us: None,
                held_by_cap: false,
            },
        }
    }

    /// A later turn of a conversation already in flight was sent at `now_us`: a request
    /// for the windows, not a new arrival or slot (the conversation holds its slot until
    /// [`Self::on_complete`]).
    pub fn on_turn(&mut self, now_us: u64) -> Dispatched {
        self.dispatched += 1;
        Dispatched {
            phase: self.clock.dispatch(now_us),
            intended_us: None,
            held_by_cap: false,
        }
    }

    /// A request (or a conversation, in a multi-turn run) ended at `now_us`.
    pub fn on_complete(&mut self, _now_us: u64) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(w: Span, m: Span, c: Span) -> WindowPlan {
        WindowPlan {
            warmup: w,
            measured: m,
            cooldown: c,
        }
    }

    #[test]
    fn closed_loop_keeps_n_in_flight_and_stops_at_the_total() {
        let p = plan(
            Span::Requests { count: 2 },
            Span::Requests { count: 5 },
            Span::Requests { count: 1 },
        );
        let mut s = Scheduler::new(LoadStep::Closed { concurrency: 3 }, p, 0, [1; 32]);
        assert_eq!(s.planned_total(), Some(8));
        let mut t = 0;
        for _ in 0..3 {
            assert_eq!(s.next(t), Next::Dispatch);
            s.on_dispatch(t);
        }
        assert_eq!(s.next(t), Next::WaitForCompletion);
        while s.next(t) != Next::Done {
            t += 10;
            if s.next(t) == Next::Dispatch {
                s.on_dispatch(t);
            } else {
                s.on_complete(t);
            }
            assert!(s.in_flight() <= 3);
        }
        assert_eq!(s.dispatched(), 8);
    }

    #[test]
    fn duration_windows_end_by_time() {
        let p = plan(
            Span::Duration { ms: 10 },
            Span::Duration { ms: 20 },
            Span::Requests { count: 0 },
        );
        let mut s = Scheduler::new(LoadStep::Closed { concurrency: 1 }, p, 1_000, [2; 32]);
        assert_eq!(s.planned_total(), None);
        assert_eq!(s.next(1_000), Next::Dispatch);
        s.on_dispatch(1_000);
        s.on_complete(30_000);
        assert_eq!(s.next(30_000), Next::Dispatch);
        s.on_dispatch(30_000);
        s.on_complete(31_001);
        assert_eq!(
            s.next(31_001),
            Next::Done,
            "warm-up 10 ms + measured 20 ms end at 31 ms"
        );
    }

    #[test]
    fn open_loop_poisson_rate_is_right() {
        // 100 req/s for 20 s of measured window, no cap pressure: ~2000 arrivals.
        let p = plan(
            Span::Requests { count: 0 },
            Span::Duration { ms: 20_000 },
            Span::Requests { count: 0 },
        );
        let load = LoadStep::Open {
            rate_milli_rps: 100_000,
            arrival: Arrival::Poisson {},
            in_flight_cap: 1_000_000,
        };
        let mut s = Scheduler::new(load, p, 0, [3; 32]);
        let mut t = 0;
        let mut gaps = Vec::new();
        let mut last = None;
        loop {
            match s.next(t) {
                Next::Dispatch => {
                    if let Some(l) = last {
                        gaps.push((t - l) as f64);
                    }
                    last = Some(t);
                    s.on_dispatch(t);
                }
                Next::WaitUntil(u) => t = u,
                Next::WaitForCompletion => unreachable!("no cap pressure"),
                Next::Done => break,
            }
        }
        let n = s.dispatched() as f64;
        assert!(
            (1900.0..2100.0).contains(&n),
            "{n} arrivals in 20 s at 100/s"
        );
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!(
            (0.9..1.1).contains(&cv),
            "Poisson inter-arrivals have CV 1, got {cv}"
        );
    }

    #[test]
    fn normal_has_the_standard_normal_moments_and_mass() {
        let mut r = Rng::from_seed([9; 32]);
        let xs: Vec<f64> = (0..200_000).map(|_| r.normal()).collect();
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let skew = xs.iter().map(|x| (x - mean).powi(3)).sum::<f64>() / n;
        let kurt = xs.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n;
        let within = |k: f64| xs.iter().filter(|x| x.abs() < k).count() as f64 / n;
        // Standard errors at n = 200,000: mean 0.0022, variance 0.0032, skewness 0.0055,
        // kurtosis 0.011, the 1σ mass 0.001; each bound is over 4 of them.
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.015, "variance {var}");
        assert!(skew.abs() < 0.025, "skewness {skew}");
        assert!((kurt - 3.0).abs() < 0.05, "kurtosis {kurt}");
        assert!(
            (within(1.0) - 0.682_689).abs() < 0.005,
            "1σ {}",
            within(1.0)
        );
        assert!(
            (within(2.0) - 0.954_500).abs() < 0.003,
            "2σ {}",
            within(2.0)
        );
    }

    #[test]
    fn gamma_shape_sets_burstiness() {
        let mut r = Rng::from_seed([4; 32]);
        for (k, want_cv) in [(0.25f64, 2.0f64), (4.0, 0.5)] {
            let xs: Vec<f64> = (0..20_000).map(|_| r.gamma(k) / k).collect();
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let cv = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt()
                / mean;
            assert!((mean - 1.0).abs() < 0.05, "mean {mean} for k={k}");
            assert!(
                (cv - want_cv).abs() < 0.1 * want_cv,
                "cv {cv} for k={k}, want {want_cv}"
            );
        }
    }

    #[test]
    fn open_loop_cap_holds_arrivals() {
        let p = plan(
            Span::Requests { count: 0 },
            Span::Requests { count: 10 },
            Span::Requests { count: 0 },
        );
        let load = LoadStep::Open {
            rate_milli_rps: 1_000_000,
            arrival: Arrival::Poisson {},
            in_flight_cap: 2,
        };
        let mut s = Scheduler::new(load, p, 0, [5; 32]);
        let t = 10_000_000;
        assert_eq!(s.next(t), Next::Dispatch);
        s.on_dispatch(t);
        assert_eq!(s.next(t), Next::Dispatch);
        s.on_dispatch(t);
        assert_eq!(s.next(t), Next::WaitForCompletion);
    }

    #[test]
    fn a_replay_sends_each_row_at_its_time_and_keeps_late_ones_late() {
        let p = plan(
            Span::Requests { count: 0 },
            Span::Requests { count: 100 },
            Span::Requests { count: 0 },
        );
        let load = LoadStep::Open {
            rate_milli_rps: 1_000,
            arrival: Arrival::Trace {},
            in_flight_cap: 2,
        };
        let t0 = 1_000_000;
        let mut s = Scheduler::new(load, p, t0, [1; 32]).replay(vec![0, 0, 500, 2_000, 2_000]);
        // Two rows at the start; the cap (2) holds the third, due at +500 µs.
        let mut sent = Vec::new();
        for _ in 0..2 {
            assert_eq!(s.replay_row(), Some(sent.len()));
            assert_eq!(s.next(t0), Next::Dispatch);
            sent.push(s.on_dispatch(t0));
        }
        assert_eq!(s.next(t0 + 600), Next::WaitForCompletion);
        s.on_complete(0);
        // Sent at +900 µs, it stays due at +500 µs: late, and said so.
        assert_eq!(s.next(t0 + 900), Next::Dispatch);
        let late = s.on_dispatch(t0 + 900);
        assert_eq!(late.intended_us, Some(t0 + 500));
        assert!(late.held_by_cap);
        s.on_complete(0);
        s.on_complete(0);
        // The next two are not moved by that lateness.
        assert_eq!(s.next(t0 + 1_000), Next::WaitUntil(t0 + 2_000));
        for _ in 0..2 {
            assert_eq!(s.next(t0 + 2_000), Next::Dispatch);
            sent.push(s.on_dispatch(t0 + 2_000));
        }
        assert_eq!(
            sent.iter().map(|d| d.intended_us).collect::<Vec<_>>(),
            vec![Some(t0), Some(t0), Some(t0 + 2_000), Some(t0 + 2_000)]
        );
        // Every row sent: the step is over, whatever its window still allows.
        assert_eq!(s.next(t0 + 3_000), Next::Done);
    }
}
