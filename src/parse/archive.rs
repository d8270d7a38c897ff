//! Archive headers: `ar` member tables (`.deb`), tar header blocks (ustar, GNU long names, PAX
//! records) and member paths, as pure functions of bytes.
//!
//! Reading the members' data, decompressing and walking archives is `crate::archive`'s job; here
//! is only what a header says, checked. Sizes are parsed exactly (octal or base-256) and never
//! trusted for allocation; names are returned raw and made safe by [`member_path`], which
//! refuses what would escape an extraction root.

use std::path::{Component, Path, PathBuf};

use super::{ByteSource, ParseError, Result};

/// The `ar` global header (`.deb` files, static libraries).
pub const AR_MAGIC: &[u8] = b"!<arch>\n";

/// Size of one tar header block.
pub const TAR_BLOCK: usize = 512;

/// Most `ar` members read from one archive (a `.deb` has three).
const MAX_AR_MEMBERS: usize = 4096;

/// One member of an `ar` archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArMember {
    /// Member name, without the trailing `/` of the GNU variant.
    pub name: String,
    /// Offset of the member's data in the archive.
    pub offset: u64,
    /// Size of the member's data.
    pub size: u64,
}

fn ascii_field(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("").trim_end_matches([' ', '\0'])
}

/// Lists the members of an `ar` archive (common format: 60-byte headers, data padded to even
/// offsets). Long-name tables are members like any other; BSD `#1/` names are refused.
pub fn parse_ar(src: &dyn ByteSource) -> Result<Vec<ArMember>> {
    let magic = src.read_up_to(0, AR_MAGIC.len())?;
    if magic.as_ref() != AR_MAGIC {
        return Err(ParseError::Malformed { what: "ar magic", offset: 0 });
    }
    let mut out = Vec::new();
    let mut pos = AR_MAGIC.len() as u64;
    while pos < src.len() {
        if out.len() == MAX_AR_MEMBERS {
            return Err(ParseError::TooLarge {
                what: "ar member count",
                claimed: MAX_AR_MEMBERS as u64 + 1,
                limit: MAX_AR_MEMBERS as u64,
            });
        }
        let h = src
            .read_at(pos, 60)
            .map_err(|_| ParseError::Truncated { what: "ar member header", offset: pos })?;
        let (Some(name), Some(size), Some(fmag)) = (h.get(..16), h.get(48..58), h.get(58..60)) else {
            return Err(ParseError::Truncated { what: "ar member header", offset: pos });
        };
        if fmag != b"`\n" {
            return Err(ParseError::Malformed { what: "ar member header", offset: pos });
        }
        let name = ascii_field(name);
        if name.starts_with("#1/") {
            return Err(ParseError::Malformed { what: "BSD ar long name (not supported)", offset: pos });
        }
        let size: u64 = ascii_field(size)
            .parse()
            .map_err(|_| ParseError::Malformed { what: "ar member size", offset: pos + 48 })?;
        let offset = pos + 60;
        let end = offset.checked_add(size).filter(|&e| e <= src.len());
        let Some(end) = end else {
            return Err(ParseError::Truncated { what: "ar member data", offset });
        };
        let name = name.strip_suffix('/').filter(|n| !n.is_empty()).unwrap_or(name);
        out.push(ArMember { name: name.to_string(), offset, size });
        pos = end + (end & 1);
    }
    Ok(out)
}

/// What a tar header block describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TarType {
    /// A regular file (`0`, NUL, or `7` contiguous).
    File,
    /// A hard link to an earlier member (`1`).
    HardLink,
    /// A symbolic link (`2`).
    Symlink,
    /// A character device, block device or FIFO (`3`, `4`, `6`).
    Special(&'static str),
    /// A directory (`5`).
    Dir,
    /// GNU long name for the next header (`L`).
    GnuLongName,
    /// GNU long link name for the next header (`K`).
    GnuLongLink,
    /// PAX extended header for the next header (`x`).
    Pax,
    /// PAX global header (`g`).
    PaxGlobal,
    /// GNU sparse file (`S`): its data is not stored as-is.
    Sparse,
    /// Anything else (volume labels, vendor types): its data is skipped.
    Other(u8),
}

