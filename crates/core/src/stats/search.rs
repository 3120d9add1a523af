//! SLO search: the largest load — a concurrency (closed loop) or a request rate (open
//! loop) — whose run meets every SLO (each a latency at a stated percentile of the
//! measured window). Bracketing, then bisection: the first probe
//! runs at the smallest load; while a probe meets the SLOs the next doubles (up to the
//! largest); after the first miss the next probe halves the gap between the highest load
//! that met them and the lowest that did not, until that gap is at most the resolution.
//! Each probe is a full pinned run with its own warm-up, one load step of the report; the
//! search's plan, every probe's judged figures and its answer are kept in the report
//! ([`SearchRecord`]), and [`check`] judges them again from the recomputed figures.

use serde::{Deserialize, Serialize};

use crate::metrics::{Dist, StepSummary, Summary};

/// A latency an SLO bounds. Read from its name through a string (a derived enum reader
/// costs each wasm bundle a kilobyte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum SloMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// End-to-end latency.
    E2e,
}

impl TryFrom<String> for SloMetric {
    type Error = String;

    fn try_from(t: String) -> Result<Self, String> {
        match t.as_str() {
            "ttft" => Ok(SloMetric::Ttft),
            "tpot" => Ok(SloMetric::Tpot),
            "e2e" => Ok(SloMetric::E2e),
            _ => Err(format!("unknown latency `{t}`, expected ttft, tpot or e2e")),
        }
    }
}

/// One SLO: `metric` at `percentile` at most `limit_us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloTarget {
    /// The latency.
    pub metric: SloMetric,
    /// 50, 90, 95 or 99.
    pub percentile: u8,
    /// The limit, µs.
    pub limit_us: u64,
}

impl SloTarget {
    /// Reads `ttft:p99<=500ms` (metric `ttft`, `tpot` or `e2e`; percentile p50, p90, p95
    /// or p99; limit in ms, decimals allowed).
    pub fn parse(t: &str) -> Result<Self, String> {
        let bad = || {
            format!("{t:?}: expected METRIC:pPCT<=MSms, e.g. ttft:p99<=500ms (metric ttft, tpot or e2e; p50, p90, p95 or p99)")
        };
        let (metric, rest) = t.trim().split_once(':').ok_or_else(bad)?;
        let metric = SloMetric::try_from(metric.trim().to_ascii_lowercase()).map_err(|_| bad())?;
        let (pct, limit) = rest.split_once("<=").ok_or_else(bad)?;
        let percentile = match pct.trim().to_ascii_lowercase().as_str() {
            "p50" => 50,
            "p90" => 90,
            "p95" => 95,
            "p99" => 99,
            _ => return Err(bad()),
        };
        let ms = limit.trim().strip_suffix("ms").ok_or_else(bad)?;
        let limit_us = crate::json::parse_f64(ms)
            .filter(|v| *v > 0.0 && *v < 1e9)
            .map(|v| (v * 1000.0).round() as u64)
            .ok_or_else(bad)?;
        Ok(Self {
            metric,
            percentile,
            limit_us,
        })
    }

    /// This SLO's latency in a step's figures (`None` when the step has none).
    pub fn value(&self, s: &StepSummary) -> Option<u64> {
        let d: &Dist = match self.metric {
            SloMetric::Ttft => s.ttft_us.as_ref()?,
            SloMetric::Tpot => s.tpot_us.as_ref()?,
            SloMetric::E2e => s.e2e_us.as_ref()?,
        };
        Some(match self.percentile {
            50 => d.p50,
            90 => d.p90,
            95 => d.p95,
            _ => d.p99,
        })
    }
}

impl std::fmt::Display for SloTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = match self.metric {
            SloMetric::Ttft => "TTFT",
            SloMetric::Tpot => "TPOT",
            SloMetric::E2e => "E2E",
        };
        write!(
            f,
            "{m} p{} ≤ {} ms",
            self.percentile,
            crate::decimal::fixed(self.limit_us as f64 / 1000.0, 1)
        )
    }
}

/// The load a search varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchDimension {
    /// Closed loop: streams in flight.
    Concurrency,
    /// Open loop: arrivals per second, × 1000 (the pins' arrival process and in-flight cap
    /// kept).
    RateMilliRps,
}

