//! Records → numbers: the metric definitions (docs/DEFINITIONS.md §2) and the HDR histograms behind
//! every distribution.

pub mod histogram;
pub mod metrics;
pub mod search;
pub mod server;
pub mod turns;
