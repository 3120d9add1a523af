//! HDR histograms of integer values (µs for latencies, milli-tokens/s for speeds).
//!
//! A thin wrapper over the `hdrhistogram` crate (used without its `sync` feature, which
//! reads the system clock and panics on wasm32). Three significant digits: any quantile is
//! within 1/1024 (< 0.1%) relative of a value that was recorded at that rank.
//! Serialised in HdrHistogram's standard V2 encoding, base64 (standard alphabet), so any
//! HdrHistogram tool can read a report's histograms (Java's `decodeFromByteBuffer`).
//! Written uncompressed: the compressed form (V2 + DEFLATE) saves about 2 KB per
//! 10,000-request histogram, and its compressor would cost the app's wasm 7 KB gzip.
//! Both forms are read.

use hdrhistogram::Histogram;

/// Significant decimal digits kept by every pinbench histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Errors from building, merging or (de)serialising a histogram.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HistogramError {
    /// The histogram could not be created (never expected with the fixed settings).
    #[error("histogram could not be created: {0}")]
    Create(String),
    /// Two histograms could not be merged.
    #[error("histograms could not be merged: {0}")]
    Merge(String),
    /// The histogram could not be encoded.
    #[error("histogram could not be encoded: {0}")]
    Encode(String),
    /// The text is not base64 of a V2 (optionally DEFLATE-compressed) HdrHistogram.
    #[error("histogram could not be decoded: {0}")]
    Decode(String),
}

/// An auto-resizing HDR histogram of `u64` values with three significant digits.
///
/// Besides the buckets it keeps the exact minimum, maximum and sum of what was recorded
/// (free to keep), so [`Hist::min`], [`Hist::max`] and [`Hist::mean`] are exact. A
/// histogram decoded from text has only buckets; those three then come from the buckets.
#[derive(Clone, Debug)]
pub struct Hist {
    inner: Histogram<u64>,
    exact: Option<Exact>,
}

/// Exact extremes and sum of the recorded values.
#[derive(Clone, Copy, Debug)]
struct Exact {
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for Hist {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Hist {
    fn eq(&self, other: &Self) -> bool {
        self.inner.len() == other.inner.len()
            && self
                .inner
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .eq(other
                    .inner
                    .iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value())))
    }
}

impl Hist {
    /// An empty histogram.
    pub fn new() -> Self {
        // `Histogram::new` only fails for sigfig > 5; 3 is a constant.
        let inner = match Histogram::new(SIGNIFICANT_DIGITS) {
            Ok(h) => h,
            Err(_) => unreachable_histogram(),
        };
        Self {
            inner,
            exact: Some(Exact {
                min: u64::MAX,
                max: 0,
                sum: 0,
            }),
        }
    }

    /// Records one value.
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Records `count` occurrences of one value.
    pub fn record_n(&mut self, value: u64, count: u64) {
        // Auto-resize is on, so this only fails for values beyond the largest trackable
        // (about 2^63); those are clamped rather than dropped.
        if count == 0 {
            return;
        }
        if self.inner.record_n(value, count).is_err() {
            self.inner.saturating_record_n(value, count);
        }
        if let Some(e) = &mut self.exact {
            e.min = e.min.min(value);
            e.max = e.max.max(value);
            e.sum = e.sum.saturating_add(u128::from(value) * u128::from(count));
        }
    }

    /// The exact figures, when every value recorded here was seen (not decoded).
    fn exact(&self) -> Option<Exact> {
        self.exact.filter(|_| !self.inner.is_empty())
    }

