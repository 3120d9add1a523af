//! Before a run: the prompt calibration from the server's `/tokenize`. The run itself is a
//! [`crate::core::session::RunSession`] driven by [`crate::web::host`], in a worker
//! ([`crate::web::worker`]) or on this page.

use crate::core::pins::RunConfig;
use crate::core::prompt::{self, Calibration, CalibrationError, Calibrator};
use crate::web::fetch;

/// Runs the core's calibration procedure against the server's `/tokenize`: the fit, then
/// each target length counted and adjusted until exact.
pub async fn calibrate(cfg: &RunConfig) -> Result<Calibration, CalibrationError> {
    let url = format!("{}/tokenize", cfg.endpoint.base_url);
    let c = Calibrator::new(
        cfg.endpoint.dialect,
        &cfg.model.id.value,
        &cfg.prompt_len.value,
    );
    prompt::calibrate_with(c, |body| {
        let url = url.clone();
        async move {
            match fetch::post_json(&url, &body).await {
                Ok((200, t)) => prompt::tokenize_count(&t),
                _ => None,
            }
        }
    })
    .await
}
