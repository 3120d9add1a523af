//! One complete pin set to start from, and a builder over it: tests, fixtures and examples
//! write only what differs from it (`Pins::reference().concurrency(8)`), never a literal
//! copy of every pin.

use super::{RawConfig, RawField, RunConfig};

/// Errors of building pins by name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinsError {
    /// A name that is no form field.
    #[error("no pin field is named {0:?}")]
    UnknownField(String),
    /// The values do not pin a run.
    #[error("not pinned: {0}")]
    NotPinned(String),
}

/// Form fields by name, every one declared; starts complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pins {
    fields: Vec<(String, String)>,
}

impl Pins {
    /// The reference server's `tiny` profile at `http://127.0.0.1:8000`, completions API:
    /// 32 → 16 tokens (exact, `ignore_eos`), closed loop at c=2, 2 + 8 + 2 requests, a
    /// nonce, greedy sampling. Every pin is set.
    pub fn reference() -> Self {
        let fields = [
            ("endpoint_url", "http://127.0.0.1:8000"),
            ("dialect", "completions"),
            ("model_id", "pinbench-tiny"),
            ("model_params", "100M"),
            ("model_quant", "bf16"),
            ("model_engine", "pinbench-refserver 0.1.0"),
            ("prompt_tokens", "32"),
            ("prompt_exactness", "approximate"),
            ("output_tokens", "16"),
            ("output_enforcement", "ignore_eos"),
            ("load_mode", "closed"),
            ("concurrency", "2"),
            ("stall_timeout_s", "10"),
            ("max_model_len", "4096"),
            ("kv_capacity", "16384"),
            ("max_num_seqs", "16"),
            ("phases", "chunked_prefill"),
            ("scheduling", "continuous"),
            ("warmup", "2"),
            ("measured", "8"),
            ("cooldown", "2"),
            ("nonce_prefix", "on"),
            ("shared_prefix", "none"),
            ("temperature", "0"),
            ("sampling_extra", "{}"),
            ("reasoning", "none"),
            ("turns", "1"),
        ];
        Self {
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    /// [`Pins::reference`] over the chat completions API.
    pub fn chat_default() -> Self {
        Self::reference().set("dialect", "chat")
    }

    /// Sets one field's text (a later setting of the same field wins).
    pub fn set(mut self, field: &str, text: &str) -> Self {
        self.fields.retain(|(k, _)| k != field);
        self.fields.push((field.to_owned(), text.to_owned()));
        self
    }

    /// Sets several fields.
    pub fn with(self, fields: &[(&str, &str)]) -> Self {
        fields.iter().fold(self, |p, (k, v)| p.set(k, v))
    }

    /// Leaves a field empty (unpinned), for what a probe or a test should fill.
    pub fn open(mut self, field: &str) -> Self {
        self.fields.retain(|(k, _)| k != field);
        self
    }

    /// The endpoint's base URL.
    pub fn endpoint(self, url: &str) -> Self {
        self.set("endpoint_url", url)
    }

    /// A closed loop at concurrency `c`.
    pub fn concurrency(self, c: u32) -> Self {
        self.set("load_mode", "closed")
            .set("concurrency", &c.to_string())
    }

    /// Fixed prompt and output lengths, tokens.
    pub fn lengths(self, prompt: u32, output: u32) -> Self {
        self.set("prompt_tokens", &prompt.to_string())
            .set("output_tokens", &output.to_string())
    }

    /// Warm-up, measured and cool-down spans as form text (`"8"` requests, `"10 s"`).
    pub fn windows(self, warmup: &str, measured: &str, cooldown: &str) -> Self {
        self.set("warmup", warmup)
            .set("measured", measured)
            .set("cooldown", cooldown)
    }

    /// The fields as `(name, text)`, in the order they were set.
    pub fn fields(&self) -> &[(String, String)] {
        &self.fields
    }

    /// The raw form, every field declared; refuses a name that is no field.
    pub fn raw(&self) -> Result<RawConfig, PinsError> {
        let mut r = RawConfig::default();
        for (k, v) in &self.fields {
            *r.field_mut(k)
                .ok_or_else(|| PinsError::UnknownField(k.clone()))? = RawField::declared(v.clone());
        }
        Ok(r)
    }

    /// The pinned configuration.
    pub fn build(&self) -> Result<RunConfig, PinsError> {
        RunConfig::try_from(&self.raw()?).map_err(|e| PinsError::NotPinned(e.to_string()))
    }

    /// The share link's JSON form (what `pinbench run --pins` reads).
    pub fn share_json(&self) -> Result<String, PinsError> {
        self.raw()?;
        let mut map = serde_json::Map::new();
        for (k, v) in &self.fields {
            map.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
        Ok(serde_json::Value::Object(map).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_pins_every_field_and_builds() {
        let p = Pins::reference();
        // Every name is a form field; the fields it leaves empty are the ones a closed
        // loop does not use (open-loop arrivals).
        assert!(p.raw().is_ok());
        let cfg = p.build().expect("pinned");
        assert_eq!(cfg.model.id.value, "pinbench-tiny");
        let c8 = Pins::chat_default().concurrency(8).build().expect("pinned");
        assert_eq!(c8.endpoint.dialect, crate::dialect::Dialect::Chat);
        assert_eq!(c8.load.value.steps_text(), "closed loop, c=8");
    }

    #[test]
    fn names_and_gaps_are_reported() {
        assert_eq!(
            Pins::reference().set("concurency", "8").build(),
            Err(PinsError::UnknownField("concurency".into()))
        );
        let e = Pins::reference()
            .open("model_id")
            .build()
            .expect_err("open");
        assert!(e.to_string().contains("model id"), "{e}");
        let json = Pins::reference()
            .open("model_id")
            .share_json()
            .expect("json");
        let back = RawConfig::from_share_json(&json).expect("reads");
        assert_eq!(back.model_id.text, "");
        assert_eq!(back.concurrency.text, "2");
    }
}
