//! `pinbench-fixtures DIR [REQUESTS]`: writes synthetic signed reports for the viewer's
//! end-to-end tests and speed bench. The records are simulated closed-loop streams
//! (deterministic: a fixed seed per file) pushed through the same timeline builder the
//! browser uses, so every figure recomputes. Signed with the public test key
//! `[0x42; 32]` (the same as `tests/fixtures/report_signed.json`).

use std::path::Path;

use pinbench::core::dialect::Dialect;
use pinbench::core::metrics::ClientEnv;
use pinbench::core::pins::{RawConfig, RawField, RunConfig};
use pinbench::core::record::{RequestRecord, RequestTimeline, StreamEnd, WireTiming};
use pinbench::core::report::{Report, ReportBody};
use pinbench::core::sign::KeyPair;

/// What one file holds.
struct Spec {
    file: &'static str,
    model: &'static str,
    concurrency: &'static str,
    requests_per_step: u32,
    prompt: u32,
    output: u32,
    seed: u64,
}

fn config(s: &Spec, warm: u32, measured: u32, cool: u32) -> Result<RunConfig, String> {
    let mut r = RawConfig::default();
    let (warm, measured, cool) = (warm.to_string(), measured.to_string(), cool.to_string());
    let (p, o) = (s.prompt.to_string(), s.output.to_string());
    for (name, text) in [
        ("endpoint_url", "https://127.0.0.1:8443"),
        ("dialect", "completions"),
        ("model_id", s.model),
        ("model_params", "8B"),
        ("model_quant", "bf16"),
        ("model_engine", "pinbench-ref 0.1.0"),
        ("prompt_tokens", p.as_str()),
        ("prompt_exactness", "server_tokenizer"),
        ("output_tokens", o.as_str()),
        ("output_enforcement", "ignore_eos"),
        ("load_mode", "closed"),
        ("concurrency", s.concurrency),
        ("stall_timeout_s", "10"),
        ("max_model_len", "8192"),
        ("kv_capacity", "200000"),
        ("max_num_seqs", "64"),
        ("phases", "colocated"),
        ("scheduling", "continuous"),
        ("warmup", warm.as_str()),
        ("measured", measured.as_str()),
        ("cooldown", cool.as_str()),
        ("nonce_prefix", "on"),
        ("shared_prefix", "none"),
        ("turns", "1"),
        ("temperature", "0"),
        ("sampling_extra", "{}"),
        ("reasoning", "none"),
    ] {
        *r.field_mut(name).ok_or(format!("unknown field {name}"))? = RawField::declared(text);
    }
    RunConfig::try_from(&r).map_err(|e| e.to_string())
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Closed-loop streams of one step, starting at `t_start`; returns the records and the
/// time the step ended.
fn step_records(
    s: &Spec,
    step: u32,
    c: u32,
    first_index: u32,
    t_start: u64,
    rng: &mut Rng,
) -> (Vec<RequestRecord>, u64) {
    let mut free_at: Vec<u64> = (0..c).map(|k| t_start + u64::from(k) * 300).collect();
    let mut out = Vec::new();
    let gap_base = 8_000.0 * (1.0 + f64::from(c) / 16.0);
    for i in 0..s.requests_per_step {
        let (k, t0) = free_at
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|(_, t)| *t)
            .unwrap_or((0, t_start));
        let mut tl = RequestTimeline::new(
            first_index + i,
            step,
            Dialect::Completions,
            s.prompt,
            s.output,
            t0,
        );
        tl.on_headers(t0 + 1_500, 200, Some("text/event-stream"));
        let mut t = t0 + 15_000 + u64::from(s.prompt) * 20 + (rng.unit() * 6_000.0) as u64;
        let mut body = Vec::new();
        for pos in 0..s.output {
            body.clear();
            body.extend_from_slice(
                format!("data: {{\"id\":\"cmpl-{}\",\"choices\":[{{\"index\":0,\"text\":\" w\"}}]}}\n\n", first_index + i)
                    .as_bytes(),
            );
            tl.on_bytes(t, &body);
            let slow = 1.0 + f64::from(pos) / 2_000.0;
            t += (gap_base * slow * (0.85 + 0.3 * rng.unit())) as u64;
        }
        let usage = format!(
            "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{}}}}}\n\ndata: [DONE]\n\n",
            s.prompt, s.output
        );
        tl.on_bytes(t, usage.as_bytes());
        let mut rec = tl.finish(t + 200, StreamEnd::Eof);
        rec.protocol = Some("h2".into());
        rec.wire = Some(WireTiming {
            connect_start_us: t0 + 100,
            request_start_us: t0 + 100,
            response_start_us: t0 + 1_400,
            response_end_us: t + 150,
        });
        free_at[k] = t + 400;
        out.push(rec);
    }
    let end = free_at.iter().copied().max().unwrap_or(t_start);
    (out, end)
}

