//! The run session in virtual time, over a simulated transport: a server that answers
//! every request with a stream of one-token SSE chunks (TTFT, then one token per TPOT),
//! optionally stalling some requests. No clock, no network.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use proptest::prelude::*;

use super::*;
use crate::metrics::{self, classify, ClientEnv, MetricsPlan, Phase};
use crate::pins::{Pins, RunConfig};
use crate::record::{Outcome, RequestRecord, StreamEnd};

fn config(overrides: &[(&str, &str)]) -> RunConfig {
    // The simulated server's shape, then each test's own pins.
    Pins::reference()
        .with(&[
            ("model_id", "sim"),
            ("model_params", "8B"),
            ("model_engine", "sim 1"),
            ("output_tokens", "20"),
            ("stall_timeout_s", "30"),
            ("kv_capacity", "100000"),
            ("max_num_seqs", "64"),
            ("phases", "colocated"),
            ("measured", "10"),
        ])
        .concurrency(4)
        .with(overrides)
        .build()
        .expect("pinned")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Headers(u32),
    Token(u32, u32),
    Final(u32),
    End(u32),
    Failed(u32),
}

/// The simulated server and network.
struct SimNet {
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    /// Requests sent and not yet ended.
    live: BTreeSet<u32>,
    cancelled: BTreeSet<u32>,
    sends: Vec<(u64, u32)>,
    ttft_us: u64,
    tpot_us: u64,
    /// Requests that stop sending after this many tokens.
    stall_after: BTreeMap<u32, u32>,
    max_tokens: BTreeMap<u32, u32>,
    /// Words in each request's prompt.
    prompt_words: BTreeMap<u32, u64>,
    /// Each request's prompt text.
    prompts: BTreeMap<u32, String>,
    /// Prompt tokens the server counts per prompt word, × 1000.
    tokens_per_word_milli: u64,
    /// Requests in flight right after each poll: (time, count).
    live_after_poll: Vec<(u64, usize)>,
    /// The session's progress just before its records were taken.
    last_progress: Option<Progress>,
    /// How long after the session's stamp the host hands a request to the network (the
    /// time it takes to build it), µs.
    handover_us: u64,
    /// A server with this many slots: when each frees, µs (`None`: unlimited). A request
    /// sent while every slot is busy waits, first come first served, for the first free.
    slots: Option<Vec<u64>>,
    /// The host takes the completed records after every event, as a host that stores
    /// them does (`take_completed`); they are handed back with `finish`'s.
    drain: bool,
}

impl SimNet {
    fn new(ttft_us: u64, tpot_us: u64) -> Self {
        Self {
            now: 1_000_000,
            seq: 0,
            events: BinaryHeap::new(),
            live: BTreeSet::new(),
            cancelled: BTreeSet::new(),
            sends: Vec::new(),
            ttft_us,
            tpot_us,
            stall_after: BTreeMap::new(),
            max_tokens: BTreeMap::new(),
            prompt_words: BTreeMap::new(),
            prompts: BTreeMap::new(),
            tokens_per_word_milli: 1000,
            live_after_poll: Vec::new(),
            last_progress: None,
            handover_us: 0,
            slots: None,
            drain: false,
        }
    }

    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }
}

impl Transport for SimNet {
    fn send(&mut self, req: &Outgoing) -> Option<u64> {
        let body: serde_json::Value =
            serde_json::from_str(req.request.body.as_deref().unwrap_or("")).expect("JSON body");
        let n = body["max_tokens"].as_u64().expect("max_tokens") as u32;
        assert!(self.live.insert(req.id), "id {} sent twice", req.id);
        self.sends.push((self.now, req.id));
        self.max_tokens.insert(req.id, n);
        let prompt = body["prompt"].as_str().expect("prompt");
        self.prompt_words
            .insert(req.id, prompt.split_whitespace().count() as u64);
        self.prompts.insert(req.id, prompt.to_owned());
        let sent = self.now + self.handover_us;
        // With slots, the request starts when the first slot frees.
        let t = match self.slots.as_mut() {
            Some(slots) => {
                let (i, free) = slots
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by_key(|&(_, f)| f)
                    .expect("a slot");
                let start = free.max(sent);
                slots[i] =
                    start + self.ttft_us + u64::from(n.saturating_sub(1)) * self.tpot_us + 200;
                start
            }
            None => sent,
        };
        self.at(t + self.ttft_us / 2, Ev::Headers(req.id));
        let stop = self.stall_after.get(&req.id).copied().unwrap_or(n).min(n);
        for i in 0..stop {
            self.at(
                t + self.ttft_us + u64::from(i) * self.tpot_us,
                Ev::Token(req.id, i),
            );
        }
        if stop == n {
            let last = t + self.ttft_us + u64::from(n.saturating_sub(1)) * self.tpot_us;
            self.at(last + 100, Ev::Final(req.id));
            self.at(last + 200, Ev::End(req.id));
        }
        (self.handover_us > 0).then_some(sent)
    }

    fn abort(&mut self, id: u32) {
        if self.live.contains(&id) && self.cancelled.insert(id) {
            let t = self.now;
            self.at(t, Ev::Failed(id));
        }
    }
}

fn sse(json: serde_json::Value) -> Vec<u8> {
    format!("data: {json}\n\n").into_bytes()
}

/// Runs the session to the end (or stops it at `stop_at`); returns the records.
fn drive(
    s: RunSession,
    net: &mut SimNet,
    stop_at: Option<u64>,
) -> (Vec<RequestRecord>, Vec<(u32, Phase)>) {
    drive_seeing(s, net, stop_at, |_| {})
}

