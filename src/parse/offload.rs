//! LLVM OffloadBinary: the `0x10FF10AD` container the new offload driver embeds in a host
//! object's `.llvm.offloading` section (or writes as a standalone file): which images it holds,
//! for which triple and architecture, and where each image lies so the caller can parse the
//! AMDGPU ELF through a sub-range [`ByteSource`].
//!
//! Layout verified against llvm/llvm-project `llvm/include/llvm/Object/OffloadBinary.h`
//! (`struct Header`, `struct Entry`, `struct StringEntry`/`StringEntryV1`, `enum ImageKind`,
//! `enum OffloadKind`, `Version = 3`) and `llvm/lib/Object/OffloadBinary.cpp`
//! (`OffloadBinary::extractHeader`, `OffloadBinary::create`, `OffloadBinary::write`,
//! `decompressOffloadBinary`, `extractOffloadFiles`). All integers little-endian:
//!
//! * Header: magic `10 FF 10 AD`, `u32 version` (1..=3), `u64 size` (the whole binary),
//!   `u64 entries_offset`, `u64 entries_count` (V1: ignored, always one entry), and from V3
//!   `u64 inflated_size`: 32 bytes up to V2, 40 from V3.
//! * Entry (40 bytes): `u16 image_kind, u16 offload_kind, u32 flags, u64 string_offset,
//!   u64 num_strings, u64 image_offset, u64 image_size`; offsets count from the header.
//! * String map entry: V1 `u64 key_offset, u64 value_offset` (value NUL-terminated); V2+ adds
//!   `u64 value_size`. Keys are NUL-terminated; the ones LLVM reads are `triple` and `arch`.
//! * V3 compression: when `inflated_size != 0` everything after the header is one zstd frame
//!   (by its magic) or else a zlib stream, inflating to `inflated_size - entries_offset` bytes.
//!   Image offsets then count in the inflated binary, so [`OffloadBinary::compression`] is set
//!   and the caller must inflate to reach an image; the entry table itself is read here from
//!   the first [`MAX_METADATA`] inflated bytes (the writer puts it before every image).
//! * Several binaries lie end to end in one section, each starting 8-aligned
//!   (`extractOffloadFiles`: `alignTo(Offset + Header->Size, getAlignment())`).
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use std::borrow::Cow;

use super::{align_up, check_range, le16, le32, le64, ByteSource, ParseError, Result, Slice};
use crate::decode::Inflater;
use crate::vocab::codec::Codec;

/// The first four bytes of every OffloadBinary (`0x10FF10AD` as bytes).
pub const OFFLOAD_MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];
/// The newest header version LLVM writes and reads (`OffloadBinary::Version`).
pub const OFFLOAD_VERSION: u32 = 3;
/// Binaries in one section start at multiples of this (`OffloadBinary::getAlignment`).
pub const OFFLOAD_ALIGN: u64 = 8;
/// Size of one entry in the entry table (`sizeof(Entry)`).
pub const ENTRY_LEN: u64 = 40;
/// Most entries read from one binary.
pub const MAX_ENTRIES: u64 = 1 << 16;
/// Most string-map pairs read for one entry.
pub const MAX_STRINGS: u64 = 256;
/// Longest key or value read from the string table.
pub const MAX_STRING_LEN: u64 = 4096;
/// Most binaries walked in one region.
pub const MAX_BINARIES: usize = 1 << 16;
/// Inflated bytes a compressed binary may use for its entry table and strings.
pub const MAX_METADATA: u64 = 1 << 20;
/// Zero bytes between or after binaries that still count as padding.
const MAX_PADDING: u64 = 1 << 16;

/// What an image is (`enum ImageKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ImageKind {
    /// `IMG_None`.
    None,
    /// `IMG_Object`: an ELF object or executable (AMDGPU code objects are these).
    Object,
    /// `IMG_Bitcode`.
    Bitcode,
    /// `IMG_Cubin`.
    Cubin,
    /// `IMG_Fatbinary`.
    Fatbinary,
    /// `IMG_PTX`.
    Ptx,
    /// `IMG_SPIRV`.
    Spirv,
    /// A value this version of LLVM does not define.
    Unknown(u16),
}

