//! A multi-turn run's figures by turn index: how TTFT, the prompt the server counted, its
//! cached share and the decode rate move as conversations grow. Derived from the records
//! each time (never stored: the records are the evidence), like the server verdict.

use crate::histogram::Hist;
use crate::record::RequestRecord;

/// One turn index's figures over the requests given (a step's measured, answered ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRow {
    /// Turn index, from 0.
    pub turn: u32,
    /// Requests of that turn.
    pub requests: u32,
    /// Mean prompt tokens the server counted (its usage), when it said.
    pub prompt_mean: Option<u64>,
    /// Of the prompt tokens of requests whose server said, the share served from its
    /// prefix cache, ‰.
    pub cached_permille: Option<u64>,
    /// TTFT p50 and p99, µs.
    pub ttft_us: Option<(u64, u64)>,
    /// Per-stream decode speed p50, milli-tok/s.
    pub decode_p50_milli: Option<u64>,
}

/// Rows by turn index, ascending; empty when no record carries a turn (a single-turn
/// run). Turns past 1,000 (the pin's limit) are not gathered.
pub fn by_turn(records: &[&RequestRecord]) -> Vec<TurnRow> {
    struct Acc {
        n: u32,
        prompt: (u64, u64),
        cached: (u64, u64),
        ttft: Hist,
        decode: Hist,
    }
    let mut acc: Vec<Acc> = Vec::new();
    for r in records {
        let Some(t) = r.turn else { continue };
        let i = t.turn as usize;
        if i >= 1000 {
            continue;
        }
        while acc.len() <= i {
            acc.push(Acc {
                n: 0,
                prompt: (0, 0),
                cached: (0, 0),
                ttft: Hist::new(),
                decode: Hist::new(),
            });
        }
        let a = &mut acc[i];
        a.n += 1;
        if let Some(u) = r.usage {
            a.prompt.0 += u.prompt_tokens;
            a.prompt.1 += 1;
            if let Some(c) = r.cached_tokens() {
                a.cached.0 += c.min(u.prompt_tokens);
                a.cached.1 += u.prompt_tokens;
            }
        }
        let m = crate::metrics::request_metrics(r);
        if let Some(v) = m.ttft_us {
            a.ttft.record(v);
        }
        if let Some(v) = m.decode_milli {
            a.decode.record(v);
        }
    }
    acc.into_iter()
        .enumerate()
        .filter(|(_, a)| a.n > 0)
        .map(|(i, a)| TurnRow {
            turn: i as u32,
            requests: a.n,
            prompt_mean: (a.prompt.1 > 0).then(|| (a.prompt.0 + a.prompt.1 / 2) / a.prompt.1),
            cached_permille: (a.cached.1 > 0)
                .then(|| (a.cached.0 * 1000 + a.cached.1 / 2) / a.cached.1),
            ttft_us: a.ttft.quantile(0.5).zip(a.ttft.quantile(0.99)),
            decode_p50_milli: a.decode.quantile(0.5),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Dialect;
    use crate::record::{RequestTimeline, StreamEnd, TurnOf};

    fn rec(turn: Option<u32>, prompt: u64, cached: Option<u64>, ttft_us: u64) -> RequestRecord {
        let mut t = RequestTimeline::new(0, 0, Dialect::Completions, 32, 2, 0);
        if let Some(k) = turn {
            t.set_turn(TurnOf {
                conversation: 0,
                turn: k,
            });
        }
        t.on_headers(1, 200, Some("text/event-stream"));
        let usage = serde_json::json!({"prompt_tokens": prompt, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": cached}});
        let body = format!(
            "data: {{\"choices\":[{{\"index\":0,\"text\":\" a\"}}]}}\n\ndata: {{\"choices\":[{{\"index\":0,\"text\":\" b\"}}]}}\n\ndata: {{\"choices\":[],\"usage\":{usage}}}\n\ndata: [DONE]\n\n"
        );
        let (first, rest) = body.split_at(body.find("\n\n").expect("event") + 2);
        t.on_bytes(ttft_us, first.as_bytes());
        t.on_bytes(ttft_us + 1000, rest.as_bytes());
        let mut r = t.finish(ttft_us + 2000, StreamEnd::Eof);
        if cached.is_none() {
            if let Some(u) = &mut r.usage {
                u.cached_tokens = None;
            }
        }
        r
    }

    #[test]
    fn rows_follow_the_turn_index_with_the_servers_counts() {
        let records = [
            rec(Some(0), 100, Some(0), 20_000),
            rec(Some(0), 100, Some(0), 30_000),
            rec(Some(1), 300, Some(192), 8_000),
            rec(Some(2), 500, None, 9_000),
            rec(None, 100, Some(0), 1_000),
        ];
        let refs: Vec<&RequestRecord> = records.iter().collect();
        let rows = by_turn(&refs);
        assert_eq!(
            rows.iter().map(|r| r.turn).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(
            rows.iter()
                .map(|r| (r.requests, r.prompt_mean, r.cached_permille))
                .collect::<Vec<_>>(),
            vec![
                (2, Some(100), Some(0)),
                (1, Some(300), Some(640)),
                (1, Some(500), None)
            ]
        );
        let (p50, p99) = rows[0].ttft_us.expect("ttft");
        // The histogram's 3 significant digits: within 0.1 %.
        assert!(
            (19_980..=20_020).contains(&p50) && (29_970..=30_030).contains(&p99),
            "{p50} {p99}"
        );
        assert!(
            by_turn(&[&records[4]]).is_empty(),
            "a single-turn record has no row"
        );
    }
}