/// [`drive`], showing the session to `last` before its records are taken.
fn drive_seeing(
    mut s: RunSession,
    net: &mut SimNet,
    stop_at: Option<u64>,
    last: impl FnOnce(&RunSession),
) -> (Vec<RequestRecord>, Vec<(u32, Phase)>) {
    let mut wake = s.poll(net.now, net);
    net.live_after_poll.push((net.now, net.live.len()));
    let mut stopped = false;
    let mut taken = Vec::new();
    for _ in 0..10_000_000 {
        if wake == Wake::Finished {
            break;
        }
        let next_ev = net.events.peek().map(|Reverse((t, _, _))| *t);
        let mut t = match (wake, next_ev) {
            (Wake::At(a), Some(e)) => a.min(e),
            (Wake::At(a), None) => a,
            (Wake::Event, Some(e)) => e,
            (Wake::Event, None) => panic!("the session waits for an event that cannot come"),
            (Wake::Finished, _) => unreachable!(),
        };
        if let Some(st) = stop_at.filter(|&st| !stopped && st <= t) {
            t = st;
            net.now = t;
            stopped = true;
            s.stop(t, net);
            wake = s.poll(t, net);
            continue;
        }
        assert!(t >= net.now, "time never goes back");
        net.now = t;
        while let Some(Reverse((te, _, ev))) = net.events.peek().copied() {
            if te > t {
                break;
            }
            net.events.pop();
            let id = match ev {
                Ev::Headers(id)
                | Ev::Token(id, _)
                | Ev::Final(id)
                | Ev::End(id)
                | Ev::Failed(id) => id,
            };
            if net.cancelled.contains(&id) && !matches!(ev, Ev::Failed(_)) {
                continue;
            }
            match ev {
                Ev::Headers(id) => s.on_headers(id, t, 200, Some("text/event-stream")),
                Ev::Token(id, i) => {
                    let n = net.max_tokens[&id];
                    let finish = if i + 1 == n {
                        serde_json::json!("length")
                    } else {
                        serde_json::Value::Null
                    };
                    s.on_bytes(id, t, &sse(serde_json::json!({"id": format!("cmpl-{id}"), "choices": [{"index": 0, "text": " tok", "finish_reason": finish}]})));
                }
                Ev::Final(id) => {
                    let n = net.max_tokens[&id];
                    let p = net.prompt_words[&id] * net.tokens_per_word_milli / 1000;
                    let mut b = sse(
                        serde_json::json!({"id": format!("cmpl-{id}"), "choices": [], "usage": {"prompt_tokens": p, "completion_tokens": n}}),
                    );
                    b.extend_from_slice(b"data: [DONE]\n\n");
                    s.on_bytes(id, t, &b);
                }
                Ev::End(id) => {
                    net.live.remove(&id);
                    s.on_end(id, t, StreamEnd::Eof);
                }
                Ev::Failed(id) => {
                    net.live.remove(&id);
                    s.on_end(
                        id,
                        t,
                        StreamEnd::Failed(Outcome::Network {
                            message: "aborted".into(),
                        }),
                    );
                }
            }
        }
        wake = s.poll(t, net);
        net.live_after_poll.push((t, net.live.len()));
        if net.drain {
            taken.extend(s.take_completed());
            assert!(s.records().is_empty(), "taken records leave the session");
        }
    }
    assert_eq!(wake, Wake::Finished, "the run ends");
    let phases = s.dispatch_phases().to_vec();
    net.last_progress = Some(s.progress());
    last(&s);
    let now = net.now;
    taken.extend(s.finish(now));
    crate::record::sort_by_index(&mut taken);
    (taken, phases)
}

/// Every dispatched request yields exactly one record, with its index.
fn assert_one_record_each(net: &SimNet, records: &[RequestRecord]) {
    let sent: Vec<u32> = net.sends.iter().map(|s| s.1).collect();
    let got: Vec<u32> = records.iter().map(|r| r.index).collect();
    assert_eq!(got, sent, "one record per dispatch, in dispatch order");
    assert!(net.live.is_empty(), "nothing left in flight");
}

fn step_records(records: &[RequestRecord], step: u32) -> Vec<&RequestRecord> {
    records.iter().filter(|r| r.step == step).collect()
}

/// The scheduler's phase of every dispatch equals `classify`'s over the records.
fn assert_phases_agree(cfg: &RunConfig, records: &[RequestRecord], phases: &[(u32, Phase)]) {
    let by_index: BTreeMap<u32, Phase> = phases.iter().copied().collect();
    for step in 0..cfg.load.value.steps.len() as u32 {
        let recs = step_records(records, step);
        let classified = classify(&recs, &cfg.window.value);
        for (r, c) in recs.iter().zip(&classified) {
            assert_eq!(
                by_index[&r.index], *c,
                "request {} (sent at {})",
                r.index, r.t_send_us
            );
        }
    }
}

/// A request is timed from when the host handed it to the network, not from the
/// session's stamp before building it: building it is the client's time.
#[test]
fn send_time_is_the_hosts_handover() {
    let cfg = config(&[
        ("concurrency", "2"),
        ("warmup", "0"),
        ("measured", "6"),
        ("cooldown", "0"),
    ]);
    let mut net = SimNet::new(20_000, 5_000);
    net.handover_us = 700;
    let s = RunSession::new(cfg, Calibration::default(), [3; 32], net.now);
    let (records, _) = drive(s, &mut net, None);
    assert_one_record_each(&net, &records);
    for (r, (stamp, _)) in records.iter().zip(&net.sends) {
        assert_eq!(r.t_send_us, stamp + 700, "request {}", r.index);
        assert_eq!(
            r.chunks[0].t_us - r.t_send_us,
            20_000,
            "TTFT from the handover"
        );
    }
}

#[test]
fn closed_loop_keeps_exactly_n_in_flight() {
    let cfg = config(&[
        ("concurrency", "4"),
        ("warmup", "3"),
        ("measured", "20"),
        ("cooldown", "4"),
    ]);
    let s = RunSession::new(cfg.clone(), Calibration::default(), [7; 32], 1_000_000);
    let mut net = SimNet::new(40_000, 5_000);
    let (records, phases) = drive(s, &mut net, None);
    assert_one_record_each(&net, &records);
    assert_eq!(records.len(), 27);
    assert!(records
        .iter()
        .all(|r| r.outcome.is_ok() && r.output_tokens() == 20));
    let last_send = net.sends.last().expect("sends").0;
    for &(t, live) in &net.live_after_poll {
        assert!(live <= 4, "{live} in flight at {t}");
        if t < last_send {
            assert_eq!(
                live, 4,
                "exactly 4 in flight at {t}, before the last dispatch"
            );
        }
    }
    assert_phases_agree(&cfg, &records, &phases);
    let n = |p| phases.iter().filter(|x| x.1 == p).count();
    assert_eq!(
        (n(Phase::Warmup), n(Phase::Measured), n(Phase::Cooldown)),
        (3, 20, 4)
    );
    // The live quantiles cover every completed request: oracle on the sorted values.
    let p = net.last_progress.clone().expect("progress");
    assert_eq!(p.completed, 27);
    let oracle = |f: fn(&metrics::RequestMetrics) -> Option<u64>| {
        let mut v: Vec<u64> = records
            .iter()
            .filter_map(|r| f(&metrics::request_metrics(r)))
            .collect();
        v.sort_unstable();
        LIVE_QUANTILES.map(|q| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1])
    };
    let close = |got: [u64; 3], want: [u64; 3]| {
        got.iter()
            .zip(want)
            .all(|(g, w)| g.abs_diff(w) <= w / 100 + 1)
    };
    let (ttft, tpot) = (p.ttft_q.expect("ttft"), p.tpot_q.expect("tpot"));
    assert!(close(ttft, oracle(|m| m.ttft_us)), "{ttft:?}");
    assert!(close(tpot, oracle(|m| m.tpot_us)), "{tpot:?}");
}

