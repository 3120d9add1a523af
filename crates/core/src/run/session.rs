//! The run session: a whole benchmark run as one pure state machine.
//!
//! A host (the browser's Web Worker, the page's main thread as a fallback, or the native
//! command) owns the clock and the network; the session owns every decision: when to
//! dispatch (through [`Scheduler`]), what each request is (lengths, prompt, nonce, body),
//! prompt calibration from usage, phases and sweep steps, stall detection, stop, progress
//! and records. The host feeds it timed events with integer-µs times and carries out what
//! it asks through a [`Transport`]:
//!
//! ```text
//! host                                   session
//! ──── poll(now) ───────────────────────▶ dispatches what is due: transport.send(…)
//!      ◀─────────────── Wake::At(t) / Event / Finished
//! ──── on_headers / on_bytes / on_end ──▶ builds the record (RequestTimeline)
//! ──── stop(now) ───────────────────────▶ transport.abort(…) for every request in flight
//! ```
//!
//! Every dispatched request yields exactly one record, whatever happens to it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dialect::{Dialect, RequestSpec};
use crate::histogram::Hist;
use crate::http::{ApiKey, HttpRequest};
use crate::metrics::{self, Phase};
use crate::pins::{PromptExactness, RunConfig};
use crate::probe::Engine;
use crate::prompt::{self, Calibration};
use crate::record::{Outcome, RequestRecord, RequestTimeline, StreamEnd, TurnOf};
use crate::schedule::{Dispatched, Next, Rng, Scheduler};

/// Pause between sweep steps, so the server drains, µs.
pub const STEP_GAP_US: u64 = 50_000;

/// A replay builds the bodies of its rows due within this horizon ahead of time, µs: rows
/// that share an arrival time (a trace's bursts) are then sent one right after the other,
/// not each after the previous one's prompt was built.
pub const PREPARE_HORIZON_US: u64 = 2_000_000;

/// At most this many bodies built ahead (each up to a few hundred KB).
pub const PREPARE_MAX: usize = 32;

/// A body is built ahead only when the next send is at least this far off, µs, so the
/// building never delays a send that is due.
pub const PREPARE_MARGIN_US: u64 = 10_000;

/// One request the session wants sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The request's id (its dispatch index over the whole run).
    pub id: u32,
    /// The request, every header decided ([`HttpRequest::stream`]): the host sends it as
    /// it is.
    pub request: HttpRequest,
}

/// What the session needs from a host's network: start a streaming POST, abort one.
/// The host reports what happens to each request back through
/// [`RunSession::on_headers`], [`RunSession::on_bytes`] and [`RunSession::on_end`].
pub trait Transport {
    /// Starts sending `req` now. Returns the host's clock when the request was handed
    /// to its network stack (just before `fetch`), when the host knows it then: building
    /// the request is the client's time, not the server's, and the record's `t_send_us`
    /// is that instant (else the session's own stamp, taken before building it).
    fn send(&mut self, req: &Outgoing) -> Option<u64>;
    /// Aborts request `id`; the host still reports its end.
    fn abort(&mut self, id: u32);
}

/// When the host should call [`RunSession::poll`] next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// At this time (µs), or at the next event if that comes first.
    At(u64),
    /// At the next request event.
    Event,
    /// The run is over: take the records with [`RunSession::finish`].
    Finished,
}

/// Live progress, cheap to take (the host publishes it at a few Hz).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    /// Current step (0-based) and number of steps.
    pub step: (usize, usize),
    /// Requests dispatched in this step.
    pub dispatched: u32,
    /// Requests completed (all steps).
    pub completed: u32,
    /// Planned requests this step, when every span counts requests.
    pub planned: Option<u32>,
    /// In flight now, and the target.
    pub in_flight: (u32, u32),
    /// Output tokens received so far (all steps, requests in flight included).
    pub tokens: u64,
    /// Run start, µs (host clock).
    pub started_us: u64,
    /// The host clock when this progress was taken, µs.
    pub now_us: u64,
    /// The current step's phase, by its last dispatch.
    pub phase: Option<String>,
    /// Failed requests so far by kind.
    pub errors: BTreeMap<String, u32>,
    /// Sum and count of completed requests' per-stream decode speeds (milli-tok/s).
    pub decode: (u64, u32),
    /// Open loops: arrivals the in-flight cap held back so far.
    pub held_by_cap: u32,
    /// Whether the run has finished.
    pub finished: bool,
    /// TTFT of the requests completed so far (all windows), µs: p50, p90, p99.
    #[serde(default)]
    pub ttft_q: Option<[u64; 3]>,
    /// TPOT of the requests completed so far (all windows), µs: p50, p90, p99.
    #[serde(default)]
    pub tpot_q: Option<[u64; 3]>,
}

