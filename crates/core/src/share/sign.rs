//! Ed25519 signatures over RFC 8785 (JCS) canonical JSON.
//!
//! Keys come from 32 random bytes passed in by the caller (the core has no randomness).
//! Verification is strict (`verify_strict`: rejects small-order keys and non-canonical
//! signatures). A key id is the fingerprint `ed25519:` + the first 16 bytes of
//! SHA-256(public key), in hex.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Errors from canonicalising, signing or verifying.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignError {
    /// The JSON could not be put in canonical form (e.g. a non-finite number).
    #[error("JSON cannot be canonicalised: {0}")]
    Canonical(String),
    /// A public key is not 32 bytes of valid base64 / a valid curve point.
    #[error("invalid public key: {0}")]
    BadPublicKey(String),
    /// A secret key is not 32 bytes of valid base64.
    #[error("invalid secret key: {0}")]
    BadSecretKey(String),
    /// A signature is not 64 bytes of valid base64.
    #[error("malformed signature: {0}")]
    BadSignature(String),
    /// The signature does not match the content: it was modified after signing.
    #[error("signature does not match: the content was modified after signing")]
    Mismatch,
}

/// RFC 8785 canonical bytes of a serialisable value: its JSON text through the one
/// canonicaliser on the signing path ([`crate::jcs::canonicalize`]), so exactly what
/// a JSON file of it says, and refused for integers beyond 2^53.
pub fn canonical_bytes<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, SignError> {
    Ok(canonical_doc(value, &[])?.bytes)
}

/// [`canonical_bytes`] with top-level members named in `skip` left out, and where each
/// member sits.
pub fn canonical_doc<T: serde::Serialize>(
    value: &T,
    skip: &[&str],
) -> Result<CanonicalDoc, SignError> {
    let text = serde_json::to_string(value).map_err(|e| SignError::Canonical(e.to_string()))?;
    crate::jcs::canonicalize(&text, skip).map_err(|e| SignError::Canonical(e.to_string()))
}

pub use crate::jcs::CanonicalDoc;

/// RFC 8785 (JCS) canonical form of a parsed value, written in one pass with no copy of
/// the value: object members sorted by UTF-16 code units, strings with JSON's minimal
/// escapes, numbers as ECMAScript prints them (integers up to 2^53 digit for digit, other
/// numbers through `ryu-js`, the algorithm RFC 8785 names). Top-level members named in
/// `skip` are left out (a document's own `signature`). Checked against `serde_jcs` by a
/// property test and against the RFC's examples. The oracle the text canonicaliser is
/// tested against; the signing path uses [`canonical_doc`] only.
#[cfg(test)]
pub fn canonical_value(v: &serde_json::Value, skip: &[&str]) -> CanonicalDoc {
    let mut out = Vec::with_capacity(1024);
    let mut members = Vec::new();
    if let serde_json::Value::Object(o) = v {
        out.push(b'{');
        let mut first = true;
        for (k, x) in sorted(o) {
            if skip.contains(&k.as_str()) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            write_canonical_str(&mut out, k);
            out.push(b':');
            let start = out.len();
            write_value(&mut out, x);
            members.push((k.clone(), start..out.len()));
        }
        out.push(b'}');
    } else {
        write_value(&mut out, v);
    }
    CanonicalDoc {
        bytes: out,
        members,
    }
}

#[cfg(test)]
fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

#[cfg(test)]
fn sorted(o: &serde_json::Map<String, serde_json::Value>) -> Vec<(&String, &serde_json::Value)> {
    let mut m: Vec<_> = o.iter().collect();
    crate::sort::sort_by(&mut m, |a, b| utf16_cmp(a.0, b.0));
    m
}

#[cfg(test)]
fn write_value(out: &mut Vec<u8>, v: &serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_canonical_str(out, s),
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, x);
            }
            out.push(b']');
        }
        Value::Object(o) => {
            out.push(b'{');
            for (i, (k, x)) in sorted(o).into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical_str(out, k);
                out.push(b':');
                write_value(out, x);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    const SAFE: u64 = 1 << 53;
    if let Some(u) = n.as_u64().filter(|u| *u <= SAFE) {
        out.extend_from_slice(u.to_string().as_bytes());
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= SAFE) {
        out.extend_from_slice(i.to_string().as_bytes());
    } else {
        // Beyond 2^53 or fractional: the number as a double, printed the ECMAScript way.
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f == 0.0 {
            out.push(b'0');
        } else {
            let mut buf = ryu_js::Buffer::new();
            out.extend_from_slice(buf.format(f).as_bytes());
        }
    }
}

pub use crate::json::write_canonical_str;

/// Fingerprint of a public key: `ed25519:` + hex of SHA-256(key)[..16].
pub fn key_id(public_key: &[u8; 32]) -> String {
    let digest = Sha256::digest(public_key);
    let mut out = String::from("ed25519:");
    for b in &digest[..16] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A signing key pair.
#[derive(Clone)]
pub struct KeyPair {
    key: SigningKey,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("key_id", &self.key_id())
            .finish_non_exhaustive()
    }
}

