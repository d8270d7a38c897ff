//! Offload bundles: plain (`__CLANG_OFFLOAD_BUNDLE__`) and compressed (`CCOB` v1, v2, v3), alone
//! or many in a row as in a host library's `.hip_fatbin`.
//!
//! Layouts (clang `OffloadBundler.cpp`/`.h`): a plain bundle is the magic,
//! `u64` entry count, then per entry `u64 offset, u64 size, u64 id_len, id`; offsets are relative
//! to the magic. A CCOB header is `"CCOB", u16 version, u16 method (0 zlib, 1 zstd)` then
//! V1 `u32 uncompressed, u64 hash`; V2 `u32 total, u32 uncompressed, u64 hash`; V3 `u64 total,
//! u64 uncompressed, u64 hash`; the payload inflates to a plain bundle. In `.hip_fatbin` each
//! bundle starts 4096-aligned relative to the section, zero-padded.
//!
//! Every bundle is bounded by its own header (entry table, CCOB total size; for V1, the end of
//! its compressed stream), never by searching for the next magic: compressed data can contain
//! `CCOB`. Compressed payloads are inflated as a stream, keeping one window in memory, and only
//! as far as the last entry's headers and notes: V2 and V3 say where they end, so nothing past
//! that last fact is inflated (a zstd frame's declared size and its block headers are checked
//! instead); a V1, a zlib payload and a frame without a declared size are inflated to their end.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use super::elf::{parse_code_object, parse_code_object_header, CodeObject};
use super::{align_up, le16, le32, le64, ByteSource, Depth, ParseError, Prefetched, Result, Slice};
use crate::decode::frame::{zstd_frame_header, zstd_window, ZstdFrameHeader};
use crate::decode::stream::charge;
use crate::decode::{Decoding, Inflater, StreamSource};
use crate::vocab::codec::Codec;

/// Magic of an uncompressed offload bundle.
pub const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";
/// Magic of a compressed offload bundle.
pub const CCOB_MAGIC: &[u8; 4] = b"CCOB";
/// Bundles in `.hip_fatbin` start at multiples of this, relative to the section.
pub const FATBIN_ALIGN: u64 = 4096;
/// The largest uncompressed size a CCOB may declare (the biggest real ones are hundreds of MB).
pub const MAX_UNCOMPRESSED: u64 = 8 << 30;
/// The longest bundle entry ID accepted.
pub const MAX_ID_LEN: u64 = 4096;
/// Consecutive zero pages after which the rest of a bundle region counts as padding.
pub const MAX_ZERO_PAGES: u64 = 64;

/// How a bundle is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BundleFormat {
    /// `__CLANG_OFFLOAD_BUNDLE__`.
    Plain,
    /// `CCOB` version 1, 2 or 3.
    Ccob(u16),
}

/// A parsed bundle entry ID such as `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryId<'a> {
    /// Offload kind: `host`, `hip`, `hipv4`, `hcc`, `openmp`, ...
    pub kind: &'a str,
    /// The triple's architecture: `amdgcn`, `x86_64`, `spirv64`, ...
    pub arch: &'a str,
    /// The target ID after the triple, if any (`gfx90a:xnack-`, `gfx906`).
    pub target_id: Option<&'a str>,
}

impl EntryId<'_> {
    /// Host entries carry no device code.
    pub fn is_host(&self) -> bool {
        self.kind == "host"
    }

    /// True when the entry should hold an AMDGPU code object.
    pub fn is_amdgcn(&self) -> bool {
        !self.is_host() && self.arch == "amdgcn"
    }
}

/// Splits an entry ID into kind, triple and target ID, accepting every spelling in use:
/// `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-` (empty environment), old
/// `hip-amdgcn-amd-amdhsa-gfx906`, `hcc-…`, and host entries `host-x86_64-unknown-linux-gnu`,
/// `host-x86_64-unknown-linux`, `host-x86_64-unknown-linux--`.
pub fn parse_entry_id(id: &str) -> EntryId<'_> {
    let (kind, rest) = id.split_once('-').unwrap_or((id, ""));
    let arch = rest.split('-').next().unwrap_or("");
    let target_id = if arch == "amdgcn" {
        // amdgcn-amd-amdhsa, then "-<env>-<target>" with an empty env ("--gfx…") or "-gfx…".
        let mut parts = rest.splitn(4, '-');
        let (_a, _v, _o) = (parts.next(), parts.next(), parts.next());
        parts.next().map(|t| t.trim_start_matches('-')).filter(|t| !t.is_empty())
    } else {
        None
    };
    EntryId { kind, arch, target_id }
}

/// One entry of a bundle's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// The bundle entry ID.
    pub id: String,
    /// Offset of the entry's data from the start of the (uncompressed) bundle.
    pub offset: u64,
    /// Size of the entry's data.
    pub size: u64,
}