/// The issue's example: closed loop, c=1, warm-up 1 request, measured 10 s, cool-down
/// 5 s, requests of 2 s. The measured window starts at the first measured send (2 s),
/// so it holds the sends at 2, 4, 6, 8 and 10 s — in the scheduler and in `classify`.
#[test]
fn timed_window_after_counted_warmup_starts_at_the_first_measured_send() {
    let cfg = config(&[
        ("concurrency", "1"),
        ("warmup", "1"),
        ("measured", "10s"),
        ("cooldown", "5s"),
        ("output_tokens", "20"),
    ]);
    let s = RunSession::new(cfg.clone(), Calibration::default(), [1; 32], 0);
    // TTFT 100 ms + 19 × 100 ms + 200 µs of trailer: one request ≈ 2 s.
    let mut net = SimNet::new(100_000, 100_000);
    let (records, phases) = drive(s, &mut net, None);
    assert_one_record_each(&net, &records);
    assert_phases_agree(&cfg, &records, &phases);
    let measured: Vec<u64> = phases
        .iter()
        .filter(|p| p.1 == Phase::Measured)
        .map(|p| net.sends[p.0 as usize].0 - net.sends[0].0)
        .collect();
    assert_eq!(measured.len(), 5, "{measured:?}");
    assert!(
        measured[0] >= 2_000_000 && measured[0] < 2_100_000,
        "{measured:?}"
    );
}

fn inter_arrival_cv(sends: &[(u64, u32)]) -> (f64, f64) {
    let gaps: Vec<f64> = sends.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    (mean, var.sqrt() / mean)
}

#[test]
fn open_loop_poisson_and_gamma_arrivals() {
    for (arrival, want_cv) in [("poisson", 1.0), ("gamma(0.25)", 2.0), ("gamma(4)", 0.5)] {
        let cfg = config(&[
            ("load_mode", "open"),
            ("rate_rps", "5"),
            ("arrival", arrival),
            ("in_flight_cap", "1000"),
            ("warmup", "0"),
            ("measured", "400s"),
            ("cooldown", "0"),
        ]);
        let s = RunSession::new(cfg.clone(), Calibration::default(), [3; 32], 0);
        let mut net = SimNet::new(50_000, 10_000);
        let (records, phases) = drive(s, &mut net, None);
        assert_one_record_each(&net, &records);
        assert_phases_agree(&cfg, &records, &phases);
        let (mean, cv) = inter_arrival_cv(&net.sends);
        assert!(
            (mean - 200_000.0).abs() < 0.1 * 200_000.0,
            "{arrival}: mean gap {mean} µs at 5 req/s"
        );
        assert!(
            (cv - want_cv).abs() < 0.15 * want_cv,
            "{arrival}: CV {cv}, want {want_cv}"
        );
        // Nothing held back: every request was sent when it was due.
        assert!(records
            .iter()
            .all(|r| r.t_intended_us == Some(r.t_send_us) && !r.held_by_cap));
    }
}

/// Coordinated omission: 10 req/s offered, cap 4, requests of ~1 s. The cap binds; the
/// step shows offered against achieved and the latency from the intended arrival; the
/// client verdict says so.
#[test]
fn open_loop_cap_shows_queueing_instead_of_hiding_it() {
    let cfg = config(&[
        ("load_mode", "open"),
        ("rate_rps", "10"),
        ("arrival", "poisson"),
        ("in_flight_cap", "4"),
        ("warmup", "0"),
        ("measured", "30s"),
        ("cooldown", "0"),
        ("output_tokens", "20"),
    ]);
    let s = RunSession::new(cfg.clone(), Calibration::default(), [9; 32], 0);
    let mut net = SimNet::new(50_000, 50_000);
    let (records, phases) = drive(s, &mut net, None);
    assert_one_record_each(&net, &records);
    assert_phases_agree(&cfg, &records, &phases);
    assert!(records
        .iter()
        .all(|r| r.t_intended_us.is_some_and(|t| t <= r.t_send_us)));
    let summary =
        metrics::summarize(&records, &MetricsPlan::from_config(&cfg, None)).expect("summary");
    let step = &summary.steps[0];
    let o = step.open_loop.expect("open-loop figures");
    assert_eq!(o.offered_rate_milli, 10_000);
    let achieved = o.achieved_rate_milli.expect("achieved") as f64 / 1000.0;
    // 4 in flight, each ~1.0 s: ~4 req/s served of 10 offered.
    assert!((3.5..4.5).contains(&achieved), "achieved {achieved} req/s");
    let arrival = o.arrival_rate_milli.expect("arrival rate") as f64 / 1000.0;
    assert!((8.0..12.0).contains(&arrival), "arrivals {arrival} req/s");
    assert!(
        o.held_by_cap * 2 > o.arrivals,
        "{} of {} held",
        o.held_by_cap,
        o.arrivals
    );
    let from_send = step.ttft_us.expect("ttft");
    let from_arrival = o.ttft_from_arrival_us.expect("ttft from arrival");
    assert!(
        from_send.p99 < 60_000,
        "TTFT from the send is flat: {from_send:?}"
    );
    assert!(
        from_arrival.p50 > 1_000_000,
        "TTFT from the arrival shows the queue: {from_arrival:?}"
    );
    let env = ClientEnv {
        timer_resolution_us: 5,
        cross_origin_isolated: true,
        event_loop_lag_p99_us: 0,
        event_loop_lag_max_us: 0,
        host: None,
        clock_epoch_us: None,
        ..Default::default()
    };
    let v = metrics::client_verdict(&records, &summary, env, false);
    assert!(v.invalid);
    assert!(
        v.findings
            .iter()
            .any(|f| f.contains("held back") && f.contains("offered 10 req/s")),
        "{:?}",
        v.findings
    );
}