impl Progress {
    /// Aggregate output tok/s since the run started (all streams, requests in flight
    /// included): what the live view and the command line's progress line show.
    pub fn aggregate_tok_per_s(&self) -> f64 {
        let secs = self.now_us.saturating_sub(self.started_us) as f64 / 1e6;
        if secs > 0.0 {
            self.tokens as f64 / secs
        } else {
            0.0
        }
    }
}

/// The live quantiles shown while a run goes.
pub const LIVE_QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

fn live_quantiles(h: &Hist) -> Option<[u64; 3]> {
    Some([
        h.quantile(LIVE_QUANTILES[0])?,
        h.quantile(LIVE_QUANTILES[1])?,
        h.quantile(LIVE_QUANTILES[2])?,
    ])
}

struct InFlight {
    timeline: RequestTimeline,
    last_activity_us: u64,
    stalled: bool,
}

/// The requests in flight, by id: a list sorted by id (ids are given in dispatch order,
/// so an insert appends), each boxed so that removing one moves only pointers. A
/// `BTreeMap` did the same with several KB more of each wasm (its removal and rebalancing
/// code is used nowhere else).
#[derive(Default)]
struct InFlightList(Vec<(u32, Box<InFlight>)>);

impl InFlightList {
    fn insert(&mut self, id: u32, f: InFlight) {
        let at = self.0.partition_point(|(i, _)| *i < id);
        if self.0.get(at).is_some_and(|(i, _)| *i == id) {
            *self.0[at].1 = f;
        } else {
            self.0.insert(at, (id, Box::new(f)));
        }
    }

    fn position(&self, id: u32) -> Option<usize> {
        self.0.binary_search_by_key(&id, |(i, _)| *i).ok()
    }

    fn get_mut(&mut self, id: u32) -> Option<&mut InFlight> {
        let at = self.position(id)?;
        Some(&mut self.0[at].1)
    }

    fn remove(&mut self, id: u32) -> Option<InFlight> {
        let at = self.position(id)?;
        Some(*self.0.remove(at).1)
    }

