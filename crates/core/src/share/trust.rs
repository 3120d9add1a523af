//! The keys a user trusts (kept by the browser or a file) and the signature state a
//! report or card is shown with: valid by a trusted key, valid by an unknown key, invalid,
//! unsigned.

use serde::{Deserialize, Serialize};

use crate::report::Verification;
use crate::sign;

/// A public key the user trusts, by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedKey {
    /// The user's name for it.
    pub name: String,
    /// Public key, base64.
    pub public_key: String,
    /// Its fingerprint.
    pub key_id: String,
}

/// The user's trusted keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedKeys {
    /// Keys, in the order added.
    pub keys: Vec<TrustedKey>,
}

impl TrustedKeys {
    /// Adds (or renames) a key given as base64, or as a key id is not enough: the public
    /// key itself is required.
    pub fn add(&mut self, name: &str, public_key_b64: &str) -> Result<&TrustedKey, String> {
        let name = name.trim();
        if name.is_empty() {
            return Err("give the key a name".into());
        }
        let pk = sign::public_key_from_base64(public_key_b64.trim())
            .map_err(|e| format!("not an Ed25519 public key: {e}"))?;
        let key_id = sign::key_id(&pk);
        self.keys.retain(|k| k.key_id != key_id);
        self.keys.push(TrustedKey {
            name: name.into(),
            public_key: public_key_b64.trim().into(),
            key_id,
        });
        self.keys.last().ok_or_else(|| "not added".into())
    }

    /// Removes a key by id.
    pub fn remove(&mut self, key_id: &str) {
        self.keys.retain(|k| k.key_id != key_id);
    }

    /// The name of a trusted key.
    pub fn name_of(&self, key_id: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|k| k.key_id == key_id)
            .map(|k| k.name.as_str())
    }

    /// Reads the stored form (an empty list on anything unreadable).
    pub fn from_json(text: &str) -> Self {
        crate::json::from_str(text).unwrap_or_default()
    }

    /// The stored form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{\"keys\":[]}".into())
    }
}

/// The signature state the viewer shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SigState {
    /// Valid, by a trusted key.
    Trusted {
        /// Fingerprint.
        key_id: String,
        /// The user's name for the key.
        name: String,
    },
    /// Valid, by a key not in the trusted list.
    UnknownKey {
        /// Fingerprint.
        key_id: String,
        /// Public key, base64 (to trust it).
        public_key: String,
    },
    /// Signed, but the signature does not match: modified (or a swapped block).
    InvalidModified {
        /// Detail.
        reason: String,
    },
    /// No signature.
    Unsigned,
}

impl SigState {
    /// From a verification and the trusted keys.
    pub fn of(v: &Verification, trusted: &TrustedKeys) -> Self {
        match v {
            Verification::Valid { key_id, public_key } => match trusted.name_of(key_id) {
                Some(n) => SigState::Trusted {
                    key_id: key_id.clone(),
                    name: n.into(),
                },
                None => SigState::UnknownKey {
                    key_id: key_id.clone(),
                    public_key: public_key.clone(),
                },
            },
            Verification::Unsigned => SigState::Unsigned,
            Verification::Invalid { reason } => SigState::InvalidModified {
                reason: reason.clone(),
            },
        }
    }

    /// Stable short id (`valid`, `unknown-key`, `invalid`, `unsigned`).
    pub fn id(&self) -> &'static str {
        match self {
            SigState::Trusted { .. } => "valid",
            SigState::UnknownKey { .. } => "unknown-key",
            SigState::InvalidModified { .. } => "invalid",
            SigState::Unsigned => "unsigned",
        }
    }

    /// The sentence shown.
    pub fn text(&self) -> String {
        match self {
            SigState::Trusted { key_id, name } => {
                format!("valid: signed by {name} ({key_id})")
            }
            SigState::UnknownKey { key_id, .. } => {
                format!("valid, but from an unknown key ({key_id}); trust it only if you know whose it is")
            }
            SigState::InvalidModified { reason } => {
                format!("invalid: modified — the content does not match its signature ({reason})")
            }
            SigState::Unsigned => "unsigned: nothing vouches for this file".into(),
        }
    }
}
