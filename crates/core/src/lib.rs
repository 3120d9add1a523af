//! The pure core: everything that turns bytes on the wire into numbers and numbers
//! into a signed report. Nothing here touches a browser, a clock or a random source.
//!
//! Grouped by job: [`measure`] (wire → records), [`run`] (the run engine), [`config`]
//! (the pins), [`stats`] (records → numbers), [`share`] (reports, signatures, cards,
//! imports, comparison), [`present`] (what is shown). Each module is also reachable at
//! `core::<name>` (e.g. `core::pins`, `core::session`).

pub mod base64;
pub mod budget;
pub mod config;
pub mod decimal;
pub mod inflate;
pub mod json;
pub mod markup;
pub mod measure;
pub mod present;
pub mod run;
pub mod share;
pub mod sort;
pub mod stats;

pub use config::{claim, dataset, pins, probe, trace, vendors};
pub use measure::{dialect, record, sse, vendor};
pub use present::{chart, definitions, html, live, view};
pub use run::{behaviour, http, lifecycle, prompt, schedule, session};
pub use share::{card, compare, import, jcs, merge, report, rows, series, sign, viewer};
pub use stats::{histogram, metrics, search, server, turns};