    fn iter(&self) -> impl Iterator<Item = (u32, &InFlight)> {
        self.0.iter().map(|(i, f)| (*i, &**f))
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut InFlight)> {
        self.0.iter_mut().map(|(i, f)| (*i, &mut **f))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// A conversation of a multi-turn run, between its first request and its last answer.
struct Conv {
    /// Turns it will send.
    turns: u32,
    /// Turns sent so far.
    sent: u32,
    /// Earlier turns: each user message and the answer received to it.
    history: Vec<(String, String)>,
    /// The user message of the turn in flight.
    user: String,
    /// While it thinks: when its next turn is due, µs.
    due_us: Option<u64>,
}

/// A whole run: every step of the sweep, from the first dispatch to the last record.
pub struct RunSession {
    cfg: RunConfig,
    url: String,
    dialect: Dialect,
    cal: Calibration,
    calibrate_from_usage: bool,
    /// Ask for usage in every chunk: the engine pin names one that streams it (vLLM).
    continuous_usage: bool,
    /// Secrets the host sends (API key, header values), kept out of every record.
    secrets: Vec<String>,
    /// The API key requests carry ([`Self::set_credentials`]).
    api_key: Option<ApiKey>,
    seeds: Rng,
    plan_rng: Rng,
    /// Draws the shared prefixes' words (its own stream: the other draws do not move).
    prefix_seed: u64,
    /// A replay's rows (arrivals, lengths, blocks), when the trace is at hand.
    replay: Option<Vec<crate::trace::TraceRow>>,
    /// A dataset's (prompt, output) lengths in the order they are sent (cycling), and
    /// their prompts when the run sends the dataset's own text.
    dataset: Option<crate::dataset::DatasetLengths>,
    /// Request bodies of the replay's next rows, built ahead (row, body), in row order.
    prepared: std::collections::VecDeque<(usize, String)>,
    /// Conversations of this step (multi-turn runs), by number.
    convs: BTreeMap<u32, Conv>,
    /// The next conversation's number.
    next_conv: u32,
    step: usize,
    sched: Option<Scheduler>,
    step_gap_until: Option<u64>,
    next_index: u32,
    in_flight: InFlightList,
    /// Records completed and not yet taken by the host ([`Self::take_completed`]).
    records: Vec<RequestRecord>,
    /// An SLO search's copies of its unjudged steps' records (the host may take the
    /// records for storage; a step's verdict still needs them).
    step_kept: Vec<RequestRecord>,
    phases: Vec<(u32, Phase)>,
    progress: Progress,
    /// TTFT and TPOT of completed requests, for the live quantiles.
    live: (Hist, Hist),
    /// An SLO search under way ([`Self::set_search`]) and the pinned step its probes vary.
    search: Option<(crate::search::Search, crate::pins::LoadStep)>,
    stopped: bool,
    finished: bool,
}

impl RunSession {
    /// A session for a pinned run, started at `now_us`, with prompt calibration
    /// measured before the run and 32 random bytes (arrivals, lengths and nonces draw
    /// from separate streams derived from them).
    pub fn new(cfg: RunConfig, calibration: Calibration, seed: [u8; 32], now_us: u64) -> Self {
        let mut seeds = Rng::from_seed(seed);
        let plan_rng = Rng::from_seed(seed_bytes(&mut seeds));
        let prefix_seed = prefix_seed(&seed);
        let dialect = cfg.endpoint.dialect;
        let url = format!(
            "{}{}",
            cfg.endpoint.base_url,
            dialect.path(&cfg.model.id.value)
        );
        let steps = cfg.load.value.steps.len();
        Self {
            calibrate_from_usage: cfg.prompt_exactness.value == PromptExactness::UsageCalibrated,
            continuous_usage: cfg
                .model
                .engine
                .value
                .known()
                .and_then(|e| Engine::from_pin(e))
                .is_some_and(Engine::streams_continuous_usage),
            secrets: Vec::new(),
            api_key: None,
            cfg,
            url,
            dialect,
            cal: calibration,
            seeds,
            plan_rng,
            prefix_seed,
            // A replay's rows come from the host, which reads the file (`set_trace`).
            replay: None,
            dataset: None,
            prepared: std::collections::VecDeque::new(),
            convs: BTreeMap::new(),
            next_conv: 0,
            step: 0,
            sched: None,
            step_gap_until: None,
            next_index: 0,
            in_flight: InFlightList::default(),
            records: Vec::new(),
            step_kept: Vec::new(),
            phases: Vec::new(),
            live: (Hist::new(), Hist::new()),
            search: None,
            progress: Progress {
                step: (0, steps),
                started_us: now_us,
                now_us,
                ..Progress::default()
            },
            stopped: false,
            finished: steps == 0,
        }
    }

    /// Makes the run an SLO search (before the first poll): its load steps become probes,
    /// the first at the plan's smallest load; when a probe's step ends it is judged from
    /// its records and the rule picks the next load ([`crate::search`]), until the search
    /// is over. The pinned step's kind is kept (an open loop's arrivals and cap too).
    pub fn set_search(&mut self, plan: crate::search::SearchPlan) -> Result<(), String> {
        let base = match (
            crate::search::SearchDimension::for_config(&self.cfg),
            self.cfg.load.value.steps.first(),
        ) {
            (Some(d), Some(&base)) if d == plan.dimension => base,
            _ => {
                return Err(
                    "an SLO search varies a closed loop's concurrency or an open loop's rate (not a replay), as its plan says"
                        .into(),
                )
            }
        };
        let search = crate::search::Search::new(plan).map_err(|e| e.to_string())?;
        let first = search.next_load().ok_or("the search has no first load")?;
        self.cfg.load.value.steps = vec![crate::search::probe_step(base, first)];
        self.progress.step = (0, 1);
        self.search = Some((search, base));
        Ok(())
    }

    /// The search so far (its probes judged, its answer among them), when the run is one.
    /// A step cut short (the run was stopped) is judged on the records it holds.
    pub fn search(&self) -> Option<crate::search::SearchRecord> {
        let (s, _) = self.search.as_ref()?;
        let mut s = s.clone();
        let dimension = s.plan().dimension;
        for k in s.probes()..self.cfg.load.value.steps.len() {
            let load = self
                .cfg
                .load
                .value
                .steps
                .get(k)
                .and_then(|l| dimension.of(l));
            match (
                load,
                crate::search::step_figures(&self.cfg, k, &self.step_kept),
            ) {
                (Some(load), Some(f)) => {
                    s.record(load, &f);
                }
                _ => break,
            }
        }
        Some(s.finish())
    }

    /// A search's step `k` ended: judges its probe and adds the next, if the rule asks
    /// for one. A step without records ends the search (its rule would ask for it again).
    fn judge_probe(&mut self, k: usize) {
        let Some(dimension) = self.search.as_ref().map(|(s, _)| s.plan().dimension) else {
            return;
        };
        let Some(load) = self
            .cfg
            .load
            .value
            .steps
            .get(k)
            .and_then(|s| dimension.of(s))
        else {
            return;
        };
        let Some(figures) = crate::search::step_figures(&self.cfg, k, &self.step_kept) else {
            return;
        };
        // The step is judged: the copies kept for it are not needed any more.
        self.step_kept.retain(|r| r.step as usize > k);
        let Some((search, base)) = self.search.as_mut() else {
            return;
        };
        search.record(load, &figures);
        if let Some(next) = search.next_load() {
            let step = crate::search::probe_step(*base, next);
            self.cfg.load.value.steps.push(step);
        }
    }

    /// A replay's trace file, read by the host: its rows are replayed if it is the file
    /// the pin names (same SHA-256); otherwise nothing is.
    pub fn set_trace(&mut self, trace: &crate::trace::Trace) -> Result<(), String> {
        let Some(t) = self.cfg.trace.as_ref().map(|t| &t.value) else {
            return Err("the run is not a replay".into());
        };
        if trace.sha256 != t.sha256 {
            return Err(format!(
                "the trace file is not the one pinned (SHA-256 {} ≠ {})",
                trace.sha256, t.sha256
            ));
        }
        self.replay = Some(crate::pins::replay_rows(trace, t.offset_ms));
        Ok(())
    }

    /// A dataset's lengths, from the host (a CSV's own, or a ShareGPT file's counted by
    /// [`crate::lifecycle::dataset_lengths`]): used if they come from the file the pin
    /// names (same SHA-256) and are as many as it says the run uses.
    pub fn set_dataset(&mut self, lengths: &crate::dataset::DatasetLengths) -> Result<(), String> {
        let Some(d) = self.cfg.dataset.as_ref().map(|d| &d.value) else {
            return Err("the run takes no lengths from a dataset".into());
        };
        if lengths.sha256 != d.sha256 {
            return Err(format!(
                "the dataset file is not the one pinned (SHA-256 {} ≠ {})",
                lengths.sha256, d.sha256
            ));
        }
        let send_text = self.cfg.prompt_len.value == crate::pins::LengthDist::DatasetText {};
        if lengths.rows.len() != d.sampled as usize
            || lengths.rows.iter().any(|&(i, o)| i == 0 || o == 0)
            || (send_text && lengths.texts.len() != lengths.rows.len())
        {
            return Err(format!(
                "the dataset's lengths are not the {} rows its pin says the run uses{}",
                d.sampled,
                if send_text {
                    ", with their prompts"
                } else {
                    ""
                }
            ));
        }
        let mut lengths = lengths.clone();
        if !send_text {
            lengths.texts.clear();
        }
        self.dataset = Some(lengths);
        Ok(())
    }

    /// Whether the run takes its lengths from a dataset whose lengths are not at hand
    /// (the host has not given them with [`Self::set_dataset`]): it would send nothing.
    pub fn lacks_dataset(&self) -> bool {
        self.cfg.dataset.is_some() && self.dataset.is_none()
    }

    /// Whether the run is a replay whose trace is not at hand (the host has not given its
    /// file, built in or not, with [`Self::set_trace`]): it would send nothing.
    pub fn lacks_trace(&self) -> bool {
        self.cfg.trace.is_some() && self.replay.is_none()
    }

    /// The URL every request goes to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The API key every request carries (to its own origin only), and the values of the
    /// host's extra headers: any server message that echoes one of them is redacted before
    /// it is recorded ([`crate::http::secrets`]).
    pub fn set_credentials(&mut self, key: Option<ApiKey>, extra_headers: &[(String, String)]) {
        self.secrets = crate::http::secrets(key.as_ref(), extra_headers);
        self.api_key = key;
    }

    /// The configuration being run.
    pub fn config(&self) -> &RunConfig {
        &self.cfg
    }

    /// The prompt calibration now in use (usage calibration refines it during the run).
    pub fn calibration(&self) -> Calibration {
        self.cal.clone()
    }

    /// Dispatches everything due at `now_us`, aborts stalled requests, moves between
    /// sweep steps, and says when to call again.
    pub fn poll(&mut self, now_us: u64, transport: &mut dyn Transport) -> Wake {
        self.progress.now_us = now_us;
        if self.finished {
            return Wake::Finished;
        }
        let stall_deadline = self.check_stalls(now_us, transport);
        let mut wake = self.dispatch_due(now_us, transport);
        // Idle before the next send: build one body ahead, then come back at once (the
        // host handles what arrived meanwhile, and the next call builds the next one).
        if let Wake::At(t) = wake {
            if t >= now_us.saturating_add(PREPARE_MARGIN_US) && self.prepare_one(now_us) {
                wake = Wake::At(now_us);
            }
        }
        let wake = match (wake, stall_deadline) {
            (Wake::At(a), Some(b)) => Wake::At(a.min(b)),
            (Wake::Event, Some(b)) => Wake::At(b),
            (w, _) => w,
        };
        self.progress.finished = self.finished;
        wake
    }

    fn check_stalls(&mut self, now_us: u64, transport: &mut dyn Transport) -> Option<u64> {
        let limit = self.cfg.load.value.stall_timeout_ms.saturating_mul(1000);
        let mut earliest: Option<u64> = None;
        for (id, f) in self.in_flight.iter_mut() {
            if f.stalled {
                continue;
            }
            let deadline = f.last_activity_us.saturating_add(limit);
            if now_us > deadline {
                f.stalled = true;
                transport.abort(id);
            } else {
                // Due just after the deadline (a stall is "longer than" the timeout).
                let due = deadline + 1;
                earliest = Some(earliest.map_or(due, |e| e.min(due)));
            }
        }
        earliest
    }

    fn dispatch_due(&mut self, now_us: u64, transport: &mut dyn Transport) -> Wake {
        loop {
            if self.stopped {
                return self.end_if_drained();
            }
            if let Some(t) = self.step_gap_until {
                if now_us < t {
                    return Wake::At(t);
                }
                self.step_gap_until = None;
            }
            if self.sched.is_none() {
                // Without its dataset's lengths a run sends nothing (the hosts refuse to
                // start it).
                let Some(&load) = self
                    .cfg
                    .load
                    .value
                    .steps
                    .get(self.step)
                    .filter(|_| !self.lacks_dataset())
                else {
                    self.finished = true;
                    return Wake::Finished;
                };
                let seed = seed_bytes(&mut self.seeds);
                let mut sched = Scheduler::new(load, self.cfg.window.value, now_us, seed);
                if let Some(trace) = &self.cfg.trace {
                    // A replay's arrivals: its rows' times, scaled. Without its rows it
                    // sends nothing.
                    let scale = u64::from(trace.value.scale_milli);
                    let offsets = self.replay.as_ref().map_or_else(Vec::new, |rows| {
                        rows.iter()
                            .map(|r| r.t_us.saturating_mul(scale) / 1000)
                            .collect()
                    });
                    sched = sched.replay(offsets);
                }
                self.sched = Some(sched);
                self.progress.step = (self.step, self.cfg.load.value.steps.len());
                self.progress.dispatched = 0;
                self.progress.planned = self.sched.as_ref().and_then(|s| s.planned_total());
                self.progress.in_flight.1 = load.max_concurrency();
                continue;
            }
            let think = if self.convs.is_empty() {
                None
            } else {
                self.dispatch_turns(now_us, transport)
            };
            let Some(sched) = self.sched.as_mut() else {
                continue;
            };
            match sched.next(now_us) {
                Next::Dispatch => self.dispatch(now_us, transport),
                Next::WaitUntil(t) => return Wake::At(think.map_or(t, |d| d.min(t))),
                Next::WaitForCompletion => return think.map_or(Wake::Event, Wake::At),
                Next::Done => {
                    // The step's windows are over: thinking conversations end here.
                    let thinking: Vec<u32> = self
                        .convs
                        .iter()
                        .filter(|(_, c)| c.due_us.is_some())
                        .map(|(id, _)| *id)
                        .collect();
                    for id in thinking {
                        self.convs.remove(&id);
                        sched.on_complete(now_us);
                    }
                    if !self.in_flight.is_empty() {
                        return Wake::Event;
                    }
                    self.convs.clear();
                    self.sched = None;
                    self.judge_probe(self.step);
                    self.step += 1;
                    if self.step >= self.cfg.load.value.steps.len() {
                        self.finished = true;
                        return Wake::Finished;
                    }
                    self.step_gap_until = Some(now_us + STEP_GAP_US);
                }
            }
        }
    }

    fn end_if_drained(&mut self) -> Wake {
        if self.in_flight.is_empty() {
            self.finished = true;
            Wake::Finished
        } else {
            Wake::Event
        }
    }

    fn dispatch(&mut self, now_us: u64, transport: &mut dyn Transport) {
        let Some(sched) = self.sched.as_mut() else {
            return;
        };
        let row = sched.replay_row();
        let d = sched.on_dispatch(now_us);
        let index = self.next_index;
        self.next_index += 1;
        // A replay's request is its trace row, its body built ahead when there was time.
        if let Some((i, lengths)) = row.and_then(|i| {
            Some((
                i,
                self.replay.as_ref()?.get(i).map(|r| (r.input, r.output))?,
            ))
        }) {
            while self.prepared.front().is_some_and(|(r, _)| *r < i) {
                self.prepared.pop_front();
            }
            let body = match self.prepared.front() {
                Some((r, _)) if *r == i => self.prepared.pop_front().map(|(_, b)| b),
                _ => self.replay_body(i),
            };
            if let Some(body) = body {
                self.send(now_us, (index, d, None), lengths, body, transport);
                return;
            }
        }
        let cfg = &self.cfg;
        let r = &mut self.plan_rng;
        let (u1, z1, u2, z2) = (r.unit(), r.normal(), r.unit(), r.normal());
        // A dataset row gives both lengths, in the file's fixed order (and its prompt,
        // when the run sends the dataset's own text).
        let row = self
            .dataset
            .as_ref()
            .filter(|d| !d.rows.is_empty())
            .map(|d| index as usize % d.rows.len());
        let (prompt_tokens, output_tokens) = match (row, &self.dataset) {
            (Some(i), Some(d)) => d.rows[i],
            _ => (
                cfg.prompt_len.value.sample(u1, z1),
                cfg.output_len.value.sample(u2, z2),
            ),
        };
        let nonce_seed = r.next_u64();
        let nonce = cfg
            .cache
            .value
            .nonce_prefix
            .then(|| prompt::nonce(index, nonce_seed));
        let text = match cfg.cache.value.shared_prefix {
            Some(sp) => {
                let words = self.cal.words_for(sp.tokens);
                let prefix =
                    prompt::shared_prefix(words, index % sp.groups.max(1), self.prefix_seed);
                prompt::build_after(
                    &prefix,
                    words,
                    prompt_tokens,
                    &self.cal,
                    nonce.as_deref(),
                    index,
                )
            }
            None => match (row, &self.dataset) {
                (Some(i), Some(d)) if !d.texts.is_empty() => d.texts[i].clone(),
                _ => prompt::build(prompt_tokens, &self.cal, nonce.as_deref(), index),
            },
        };
        let conversation = cfg.conversation();
        let turn = conversation.is_multi_turn().then(|| {
            let (u, z) = (r.unit(), r.normal());
            let id = self.next_conv;
            self.next_conv += 1;
            self.convs.insert(
                id,
                Conv {
                    turns: conversation.turns.sample(u, z).max(1),
                    sent: 1,
                    history: Vec::new(),
                    user: text.clone(),
                    due_us: None,
                },
            );
            TurnOf {
                conversation: id,
                turn: 0,
            }
        });
        let body = self.request_body(text, output_tokens, Vec::new());
        self.send(
            now_us,
            (index, d, turn),
            (prompt_tokens, output_tokens),
            body,
            transport,
        );
    }

    /// A replay's row `row`: its request body (prompt of the row's blocks, the row's
    /// output length).
    fn replay_body(&self, row: usize) -> Option<String> {
        let r = self.replay.as_ref()?.get(row)?;
        let text = prompt::trace_prompt(
            &r.blocks,
            r.input,
            &self.cal,
            self.prefix_seed,
            u32::try_from(row).unwrap_or(u32::MAX),
        );
        Some(self.request_body(text, r.output, Vec::new()))
    }

    /// Builds the body of the next replay row not yet built, if it is due within
    /// [`PREPARE_HORIZON_US`] and fewer than [`PREPARE_MAX`] are waiting. Whether it did.
    fn prepare_one(&mut self, now_us: u64) -> bool {
        let Some(sched) = self.sched.as_ref() else {
            return false;
        };
        let Some(next) = sched.replay_row() else {
            return false;
        };
        let row = self
            .prepared
            .back()
            .map_or(next, |(r, _)| (*r + 1).max(next));
        let due = sched.replay_due(row);
        if self.prepared.len() >= PREPARE_MAX
            || due.is_none_or(|t| t > now_us.saturating_add(PREPARE_HORIZON_US))
        {
            return false;
        }
        match self.replay_body(row) {
            Some(body) => {
                self.prepared.push_back((row, body));
                true
            }
            None => false,
        }
    }

    /// Sends the conversations' next turns that are due at `now_us` (a turn due after the
    /// step's windows ends its conversation instead); returns when the next is due.
    fn dispatch_turns(&mut self, now_us: u64, transport: &mut dyn Transport) -> Option<u64> {
        let due: Vec<u32> = self
            .convs
            .iter()
            .filter(|(_, c)| c.due_us.is_some_and(|t| t <= now_us))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let Some(sched) = self.sched.as_mut() else {
                break;
            };
            if sched.clock().is_over(now_us) {
                self.convs.remove(&id);
                sched.on_complete(now_us);
                continue;
            }
            let d = sched.on_turn(now_us);
            let index = self.next_index;
            self.next_index += 1;
            let r = &mut self.plan_rng;
            let (u1, z1, u2, z2) = (r.unit(), r.normal(), r.unit(), r.normal());
            // The shared prefix was sent once, at the start: a later message is the rest.
            let prefix = self.cfg.cache.value.shared_prefix.map_or(0, |p| p.tokens);
            let prompt_tokens = self
                .cfg
                .prompt_len
                .value
                .sample(u1, z1)
                .saturating_sub(prefix)
                .max(1);
            let output_tokens = self.cfg.output_len.value.sample(u2, z2);
            let text = prompt::message(prompt_tokens, &self.cal, index);
            let Some(c) = self.convs.get_mut(&id) else {
                continue;
            };
            let turn = TurnOf {
                conversation: id,
                turn: c.sent,
            };
            c.sent += 1;
            c.due_us = None;
            c.user.clone_from(&text);
            let history = c.history.clone();
            let body = self.request_body(text, output_tokens, history);
            self.send(
                now_us,
                (index, d, Some(turn)),
                (prompt_tokens, output_tokens),
                body,
                transport,
            );
        }
        self.convs.values().filter_map(|c| c.due_us).min()
    }

    /// The request body for a prompt `text` (after the conversation's `history`) asking
    /// for `output_tokens`, in the run's dialect.
    fn request_body(
        &self,
        text: String,
        output_tokens: u32,
        history: Vec<(String, String)>,
    ) -> String {
        let cfg = &self.cfg;
        let spec = RequestSpec {
            model: cfg.model.id.value.clone(),
            prompt: text,
            max_tokens: output_tokens,
            enforcement: cfg.output_enforcement.value,
            temperature: Some(cfg.sampling.value.temperature),
            extra: cfg.sampling.value.extra.clone(),
            nonce: None,
            include_usage: true,
            continuous_usage: self.continuous_usage,
            reasoning: cfg.reasoning_request(),
            history,
        };
        spec.body(self.dialect).to_string()
    }

    /// Records request `index` (its dispatch, and its turn of a conversation) and hands its
    /// `body` to the transport.
    fn send(
        &mut self,
        now_us: u64,
        (index, d, turn): (u32, Dispatched, Option<TurnOf>),
        (prompt_tokens, output_tokens): (u32, u32),
        body: String,
        transport: &mut dyn Transport,
    ) {
        let mut timeline = RequestTimeline::new(
            index,
            self.step as u32,
            self.dialect,
            prompt_tokens,
            output_tokens,
            now_us,
        );
        timeline.set_arrival(d.intended_us, d.held_by_cap);
        timeline.set_secrets(self.secrets.clone());
        if let Some(t) = turn {
            timeline.set_turn(t);
        }
        self.in_flight.insert(
            index,
            InFlight {
                timeline,
                last_activity_us: now_us,
                stalled: false,
            },
        );
        self.phases.push((index, d.phase));
        if let Some(sched) = &self.sched {
            self.progress.dispatched = sched.dispatched();
            self.progress.in_flight.0 = sched.in_flight();
        }
        self.progress.held_by_cap += u32::from(d.held_by_cap);
        self.progress.phase = Some(phase_name(d.phase).to_owned());
        let sent = transport.send(&Outgoing {
            id: index,
            request: HttpRequest::stream(
                self.dialect,
                self.url.clone(),
                body,
                self.api_key.as_ref(),
            ),
        });
        if let (Some(t), Some(f)) = (sent, self.in_flight.get_mut(index)) {
            f.timeline.set_send_time(t);
            f.last_activity_us = f.last_activity_us.max(t);
        }
    }

    /// Response headers of request `id` arrived at `t_us`.
    pub fn on_headers(&mut self, id: u32, t_us: u64, status: u16, content_type: Option<&str>) {
        if let Some(f) = self.in_flight.get_mut(id) {
            f.last_activity_us = f.last_activity_us.max(t_us);
            f.timeline.on_headers(t_us, status, content_type);
        }
    }

    /// The headers of request `id`'s answer, which a host hands over only when
    /// [`crate::record::wants_headers`] says so for its status (the rate-limit ones are
    /// kept with a throttled answer).
    pub fn on_header_pairs<'a>(
        &mut self,
        id: u32,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        if let Some(f) = self.in_flight.get_mut(id) {
            f.timeline.on_header_pairs(pairs);
        }
    }