impl SearchDimension {
    /// A load of this dimension as people read it: `8` (concurrency) or `2.5 req/s`.
    pub fn text(self, load: u32) -> String {
        match self {
            SearchDimension::Concurrency => format!("concurrency {load}"),
            SearchDimension::RateMilliRps => {
                format!("{} req/s", crate::pins::milli(u64::from(load)))
            }
        }
    }

    /// A difference of loads (a resolution): `2` (streams) or `0.5 req/s`.
    pub fn step_text(self, delta: u32) -> String {
        match self {
            SearchDimension::Concurrency => delta.to_string(),
            SearchDimension::RateMilliRps => self.text(delta),
        }
    }

    /// The load of a step, in this dimension (`None`: a step of the other kind).
    pub fn of(self, step: &crate::pins::LoadStep) -> Option<u32> {
        match (self, *step) {
            (SearchDimension::Concurrency, crate::pins::LoadStep::Closed { concurrency }) => {
                Some(concurrency)
            }
            (SearchDimension::RateMilliRps, crate::pins::LoadStep::Open { rate_milli_rps, .. }) => {
                u32::try_from(rate_milli_rps).ok()
            }
            _ => None,
        }
    }
}

/// What is searched: loads of `dimension` from `min` to `max`, to within `resolution`,
/// against every SLO of `targets`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchPlan {
    /// Concurrency or request rate.
    pub dimension: SearchDimension,
    /// The smallest load (the first probe).
    pub min: u32,
    /// The largest.
    pub max: u32,
    /// The search stops when the highest load that met the SLOs and the lowest that did
    /// not are at most this far apart.
    pub resolution: u32,
    /// Every SLO a probe must meet.
    pub targets: Vec<SloTarget>,
}

impl SearchPlan {
    /// A plan for a run of `cfg` from its text (a form's fields or a command's
    /// arguments): the SLOs (`targets`, each like `ttft:p99<=500ms`) and the smallest
    /// load, largest and resolution in the pins' load dimension (streams, or req/s with
    /// at most three decimals).
    pub fn from_text(
        cfg: &crate::pins::RunConfig,
        targets: Vec<SloTarget>,
        (min, max, resolution): (&str, &str, &str),
    ) -> Result<Self, String> {
        let dimension = SearchDimension::for_config(cfg).ok_or(
            "an SLO search varies a closed loop's concurrency or an open loop's rate: not a replay",
        )?;
        let load = |name: &str, t: &str| {
            dimension.parse(t).ok_or_else(|| {
                format!(
                    "search {name} {t:?}: expected {}",
                    match dimension {
                        SearchDimension::Concurrency => "a whole number of streams",
                        SearchDimension::RateMilliRps => "req/s (at most 3 decimals)",
                    }
                )
            })
        };
        let plan = Self {
            dimension,
            min: load("min", min)?,
            max: load("max", max)?,
            resolution: load("resolution", resolution)?,
            targets,
        };
        Search::new(plan.clone()).map_err(|e| e.to_string())?;
        Ok(plan)
    }

    /// The goodput SLOs a search's answer is reported with when none are given: each
    /// latency held to the tightest limit the search puts on it.
    pub fn goodput_slo(&self) -> crate::metrics::Slo {
        let limit = |m: SloMetric| {
            self.targets
                .iter()
                .filter(|t| t.metric == m)
                .map(|t| t.limit_us)
                .min()
        };
        crate::metrics::Slo {
            ttft_us: limit(SloMetric::Ttft),
            tpot_us: limit(SloMetric::Tpot),
            e2e_us: limit(SloMetric::E2e),
        }
    }
}

/// SLOs as a list (`ttft:p99<=500ms, tpot:p99<=50ms`: commas or semicolons between);
/// empty text is no SLO.
pub fn parse_targets(t: &str) -> Result<Vec<SloTarget>, String> {
    t.split([',', ';'])
        .filter(|s| !s.trim().is_empty())
        .map(SloTarget::parse)
        .collect()
}

/// One probe: its load, each SLO's figure (in the plan's order) and whether it met all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// The load, in the plan's dimension.
    pub load: u32,
    /// Each target's latency in the probe's measured window, µs (`None`: not measured).
    pub values_us: Vec<Option<u64>>,
    /// Every target met (a missing figure does not meet it).
    pub met: bool,
}

