//! A bounded MessagePack reader: walks, counts and skips values without building them.
//!
//! Code object metadata (`NT_AMDGPU_METADATA`, AMDGPUUsage "Code Object V3+ Metadata") and
//! Tensile `.dat` libraries are MessagePack. We only need a few facts from each (the length of
//! `amdhsa.kernels`, the `amdhsa.target` string), so this walks the encoding with `rmp`'s marker
//! decoder and never allocates by a length the data claims; nesting is capped at [`MAX_DEPTH`].
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use rmp::Marker;

use super::{ByteSource, ParseError, Result};

/// Deepest nesting the walker follows before calling the data malformed.
pub const MAX_DEPTH: usize = 64;
/// Bytes read from the source at a time.
const CHUNK: usize = 1 << 20;
/// Longest string the reader will return (keys, names; longer ones are skipped, not read).
pub const MAX_STR: u64 = 1 << 20;

/// A forward cursor over one MessagePack document in a [`ByteSource`], read in chunks so a
/// document of any size costs one chunk of memory.
pub struct Reader<'a> {
    src: &'a dyn ByteSource,
    /// `src.len()`, asked once.
    total: u64,
    pos: u64,
    buf: Vec<u8>,
    buf_start: u64,
}

fn bad(what: &'static str, offset: u64) -> ParseError {
    ParseError::Malformed { what, offset }
}

impl<'a> Reader<'a> {
    /// A reader at the start of `src`.
    pub fn new(src: &'a dyn ByteSource) -> Self {
        Reader { src, total: src.len(), pos: 0, buf: Vec::new(), buf_start: 0 }
    }

