//! RFC 8785 canonical form straight from JSON text, without building a `serde_json::Value`
//! (building, then dropping, the tree of a 10,000-request report cost more than
//! everything else the viewer does). One recursive-descent pass: members are sorted by
//! UTF-16 code units, strings re-escaped minimally, numbers printed the ECMAScript way.
//! Its output equals `core::sign::canonical_value` (a test-only oracle) of the parsed
//! text (a property test checks it), and it rejects what `serde_json` rejects plus
//! duplicate keys and integers beyond 2^53 (which a signature could not cover exactly).

/// Nesting limit (as `serde_json`'s).
pub const MAX_DEPTH: usize = 128;

/// Why text could not be canonicalised.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JcsError {
    /// Not JSON (byte offset).
    #[error("invalid JSON at byte {0}")]
    Syntax(usize),
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("nested too deeply (more than {MAX_DEPTH} levels)")]
    TooDeep,
    /// An object has the same key twice.
    #[error("duplicate key {0:?}")]
    DuplicateKey(String),
    /// An integer beyond 2^53.
    #[error("integer {0} is beyond 2^53 and cannot be signed exactly")]
    UnsafeInteger(String),
}

struct Parser<'a> {
    /// The input.
    b: &'a [u8],
    i: usize,
    depth: usize,
    /// Reused while reordering an object's members.
    scratch: Vec<u8>,
}

/// A document's canonical bytes, with where each top-level member's value sits in them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonicalDoc {
    /// RFC 8785 bytes.
    pub bytes: Vec<u8>,
    /// Top-level member name → byte range of its value (itself canonical).
    pub members: Vec<(String, std::ops::Range<usize>)>,
}

impl CanonicalDoc {
    /// The canonical bytes of a top-level member's value.
    pub fn member(&self, name: &str) -> Option<&[u8]> {
        self.members
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, r)| &self.bytes[r.clone()])
    }
}