impl KeyPair {
    /// The key pair whose secret is these 32 (random) bytes.
    pub fn from_secret(secret: [u8; 32]) -> Self {
        Self {
            key: SigningKey::from_bytes(&secret),
        }
    }

    /// Parses a base64 secret as exported by [`KeyPair::secret_base64`].
    pub fn from_secret_base64(text: &str) -> Result<Self, SignError> {
        let bytes = crate::base64::decode(text.trim())
            .map_err(|e| SignError::BadSecretKey(e.to_string()))?;
        let secret: [u8; 32] = bytes.try_into().map_err(|v: Vec<u8>| {
            SignError::BadSecretKey(format!("{} bytes, expected 32", v.len()))
        })?;
        Ok(Self::from_secret(secret))
    }

    /// The secret, base64 (for export by the user; never put into a report).
    pub fn secret_base64(&self) -> String {
        crate::base64::encode(&self.key.to_bytes())
    }

    /// The key file both hosts write and read: `{"alg": "Ed25519", "key_id", "public_key",
    /// "secret_key"}` (the tab's export, the command line's `~/.config/pinbench`).
    pub fn to_key_file(&self) -> String {
        serde_json::json!({
            "alg": ALG,
            "key_id": self.key_id(),
            "public_key": self.public_key_base64(),
            "secret_key": self.secret_base64(),
        })
        .to_string()
    }

    /// Reads a key file ([`KeyPair::to_key_file`]) or a bare base64 secret.
    pub fn from_key_file(text: &str) -> Result<Self, SignError> {
        let secret = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v["secret_key"].as_str().map(str::to_owned));
        Self::from_secret_base64(secret.as_deref().unwrap_or(text))
    }

    /// The 32-byte public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// The public key, base64.
    pub fn public_key_base64(&self) -> String {
        crate::base64::encode(&self.public_key())
    }

    /// The key's fingerprint.
    pub fn key_id(&self) -> String {
        key_id(&self.public_key())
    }

    /// Signs `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

/// Decodes a base64 public key.
pub fn public_key_from_base64(text: &str) -> Result<[u8; 32], SignError> {
    let bytes =
        crate::base64::decode(text.trim()).map_err(|e| SignError::BadPublicKey(e.to_string()))?;
    bytes
        .try_into()
        .map_err(|v: Vec<u8>| SignError::BadPublicKey(format!("{} bytes, expected 32", v.len())))
}

/// Decodes a base64 signature.
pub fn signature_from_base64(text: &str) -> Result<[u8; 64], SignError> {
    let bytes =
        crate::base64::decode(text.trim()).map_err(|e| SignError::BadSignature(e.to_string()))?;
    bytes
        .try_into()
        .map_err(|v: Vec<u8>| SignError::BadSignature(format!("{} bytes, expected 64", v.len())))
}

/// Strictly verifies an Ed25519 signature.
pub fn verify(
    public_key: &[u8; 32],
    message: &[u8],
    signature: &[u8; 64],
) -> Result<(), SignError> {
    let key =
        VerifyingKey::from_bytes(public_key).map_err(|e| SignError::BadPublicKey(e.to_string()))?;
    key.verify_strict(message, &Signature::from_bytes(signature))
        .map_err(|_| SignError::Mismatch)
}

/// The signature algorithm name.
pub const ALG: &str = "Ed25519";

/// The signature block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureBlock {
    /// Always `Ed25519`.
    pub alg: String,
    /// Fingerprint of the public key.
    pub key_id: String,
    /// Public key, base64.
    pub public_key: String,
    /// Signature, base64.
    pub signature: String,
}

