//! The run configuration: the pins (types, raw form and share link, parsing, fit check).

pub mod claim;
pub mod dataset;
pub mod pins;
pub mod probe;
pub mod trace;
pub mod vendors;