#[test]
fn a_sweep_runs_its_steps_in_order() {
    let cfg = config(&[
        ("concurrency", "1,4"),
        ("warmup", "1"),
        ("measured", "8"),
        ("cooldown", "1"),
    ]);
    let s = RunSession::new(cfg.clone(), Calibration::default(), [5; 32], 0);
    let mut net = SimNet::new(30_000, 2_000);
    let (records, phases) = drive(s, &mut net, None);
    assert_one_record_each(&net, &records);
    assert_phases_agree(&cfg, &records, &phases);
    let (a, b) = (step_records(&records, 0), step_records(&records, 1));
    assert_eq!((a.len(), b.len()), (10, 10));
    let a_end = a.iter().map(|r| r.t_end_us()).max().expect("end");
    let b_start = b.iter().map(|r| r.t_send_us).min().expect("start");
    assert!(
        b_start >= a_end + STEP_GAP_US,
        "step 1 starts after step 0 drained and the gap"
    );
    let max_live = |from: u64, to: u64| {
        net.live_after_poll
            .iter()
            .filter(|p| p.0 >= from && p.0 <= to)
            .map(|p| p.1)
            .max()
            .unwrap_or(0)
    };
    assert_eq!(max_live(0, a_end), 1);
    assert_eq!(max_live(b_start, u64::MAX), 4);
}

/// An SLO search in the session, against a server of 4 slots (a fifth request waits for
/// a whole answer): TTFT p99 ≤ 30 ms holds up to concurrency 4. The probes run 1, 2, 4,
/// 8, 6, 5 (doubling, then bisecting to resolution 1), each a step of its own; the answer
/// is 4; the report's figures judge every probe the same; the same probes are rebuilt
/// from the records alone (an interrupted run's checkpoint, sealed with three probes); a
/// search stopped inside a probe judges that probe on what it holds and says it ended
/// early, and both reports recompute clean.
#[test]
fn an_slo_search_probes_step_by_step_and_finds_the_knee() {
    let cfg = config(&[
        ("concurrency", "3"),
        ("warmup", "2"),
        ("measured", "16"),
        ("cooldown", "0"),
        ("output_tokens", "16"),
    ]);
    let plan = concurrency_search_plan();
    let mut s = RunSession::new(cfg.clone(), Calibration::default(), [7; 32], 0);
    let mut open = config(&[
        ("load_mode", "open"),
        ("rate_rps", "2"),
        ("in_flight_cap", "8"),
        ("arrival", "poisson"),
    ]);
    assert!(
        RunSession::new(open.clone(), Calibration::default(), [7; 32], 0)
            .set_search(plan.clone())
            .is_err(),
        "a concurrency search of an open loop is refused"
    );
    s.set_search(plan.clone())
        .expect("a closed loop's concurrency");
    let mut net = SimNet::new(20_000, 5_000);
    net.slots = Some(vec![0; 4]);
    let mut found = None;
    let (records, _) = drive_seeing(s, &mut net, None, |s| found = s.search());
    let record = found.expect("a search");
    let loads: Vec<u32> = record.probes.iter().map(|p| p.load).collect();
    assert_eq!(loads, [1, 2, 4, 8, 6, 5]);
    assert_eq!(record.found, Some(4));
    for (k, p) in record.probes.iter().enumerate() {
        let n = step_records(&records, k as u32).len();
        assert_eq!(n, 18, "probe {k} ran its own warm-up and measured window");
        assert_eq!(p.met, p.load <= 4, "{p:?}");
    }
    // The report's steps are the probes; its figures judge them the same.
    let mut reported = cfg.clone();
    reported.load.value.steps = loads
        .iter()
        .map(|&c| crate::pins::LoadStep::Closed { concurrency: c })
        .collect();
    let summary =
        metrics::summarize(&records, &MetricsPlan::from_config(&reported, None)).expect("figures");
    assert!(crate::search::check(&record, &summary).is_empty());
    // Rebuilt from the records and the pinned config.
    let mut pinned = cfg.clone();
    let rebuilt = crate::search::rebuild(plan.clone(), &mut pinned, &records).expect("rebuilt");
    assert_eq!(rebuilt, record);
    assert_eq!(pinned.load.value.steps, reported.load.value.steps);
    // An interrupted search (its checkpoint holds the first three probes' records): the
    // sealed report has those probes as its steps, and recomputing it finds nothing.
    let checkpoint = crate::report::Checkpoint {
        created: "2026-12-04T00:00:00Z".into(),
        config: cfg.clone(),
        env: checkpoint_env(),
        planned: None,
        records: records.iter().filter(|r| r.step < 3).cloned().collect(),
        dropped: 0,
        search: Some(plan.clone()),
    };
    let body = checkpoint.into_body().expect("a body");
    let kept = body.search.clone().expect("the search is rebuilt");
    assert_eq!(kept.probes, record.probes[..3]);
    assert_eq!(body.config.load.value.steps, reported.load.value.steps[..3]);
    assert!(kept.ended_early);
    let sealed = crate::report::Report::new(body);
    assert_eq!(crate::report::recompute(&sealed).expect("recomputes"), []);
    // Stopped by its user inside the third probe: that probe is judged on what it holds,
    // the search says it ended early, and the report built from it recomputes clean.
    let mut s = RunSession::new(cfg.clone(), Calibration::default(), [7; 32], 0);
    s.set_search(plan.clone()).expect("search");
    let mut net = SimNet::new(20_000, 5_000);
    net.slots = Some(vec![0; 4]);
    let third = records
        .iter()
        .filter(|r| r.step == 2)
        .map(|r| r.t_send_us)
        .min()
        .expect("probe 3");
    let mut stopped = None;
    let (cut, _) = drive_seeing(s, &mut net, Some(third + 100_000), |s| stopped = s.search());
    let stopped = stopped.expect("a search");
    assert_eq!(stopped.probes.len(), 3, "{stopped:?}");
    assert!(stopped.ended_early && cut.iter().all(|r| r.step < 3));
    let mut steps_cfg = cfg.clone();
    steps_cfg.load.value.steps = reported.load.value.steps[..3].to_vec();
    let mut body = crate::report::ReportBody::build(
        "2026-12-04T00:00:00Z".into(),
        steps_cfg,
        None,
        Vec::new(),
        checkpoint_env(),
        cut,
    )
    .expect("body");
    body.search = Some(stopped);
    let report = crate::report::Report::new(body);
    assert_eq!(crate::report::recompute(&report).expect("recomputes"), []);
    // A rate search keeps the open loop's arrivals and cap.
    open.load.value.steps = vec![crate::pins::LoadStep::Open {
        rate_milli_rps: 2000,
        arrival: crate::pins::Arrival::Poisson {},
        in_flight_cap: 8,
    }];
    let mut s = RunSession::new(open, Calibration::default(), [7; 32], 0);
    s.set_search(crate::search::SearchPlan {
        dimension: crate::search::SearchDimension::RateMilliRps,
        min: 500,
        max: 16_000,
        resolution: 500,
        targets: plan.targets,
    })
    .expect("an open loop's rate");
    assert!(matches!(
        s.config().load.value.steps[..],
        [crate::pins::LoadStep::Open {
            rate_milli_rps: 500,
            arrival: crate::pins::Arrival::Poisson {},
            in_flight_cap: 8
        }]
    ));
}

