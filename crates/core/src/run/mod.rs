//! The run engine: the session state machine, the dispatch scheduler and its phase clock,
//! and the synthetic prompts.

pub mod behaviour;
pub mod http;
pub mod lifecycle;
pub mod prompt;
pub mod schedule;
pub mod session;
