//! The native host of the run session: `pinbench run --pins pins.json` runs the same
//! [`crate::core::session::RunSession`] as the browser over a native HTTP/1.1 and HTTP/2
//! client and writes the same signed report. It is the baseline the fidelity bench
//! compares the browser against, and a way to run headless (CI) or from a host closer
//! to the endpoint.

pub mod cli;
pub mod host;
pub mod net;