/// A host that takes every record as it completes (and stores it) gets the same records,
/// progress and SLO search as one that takes them all at the end: the session keeps only
/// an unjudged search step's copies, and none once the run is over.
#[test]
fn records_taken_as_they_complete_change_nothing() {
    let cfg = config(&[
        ("concurrency", "4"),
        ("warmup", "1s"),
        ("measured", "3s"),
        ("cooldown", "0"),
    ]);
    let plan = concurrency_search_plan();
    let run = |drain: bool, search: bool| {
        let mut s = RunSession::new(cfg.clone(), Calibration::default(), [7; 32], 0);
        if search {
            s.set_search(plan.clone()).expect("search");
        }
        let mut net = SimNet::new(20_000, 5_000);
        net.slots = Some(vec![0; 4]);
        net.drain = drain;
        let mut seen = None;
        let (records, phases) = drive_seeing(s, &mut net, None, |s| {
            seen = Some((s.search(), s.records().len(), s.step_kept.len()))
        });
        let (found, left, kept) = seen.expect("seen");
        (records, phases, found, net.last_progress, left, kept)
    };
    for search in [false, true] {
        let kept = run(false, search);
        let taken = run(true, search);
        assert!(!kept.0.is_empty());
        assert_eq!(taken.0, kept.0, "the same records (search: {search})");
        assert_eq!(taken.1, kept.1);
        assert_eq!(taken.2, kept.2, "the same search");
        assert_eq!(taken.3, kept.3, "the same progress");
        assert_eq!((taken.4, taken.5), (0, 0), "nothing held at the end");
        assert_eq!(kept.4, kept.0.len(), "the records stay when not taken");
    }
    let found = run(true, true).2.expect("a search");
    assert_eq!(found.found, Some(4), "{found:?}");
}

/// A concurrency search from 1 to 32, step 1, for TTFT p99 <= 30 ms (the simulated
/// server's knee is at 4 slots).
fn concurrency_search_plan() -> crate::search::SearchPlan {
    crate::search::SearchPlan {
        dimension: crate::search::SearchDimension::Concurrency,
        min: 1,
        max: 32,
        resolution: 1,
        targets: vec![crate::search::SloTarget::parse("ttft:p99<=30ms").expect("slo")],
    }
}

fn checkpoint_env() -> ClientEnv {
    ClientEnv {
        timer_resolution_us: 5,
        cross_origin_isolated: true,
        event_loop_lag_p99_us: 0,
        event_loop_lag_max_us: 0,
        host: None,
        clock_epoch_us: None,
        ..Default::default()
    }
}

#[test]
fn stop_aborts_what_is_in_flight_and_sends_nothing_more() {
    let cfg = config(&[
        ("concurrency", "4"),
        ("warmup", "0"),
        ("measured", "60s"),
        ("cooldown", "0"),
    ]);
    let s = RunSession::new(cfg, Calibration::default(), [2; 32], 0);
    let mut net = SimNet::new(40_000, 10_000);
    let start = net.now;
    let (records, _) = drive(s, &mut net, Some(start + 3_000_000));
    assert_one_record_each(&net, &records);
    assert!(
        net.sends.iter().all(|s| s.0 <= start + 3_000_000),
        "nothing sent after Stop"
    );
    let aborted = records
        .iter()
        .filter(|r| r.outcome == Outcome::Aborted {})
        .count();
    assert_eq!(aborted, 4, "the 4 in flight at Stop end as aborted");
    assert!(records.len() > 4);
}

#[test]
fn a_stalled_request_is_abandoned_after_the_timeout_and_the_run_goes_on() {
    let cfg = config(&[
        ("concurrency", "2"),
        ("warmup", "0"),
        ("measured", "10"),
        ("cooldown", "0"),
        ("stall_timeout_s", "1"),
    ]);
    let s = RunSession::new(cfg, Calibration::default(), [4; 32], 0);
    let mut net = SimNet::new(40_000, 10_000);
    net.stall_after.insert(3, 5);
    let (records, _) = drive(s, &mut net, None);
    assert_one_record_each(&net, &records);
    let r = &records[3];
    assert_eq!(
        r.outcome,
        Outcome::Stalled {
            timeout_us: 1_000_000
        }
    );
    let last_byte = r.chunks.last().expect("5 tokens came").t_us;
    let waited = r.t_done_us.expect("ended") - last_byte;
    assert!(
        (1_000_000..1_000_100).contains(&waited),
        "abandoned {waited} µs after the last byte"
    );
    assert_eq!(records.iter().filter(|r| r.outcome.is_ok()).count(), 9);
}

