//! Base64 (RFC 4648) through the `base64` crate: the standard alphabet with padding (keys,
//! signatures, histograms, chunk data) and the URL-safe alphabet without padding (digests,
//! card links). Decoding is the crate's strict kind: the alphabet only (no whitespace),
//! canonical padding (required for the standard form, refused for the URL form) and no
//! stray bits in the last character.

use ::base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ::base64::Engine as _;

/// Why text is not base64.
pub use ::base64::DecodeError as Base64Error;

/// Standard alphabet, padded.
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// URL-safe alphabet, no padding.
pub fn encode_url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes the standard, padded form.
pub fn decode(text: &str) -> Result<Vec<u8>, Base64Error> {
    STANDARD.decode(text)
}

/// Decodes the URL-safe form without padding.
pub fn decode_url(text: &str) -> Result<Vec<u8>, Base64Error> {
    URL_SAFE_NO_PAD.decode(text)
}
