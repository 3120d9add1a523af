//! The pure core: everything that turns bytes on the wire into numbers and numbers
//! into a signed report. Nothing here touches a browser, a clock or a random source.

pub mod card;
pub mod chart;
pub mod compare;
pub mod dialect;
pub mod histogram;
pub mod import;
pub mod jcs;
pub mod metrics;
pub mod pins;
pub mod prompt;
pub mod record;
pub mod report;
pub mod schedule;
pub mod session;
pub mod sign;
pub mod sse;
pub mod view;
pub mod viewer;