fn build(s: &Spec) -> Result<String, String> {
    let steps: Vec<u32> = s
        .concurrency
        .split(',')
        .map(|x| x.trim().parse::<u32>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    // The same windows whatever the concurrency, so reports differ only where meant to.
    let warm = 8.min(s.requests_per_step / 4);
    let cool = warm;
    let measured = s.requests_per_step - warm - cool;
    let cfg = config(s, warm, measured, cool)?;
    let mut rng = Rng(s.seed | 1);
    let mut records = Vec::new();
    let mut t = 1_000_000u64;
    for (i, c) in steps.iter().enumerate() {
        let (mut recs, end) = step_records(s, i as u32, *c, records.len() as u32, t, &mut rng);
        records.append(&mut recs);
        t = end + 500_000;
    }
    let env = ClientEnv {
        timer_resolution_us: 5,
        cross_origin_isolated: true,
        event_loop_lag_p99_us: 800,
        event_loop_lag_max_us: 3_000,
        host: None,
        clock_epoch_us: None,
        ..Default::default()
    };
    let body = ReportBody::build(
        "2026-11-29T12:00:00.000Z".into(),
        cfg,
        None,
        vec![],
        env,
        records,
    )
    .map_err(|e| e.to_string())?;
    let mut rep = Report::new(body);
    rep.sign(&KeyPair::from_secret([0x42; 32]))
        .map_err(|e| e.to_string())?;
    rep.to_json().map_err(|e| e.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: pinbench-fixtures DIR [REQUESTS_FOR_THE_BIG_REPORT]");
        std::process::exit(2);
    };
    let big: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let specs = [
        Spec {
            file: "report_c4.json",
            model: "llama-3.1-8b",
            concurrency: "4",
            requests_per_step: 40,
            prompt: 128,
            output: 64,
            seed: 1,
        },
        Spec {
            file: "report_c4_rerun.json",
            model: "llama-3.1-8b",
            concurrency: "4",
            requests_per_step: 40,
            prompt: 128,
            output: 64,
            seed: 2,
        },
        Spec {
            file: "report_c8.json",
            model: "llama-3.1-8b",
            concurrency: "8",
            requests_per_step: 40,
            prompt: 128,
            output: 64,
            seed: 3,
        },
        Spec {
            file: "report_sweep.json",
            model: "llama-3.1-8b",
            concurrency: "1,4,16",
            requests_per_step: 40,
            prompt: 128,
            output: 64,
            seed: 4,
        },
        Spec {
            file: "report_xss.json",
            model: "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=1</script>",
            concurrency: "2",
            requests_per_step: 12,
            prompt: 32,
            output: 16,
            seed: 5,
        },
        Spec {
            file: "report_big.json",
            model: "llama-3.1-8b",
            concurrency: "32",
            requests_per_step: big,
            prompt: 128,
            output: 128,
            seed: 6,
        },
    ];
    for s in &specs {
        match build(s) {
            Ok(json) => {
                let path = Path::new(dir).join(s.file);
                if let Err(e) = std::fs::write(&path, json) {
                    eprintln!("{}: {e}", path.display());
                    std::process::exit(1);
                }
                println!("wrote {}", path.display());
            }
            Err(e) => {
                eprintln!("{}: {e}", s.file);
                std::process::exit(1);
            }
        }
    }
}