/// Reads a plain bundle's entry table from the start of `src`.
///
/// Returns the entries and the bundle's end (the furthest entry end, at least the table end).
/// Every entry must lie inside `src`.
pub fn parse_bundle_table(src: &dyn ByteSource) -> Result<(Vec<TableEntry>, u64)> {
    let head = src.read_at(0, 32)?;
    if head.get(..24) != Some(BUNDLE_MAGIC.as_slice()) {
        return Err(ParseError::Malformed { what: "offload bundle magic", offset: 0 });
    }
    let count = le64(&head, 24).ok_or(ParseError::Truncated { what: "bundle header", offset: 24 })?;
    // Each table entry takes at least 24 bytes: a larger count cannot fit.
    if count > src.len().saturating_sub(32) / 24 {
        return Err(ParseError::Malformed { what: "bundle entry count larger than the bundle", offset: 24 });
    }
    // The table is read at once, as long as its entries' IDs are of the usual length (what
    // lies past that is read entry by entry): two small reads an entry cost more than the
    // table's bytes.
    let guess = count.saturating_mul(TABLE_ENTRY_GUESS).saturating_add(32).min(MAX_TABLE_READ);
    let table = Prefetched::new(src, guess as usize)?;
    let src: &dyn ByteSource = &table;
    let mut entries = Vec::with_capacity(count.min(1024) as usize);
    let mut pos = 32u64;
    let mut end = 0u64;
    for _ in 0..count {
        let fixed = src.read_at(pos, 24)?;
        let (off, size, id_len) = match (le64(&fixed, 0), le64(&fixed, 8), le64(&fixed, 16)) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Err(ParseError::Truncated { what: "bundle entry", offset: pos }),
        };
        if id_len > MAX_ID_LEN {
            return Err(ParseError::Malformed { what: "bundle entry ID too long", offset: pos + 16 });
        }
        let id = src.read_at(pos + 24, id_len as usize)?;
        let id = String::from_utf8_lossy(&id).into_owned();
        let entry_end = off.checked_add(size).filter(|&e| e <= src.len());
        let Some(entry_end) = entry_end else {
            return Err(ParseError::Malformed { what: "bundle entry extends past the bundle", offset: pos });
        };
        pos += 24 + id_len;
        end = end.max(entry_end);
        entries.push(TableEntry { id, offset: off, size });
    }
    Ok((entries, end.max(pos)))
}

/// Bytes a table entry takes with an ID of the usual length
/// (`hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-` is 47 bytes, plus 24 of sizes).
const TABLE_ENTRY_GUESS: u64 = 80;
/// The most of a bundle table read in one go.
const MAX_TABLE_READ: u64 = 64 << 10;

/// A CCOB header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcobHeader {
    /// Format version 1, 2 or 3.
    pub version: u16,
    /// Compression method.
    pub compression: Codec,
    /// Bytes the whole CCOB occupies, header included (V2, V3; V1 does not say).
    pub total_size: Option<u64>,
    /// Size of the inflated bundle.
    pub uncompressed_size: u64,
    /// Low 64 bits of the MD5 of the inflated bundle.
    pub hash: u64,
    /// Header length: where the compressed data starts.
    pub header_len: u64,
}

/// Parses a CCOB header from the first bytes of a bundle (32 are enough for every version).
pub fn parse_ccob_header(b: &[u8]) -> Result<CcobHeader> {
    let trunc = ParseError::Truncated { what: "CCOB header", offset: 0 };
    if b.get(..4) != Some(CCOB_MAGIC.as_slice()) {
        return Err(ParseError::Malformed { what: "CCOB magic", offset: 0 });
    }
    let version = le16(b, 4).ok_or(trunc.clone())?;
    let compression = match le16(b, 6).ok_or(trunc.clone())? {
        0 => Codec::Zlib,
        1 => Codec::Zstd,
        _ => return Err(ParseError::Malformed { what: "unknown CCOB compression method", offset: 6 }),
    };
    let (total_size, uncompressed_size, hash, header_len) = match version {
        1 => (None, le32(b, 8).map(u64::from), le64(b, 12), 20),
        2 => (le32(b, 8).map(u64::from), le32(b, 12).map(u64::from), le64(b, 16), 24),
        3 => (le64(b, 8), le64(b, 16), le64(b, 24), 32),
        _ => return Err(ParseError::Malformed { what: "unknown CCOB version", offset: 4 }),
    };
    let (Some(uncompressed_size), Some(hash)) = (uncompressed_size, hash) else { return Err(trunc) };
    if version > 1 && total_size.is_none() {
        return Err(trunc);
    }
    if let Some(t) = total_size {
        if t < header_len {
            return Err(ParseError::Malformed { what: "CCOB total size smaller than its header", offset: 8 });
        }
    }
    if uncompressed_size > MAX_UNCOMPRESSED {
        return Err(ParseError::TooLarge {
            what: "CCOB uncompressed size",
            claimed: uncompressed_size,
            limit: MAX_UNCOMPRESSED,
        });
    }
    Ok(CcobHeader { version, compression, total_size, uncompressed_size, hash, header_len })
}