/// One parsed tar header block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TarHeader {
    /// Raw name (ustar prefix joined with name).
    pub name: Vec<u8>,
    /// Raw link target.
    pub link: Vec<u8>,
    /// Data size in bytes.
    pub size: u64,
    pub kind: TarType,
}

/// The result of reading one header block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TarBlock {
    /// An all-zero block: the end-of-archive marker.
    End,
    Header(TarHeader),
}

fn until_nul(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |n| b.get(..n).unwrap_or(b))
}

/// A numeric field: octal text (NUL- or space-terminated) or GNU base-256 (high bit set).
fn tar_number(field: &[u8]) -> Option<u64> {
    let first = *field.first()?;
    if first & 0x80 != 0 {
        if first & 0x40 != 0 {
            return None; // negative
        }
        let mut v: u64 = u64::from(first & 0x3f);
        for &b in field.get(1..)? {
            v = v.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return Some(v);
    }
    let text = std::str::from_utf8(until_nul(field)).ok()?.trim_matches(' ');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

/// Parses one 512-byte header block found at `offset` (for error messages).
pub fn parse_tar_header(block: &[u8], offset: u64) -> Result<TarBlock> {
    let block = block.get(..TAR_BLOCK).ok_or(ParseError::Truncated { what: "tar header", offset })?;
    if block.iter().all(|&b| b == 0) {
        return Ok(TarBlock::End);
    }
    let bad = |what| ParseError::Malformed { what, offset };
    let field = |a: usize, b: usize| block.get(a..b).unwrap_or(&[]);
    let stored = tar_number(field(148, 156)).ok_or(bad("tar header checksum field"))?;
    let sum: u64 = block
        .iter()
        .enumerate()
        .map(|(i, &b)| if (148..156).contains(&i) { u64::from(b' ') } else { u64::from(b) })
        .sum();
    if stored != sum {
        return Err(bad("tar header checksum mismatch"));
    }
    let size = tar_number(field(124, 136)).ok_or(bad("tar member size"))?;
    let typeflag = *block.get(156).unwrap_or(&0);
    let kind = match typeflag {
        b'0' | 0 | b'7' => TarType::File,
        b'1' => TarType::HardLink,
        b'2' => TarType::Symlink,
        b'3' => TarType::Special("character device"),
        b'4' => TarType::Special("block device"),
        b'6' => TarType::Special("fifo"),
        b'5' => TarType::Dir,
        b'L' => TarType::GnuLongName,
        b'K' => TarType::GnuLongLink,
        b'x' => TarType::Pax,
        b'g' => TarType::PaxGlobal,
        b'S' => TarType::Sparse,
        other => TarType::Other(other),
    };
    let mut name = until_nul(field(0, 100)).to_vec();
    // ustar ("ustar\0") and GNU ("ustar  ") both carry magic at 257; only ustar has a prefix.
    if field(257, 263) == b"ustar\0" {
        let prefix = until_nul(field(345, 500));
        if !prefix.is_empty() {
            let mut joined = prefix.to_vec();
            joined.push(b'/');
            joined.extend_from_slice(&name);
            name = joined;
        }
    }
    // A pre-POSIX archive marks folders only by a trailing slash.
    let kind = if kind == TarType::File && name.ends_with(b"/") { TarType::Dir } else { kind };
    // Directories, links and devices hold no data whatever the size field says (POSIX).
    let size = match kind {
        TarType::HardLink | TarType::Symlink | TarType::Dir | TarType::Special(_) => 0,
        _ => size,
    };
    Ok(TarBlock::Header(TarHeader { name, link: until_nul(field(157, 257)).to_vec(), size, kind }))
}

/// What a PAX extended header overrides in the header that follows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaxOverrides {
    pub path: Option<Vec<u8>>,
    pub linkpath: Option<Vec<u8>>,
    pub size: Option<u64>,
    /// The member is a PAX sparse file (`GNU.sparse.*` keys): its data is not stored as-is.
    pub sparse: bool,
    /// The real name of a PAX sparse file (`GNU.sparse.name`).
    pub sparse_name: Option<Vec<u8>>,
}

/// Parses PAX records (`"<len> <key>=<value>\n"`), keeping the keys that matter here.
pub fn parse_pax(data: &[u8]) -> Result<PaxOverrides> {
    let mut out = PaxOverrides::default();
    let mut rest = data;
    let mut at = 0u64;
    while !rest.is_empty() {
        if rest.iter().all(|&b| b == 0) {
            break;
        }
        let bad = ParseError::Malformed { what: "PAX record", offset: at };
        let space = rest.iter().position(|&b| b == b' ').ok_or(bad.clone())?;
        let len: usize = std::str::from_utf8(rest.get(..space).unwrap_or(&[]))
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(bad.clone())?;
        let record = rest.get(space + 1..len).ok_or(bad.clone())?;
        let record = record.strip_suffix(b"\n").ok_or(bad.clone())?;
        let eq = record.iter().position(|&b| b == b'=').ok_or(bad.clone())?;
        let (key, value) = (record.get(..eq).unwrap_or(&[]), record.get(eq + 1..).unwrap_or(&[]));
        match key {
            b"path" => out.path = Some(value.to_vec()),
            b"linkpath" => out.linkpath = Some(value.to_vec()),
            b"size" => {
                out.size =
                    Some(std::str::from_utf8(value).ok().and_then(|s| s.parse().ok()).ok_or(bad.clone())?)
            }
            b"GNU.sparse.name" => {
                out.sparse = true;
                out.sparse_name = Some(value.to_vec());
            }
            k if k.starts_with(b"GNU.sparse.") => out.sparse = true,
            _ => {}
        }
        rest = rest.get(len..).unwrap_or(&[]);
        at += len as u64;
    }
    Ok(out)
}

/// Why a member name cannot be a path inside the extraction root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnsafePath {
    Absolute,
    Traversal,
}