    /// Where the reader stands, in bytes from the start.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn remaining(&self) -> u64 {
        self.total.saturating_sub(self.pos)
    }

    /// Makes the buffer hold `[pos, pos + n)`, reading a chunk (or `n` bytes) when it does not.
    fn fill(&mut self, n: u64) -> Result<()> {
        if n > self.remaining() {
            return Err(ParseError::Truncated { what: "msgpack value", offset: self.pos });
        }
        if self.pos < self.buf_start || self.pos + n > self.buf_start + self.buf.len() as u64 {
            // Nothing before this point is read again: a stream may drop it (a `.dat.zlib`
            // index then costs one window, not its whole inflated size).
            self.src.release_before(self.pos);
            self.buf = self.src.read_up_to(self.pos, CHUNK.max(n as usize))?.into_owned();
            self.buf_start = self.pos;
        }
        Ok(())
    }

    /// The next `n` bytes, advancing past them (for strings; `n` is at most [`MAX_STR`]).
    fn take(&mut self, n: u64) -> Result<Vec<u8>> {
        self.fill(n)?;
        let at = (self.pos - self.buf_start) as usize;
        self.pos += n;
        Ok(self.buf.get(at..at + n as usize).unwrap_or(&[]).to_vec())
    }

    /// Moves past the `n` payload bytes of the value whose header is at `at` (blamed if they run
    /// past the end), without reading them.
    fn advance(&mut self, n: u64, at: u64) -> Result<()> {
        if n > self.remaining() {
            return Err(ParseError::Truncated { what: "msgpack value", offset: at });
        }
        self.pos += n;
        Ok(())
    }

    /// A big-endian integer of `n` (at most 8) bytes, read in place.
    fn be(&mut self, n: u64) -> Result<u64> {
        self.fill(n)?;
        let at = (self.pos - self.buf_start) as usize;
        self.pos += n;
        Ok(self
            .buf
            .get(at..at + n as usize)
            .unwrap_or(&[])
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// The next marker.
    pub fn marker(&mut self) -> Result<Marker> {
        Ok(Marker::from_u8(self.be(1)? as u8))
    }

    /// Length of the string whose marker is `m`, if it is one.
    fn str_len(&mut self, m: Marker) -> Result<Option<u64>> {
        Ok(Some(match m {
            Marker::FixStr(n) => u64::from(n),
            Marker::Str8 => self.be(1)?,
            Marker::Str16 => self.be(2)?,
            Marker::Str32 => self.be(4)?,
            _ => return Ok(None),
        }))
    }

    /// The next value, which must be a string; returned as raw bytes.
    pub fn str_bytes(&mut self) -> Result<Vec<u8>> {
        let at = self.pos;
        let m = self.marker()?;
        match self.str_len(m)? {
            Some(n) if n <= MAX_STR => self.take(n),
            Some(_) => Err(bad("msgpack string too long", at)),
            None => Err(bad("msgpack string expected", at)),
        }
    }

    /// Length of the array or map whose marker is `m` (maps count pairs).
    fn container_len(&mut self, m: Marker) -> Result<Option<(u64, bool)>> {
        Ok(Some(match m {
            Marker::FixArray(n) => (u64::from(n), false),
            Marker::Array16 => (self.be(2)?, false),
            Marker::Array32 => (self.be(4)?, false),
            Marker::FixMap(n) => (u64::from(n), true),
            Marker::Map16 => (self.be(2)?, true),
            Marker::Map32 => (self.be(4)?, true),
            _ => return Ok(None),
        }))
    }

    /// The next value, which must be an array: its length.
    pub fn array_len(&mut self) -> Result<u64> {
        let at = self.pos;
        let m = self.marker()?;
        match self.container_len(m)? {
            Some((n, false)) => Ok(n),
            _ => Err(bad("msgpack array expected", at)),
        }
    }

    /// The next value, which must be a map: its number of pairs.
    pub fn map_len(&mut self) -> Result<u64> {
        let at = self.pos;
        let m = self.marker()?;
        match self.container_len(m)? {
            Some((n, true)) => Ok(n),
            _ => Err(bad("msgpack map expected", at)),
        }
    }

    /// The next value, which must be an unsigned or non-negative integer.
    pub fn uint(&mut self) -> Result<u64> {
        let at = self.pos;
        match self.marker()? {
            Marker::FixPos(n) => Ok(u64::from(n)),
            Marker::U8 | Marker::I8 => self.be(1),
            Marker::U16 | Marker::I16 => self.be(2),
            Marker::U32 | Marker::I32 => self.be(4),
            Marker::U64 | Marker::I64 => self.be(8),
            _ => Err(bad("msgpack integer expected", at)),
        }
    }

    /// Bytes that follow a scalar marker (strings, binaries and extensions included).
    fn scalar_len(&mut self, m: Marker, at: u64) -> Result<u64> {
        if let Some(n) = self.str_len(m)? {
            return Ok(n);
        }
        Ok(match m {
            Marker::Null | Marker::True | Marker::False | Marker::FixPos(_) | Marker::FixNeg(_) => 0,
            Marker::U8 | Marker::I8 => 1,
            Marker::U16 | Marker::I16 => 2,
            Marker::U32 | Marker::I32 | Marker::F32 => 4,
            Marker::U64 | Marker::I64 | Marker::F64 => 8,
            Marker::Bin8 => self.be(1)?,
            Marker::Bin16 => self.be(2)?,
            Marker::Bin32 => self.be(4)?,
            Marker::FixExt1 => 2,
            Marker::FixExt2 => 3,
            Marker::FixExt4 => 5,
            Marker::FixExt8 => 9,
            Marker::FixExt16 => 17,
            Marker::Ext8 => self.be(1)? + 1,
            Marker::Ext16 => self.be(2)? + 1,
            Marker::Ext32 => self.be(4)? + 1,
            _ => return Err(bad("msgpack reserved marker", at)),
        })
    }

    /// Skips one whole value, however deeply nested.
    ///
    /// The hot path of walking a 100 MB Tensile library. Skipping needs no stack: a container
    /// only adds its items to the count of values still to step over, so nesting costs nothing
    /// and cannot overflow anything. Values whose headers sit wholly in the buffer are decoded
    /// in a tight loop; string and binary payloads are stepped over unread.
    pub fn skip(&mut self) -> Result<()> {
        let mut left: u64 = 1;
        while left > 0 {
            let buffered =
                self.pos >= self.buf_start && self.pos + 9 <= self.buf_start + self.buf.len() as u64;
            if buffered {
                let (pos, rest) = skip_buffered(&self.buf, self.buf_start, self.pos, self.total, left)?;
                self.pos = pos;
                left = rest;
                if left == 0 {
                    break;
                }
            }
            // The next header runs past the buffer (or the buffer is elsewhere): one value the
            // slow way, which refills.
            let at = self.pos;
            self.fill(self.remaining().min(9))?;
            let start = (self.pos - self.buf_start) as usize;
            let head = self.buf.get(start..).unwrap_or(&[]);
            let (len, item) = value_head(head).ok_or_else(|| match head.first() {
                Some(0xc1) => bad("msgpack reserved marker", at),
                _ => ParseError::Truncated { what: "msgpack value", offset: at },
            })?;
            self.pos += len as u64;
            left -= 1;
            match item {
                // A payload past the end is blamed on its header, as in `skip_buffered`.
                Item::Skip(n) => self.advance(n, at)?,
                Item::Items(n) => left = add_items(left, n, self.remaining(), at)?,
            }
        }
        Ok(())
    }

    /// The next value's header: a container's length (its items follow, unread), a string's
    /// bytes, or any other scalar stepped over. For walks that look at a few keys of a large
    /// tree without building it.
    pub fn shallow(&mut self) -> Result<Shallow> {
        let at = self.pos;
        let m = self.marker()?;
        if let Some((n, is_map)) = self.container_len(m)? {
            return Ok(if is_map { Shallow::Map(n) } else { Shallow::Array(n) });
        }
        if let Some(n) = self.str_len(m)? {
            if n > MAX_STR {
                return Err(bad("msgpack string too long", at));
            }
            return Ok(Shallow::Str(self.take(n)?));
        }
        let n = self.scalar_len(m, at)?;
        self.advance(n, at)?;
        Ok(Shallow::Scalar)
    }

    /// Skips the items of a container [`Reader::shallow`] opened (nothing for a scalar).
    pub fn skip_rest(&mut self, opened: &Shallow) -> Result<()> {
        let items = match *opened {
            Shallow::Map(n) => n.saturating_mul(2),
            Shallow::Array(n) => n,
            _ => 0,
        };
        for _ in 0..items {
            self.skip()?;
        }
        Ok(())
    }

    /// Reads one small value whole: at most `budget` items in all, else an error.
    pub fn value(&mut self, budget: &mut u32, depth: usize) -> Result<Value> {
        let at = self.pos;
        if *budget == 0 || depth > MAX_DEPTH {
            return Err(bad("msgpack value too large to read whole", at));
        }
        *budget -= 1;
        let m = self.marker()?;
        if let Some((n, is_map)) = self.container_len(m)? {
            if n > u64::from(*budget) {
                return Err(bad("msgpack value too large to read whole", at));
            }
            return if is_map {
                let mut pairs = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let k = self.value(budget, depth + 1)?;
                    let v = self.value(budget, depth + 1)?;
                    pairs.push((k, v));
                }
                Ok(Value::Map(pairs))
            } else {
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value(budget, depth + 1)?);
                }
                Ok(Value::Array(items))
            };
        }
        if let Some(n) = self.str_len(m)? {
            if n > MAX_STR {
                return Err(bad("msgpack string too long", at));
            }
            return Ok(Value::Str(String::from_utf8_lossy(&self.take(n)?).into_owned()));
        }
        let value = match m {
            Marker::FixPos(n) => Value::Int(i128::from(n)),
            Marker::FixNeg(n) => Value::Int(i128::from(n)),
            Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => {
                let n = self.scalar_len(m, at)?;
                Value::Int(i128::from(self.be(n)?))
            }
            _ => {
                let n = self.scalar_len(m, at)?;
                self.advance(n, at)?;
                Value::Other
            }
        };
        Ok(value)
    }
}

