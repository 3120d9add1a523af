//! `core::decimal` (the program's float-to-text, without std's float formatter) against
//! the standard library's `{:.N}` and `{}` on `f64`, which are exact: the same text on
//! every value the program can show.

use pinbench::core::decimal::{Fixed, Shortest};
use proptest::prelude::*;

/// Values where rounding to a fixed number of decimals goes wrong when done on a scaled
/// float: exact ties (half to even), near-ties just above and below, values whose scaled
/// product rounds up in floating point, subnormals, signed zeros, the non-finite.
const HARD: &[f64] = &[
    0.0,
    -0.0,
    0.5,
    1.5,
    2.5,
    -2.5,
    0.125,
    0.375,
    0.25,
    0.35,
    1.005,
    2.675,
    1.0000000000000002,
    0.9999999999999999,
    9.995,
    99.995,
    -0.0001,
    -0.04,
    5e-324,
    2.2250738585072014e-308,
    1e-7,
    123456.789,
    4503599627370496.5,
    9007199254740993.0,
    1.8446744073709552e19,
    1e21,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    f64::MIN_POSITIVE,
];

fn std_fixed(x: f64, d: usize) -> String {
    format!("{x:.d$}")
}

#[test]
fn fixed_matches_std_on_hard_values() {
    for &x in HARD {
        if x.abs() >= 1.5e29 && x.is_finite() {
            continue; // past the exact range (never shown by the program)
        }
        for d in 0..=9u8 {
            assert_eq!(
                Fixed(x, d).to_string(),
                std_fixed(x, d as usize),
                "{x:e} to {d} decimals"
            );
        }
    }
}

#[test]
fn fixed_past_its_exact_range_prints_the_shortest_digits() {
    // std prints 1e30's exact binary value, 1000000000000000019884624838656.00.
    assert_eq!(
        Fixed(1e30, 2).to_string(),
        "1000000000000000000000000000000.00"
    );
    assert_eq!(
        Fixed(-1e300, 0).to_string(),
        format!("-1{}", "0".repeat(300))
    );
    assert_eq!(Fixed(f64::INFINITY, 2).to_string(), "inf");
    assert_eq!(Fixed(f64::NAN, 2).to_string(), "NaN");
}

#[test]
fn shortest_matches_std_on_hard_values() {
    for &x in HARD {
        assert_eq!(Shortest(x).to_string(), format!("{x}"), "{x:e}");
    }
}

#[test]
fn fixed_matches_std_on_every_tie_of_small_halves() {
    // k / 2^j for small j: every such value is exact, and many are ties at some precision.
    for j in 0..=12 {
        for k in -5000i32..=5000 {
            let x = f64::from(k) / f64::from(1u32 << j);
            for d in 0..=4u8 {
                assert_eq!(
                    Fixed(x, d).to_string(),
                    std_fixed(x, d as usize),
                    "{k}/2^{j} to {d}"
                );
            }
        }
    }
}

/// `Shortest(x)` is std's `{x}`, except where two shortest digit strings are equally close
/// to `x` (a value like 1045416527258509.25): std takes the upper, `Shortest` the even
/// one, as ECMAScript, Python and Ryu do. Both then read back as `x` and differ only in
/// the last digit.
fn same_shortest(x: f64) -> Result<(), TestCaseError> {
    let (ours, std) = (Shortest(x).to_string(), format!("{x}"));
    if ours != std {
        prop_assert_eq!(ours.len(), std.len(), "{} vs {}", ours, std);
        prop_assert_eq!(&ours[..ours.len() - 1], &std[..std.len() - 1]);
        prop_assert_eq!(ours.parse::<f64>().map(f64::to_bits), Ok(x.to_bits()));
        let last = ours.as_bytes()[ours.len() - 1];
        prop_assert!((last - b'0') % 2 == 0, "{} is the even one", ours);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// Any finite value below 2^97 in magnitude (the program shows milliseconds, tokens
    /// per second, ratios and seconds), at every precision it uses and more.
    #[test]
    fn fixed_matches_std(bits in any::<u64>(), exp in 0u64..1120, d in 0u8..=9) {
        let x = f64::from_bits((bits & !(0x7ff << 52)) | (exp << 52));
        prop_assert_eq!(Fixed(x, d).to_string(), std_fixed(x, d as usize));
    }

    /// Decimals as people type them: k / 10^j.
    #[test]
    fn fixed_matches_std_on_typed_decimals(k in -10_000_000i64..10_000_000, j in 0u32..7, d in 0u8..=6) {
        let x = k as f64 / 10f64.powi(j as i32);
        prop_assert_eq!(Fixed(x, d).to_string(), std_fixed(x, d as usize));
    }

    /// Every `f64` bit pattern, finite or not, any magnitude.
    #[test]
    fn shortest_matches_std(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        same_shortest(x)?;
    }

    /// Decimals as people type them, and long ones where two shortest texts can tie.
    #[test]
    fn shortest_matches_std_on_typed_decimals(k in any::<i64>(), j in 0u32..30) {
        same_shortest(k as f64 / 10f64.powi(j as i32))?;
    }
}