impl std::fmt::Display for UnsafePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UnsafePath::Absolute => "absolute member path: not part of the archive's tree, not read",
            UnsafePath::Traversal => "member path with `..`: it would escape the archive's tree, not read",
        })
    }
}

/// The path a member name gives, relative to the archive's root: `./` and empty components
/// dropped. Absolute names and any `..` are refused, as tar and unzip refuse them by default.
/// `Ok(None)` for the root itself (`./`).
pub fn member_path(raw: &[u8]) -> std::result::Result<Option<PathBuf>, UnsafePath> {
    use std::os::unix::ffi::OsStrExt;
    let p = Path::new(std::ffi::OsStr::from_bytes(raw));
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => return Err(UnsafePath::Absolute),
            Component::ParentDir => return Err(UnsafePath::Traversal),
            Component::CurDir => {}
            Component::Normal(n) => out.push(n),
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// True when a symbolic link at `member` (a clean relative path) pointing to `target` leaves the
/// archive's tree. Absolute targets are resolved inside the tree, as they are once a package or
/// image is installed; relative ones must not climb above the root.
pub fn link_escapes(member: &Path, target: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let target = Path::new(std::ffi::OsStr::from_bytes(target));
    if target.is_absolute() {
        return false;
    }
    let mut depth = member.components().count().saturating_sub(1) as i64;
    for c in target.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// One block of a single-stream xz file, from its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XzBlock {
    /// Offset of the block header in the file.
    pub offset: u64,
    /// Unpadded size (header + compressed data + check), as the index records it.
    pub unpadded: u64,
    /// Offset of its first byte in the uncompressed data.
    pub uncompressed_offset: u64,
    pub uncompressed: u64,
}

/// The blocks of an xz file made of one stream (with no padding after it), from its index:
/// what lets a reader start decoding at any block. `None` when the file is not that shape.
pub fn xz_blocks(src: &dyn ByteSource) -> Option<(Vec<XzBlock>, u64)> {
    const MAX_INDEX: u64 = 16 << 20;
    let len = src.len();
    let header = src.read_at(0, 12).ok()?;
    let footer = src.read_at(len.checked_sub(12)?, 12).ok()?;
    if !header.starts_with(b"\xfd7zXZ\0")
        || footer.get(10..12)? != b"YZ"
        || header.get(6..8) != footer.get(8..10)
    {
        return None;
    }
    let crc = |data: &[u8]| {
        let mut c = flate2::Crc::new();
        c.update(data);
        c.sum()
    };
    // Both CRC32s must hold: a corrupt index would send block jumps to wrong offsets.
    if crc(footer.get(4..10)?) != super::le32(&footer, 0)? {
        return None;
    }
    let backward = (u64::from(super::le32(&footer, 4)?) + 1) * 4;
    if backward > MAX_INDEX {
        return None;
    }
    let index_at = len.checked_sub(12)?.checked_sub(backward)?;
    let index = src.read_at(index_at, backward as usize).ok()?;
    let body = index.get(..index.len().checked_sub(4)?)?;
    if crc(body) != super::le32(&index, index.len() - 4)? {
        return None;
    }
    let mut pos = 1usize;
    if *index.first()? != 0 {
        return None;
    }
    let mut varint = || -> Option<u64> {
        let mut v = 0u64;
        for i in 0..9 {
            let b = *index.get(pos)?;
            pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    let count = varint()?;
    let mut blocks = Vec::new();
    let (mut offset, mut uoff) = (12u64, 0u64);
    for _ in 0..count {
        let unpadded = varint()?;
        let uncompressed = varint()?;
        blocks.push(XzBlock { offset, unpadded, uncompressed_offset: uoff, uncompressed });
        offset = offset.checked_add(super::align_up(unpadded, 4))?;
        uoff = uoff.checked_add(uncompressed)?;
        if blocks.len() as u64 > backward {
            return None;
        }
    }
    (offset == index_at).then_some((blocks, index_at))
}

/// A standalone xz stream holding the blocks from `first` on: the file's stream header, then
/// (to be read from the file) the blocks' bytes, then a new index and footer returned here.
pub fn xz_tail_index(blocks: &[XzBlock], first: usize, flags: [u8; 2]) -> Vec<u8> {
    let mut out = vec![0u8];
    let put = |out: &mut Vec<u8>, mut v: u64| loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    };
    let rest = blocks.get(first..).unwrap_or_default();
    put(&mut out, rest.len() as u64);
    for b in rest {
        put(&mut out, b.unpadded);
        put(&mut out, b.uncompressed);
    }
    while out.len() % 4 != 0 {
        out.push(0);
    }
    let crc = |data: &[u8]| {
        let mut c = flate2::Crc::new();
        c.update(data);
        c.sum().to_le_bytes()
    };
    let index_crc = crc(&out);
    out.extend_from_slice(&index_crc);
    let backward = (out.len() as u32 / 4 - 1).to_le_bytes();
    let mut tail = backward.to_vec();
    tail.extend_from_slice(&flags);
    out.extend_from_slice(&crc(&tail));
    out.extend_from_slice(&tail);
    out.extend_from_slice(b"YZ");
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn header(name: &str, size: u64, typeflag: u8) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        b[..name.len()].copy_from_slice(name.as_bytes());
        b[100..108].copy_from_slice(b"0000644\0");
        b[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
        b[156] = typeflag;
        b[257..263].copy_from_slice(b"ustar\0");
        b[263..265].copy_from_slice(b"00");
        b[148..156].copy_from_slice(b"        ");
        let sum: u64 = b.iter().map(|&x| u64::from(x)).sum();
        b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        b
    }

    #[test]
    fn tar_headers_parse_and_checksums_are_checked() {
        let h = header("usr/lib/libx.so", 1234, b'0');
        let TarBlock::Header(t) = parse_tar_header(&h, 0).unwrap() else { panic!() };
        assert_eq!((t.name.as_slice(), t.size, t.kind), (&b"usr/lib/libx.so"[..], 1234, TarType::File));
        let mut bad = h.clone();
        bad[0] = b'v';
        assert!(parse_tar_header(&bad, 0).is_err());
        assert_eq!(parse_tar_header(&[0u8; 512], 0).unwrap(), TarBlock::End);
        assert!(parse_tar_header(&h[..100], 0).is_err());
        // Links hold no data even when the size field says otherwise.
        let TarBlock::Header(l) = parse_tar_header(&header("a", 99, b'2'), 0).unwrap() else { panic!() };
        assert_eq!((l.size, l.kind), (0, TarType::Symlink));
    }

    #[test]
    fn base256_sizes_and_pax_records() {
        assert_eq!(tar_number(&[0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]), Some(1 << 32));
        assert_eq!(tar_number(&[0xff; 12]), None);
        assert_eq!(tar_number(b"00000000017\0"), Some(15));
        let pax = b"28 path=usr/lib/a-long-name\n16 size=9999999\n";
        let p = parse_pax(pax).unwrap();
        assert_eq!(p.path.as_deref(), Some(&b"usr/lib/a-long-name"[..]));
        assert_eq!(p.size, Some(9_999_999));
        assert!(parse_pax(b"99 path=x\n").is_err());
        assert!(parse_pax(b"x path=x\n").is_err());
    }

    #[test]
    fn member_paths_are_made_safe() {
        assert_eq!(member_path(b"./usr//lib/./x.so").unwrap(), Some(PathBuf::from("usr/lib/x.so")));
        assert_eq!(member_path(b"./").unwrap(), None);
        assert_eq!(member_path(b"/etc/passwd"), Err(UnsafePath::Absolute));
        assert_eq!(member_path(b"../../x"), Err(UnsafePath::Traversal));
        assert_eq!(member_path(b"a/../b"), Err(UnsafePath::Traversal));
        assert!(link_escapes(Path::new("a/link"), b"../../x"));
        assert!(!link_escapes(Path::new("a/b/link"), b"../x"));
        assert!(!link_escapes(Path::new("a/link"), b"/usr/lib/x"));
    }

    #[test]
    fn xz_blocks_are_found_and_a_tail_stream_decodes() {
        use std::io::{Read, Write};
        // Three blocks: liblzma's multithreaded encoder with a 64 KiB block size.
        let data: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let stream = liblzma::stream::MtStreamBuilder::new()
            .block_size(256 << 10)
            .threads(1)
            .preset(1)
            .encoder()
            .unwrap();
        let mut enc = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
        enc.write_all(&data).unwrap();
        let xz = enc.finish().unwrap();
        let (blocks, index_at) = xz_blocks(&xz).unwrap();
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[2].uncompressed_offset, 512 << 10);
        let mut tail = xz[..12].to_vec();
        tail.extend_from_slice(&xz[blocks[2].offset as usize..index_at as usize]);
        tail.extend_from_slice(&xz_tail_index(&blocks, 2, [xz[6], xz[7]]));
        let mut out = Vec::new();
        liblzma::read::XzDecoder::new(tail.as_slice()).read_to_end(&mut out).unwrap();
        assert_eq!(out, data[512 << 10..]);
        // Not that shape: no index found, no panic.
        assert!(xz_blocks(&xz[..xz.len() - 1].to_vec()).is_none());
        assert!(xz_blocks(&b"\xfd7zXZ\0".to_vec()).is_none());
    }

    #[test]
    fn ar_members_are_listed_and_bounded() {
        let mut ar = AR_MAGIC.to_vec();
        for (name, data) in [("debian-binary", &b"2.0\n"[..]), ("data.tar.xz/", &b"abc"[..])] {
            ar.extend_from_slice(
                format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", 0, 0, 0, 100644, data.len()).as_bytes(),
            );
            ar.extend_from_slice(data);
            if data.len() % 2 == 1 {
                ar.push(b'\n');
            }
        }
        let m = parse_ar(&ar).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!((m[1].name.as_str(), m[1].size), ("data.tar.xz", 3));
        assert_eq!(&ar[m[1].offset as usize..][..3], b"abc");
        assert!(parse_ar(&ar[..ar.len() - 2].to_vec()).is_err());
        assert!(parse_ar(&b"!<arch>\nshort".to_vec()).is_err());
    }
}