/// A value as [`Reader::shallow`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shallow {
    /// A map of this many pairs; they follow.
    Map(u64),
    /// An array of this many items; they follow.
    Array(u64),
    /// A string's bytes.
    Str(Vec<u8>),
    /// Any other value, already stepped over.
    Scalar,
}

/// What follows a value's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    /// Payload bytes to step over.
    Skip(u64),
    /// Values inside a container (maps count keys and values).
    Items(u64),
}

/// Decodes a value's header from `b` per the MessagePack spec: `(header length, what follows)`.
/// `None` when `b` is too short or starts with the reserved marker 0xc1.
fn value_head(b: &[u8]) -> Option<(usize, Item)> {
    let be = |n: usize| -> Option<u64> {
        Some(b.get(1..1 + n)?.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    };
    let m = *b.first()?;
    Some(match m {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, Item::Skip(0)),
        0x80..=0x8f => (1, Item::Items(2 * u64::from(m & 0x0f))),
        0x90..=0x9f => (1, Item::Items(u64::from(m & 0x0f))),
        0xa0..=0xbf => (1, Item::Skip(u64::from(m & 0x1f))),
        0xc4 | 0xd9 => (2, Item::Skip(be(1)?)),
        0xc5 | 0xda => (3, Item::Skip(be(2)?)),
        0xc6 | 0xdb => (5, Item::Skip(be(4)?)),
        0xc7 => (2, Item::Skip(be(1)? + 1)),
        0xc8 => (3, Item::Skip(be(2)? + 1)),
        0xc9 => (5, Item::Skip(be(4)? + 1)),
        0xca => (1, Item::Skip(4)),
        0xcb => (1, Item::Skip(8)),
        0xcc | 0xd0 => (1, Item::Skip(1)),
        0xcd | 0xd1 => (1, Item::Skip(2)),
        0xce | 0xd2 => (1, Item::Skip(4)),
        0xcf | 0xd3 => (1, Item::Skip(8)),
        0xd4 => (1, Item::Skip(2)),
        0xd5 => (1, Item::Skip(3)),
        0xd6 => (1, Item::Skip(5)),
        0xd7 => (1, Item::Skip(9)),
        0xd8 => (1, Item::Skip(17)),
        0xdc => (3, Item::Items(be(2)?)),
        0xdd => (5, Item::Items(be(4)?)),
        0xde => (3, Item::Items(2 * be(2)?)),
        0xdf => (5, Item::Items(2 * be(4)?)),
        0xc1 => return None,
    })
}

