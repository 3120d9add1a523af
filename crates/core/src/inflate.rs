//! DEFLATE decoding (RFC 1951, and the zlib wrapper of RFC 1950) with an output cap, through
//! `miniz_oxide`, for the three compressed forms pinbench reads: earlier reports'
//! histograms (HdrHistogram's V2 + DEFLATE), earlier records' chunk data, and card links.
//! The cap is checked while inflating, so a small bomb never allocates past it.

use miniz_oxide::inflate::{
    decompress_to_vec_with_limit, decompress_to_vec_zlib_with_limit, DecompressError, TINFLStatus,
};

/// Why a stream could not be inflated.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InflateError {
    /// The output would pass the cap.
    #[error("inflates past the limit of {0} bytes")]
    TooLarge(usize),
    /// Not a valid stream.
    #[error("not DEFLATE data: {0}")]
    Damaged(String),
}

fn refusal(e: DecompressError, limit: usize) -> InflateError {
    match e.status {
        TINFLStatus::HasMoreOutput => InflateError::TooLarge(limit),
        _ => InflateError::Damaged(e.to_string()),
    }
}

/// Inflates a raw DEFLATE stream into at most `limit` bytes.
pub fn inflate(data: &[u8], limit: usize) -> Result<Vec<u8>, InflateError> {
    decompress_to_vec_with_limit(data, limit).map_err(|e| refusal(e, limit))
}

/// Inflates a zlib stream (RFC 1950: header, DEFLATE data, Adler-32 of the output) into at
/// most `limit` bytes.
pub fn inflate_zlib(data: &[u8], limit: usize) -> Result<Vec<u8>, InflateError> {
    decompress_to_vec_zlib_with_limit(data, limit).map_err(|e| refusal(e, limit))
}