impl SignatureBlock {
    /// The block of an Ed25519 `signature` by `public_key`.
    pub fn ed25519(public_key: &[u8; 32], signature: &[u8; 64]) -> Self {
        SignatureBlock {
            alg: ALG.into(),
            key_id: key_id(public_key),
            public_key: crate::base64::encode(public_key),
            signature: crate::base64::encode(signature),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// RFC 8032 §7.1 test vectors 1–3 and SHA(abc): (secret, public, message, signature).
    const RFC8032: &[(&str, &str, &str, &str)] = &[
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
        ),
        (
            "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
            "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
        ),
        (
            "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
            "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704",
        ),
    ];

    #[test]
    fn rfc8032_known_answers() {
        for (sk, pk, msg, sig) in RFC8032 {
            let secret: [u8; 32] = hex(sk).try_into().expect("32");
            let kp = KeyPair::from_secret(secret);
            assert_eq!(kp.public_key().to_vec(), hex(pk));
            let got = kp.sign(&hex(msg));
            assert_eq!(got.to_vec(), hex(sig));
            verify(&kp.public_key(), &hex(msg), &got).expect("verifies");
        }
    }

    #[test]
    fn any_flipped_bit_fails_verification() {
        let kp = KeyPair::from_secret([7; 32]);
        let msg = br#"{"a":1,"b":"two"}"#.to_vec();
        let sig = kp.sign(&msg);
        for i in 0..msg.len() {
            let mut m = msg.clone();
            m[i] ^= 0x01;
            assert_eq!(verify(&kp.public_key(), &m, &sig), Err(SignError::Mismatch));
        }
        for i in 0..64 {
            let mut s = sig;
            s[i] ^= 0x80;
            assert!(verify(&kp.public_key(), &msg, &s).is_err());
        }
    }

    #[test]
    fn strict_verification_rejects_small_order_key() {
        // The identity point (small order): `verify` might accept forged signatures on it.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let sig = [0u8; 64];
        assert!(verify(&identity, b"x", &sig).is_err());
    }

    #[test]
    fn key_round_trips_and_id_is_stable() {
        let kp = KeyPair::from_secret([42; 32]);
        let back = KeyPair::from_secret_base64(&kp.secret_base64()).expect("secret");
        assert_eq!(back.public_key(), kp.public_key());
        assert_eq!(
            public_key_from_base64(&kp.public_key_base64()),
            Ok(kp.public_key())
        );
        let id = kp.key_id();
        assert!(id.starts_with("ed25519:") && id.len() == 8 + 32, "{id}");
        assert_ne!(id, KeyPair::from_secret([43; 32]).key_id());
        assert!(KeyPair::from_secret_base64("AAAA").is_err());
        assert!(public_key_from_base64("!!").is_err());
        assert!(signature_from_base64("AAAA").is_err());
    }

    /// RFC 8785 §3.2.2 (the example with numbers, strings and literals).
    #[test]
    fn rfc8785_example_canonical_form() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let v: serde_json::Value = serde_json::from_str(input).expect("json");
        let got = String::from_utf8(canonical_bytes(&v).expect("jcs")).expect("utf8");
        let want = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
        assert_eq!(got, want);
    }

    /// RFC 8785 §3.2.3: property sorting by UTF-16 code units.
    #[test]
    fn rfc8785_sorting() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let v: serde_json::Value = serde_json::from_str(input).expect("json");
        let got = String::from_utf8(canonical_bytes(&v).expect("jcs")).expect("utf8");
        let want = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\"\u{1F600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(got, want);
    }

    /// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
    #[test]
    fn rfc8785_number_serialisation() {
        let cases: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for &(bits, want) in cases {
            let v = f64::from_bits(bits);
            let got = String::from_utf8(canonical_bytes(&v).expect("jcs")).expect("utf8");
            assert_eq!(got, want, "bits {bits:#018x}");
        }
        // JSON has no NaN or infinities: serde_json stores them as null, in the file and in
        // the canonical form alike, so a signature always covers what the file says. (Every
        // float in our types is validated finite when parsed.)
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(canonical_bytes(&bad).expect("null"), b"null", "{bad}");
            assert_eq!(serde_json::to_string(&bad).expect("json"), "null");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod oracle {
        use proptest::prelude::*;
        use serde_json::Value;

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(Value::from),
                "\\PC*|[\\x00-\\x1f\"\\\\\u{7f}\u{2028}\u{e000}\u{ffff}\u{10000}\u{1f600}a-z]{0,8}"
                    .prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 64, 8, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                    prop::collection::btree_map(
                        "[a-z\u{e000}\u{ffff}\u{10000}\u{1f600}\u{20ac}\\x00-\\x1f]{0,4}",
                        inner,
                        0..6
                    )
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            /// The one-pass canonicaliser writes exactly what `serde_jcs` writes.
            #[test]
            fn one_pass_canonical_form_equals_serde_jcs(v in json()) {
                let ours = super::super::canonical_value(&v, &[]).bytes;
                let reference = serde_jcs::to_vec(&v).expect("serde_jcs");
                prop_assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&reference));
            }

            /// Canonicalising the text directly gives the same bytes as parsing it first.
            #[test]
            fn text_canonicaliser_equals_value_canonicaliser(v in json(), pretty in any::<bool>()) {
                let text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.expect("text");
                let parsed: Value = serde_json::from_str(&text).expect("parses");
                let via_value = super::super::canonical_value(&parsed, &["signature"]);
                match crate::jcs::canonicalize(&text, &["signature"]) {
                    Ok(direct) => prop_assert_eq!(direct, via_value),
                    // Integers beyond 2^53 are refused (a signature cannot cover them exactly).
                    Err(crate::jcs::JcsError::UnsafeInteger(_)) => {}
                    Err(e) => prop_assert!(false, "{e} on {text}"),
                }
            }

            /// A top-level member's recorded range is its own canonical form.
            #[test]
            fn member_ranges_are_canonical_members(m in prop::collection::btree_map("[a-z]{1,3}", json(), 1..5)) {
                let v = Value::Object(m.into_iter().collect());
                let doc = super::super::canonical_value(&v, &[]);
                for (k, _) in &doc.members {
                    let alone = super::super::canonical_value(&v[k.as_str()], &[]).bytes;
                    prop_assert_eq!(doc.member(k).map(<[u8]>::to_vec), Some(alone));
                }
            }
        }
    }
}