    /// Adds every value recorded in `other` to `self`.
    pub fn merge(&mut self, other: &Hist) -> Result<(), HistogramError> {
        self.inner
            .add(&other.inner)
            .map_err(|e| HistogramError::Merge(format!("{e:?}")))?;
        self.exact = match (self.exact, other.exact) {
            (Some(a), Some(b)) => Some(Exact {
                min: a.min.min(b.min),
                max: a.max.max(b.max),
                sum: a.sum.saturating_add(b.sum),
            }),
            _ => None,
        };
        Ok(())
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    /// Smallest recorded value (exact; the bucket's lowest equivalent when decoded),
    /// `None` when empty.
    pub fn min(&self) -> Option<u64> {
        match self.exact() {
            Some(e) => Some(e.min),
            None => (!self.inner.is_empty()).then(|| self.inner.min()),
        }
    }

    /// Largest recorded value (exact; the bucket's highest equivalent when decoded),
    /// `None` when empty.
    pub fn max(&self) -> Option<u64> {
        match self.exact() {
            Some(e) => Some(e.max),
            None => (!self.inner.is_empty()).then(|| self.inner.max()),
        }
    }

    /// Mean of the recorded values, rounded to an integer (exact; from bucket midpoints
    /// when decoded).
    pub fn mean(&self) -> Option<u64> {
        match self.exact() {
            Some(e) => {
                let n = u128::from(self.inner.len());
                u64::try_from((e.sum + n / 2) / n).ok()
            }
            None => (!self.inner.is_empty()).then(|| self.inner.mean().round() as u64),
        }
    }

    /// The value at quantile `q` in `[0, 1]` (0.99 is p99), `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.inner.is_empty() {
            None
        } else if q <= 0.0 {
            self.min()
        } else {
            let v = self.inner.value_at_quantile(q.min(1.0));
            // A bucket's value may lie past the exact extremes; the quantile cannot.
            Some(match self.exact() {
                Some(e) => v.clamp(e.min, e.max),
                None => v,
            })
        }
    }

    /// Iterates `(value, count)` over every distinct recorded bucket, in value order.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.inner
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
    }

    /// The standard HdrHistogram V2 encoding (uncompressed), base64: the bytes
    /// `hdrhistogram`'s `V2Serializer` writes (a unit test holds it to them), written here
    /// so that the serializer's `std::io` machinery stays out of the wasm.
    pub fn encode(&self) -> Result<String, HistogramError> {
        let h = &self.inner;
        let layout = Layout::of(h.low(), u32::from(h.sigfig()));
        let mut counts = Vec::new();
        // The counts up to the largest recorded one's index; a run of zeros is written as
        // its negated length, a single zero as 0.
        let mut next = 0u64;
        for v in h.iter_recorded() {
            let i = layout.index_for(v.value_iterated_to());
            match i.saturating_sub(next) {
                0 => {}
                1 => put_zig_zag(&mut counts, 0),
                gap => put_zig_zag(&mut counts, -(gap.min(i64::MAX as u64) as i64)),
            }
            let count = i64::try_from(v.count_at_value())
                .map_err(|_| HistogramError::Encode("a count above i64::MAX".into()))?;
            put_zig_zag(&mut counts, count);
            next = i + 1;
        }
        if next == 0 {
            put_zig_zag(&mut counts, 0);
        }
        let mut bytes = Vec::with_capacity(V2_HEADER + counts.len());
        bytes.extend_from_slice(&V2_COOKIE.to_be_bytes());
        bytes.extend_from_slice(&(counts.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&0u32.to_be_bytes());
        bytes.extend_from_slice(&u32::from(h.sigfig()).to_be_bytes());
        bytes.extend_from_slice(&h.low().to_be_bytes());
        bytes.extend_from_slice(&h.high().to_be_bytes());
        bytes.extend_from_slice(&1.0f64.to_be_bytes());
        bytes.extend_from_slice(&counts);
        Ok(crate::base64::encode(&bytes))
    }

    /// Decodes [`Hist::encode`]'s output, or the V2 + DEFLATE form (what earlier pinbench
    /// reports carry, and HdrHistogram's log files use). The text is
    /// untrusted: headers are checked before anything is allocated (lengths within the
    /// bytes present, at most [`SIGNIFICANT_DIGITS`] significant digits, sane bounds), the
    /// compressed form is inflated with a cap, and what decoding produces is charged to
    /// the active [`crate::budget`].
    pub fn decode(text: &str) -> Result<Self, HistogramError> {
        let err = |m: &str| HistogramError::Decode(m.to_owned());
        if text.len() > MAX_TEXT {
            return Err(err("longer than a histogram can be"));
        }
        let bytes = crate::base64::decode(text.trim())
            .map_err(|e| HistogramError::Decode(format!("not base64: {e}")))?;
        let plain = match be_u32(&bytes, 0) {
            Some(V2_COMPRESSED_COOKIE) => {
                let len = be_u32(&bytes, 4).ok_or_else(|| err("truncated header"))? as usize;
                let data = bytes
                    .get(8..)
                    .filter(|d| len <= d.len())
                    .ok_or_else(|| err("compressed length exceeds the bytes present"))?;
                let inflated = crate::inflate::inflate_zlib(&data[..len], MAX_PAYLOAD + V2_HEADER)
                    .map_err(|_| err("compressed data is not zlib, or inflates past the limit"))?;
                crate::budget::charge_bytes(inflated.len() as u64)
                    .map_err(HistogramError::Decode)?;
                inflated
            }
            Some(V2_COOKIE) => bytes,
            _ => return Err(err("not an HdrHistogram V2 encoding")),
        };
        let mut inner = decode_v2(&plain)?;
        inner.auto(true);
        let exact = inner.is_empty().then_some(Exact {
            min: u64::MAX,
            max: 0,
            sum: 0,
        });
        Ok(Self { inner, exact })
    }
}

