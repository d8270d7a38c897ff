//! A bounded MessagePack reader: walks, counts and skips values without building them.
//!
//! Code object metadata (`NT_AMDGPU_METADATA`, AMDGPUUsage "Code Object V3+ Metadata") and
//! Tensile `.dat` libraries are MessagePack. We only need a few facts from each (the length of
//! `amdhsa.kernels`, the `amdhsa.target` string), so this walks the encoding with `rmp`'s marker
//! decoder and never allocates by a length the data claims; nesting is capped at [`MAX_DEPTH`].
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use rmp::Marker;

use super::{ParseError, Result};

/// Deepest nesting the walker follows before calling the data malformed.
pub const MAX_DEPTH: usize = 64;

/// A cursor over one MessagePack document.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn bad(what: &'static str, offset: usize) -> ParseError {
    ParseError::Malformed { what, offset: offset as u64 }
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Where the reader stands, in bytes from the start.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end.and_then(|e| self.buf.get(self.pos..e)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(ParseError::Truncated { what: "msgpack value", offset: self.pos as u64 }),
        }
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// The next marker.
    pub fn marker(&mut self) -> Result<Marker> {
        let mut rest = self.buf.get(self.pos..).unwrap_or(&[]);
        let before = rest.len();
        let m = rmp::decode::read_marker(&mut rest)
            .map_err(|_| ParseError::Truncated { what: "msgpack marker", offset: self.pos as u64 })?;
        self.pos += before - rest.len();
        Ok(m)
    }

    /// The next value, which must be a string; returned as raw bytes.
    pub fn str_bytes(&mut self) -> Result<&'a [u8]> {
        let at = self.pos;
        let len = match self.marker()? {
            Marker::FixStr(n) => usize::from(n),
            Marker::Str8 => self.be(1)? as usize,
            Marker::Str16 => self.be(2)? as usize,
            Marker::Str32 => self.be(4)? as usize,
            _ => return Err(bad("msgpack string expected", at)),
        };
        self.take(len)
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

    /// Skips one whole value, however deeply nested (up to [`MAX_DEPTH`]).
    pub fn skip(&mut self) -> Result<()> {
        // An explicit stack of "values still to skip" keeps deep data off the call stack.
        let mut pending: Vec<u64> = vec![1];
        while let Some(top) = pending.last_mut() {
            if *top == 0 {
                pending.pop();
                continue;
            }
            *top -= 1;
            let at = self.pos;
            let m = self.marker()?;
            if let Some((n, is_map)) = self.container_len(m)? {
                let items = if is_map { n.checked_mul(2) } else { Some(n) };
                let items = items.ok_or_else(|| bad("msgpack length overflows", at))?;
                // Every item takes at least one byte: a longer claim is a lie.
                if items > (self.buf.len() - self.pos) as u64 {
                    return Err(ParseError::Truncated { what: "msgpack container", offset: at as u64 });
                }
                if pending.len() >= MAX_DEPTH {
                    return Err(bad("msgpack nesting too deep", at));
                }
                pending.push(items);
                continue;
            }
            let n = match m {
                Marker::Null | Marker::True | Marker::False | Marker::FixPos(_) | Marker::FixNeg(_) => 0,
                Marker::U8 | Marker::I8 => 1,
                Marker::U16 | Marker::I16 => 2,
                Marker::U32 | Marker::I32 | Marker::F32 => 4,
                Marker::U64 | Marker::I64 | Marker::F64 => 8,
                Marker::FixStr(n) => usize::from(n),
                Marker::Str8 | Marker::Bin8 => self.be(1)? as usize,
                Marker::Str16 | Marker::Bin16 => self.be(2)? as usize,
                Marker::Str32 | Marker::Bin32 => self.be(4)? as usize,
                Marker::FixExt1 => 2,
                Marker::FixExt2 => 3,
                Marker::FixExt4 => 5,
                Marker::FixExt8 => 9,
                Marker::FixExt16 => 17,
                Marker::Ext8 => self.be(1)? as usize + 1,
                Marker::Ext16 => self.be(2)? as usize + 1,
                Marker::Ext32 => self.be(4)? as usize + 1,
                _ => return Err(bad("msgpack reserved marker", at)),
            };
            self.take(n)?;
        }
        Ok(())
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
    let mut rd = Reader::new(prefix);
    if rd.map_len().ok()? == 0 || rd.str_bytes().ok()? != b"amdhsa.kernels" {
        return None;
    }
    rd.array_len().ok()
}

/// Reads the facts gfxscan needs from a whole `NT_AMDGPU_METADATA` note descriptor.
pub fn parse_kernel_metadata(buf: &[u8]) -> Result<KernelMetadata> {
    let mut rd = Reader::new(buf);
    let mut out = KernelMetadata::default();
    let pairs = rd.map_len()?;
    for _ in 0..pairs {
        let key = rd.str_bytes()?;
        match key {
            b"amdhsa.kernels" => {
                let n = rd.array_len()?;
                out.kernels = Some(n);
                for _ in 0..n {
                    rd.skip()?;
                }
            }
            b"amdhsa.target" => {
                out.target = Some(String::from_utf8_lossy(rd.str_bytes()?).into_owned());
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
        let mut r = Reader::new(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(r.skip().is_err());
    }

    #[test]
    fn deep_nesting_is_refused() {
        let b = vec![0x91u8; 10_000];
        assert!(Reader::new(&b).skip().is_err());
    }
}
