//! Reading our typed JSON formats with one parser per type.
//!
//! serde's internally tagged enums (`#[serde(tag = "kind")]`) buffer each object into its
//! private `Content` tree and parse the variant from that, so every variant's fields get a
//! second parser, compiled once more into each wasm bundle. Here the tag is read and the
//! other members kept as their JSON text, which the variant's own plain struct then parses
//! from text, like everything else (`tagged_deserialize!`). The JSON accepted and the
//! errors given are the same: unknown fields, a missing or unknown `kind`, a duplicate
//! member are refused.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// An object's `kind` and its other members, as JSON object text.
pub struct Tagged {
    /// The tag.
    pub kind: String,
    /// `{…}`: every member but `kind`, each value as it was written.
    pub rest: String,
}

impl Tagged {
    /// Parses the other members as the variant's fields (`T` denies unknown fields).
    pub fn fields<T: de::DeserializeOwned, E: de::Error>(&self) -> Result<T, E> {
        serde_json::from_str(&self.rest).map_err(|e| E::custom(message(&e)))
    }
}

/// A decimal number's text as the nearest `f64` (correctly rounded), or `None` when it is
/// not a finite number. Accepts what people type into a form as well as JSON numbers:
/// surrounding spaces, a leading `+`, and `.5` or `5.`.
///
/// The text goes through serde_json's parser (its `float_roundtrip` feature makes it exact)
/// rather than `str::parse`, whose 20 KB table of powers of five would otherwise be
/// compiled into each wasm bundle beside serde_json's own.
pub fn parse_f64(text: &str) -> Option<f64> {
    let t = text.trim();
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => ("-", &t[1..]),
        Some(b'+') => ("", &t[1..]),
        _ => ("", t),
    };
    if !digits.bytes().any(|b| b.is_ascii_digit()) || digits.starts_with(['-', '+']) {
        return None;
    }
    let mut json = String::with_capacity(digits.len() + 3);
    json.push_str(sign);
    if digits.starts_with('.') {
        json.push('0');
    }
    json.push_str(digits);
    if digits.ends_with('.') {
        json.push('0');
    }
    serde_json::from_str::<f64>(&json)
        .ok()
        .filter(|v| v.is_finite())
}

/// A nested parse's message without its position (which is within the nested text, not
/// the document; the outer parser adds the document's).
pub fn message(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    match msg.rfind(" at line ") {
        Some(i) if e.line() > 0 => msg[..i].to_owned(),
        _ => msg,
    }
}

impl<'de> Deserialize<'de> for Tagged {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TaggedVisitor)
    }
}

struct TaggedVisitor;

impl<'de> Visitor<'de> for TaggedVisitor {
    type Value = Tagged;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with a \"kind\"")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tagged, A::Error> {
        let mut kind = None;
        let mut rest = Vec::with_capacity(64);
        let mut seen: Vec<String> = Vec::new();
        rest.push(b'{');
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
            if key == "kind" {
                kind = Some(map.next_value::<String>()?);
            } else {
                let value = map.next_value::<Box<serde_json::value::RawValue>>()?;
                if rest.len() > 1 {
                    rest.push(b',');
                }
                write_canonical_str(&mut rest, &key);
                rest.push(b':');
                rest.extend_from_slice(value.get().as_bytes());
            }
            seen.push(key);
        }
        rest.push(b'}');
        let kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
        let rest = String::from_utf8(rest).map_err(de::Error::custom)?;
        Ok(Tagged { kind, rest })
    }
}

/// `Deserialize` for an internally tagged enum (`{"kind": "<tag>", …fields}`), each
/// variant read through a plain struct of its fields (unknown fields denied):
///
/// ```text
/// tagged_deserialize!(Span {
///     "requests" => Requests { count: u32 },
///     "duration" => Duration { ms: u64 },
/// });
/// ```
///
/// The enum keeps `#[derive(Serialize)]` with `#[serde(tag = "kind")]`; a test per enum
/// round-trips every variant through both.
#[macro_export]
macro_rules! tagged_deserialize {
    ($enum:ident { $( $tag:literal => $variant:ident { $( $field:ident : $ty:ty ),* $(,)? } ),+ $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $enum {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let t = $crate::json::Tagged::deserialize(d)?;
                match t.kind.as_str() {
                    $( $tag => {
                        #[derive(serde::Deserialize)]
                        #[serde(deny_unknown_fields)]
                        struct $variant { $( $field: $ty ),* }
                        #[allow(unused_variables)]
                        let v: $variant = t.fields()?;
                        ::core::result::Result::Ok($enum::$variant { $( $field: v.$field ),* })
                    } )+
                    other => Err(serde::de::Error::unknown_variant(other, &[$( $tag ),+])),
                }
            }
        }
    };
}

/// Writes a string as RFC 8785 wants it (JSON's minimal escapes, lowercase `\u00xx`).
pub fn write_canonical_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            0x08 => Some(b"\\b"),
            0x09 => Some(b"\\t"),
            0x0a => Some(b"\\n"),
            0x0c => Some(b"\\f"),
            0x0d => Some(b"\\r"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        match esc {
            Some(e) => out.extend_from_slice(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The largest integer JSON carries exactly (2^53 − 1): larger ones are refused as pins
/// and counts, since JavaScript and RFC 8785 would round them.
pub const MAX_JSON_INTEGER: u64 = (1 << 53) - 1;
