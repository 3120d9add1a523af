//! Before a run: the prompt calibration from the server's `/tokenize`. The run itself is a
//! [`crate::core::session::RunSession`] driven by [`crate::web::host`], in a worker
//! ([`crate::web::worker`]) or on this page.

use crate::core::pins::RunConfig;
use crate::core::prompt::{self, CalStep, Calibration, CalibrationError, Calibrator};
use crate::web::fetch;

/// Runs the core's calibration procedure against the server's `/tokenize`: the fit, then
/// each target length counted and adjusted until exact.
pub async fn calibrate(cfg: &RunConfig) -> Result<Calibration, CalibrationError> {
    let url = format!("{}/tokenize", cfg.endpoint.base_url);
    let mut c = Calibrator::new(
        cfg.endpoint.dialect,
        &cfg.model.id.value,
        &cfg.prompt_len.value,
    );
    loop {
        match c.next() {
            CalStep::Done(r) => return r,
            CalStep::Tokenize(bodies) => {
                let mut got = None;
                for (form, body) in bodies {
                    if let Ok((200, t)) = fetch::post_json(&url, &body).await {
                        if let Some(n) = prompt::tokenize_count(&t) {
                            got = Some((form, n));
                            break;
                        }
                    }
                }
                c.answer(got);
            }
        }
    }
}