/// Canonicalises JSON text; top-level members named in `skip` are left out, and the byte
/// range of every other top-level member's value is recorded.
pub fn canonicalize(text: &str, skip: &[&str]) -> Result<CanonicalDoc, JcsError> {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
        depth: 0,
        scratch: Vec::new(),
    };
    p.ws();
    let mut out = Vec::with_capacity(text.len());
    let mut members = Vec::new();
    if p.peek() == Some(b'{') {
        p.object(&mut out, skip, Some(&mut members))?;
    } else {
        p.value(&mut out)?;
    }
    p.ws();
    if p.i != p.b.len() {
        return Err(JcsError::Syntax(p.i));
    }
    Ok(CanonicalDoc {
        bytes: out,
        members,
    })
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), JcsError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(JcsError::Syntax(self.i))
        }
    }

    fn literal(&mut self, word: &[u8], out: &mut Vec<u8>) -> Result<(), JcsError> {
        if self.b.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            out.extend_from_slice(word);
            Ok(())
        } else {
            Err(JcsError::Syntax(self.i))
        }
    }

    fn value(&mut self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        self.ws();
        match self.peek() {
            Some(b'{') => self.object(out, &[], None),
            Some(b'[') => {
                self.enter()?;
                self.i += 1;
                out.push(b'[');
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.value(out)?;
                        self.ws();
                        match self.peek() {
                            Some(b',') => {
                                self.i += 1;
                                out.push(b',');
                            }
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(JcsError::Syntax(self.i)),
                        }
                    }
                }
                out.push(b']');
                self.depth -= 1;
                Ok(())
            }
            Some(b'"') => self.string_into(out),
            Some(b't') => self.literal(b"true", out),
            Some(b'f') => self.literal(b"false", out),
            Some(b'n') => self.literal(b"null", out),
            Some(b'-' | b'0'..=b'9') => self.number(out),
            _ => Err(JcsError::Syntax(self.i)),
        }
    }

    fn enter(&mut self) -> Result<(), JcsError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(JcsError::TooDeep);
        }
        Ok(())
    }

    /// Writes an object with its members sorted by key (UTF-16). Values are first written
    /// after `out`'s end in document order, then moved into sorted order. Members named in
    /// `skip` are dropped; when `ranges` is given, each kept member's value range is
    /// recorded there.
    fn object(
        &mut self,
        out: &mut Vec<u8>,
        skip: &[&str],
        mut ranges: Option<&mut Vec<(String, std::ops::Range<usize>)>>,
    ) -> Result<(), JcsError> {
        self.enter()?;
        self.expect(b'{')?;
        let base = out.len();
        // (key, value range within out)
        // (key, key is ASCII, value range within out)
        let mut members: Vec<(std::borrow::Cow<'_, str>, bool, std::ops::Range<usize>)> =
            Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
        } else {
            loop {
                self.ws();
                if self.peek() != Some(b'"') {
                    return Err(JcsError::Syntax(self.i));
                }
                let k = self.key()?;
                self.ws();
                self.expect(b':')?;
                let start = out.len();
                self.value(out)?;
                if skip.contains(&k.as_ref()) {
                    out.truncate(start);
                } else {
                    let ascii = k.is_ascii();
                    members.push((k, ascii, start..out.len()));
                }
                self.ws();
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b'}') => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(JcsError::Syntax(self.i)),
                }
            }
        }
        self.depth -= 1;
        crate::sort::sort_by(&mut members, |a, b| {
            if a.1 && b.1 {
                a.0.as_bytes().cmp(b.0.as_bytes())
            } else {
                utf16_cmp(&a.0, &b.0)
            }
        });
        if let Some(w) = members.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(JcsError::DuplicateKey(w[0].0.to_string()));
        }
        let mut values = std::mem::take(&mut self.scratch);
        values.clear();
        values.extend_from_slice(&out[base..]);
        out.truncate(base);
        out.push(b'{');
        for (n, (k, _, r)) in members.into_iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_str(out, &k);
            out.push(b':');
            let start = out.len();
            out.extend_from_slice(&values[r.start - base..r.end - base]);
            if let Some(rs) = ranges.as_deref_mut() {
                rs.push((k.into_owned(), start..out.len()));
            }
        }
        out.push(b'}');
        self.scratch = values;
        Ok(())
    }

    /// A key: borrowed from the input when it has no escapes.
    fn key(&mut self) -> Result<std::borrow::Cow<'a, str>, JcsError> {
        let start = self.i + 1;
        let mut j = start;
        while let Some(&c) = self.b.get(j) {
            if c == b'"' {
                let k =
                    std::str::from_utf8(&self.b[start..j]).map_err(|_| JcsError::Syntax(start))?;
                self.i = j + 1;
                return Ok(std::borrow::Cow::Borrowed(k));
            }
            if c == b'\\' || c < 0x20 {
                break;
            }
            j += 1;
        }
        self.string().map(std::borrow::Cow::Owned)
    }

    /// A string value: copied verbatim when it has no escapes (its canonical form is then
    /// the same bytes), else decoded and re-escaped.
    fn string_into(&mut self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        let start = self.i + 1;
        let rest = self.b.get(start..).unwrap_or(&[]);
        if let Some(n) = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        {
            if rest[n] == b'"' {
                out.extend_from_slice(&self.b[self.i..=start + n]);
                self.i = start + n + 1;
                return Ok(());
            }
        }
        let s = self.string()?;
        write_str(out, &s);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, JcsError> {
        let h = self
            .b
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or(JcsError::Syntax(self.i))?;
        self.i += 4;
        Ok(h)
    }

    fn string(&mut self) -> Result<String, JcsError> {
        self.expect(b'"')?;
        let mut s = String::new();
        loop {
            let start = self.i;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            // The input is a &str, so any run between ASCII delimiters is valid UTF-8.
            s.push_str(
                std::str::from_utf8(&self.b[start..self.i]).map_err(|_| JcsError::Syntax(start))?,
            );
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(s);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let e = self.peek().ok_or(JcsError::Syntax(self.i))?;
                    self.i += 1;
                    match e {
                        b'"' => s.push('"'),
                        b'\\' => s.push('\\'),
                        b'/' => s.push('/'),
                        b'b' => s.push('\u{8}'),
                        b'f' => s.push('\u{c}'),
                        b'n' => s.push('\n'),
                        b'r' => s.push('\r'),
                        b't' => s.push('\t'),
                        b'u' => {
                            let at = self.i;
                            let u = self.hex4()?;
                            let c = if (0xD800..0xDC00).contains(&u) {
                                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return Err(JcsError::Syntax(at));
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(JcsError::Syntax(at));
                                }
                                char::from_u32(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00))
                            } else {
                                char::from_u32(u)
                            };
                            s.push(c.ok_or(JcsError::Syntax(at))?);
                        }
                        _ => return Err(JcsError::Syntax(self.i - 1)),
                    }
                }
                _ => return Err(JcsError::Syntax(self.i)),
            }
        }
    }

    fn number(&mut self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.i += 1;
            }
            p.i - s
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        let n = digits(self);
        if n == 0 || (n > 1 && self.b[int_start] == b'0') {
            return Err(JcsError::Syntax(int_start));
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.i += 1;
            if digits(self) == 0 {
                return Err(JcsError::Syntax(self.i));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(JcsError::Syntax(self.i));
            }
        }
        let text =
            std::str::from_utf8(&self.b[start..self.i]).map_err(|_| JcsError::Syntax(start))?;
        // Largest integer a double holds exactly, and so a signature covers exactly.
        const SAFE: u64 = (1 << 53) - 1;
        if integer {
            // serde_json keeps integers that fit in 64 bits as integers.
            let (neg, mag) = match text.strip_prefix('-') {
                Some(m) => (true, m),
                None => (false, text),
            };
            if let Ok(m) = mag.parse::<u64>() {
                let fits = if neg { m <= 1 << 63 } else { true };
                if fits {
                    if m > SAFE {
                        return Err(JcsError::UnsafeInteger(text.into()));
                    }
                    if neg && m == 0 {
                        out.push(b'0');
                    } else {
                        // JSON forbids leading zeros, so the digits are already canonical.
                        out.extend_from_slice(text.as_bytes());
                    }
                    return Ok(());
                }
            }
        }
        let f = crate::json::parse_f64(text).ok_or(JcsError::Syntax(start))?;
        if f == 0.0 {
            out.push(b'0');
        } else {
            let mut buf = ryu_js::Buffer::new();
            out.extend_from_slice(buf.format(f).as_bytes());
        }
        Ok(())
    }
}

fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    crate::json::write_canonical_str(out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_what_json_rejects() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "-",
            "1e",
            "\"\\x\"",
            "\"a",
            "tru",
            "{\"a\" 1}",
            "[1 2]",
            "\"\\ud800\"",
            "\"\\ud800\\u0041\"",
            "1 2",
            "\"\u{1}\"",
        ] {
            assert!(canonicalize(bad, &[]).is_err(), "{bad:?}");
            assert!(
                serde_json::from_str::<serde_json::Value>(bad).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn limits_and_duplicates() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(canonicalize(&deep, &[]), Err(JcsError::TooDeep));
        assert!(
            matches!(canonicalize("{\"a\":1,\"a\":2}", &[]), Err(JcsError::DuplicateKey(k)) if k == "a")
        );
        assert!(matches!(
            canonicalize("[9007199254740992]", &[]),
            Err(JcsError::UnsafeInteger(_))
        ));
        assert!(canonicalize("[9007199254740991, -9007199254740991]", &[]).is_ok());
    }

    #[test]
    fn skips_and_ranges() {
        let d = canonicalize(
            r#"{ "z": [1, 2.50], "signature": {"x": 1}, "a": {"y": "\u00e9", "b": -0} }"#,
            &["signature"],
        )
        .expect("ok");
        assert_eq!(
            String::from_utf8_lossy(&d.bytes),
            r#"{"a":{"b":0,"y":"é"},"z":[1,2.5]}"#
        );
        assert_eq!(d.member("z"), Some(&b"[1,2.5]"[..]));
    }
}
