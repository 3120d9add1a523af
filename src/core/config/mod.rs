//! The run configuration: the pins (types, raw form and share link, parsing, fit check).

pub mod pins;
pub mod probe;