#[test]
fn usage_calibration_makes_prompts_exact_after_the_first_answer() {
    let cfg = config(&[
        ("prompt_exactness", "usage_calibrated"),
        ("prompt_tokens", "64"),
        ("nonce_prefix", "off"),
        ("concurrency", "1"),
    ]);
    let s = RunSession::new(cfg, Calibration::default(), [6; 32], 0);
    let mut net = SimNet::new(10_000, 1_000);
    // This server's tokenizer gives half a token per prompt word.
    net.tokens_per_word_milli = 500;
    let (records, _) = drive(s, &mut net, None);
    let got: Vec<u64> = records
        .iter()
        .map(|r| r.usage.expect("usage").prompt_tokens)
        .collect();
    assert_eq!(got[0], 32, "before calibration: 64 words, 32 tokens");
    assert!(got[1..].iter().all(|&n| n == 64), "after: {got:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// For every mix of counted and timed spans, closed or open loop, the phase the
    /// scheduler gave each dispatch is the one `classify` gives its record.
    #[test]
    fn scheduler_phases_agree_with_classify(
        spans in proptest::collection::vec((any::<bool>(), 0u32..5, 0u64..1500), 3),
        open in any::<bool>(),
        conc in 1u32..4,
        rate in 2u32..30,
        ttft_ms in 5u64..200,
        tpot_ms in 1u64..30,
        seed in any::<u8>(),
    ) {
        let mut spans = spans;
        // A measured window holds at least one request or a duration.
        spans[1].1 = spans[1].1.max(1);
        spans[1].2 = spans[1].2.max(100);
        let text: Vec<String> = spans
            .iter()
            .map(|&(timed, n, ms)| if timed { format!("{}s", ms as f64 / 1000.0) } else { n.to_string() })
            .collect();
        let load: Vec<(&str, String)> = if open {
            vec![("load_mode", "open".into()), ("rate_rps", rate.to_string()), ("arrival", "poisson".into()), ("in_flight_cap", conc.to_string())]
        } else {
            vec![("concurrency", conc.to_string())]
        };
        let mut o: Vec<(&str, &str)> = vec![("warmup", &text[0]), ("measured", &text[1]), ("cooldown", &text[2]), ("output_tokens", "6")];
        o.extend(load.iter().map(|(k, v)| (*k, v.as_str())));
        let cfg = config(&o);
        let s = RunSession::new(cfg.clone(), Calibration::default(), [seed; 32], 0);
        let mut net = SimNet::new(ttft_ms * 1000, tpot_ms * 1000);
        let (records, phases) = drive(s, &mut net, None);
        assert_one_record_each(&net, &records);
        assert_phases_agree(&cfg, &records, &phases);
        // A counted measured window holds exactly its count.
        if !spans[1].0 {
            prop_assert_eq!(phases.iter().filter(|p| p.1 == Phase::Measured).count() as u32, spans[1].1);
        }
    }
}

/// Records the bodies sent; answers nothing.
#[derive(Default)]
struct Bodies(Vec<serde_json::Value>);

impl Transport for Bodies {
    fn send(&mut self, req: &Outgoing) -> Option<u64> {
        self.0.push(
            serde_json::from_str(req.request.body.as_deref().unwrap_or("")).expect("JSON body"),
        );
        None
    }
    fn abort(&mut self, _id: u32) {}
}

#[test]
fn continuous_usage_is_requested_when_the_engine_pin_is_vllm() {
    for (engine, continuous) in [
        ("vLLM 0.11.0", true),
        ("sim 1", false),
        ("SGLang 0.5", false),
    ] {
        let cfg = config(&[("model_engine", engine)]);
        let mut s = RunSession::new(cfg, Calibration::default(), [7; 32], 0);
        let mut net = Bodies::default();
        s.poll(0, &mut net);
        let body = net.0.first().expect("a request was sent");
        assert_eq!(body["stream_options"]["include_usage"], true, "{engine}");
        assert_eq!(
            body["stream_options"]["continuous_usage_stats"].as_bool(),
            continuous.then_some(true),
            "{engine}"
        );
    }
}

/// The worker's progress message reads back as it was written, with every optional member
/// set or not, and what is not a progress is refused.
#[test]
fn progress_reads_back_as_written() {
    let mut full = Progress {
        step: (1, 3),
        dispatched: 40,
        completed: 38,
        planned: Some(96),
        in_flight: (2, 8),
        tokens: 1 << 40,
        started_us: 5,
        now_us: u64::MAX,
        phase: Some("measured".into()),
        errors: BTreeMap::new(),
        decode: (123_456, 7),
        held_by_cap: 3,
        finished: true,
        ttft_q: Some([1, 2, 3]),
        tpot_q: Some([4, 5, u64::MAX]),
    };
    full.errors.insert("timeout".into(), 2);
    full.errors.insert("http 503".into(), u32::MAX);
    for p in [full, Progress::default()] {
        let text = serde_json::to_string(&p).expect("ser");
        let back: Progress = serde_json::from_str(&text).expect(&text);
        assert_eq!(back, p, "{text}");
    }
    // Members serde treats as optional may be missing.
    let mut v = serde_json::to_value(Progress::default()).expect("ser");
    for k in ["planned", "phase", "ttft_q", "tpot_q"] {
        v.as_object_mut().expect("object").remove(k);
    }
    assert_eq!(
        serde_json::from_value::<Progress>(v.clone()).expect("reads"),
        Progress::default()
    );
    for (k, bad) in [
        ("completed", serde_json::json!(-1)),
        ("completed", serde_json::json!(4_294_967_296u64)),
        ("step", serde_json::json!([1])),
        ("ttft_q", serde_json::json!([1, 2])),
        ("errors", serde_json::json!({"timeout": "2"})),
        ("finished", serde_json::json!(1)),
        ("phase", serde_json::json!(3)),
    ] {
        let mut w = v.clone();
        w[k] = bad;
        assert!(serde_json::from_value::<Progress>(w).is_err(), "{k}");
    }
    assert!(serde_json::from_str::<Progress>("[]").is_err());
}

/// Every stream carries the headers the core decided: JSON in, SSE out, and the API key
/// only when it belongs to the endpoint's origin; its value is a secret of the records.
#[test]
fn streams_carry_the_key_of_their_own_origin_only() {
    use crate::http::ApiKey;
    #[derive(Default)]
    struct Requests(Vec<crate::http::HttpRequest>);
    impl Transport for Requests {
        fn send(&mut self, req: &Outgoing) -> Option<u64> {
            self.0.push(req.request.clone());
            None
        }
        fn abort(&mut self, _id: u32) {}
    }
    let cfg = crate::pins::Pins::reference()
        .endpoint("http://127.0.0.1:8000/v1/")
        .concurrency(1)
        .build()
        .expect("pinned");
    for (key_url, sent) in [
        ("http://127.0.0.1:8000", true),
        ("http://evil.example:8000", false),
    ] {
        let mut s = RunSession::new(cfg.clone(), Calibration::default(), [1; 32], 0);
        s.set_credentials(ApiKey::for_endpoint("sk-123", key_url), &[]);
        let mut t = Requests::default();
        s.poll(0, &mut t);
        let r = &t.0[0];
        assert_eq!(r.method, "POST");
        let has = |k: &str, v: &str| r.headers.iter().any(|(a, b)| a == k && b == v);
        assert!(has("content-type", "application/json") && has("accept", "text/event-stream"));
        assert_eq!(has("authorization", "Bearer sk-123"), sent, "{key_url}");
    }
}

/// A shared prefix: every prompt of a group begins with the group's text, the nonce comes
/// after it, and the lengths hold; groups take turns by request index, and another run's
/// random bytes give other prefixes (each run starts with nothing cached).
#[test]
fn shared_prefixes_come_first_and_the_nonce_after_them() {
    let cfg = config(&[
        ("prompt_tokens", "100"),
        ("shared_prefix", "48x2"),
        ("concurrency", "6"),
    ]);
    let prompts = |seed: u8| {
        let mut s = RunSession::new(cfg.clone(), Calibration::default(), [seed; 32], 0);
        let mut net = Bodies::default();
        s.poll(0, &mut net);
        net.0
            .iter()
            .map(|b| b["prompt"].as_str().expect("prompt").to_owned())
            .collect::<Vec<_>>()
    };
    let p = prompts(7);
    assert_eq!(p.len(), 6);
    fn words(t: &str) -> Vec<&str> {
        t.split(' ').filter(|w| !w.is_empty()).collect()
    }
    for (i, text) in p.iter().enumerate() {
        assert_eq!(words(text).len(), 100, "request {i}");
        // Same group (i mod 2): the first 48 words agree, and the 12 after them do not.
        let other = &p[(i + 2) % 6];
        assert_eq!(words(text)[..48], words(other)[..48], "request {i}");
        assert_ne!(words(text)[48..60], words(other)[48..60], "request {i}");
    }
    assert_ne!(
        words(&p[0])[..16],
        words(&p[1])[..16],
        "groups differ in block 0"
    );
    assert_ne!(words(&prompts(8)[0])[..48], words(&p[0])[..48]);
}

/// Multi-turn conversations: each turn resends the whole history (the earlier messages
/// and the answers actually received) and a new message, after the think time; the
/// concurrency counts conversations; windows count requests, and the phases agree with
/// the recomputation from records.
#[test]
fn conversations_resend_their_history_after_the_think_time() {
    let cfg = config(&[
        ("turns", "3 think=1"),
        ("concurrency", "2"),
        ("warmup", "2"),
        ("measured", "10"),
        ("cooldown", "2"),
    ]);
    let s = RunSession::new(cfg.clone(), Calibration::default(), [5; 32], 1_000_000);
    let mut net = SimNet::new(50_000, 10_000);
    let (records, phases) = drive(s, &mut net, None);
    assert_one_record_each(&net, &records);
    assert_eq!(records.len(), 14);
    assert_phases_agree(&cfg, &records, &phases);
    let mut by_conv: BTreeMap<u32, Vec<&RequestRecord>> = BTreeMap::new();
    for r in &records {
        let t = r.turn.expect("every request has its turn");
        by_conv.entry(t.conversation).or_default().push(r);
    }
    assert!(by_conv.len() >= 5, "{} conversations", by_conv.len());
    let answer = " tok".repeat(20);
    for (c, turns) in &by_conv {
        let mut sorted = turns.clone();
        sorted.sort_by_key(|r| r.index);
        for (k, r) in sorted.iter().enumerate() {
            assert_eq!(r.turn.map(|t| t.turn), Some(k as u32), "conversation {c}");
            if k == 0 {
                continue;
            }
            let prev = sorted[k - 1];
            // The history: the previous prompt (itself the history before it), its answer.
            let expected_start = format!("{}{answer}", net.prompts[&prev.index]);
            let p = &net.prompts[&r.index];
            assert!(p.starts_with(&expected_start), "conversation {c} turn {k}");
            assert_eq!(
                p.split_whitespace().count() - expected_start.split_whitespace().count(),
                32,
                "a new message of the prompt length"
            );
            let done = prev.t_done_us.expect("ended");
            assert!(
                r.t_send_us >= done + 1_000_000,
                "think time before turn {k}"
            );
        }
    }
    // Never more than 2 conversations' requests on the wire; fewer while they think.
    let max = net.live_after_poll.iter().map(|(_, n)| *n).max();
    assert_eq!(max, Some(2));
    assert!(net.live_after_poll.iter().any(|(_, n)| *n == 0));
}

/// Chat-shaped APIs get the history as alternating messages.
#[test]
fn a_chat_turn_sends_the_history_as_messages() {
    let cfg = config(&[("dialect", "chat"), ("turns", "2"), ("concurrency", "1")]);
    let mut s = RunSession::new(cfg, Calibration::default(), [5; 32], 0);
    let mut net = Bodies::default();
    s.poll(0, &mut net);
    let first = net.0[0].clone();
    assert_eq!(first["messages"].as_array().map(Vec::len), Some(1));
    s.on_headers(0, 10, 200, Some("text/event-stream"));
    s.on_bytes(0, 20, b"data: {\"id\":\"c-0\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hello\"}}]}\n\ndata: {\"id\":\"c-0\",\"choices\":[],\"usage\":{\"prompt_tokens\":32,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n");
    s.on_end(0, 30, StreamEnd::Eof);
    s.poll(30, &mut net);
    let second = &net.0[1];
    let m = second["messages"].as_array().expect("messages");
    assert_eq!(m.len(), 3);
    assert_eq!(m[0], first["messages"][0]);
    assert_eq!(
        m[1],
        serde_json::json!({"role": "assistant", "content": " hello"})
    );
    assert_eq!(m[2]["role"], "user");
}

/// A replay builds the bodies of the rows due within the horizon while it waits, and
/// sends exactly what it would have built at the due time: a trace's burst (rows sharing
/// one arrival time) goes out one row right after the other.
#[test]
fn a_replay_builds_its_next_rows_ahead_and_sends_the_same_bodies() {
    let text = concat!(
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [0, 1]}\n",
        "{\"timestamp\": 0, \"input_length\": 700, \"output_length\": 5, \"hash_ids\": [0, 2]}\n",
        "{\"timestamp\": 3000, \"input_length\": 800, \"output_length\": 6, \"hash_ids\": [0, 3]}\n",
        "{\"timestamp\": 3000, \"input_length\": 900, \"output_length\": 7, \"hash_ids\": [0, 4]}\n",
        "{\"timestamp\": 3000, \"input_length\": 100, \"output_length\": 8, \"hash_ids\": [5]}\n",
    );
    let trace = crate::trace::parse(text.as_bytes()).expect("a trace");
    let pin = crate::pins::trace_file_pin("scale=1", "t.jsonl", &trace).expect("a pin");
    let cfg = config(&[
        ("load_mode", "replay"),
        ("trace", &pin),
        ("in_flight_cap", "64"),
        ("prompt_tokens", "trace"),
        ("output_tokens", "trace"),
        ("nonce_prefix", "off"),
        ("warmup", "0"),
        ("measured", "60"),
        ("cooldown", "0"),
        ("max_model_len", "4096"),
    ]);
    let session = || {
        let mut s = RunSession::new(cfg.clone(), Calibration::default(), [4; 32], 0);
        s.set_trace(&trace).expect("the pinned file");
        s
    };
    // Polled only when a row is due: every body built at its send.
    let mut late = session();
    let mut sent_late = Bodies::default();
    assert_eq!(late.poll(0, &mut sent_late), Wake::At(3_000_000));
    late.poll(3_000_000, &mut sent_late);
    // Polled while idle too: the next burst's bodies are built within its horizon.
    let mut ahead = session();
    let mut sent_ahead = Bodies::default();
    assert_eq!(ahead.poll(0, &mut sent_ahead), Wake::At(3_000_000));
    assert!(ahead.prepared.is_empty(), "3 s away is past the horizon");
    let t = 3_000_000 - PREPARE_HORIZON_US;
    let mut polls = 0;
    while ahead.poll(t, &mut sent_ahead) == Wake::At(t) {
        polls += 1;
        assert!(polls <= 3, "one body per poll, three rows");
    }
    assert_eq!(
        ahead.prepared.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        [2, 3, 4]
    );
    // Not within the margin of a due send.
    let mut other = session();
    other.poll(0, &mut Bodies::default());
    let near = 3_000_000 - PREPARE_MARGIN_US + 1;
    assert_eq!(
        other.poll(near, &mut Bodies::default()),
        Wake::At(3_000_000)
    );
    assert!(other.prepared.is_empty());
    ahead.poll(3_000_000, &mut sent_ahead);
    assert!(ahead.prepared.is_empty(), "each built body was sent");
    assert_eq!(sent_ahead.0.len(), 5);
    assert_eq!(sent_ahead.0, sent_late.0);
}

