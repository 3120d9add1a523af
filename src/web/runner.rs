//! Before a run: the prompt calibration from the server's `/tokenize`. The run itself is a
//! [`crate::core::session::RunSession`] driven by [`crate::web::host`], in a worker
//! ([`crate::web::worker`]) or on this page.

use crate::core::pins::RunConfig;
use crate::core::prompt::{self, Calibration, CalibrationError};
use crate::web::fetch;

/// Runs the core's calibration procedure against the server's `/tokenize`: the fit, then
/// each target length counted and adjusted until exact.
pub async fn calibrate(cfg: &RunConfig) -> Result<Calibration, CalibrationError> {
    prompt::calibrate_run(cfg, |url, body| async move {
        fetch::post_json(&url, &body).await.ok()
    })
    .await
}
