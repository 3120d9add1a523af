//! The live view's series: progress samples taken at a few Hz become charts of aggregate
//! output tok/s and requests in flight over time, with the warm-up, measured and cool-down
//! windows of each step shaded (by the phase of the last dispatch).

use crate::chart::{Band, Chart};
use crate::session::Progress;

/// Samples kept before every other one is dropped (a run of hours stays small).
const MAX_SAMPLES: usize = 1200;
/// Shortest interval a tok/s point is computed over, µs.
const RATE_INTERVAL_US: u64 = 500_000;

#[derive(Clone, Debug, PartialEq)]
struct Sample {
    t_us: u64,
    tokens: u64,
    in_flight: u32,
}

/// Progress over time, for the live charts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveSeries {
    start_us: Option<u64>,
    samples: Vec<Sample>,
    /// (start, µs since the run's start; step; phase) at each change of phase or step.
    phases: Vec<(u64, usize, String)>,
    /// The last sample's time, µs since the start.
    last_us: u64,
}

impl LiveSeries {
    /// An empty series.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a progress sample (samples of another run reset the series).
    pub fn push(&mut self, p: &Progress) {
        if self.start_us != Some(p.started_us) {
            *self = Self {
                start_us: Some(p.started_us),
                ..Self::default()
            };
        }
        let t = p.now_us.saturating_sub(p.started_us);
        if self.samples.last().is_some_and(|s| s.t_us > t) {
            return;
        }
        self.last_us = t;
        self.samples.push(Sample {
            t_us: t,
            tokens: p.tokens,
            in_flight: p.in_flight.0,
        });
        if let Some(ph) = &p.phase {
            let changed = self
                .phases
                .last()
                .is_none_or(|(_, step, name)| *step != p.step.0 || name != ph);
            if changed {
                self.phases.push((t, p.step.0, ph.clone()));
            }
        }
        if self.samples.len() > MAX_SAMPLES {
            // Keep the first and every other one after it.
            let kept: Vec<Sample> = self
                .samples
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == 0)
                .map(|(_, s)| s.clone())
                .collect();
            self.samples = kept;
        }
    }

    /// Aggregate output tok/s over time: (s, tok/s), each over at least half a second.
    pub fn rate_points(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let mut anchor: Option<&Sample> = None;
        for s in &self.samples {
            match anchor {
                None => anchor = Some(s),
                Some(a) if s.t_us >= a.t_us + RATE_INTERVAL_US => {
                    let dt = (s.t_us - a.t_us) as f64 / 1e6;
                    let rate = s.tokens.saturating_sub(a.tokens) as f64 / dt;
                    out.push(((a.t_us + s.t_us) as f64 / 2e6, rate));
                    anchor = Some(s);
                }
                Some(_) => {}
            }
        }
        out
    }

    /// The shaded windows: one band per phase of each step, up to the last sample.
    pub fn bands(&self) -> Vec<Band> {
        let steps = self.phases.iter().map(|p| p.1).max().unwrap_or(0);
        self.phases
            .iter()
            .enumerate()
            .map(|(i, (t, step, name))| {
                let end = self.phases.get(i + 1).map_or(self.last_us, |n| n.0);
                Band {
                    label: if steps > 0 {
                        format!("step {} {name}", step + 1)
                    } else {
                        name.clone()
                    },
                    x0: *t as f64 / 1e6,
                    x1: end as f64 / 1e6,
                }
            })
            .collect()
    }

    /// The two live charts: aggregate tok/s, and requests in flight against the target.
    pub fn charts(&self, target: u32) -> [Chart; 2] {
        let bands = self.bands();
        let in_flight: Vec<(f64, f64)> = self
            .samples
            .iter()
            .map(|s| (s.t_us as f64 / 1e6, f64::from(s.in_flight)))
            .collect();
        crate::chart::time_charts(
            ["live-throughput", "live-in-flight"],
            [
                "Aggregate output tok/s (all streams, live)",
                "Requests in flight (live)",
            ],
            "time since start, s",
            self.rate_points(),
            ("in flight", in_flight),
            (target, self.last_us as f64 / 1e6),
            bands,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(t_ms: u64, tokens: u64, in_flight: u32, step: usize, phase: &str) -> Progress {
        Progress {
            started_us: 1_000_000,
            now_us: 1_000_000 + t_ms * 1000,
            tokens,
            in_flight: (in_flight, 8),
            step: (step, 2),
            phase: Some(phase.into()),
            ..Progress::default()
        }
    }

    #[test]
    fn rates_are_token_deltas_over_time_and_phases_become_bands() {
        let mut l = LiveSeries::new();
        // 1000 tok/s for 2 s (warm-up until 1 s), samples every 100 ms.
        for i in 0..=20u64 {
            let phase = if i < 10 { "warm-up" } else { "measured" };
            l.push(&progress(i * 100, i * 100, 8, 0, phase));
        }
        let r = l.rate_points();
        assert_eq!(r.len(), 4);
        assert!(r.iter().all(|(_, v)| (v - 1000.0).abs() < 1e-9), "{r:?}");
        let b = l.bands();
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].x0, b[0].x1), (0.0, 1.0));
        assert_eq!((b[1].x0, b[1].x1), (1.0, 2.0));
        assert_eq!(b[1].label, "measured");
        // A second step labels its bands with the step.
        l.push(&progress(2100, 2100, 8, 1, "warm-up"));
        assert_eq!(
            l.bands().last().map(|b| b.label.clone()).as_deref(),
            Some("step 2 warm-up")
        );
        let [tp, inf] = l.charts(8);
        assert_eq!(tp.id, "live-throughput");
        assert!(inf.y_integer);
        assert_eq!(inf.series[0].points.len(), 22);
    }

    #[test]
    fn a_long_run_keeps_a_bounded_series_and_a_new_run_resets_it() {
        let mut l = LiveSeries::new();
        for i in 0..10_000u64 {
            l.push(&progress(i * 100, i * 10, 4, 0, "measured"));
        }
        assert!(l.samples.len() <= MAX_SAMPLES);
        assert!(l
            .rate_points()
            .iter()
            .all(|(_, v)| (v - 100.0).abs() < 1e-6));
        let mut other = progress(0, 0, 0, 0, "warm-up");
        other.started_us = 5;
        other.now_us = 5;
        l.push(&other);
        assert_eq!(l.samples.len(), 1);
        assert_eq!(l.bands().len(), 1);
    }
}