/// A finished search, as the report keeps it: probe `i` is load step `i`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRecord {
    /// What was searched.
    pub plan: SearchPlan,
    /// The probes, in the order they ran.
    pub probes: Vec<Probe>,
    /// The largest load that met every SLO (`None`: not even the smallest did).
    pub found: Option<u32>,
    /// The run stopped before the rule's last probe (stopped by its user, or interrupted
    /// and sealed from its checkpoint): `found` is the best among the probes that ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended_early: bool,
}

/// Why a search cannot start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// Bad bounds.
    #[error("the search needs 1 ≤ min ≤ max and a resolution ≥ 1 (got min {min}, max {max}, resolution {resolution})")]
    Bounds {
        /// Smallest.
        min: u32,
        /// Largest.
        max: u32,
        /// Resolution.
        resolution: u32,
    },
    /// No SLO.
    #[error("the search needs at least one SLO (e.g. --slo ttft:p99<=500ms)")]
    NoTarget,
}

/// A search under way.
#[derive(Clone, Debug)]
pub struct Search {
    plan: SearchPlan,
    probes: Vec<Probe>,
}

impl Search {
    /// A search over `plan`.
    pub fn new(plan: SearchPlan) -> Result<Self, SearchError> {
        if plan.min == 0 || plan.min > plan.max || plan.resolution == 0 {
            return Err(SearchError::Bounds {
                min: plan.min,
                max: plan.max,
                resolution: plan.resolution,
            });
        }
        if plan.targets.is_empty() {
            return Err(SearchError::NoTarget);
        }
        Ok(Self {
            plan,
            probes: Vec::new(),
        })
    }

    /// Probes judged so far.
    pub fn probes(&self) -> usize {
        self.probes.len()
    }

    /// The plan.
    pub fn plan(&self) -> &SearchPlan {
        &self.plan
    }

    /// The highest load that met every SLO and the lowest that did not, so far.
    fn bracket(&self) -> (Option<u32>, Option<u32>) {
        bracket(&self.probes)
    }

    /// The next load to probe, or `None` when the search is over.
    pub fn next_load(&self) -> Option<u32> {
        next_load(&self.plan, &self.probes)
    }

    /// Judges the probe at `load` from its step's figures; whether it met every SLO.
    pub fn record(&mut self, load: u32, step: &StepSummary) -> bool {
        let p = judge(&self.plan, load, step);
        let met = p.met;
        self.probes.push(p);
        met
    }

    /// The finished search.
    pub fn finish(self) -> SearchRecord {
        let found = self.bracket().0;
        let ended_early = self.next_load().is_some();
        SearchRecord {
            plan: self.plan,
            probes: self.probes,
            found,
            ended_early,
        }
    }
}

fn bracket(probes: &[Probe]) -> (Option<u32>, Option<u32>) {
    let pass = probes.iter().filter(|p| p.met).map(|p| p.load).max();
    let fail = probes.iter().filter(|p| !p.met).map(|p| p.load).min();
    (pass, fail)
}

fn next_load(plan: &SearchPlan, probes: &[Probe]) -> Option<u32> {
    if probes.is_empty() {
        return Some(plan.min);
    }
    match bracket(probes) {
        // Not even the smallest load met them.
        (None, _) => None,
        // Every load so far met them: double, up to the largest.
        (Some(pass), None) => (pass < plan.max).then(|| pass.saturating_mul(2).min(plan.max)),
        (Some(pass), Some(fail)) if fail > pass => {
            (fail - pass > plan.resolution).then(|| pass + (fail - pass) / 2)
        }
        // A higher load met them than one that did not (noise): the answer is the
        // highest load that met them below every miss; nothing more is probed.
        (Some(_), Some(_)) => None,
    }
}

fn judge(plan: &SearchPlan, load: u32, step: &StepSummary) -> Probe {
    let values_us: Vec<Option<u64>> = plan.targets.iter().map(|t| t.value(step)).collect();
    let met = plan
        .targets
        .iter()
        .zip(&values_us)
        .all(|(t, v)| v.is_some_and(|v| v <= t.limit_us));
    Probe {
        load,
        values_us,
        met,
    }
}