#[test]
fn a_dataset_gives_each_request_its_rows_lengths_and_with_dataset_text_its_prompt() {
    let file = br#"[{"conversations":[{"from":"human","value":"first question"},{"from":"gpt","value":"a"}]},
                    {"conversations":[{"from":"human","value":"second one"},{"from":"gpt","value":"b"}]},
                    {"conversations":[{"from":"human","value":"third"},{"from":"gpt","value":"c"}]}]"#;
    let d = crate::dataset::parse(file).expect("a dataset");
    let pin = crate::pins::DatasetRef::of("d.json", &d).form_text();
    let order = d.order();
    let prompt_of = |i: usize| match &d.rows[order[i]] {
        crate::dataset::DatasetRow::Texts { prompt, .. } => prompt.clone(),
        other => panic!("{other:?}"),
    };
    // As a host hands them over: counted lengths (here made up) and the prompts.
    let lengths = crate::dataset::DatasetLengths {
        sha256: d.sha256.clone(),
        rows: vec![(11, 3), (22, 4), (33, 5)],
        texts: (0..3).map(prompt_of).collect(),
    };
    for (prompt, sends_text) in [("dataset", false), ("dataset_text", true)] {
        let cfg = config(&[
            ("prompt_tokens", prompt),
            ("output_tokens", "dataset"),
            ("dataset", &pin),
            ("nonce_prefix", "off"),
            ("warmup", "0"),
            ("measured", "7"),
            ("cooldown", "0"),
        ]);
        let mut s = RunSession::new(cfg.clone(), Calibration::default(), [5; 32], 0);
        assert!(s.lacks_dataset());
        let mut sent = Bodies::default();
        // Without its lengths a run sends nothing.
        assert_eq!(s.poll(0, &mut sent), Wake::Finished);
        assert!(sent.0.is_empty());
        let mut s = RunSession::new(cfg, Calibration::default(), [5; 32], 0);
        let other = crate::dataset::DatasetLengths {
            sha256: "0".repeat(64),
            ..lengths.clone()
        };
        assert!(s.set_dataset(&other).is_err(), "another file's lengths");
        let short = crate::dataset::DatasetLengths {
            rows: vec![(1, 1)],
            ..lengths.clone()
        };
        assert!(s.set_dataset(&short).is_err(), "fewer rows than the pin");
        s.set_dataset(&lengths).expect("the pinned file's lengths");
        s.poll(0, &mut sent);
        assert_eq!(sent.0.len(), 4, "four in flight");
        for (i, body) in sent.0.iter().enumerate() {
            let (p, o) = lengths.rows[i % 3];
            assert_eq!(body["max_tokens"], o, "request {i}: the row's output");
            let text = body["prompt"].as_str().expect("a prompt");
            if sends_text {
                assert_eq!(text, prompt_of(i % 3), "request {i}: the row's own prompt");
            } else {
                // Synthetic at the row's length (one token per word, uncalibrated).
                assert_eq!(text.split_whitespace().count(), p as usize, "request {i}");
            }
        }
    }
}