/// A stream that inflates the CCOB at the start of `src` (which may run past the CCOB's end).
pub fn ccob_stream<'a>(
    src: &'a dyn ByteSource,
    h: &CcobHeader,
    inf: &'a Inflater<'_>,
) -> Result<StreamSource<'a>> {
    let in_end = h.total_size.unwrap_or(src.len());
    if in_end > src.len() {
        return Err(ParseError::Truncated { what: "CCOB payload", offset: src.len() });
    }
    inf.stream(src, (h.header_len, in_end), h.compression, h.uncompressed_size)
}

/// One device entry of a bundle and what its code object turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The table entry.
    pub table: TableEntry,
    /// The parsed AMDGPU code object; `None` for entries that are not AMDGPU ELF (SPIR-V, ...)
    /// and for those taken from the table alone.
    pub code_object: Option<std::result::Result<CodeObject, ParseError>>,
    /// Read to [`Depth::Tables`]: the entry ID names the target, the code object is unread.
    pub from_table: bool,
}

/// One bundle found in a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// Where it starts, from the start of the region.
    pub offset: u64,
    /// Plain or CCOB.
    pub format: BundleFormat,
    /// For CCOB, the method.
    pub compression: Option<Codec>,
    /// Bytes it occupies in the region (compressed size for CCOB; 0 when unknown).
    pub stored_size: u64,
    /// Inflated size (equals `stored_size` for plain bundles).
    pub uncompressed_size: u64,
    /// Device entries (host entries are dropped here).
    pub entries: Vec<Entry>,
    /// Why the bundle could not be read in full, if it could not.
    pub error: Option<ParseError>,
}

/// Every bundle in a region, and why the walk stopped early if it did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bundles {
    /// Bundles in region order.
    pub bundles: Vec<Bundle>,
    /// Set when the walk met data it could not place; bundles after it are unknown.
    pub stopped: Option<ParseError>,
}

/// True when the entry's ID alone says what a runtime picking code for the `wanted` processors
/// (those being checked) needs: comgr reads a target ID from it, that target is a processor the
/// target table knows (an unknown one is named by its ELF), and neither a wanted processor (a
/// verdict rests on the entry: it is read, so a broken one is seen) nor the generic target one
/// of them falls back to (that code loads only with the generic version its ELF header states,
/// clr `hip_fatbin.cpp` `TargetToGeneric`). Other generic targets' code serves none of them.
fn table_suffices(id: &str, wanted: &[String], targets: &crate::vocab::targets::Targets) -> bool {
    crate::vocab::runtime::comgr_target(id).is_some_and(|t| {
        let processor = t.split(':').next().unwrap_or(t);
        let falls_back_to =
            |w: &String| crate::vocab::runtime::fallback_generic(w, targets) == Some(processor);
        targets.by_name(processor).is_some() && !wanted.iter().any(|w| w == processor || falls_back_to(w))
    })
}

/// Parses the table and every device entry of the bundle at the start of `view`, each code
/// object read to `depth`. At [`Depth::Tables`], an entry whose ID says its target (and is not
/// a checked GPU's) is taken from the table, in a plain bundle as in a compressed one.
fn read_entries(view: &dyn ByteSource, depth: Depth<'_>) -> Result<(Vec<Entry>, u64)> {
    let (table, end) = parse_bundle_table(view)?;
    let mut device: Vec<TableEntry> =
        table.into_iter().filter(|e| !parse_entry_id(&e.id).is_host() && e.size > 0).collect();
    // Streams read forward: visit entries in data order.
    device.sort_by_key(|e| e.offset);
    // Entries may not overlap: a table pointing many entries at one object would multiply the
    // work of parsing it.
    let mut covered = 0u64;
    for t in &device {
        if t.offset < covered {
            return Err(ParseError::Malformed { what: "bundle entries overlap", offset: t.offset });
        }
        covered = t.offset.saturating_add(t.size);
    }
    let mut out = Vec::with_capacity(device.len());
    for t in device {
        if let Depth::Tables { wanted, targets } = depth {
            if table_suffices(&t.id, wanted, targets) {
                out.push(Entry { table: t, code_object: None, from_table: true });
                continue;
            }
        }
        view.release_before(t.offset);
        let id = parse_entry_id(&t.id);
        let head = view.read_up_to(t.offset, 4)?;
        let code_object = (id.is_amdgcn() || head.as_ref() == b"\x7fELF").then(|| {
            let entry = Slice::new(view, t.offset, t.size);
            match depth {
                Depth::Tables { .. } => parse_code_object_header(&entry, t.size),
                Depth::Facts => parse_code_object(&entry, Some(t.size)),
            }
        });
        out.push(Entry { table: t, code_object, from_table: false });
    }
    Ok((out, end))
}

