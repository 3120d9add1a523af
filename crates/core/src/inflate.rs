//! DEFLATE decoding (RFC 1951, and the zlib wrapper of RFC 1950) with an output cap, for
//! the three compressed forms pinbench reads: earlier reports' histograms (HdrHistogram's
//! V2 + DEFLATE), earlier records' chunk data, and card links.
//!
//! Why not `miniz_oxide`'s inflater: its speed comes from lookup tables and a large state
//! (about 5 KB of the app's wasm after gzip, the card page's too); the inputs here are a few
//! KB each. This decoder follows zlib's reference decoder `puff` (canonical Huffman codes
//! decoded bit by bit). It never panics on any input (every index is checked), refuses
//! what RFC 1951 does not allow, and stops at `limit` output bytes. `tests/inflate.rs`
//! holds it to `miniz_oxide` (still the compressor of the native command's card links):
//! every stream `miniz_oxide` writes, at every level, inflates to its input, and on
//! damaged streams whatever both accept inflates the same.

/// Why a stream could not be inflated.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InflateError {
    /// The output would pass the cap.
    #[error("inflates past the limit of {0} bytes")]
    TooLarge(usize),
    /// Not a valid stream.
    #[error("not DEFLATE data: {0}")]
    Damaged(&'static str),
}

use InflateError::Damaged;

/// Largest code length.
const MAX_BITS: usize = 15;

/// Base lengths of length symbols 257..=285, and their extra bits.
const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// Base distances of distance symbols 0..=29, and their extra bits.
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// The order of the code length code's lengths in a dynamic block header.
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// Inflates a raw DEFLATE stream into at most `limit` bytes.
pub fn inflate(data: &[u8], limit: usize) -> Result<Vec<u8>, InflateError> {
    inflate_at(data, limit).map(|(out, _)| out)
}

/// Inflates a zlib stream (RFC 1950: header, DEFLATE data, Adler-32 of the output) into at
/// most `limit` bytes.
pub fn inflate_zlib(data: &[u8], limit: usize) -> Result<Vec<u8>, InflateError> {
    let (head, rest) = data
        .split_first_chunk::<2>()
        .ok_or(Damaged("no zlib header"))?;
    let [cmf, flg] = *head;
    if cmf & 0x0f != 8 || cmf >> 4 > 7 || (u16::from(cmf) << 8 | u16::from(flg)) % 31 != 0 {
        return Err(Damaged("not a zlib header"));
    }
    if flg & 0x20 != 0 {
        return Err(Damaged("a zlib preset dictionary"));
    }
    let (out, end) = inflate_at(rest, limit)?;
    let want = rest
        .get(end..)
        .and_then(|t| t.first_chunk::<4>())
        .map(|t| u32::from_be_bytes(*t))
        .ok_or(Damaged("no Adler-32 trailer"))?;
    if adler32(&out) != want {
        return Err(Damaged("the Adler-32 check does not match"));
    }
    Ok(out)
}

/// The output, and where in `data` the stream ended (the byte after its last bit).
fn inflate_at(data: &[u8], limit: usize) -> Result<(Vec<u8>, usize), InflateError> {
    let mut s = State {
        data,
        pos: 0,
        buf: 0,
        cnt: 0,
        out: Vec::new(),
        limit,
    };
    loop {
        let last = s.bits(1)? == 1;
        match s.bits(2)? {
            0 => s.stored()?,
            1 => {
                let (lit, dist) = fixed();
                s.codes(&lit, &dist)?;
            }
            2 => {
                let (lit, dist) = s.dynamic()?;
                s.codes(&lit, &dist)?;
            }
            _ => return Err(Damaged("a block of the reserved type 3")),
        }
        if last {
            // Whole bytes still buffered were read ahead, not used.
            let end = s.pos - (s.cnt / 8) as usize;
            return Ok((s.out, end));
        }
    }
}

/// Adler-32 (RFC 1950).
fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in bytes.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    b << 16 | a
}

/// A canonical Huffman code: how many codes of each length, and the symbols in code order.
struct Huffman {
    count: [u16; MAX_BITS + 1],
    symbol: Vec<u16>,
}