/// HdrHistogram's V2 cookie (base `0x1c849303` with the 8-byte word size, `0x10`).
const V2_COOKIE: u32 = 0x1c84_9313;
/// HdrHistogram's V2 + DEFLATE cookie (base `0x1c849304` | `0x10`).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// V2 header bytes.
const V2_HEADER: usize = 40;
/// Largest V2 payload accepted: 1 MiB (a full 3-digit histogram up to 2^62 needs about
/// 250 KB).
const MAX_PAYLOAD: usize = 1 << 20;
/// Longest base64 text accepted.
const MAX_TEXT: usize = 4 << 20;

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .and_then(|x| x.try_into().ok())
        .map(u32::from_be_bytes)
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8)
        .and_then(|x| x.try_into().ok())
        .map(u64::from_be_bytes)
}

/// Checks an uncompressed V2 header against the bytes that follow it.
fn check_v2_header(b: &[u8]) -> Result<(), HistogramError> {
    let err = |m: &str| Err(HistogramError::Decode(m.to_owned()));
    if be_u32(b, 0) != Some(V2_COOKIE) || b.len() < V2_HEADER {
        return err("truncated or not a V2 header");
    }
    let payload = be_u32(b, 4).unwrap_or(u32::MAX) as usize;
    let offset = be_u32(b, 8).unwrap_or(1);
    let digits = be_u32(b, 12).unwrap_or(0);
    let lowest = be_u64(b, 16).unwrap_or(0);
    let highest = be_u64(b, 24).unwrap_or(0);
    if payload > b.len() - V2_HEADER || payload > MAX_PAYLOAD {
        return err("payload length exceeds the bytes present");
    }
    if offset != 0 {
        return err("normalizing index offset is not supported");
    }
    if !(1..=u32::from(SIGNIFICANT_DIGITS)).contains(&digits) {
        return err("significant digits out of range");
    }
    if lowest < 1 || highest < lowest.saturating_mul(2) || highest > 1 << 62 {
        return err("value bounds out of range");
    }
    Ok(())
}