/// Checks a CCOB v2/v3's zstd payload without inflating it (zstd, RFC 8878 §3.1): the frame
/// must declare the size the CCOB header states, and its blocks, walked by their 3-byte
/// headers, must end exactly where the CCOB's stored size says (`walk`). `None` when it cannot
/// be checked so (a zlib payload, a frame that declares no size): it is then inflated to its
/// end.
fn check_zstd_frame(src: &dyn ByteSource, h: &CcobHeader, walk: bool) -> Option<Result<()>> {
    let end = h.total_size?;
    if h.compression != Codec::Zstd {
        return None;
    }
    let start = h.header_len;
    let frame = zstd_frame_header(&src.read_up_to(start, 18).ok()?)?;
    if frame.content_size? != h.uncompressed_size {
        return Some(Err(ParseError::Malformed {
            what: "CCOB inflates to a size other than its header declares",
            offset: start,
        }));
    }
    Some(if walk { walk_zstd_blocks(src, start, end, &frame) } else { Ok(()) })
}

/// Walks the blocks of the zstd frame at `start` (whose header is `frame`) by their 3-byte
/// headers (RFC 8878 §3.1.1.2) and requires the frame to end exactly at `end`.
fn walk_zstd_blocks(src: &dyn ByteSource, start: u64, end: u64, frame: &ZstdFrameHeader) -> Result<()> {
    let mut pos = start + frame.len;
    let cut = |at: u64| ParseError::Truncated {
        what: "CCOB zstd payload (its blocks run past its stored size)",
        offset: at,
    };
    loop {
        if pos.saturating_add(3) > end {
            return Err(cut(pos));
        }
        let b = src.read_at(pos, 3)?;
        let v = u32::from(b.first().copied().unwrap_or(0))
            | u32::from(b.get(1).copied().unwrap_or(0)) << 8
            | u32::from(b.get(2).copied().unwrap_or(0)) << 16;
        let data = match (v >> 1) & 3 {
            0 | 2 => u64::from(v >> 3),
            1 => 1,
            _ => return Err(ParseError::Malformed { what: "zstd block of the reserved type", offset: pos }),
        };
        pos = pos.saturating_add(3 + data);
        if pos > end {
            return Err(cut(pos));
        }
        if v & 1 == 1 {
            break;
        }
    }
    // The frame's content checksum, when it has one.
    pos += if frame.checksum { 4 } else { 0 };
    match pos == end {
        true => Ok(()),
        false => {
            Err(ParseError::Malformed { what: "CCOB zstd payload ends before its stored size", offset: pos })
        }
    }
}

/// Reads the bundle (plain or CCOB) at the start of `src`, every fact; `src` may extend past
/// its end.
///
/// The bundle's `stored_size` is 0 when its end cannot be known (a broken table).
pub fn parse_bundle(src: &dyn ByteSource) -> Result<Bundle> {
    parse_bundle_to(src, Depth::Facts, &Decoding::default().inflater())
}

/// [`parse_bundle`], its code objects read to `depth`.
pub fn parse_bundle_to(src: &dyn ByteSource, depth: Depth<'_>, inf: &Inflater<'_>) -> Result<Bundle> {
    let head = src.read_up_to(0, 32)?;
    if head.starts_with(BUNDLE_MAGIC) {
        let mut b = Bundle {
            offset: 0,
            format: BundleFormat::Plain,
            compression: None,
            stored_size: 0,
            uncompressed_size: 0,
            entries: Vec::new(),
            error: None,
        };
        match read_entries(src, depth) {
            Ok((entries, end)) => {
                b.entries = entries;
                b.stored_size = end;
                b.uncompressed_size = end;
            }
            Err(e) => b.error = Some(e),
        }
        return Ok(b);
    }
    let h = parse_ccob_header(&head)?;
    let mut b = Bundle {
        offset: 0,
        format: BundleFormat::Ccob(h.version),
        compression: Some(h.compression),
        stored_size: h.total_size.unwrap_or(0),
        uncompressed_size: h.uncompressed_size,
        entries: Vec::new(),
        error: None,
    };
    let stream = ccob_stream(src, &h, inf)?;
    match read_entries(&stream, depth) {
        Ok((entries, _)) => b.entries = entries,
        Err(e) => b.error = Some(e),
    }
    if b.error.is_none() {
        // V2 and V3 say where their payload ends: nothing past the last entry's facts is
        // inflated, and a zstd frame is checked by its declared size and its block headers.
        // Else (V1, which stores no size; zlib; a frame that declares none) the rest is
        // inflated: its end is where the compressed stream ends, and it must come to exactly
        // the size the header declares.
        // At Depth::Tables a frame none of whose entries a checked GPU loads is not walked: its
        // verdict does not rest on it (a bundle without the GPU's code fails the GPU anyway).
        let unread = matches!(depth, Depth::Tables { .. }) && b.entries.iter().all(|e| e.from_table);
        if let Some(checked) = check_zstd_frame(src, &h, !unread) {
            b.error = checked.err();
            return Ok(b);
        }
        match stream.drain() {
            Ok((consumed, produced)) => {
                if h.total_size.is_none() {
                    b.stored_size = consumed;
                }
                if produced != h.uncompressed_size {
                    b.error = Some(ParseError::Malformed {
                        what: "CCOB inflates to a size other than its header declares",
                        offset: produced,
                    });
                }
            }
            Err(e) => b.error = Some(e),
        }
    }
    Ok(b)
}