    /// Body bytes of request `id` arrived at `t_us`.
    pub fn on_bytes(&mut self, id: u32, t_us: u64, bytes: &[u8]) {
        if let Some(f) = self.in_flight.get_mut(id) {
            f.last_activity_us = f.last_activity_us.max(t_us);
            f.timeline.on_bytes(t_us, bytes);
        }
    }

    /// Request `id` ended at `t_us`. A failure of a request the session aborted is
    /// recorded as stalled (it aborted it for silence) or aborted (the user stopped the
    /// run); any other failure as the host says.
    pub fn on_end(&mut self, id: u32, t_us: u64, end: StreamEnd) {
        let Some(f) = self.in_flight.remove(id) else {
            return;
        };
        let end = match end {
            StreamEnd::Failed(_) if f.stalled => StreamEnd::Failed(Outcome::Stalled {
                timeout_us: self.cfg.load.value.stall_timeout_ms.saturating_mul(1000),
            }),
            StreamEnd::Failed(_) if self.stopped => StreamEnd::Failed(Outcome::Aborted {}),
            e => e,
        };
        let (rec, answer) = f.timeline.finish_with_answer(t_us, end);
        // A conversation holds its slot until its last turn (or a failed one) ends.
        let slot_free = match rec.turn {
            Some(t) => self.turn_ended(t, &rec, answer, t_us),
            None => true,
        };
        if let (true, Some(s)) = (slot_free, self.sched.as_mut()) {
            s.on_complete(t_us);
            self.progress.in_flight.0 = s.in_flight();
        }
        // A later turn's usage counts its history too: only first turns calibrate.
        if self.calibrate_from_usage && rec.turn.is_none_or(|t| t.turn == 0) {
            if let Some(u) = rec.usage.filter(|u| u.prompt_tokens > 0) {
                // The words that were sent, and what the server counted: re-derive the
                // ratio over the calibration's intercept.
                let words = u64::from(self.cal.words_for(rec.prompt_tokens_requested)).max(1);
                let body = i64::try_from(u.prompt_tokens * 1000).unwrap_or(i64::MAX)
                    - self.cal.intercept_milli;
                self.cal.tokens_per_word_milli = u64::try_from(body.max(1)).unwrap_or(1) / words;
                self.cal.tokens_per_word_milli = self.cal.tokens_per_word_milli.max(1);
                self.cal.verified.clear();
            }
        }
        self.progress.completed += 1;
        let m = metrics::request_metrics(&rec);
        if let Some(d) = m.decode_milli {
            self.progress.decode.0 += d;
            self.progress.decode.1 += 1;
        }
        // Recorded here, read at the progress tick: a quantile walks the histogram's
        // buckets, and this runs on the measuring thread at every request's end.
        if let Some(t) = m.ttft_us {
            self.live.0.record(t);
        }
        if let Some(t) = m.tpot_us {
            self.live.1.record(t);
        }
        if !rec.outcome.is_ok() {
            *self.progress.errors.entry(rec.outcome.kind()).or_insert(0) += 1;
        }
        self.progress.tokens += rec.chunk_tokens();
        if self.search.is_some() {
            self.step_kept.push(rec.clone());
        }
        self.records.push(rec);
    }