impl Huffman {
    /// The code of these code lengths (0: symbol unused). `Err` when the lengths
    /// over-subscribe the code; `Ok((code, incomplete))` otherwise.
    fn new(lengths: &[u8]) -> Result<(Self, bool), InflateError> {
        let mut count = [0u16; MAX_BITS + 1];
        for &l in lengths {
            *count
                .get_mut(usize::from(l))
                .ok_or(Damaged("a code length over 15"))? += 1;
        }
        // Codes left at each length: negative means over-subscribed.
        let mut left: i32 = 1;
        for &c in &count[1..] {
            left = (left << 1) - i32::from(c);
            if left < 0 {
                return Err(Damaged("an over-subscribed Huffman code"));
            }
        }
        let mut offs = [0u16; MAX_BITS + 2];
        for len in 1..=MAX_BITS {
            offs[len + 1] = offs[len] + count[len];
        }
        let mut symbol = vec![0u16; lengths.len()];
        for (sym, &l) in lengths.iter().enumerate() {
            if l != 0 {
                let o = &mut offs[usize::from(l)];
                if let Some(slot) = symbol.get_mut(usize::from(*o)) {
                    *slot = sym as u16;
                }
                *o += 1;
            }
        }
        count[0] = 0;
        Ok((Huffman { count, symbol }, left > 0))
    }
}

/// The fixed codes (RFC 1951 3.2.6).
fn fixed() -> (Huffman, Huffman) {
    let mut lengths = [0u8; 288];
    for (i, l) in lengths.iter_mut().enumerate() {
        *l = match i {
            0..=143 => 8,
            144..=255 => 9,
            256..=279 => 7,
            _ => 8,
        };
    }
    // Both are complete codes: neither can fail.
    let lit = Huffman::new(&lengths).map_or_else(|_| empty(), |(h, _)| h);
    let dist = Huffman::new(&[5u8; 30]).map_or_else(|_| empty(), |(h, _)| h);
    (lit, dist)
}

fn empty() -> Huffman {
    Huffman {
        count: [0; MAX_BITS + 1],
        symbol: Vec::new(),
    }
}

struct State<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u32,
    cnt: u32,
    out: Vec<u8>,
    limit: usize,
}