impl ImageKind {
    /// The kind of the raw value.
    pub fn from_raw(v: u16) -> Self {
        match v {
            0 => ImageKind::None,
            1 => ImageKind::Object,
            2 => ImageKind::Bitcode,
            3 => ImageKind::Cubin,
            4 => ImageKind::Fatbinary,
            5 => ImageKind::Ptx,
            6 => ImageKind::Spirv,
            n => ImageKind::Unknown(n),
        }
    }

    /// LLVM's short name (`getImageKindName`): `o`, `bc`, `cubin`, `fatbin`, `s`, `spv`, or "".
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::Object => "o",
            ImageKind::Bitcode => "bc",
            ImageKind::Cubin => "cubin",
            ImageKind::Fatbinary => "fatbin",
            ImageKind::Ptx => "s",
            ImageKind::Spirv => "spv",
            ImageKind::None | ImageKind::Unknown(_) => "",
        }
    }
}

/// `OFK_OpenMP`.
pub const OFK_OPENMP: u16 = 1 << 0;
/// `OFK_Cuda`.
pub const OFK_CUDA: u16 = 1 << 1;
/// `OFK_HIP`.
pub const OFK_HIP: u16 = 1 << 2;
/// `OFK_SYCL`.
pub const OFK_SYCL: u16 = 1 << 3;

/// LLVM's name of an offload kind (`getOffloadKindName`): `openmp`, `cuda`, `hip`, `sycl`, or
/// `none` for anything else (including combinations of bits).
pub fn offload_kind_name(kind: u16) -> &'static str {
    match kind {
        OFK_OPENMP => "openmp",
        OFK_CUDA => "cuda",
        OFK_HIP => "hip",
        OFK_SYCL => "sycl",
        _ => "none",
    }
}

/// An OffloadBinary header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffloadHeader {
    /// 1, 2 or 3.
    pub version: u32,
    /// Bytes the binary occupies, header included (the compressed size when compressed).
    pub size: u64,
    /// Where the entry table starts (also where compressed data starts).
    pub entries_offset: u64,
    /// Entries in the table (V1 always has one, whatever the field says).
    pub entries_count: u64,
    /// V3: the size once inflated; 0 when not compressed (and before V3).
    pub inflated_size: u64,
    /// 32 bytes up to V2, 40 from V3.
    pub header_len: u64,
}

impl OffloadHeader {
    /// True when the body after the header is compressed (`isCompressed`).
    pub fn is_compressed(&self) -> bool {
        self.version >= 3 && self.inflated_size != 0
    }
}

/// Parses an OffloadBinary header from its first bytes (40 are enough for every version).
///
/// Checks what `extractHeader` checks that needs no more data: magic, known version, a size at
/// least the header; `avail` bytes are available from the header's start.
pub fn parse_offload_header(b: &[u8], avail: u64) -> Result<OffloadHeader> {
    let trunc = |offset| ParseError::Truncated { what: "OffloadBinary header", offset };
    if b.get(..4) != Some(OFFLOAD_MAGIC.as_slice()) {
        return Err(ParseError::Malformed { what: "OffloadBinary magic", offset: 0 });
    }
    let version = le32(b, 4).ok_or(trunc(4))?;
    if version == 0 || version > OFFLOAD_VERSION {
        return Err(ParseError::Malformed { what: "unknown OffloadBinary version", offset: 4 });
    }
    let header_len = if version >= 3 { 40 } else { 32 };
    let size = le64(b, 8).ok_or(trunc(8))?;
    let entries_offset = le64(b, 16).ok_or(trunc(16))?;
    let entries_count = if version == 1 { 1 } else { le64(b, 24).ok_or(trunc(24))? };
    let inflated_size = if version >= 3 { le64(b, 32).ok_or(trunc(32))? } else { 0 };
    if size < header_len {
        return Err(ParseError::Malformed { what: "OffloadBinary size smaller than its header", offset: 8 });
    }
    if size > avail {
        return Err(ParseError::Truncated { what: "OffloadBinary", offset: avail });
    }
    Ok(OffloadHeader { version, size, entries_offset, entries_count, inflated_size, header_len })
}

