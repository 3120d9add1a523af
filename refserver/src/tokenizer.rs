//! A deterministic tokenizer, so prompt lengths in tokens are exact and checkable.
//!
//! A token is one of: an optional single space followed by a run of ASCII letters/digits;
//! an optional single space followed by one other non-whitespace character; or one
//! whitespace character not used as such a prefix. So `" w"` repeated N times is exactly
//! N tokens, and generated text (words with a leading space) re-tokenizes to its count.

/// Splits text into token pieces.
pub fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let start = i;
        let c = text[i..].chars().next().unwrap_or(' ');
        let mut j = i + c.len_utf8();
        let head = if c == ' ' && j < text.len() {
            let n = text[j..].chars().next().unwrap_or(' ');
            if n.is_whitespace() {
                None
            } else {
                Some(n)
            }
        } else if c.is_whitespace() {
            None
        } else {
            j = i;
            Some(c)
        };
        match head {
            None => {}
            Some(h) if h.is_ascii_alphanumeric() => {
                while j < b.len() && b[j].is_ascii_alphanumeric() {
                    j += 1;
                }
            }
            Some(h) => j += h.len_utf8(),
        }
        out.push(&text[start..j]);
        i = j;
    }
    out
}

/// Number of tokens in `text`.
pub fn count(text: &str) -> usize {
    pieces(text).len()
}

/// Token ids (FNV-1a of each piece, modulo a 50,000-token vocabulary).
pub fn ids(text: &str) -> Vec<u32> {
    pieces(text)
        .into_iter()
        .map(|p| {
            let mut h: u32 = 0x811c_9dc5;
            for byte in p.bytes() {
                h ^= u32::from(byte);
                h = h.wrapping_mul(0x0100_0193);
            }
            h % 50_000
        })
        .collect()
}

const WORDS: [&str; 16] = [
    " alpha",
    " bravo",
    " charlie",
    " delta",
    " echo",
    " foxtrot",
    " golf",
    " hotel",
    " india",
    " juliet",
    " kilo",
    " lima",
    " mike",
    " november",
    " oscar",
    " papa",
];

/// The text of generated token number `i` (one token each).
pub fn output_piece(i: u64) -> &'static str {
    WORDS[(i % WORDS.len() as u64) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_counts() {
        let cases = [
            ("", 0),
            ("hello", 1),
            (" hello", 1),
            ("hello world", 2),
            ("hello, world!", 4),
            ("  two  spaces", 4),
            ("a\nb", 3),
            ("\u{e9}t\u{e9}", 3),
            (" w w w w", 4),
        ];
        for (text, n) in cases {
            assert_eq!(count(text), n, "{text:?}: {:?}", pieces(text));
        }
    }

    #[test]
    fn pieces_cover_the_text_exactly() {
        for text in ["hello, world!", "  a  b\n\tc", "x\u{1F600}y z", " w w"] {
            assert_eq!(pieces(text).concat(), text);
        }
    }

    #[test]
    fn generated_text_counts_one_token_per_piece() {
        let text: String = (0..100).map(output_piece).collect();
        assert_eq!(count(&text), 100);
        assert_eq!(ids(&text).len(), 100);
    }
}
