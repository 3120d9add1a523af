//! Before a run: the prompt calibration from the server's `/tokenize`. The run itself is a
//! [`crate::core::session::RunSession`] driven by [`crate::web::host`], in a worker
//! ([`crate::web::worker`]) or on this page.

use crate::core::prompt::{self, Calibration};
use crate::web::fetch;

/// Measures the prompt calibration with the server's `/tokenize` (vLLM / reference form,
/// then llama.cpp form). `None` when the server has no tokenizer endpoint.
pub async fn calibrate(base_url: &str, model: &str) -> Option<Calibration> {
    let url = format!("{base_url}/tokenize");
    let count = |text: String| {
        let url = url.clone();
        async move {
            for body in prompt::tokenize_bodies(model, &text) {
                if let Ok((200, t)) = fetch::post_json(&url, &body).await {
                    if let Some(n) = prompt::tokenize_count(&t) {
                        return Some(n);
                    }
                }
            }
            None
        }
    };
    let (sample, nonce) = prompt::calibration_texts();
    let tokens = count(sample).await?;
    let nonce_tokens = count(nonce).await?;
    Some(Calibration::from_sample(
        prompt::CALIBRATION_WORDS,
        tokens,
        u32::try_from(nonce_tokens).unwrap_or(u32::MAX),
    ))
}
