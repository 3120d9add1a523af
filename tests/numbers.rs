//! `core::json::parse_f64` (the wasm's one decimal-to-float reader, through serde_json's
//! exact parser) against the standard library's `str::parse`, which is correctly rounded:
//! the same `f64`, bit for bit, on every text both accept.

use pinbench::core::json::parse_f64;
use proptest::prelude::*;

/// Texts where a fast path that is not correctly rounded goes wrong: halfway cases,
/// 17+ significant digits, subnormals, the extremes, long digit strings.
const HARD: &[&str] = &[
    "0.1",
    "0.30000000000000004",
    "9007199254740993",
    "9007199254740992.5",
    "2.2250738585072011e-308",
    "2.2250738585072014e-308",
    "4.9406564584124654e-324",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "8.98846567431158e307",
    "123456789012345678901234567890",
    "0.000000000000000000000000000000000000000000001",
    "7.2057594037927933e16",
    "1.00000000000000011102230246251565404236316680908203125",
    "1.00000000000000011102230246251565404236316680908203124",
    "5e-324",
    "-0",
    "-0.0",
    "1e23",
    "8.41e21",
    "4.35679e-310",
];

#[test]
fn hard_cases_are_correctly_rounded() {
    for t in HARD {
        let want: f64 = t.parse().expect("std parses it");
        let got = parse_f64(t).unwrap_or_else(|| panic!("{t} is read"));
        assert_eq!(got.to_bits(), want.to_bits(), "{t}");
    }
}

#[test]
fn form_text_is_read_and_nonsense_refused() {
    for (t, want) in [
        (" 0.7 ", 0.7),
        ("+2", 2.0),
        (".5", 0.5),
        ("-.5", -0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("2.1", 2.1),
    ] {
        assert_eq!(parse_f64(t), Some(want), "{t:?}");
    }
    for t in [
        "", ".", "-", "+", "+-1", "--1", "1.2.3", "1e400", "-1e400", "NaN", "inf", "0x10", "1,5",
        "1 2", "e5", "1e", "1_000",
    ] {
        assert_eq!(parse_f64(t), None, "{t:?}");
    }
}

proptest! {
    /// Any decimal text: `digits[.digits][e±exp]`, as written by people and other tools.
    #[test]
    fn same_as_std_on_generated_decimals(
        neg in any::<bool>(),
        int in "[1-9][0-9]{0,24}|0",
        frac in proptest::option::of("[0-9]{1,25}"),
        exp in proptest::option::of(-330i32..330),
    ) {
        let mut t = String::new();
        if neg { t.push('-'); }
        t.push_str(&int);
        if let Some(f) = &frac { t.push('.'); t.push_str(f); }
        if let Some(e) = exp { t.push_str(&format!("e{e}")); }
        let want: f64 = t.parse().expect("std parses it");
        let got = parse_f64(&t);
        if want.is_finite() {
            prop_assert_eq!(got.map(f64::to_bits), Some(want.to_bits()), "{}", t);
        } else {
            prop_assert_eq!(got, None, "{}", t);
        }
    }

    /// Every finite `f64`'s shortest text reads back as itself.
    #[test]
    fn shortest_text_round_trips(bits in any::<u64>()) {
        let v = f64::from_bits(bits);
        prop_assume!(v.is_finite());
        let t = format!("{v:e}");
        prop_assert_eq!(parse_f64(&t).map(f64::to_bits), Some(bits), "{}", t);
    }
}