/// True when `src` starts with either bundle magic.
pub fn is_bundle(head: &[u8]) -> bool {
    head.starts_with(BUNDLE_MAGIC) || head.starts_with(CCOB_MAGIC)
}

/// Where the bundle at `pos` ends, when that is known without reading its entries: a plain
/// bundle's table (whose entries must not overlap, as `read_entries` requires), a CCOB's
/// stored size (v2, v3). `None` for a CCOB v1 (its end is where its stream ends) and for
/// anything `parse_bundle` would stop on: those are parsed in order, as they come.
fn locate(src: &dyn ByteSource, pos: u64, head: &[u8]) -> Option<(u64, u64)> {
    let view = Slice::new(src, pos, src.len() - pos);
    if head.starts_with(BUNDLE_MAGIC) {
        let (table, end) = parse_bundle_table(&view).ok()?;
        let mut device: Vec<&TableEntry> =
            table.iter().filter(|e| !parse_entry_id(&e.id).is_host() && e.size > 0).collect();
        device.sort_by_key(|e| e.offset);
        let overlap = device.windows(2).any(|w| match w {
            [a, b] => b.offset < a.offset.saturating_add(a.size),
            _ => false,
        });
        return (!overlap && end > 0).then_some((end, 0));
    }
    let h = parse_ccob_header(head).ok()?;
    let size = h.total_size.filter(|&t| t > 0 && t <= view.len())?;
    Some((size, decoder_charge(src, pos, &h)))
}

/// What inflating a CCOB will charge the window budget, read from its zstd frame header as
/// [`ZstdInflate`] reads it (0 for zlib, whose window is 32 KiB).
fn decoder_charge(src: &dyn ByteSource, pos: u64, h: &CcobHeader) -> u64 {
    if h.compression != Codec::Zstd {
        return 0;
    }
    let frame = src.read_up_to(pos.saturating_add(h.header_len), 18).ok();
    frame.and_then(|f| zstd_window(&f)).map_or(0, charge)
}

/// A bundle parsed at `pos` of `src`, placed in the region.
fn parse_at(src: &dyn ByteSource, pos: u64, depth: Depth<'_>, inf: &Inflater<'_>) -> Result<Bundle> {
    let view = Slice::new(src, pos, src.len() - pos);
    let mut bundle = parse_bundle_to(&view, depth, inf).map_err(|e| e.rebased(pos))?;
    bundle.offset = pos;
    bundle.error = bundle.error.map(|e| e.rebased(pos));
    Ok(bundle)
}

/// A bundle of the walk: parsed on the spot, or located and parsed with the others later.
enum Slot {
    Parsed(Result<Bundle>),
    /// Where it starts, and what inflating it charges the window budget.
    Located(u64, u64),
}

/// Walks every bundle in a region such as `.hip_fatbin` or a standalone bundle file.
///
/// Bundles start at multiples of [`FATBIN_ALIGN`]; each is bounded by its own header. Zero
/// pages between them are padding. Anything else at an aligned position stops the walk with
/// an error, as does a bundle whose end cannot be known.
///
/// When the region can be read by several threads at once ([`ByteSource::shared`]), bundles
/// whose end their header tells are only located during the walk and then parsed in parallel
/// (their entries inflated and their code objects read), results kept in region order: one
/// large library does not serialize the scan. The result is the same either way.
pub fn parse_bundles(src: &dyn ByteSource) -> Bundles {
    parse_bundles_to(src, Depth::Facts, &Decoding::default().inflater())
}