/// Reads an uncompressed V2 encoding (header checked by [`check_v2_header`]): the counts
/// are zig-zag LEB128 numbers (HdrHistogram's 9-byte form), a negative one a run of zero
/// counts. Read here rather than by `hdrhistogram`'s `Deserializer`, which brings a DEFLATE
/// inflater and `std::io` into the wasm for its compressed form (inflated here by
/// `core::inflate`); `the_v2_reader_reads_what_hdrhistogram_reads` holds this to that
/// deserializer. Each count is recorded at its bucket's lowest value, which `hdrhistogram` files under the same index
/// (index → value as `hdrhistogram` computes it, for the header's bounds and digits).
fn decode_v2(b: &[u8]) -> Result<Histogram<u64>, HistogramError> {
    let err = |m: &str| HistogramError::Decode(m.to_owned());
    check_v2_header(b)?;
    let payload = be_u32(b, 4).unwrap_or(0) as usize;
    let digits = be_u32(b, 12).unwrap_or(0);
    let low = be_u64(b, 16).unwrap_or(0);
    let high = be_u64(b, 24).unwrap_or(0);
    if be_u64(b, 32).map(f64::from_bits) != Some(1.0) {
        return Err(err(
            "an integer-to-double ratio other than 1 is not supported",
        ));
    }
    let mut h = Histogram::<u64>::new_with_bounds(low, high, digits as u8)
        .map_err(|e| HistogramError::Decode(format!("bounds: {e:?}")))?;
    let layout = Layout::of(low, digits);
    let counts = b.get(V2_HEADER..V2_HEADER + payload).unwrap_or(&[]);
    let len = h.distinct_values() as u64;
    let (mut pos, mut index) = (0usize, 0u64);
    while pos < counts.len() {
        let mut zz = 0u64;
        for k in 0..9 {
            let byte = *counts
                .get(pos)
                .ok_or_else(|| err("counts end inside a number"))?;
            pos += 1;
            if k == 8 {
                zz |= u64::from(byte) << 56;
                break;
            }
            zz |= u64::from(byte & 0x7f) << (7 * k);
            if byte & 0x80 == 0 {
                break;
            }
        }
        let n = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
        if n < 0 {
            index = index.saturating_add(n.unsigned_abs());
            continue;
        }
        if n > 0 {
            if index >= len {
                return Err(err("more counts than the bounds hold"));
            }
            h.record_n(layout.value_for(index), n as u64)
                .map_err(|e| HistogramError::Decode(format!("count: {e:?}")))?;
        }
        index += 1;
    }
    Ok(h)
}

/// hdrhistogram's counts layout for a histogram's lowest value and significant digits:
/// unit magnitude floor(log2(low)); sub-buckets of 2^ceil(log2(2 × 10^digits)), the lower
/// half used only by the first bucket.
struct Layout {
    unit: u32,
    half_magnitude: u32,
}

impl Layout {
    fn of(low: u64, digits: u32) -> Self {
        Layout {
            unit: 63 - low.max(1).leading_zeros(),
            half_magnitude: 64 - (2 * 10u64.pow(digits.min(5)) - 1).leading_zeros() - 1,
        }
    }

    /// The lowest value counted at `index`.
    fn value_for(&self, index: u64) -> u64 {
        let half = 1u64 << self.half_magnitude;
        let bucket = (index >> self.half_magnitude).saturating_sub(1);
        let sub = if index < half {
            index
        } else {
            (index & (half - 1)) + half
        };
        sub << (bucket + u64::from(self.unit))
    }

    /// The index counting `value`.
    fn index_for(&self, value: u64) -> u64 {
        let sub_magnitude = self.half_magnitude + 1;
        let mask = ((1u64 << sub_magnitude) - 1) << self.unit;
        let bucket =
            (64 - self.unit - sub_magnitude).saturating_sub((value | mask).leading_zeros());
        let sub = value >> (bucket + self.unit);
        ((u64::from(bucket) + 1) << self.half_magnitude) + sub - (1u64 << self.half_magnitude)
    }
}