/// Adds a container's `n` items to the `left` values still to skip. Every value takes at least
/// one byte, so more values than `remaining` bytes is a lie, told by the container at `at`.
fn add_items(left: u64, n: u64, remaining: u64, at: u64) -> Result<u64> {
    match left.checked_add(n) {
        Some(l) if l <= remaining => Ok(l),
        _ => Err(ParseError::Truncated { what: "msgpack container", offset: at }),
    }
}

/// Skips values whose headers lie wholly in `buf` (which starts at `buf_start` in a document
/// of `total` bytes), from `pos`, with `left` values to go. Returns where it stopped and how
/// many values are left: it stops when none are, or when the next header is not wholly
/// buffered. Payloads may end past the buffer; a payload past the document's end is an error.
fn skip_buffered(buf: &[u8], buf_start: u64, pos: u64, total: u64, mut left: u64) -> Result<(u64, u64)> {
    let mut i = (pos - buf_start) as usize;
    // Where the last value stepped over began: the one to blame if the walk ends past `total`.
    let mut last = i;
    while left > 0 {
        let Some(&m) = buf.get(i) else { break };
        // Headers whose marker alone says how long the value is (fixed-size scalars, short
        // strings, fix containers: 85% of a Tensile library's values) take one table lookup.
        let (len, items) = by_marker(m);
        if len != 0 {
            left = left - 1 + u64::from(items);
            last = i;
            i += usize::from(len);
            continue;
        }
        let Some(h) = buf.get(i..i.saturating_add(9)) else { break };
        let at = buf_start + i as u64;
        left -= 1;
        let (len, payload) = match value_head(h) {
            Some((len, Item::Skip(n))) => (len, n),
            Some((len, Item::Items(n))) => {
                let end = at + len as u64;
                left = add_items(left, n, total.saturating_sub(end), at)?;
                (len, 0)
            }
            None => return Err(bad("msgpack reserved marker", at)),
        };
        let next = (at + len as u64).checked_add(payload).filter(|&e| e <= total);
        let Some(next) = next else {
            return Err(ParseError::Truncated { what: "msgpack value", offset: at });
        };
        last = i;
        i = (next - buf_start) as usize;
    }
    let end = buf_start + i as u64;
    if end > total {
        return Err(ParseError::Truncated { what: "msgpack value", offset: buf_start + last as u64 });
    }
    Ok((end, left))
}

