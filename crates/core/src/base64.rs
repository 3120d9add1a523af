//! Base64 (RFC 4648): the standard alphabet with padding (keys, signatures, histograms,
//! chunk data) and the URL-safe alphabet without padding (digests, card links).
//!
//! Why not the `base64` crate: its configurable engines were about 2.7 KB of each wasm
//! after gzip, for these four functions. Decoding is as strict as that crate's `STANDARD`
//! and `URL_SAFE_NO_PAD` engines: the alphabet only (no whitespace), canonical padding
//! (required for the standard form, refused for the URL form) and no stray bits in the
//! last character. `tests/base64.rs` holds both directions to the crate.

/// Why text is not base64.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct Base64Error(&'static str);

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// Each byte's value in an alphabet (64: not in it).
const STANDARD_VALUES: [u8; 256] = values(STANDARD);
const URL_SAFE_VALUES: [u8; 256] = values(URL_SAFE);

const fn values(alphabet: &[u8; 64]) -> [u8; 256] {
    let mut t = [64u8; 256];
    let mut i = 0;
    while i < 64 {
        t[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    t
}

/// Standard alphabet, padded.
pub fn encode(bytes: &[u8]) -> String {
    encode_with(bytes, STANDARD, true)
}

/// URL-safe alphabet, no padding.
pub fn encode_url(bytes: &[u8]) -> String {
    encode_with(bytes, URL_SAFE, false)
}

/// Decodes the standard, padded form.
pub fn decode(text: &str) -> Result<Vec<u8>, Base64Error> {
    decode_with(text.as_bytes(), &STANDARD_VALUES, true)
}

/// Decodes the URL-safe form without padding.
pub fn decode_url(text: &str) -> Result<Vec<u8>, Base64Error> {
    decode_with(text.as_bytes(), &URL_SAFE_VALUES, false)
}

fn encode_with(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        // A chunk of k bytes gives k + 1 characters.
        for i in 0..=chunk.len() {
            out.push(char::from(alphabet[(n >> (18 - 6 * i) & 63) as usize]));
        }
        if pad {
            for _ in chunk.len()..3 {
                out.push('=');
            }
        }
    }
    out
}

fn decode_with(text: &[u8], values: &[u8; 256], pad: bool) -> Result<Vec<u8>, Base64Error> {
    let body = if pad {
        if text.len() % 4 != 0 {
            return Err(Base64Error("its length is not a multiple of 4"));
        }
        let pads = text
            .iter()
            .rev()
            .take(2)
            .take_while(|&&c| c == b'=')
            .count();
        &text[..text.len() - pads]
    } else {
        text
    };
    if body.len() % 4 == 1 {
        return Err(Base64Error("a stray last character"));
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    for chunk in body.chunks(4) {
        let mut n = 0u32;
        for &c in chunk {
            let v = values[usize::from(c)];
            if v == 64 {
                return Err(Base64Error("a character outside the alphabet"));
            }
            n = n << 6 | u32::from(v);
        }
        n <<= 6 * (4 - chunk.len() as u32);
        let bytes = n.to_be_bytes();
        // k characters give k − 1 bytes; the bits past them must be zero.
        let k = chunk.len() - 1;
        if bytes[1 + k..].iter().any(|&b| b != 0) {
            return Err(Base64Error("stray bits in the last character"));
        }
        out.extend_from_slice(&bytes[1..1 + k]);
    }
    Ok(out)
}
