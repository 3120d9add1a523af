//! Decimal text of an `f64` for display, without std's float formatter.
//!
//! `format!("{:.2}", x)` and `format!("{x}")` on an `f64` compile std's Grisu and Dragon
//! formatters into the wasm with their power-of-ten tables (about 7 KB gzip). The program
//! already carries `ryu-js` (RFC 8785 numbers need it), and a fixed number of decimals is
//! an integer division. [`Fixed`] and [`Shortest`] print what std prints (tested against
//! std in `tests/decimal.rs`), so the program formats floats only through them (they
//! ignore width and fill); [`bounded`] replaces `f64::clamp`, whose assertion formats
//! floats. `tests/core_purity.rs` rejects a float precision in a format string, clippy.toml
//! disallows `f64::clamp`, and `scripts/sizes.sh` fails when a wasm carries Grisu's table.

use std::fmt;

/// `x` with `decimals` digits after the point, rounded half to even on the exact binary
/// value: the text of `format!("{:.decimals$}", x)`. Decimals above 9 are printed as 9.
/// Exact below 2^97 (about 1.6e29) in magnitude; larger values print through [`Shortest`]
/// plus zero decimals (never shown by the program; std would print their exact digits).
#[derive(Clone, Copy, Debug)]
pub struct Fixed(pub f64, pub u8);

/// `x` in its shortest round-trip decimal digits, never in exponent form: the text of
/// `format!("{x}")` ("0.1", "2", "1000000000000000000000", "0.0000001", "NaN", "inf"),
/// except where two shortest digit strings are equally close to `x` (1045416527258509.25):
/// std then takes the upper one, this the even one (as ECMAScript, Python and Ryu do).
#[derive(Clone, Copy, Debug)]
pub struct Shortest(pub f64);

/// `x` within `[lo, hi]`, a NaN `x` becoming `lo`: `f64::clamp` without its assertion,
/// whose message formats the bounds with std's float formatter.
#[allow(clippy::manual_clamp)]
pub fn bounded(x: f64, lo: f64, hi: f64) -> f64 {
    x.max(lo).min(hi)
}

/// `Fixed(x, d).to_string()`.
pub fn fixed(x: f64, decimals: u8) -> String {
    Fixed(x, decimals).to_string()
}

/// 10^19, the largest power of ten below 2^64.
const TEN19: u128 = 10_000_000_000_000_000_000;

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (x, d) = (self.0, u32::from(self.1.min(9)));
        if !x.is_finite() {
            return Shortest(x).fmt(f);
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        // x = m · 2^e exactly.
        let (m, e) = if exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), exp - 1075)
        };
        let scale = 10u128.pow(d);
        let num = u128::from(m) * scale; // < 2^83
        let n: u128 = if e >= 0 {
            if e > 44 {
                // x ≥ 2^97: m · 10^d · 2^e may pass u128; never shown by the program.
                Shortest(x).fmt(f)?;
                if d > 0 {
                    f.write_str(".")?;
                    for _ in 0..d {
                        f.write_str("0")?;
                    }
                }
                return Ok(());
            }
            num << e
        } else {
            let s = e.unsigned_abs();
            if s >= 128 {
                0 // x · 10^d < 2^-45: zero at every supported precision
            } else {
                let q = num >> s;
                let r = num & ((1u128 << s) - 1);
                let half = 1u128 << (s - 1);
                if r > half || (r == half && q & 1 == 1) {
                    q + 1
                } else {
                    q
                }
            }
        };
        if x.is_sign_negative() {
            f.write_str("-")?;
        }
        // The integer part (< 2^97) as two u64 halves: no u128 formatter in the wasm.
        let int = n / scale;
        let (hi, lo) = ((int / TEN19) as u64, (int % TEN19) as u64);
        if hi > 0 {
            write!(f, "{hi}{lo:019}")?;
        } else {
            write!(f, "{lo}")?;
        }
        if d > 0 {
            let frac = ((n % scale) as u64).to_string();
            f.write_str(".")?;
            for _ in frac.len()..d as usize {
                f.write_str("0")?;
            }
            f.write_str(&frac)?;
        }
        Ok(())
    }
}

impl fmt::Display for Shortest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        if x.is_nan() {
            return f.write_str("NaN");
        }
        if x.is_sign_negative() {
            f.write_str("-")?;
        }
        if x.is_infinite() {
            return f.write_str("inf");
        }
        let mut buf = ryu_js::Buffer::new();
        // ECMAScript text of |x|: "123.45", "1e+21", "1.5e-7", "0.001".
        let js = buf.format_finite(x.abs());
        let (mantissa, exp10) = match js.split_once('e') {
            Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().unwrap_or(0)),
            None => (js, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        // The significant digits, and where the point goes among them.
        let all = format!("{int}{frac}");
        let digits = all.trim_start_matches('0');
        if digits.is_empty() {
            return f.write_str("0");
        }
        let point = int.len() as i32 - (all.len() - digits.len()) as i32 + exp10;
        let digits = digits.trim_end_matches('0');
        let len = digits.len() as i32;
        if point <= 0 {
            f.write_str("0.")?;
            for _ in 0..-point {
                f.write_str("0")?;
            }
            f.write_str(digits)
        } else if point >= len {
            f.write_str(digits)?;
            for _ in 0..point - len {
                f.write_str("0")?;
            }
            Ok(())
        } else {
            let (a, b) = digits.split_at(point as usize);
            write!(f, "{a}.{b}")
        }
    }
}

/// Parses a non-negative decimal into an integer ×1000 (`2.5` → 2500).
pub fn parse_milli(t: &str) -> Option<u64> {
    let t = t.trim();
    let (int, frac) = match t.split_once('.') {
        Some((i, f)) => (i, f),
        None => (t, ""),
    };
    if (int.is_empty() && frac.is_empty())
        || frac.len() > 3
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let i: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let f: u64 = format!("{frac:0<3}").parse().ok()?;
    // Stored in a report as an integer a signature covers exactly.
    i.checked_mul(1000)?
        .checked_add(f)
        .filter(|&v| v <= crate::json::MAX_JSON_INTEGER)
}