    /// Turn `t` of a conversation ended with `rec`: the answer joins its history and the
    /// next turn is due after the think time. Whether the conversation is over (its last
    /// turn, a failed one — there is no answer to continue from — or the run stopped).
    fn turn_ended(
        &mut self,
        t: TurnOf,
        rec: &RequestRecord,
        answer: Option<String>,
        t_us: u64,
    ) -> bool {
        let think_us = self.cfg.conversation().think_ms.saturating_mul(1000);
        let Some(c) = self.convs.get_mut(&t.conversation) else {
            return true;
        };
        if !rec.outcome.is_ok() || self.stopped || c.sent >= c.turns {
            self.convs.remove(&t.conversation);
            return true;
        }
        let user = std::mem::take(&mut c.user);
        c.history.push((user, answer.unwrap_or_default()));
        c.due_us = Some(t_us.saturating_add(think_us));
        false
    }

    /// Stops the run at `now_us`: nothing more is dispatched and every request in
    /// flight is aborted (each still ends with a record, as aborted).
    pub fn stop(&mut self, now_us: u64, transport: &mut dyn Transport) {
        self.progress.now_us = now_us;
        if self.stopped {
            return;
        }
        self.stopped = true;
        self.step_gap_until = None;
        for (id, f) in self.in_flight.iter() {
            if !f.stalled {
                transport.abort(id);
            }
        }
        if self.in_flight.is_empty() {
            self.finished = true;
            self.progress.finished = true;
        }
    }

