//! Reading our typed JSON formats: one derived reader per type, driven through
//! [`from_str`], which names the path of a refused value (`body.records[3].outcome:
//! unknown variant …`). Also the JSON number and string helpers shared by the canonical
//! writer and the form.

use serde::de::DeserializeOwned;

/// Reads a `T` from JSON text through its derived reader. A refusal says where: with the
/// `paths` feature, the path of the value (`config.load.value.steps[0]: unknown field …`)
/// and its line and column; without it (the wasm bundles), the line and column and the
/// text around them ([`near`]).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    #[cfg(feature = "paths")]
    let value = {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                e.into_inner().to_string()
            } else {
                format!("{path}: {}", e.into_inner())
            }
        })?;
        de.end().map_err(|e| e.to_string())?;
        value
    };
    #[cfg(not(feature = "paths"))]
    let value = serde_json::from_str(text).map_err(|e| {
        let near = near(text, e.line(), e.column());
        if near.is_empty() {
            e.to_string()
        } else {
            format!("{e}, near “{near}”")
        }
    })?;
    Ok(value)
}

/// Up to 24 characters of `text` either side of `line:column` (1-based, as serde_json
/// counts them): where a refusal that cannot name its path points.
pub fn near(text: &str, line: usize, column: usize) -> String {
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let chars: Vec<char> = l.chars().collect();
    let at = column.min(chars.len());
    let from = at.saturating_sub(24);
    let to = (at + 24).min(chars.len());
    chars[from..to].iter().collect::<String>().trim().to_owned()
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

/// Why a tagged value (a pin, an outcome) was refused: an unknown kind, or members that are not exactly
/// its kind's (`kinds`: each kind with its members).
pub fn kind_error(what: &str, kind: &str, kinds: &[(&str, &[&str])]) -> String {
    let quoted = |xs: &mut dyn Iterator<Item = &str>| {
        xs.map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
    };
    match kinds.iter().find(|(k, _)| *k == kind) {
        Some((_, [])) => {
            format!("{what} of kind `{kind}` has no other member")
        }
        Some((_, members)) => format!(
            "{what} of kind `{kind}` has exactly the members {}",
            quoted(&mut members.iter().copied())
        ),
        None => format!(
            "unknown kind `{kind}` of {what}, expected one of {}",
            quoted(&mut kinds.iter().map(|(k, _)| *k))
        ),
    }
}

#[cfg(test)]
mod near_tests {
    use super::near;

    #[test]
    fn near_gives_the_text_around_a_position() {
        let text = "{\n  \"status\": 65536, \"id\": \"a-rather-long-identifier-that-goes-on\"\n}";
        assert_eq!(
            near(text, 2, 18),
            "\"status\": 65536, \"id\": \"a-rather-long-id"
        );
        assert_eq!(near(text, 1, 1), "{");
        assert_eq!(near(text, 9, 1), "");
        assert_eq!(near("é€😀", 1, 99), "é€😀");
    }
}