/// What a marker alone says of its value: `(whole length, values it holds)`, from [`BY_MARKER`].
#[allow(clippy::indexing_slicing)] // a `u8` indexes 256 entries: never out of bounds
fn by_marker(m: u8) -> (u8, u8) {
    BY_MARKER[usize::from(m)]
}

/// For each marker byte: the whole value's length when the marker alone fixes it (0 when a
/// length field follows, as for strings over 31 bytes, binaries, extensions and containers
/// over 15, and for the reserved 0xc1), and the values a fix container holds (a fix map
/// counts keys and values).
#[allow(clippy::indexing_slicing)] // built at compile time: a bad index would not compile
static BY_MARKER: [(u8, u8); 256] = {
    let mut t = [(0u8, 0u8); 256];
    let mut m = 0usize;
    while m < 256 {
        let low = m as u8 & 0x1f;
        t[m] = match m as u8 {
            0x80..=0x8f => (1, 2 * (low & 0x0f)),
            0x90..=0x9f => (1, low & 0x0f),
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, 0),
            0xa0..=0xbf => (1 + low, 0),
            0xcc | 0xd0 => (2, 0),
            0xcd | 0xd1 => (3, 0),
            0xca | 0xce | 0xd2 => (5, 0),
            0xcb | 0xcf | 0xd3 => (9, 0),
            0xd4 => (3, 0),
            0xd5 => (4, 0),
            0xd6 => (6, 0),
            0xd7 => (10, 0),
            0xd8 => (18, 0),
            _ => (0, 0),
        };
        m += 1;
    }
    t
};

/// A small MessagePack value read whole (predicates, short maps); large data is never built.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i128),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    /// Booleans, floats, nil, binaries, signed integers: not needed by gfxscan.
    Other,
}

impl Value {
    /// The value of `key` in a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(pairs) => pairs.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// What the code object metadata map says, as far as gfxscan needs it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KernelMetadata {
    /// `len(amdhsa.kernels)`.
    pub kernels: Option<u64>,
    /// `amdhsa.target`, e.g. `amdgcn-amd-amdhsa--gfx90a:xnack-` (V4+).
    pub target: Option<String>,
    /// `amdhsa.version` as `[major, minor]`.
    pub version: Option<(u64, u64)>,
}

/// The kernel count, when `amdhsa.kernels` is the map's first key (LLVM's msgpack writer sorts
/// keys, so it is), read from a prefix of the descriptor; `None` when the prefix does not say.
pub fn leading_kernel_count(prefix: &[u8]) -> Option<u64> {
    let mut rd = Reader::new(&prefix);
    if rd.map_len().ok()? == 0 || rd.str_bytes().ok()? != b"amdhsa.kernels" {
        return None;
    }
    rd.array_len().ok()
}