/// [`parse_bundles`], their code objects read to `depth`.
pub fn parse_bundles_to(src: &dyn ByteSource, depth: Depth<'_>, inf: &Inflater<'_>) -> Bundles {
    let shared = src.shared();
    let mut slots: Vec<Slot> = Vec::new();
    let mut stopped = None;
    let mut pos = 0u64;
    let mut zero_pages = 0u64;
    while pos < src.len() {
        let head = match src.read_up_to(pos, 32) {
            Ok(h) => h.into_owned(),
            Err(e) => {
                stopped = Some(e);
                break;
            }
        };
        if head.iter().all(|&b| b == 0) {
            zero_pages += 1;
            if zero_pages > MAX_ZERO_PAGES {
                break;
            }
            pos = align_up(pos + 1, FATBIN_ALIGN);
            continue;
        }
        zero_pages = 0;
        if !is_bundle(&head) {
            stopped = Some(ParseError::Malformed { what: "data that is not an offload bundle", offset: pos });
            break;
        }
        if let Some((size, charge)) = shared.as_ref().and_then(|_| locate(src, pos, &head)) {
            slots.push(Slot::Located(pos, charge));
            pos = align_up(pos.saturating_add(size), FATBIN_ALIGN);
            continue;
        }
        let parsed = parse_at(src, pos, depth, inf);
        let size = parsed.as_ref().map_or(0, |b| b.stored_size);
        let failed = parsed.is_err();
        slots.push(Slot::Parsed(parsed));
        if failed || size == 0 {
            // The end of this bundle is unknown: what follows cannot be placed.
            break;
        }
        pos = align_up(pos.saturating_add(size), FATBIN_ALIGN);
    }
    if let Some(sh) = shared.filter(|_| slots.iter().filter(|s| matches!(s, Slot::Located(..))).count() > 1) {
        let located: Vec<(usize, u64, u64)> = (slots.iter().enumerate())
            .filter_map(|(i, s)| match *s {
                Slot::Located(at, charge) => Some((i, at, charge)),
                Slot::Parsed(_) => None,
            })
            .collect();
        let charges: Vec<u64> = located.iter().map(|l| l.2).collect();
        let parsed =
            inf.run_within(&charges, |k, inf| located.get(k).map(|l| parse_at(&sh, l.1, depth, inf)));
        for ((i, _, _), p) in located.iter().zip(parsed) {
            if let (Some(slot), Some(Some(p))) = (slots.get_mut(*i), p) {
                *slot = Slot::Parsed(p);
            }
        }
    }
    let mut out = Bundles::default();
    for slot in slots {
        let parsed = match slot {
            Slot::Parsed(p) => p,
            Slot::Located(at, _) => parse_at(src, at, depth, inf),
        };
        match parsed {
            Ok(b) => out.bundles.push(b),
            Err(e) => {
                stopped = Some(e);
                break;
            }
        }
    }
    out.stopped = out.stopped.or(stopped);
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::{bundle, ccob, code_object, fatbin, CodeObjectSpec, Codec};

    fn co(mach: u32) -> Vec<u8> {
        code_object(&CodeObjectSpec::v4(mach, 0, &["k"]))
    }

    #[test]
    fn entry_ids_of_every_spelling() {
        let e = parse_entry_id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
        assert_eq!((e.kind, e.arch, e.target_id), ("hipv4", "amdgcn", Some("gfx90a:xnack-")));
        let e = parse_entry_id("hip-amdgcn-amd-amdhsa-gfx906");
        assert_eq!(e.target_id, Some("gfx906"));
        assert!(parse_entry_id("hcc-amdgcn-amd-amdhsa--gfx803").is_amdgcn());
        for host in
            ["host-x86_64-unknown-linux-gnu", "host-x86_64-unknown-linux", "host-x86_64-unknown-linux--"]
        {
            assert!(parse_entry_id(host).is_host(), "{host}");
        }
        let spirv = parse_entry_id("hipv4-spirv64-amd-amdhsa--amdgcnspirv");
        assert!(!spirv.is_amdgcn() && !spirv.is_host());
    }

    /// Frames with windows of 32 MiB and more leave their decoders to be reused, and a decoder
    /// left mid-frame (only a code object's first bytes are read) is reset before its next
    /// frame: every bundle still reads right, in region order, whichever decoder it gets.
    #[test]
    fn large_frames_read_right_through_reused_decoders() {
        let big = 34 << 20;
        let mut bundles = Vec::new();
        let mut want: Vec<(u32, u64)> = Vec::new();
        for (i, mach) in [0x2c_u32, 0x41, 0x3f, 0x36].into_iter().enumerate() {
            let mut entry = code_object(&CodeObjectSpec::v4(mach, 0, &["k"]));
            entry.resize(big + i * 4096, 0);
            let id = [
                "hipv4-amdgcn-amd-amdhsa--gfx900",
                "hipv4-amdgcn-amd-amdhsa--gfx1100",
                "hipv4-amdgcn-amd-amdhsa--gfx90a",
                "hipv4-amdgcn-amd-amdhsa--gfx1030",
            ][i];
            bundles.push(ccob(3, Codec::Zstd, &bundle(&[(id, &entry)], 4096)));
            want.push((mach, entry.len() as u64));
        }
        let region = fatbin(&bundles);
        for _ in 0..2 {
            let got = parse_bundles(&region);
            assert!(got.stopped.is_none(), "{:?}", got.stopped);
            let procs: Vec<(u32, u64)> = got
                .bundles
                .iter()
                .flat_map(|b| b.entries.iter())
                .filter_map(|e| {
                    e.code_object.as_ref()?.as_ref().ok().map(|c| (c.header.e_flags & 0xff, c.size))
                })
                .collect();
            assert_eq!(procs, want);
        }
    }

    #[test]
    fn plain_bundle_yields_device_entries_only() {
        let (a, b) = (co(0x2c), co(0x41));
        let bytes = bundle(
            &[
                ("host-x86_64-unknown-linux-gnu-", &[]),
                ("hipv4-amdgcn-amd-amdhsa--gfx900", &a),
                ("hipv4-amdgcn-amd-amdhsa--gfx1100", &b),
            ],
            4096,
        );
        let got = parse_bundles(&bytes);
        assert!(got.stopped.is_none());
        assert_eq!(got.bundles.len(), 1);
        let entries = &got.bundles[0].entries;
        assert_eq!(entries.len(), 2);
        let flags: Vec<u32> = entries
            .iter()
            .map(|e| e.code_object.clone().expect("amdgcn").expect("parses").header.e_flags & 0xff)
            .collect();
        assert_eq!(flags, vec![0x2c, 0x41]);
    }

    #[test]
    fn every_ccob_version_and_method_inflates() {
        let a = co(0x3f);
        let plain =
            bundle(&[("host-x86_64-unknown-linux-gnu", &[]), ("hipv4-amdgcn-amd-amdhsa--gfx90a", &a)], 4096);
        for version in [1, 2, 3] {
            for method in [Codec::Zstd, Codec::Zlib] {
                let bytes = ccob(version, method, &plain);
                let got = parse_bundles(&bytes);
                assert!(got.stopped.is_none(), "v{version} {method:?}: {:?}", got.stopped);
                let b = &got.bundles[0];
                assert_eq!(b.format, BundleFormat::Ccob(version));
                assert_eq!(b.stored_size, bytes.len() as u64, "v{version} {method:?}");
                assert_eq!(b.entries.len(), 1);
                assert!(b.error.is_none(), "{:?}", b.error);
            }
        }
    }

    #[test]
    fn fatbin_of_mixed_bundles_is_walked_by_header_sizes() {
        let a = co(0x2c);
        let plain = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx900", &a)], 4096);
        // Compressed data may contain the magic: a search for it would go wrong.
        let mut tricky = plain.clone();
        tricky.extend_from_slice(b"CCOB__CLANG_OFFLOAD_BUNDLE__");
        let region = fatbin(&[
            plain.clone(),
            ccob(3, Codec::Zstd, &plain),
            ccob(1, Codec::Zlib, &plain),
            ccob(2, Codec::Zstd, &plain),
        ]);
        let got = parse_bundles(&region);
        assert!(got.stopped.is_none(), "{:?}", got.stopped);
        assert_eq!(got.bundles.len(), 4);
        assert!(got.bundles.iter().all(|b| b.offset % 4096 == 0 && b.entries.len() == 1));
    }

    #[test]
    fn lying_sizes_are_errors() {
        let a = co(0x2c);
        let plain = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx900", &a)], 4096);
        // An entry offset past the end.
        let mut bad = plain.clone();
        bad[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_bundles(&bad).bundles[0].error.is_some());
        // A CCOB claiming 2^40 uncompressed bytes.
        let mut big = ccob(3, Codec::Zstd, &plain);
        big[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(parse_bundles(&big).stopped.is_some());
        // A CCOB whose total size runs past the data.
        let mut long = ccob(2, Codec::Zstd, &plain);
        long[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_bundles(&long).stopped.is_some());
        // A CCOB that claims more than it inflates to: truncated, never a hang.
        let mut short = ccob(3, Codec::Zstd, &plain);
        short[16..24].copy_from_slice(&((plain.len() as u64) * 4).to_le_bytes());
        // The entries lie inside what does inflate, so they still parse.
        let got = parse_bundles(&short);
        assert_eq!(got.bundles.len(), 1);
        assert_eq!(got.bundles[0].entries.len(), 1);
        assert!(got.bundles[0].entries[0].code_object.as_ref().is_some_and(|r| r.is_ok()));
    }

    #[test]
    fn overlapping_entries_are_refused() {
        // Review finding: many entries pointing at one object multiplied the work of parsing it.
        let a = co(0x2c);
        let mut b =
            bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx900", &a), ("hipv4-amdgcn-amd-amdhsa--gfx906", &a)], 4096);
        // Point the second entry at the first one's bytes.
        let first_off = b[32..40].to_vec();
        let second = 32 + 24 + "hipv4-amdgcn-amd-amdhsa--gfx900".len();
        b[second..second + 8].copy_from_slice(&first_off);
        let got = parse_bundles(&b);
        let err = got.bundles[0].error.clone().expect("an error");
        assert!(err.to_string().contains("bundle entries overlap"), "{err}");
    }

    #[test]
    fn garbage_between_bundles_stops_the_walk() {
        let plain = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx900", &co(0x2c))], 4096);
        let mut region = fatbin(&[plain]);
        region.resize(region.len().div_ceil(4096) * 4096, 0);
        region.extend_from_slice(b"garbage!");
        let got = parse_bundles(&region);
        assert_eq!(got.bundles.len(), 1);
        assert!(got.stopped.is_some());
    }

    /// `n` bytes that do not compress (xorshift).
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Bytes that count how many of them were read.
    struct Counted(Vec<u8>, std::cell::Cell<u64>);

    impl ByteSource for Counted {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }

        fn read_at(&self, offset: u64, len: usize) -> Result<std::borrow::Cow<'_, [u8]>> {
            let got = self.0.read_at(offset, len)?;
            self.1.set(self.1.get() + got.len() as u64);
            Ok(got)
        }
    }

    /// A CCOB v2/v3 is inflated only as far as its last fact (the last entry's ELF header,
    /// program headers and notes): its kernel code after that is never inflated, and of its
    /// compressed bytes only the block headers are read.
    /// A v1 stores no size, so its end is found by inflating it all.
    #[test]
    fn ccob_inflation_stops_at_the_last_fact() {
        let mut entry = code_object(&CodeObjectSpec::v4(0x2c, 0, &["k"]));
        // 4 MiB of kernel code that does not compress.
        entry.extend(noise(4 << 20));
        let plain = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx900", &entry)], 4096);
        for (version, whole) in [(3, false), (2, false), (1, true)] {
            let src = Counted(ccob(version, Codec::Zstd, &plain), std::cell::Cell::new(0));
            let b = parse_bundle(&src).expect("a bundle");
            assert_eq!(b.error, None, "v{version}");
            assert_eq!(b.entries.len(), 1);
            let co = b.entries[0].code_object.as_ref().expect("an ELF").as_ref().expect("parsed");
            assert_eq!((co.header.e_flags & 0xff, co.kernels()), (0x2c, Some(1)), "v{version}");
            let read = src.1.get();
            if whole {
                assert!(read >= src.len(), "v1 is inflated to its end: read {read} of {}", src.len());
            } else {
                assert!(read < src.len() / 8, "v{version}: read {read} of {} bytes", src.len());
            }
        }
    }

    /// A zstd frame cut short past the last fact, inside a CCOB whose stored size was made to
    /// match, is caught by walking its block headers, without inflating it; at Depth::Tables
    /// only when a checked GPU's entry is in it (else its verdict does not rest on it).
    #[test]
    fn a_frame_cut_past_the_last_fact_is_caught_by_its_blocks() {
        let mut entry = code_object(&CodeObjectSpec::v4(0x2c, 0, &["k"]));
        entry.extend(noise(1 << 20));
        let mut cut = ccob(3, Codec::Zstd, &bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx900", &entry)], 4096));
        cut.truncate(cut.len() - 1000);
        let len = cut.len() as u64;
        cut[8..16].copy_from_slice(&len.to_le_bytes());
        let facts = parse_bundle(&cut).expect("a bundle");
        assert!(matches!(facts.error, Some(ParseError::Truncated { .. })), "{:?}", facts.error);
        assert_eq!(facts.entries.len(), 1, "the entry before the cut is still read");
        let targets = crate::vocab::targets::Targets::builtin();
        let decoding = Decoding::default();
        let inf = decoding.inflater();
        let wanted = ["gfx900".to_string()];
        let checked = parse_bundle_to(&cut, Depth::Tables { wanted: &wanted, targets: &targets }, &inf)
            .expect("a bundle");
        assert_eq!(checked.error, facts.error);
        let other = ["gfx1100".to_string()];
        let unread = parse_bundle_to(&cut, Depth::Tables { wanted: &other, targets: &targets }, &inf)
            .expect("a bundle");
        assert_eq!(unread.error, None);
        assert!(unread.entries[0].from_table);
    }

    /// The same bytes without `shared`: what a forward-only source gets (the walk in order).
    struct OneThread(Vec<u8>);

    impl ByteSource for OneThread {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }

        fn read_at(&self, offset: u64, len: usize) -> Result<std::borrow::Cow<'_, [u8]>> {
            self.0.read_at(offset, len)
        }
    }

    #[test]
    fn bundles_parsed_in_parallel_equal_the_walk_in_order() {
        let plain = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx900", &co(0x2c))], 4096);
        let wide = bundle(
            &[("hipv4-amdgcn-amd-amdhsa--gfx906", &co(0x2f)), ("hipv4-amdgcn-amd-amdhsa--gfx90a", &co(0x3f))],
            4096,
        );
        // Plain and CCOB v2/v3 bundles are located, then parsed in parallel; a CCOB v1 in the
        // middle is parsed on the spot; garbage at the end stops the walk.
        let mut region = fatbin(&[
            plain.clone(),
            ccob(3, Codec::Zstd, &wide),
            ccob(1, Codec::Zlib, &plain),
            wide.clone(),
            ccob(2, Codec::Zstd, &plain),
            plain.clone(),
        ]);
        region.resize(region.len().div_ceil(4096) * 4096, 0);
        region.extend_from_slice(b"garbage!");
        assert!(region.shared().is_some() && OneThread(region.clone()).shared().is_none());
        let parallel = parse_bundles(&region);
        let in_order = parse_bundles(&OneThread(region.clone()));
        assert_eq!(parallel, in_order);
        assert_eq!(parallel.bundles.len(), 6);
        assert!(parallel.stopped.is_some());
        // A located CCOB whose stream fails (it claims 16 times what it inflates to): the
        // same error on the same bundle, and the walk goes on by its stored size, as in order.
        let mut bad = fatbin(&[plain.clone(), ccob(2, Codec::Zstd, &plain), plain.clone()]);
        let at = bad.windows(4).position(|w| w == b"CCOB").expect("ccob");
        let claimed = (plain.len() as u32) * 16;
        bad[at + 12..at + 16].copy_from_slice(&claimed.to_le_bytes());
        let got = parse_bundles(&bad);
        assert!(got.bundles[1].error.is_some() && got.bundles.len() == 3, "{got:?}");
        assert_eq!(got, parse_bundles(&OneThread(bad.clone())));
    }
}