impl SearchDimension {
    /// The dimension a search over `cfg`'s load varies: a closed loop's concurrency or an
    /// open loop's rate; `None` for a replay (its arrivals are the trace's) or no load.
    pub fn for_config(cfg: &crate::pins::RunConfig) -> Option<Self> {
        match cfg.load.value.steps.first() {
            _ if cfg.trace.is_some() => None,
            Some(crate::pins::LoadStep::Closed { .. }) => Some(SearchDimension::Concurrency),
            Some(crate::pins::LoadStep::Open { .. }) => Some(SearchDimension::RateMilliRps),
            None => None,
        }
    }

    /// A load as its text in the forms (a whole number of streams, or req/s with at most
    /// three decimals), `None` when it is neither.
    pub fn parse(self, t: &str) -> Option<u32> {
        match self {
            SearchDimension::Concurrency => t.trim().parse::<u32>().ok(),
            SearchDimension::RateMilliRps => {
                crate::decimal::parse_milli(t).and_then(|v| u32::try_from(v).ok())
            }
        }
    }
}

/// The load step of a probe at `load`: `base`'s kind kept (an open loop's arrival process
/// and in-flight cap too), only its concurrency or rate replaced.
pub fn probe_step(base: crate::pins::LoadStep, load: u32) -> crate::pins::LoadStep {
    match base {
        crate::pins::LoadStep::Open {
            arrival,
            in_flight_cap,
            ..
        } => crate::pins::LoadStep::Open {
            rate_milli_rps: u64::from(load),
            arrival,
            in_flight_cap,
        },
        crate::pins::LoadStep::Closed { .. } => crate::pins::LoadStep::Closed { concurrency: load },
    }
}

/// The figures of load step `step` of a run of `cfg` (its steps so far), as the report's
/// figures give them: what a probe is judged on. `None` when the step has no records.
pub fn step_figures(
    cfg: &crate::pins::RunConfig,
    step: usize,
    records: &[crate::record::RequestRecord],
) -> Option<StepSummary> {
    if !records.iter().any(|r| r.step as usize == step) {
        return None;
    }
    let plan = crate::metrics::MetricsPlan::from_config(cfg, None);
    crate::metrics::summarize(records, &plan)
        .ok()?
        .steps
        .into_iter()
        .nth(step)
}

/// A search's probes rebuilt from a run's records (an interrupted run's checkpoint): the
/// rule gives each probe's load, its step's records its verdict; it stops at the first
/// step without records. `cfg`'s load steps become the probes' (left as they are when
/// no step has records).
pub fn rebuild(
    plan: SearchPlan,
    cfg: &mut crate::pins::RunConfig,
    records: &[crate::record::RequestRecord],
) -> Result<SearchRecord, SearchError> {
    let Some(&base) = cfg.load.value.steps.first() else {
        return Ok(Search::new(plan)?.finish());
    };
    let mut search = Search::new(plan)?;
    let pinned = std::mem::take(&mut cfg.load.value.steps);
    while let Some(load) = search.next_load() {
        cfg.load.value.steps.push(probe_step(base, load));
        match step_figures(cfg, cfg.load.value.steps.len() - 1, records) {
            Some(s) => {
                search.record(load, &s);
            }
            None => {
                cfg.load.value.steps.pop();
                break;
            }
        }
    }
    if cfg.load.value.steps.is_empty() {
        cfg.load.value.steps = pinned;
    }
    Ok(search.finish())
}