/// One image of an OffloadBinary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadEntry {
    /// What the image is.
    pub image_kind: ImageKind,
    /// Its producer, a raw `OffloadKind` value (see [`offload_kind_name`]).
    pub offload_kind: u16,
    /// `OffloadEntryFlags` (bit 0: metadata only, no image).
    pub flags: u32,
    /// The `triple` string (`amdgcn-amd-amdhsa`), if the entry has one.
    pub triple: Option<String>,
    /// The `arch` string (`gfx90a:xnack+`), if the entry has one.
    pub arch: Option<String>,
    /// Every key and value of the string map, in table order (lossy UTF-8).
    pub strings: Vec<(String, String)>,
    /// Where the image starts: from the start of the region for an uncompressed binary, from
    /// the start of the inflated binary for a compressed one.
    pub image_offset: u64,
    /// Image size in bytes.
    pub image_size: u64,
}

/// How a compressed (V3) binary's body is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffloadCompression {
    /// zstd (by its frame magic) or zlib.
    pub method: Codec,
    /// Size of the binary once inflated.
    pub inflated_size: u64,
}

/// One OffloadBinary found in a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadBinary {
    /// Where it starts, from the start of the region.
    pub offset: u64,
    /// Its header.
    pub header: OffloadHeader,
    /// Set when the body is compressed: image offsets then count in the inflated binary.
    pub compression: Option<OffloadCompression>,
    /// Its entries.
    pub entries: Vec<OffloadEntry>,
}

/// Every OffloadBinary in a region, and why the walk stopped early if it did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffloadBinaries {
    /// Binaries in region order.
    pub binaries: Vec<OffloadBinary>,
    /// Set when the walk met data it could not read; what follows is unknown.
    pub stopped: Option<ParseError>,
}

/// True when `head` starts with the OffloadBinary magic.
pub fn is_offload_binary(head: &[u8]) -> bool {
    head.starts_with(&OFFLOAD_MAGIC)
}

/// A source whose first bytes are in memory and whose length is only declared: the inflated
/// header and metadata of a compressed binary. Reads past the bytes held fail.
struct Prefix {
    head: Vec<u8>,
    len: u64,
}

impl ByteSource for Prefix {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        check_range(self.len, offset, len, "OffloadBinary")?;
        let start =
            usize::try_from(offset).map_err(|_| ParseError::Truncated { what: "OffloadBinary", offset })?;
        self.head.get(start..start.saturating_add(len)).map(Cow::Borrowed).ok_or(ParseError::TooLarge {
            what: "OffloadBinary metadata past the inflated prefix",
            claimed: offset.saturating_add(len as u64),
            limit: self.head.len() as u64,
        })
    }
}

/// Reads a NUL-terminated string at `at`, which must end before `end`.
fn c_string(src: &dyn ByteSource, at: u64, end: u64) -> Result<String> {
    if at >= end {
        return Err(ParseError::Malformed {
            what: "OffloadBinary string offset past the binary",
            offset: at,
        });
    }
    let b = src.read_up_to(at, (end - at).min(MAX_STRING_LEN + 1) as usize)?;
    let Some(n) = memchr::memchr(0, &b) else {
        return Err(ParseError::Malformed { what: "OffloadBinary string without an end", offset: at });
    };
    Ok(String::from_utf8_lossy(b.get(..n).unwrap_or(&[])).into_owned())
}