impl State<'_> {
    /// The next `n` (≤ 16) bits, least significant first.
    fn bits(&mut self, n: u32) -> Result<u32, InflateError> {
        while self.cnt < n {
            let b = *self
                .data
                .get(self.pos)
                .ok_or(Damaged("the stream ends early"))?;
            self.pos += 1;
            self.buf |= u32::from(b) << self.cnt;
            self.cnt += 8;
        }
        let v = self.buf & ((1u32 << n) - 1);
        self.buf >>= n;
        self.cnt -= n;
        Ok(v)
    }

    fn push(&mut self, b: u8) -> Result<(), InflateError> {
        if self.out.len() >= self.limit {
            return Err(InflateError::TooLarge(self.limit));
        }
        self.out.push(b);
        Ok(())
    }

    /// A stored block: byte-aligned `LEN`, `NLEN` (its complement), then `LEN` bytes.
    fn stored(&mut self) -> Result<(), InflateError> {
        self.buf = 0;
        self.cnt = 0;
        let head = self
            .data
            .get(self.pos..self.pos + 4)
            .ok_or(Damaged("the stream ends early"))?;
        let len = u16::from_le_bytes([head[0], head[1]]);
        if len != !u16::from_le_bytes([head[2], head[3]]) {
            return Err(Damaged(
                "a stored block's length does not match its complement",
            ));
        }
        self.pos += 4;
        let bytes = self
            .data
            .get(self.pos..self.pos + usize::from(len))
            .ok_or(Damaged("the stream ends early"))?;
        if self.out.len() + bytes.len() > self.limit {
            return Err(InflateError::TooLarge(self.limit));
        }
        self.out.extend_from_slice(bytes);
        self.pos += usize::from(len);
        Ok(())
    }

    /// One symbol of code `h`.
    fn decode(&mut self, h: &Huffman) -> Result<u16, InflateError> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..=MAX_BITS {
            code |= self.bits(1)? as i32;
            let count = i32::from(h.count[len]);
            if code - count < first {
                return h
                    .symbol
                    .get((index + code - first) as usize)
                    .copied()
                    .ok_or(Damaged("a code outside its table"));
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(Damaged("a code that is not in its table"))
    }

    /// A dynamic block's header: its literal/length and distance codes.
    fn dynamic(&mut self) -> Result<(Huffman, Huffman), InflateError> {
        let nlen = self.bits(5)? as usize + 257;
        let ndist = self.bits(5)? as usize + 1;
        let ncode = self.bits(4)? as usize + 4;
        if nlen > 286 || ndist > 30 {
            return Err(Damaged("too many length or distance codes"));
        }
        let mut cl = [0u8; 19];
        for &i in &CL_ORDER[..ncode] {
            cl[i] = self.bits(3)? as u8;
        }
        let (lencode, incomplete) = Huffman::new(&cl)?;
        if incomplete {
            return Err(Damaged("an incomplete code length code"));
        }
        let mut lengths = [0u8; 286 + 30];
        let mut i = 0;
        while i < nlen + ndist {
            let sym = self.decode(&lencode)?;
            if sym < 16 {
                lengths[i] = sym as u8;
                i += 1;
                continue;
            }
            let (value, repeat) = match sym {
                16 => {
                    let prev = *i
                        .checked_sub(1)
                        .and_then(|p| lengths.get(p))
                        .ok_or(Damaged("a repeat with no length before it"))?;
                    (prev, 3 + self.bits(2)? as usize)
                }
                17 => (0, 3 + self.bits(3)? as usize),
                _ => (0, 11 + self.bits(7)? as usize),
            };
            if i + repeat > nlen + ndist {
                return Err(Damaged("code lengths past the codes' count"));
            }
            lengths[i..i + repeat].fill(value);
            i += repeat;
        }
        if lengths[256] == 0 {
            return Err(Damaged("no end-of-block code"));
        }
        // Incomplete codes are allowed only when they hold a single code (RFC 1951 leaves
        // them undefined; zlib accepts exactly this case).
        let single = |h: &Huffman| h.count[1] == 1 && h.count[2..].iter().all(|&c| c == 0);
        let (lit, incomplete) = Huffman::new(&lengths[..nlen])?;
        if incomplete && !single(&lit) {
            return Err(Damaged("an incomplete literal/length code"));
        }
        let (dist, incomplete) = Huffman::new(&lengths[nlen..nlen + ndist])?;
        if incomplete && !(single(&dist) || dist.count.iter().all(|&c| c == 0)) {
            return Err(Damaged("an incomplete distance code"));
        }
        Ok((lit, dist))
    }

    /// A block's symbols up to its end-of-block code.
    fn codes(&mut self, lit: &Huffman, dist: &Huffman) -> Result<(), InflateError> {
        loop {
            let sym = self.decode(lit)?;
            match sym {
                0..=255 => self.push(sym as u8)?,
                256 => return Ok(()),
                _ => {
                    let s = usize::from(sym - 257);
                    let (&base, &extra) = LEN_BASE
                        .get(s)
                        .zip(LEN_EXTRA.get(s))
                        .ok_or(Damaged("an invalid length symbol"))?;
                    let len = usize::from(base) + self.bits(u32::from(extra))? as usize;
                    let d = usize::from(self.decode(dist)?);
                    let (&base, &extra) = DIST_BASE
                        .get(d)
                        .zip(DIST_EXTRA.get(d))
                        .ok_or(Damaged("an invalid distance symbol"))?;
                    let back = usize::from(base) + self.bits(u32::from(extra))? as usize;
                    let from = self
                        .out
                        .len()
                        .checked_sub(back)
                        .ok_or(Damaged("a distance before the start of the output"))?;
                    if self.out.len() + len > self.limit {
                        return Err(InflateError::TooLarge(self.limit));
                    }
                    for k in from..from + len {
                        // `k` is below the length: `from` is, and the output grows by
                        // one per step.
                        let b = self.out.get(k).copied().unwrap_or(0);
                        self.out.push(b);
                    }
                }
            }
        }
    }
}