    /// Whether the user stopped the run.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Whether the run is over (every step done, or stopped and drained).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Live progress (tokens include those of requests still in flight).
    pub fn progress(&self) -> Progress {
        let mut p = self.progress.clone();
        p.ttft_q = live_quantiles(&self.live.0);
        p.tpot_q = live_quantiles(&self.live.1);
        p.tokens += self
            .in_flight
            .iter()
            .map(|(_, f)| f.timeline.tokens_so_far())
            .sum::<u64>();
        p
    }

    /// Records of the requests completed and not yet taken ([`Self::take_completed`]),
    /// in completion order.
    pub fn records(&self) -> &[RequestRecord] {
        &self.records
    }

    /// Takes the records completed since the last call, in completion order: a host
    /// that stores them as they complete (its checkpoint) lets the session drop them, so
    /// a long run's memory does not grow with its records; the report is then built from
    /// what the host stored and what [`Self::finish`] returns. The live figures are kept
    /// in histograms; an SLO search keeps a copy of its current step's records until the
    /// step is judged.
    pub fn take_completed(&mut self) -> Vec<RequestRecord> {
        std::mem::take(&mut self.records)
    }

    /// The phase each dispatch was given, in dispatch order (the scheduler's view, which
    /// [`metrics::classify`] reproduces from the records).
    pub fn dispatch_phases(&self) -> &[(u32, Phase)] {
        &self.phases
    }