/// Reads the entry table of the binary at the start of `view` (addressed from the header, its
/// length the binary's uncompressed size).
///
/// Longer than 80 lines on purpose: one pass over the entry table and its string table in the
/// order LLVM's `OffloadBinary::write` lays them out, with a bounds check at every field.
fn read_entries(view: &dyn ByteSource, h: &OffloadHeader) -> Result<Vec<OffloadEntry>> {
    // Every string kept counts against one budget per binary: entries may all point at the
    // same string map, which must not multiply memory (review finding: 174 KB made 8.5 GB).
    let mut string_budget = MAX_METADATA;
    let total = view.len();
    if h.entries_count > MAX_ENTRIES {
        return Err(ParseError::TooLarge {
            what: "OffloadBinary entry count",
            claimed: h.entries_count,
            limit: MAX_ENTRIES,
        });
    }
    let table_len = h.entries_count * ENTRY_LEN;
    if h.entries_offset.checked_add(table_len).is_none_or(|e| e > total) {
        return Err(ParseError::Malformed { what: "OffloadBinary entry table past the binary", offset: 16 });
    }
    let table = view.read_at(h.entries_offset, table_len as usize)?;
    let string_entry_len: u64 = if h.version == 1 { 16 } else { 24 };
    let mut out = Vec::with_capacity(h.entries_count.min(64) as usize);
    for i in 0..h.entries_count {
        let at = (i * ENTRY_LEN) as usize;
        let pos = h.entries_offset + i * ENTRY_LEN;
        let trunc = ParseError::Truncated { what: "OffloadBinary entry", offset: pos };
        let field16 = |o| le16(&table, at + o).ok_or(trunc.clone());
        let field64 = |o| le64(&table, at + o).ok_or(trunc.clone());
        let image_kind = ImageKind::from_raw(field16(0)?);
        let offload_kind = field16(2)?;
        let flags = le32(&table, at + 4).ok_or(trunc.clone())?;
        let (string_offset, num_strings) = (field64(8)?, field64(16)?);
        let (image_offset, image_size) = (field64(24)?, field64(32)?);
        if image_offset.checked_add(image_size).is_none_or(|e| e > total) {
            return Err(ParseError::Malformed {
                what: "OffloadBinary image past the binary",
                offset: pos + 24,
            });
        }
        if num_strings > MAX_STRINGS {
            return Err(ParseError::TooLarge {
                what: "OffloadBinary string map",
                claimed: num_strings,
                limit: MAX_STRINGS,
            });
        }
        let map_len = num_strings * string_entry_len;
        if string_offset.checked_add(map_len).is_none_or(|e| e > total) {
            return Err(ParseError::Malformed {
                what: "OffloadBinary string map past the binary",
                offset: pos + 8,
            });
        }
        let map = view.read_at(string_offset, map_len as usize)?;
        let mut strings = Vec::with_capacity(num_strings as usize);
        for j in 0..num_strings as usize {
            let e = j * string_entry_len as usize;
            let spos = string_offset + e as u64;
            let strunc = ParseError::Truncated { what: "OffloadBinary string entry", offset: spos };
            let key_off = le64(&map, e).ok_or(strunc.clone())?;
            let value_off = le64(&map, e + 8).ok_or(strunc.clone())?;
            let key = c_string(view, key_off, total)?;
            let value = if h.version == 1 {
                c_string(view, value_off, total)?
            } else {
                let value_size = le64(&map, e + 16).ok_or(strunc)?;
                if value_size > MAX_STRING_LEN {
                    return Err(ParseError::TooLarge {
                        what: "OffloadBinary string value",
                        claimed: value_size,
                        limit: MAX_STRING_LEN,
                    });
                }
                if value_off.checked_add(value_size).is_none_or(|e| e > total) {
                    return Err(ParseError::Malformed {
                        what: "OffloadBinary string value past the binary",
                        offset: spos + 8,
                    });
                }
                String::from_utf8_lossy(&view.read_at(value_off, value_size as usize)?).into_owned()
            };
            let cost = (key.len() + value.len()) as u64;
            string_budget = string_budget.checked_sub(cost).ok_or(ParseError::TooLarge {
                what: "OffloadBinary strings",
                claimed: MAX_METADATA.saturating_add(cost),
                limit: MAX_METADATA,
            })?;
            strings.push((key, value));
        }
        // `StringData[Key] = ...` in a MapVector: the last value of a repeated key wins.
        let lookup = |k: &str| strings.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        let (triple, arch) = (lookup("triple"), lookup("arch"));
        out.push(OffloadEntry {
            image_kind,
            offload_kind,
            flags,
            triple,
            arch,
            strings,
            image_offset,
            image_size,
        });
    }
    // Entries may not share image bytes: many entries naming one image would multiply the
    // work of whoever parses the images.
    let mut images: Vec<(u64, u64)> =
        out.iter().filter(|e| e.image_size > 0).map(|e| (e.image_offset, e.image_size)).collect();
    images.sort_unstable();
    let mut covered = 0u64;
    for (off, size) in images {
        if off < covered {
            return Err(ParseError::Malformed { what: "OffloadBinary images overlap", offset: off });
        }
        covered = off + size;
    }
    Ok(out)
}

