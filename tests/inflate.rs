//! `core::inflate` against `miniz_oxide`: every stream `miniz_oxide` writes (raw DEFLATE
//! and zlib, every level, stored, fixed and dynamic blocks) inflates to its input; the
//! output cap holds; and on damaged streams (bytes flipped, cut short, random) the decoder
//! never panics, and whatever both decoders accept inflates the same.

use pinbench::core::inflate::{inflate, inflate_zlib, InflateError};
use proptest::prelude::*;

/// Inputs of the shapes the compressor turns into each block type (made once).
fn samples() -> &'static [Vec<u8>] {
    static SAMPLES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SAMPLES.get_or_init(make_samples)
}

fn make_samples() -> Vec<Vec<u8>> {
    let mut text = Vec::new();
    for i in 0..3000u32 {
        text.extend_from_slice(format!("{{\"t_us\":{},\"tokens\":{}}},", i * 37, i % 5).as_bytes());
    }
    let mut noise = Vec::new();
    let mut x = 0x2545_f491u32;
    for _ in 0..70_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise.push(x as u8);
    }
    vec![
        Vec::new(),
        b"a".to_vec(),
        vec![0u8; 100_000],
        b"abcabcabcabcabcabd".repeat(1000),
        text,
        noise,
    ]
}

#[test]
fn what_miniz_writes_inflates_to_its_input() {
    for input in samples() {
        let input = input.clone();
        for level in 0..=10u8 {
            let raw = miniz_oxide::deflate::compress_to_vec(&input, level);
            assert_eq!(
                inflate(&raw, usize::MAX).as_deref(),
                Ok(&input[..]),
                "raw, level {level}, {} bytes",
                input.len()
            );
            let z = miniz_oxide::deflate::compress_to_vec_zlib(&input, level);
            assert_eq!(
                inflate_zlib(&z, usize::MAX).as_deref(),
                Ok(&input[..]),
                "zlib, level {level}"
            );
            // Trailing bytes after the stream are not part of it.
            let mut longer = z.clone();
            longer.extend_from_slice(b"xyz");
            assert_eq!(inflate_zlib(&longer, usize::MAX).as_deref(), Ok(&input[..]));
        }
    }
}

#[test]
fn the_output_cap_holds() {
    let input = vec![7u8; 50_000];
    for level in [0u8, 1, 6, 9] {
        let raw = miniz_oxide::deflate::compress_to_vec(&input, level);
        assert_eq!(inflate(&raw, 49_999), Err(InflateError::TooLarge(49_999)));
        assert_eq!(inflate(&raw, 50_000).map(|v| v.len()), Ok(50_000));
    }
}

#[test]
fn a_wrong_checksum_or_header_is_refused() {
    let mut z = miniz_oxide::deflate::compress_to_vec_zlib(b"hello hello hello", 6);
    let n = z.len();
    z[n - 1] ^= 1;
    assert!(matches!(
        inflate_zlib(&z, usize::MAX),
        Err(InflateError::Damaged(_))
    ));
    let mut z = miniz_oxide::deflate::compress_to_vec_zlib(b"hello", 6);
    z[0] = 0x79;
    assert!(matches!(
        inflate_zlib(&z, usize::MAX),
        Err(InflateError::Damaged(_))
    ));
    assert!(inflate(&[], usize::MAX).is_err());
    assert!(inflate(&[0b111], usize::MAX).is_err(), "block type 3");
}

/// What both decoders make of a stream: the same bytes, or at least one refuses.
fn agree(data: &[u8]) -> Result<(), TestCaseError> {
    let ours = inflate(data, 1 << 20);
    let theirs = miniz_oxide::inflate::decompress_to_vec_with_limit(data, 1 << 20);
    if let (Ok(a), Ok(b)) = (&ours, &theirs) {
        prop_assert_eq!(a, b);
    }
    let ours = inflate_zlib(data, 1 << 20);
    let theirs = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(data, 1 << 20);
    if let (Ok(a), Ok(b)) = (&ours, &theirs) {
        prop_assert_eq!(a, b);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn damaged_streams_never_panic_and_agree_where_both_accept(
        sample in 0usize..6,
        level in 0u8..10,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in any::<usize>(),
        zlib in any::<bool>(),
    ) {
        let input = &samples()[sample];
        let mut data = if zlib {
            miniz_oxide::deflate::compress_to_vec_zlib(input, level)
        } else {
            miniz_oxide::deflate::compress_to_vec(input, level)
        };
        if !data.is_empty() {
            for (at, x) in flips {
                let n = data.len();
                data[at % n] ^= x;
            }
            let keep = cut % (data.len() + 1);
            if cut % 3 == 0 {
                data.truncate(keep);
            }
        }
        agree(&data)?;
    }

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        agree(&data)?;
    }
}