    /// Ends the session at `now_us` and returns every record not taken
    /// ([`Self::take_completed`]) in dispatch order; a request still in flight (the host
    /// gave up on it) is recorded as aborted.
    pub fn finish(mut self, now_us: u64) -> Vec<RequestRecord> {
        let left = std::mem::take(&mut self.in_flight);
        for (_, f) in left.0 {
            self.records.push(
                f.timeline
                    .finish(now_us, StreamEnd::Failed(Outcome::Aborted {})),
            );
        }
        let mut records = self.records;
        crate::record::sort_by_index(&mut records);
        records
    }
}

/// The shared prefixes' seed: every byte of the run's seed mixed in (splitmix64 steps), in
/// a stream of its own.
fn prefix_seed(seed: &[u8; 32]) -> u64 {
    seed.chunks(8).fold(0x7072_6566_6978_5eed, |z, c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        let mut z = (z ^ u64::from_le_bytes(b)).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

fn seed_bytes(r: &mut Rng) -> [u8; 32] {
    let mut out = [0u8; 32];
    for c in out.chunks_mut(8) {
        c.copy_from_slice(&r.next_u64().to_le_bytes());
    }
    out
}

/// The phase's name as shown in progress.
pub fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Warmup => "warm-up",
        Phase::Measured => "measured",
        Phase::Cooldown => "cool-down",
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