/// Reads the OffloadBinary at the start of `src`; `src` may extend past its end.
///
/// Image offsets are counted from the start of `src` (see [`OffloadEntry::image_offset`] for
/// compressed binaries).
pub fn parse_offload_binary(src: &dyn ByteSource) -> Result<OffloadBinary> {
    parse_offload_binary_with(src, &crate::decode::Decoding::default().inflater())
}

/// [`parse_offload_binary`], a compressed binary's head inflated with `inf`.
pub fn parse_offload_binary_with(src: &dyn ByteSource, inf: &Inflater<'_>) -> Result<OffloadBinary> {
    let head = src.read_up_to(0, 40)?;
    let h = parse_offload_header(&head, src.len())?;
    if !h.is_compressed() {
        let view = Slice::new(src, 0, h.size);
        let entries = read_entries(&view, &h)?;
        return Ok(OffloadBinary { offset: 0, header: h, compression: None, entries });
    }
    // `decompressOffloadBinary`: the body after `entries_offset` inflates to the rest.
    if h.entries_offset > h.size || h.inflated_size < h.entries_offset || h.entries_offset < h.header_len {
        return Err(ParseError::Malformed { what: "compressed OffloadBinary sizes", offset: 16 });
    }
    let body = src.read_up_to(h.entries_offset, 4)?;
    let method = if body.as_ref() == [0x28, 0xB5, 0x2F, 0xFD] { Codec::Zstd } else { Codec::Zlib };
    let body_len = h.inflated_size - h.entries_offset;
    let stream = inf.stream(src, (h.entries_offset, h.size), method, body_len)?;
    let mut prefix = src.read_at(0, h.entries_offset.min(MAX_METADATA) as usize)?.into_owned();
    let want = body_len.min(MAX_METADATA.saturating_sub(prefix.len() as u64)) as usize;
    prefix.extend_from_slice(&stream.read_up_to(0, want)?);
    let view = Prefix { head: prefix, len: h.inflated_size };
    let entries = read_entries(&view, &h)?;
    Ok(OffloadBinary {
        offset: 0,
        header: h,
        compression: Some(OffloadCompression { method, inflated_size: h.inflated_size }),
        entries,
    })
}

/// Walks every OffloadBinary in a region: a standalone file or a `.llvm.offloading` section.
///
/// Each binary is bounded by its header's size; the next starts at the following multiple of
/// [`OFFLOAD_ALIGN`]. Zero bytes at aligned positions are padding. Anything else stops the walk
/// with an error.
pub fn parse_offload_binaries(src: &dyn ByteSource) -> OffloadBinaries {
    parse_offload_binaries_with(src, &crate::decode::Decoding::default().inflater())
}

/// [`parse_offload_binaries`], compressed binaries' heads inflated with `inf`.
pub fn parse_offload_binaries_with(src: &dyn ByteSource, inf: &Inflater<'_>) -> OffloadBinaries {
    let mut out = OffloadBinaries::default();
    let mut pos = 0u64;
    let mut padding = 0u64;
    while pos < src.len() {
        let head = match src.read_up_to(pos, 8) {
            Ok(h) => h.into_owned(),
            Err(e) => {
                out.stopped = Some(e);
                break;
            }
        };
        if head.iter().all(|&b| b == 0) {
            padding += OFFLOAD_ALIGN;
            if padding > MAX_PADDING {
                break;
            }
            pos += OFFLOAD_ALIGN;
            continue;
        }
        padding = 0;
        if out.binaries.len() >= MAX_BINARIES {
            out.stopped = Some(ParseError::TooLarge {
                what: "OffloadBinaries in one region",
                claimed: out.binaries.len() as u64 + 1,
                limit: MAX_BINARIES as u64,
            });
            break;
        }
        let view = Slice::new(src, pos, src.len() - pos);
        match parse_offload_binary_with(&view, inf) {
            Ok(mut b) => {
                b.offset = pos;
                if b.compression.is_none() {
                    for e in &mut b.entries {
                        e.image_offset += pos;
                    }
                }
                let size = b.header.size;
                out.binaries.push(b);
                pos = align_up(pos + size, OFFLOAD_ALIGN);
            }
            Err(e) => {
                out.stopped = Some(e.rebased(pos));
                break;
            }
        }
    }
    out
}

