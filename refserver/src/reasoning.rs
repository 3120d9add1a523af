//! A reasoning model, emulated: each request first spends reasoning tokens (a length drawn
//! per request from a range), then answers. Shown as each API shows reasoning, or hidden
//! (generated, timed by the engine like any token, never sent); the truth keeps both.

/// How the server reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reasoning {
    /// No reasoning (the default).
    None,
    /// Reasoning streamed token by token (`reasoning_content`, `thinking_delta`,
    /// `response.reasoning_text.delta`, Gemini `thought` parts).
    Visible {
        /// Fewest reasoning tokens per request.
        min: u32,
        /// Most reasoning tokens per request.
        max: u32,
    },
    /// Reasoning generated but not sent: only usage counts it (Anthropic sends an empty
    /// thinking block with its signature).
    Hidden {
        /// Fewest reasoning tokens per request.
        min: u32,
        /// Most reasoning tokens per request.
        max: u32,
    },
}

impl Reasoning {
    /// Parses `--reasoning MODE` with `--reasoning-tokens N` or `A..B`.
    pub fn parse(mode: &str, tokens: &str) -> Result<Self, String> {
        let (min, max) = match tokens.split_once("..") {
            Some((a, b)) => (
                a.trim()
                    .parse::<u32>()
                    .map_err(|e| format!("--reasoning-tokens: {e}"))?,
                b.trim()
                    .parse::<u32>()
                    .map_err(|e| format!("--reasoning-tokens: {e}"))?,
            ),
            None => {
                let n = tokens
                    .trim()
                    .parse::<u32>()
                    .map_err(|e| format!("--reasoning-tokens: {e}"))?;
                (n, n)
            }
        };
        if min == 0 || max < min {
            return Err("--reasoning-tokens: N ≥ 1, or A..B with 1 ≤ A ≤ B".into());
        }
        match mode {
            "none" => Ok(Reasoning::None),
            "visible" => Ok(Reasoning::Visible { min, max }),
            "hidden" => Ok(Reasoning::Hidden { min, max }),
            _ => Err("--reasoning: none, visible or hidden".into()),
        }
    }

    /// The reasoning pin's text, as the models list states it for a probe.
    pub fn pin_text(&self) -> &'static str {
        match self {
            Reasoning::None => "none",
            Reasoning::Visible { .. } => "visible",
            Reasoning::Hidden { .. } => "hidden",
        }
    }

    /// Whether the reasoning is sent.
    pub fn visible(&self) -> bool {
        matches!(self, Reasoning::Visible { .. })
    }

    /// Reasoning tokens of request `id` (0 without reasoning): drawn from the range by a
    /// hash of the id, so a test can read the truth of each request.
    pub fn tokens_for(&self, id: u64) -> u32 {
        match *self {
            Reasoning::None => 0,
            Reasoning::Visible { min, max } | Reasoning::Hidden { min, max } => {
                let span = u64::from(max - min) + 1;
                // SplitMix64 of the id.
                let mut z = id.wrapping_add(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                min + u32::try_from(z % span).unwrap_or(0)
            }
        }
    }
}