/// Appends `n` zig-zag encoded, in HdrHistogram's LEB128 form (at most 9 bytes, the ninth
/// with all 8 bits).
fn put_zig_zag(out: &mut Vec<u8>, n: i64) {
    let mut v = ((n << 1) ^ (n >> 63)) as u64;
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cold]
fn unreachable_histogram() -> ! {
    // Histogram::new(3) cannot fail; keep the failure path explicit rather than unwrap.
    panic!("HdrHistogram rejected 3 significant digits")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// splitmix64: a small deterministic generator for the oracle data.
    struct Rng(u64);
    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform in (0, 1).
        fn unit(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u1, u2) = (self.unit(), self.unit());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
    }

    /// Nearest-rank exact quantile of sorted data.
    fn exact(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn min_max_mean_are_exact_and_survive_merge_but_not_decoding() {
        let mut a = Hist::new();
        for v in [1_001u64, 123_456, 7_777_777] {
            a.record(v);
        }
        let mut b = Hist::new();
        b.record_n(2_500, 3);
        assert_eq!(
            (a.min(), a.max(), a.mean()),
            (Some(1_001), Some(7_777_777), Some(2_634_078))
        );
        assert_eq!(a.quantile(1.0), Some(7_777_777));
        a.merge(&b).expect("merge");
        assert_eq!(
            (a.min(), a.max(), a.count()),
            (Some(1_001), Some(7_777_777), 6)
        );
        assert_eq!(
            a.mean(),
            Some((1_001 + 123_456 + 7_777_777 + 7_500 + 3) / 6)
        );
        let decoded = Hist::decode(&a.encode().expect("enc")).expect("dec");
        assert_eq!(decoded, a);
        // Decoded: buckets only, within the histogram's resolution.
        let max = decoded.max().expect("max");
        assert!(
            max >= 7_777_777 && max - 7_777_777 <= 7_777_777 / 1000,
            "{max}"
        );
    }

    fn check_oracle(name: &str, mut data: Vec<u64>) {
        let mut h = Hist::new();
        for &v in &data {
            h.record(v);
        }
        data.sort_unstable();
        assert_eq!(h.count(), data.len() as u64, "{name}: count");
        for q in [
            0.0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0,
        ] {
            let want = exact(&data, q) as f64;
            let got = h.quantile(q).unwrap_or(0) as f64;
            let rel = if want == 0.0 {
                got
            } else {
                (got - want).abs() / want
            };
            assert!(
                rel <= 0.001,
                "{name}: q={q} exact={want} hdr={got} rel={rel}"
            );
        }
        let min = data[0] as f64;
        let max = data[data.len() - 1] as f64;
        assert!(
            (h.min().unwrap_or(0) as f64 - min).abs() <= min * 0.001,
            "{name}: min"
        );
        assert!(
            (h.max().unwrap_or(0) as f64 - max).abs() <= max * 0.001,
            "{name}: max"
        );
        let mean = data.iter().map(|&v| v as f64).sum::<f64>() / data.len() as f64;
        let hmean = h.mean().unwrap_or(0) as f64;
        assert!(
            (hmean - mean).abs() <= mean * 0.001 + 1.0,
            "{name}: mean {hmean} vs {mean}"
        );
    }

    const N: usize = 1_000_000;

    #[test]
    fn quantiles_match_exact_oracle_constant() {
        check_oracle("constant", vec![12_345; N]);
    }

    #[test]
    fn quantiles_match_exact_oracle_uniform() {
        let mut r = Rng(1);
        check_oracle(
            "uniform",
            (0..N).map(|_| 1 + r.next_u64() % 10_000_000).collect(),
        );
    }

    #[test]
    fn quantiles_match_exact_oracle_exponential() {
        let mut r = Rng(2);
        check_oracle(
            "exponential",
            (0..N)
                .map(|_| (1.0 - r.unit().ln() * 20_000.0) as u64)
                .collect(),
        );
    }

    #[test]
    fn quantiles_match_exact_oracle_lognormal() {
        let mut r = Rng(3);
        check_oracle(
            "lognormal",
            (0..N)
                .map(|_| (1.0 + (9.0 + 1.5 * r.normal()).exp()) as u64)
                .collect(),
        );
    }

    #[test]
    fn empty_histogram_has_no_quantiles() {
        let h = Hist::new();
        assert_eq!(
            (h.count(), h.min(), h.max(), h.mean(), h.quantile(0.5)),
            (0, None, None, None, None)
        );
    }

    #[test]
    fn encoding_round_trips_and_is_standard_v2() {
        let mut h = Hist::new();
        for v in [1u64, 7, 7, 1000, 123_456, 9_999_999_999] {
            h.record(v);
        }
        let text = h.encode().expect("encode");
        let bytes = crate::base64::decode(&text).expect("b64");
        // Byte for byte what `hdrhistogram`'s serializer writes, empty or not.
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        for hist in [&h, &Hist::new(), &hist_of(&[0]), &hist_of(&[u64::MAX >> 2])] {
            let mut theirs = Vec::new();
            V2Serializer::new()
                .serialize(&hist.inner, &mut theirs)
                .expect("serialize");
            assert_eq!(
                crate::base64::decode(&hist.encode().expect("encode")),
                Ok(theirs)
            );
        }
        // V2 cookie (0x1c849303 | word size 0x10), big-endian, as HdrHistogram Java writes it.
        assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x13]);
        let back = Hist::decode(&text).expect("decode");
        assert_eq!(back, h);
        assert_eq!(back.quantile(0.5), h.quantile(0.5));
    }

    #[test]
    fn the_compressed_v2_form_is_read_too() {
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let h = hist_of(&[3, 3, 40, 900_000, 77_777_777]);
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h.inner, &mut bytes)
            .expect("serialize");
        assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x14]);
        let text = crate::base64::encode(&bytes);
        assert_eq!(Hist::decode(&text).expect("decode"), h);
    }

    /// The V2 reader against `hdrhistogram`'s own deserializer: histograms of every bound
    /// and digit count the header allows, plain and compressed, read the same — every
    /// index's count, total, min and max.
    #[test]
    fn the_v2_reader_reads_what_hdrhistogram_reads() {
        use hdrhistogram::serialization::{
            Deserializer, Serializer, V2DeflateSerializer, V2Serializer,
        };
        let mut rng = Rng(7);
        for case in 0..300u64 {
            let digits = 1 + (case % 3) as u8;
            let low = [1u64, 1, 1, 2, 3, 1000, 1 << 20][(case % 7) as usize];
            let high = (low * 2).max(1 << (10 + case % 52));
            let mut h = Histogram::<u64>::new_with_bounds(low, high, digits).expect("bounds");
            for _ in 0..(case % 40) {
                let v = rng.next_u64() % high.saturating_add(1);
                let n = 1 + rng.next_u64() % if case % 5 == 0 { 1 << 40 } else { 3 };
                h.record_n(v, n).expect("in range");
            }
            for compressed in [false, true] {
                let mut bytes = Vec::new();
                if compressed {
                    V2DeflateSerializer::new()
                        .serialize(&h, &mut bytes)
                        .expect("ser");
                } else {
                    V2Serializer::new().serialize(&h, &mut bytes).expect("ser");
                }
                let theirs: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut bytes.as_slice())
                    .expect("de");
                let text = crate::base64::encode(&bytes);
                if !compressed {
                    // And the writer writes what `V2Serializer` writes.
                    let wrapped = Hist {
                        inner: h.clone(),
                        exact: None,
                    };
                    assert_eq!(wrapped.encode().expect("encodes"), text, "case {case}");
                }
                let ours = Hist::decode(&text).expect("decodes").inner;
                assert_eq!(ours, theirs, "case {case}, compressed {compressed}");
                assert_eq!(ours.len(), theirs.len());
                assert_eq!((ours.min(), ours.max()), (theirs.min(), theirs.max()));
                assert!(ours
                    .iter_all()
                    .zip(theirs.iter_all())
                    .all(|(a, b)| a.value_iterated_to() == b.value_iterated_to()
                        && a.count_at_value() == b.count_at_value()));
            }
        }
    }

    #[test]
    fn decoding_garbage_is_an_error() {
        assert!(matches!(
            Hist::decode("%%%"),
            Err(HistogramError::Decode(_))
        ));
        assert!(matches!(
            Hist::decode("AAAAAAAA"),
            Err(HistogramError::Decode(_))
        ));
    }

    fn hist_of(values: &[u64]) -> Hist {
        let mut h = Hist::new();
        for &v in values {
            h.record(v);
        }
        h
    }

    proptest! {
        #[test]
        fn merge_is_commutative_associative_and_conserves_counts(
            a in proptest::collection::vec(0u64..50_000_000, 0..200),
            b in proptest::collection::vec(0u64..50_000_000, 0..200),
            c in proptest::collection::vec(0u64..5_000, 0..200),
        ) {
            let (ha, hb, hc) = (hist_of(&a), hist_of(&b), hist_of(&c));
            let mut ab = ha.clone(); ab.merge(&hb).expect("merge");
            let mut ba = hb.clone(); ba.merge(&ha).expect("merge");
            prop_assert_eq!(&ab, &ba);
            prop_assert_eq!(ab.count(), (a.len() + b.len()) as u64);
            let mut ab_c = ab.clone(); ab_c.merge(&hc).expect("merge");
            let mut bc = hb.clone(); bc.merge(&hc).expect("merge");
            let mut a_bc = ha.clone(); a_bc.merge(&bc).expect("merge");
            prop_assert_eq!(&ab_c, &a_bc);
            prop_assert_eq!(ab_c.count(), (a.len() + b.len() + c.len()) as u64);
            let all: Vec<u64> = a.iter().chain(&b).chain(&c).copied().collect();
            prop_assert_eq!(&ab_c, &hist_of(&all));
        }
    }
}