/// Builds OffloadBinaries as LLVM's `OffloadBinary::write` does, for tests and fuzz seeds.
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod fixture {
    /// One image to write: kinds, flags, string map, bytes.
    pub struct Image<'a> {
        pub image_kind: u16,
        pub offload_kind: u16,
        pub flags: u32,
        pub strings: Vec<(&'a str, &'a str)>,
        pub image: &'a [u8],
    }

    impl<'a> Image<'a> {
        /// An AMDGPU HIP object image for `arch`.
        pub fn hip(arch: &'a str, image: &'a [u8]) -> Self {
            Image {
                image_kind: 1,
                offload_kind: super::OFK_HIP,
                flags: 0,
                strings: vec![("triple", "amdgcn-amd-amdhsa"), ("arch", arch)],
                image,
            }
        }
    }

    fn align8(v: usize) -> usize {
        v.div_ceil(8) * 8
    }

    /// The bytes `OffloadBinary::write` produces (version 3, uncompressed): header, entries,
    /// string map, string table (a leading NUL, then each distinct string once), padding to 8,
    /// images back to back, padding to 8.
    pub fn offload_binary(images: &[Image]) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let mut offsets: Vec<(&str, usize)> = Vec::new();
        for img in images {
            for (k, v) in &img.strings {
                for s in [*k, *v] {
                    if !offsets.iter().any(|(x, _)| *x == s) {
                        offsets.push((s, strtab.len()));
                        strtab.extend_from_slice(s.as_bytes());
                        strtab.push(0);
                    }
                }
            }
        }
        let off_of = |s: &str| offsets.iter().find(|(x, _)| *x == s).map_or(0, |(_, o)| *o) as u64;
        let total_strings: usize = images.iter().map(|i| i.strings.len()).sum();
        let entries_size = 40 * images.len();
        let strtab_offset = 40 + entries_size + 24 * total_strings;
        let data_size = align8(strtab_offset + strtab.len());
        let images_size: usize = images.iter().map(|i| i.image.len()).sum();
        let size = align8(data_size + images_size);
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&super::OFFLOAD_MAGIC);
        out.extend_from_slice(&3u32.to_le_bytes());
        for v in [size as u64, 40, images.len() as u64, 0] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let mut string_entry = 40 + entries_size;
        let mut image_offset = data_size;
        for img in images {
            out.extend_from_slice(&img.image_kind.to_le_bytes());
            out.extend_from_slice(&img.offload_kind.to_le_bytes());
            out.extend_from_slice(&img.flags.to_le_bytes());
            for v in [string_entry, img.strings.len(), image_offset, img.image.len()] {
                out.extend_from_slice(&(v as u64).to_le_bytes());
            }
            string_entry += 24 * img.strings.len();
            image_offset += img.image.len();
        }
        for img in images {
            for (k, v) in &img.strings {
                let st = strtab_offset as u64;
                for x in [st + off_of(k), st + off_of(v), v.len() as u64] {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        out.extend_from_slice(&strtab);
        out.resize(data_size, 0);
        for img in images {
            out.extend_from_slice(img.image);
        }
        out.resize(size, 0);
        out
    }

    /// `OffloadBinary::write` with compression: the body after the header as one zstd frame
    /// (or zlib stream), `inflated_size` set, `size` the compressed length, padded to 8.
    pub fn compressed_offload_binary(images: &[Image], zstd: bool) -> Vec<u8> {
        use std::io::Write;
        let plain = offload_binary(images);
        let body = plain.get(40..).unwrap_or(&[]);
        let packed = if zstd {
            zstd::bulk::compress(body, 3).unwrap_or_default()
        } else {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            let _ = e.write_all(body);
            e.finish().unwrap_or_default()
        };
        let mut out = plain.get(..40).unwrap_or(&[]).to_vec();
        let size = (40 + packed.len()) as u64;
        if let Some(s) = out.get_mut(8..16) {
            s.copy_from_slice(&size.to_le_bytes());
        }
        if let Some(s) = out.get_mut(32..40) {
            s.copy_from_slice(&(plain.len() as u64).to_le_bytes());
        }
        out.extend_from_slice(&packed);
        out.resize(align8(out.len()), 0);
        out
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::fixture::{compressed_offload_binary, offload_binary, Image};
    use super::*;

    /// Review finding: entries may all point at one string map, so strings were kept once per
    /// entry without bound (a 174 KB file took 8.5 GB). Every string kept now counts against
    /// one budget per binary, [`MAX_METADATA`].
    #[test]
    fn strings_past_the_metadata_budget_are_refused() {
        let value = "x".repeat(4096);
        let keys: Vec<String> = (0..256).map(|i| format!("k{i:03}")).collect();
        let image = [0x7fu8, b'E', b'L', b'F'];
        let mut img = Image::hip("gfx942", &image);
        img.strings = keys.iter().map(|k| (k.as_str(), value.as_str())).collect();
        let b = offload_binary(&[img]);
        assert!(matches!(parse_offload_binary(&b), Err(ParseError::TooLarge { .. })));
    }
    use crate::parse::elf::parse_code_object;
    use crate::testing::{code_object, CodeObjectSpec};

    fn co(mach: u32) -> Vec<u8> {
        code_object(&CodeObjectSpec::v4(mach, 0, &["k"]))
    }

    #[test]
    fn offloadbinary_write_round_trips_and_images_parse_as_code_objects() {
        // llvm/lib/Object/OffloadBinary.cpp OffloadBinary::write, then OffloadBinary::create.
        let (a, b) = (co(0x3f), co(0x41));
        let bytes = offload_binary(&[Image::hip("gfx90a:xnack+", &a), Image::hip("gfx1100", &b)]);
        assert_eq!(bytes.len() % 8, 0);
        let got = parse_offload_binaries(&bytes);
        assert!(got.stopped.is_none(), "{:?}", got.stopped);
        let bin = &got.binaries[0];
        assert_eq!(bin.header.version, 3);
        assert_eq!(bin.entries.len(), 2);
        let e = &bin.entries[0];
        assert_eq!((e.image_kind, offload_kind_name(e.offload_kind)), (ImageKind::Object, "hip"));
        assert_eq!(e.triple.as_deref(), Some("amdgcn-amd-amdhsa"));
        assert_eq!(e.arch.as_deref(), Some("gfx90a:xnack+"));
        assert_eq!(bin.entries[1].arch.as_deref(), Some("gfx1100"));
        for (entry, mach) in bin.entries.iter().zip([0x3f, 0x41]) {
            let view = Slice::new(&bytes, entry.image_offset, entry.image_size);
            let parsed = parse_code_object(&view, Some(entry.image_size)).expect("code object");
            assert_eq!(parsed.header.e_flags & 0xff, mach);
        }
    }

    #[test]
    fn extractoffloadfiles_walks_binaries_end_to_end_at_8_byte_alignment() {
        let a = co(0x2c);
        let one = offload_binary(&[Image::hip("gfx900", &a)]);
        let mut region = one.clone();
        region.extend_from_slice(&one);
        region.extend_from_slice(&[0u8; 24]);
        let got = parse_offload_binaries(&region);
        assert!(got.stopped.is_none(), "{:?}", got.stopped);
        assert_eq!(got.binaries.len(), 2);
        assert_eq!(got.binaries[1].offset, one.len() as u64);
        let e = &got.binaries[1].entries[0];
        assert!(e.image_offset > one.len() as u64);
        assert_eq!(&region[e.image_offset as usize..][..4], b"\x7fELF");
    }

    #[test]
    fn version_1_and_2_layouts_from_extractheader_are_read() {
        // V1: 32-byte header, one entry whatever the fourth field says, 16-byte string entries
        // with NUL-terminated values. V2: 32-byte header, 24-byte string entries.
        let image = b"IMAGE!!!";
        let strtab = b"\0triple\0amdgcn-amd-amdhsa\0arch\0gfx906\0";
        for version in [1u32, 2] {
            let se = if version == 1 { 16 } else { 24 };
            let entries_off = 32u64;
            let map_off = entries_off + 40;
            let strtab_off = map_off + 2 * se;
            let image_off = strtab_off + strtab.len() as u64;
            let size = image_off + image.len() as u64;
            let mut b = OFFLOAD_MAGIC.to_vec();
            b.extend_from_slice(&version.to_le_bytes());
            for v in [size, entries_off, if version == 1 { 40 } else { 1 }] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&OFK_OPENMP.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
            for v in [map_off, 2, image_off, image.len() as u64] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            for (k, v, vl) in [(1u64, 8u64, 17u64), (26, 31, 6)] {
                b.extend_from_slice(&(strtab_off + k).to_le_bytes());
                b.extend_from_slice(&(strtab_off + v).to_le_bytes());
                if version == 2 {
                    b.extend_from_slice(&vl.to_le_bytes());
                }
            }
            b.extend_from_slice(strtab);
            b.extend_from_slice(image);
            let got = parse_offload_binary(&b).unwrap_or_else(|e| panic!("v{version}: {e}"));
            assert_eq!(got.header.header_len, 32);
            let e = &got.entries[0];
            assert_eq!(e.triple.as_deref(), Some("amdgcn-amd-amdhsa"), "v{version}");
            assert_eq!(e.arch.as_deref(), Some("gfx906"), "v{version}");
            assert_eq!(offload_kind_name(e.offload_kind), "openmp");
            assert_eq!(&b[e.image_offset as usize..][..e.image_size as usize], image);
        }
    }

    #[test]
    fn decompressoffloadbinary_zstd_and_zlib_bodies_give_the_same_entries() {
        let a = co(0x4c);
        let images = [Image::hip("gfx942", &a)];
        let plain = parse_offload_binary(&offload_binary(&images)).unwrap();
        for zstd in [true, false] {
            let bytes = compressed_offload_binary(&images, zstd);
            let got = parse_offload_binaries(&bytes);
            assert!(got.stopped.is_none(), "{:?}", got.stopped);
            let b = &got.binaries[0];
            let c = b.compression.expect("compressed");
            assert_eq!(c.method, if zstd { Codec::Zstd } else { Codec::Zlib });
            assert_eq!(b.entries, plain.entries);
        }
    }

    #[test]
    fn extractheader_rejects_unknown_versions_and_lying_sizes() {
        let bytes = offload_binary(&[Image::hip("gfx900", &co(0x2c))]);
        let mut v4 = bytes.clone();
        v4[4] = 4;
        assert!(matches!(parse_offload_binary(&v4), Err(ParseError::Malformed { offset: 4, .. })));
        let mut v0 = bytes.clone();
        v0[4] = 0;
        assert!(parse_offload_binary(&v0).is_err());
        let mut big = bytes.clone();
        big[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_offload_binary(&big).is_err());
        let mut count = bytes.clone();
        count[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_offload_binary(&count).is_err());
        let mut image = bytes.clone();
        // First entry's image offset (header 40 + 24).
        image[64..72].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
        assert!(parse_offload_binary(&image).is_err());
        let mut strings = bytes.clone();
        strings[56..64].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_offload_binary(&strings).is_err());
    }

    #[test]
    fn overlapping_images_are_refused() {
        let a = co(0x2c);
        let mut b = offload_binary(&[Image::hip("gfx900", &a), Image::hip("gfx906", &a)]);
        let first = b[64..72].to_vec();
        b[104..112].copy_from_slice(&first);
        let err = parse_offload_binary(&b).unwrap_err();
        assert!(err.to_string().contains("overlap"), "{err}");
    }

    #[test]
    fn truncation_at_every_byte_is_an_error_never_a_panic() {
        let bytes = offload_binary(&[Image::hip("gfx900", &co(0x2c))]);
        for n in 0..bytes.len() {
            let cut = &bytes[..n];
            assert!(parse_offload_binary(&cut).is_err(), "cut at {n}");
            let _ = parse_offload_binaries(&cut);
        }
        let packed = compressed_offload_binary(&[Image::hip("gfx900", &co(0x2c))], true);
        for n in 0..packed.len() {
            let _ = parse_offload_binaries(&&packed[..n]);
        }
    }

    #[test]
    fn garbage_after_a_binary_stops_the_walk() {
        let mut b = offload_binary(&[Image::hip("gfx900", &co(0x2c))]);
        b.extend_from_slice(b"garbage!");
        let got = parse_offload_binaries(&b);
        assert_eq!(got.binaries.len(), 1);
        assert!(got.stopped.is_some());
    }
}