/// Judges a kept search again from a report's recomputed figures: probe `i` must be load
/// step `i` at its load, with the figures and verdict the steps give, the probes in the
/// order the rule asks for them, and the answer the rule's. Each difference, by path.
pub fn check(record: &SearchRecord, figures: &Summary) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut seen: Vec<Probe> = Vec::new();
    for (i, p) in record.probes.iter().enumerate() {
        let path = format!("search.probes[{i}]");
        let expected = next_load(&record.plan, &seen);
        if expected != Some(p.load) {
            out.push((
                format!("{path}.load"),
                p.load.to_string(),
                format!("{expected:?} (the search's rule)"),
            ));
        }
        match figures.steps.get(i) {
            Some(s) if record.plan.dimension.of(&s.load) == Some(p.load) => {
                let fresh = judge(&record.plan, p.load, s);
                if fresh != *p {
                    out.push((path.clone(), format!("{p:?}"), format!("{fresh:?}")));
                }
                seen.push(fresh);
            }
            _ => {
                out.push((
                    path,
                    format!("load {}", p.load),
                    "no load step of that load at that place".into(),
                ));
                seen.push(p.clone());
            }
        }
    }
    let more = next_load(&record.plan, &seen).is_some();
    if more != record.ended_early {
        out.push((
            "search.ended_early".into(),
            format!("{} ({} probes)", record.ended_early, record.probes.len()),
            format!(
                "{more} (the rule {} another probe)",
                if more { "asks for" } else { "asks for no" }
            ),
        ));
    }
    let found = bracket(&seen).0;
    if found != record.found {
        out.push((
            "search.found".into(),
            format!("{:?}", record.found),
            format!("{found:?}"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(min: u32, max: u32, resolution: u32) -> SearchPlan {
        SearchPlan {
            dimension: SearchDimension::Concurrency,
            min,
            max,
            resolution,
            targets: vec![SloTarget::parse("ttft:p99<=100ms").expect("slo")],
        }
    }

    /// Runs a search against a server whose probes meet the SLO at loads ≤ `knee`.
    fn search(p: SearchPlan, knee: u32) -> (Vec<u32>, Option<u32>) {
        let mut s = Search::new(p).expect("plan");
        let mut loads = Vec::new();
        while let Some(l) = s.next_load() {
            assert!(loads.len() < 64, "ends");
            loads.push(l);
            s.probes.push(Probe {
                load: l,
                values_us: vec![Some(if l <= knee { 50_000 } else { 150_000 })],
                met: l <= knee,
            });
        }
        (loads, s.finish().found)
    }

    #[test]
    fn brackets_then_bisects_to_the_resolution() {
        assert_eq!(
            search(plan(1, 256, 1), 12),
            (vec![1, 2, 4, 8, 16, 12, 14, 13], Some(12))
        );
        assert_eq!(
            search(plan(1, 256, 4), 12),
            (vec![1, 2, 4, 8, 16, 12], Some(12))
        );
        assert_eq!(
            search(plan(1, 10, 1), 100),
            (vec![1, 2, 4, 8, 10], Some(10))
        );
        assert_eq!(search(plan(2, 64, 1), 1), (vec![2], None));
        // The answer is within one resolution step of the knee, for every knee.
        for knee in 1..=64 {
            for res in [1, 2, 5] {
                let (_, found) = search(plan(1, 64, res), knee);
                let f = found.expect("the smallest meets it");
                assert!(f <= knee && knee - f <= res, "knee {knee}, res {res}: {f}");
            }
        }
    }

    #[test]
    fn slos_read_and_refuse() {
        assert_eq!(
            SloTarget::parse(" TPOT:p50<=12.5ms "),
            Ok(SloTarget {
                metric: SloMetric::Tpot,
                percentile: 50,
                limit_us: 12_500
            })
        );
        assert_eq!(
            SloTarget::parse("e2e:p95<=2000ms").map(|t| t.to_string()),
            Ok("E2E p95 ≤ 2000.0 ms".into())
        );
        for bad in [
            "ttft<=5ms",
            "ttft:p98<=5ms",
            "ttft:p99<=5s",
            "itl:p99<=5ms",
            "ttft:p99<=0ms",
        ] {
            assert!(SloTarget::parse(bad).is_err(), "{bad}");
        }
        for m in [SloMetric::Ttft, SloMetric::Tpot, SloMetric::E2e] {
            let json = serde_json::to_string(&m).expect("json");
            assert_eq!(crate::json::from_str::<SloMetric>(&json), Ok(m));
        }
        assert!(crate::json::from_str::<SloMetric>("\"itl\"").is_err());
        assert!(Search::new(plan(0, 4, 1)).is_err());
        assert!(Search::new(plan(5, 4, 1)).is_err());
        assert!(Search::new(SearchPlan {
            targets: vec![],
            ..plan(1, 4, 1)
        })
        .is_err());
    }
}
