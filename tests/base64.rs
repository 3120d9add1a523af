//! `core::base64` against the `base64` crate's `STANDARD` and `URL_SAFE_NO_PAD` engines:
//! the same text for every byte string, and for any text the same bytes or both refuse.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use pinbench::core::base64::{decode, decode_url, encode, encode_url};
use proptest::prelude::*;

/// Texts near valid ones: valid encodings with a character changed, added or removed, and
/// padding moved.
fn near(valid: &str) -> Vec<String> {
    let mut out = vec![valid.to_owned()];
    let chars: Vec<char> = valid.chars().collect();
    for i in 0..chars.len() {
        for c in ['A', 'B', 'Q', 'g', '/', '+', '-', '_', '=', ' ', '\n', 'é'] {
            let mut v = chars.clone();
            v[i] = c;
            out.push(v.iter().collect());
        }
        let mut v = chars.clone();
        v.remove(i);
        out.push(v.iter().collect());
    }
    out.push(format!("{valid}="));
    out.push(format!("{valid}=="));
    out.push(format!("{valid}A"));
    out.push(valid.trim_end_matches('=').to_owned());
    out
}

fn agree(text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        decode(text).ok(),
        STANDARD.decode(text).ok(),
        "standard: {:?}",
        text
    );
    prop_assert_eq!(
        decode_url(text).ok(),
        URL_SAFE_NO_PAD.decode(text).ok(),
        "url: {:?}",
        text
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn encodings_match_the_crate(bytes in proptest::collection::vec(any::<u8>(), 0..70)) {
        prop_assert_eq!(encode(&bytes), STANDARD.encode(&bytes));
        prop_assert_eq!(encode_url(&bytes), URL_SAFE_NO_PAD.encode(&bytes));
        prop_assert_eq!(decode(&encode(&bytes)), Ok(bytes.clone()));
        prop_assert_eq!(decode_url(&encode_url(&bytes)), Ok(bytes.clone()));
    }

    #[test]
    fn decoding_accepts_and_refuses_what_the_crate_does(
        bytes in proptest::collection::vec(any::<u8>(), 0..12),
    ) {
        for text in near(&encode(&bytes)).iter().chain(near(&encode_url(&bytes)).iter()) {
            agree(text)?;
        }
    }

    #[test]
    fn arbitrary_text_decodes_as_the_crate_decodes(text in "[A-Za-z0-9+/=_ -]{0,13}") {
        agree(&text)?;
    }
}