/// Reads the facts gfxscan needs from a whole `NT_AMDGPU_METADATA` note descriptor.
pub fn parse_kernel_metadata(buf: &[u8]) -> Result<KernelMetadata> {
    let mut rd = Reader::new(&buf);
    let mut out = KernelMetadata::default();
    let pairs = rd.map_len()?;
    for _ in 0..pairs {
        let key = rd.str_bytes()?;
        match key.as_slice() {
            b"amdhsa.kernels" => {
                let n = rd.array_len()?;
                out.kernels = Some(n);
                for _ in 0..n {
                    rd.skip()?;
                }
            }
            b"amdhsa.target" => {
                out.target = Some(String::from_utf8_lossy(&rd.str_bytes()?).into_owned());
            }
            b"amdhsa.version" => {
                let at = rd.position();
                if rd.array_len()? >= 2 {
                    out.version = Some((rd.uint()?, rd.uint()?));
                    // Any further elements are skipped with the rest of the array below.
                } else {
                    return Err(bad("amdhsa.version has fewer than two numbers", at));
                }
            }
            _ => rd.skip()?,
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn str(out: &mut Vec<u8>, s: &str) {
        rmp::encode::write_str(out, s).expect("vec write");
    }

    #[test]
    fn counts_kernels_and_reads_target() {
        let mut b = Vec::new();
        rmp::encode::write_map_len(&mut b, 3).expect("vec");
        str(&mut b, "amdhsa.kernels");
        rmp::encode::write_array_len(&mut b, 2).expect("vec");
        for name in ["a", "b"] {
            rmp::encode::write_map_len(&mut b, 2).expect("vec");
            str(&mut b, ".name");
            str(&mut b, name);
            str(&mut b, ".args");
            rmp::encode::write_array_len(&mut b, 1).expect("vec");
            rmp::encode::write_u64(&mut b, 1 << 40).expect("vec");
        }
        str(&mut b, "amdhsa.target");
        str(&mut b, "amdgcn-amd-amdhsa--gfx90a:xnack-");
        str(&mut b, "amdhsa.version");
        rmp::encode::write_array_len(&mut b, 2).expect("vec");
        rmp::encode::write_uint(&mut b, 1).expect("vec");
        rmp::encode::write_uint(&mut b, 2).expect("vec");
        let md = parse_kernel_metadata(&b).expect("valid metadata");
        assert_eq!(md.kernels, Some(2));
        assert_eq!(md.target.as_deref(), Some("amdgcn-amd-amdhsa--gfx90a:xnack-"));
        assert_eq!(md.version, Some((1, 2)));
    }

    #[test]
    fn kernel_count_from_a_prefix() {
        let mut b = Vec::new();
        rmp::encode::write_map_len(&mut b, 2).expect("vec");
        str(&mut b, "amdhsa.kernels");
        rmp::encode::write_array_len(&mut b, 70_000).expect("vec");
        assert_eq!(leading_kernel_count(&b), Some(70_000));
        let mut other = Vec::new();
        rmp::encode::write_map_len(&mut other, 1).expect("vec");
        str(&mut other, "amdhsa.version");
        assert_eq!(leading_kernel_count(&other), None);
        assert_eq!(leading_kernel_count(&b[..5]), None);
    }

    #[test]
    fn lying_lengths_are_errors_not_allocations() {
        // map32 claiming 4 billion pairs, then nothing.
        let b = [0xdf, 0xff, 0xff, 0xff, 0xff];
        assert!(parse_kernel_metadata(&b).is_err());
        // array32 of 4 billion inside a skip.
        let b = [0xdd, 0xff, 0xff, 0xff, 0xff, 0x01];
        let b = b.as_slice();
        let mut r = Reader::new(&b);
        assert!(r.skip().is_err());
    }

    #[test]
    fn skip_agrees_with_rmp_on_every_kind_of_value() {
        use rmp::encode::*;
        let mut b = Vec::new();
        write_array_len(&mut b, 12).expect("vec");
        write_nil(&mut b).expect("vec");
        write_bool(&mut b, true).expect("vec");
        write_sint(&mut b, -100_000).expect("vec");
        write_uint(&mut b, u64::MAX).expect("vec");
        write_f32(&mut b, 1.5).expect("vec");
        write_f64(&mut b, 2.5).expect("vec");
        write_str(&mut b, &"s".repeat(300)).expect("vec");
        write_bin(&mut b, &[7u8; 70_000]).expect("vec");
        write_ext_meta(&mut b, 3, 5).expect("vec");
        b.extend_from_slice(&[1, 2, 3]);
        write_ext_meta(&mut b, 300, 5).expect("vec");
        b.extend_from_slice(&[0u8; 300]);
        write_map_len(&mut b, 20).expect("vec");
        for i in 0..20u64 {
            write_uint(&mut b, i).expect("vec");
            write_array_len(&mut b, 0).expect("vec");
        }
        write_str(&mut b, "end").expect("vec");
        b.push(0x2a); // one more value after the array
        let mut r = Reader::new(&b);
        r.skip().expect("skips the array");
        assert_eq!(r.uint().expect("next value"), 0x2a);
    }

    #[test]
    fn deep_nesting_is_skipped_but_not_read_whole() {
        // Skipping keeps a count, not a stack: any depth is fine when the data is whole...
        let mut b = vec![0x91u8; 10_000];
        b.push(0xc0);
        b.push(0x2a);
        let mut r = Reader::new(&b);
        r.skip().expect("skips");
        assert_eq!(r.uint().expect("next value"), 0x2a);
        // ...and cut short it is an error.
        assert!(Reader::new(&b[..10_000].to_vec()).skip().is_err());
        let mut budget = 1_000_000;
        assert!(Reader::new(&b).value(&mut budget, 0).is_err());
    }

    #[test]
    fn skip_lands_exactly_whatever_the_chunk_borders_cut() {
        use rmp::encode::*;
        // 3 MiB of Tensile-like values: headers and payloads of every size straddle the
        // reader's 1 MiB chunk borders, at a different shift in each round.
        let mut doc = Vec::new();
        write_array_len(&mut doc, 30_000).expect("vec");
        for i in 0..30_000u64 {
            write_map_len(&mut doc, 5).expect("vec");
            write_str(&mut doc, "MacroTile0").expect("vec");
            write_uint(&mut doc, i * 37 % 70_000).expect("vec");
            write_str(&mut doc, &"k".repeat((i % 40) as usize)).expect("vec");
            write_f64(&mut doc, i as f64).expect("vec");
            write_str(&mut doc, "name").expect("vec");
            write_str(&mut doc, &"n".repeat((i % 300) as usize)).expect("vec");
            write_str(&mut doc, "sizes").expect("vec");
            write_array_len(&mut doc, (i % 20) as u32).expect("vec");
            for j in 0..i % 20 {
                write_sint(&mut doc, -(j as i64) * 1000).expect("vec");
            }
            write_u8(&mut doc, 1).expect("vec");
            write_bool(&mut doc, i % 2 == 0).expect("vec");
        }
        assert!(doc.len() > 2 * CHUNK);
        for shift in 0..12usize {
            let mut b = Vec::new();
            write_bin(&mut b, &vec![0u8; shift]).expect("vec");
            b.extend_from_slice(&doc);
            b.push(0x2a);
            let mut r = Reader::new(&b);
            r.skip().expect("skips the padding");
            r.skip().expect("skips the document");
            assert_eq!(r.position(), (b.len() - 1) as u64, "shift {shift}");
            assert_eq!(r.uint().expect("next value"), 0x2a);
            // Cut anywhere inside, the document is an error, never a panic or a wrong end.
            for cut in [doc.len() / 3, doc.len() / 2, doc.len() - 1] {
                let t = b[..shift + 2 + cut].to_vec();
                let mut r = Reader::new(&t);
                r.skip().expect("skips the padding");
                assert!(r.skip().is_err(), "shift {shift}, cut {cut}");
            }
        }
    }

    #[test]
    fn a_payload_past_the_end_is_blamed_on_its_header_wherever_the_buffer_ends() {
        // Review finding: the offset depended on whether the header was decoded in the
        // buffered loop or the refilling one. A str8 of 32 bytes at offset 1, cut short.
        for doc in
            [[&[0x92u8, 0xd9, 0x20][..], &[0x61; 10]].concat(), vec![0x92, 0xd9, 0x20, 0x61, 0x61, 0x61]]
        {
            match Reader::new(&doc).skip() {
                Err(ParseError::Truncated { offset, .. }) => assert_eq!(offset, 1, "{doc:x?}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn containers_claiming_more_values_than_bytes_are_errors() {
        // Fix containers add at most 15 values each: a run of them outgrows the data.
        let b = vec![0x9fu8; 64];
        assert!(Reader::new(&b).skip().is_err());
        // array16 claiming 1,000 values in 10 bytes.
        let mut b = vec![0xdc, 0x03, 0xe8];
        b.extend_from_slice(&[0xc0; 10]);
        assert!(Reader::new(&b).skip().is_err());
    }
}
