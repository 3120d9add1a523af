//! Before a run: the prompt calibration from the server's `/tokenize`. The run itself is a
//! [`crate::core::session::RunSession`] driven by [`crate::web::host`], in a worker
//! ([`crate::web::worker`]) or on this page.

use crate::core::prompt::{self, Calibration};
use crate::web::fetch;

/// Measures the prompt calibration with the server's `/tokenize` (vLLM / reference form,
/// then llama.cpp form). `None` when the server has no tokenizer endpoint.
pub async fn calibrate(base_url: &str, model: &str) -> Option<Calibration> {
    let count = |text: String| async move {
        for body in [
            serde_json::json!({"model": model, "prompt": text}),
            serde_json::json!({"content": text, "add_special": false}),
        ] {
            if let Ok((200, t)) =
                fetch::post_json(&format!("{base_url}/tokenize"), &body.to_string()).await
            {
                let v: serde_json::Value = serde_json::from_str(&t).ok()?;
                // A server that ignored this form answers with no tokens: try the next one.
                let n = v.get("count").and_then(|c| c.as_u64()).or_else(|| {
                    v.get("tokens")
                        .and_then(|t| t.as_array())
                        .map(|a| a.len() as u64)
                });
                if let Some(n) = n.filter(|&n| n > 0) {
                    return Some(n);
                }
            }
        }
        None
    };
    let n = 256;
    let tokens = count(prompt::sample_text(n)).await?;
    let nonce_tokens = count(prompt::nonce(12345, 0xfeed_beef)).await?;
    Some(Calibration::from_sample(n, tokens, nonce_tokens as u32))
}
