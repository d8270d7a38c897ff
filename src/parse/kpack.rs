//! TheRock kpack: device code split out of host binaries into `.kpack` archives, and the two
//! marks a split host binary keeps, so the scanner can say which kernels live where.
//!
//! Verified against ROCm/rocm-kpack (HEAD e3483286, Feb 2026):
//!
//! * `.kpack` archive (`runtime/src/archive.cpp` `validate_header`, `runtime/src/toc_parser.cpp`
//!   `parse_toc`, `runtime/src/compression.cpp` `build_zstd_frame_index`,
//!   `runtime/include/rocm_kpack/kpack_types.h` `KPACK_MAGIC`/`KPACK_CURRENT_VERSION`, and the
//!   writer `python/rocm_kpack/kpack.py` `PackedKernelArchive.write`): a 16-byte header
//!   `"KPAK", u32 version (1, the only one), u64 toc_offset`, zero padding to 64, the blob, and a
//!   MessagePack TOC at `toc_offset` running to the end of the file: `{format_version,
//!   group_name, gfx_arch_family, gfx_arches[], compression_scheme, toc: {binary: {arch: {type,
//!   ordinal, original_size}}}}` plus, for scheme `"none"`, `blobs: [{offset, size}]` indexed by
//!   ordinal (absolute file offsets), or for `"zstd-per-kernel"`, `zstd_offset, zstd_size` of a
//!   blob that is `u32 count` then per kernel `u32 frame_size` and one zstd frame
//!   (`python/rocm_kpack/compression.py` `ZstdCompressor.finalize`). Other versions are refused
//!   as the runtime refuses them (`KPACK_ERROR_UNSUPPORTED_VERSION`).
//! * `.rocm_kpack_ref` (ELF; `.kpackrf` in PE images): MessagePack `{kernel_name,
//!   kpack_search_paths[]}` (`python/rocm_kpack/elf/kpack_transform.py`
//!   `add_kpack_ref_section`, `runtime/src/loader.cpp` HIPK metadata parser). Paths may hold
//!   `@GFXARCH@`, expanded per architecture; the TOC key is `kernel_name#co_index`.
//! * HIPK: the split binary's `__CudaFatBinaryWrapper`s in `.hipFatBinSegment` (`.hipFatB` in
//!   PE images), 24 bytes each `u32 magic, u32 version, u64 binary, u64 reserved`, get magic
//!   `HIPK` (0x4B504948) instead of clang's `HIPF` (0x48495046), `binary` pointing at
//!   `.rocm_kpack_ref` and `reserved` holding the code object index
//!   (`elf/kpack_transform.py` `rewrite_hipfatbin_magic`; clang `CGCUDANV.cpp`
//!   `makeModuleCtorFunction` for the wrapper; ROCm/clr `hip_code_object.cpp` checks
//!   `kHipkMagic`). `.hip_fatbin` itself is only zero-paged (made NOBITS), not rewritten.
//!
//! The `.kpm` manifests of `docs/kpack-build-integration.md` are a design the current splitter
//! does not write (`artifact_splitter.py`: "eliminating the need for .kpm manifest files"), so
//! nothing here reads them.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use super::msgpack::Reader;
use super::{le32, le64, ByteSource, ParseError, Result, Slice};

/// First four bytes of a `.kpack` archive.
pub const KPACK_MAGIC: &[u8; 4] = b"KPAK";
/// The only archive version upstream writes or reads (`KPACK_CURRENT_VERSION`).
pub const KPACK_VERSION: u32 = 1;
/// Length of the fixed header.
pub const KPACK_HEADER_LEN: u64 = 16;
/// Most kernels (TOC entries, blobs, zstd frames) read from one archive (upstream's
/// `MAX_KERNELS`).
pub const MAX_KERNELS: u64 = 1 << 20;
/// Most bytes of names (binary paths, architectures) kept from one TOC.
pub const MAX_NAME_BYTES: u64 = 64 << 20;
/// Most search paths read from a `.rocm_kpack_ref`.
pub const MAX_SEARCH_PATHS: u64 = 1024;
/// `__CudaFatBinaryWrapper` magic of a normal HIP fat binary ("HIPF" read little-endian).
pub const HIPF_MAGIC: u32 = 0x4849_5046;
/// `__CudaFatBinaryWrapper` magic of a kpack-split binary ("HIPK" read little-endian).
pub const HIPK_MAGIC: u32 = 0x4B50_4948;
/// Size of one `__CudaFatBinaryWrapper` on a 64-bit host.
pub const WRAPPER_LEN: u64 = 24;
/// Most wrappers read from one `.hipFatBinSegment`.
pub const MAX_WRAPPERS: u64 = 1 << 20;
/// The placeholder a search path holds for the architecture (`kGfxArchPlaceholder`).
pub const GFXARCH_PLACEHOLDER: &str = "@GFXARCH@";

/// How an archive stores its kernels (`compression_scheme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KpackCompression {
    /// `"none"`: each kernel is a raw blob.
    None,
    /// `"zstd-per-kernel"`: each kernel is one zstd frame.
    ZstdPerKernel,
}

/// One kernel (code object) of an archive: a binary's code for one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KpackKernel {
    /// TOC key of the binary it came from (`rocrand/lib/librocrand.so.1.1#0`).
    pub binary: String,
    /// Architecture (`gfx1100`).
    pub arch: String,
    /// `type`, `hsaco` for every kernel upstream writes.
    pub kind: Option<String>,
    /// Index into the blobs or frames.
    pub ordinal: u64,
    /// Size once inflated, if the TOC says.
    pub original_size: Option<u64>,
    /// File offset of the stored bytes: the raw code object, or its zstd frame.
    pub offset: u64,
    /// Stored size.
    pub size: u64,
}

/// What a `.kpack` archive holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kpack {
    /// Header version (always [`KPACK_VERSION`]).
    pub version: u32,
    /// Where the TOC starts.
    pub toc_offset: u64,
    /// TOC `format_version`.
    pub format_version: Option<u64>,
    /// TOC `group_name` (`blas`).
    pub group_name: Option<String>,
    /// TOC `gfx_arch_family` (`gfx110X`).
    pub gfx_arch_family: Option<String>,
    /// TOC `gfx_arches`.
    pub gfx_arches: Vec<String>,
    /// How kernels are stored.
    pub compression: KpackCompression,
    /// Every kernel, in TOC order.
    pub kernels: Vec<KpackKernel>,
}

impl Kpack {
    /// The distinct architectures kernels exist for, in first-seen order.
    pub fn kernel_arches(&self) -> Vec<String> {
        let mut out = Vec::new();
        for k in &self.kernels {
            super::push_unique(&mut out, &k.arch);
        }
        out
    }
}

/// True when `head` starts with the kpack magic.
pub fn is_kpack(head: &[u8]) -> bool {
    head.starts_with(KPACK_MAGIC)
}

/// Parses the 16-byte header: `(version, toc_offset)`. Unknown versions are errors.
pub fn parse_kpack_header(b: &[u8]) -> Result<(u32, u64)> {
    if b.get(..4) != Some(KPACK_MAGIC.as_slice()) {
        return Err(ParseError::Malformed { what: "kpack magic", offset: 0 });
    }
    let version = le32(b, 4).ok_or(ParseError::Truncated { what: "kpack header", offset: 4 })?;
    if version != KPACK_VERSION {
        return Err(ParseError::Malformed { what: "unsupported kpack version", offset: 4 });
    }
    let toc = le64(b, 8).ok_or(ParseError::Truncated { what: "kpack header", offset: 8 })?;
    Ok((version, toc))
}

/// A TOC entry before its blob is known.
struct TocEntry {
    binary: String,
    arch: String,
    kind: Option<String>,
    ordinal: Option<u64>,
    original_size: Option<u64>,
}

/// Reads a string, charging its length to `budget`.
fn name(r: &mut Reader, budget: &mut u64) -> Result<String> {
    let at = r.position();
    let b = r.str_bytes()?;
    *budget = budget.checked_sub(b.len() as u64).ok_or(ParseError::TooLarge {
        what: "names in a kpack TOC",
        claimed: MAX_NAME_BYTES + 1,
        limit: MAX_NAME_BYTES,
    })?;
    String::from_utf8(b).map_err(|_| ParseError::Malformed { what: "kpack TOC string not UTF-8", offset: at })
}

/// A container length, refused above `limit`.
fn bounded(n: u64, limit: u64, what: &'static str) -> Result<u64> {
    if n > limit {
        return Err(ParseError::TooLarge { what, claimed: n, limit });
    }
    Ok(n)
}

/// Reads `toc: {binary: {arch: {type, ordinal, original_size}}}`.
fn read_toc(r: &mut Reader, budget: &mut u64, out: &mut Vec<TocEntry>) -> Result<()> {
    let binaries = r.map_len()?;
    for _ in 0..binaries {
        let binary = name(r, budget)?;
        let arches = r.map_len()?;
        for _ in 0..arches {
            let arch = name(r, budget)?;
            if out.len() as u64 >= MAX_KERNELS {
                return Err(ParseError::TooLarge {
                    what: "kernels in a kpack TOC",
                    claimed: MAX_KERNELS + 1,
                    limit: MAX_KERNELS,
                });
            }
            let mut e =
                TocEntry { binary: binary.clone(), arch, kind: None, ordinal: None, original_size: None };
            *budget = budget.saturating_sub(binary.len() as u64);
            let fields = r.map_len()?;
            for _ in 0..fields {
                let key = r.str_bytes()?;
                match key.as_slice() {
                    b"type" => e.kind = Some(name(r, budget)?),
                    b"ordinal" => e.ordinal = Some(r.uint()?),
                    b"original_size" => e.original_size = Some(r.uint()?),
                    _ => r.skip()?,
                }
            }
            out.push(e);
        }
    }
    Ok(())
}

/// Reads `blobs: [{offset, size}]`.
fn read_blobs(r: &mut Reader) -> Result<Vec<(u64, u64)>> {
    let n = bounded(r.array_len()?, MAX_KERNELS, "kpack blob list")?;
    let mut out = Vec::new();
    for _ in 0..n {
        let at = r.position();
        let (mut offset, mut size) = (None, None);
        let fields = r.map_len()?;
        for _ in 0..fields {
            let key = r.str_bytes()?;
            match key.as_slice() {
                b"offset" => offset = Some(r.uint()?),
                b"size" => size = Some(r.uint()?),
                _ => r.skip()?,
            }
        }
        match (offset, size) {
            (Some(o), Some(s)) => out.push((o, s)),
            _ => return Err(ParseError::Malformed { what: "kpack blob without offset or size", offset: at }),
        }
    }
    Ok(out)
}

/// Walks the zstd blob's frame index: `u32 count`, then `u32 size` and a frame, per kernel.
fn zstd_frames(src: &dyn ByteSource, offset: u64, size: u64) -> Result<Vec<(u64, u64)>> {
    let end = offset
        .checked_add(size)
        .filter(|&e| e <= src.len())
        .ok_or(ParseError::Malformed { what: "kpack zstd blob past the end of the file", offset })?;
    let count = u64::from(
        le32(&src.read_at(offset, 4)?, 0).ok_or(ParseError::Truncated { what: "kpack zstd blob", offset })?,
    );
    // Each frame takes at least its 4-byte size.
    if count > MAX_KERNELS || count > (size - 4) / 4 {
        return Err(ParseError::Malformed { what: "kpack zstd frame count larger than its blob", offset });
    }
    let mut out = Vec::new();
    let mut pos = offset + 4;
    for _ in 0..count {
        let head = src.read_at(pos, 4)?;
        let n =
            u64::from(le32(&head, 0).ok_or(ParseError::Truncated { what: "kpack zstd frame", offset: pos })?);
        let start = pos + 4;
        if start + n > end {
            return Err(ParseError::Malformed { what: "kpack zstd frame past its blob", offset: pos });
        }
        out.push((start, n));
        pos = start + n;
    }
    Ok(out)
}

/// Reads a `.kpack` archive: header, TOC, and where each kernel's bytes are.
///
/// Every blob or frame must lie in the file; every TOC entry must name its own blob.
///
/// Longer than 80 lines on purpose: it reads the MessagePack TOC in the order
/// `PackedKernelArchive.write` emits it, one bounds check per field, so the whole layout and
/// its checks read top to bottom in one place.
pub fn parse_kpack(src: &dyn ByteSource) -> Result<Kpack> {
    let head = src.read_up_to(0, KPACK_HEADER_LEN as usize)?;
    let (version, toc_offset) = parse_kpack_header(&head)?;
    if toc_offset < KPACK_HEADER_LEN || toc_offset >= src.len() {
        return Err(ParseError::Malformed { what: "kpack TOC offset outside the file", offset: 8 });
    }
    let toc_src = Slice::new(src, toc_offset, src.len() - toc_offset);
    let mut r = Reader::new(&toc_src);
    let mut budget = MAX_NAME_BYTES;
    let mut kpack = Kpack {
        version,
        toc_offset,
        format_version: None,
        group_name: None,
        gfx_arch_family: None,
        gfx_arches: Vec::new(),
        compression: KpackCompression::None,
        kernels: Vec::new(),
    };
    let mut scheme = None;
    let mut entries = Vec::new();
    let mut blobs = None;
    let (mut zstd_offset, mut zstd_size) = (None, None);
    let rebase = |e: ParseError| e.rebased(toc_offset);
    let pairs = r.map_len().map_err(rebase)?;
    for _ in 0..pairs {
        let at = r.position();
        let key = r.str_bytes().map_err(rebase)?;
        let step: Result<()> = (|| {
            match key.as_slice() {
                b"format_version" => kpack.format_version = Some(r.uint()?),
                b"group_name" => kpack.group_name = Some(name(&mut r, &mut budget)?),
                b"gfx_arch_family" => kpack.gfx_arch_family = Some(name(&mut r, &mut budget)?),
                b"gfx_arches" => {
                    let n = bounded(r.array_len()?, MAX_KERNELS, "kpack gfx_arches")?;
                    for _ in 0..n {
                        let a = name(&mut r, &mut budget)?;
                        kpack.gfx_arches.push(a);
                    }
                }
                b"compression_scheme" => {
                    scheme = Some(match r.str_bytes()?.as_slice() {
                        b"none" => KpackCompression::None,
                        b"zstd-per-kernel" => KpackCompression::ZstdPerKernel,
                        _ => {
                            return Err(ParseError::Malformed {
                                what: "unknown kpack compression scheme",
                                offset: at,
                            })
                        }
                    })
                }
                b"toc" => read_toc(&mut r, &mut budget, &mut entries)?,
                b"blobs" => blobs = Some(read_blobs(&mut r)?),
                b"zstd_offset" => zstd_offset = Some(r.uint()?),
                b"zstd_size" => zstd_size = Some(r.uint()?),
                _ => r.skip()?,
            }
            Ok(())
        })();
        step.map_err(rebase)?;
    }
    let Some(scheme) = scheme else {
        return Err(ParseError::Malformed {
            what: "kpack TOC without a compression scheme",
            offset: toc_offset,
        });
    };
    kpack.compression = scheme;
    let stored = match scheme {
        KpackCompression::None => {
            let blobs = blobs.unwrap_or_default();
            for &(o, s) in &blobs {
                if o < KPACK_HEADER_LEN || o.checked_add(s).is_none_or(|e| e > src.len()) {
                    return Err(ParseError::Malformed { what: "kpack blob outside the file", offset: o });
                }
            }
            blobs
        }
        KpackCompression::ZstdPerKernel => match (zstd_offset, zstd_size) {
            (Some(o), Some(s)) if o >= KPACK_HEADER_LEN && s >= 4 => zstd_frames(src, o, s)?,
            _ => {
                return Err(ParseError::Malformed {
                    what: "kpack zstd blob missing or misplaced",
                    offset: toc_offset,
                })
            }
        },
    };
    let mut sorted = stored.clone();
    sorted.sort_unstable();
    let mut covered = 0;
    for &(o, s) in &sorted {
        if s > 0 && o < covered {
            return Err(ParseError::Malformed { what: "kpack blobs overlap", offset: o });
        }
        covered = covered.max(o + s);
    }
    let mut used = vec![false; stored.len()];
    for e in entries {
        let Some(ordinal) = e.ordinal else {
            return Err(ParseError::Malformed {
                what: "kpack TOC entry without an ordinal",
                offset: toc_offset,
            });
        };
        let idx = usize::try_from(ordinal).ok().filter(|&i| i < stored.len());
        let (Some(idx), Some(&(offset, size))) = (idx, idx.and_then(|i| stored.get(i))) else {
            return Err(ParseError::Malformed {
                what: "kpack TOC ordinal past the blobs",
                offset: toc_offset,
            });
        };
        match used.get_mut(idx) {
            Some(u) if !*u => *u = true,
            _ => return Err(ParseError::Malformed { what: "kpack TOC entries share a blob", offset }),
        }
        kpack.kernels.push(KpackKernel {
            binary: e.binary,
            arch: e.arch,
            kind: e.kind,
            ordinal,
            original_size: e.original_size,
            offset,
            size,
        });
    }
    Ok(kpack)
}

/// What a `.rocm_kpack_ref` (`.kpackrf`) section names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KpackRef {
    /// TOC key prefix (`rocrand/lib/librocrand.so.1.1`); the runtime appends `#<co_index>`.
    pub kernel_name: String,
    /// Archive paths relative to the binary, in search order, possibly with `@GFXARCH@`.
    pub search_paths: Vec<String>,
}

impl KpackRef {
    /// The search paths with `@GFXARCH@` replaced by `arch`.
    pub fn paths_for(&self, arch: &str) -> Vec<String> {
        self.search_paths.iter().map(|p| p.replace(GFXARCH_PLACEHOLDER, arch)).collect()
    }
}

/// Parses the MessagePack map at the start of a `.rocm_kpack_ref` section (the section may be
/// padded after it). Both keys are required, as the runtime requires them.
pub fn parse_kpack_ref(src: &dyn ByteSource) -> Result<KpackRef> {
    let mut r = Reader::new(src);
    let mut budget = MAX_NAME_BYTES;
    let (mut kernel_name, mut search_paths) = (None, None);
    let pairs = r.map_len()?;
    for _ in 0..pairs {
        let key = r.str_bytes()?;
        match key.as_slice() {
            b"kernel_name" => kernel_name = Some(name(&mut r, &mut budget)?),
            b"kpack_search_paths" => {
                let n = bounded(r.array_len()?, MAX_SEARCH_PATHS, "kpack search paths")?;
                let mut paths = Vec::new();
                for _ in 0..n {
                    paths.push(name(&mut r, &mut budget)?);
                }
                search_paths = Some(paths);
            }
            _ => r.skip()?,
        }
    }
    match (kernel_name, search_paths) {
        (Some(kernel_name), Some(search_paths)) => Ok(KpackRef { kernel_name, search_paths }),
        _ => Err(ParseError::Malformed {
            what: "kpack reference without kernel_name or search paths",
            offset: 0,
        }),
    }
}

/// Which magic a fat binary wrapper carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WrapperMagic {
    /// `HIPF`: device code is in `.hip_fatbin`.
    Hipf,
    /// `HIPK`: device code was split out into kpack archives.
    Hipk,
    /// Anything else.
    Other(u32),
}

/// One `__CudaFatBinaryWrapper` of a host binary's `.hipFatBinSegment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatbinWrapper {
    /// Its magic.
    pub magic: WrapperMagic,
    /// Its version (1).
    pub version: u32,
    /// The `binary` pointer as stored in the file (0 when a relocation fills it in).
    pub binary: u64,
    /// The reserved pointer: for HIPK, the code object index.
    pub reserved: u64,
}

/// Reads the 24-byte wrappers of a `.hipFatBinSegment` section (64-bit little-endian host).
pub fn parse_fatbin_wrappers(src: &dyn ByteSource) -> Result<Vec<FatbinWrapper>> {
    let len = src.len();
    if !len.is_multiple_of(WRAPPER_LEN) {
        return Err(ParseError::Malformed { what: "fat binary wrapper section size", offset: len });
    }
    bounded(len / WRAPPER_LEN, MAX_WRAPPERS, "fat binary wrappers")?;
    let bytes = src.read_at(0, len as usize)?;
    Ok(bytes
        .chunks_exact(WRAPPER_LEN as usize)
        .map(|w| {
            let magic = match le32(w, 0).unwrap_or(0) {
                HIPF_MAGIC => WrapperMagic::Hipf,
                HIPK_MAGIC => WrapperMagic::Hipk,
                m => WrapperMagic::Other(m),
            };
            FatbinWrapper {
                magic,
                version: le32(w, 4).unwrap_or(0),
                binary: le64(w, 8).unwrap_or(0),
                reserved: le64(w, 16).unwrap_or(0),
            }
        })
        .collect())
}

/// True when any wrapper of a `.hipFatBinSegment` says its device code was split into kpack.
pub fn is_kpack_split(wrappers: &[FatbinWrapper]) -> bool {
    wrappers.iter().any(|w| w.magic == WrapperMagic::Hipk)
}

/// Builds `.kpack` archives and kpack references as `kpack.py` writes them, for tests and
/// fuzz seeds.
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod fixture {
    use serde_json::json;

    use crate::testing::msgpack_of;

    /// A kernel to pack: binary key, architecture, code object bytes.
    pub type Kernel<'a> = (&'a str, &'a str, &'a [u8]);

    /// `PackedKernelArchive.write`: header, padding to 64, blob, TOC; `zstd` picks
    /// `ZstdCompressor` over `NoOpCompressor`.
    pub fn kpack(kernels: &[Kernel], zstd: bool) -> Vec<u8> {
        let mut blob = Vec::new();
        let mut blobs = Vec::new();
        if zstd {
            blob.extend_from_slice(&(kernels.len() as u32).to_le_bytes());
        }
        let mut toc = serde_json::Map::new();
        let mut arches: Vec<String> = Vec::new();
        for (ordinal, (binary, arch, data)) in kernels.iter().enumerate() {
            if zstd {
                let frame = zstd::bulk::compress(data, 3).unwrap_or_default();
                blob.extend_from_slice(&(frame.len() as u32).to_le_bytes());
                blob.extend_from_slice(&frame);
            } else {
                blobs.push(json!({"offset": 64 + blob.len(), "size": data.len()}));
                blob.extend_from_slice(data);
            }
            let per = toc.entry(binary.to_string()).or_insert_with(|| json!({}));
            if let Some(m) = per.as_object_mut() {
                m.insert(
                    arch.to_string(),
                    json!({"type": "hsaco", "ordinal": ordinal, "original_size": data.len()}),
                );
            }
            if !arches.iter().any(|a| a == arch) {
                arches.push(arch.to_string());
            }
        }
        let mut t = json!({
            "format_version": 1,
            "group_name": "blas",
            "gfx_arch_family": "gfx110X",
            "gfx_arches": arches,
            "toc": toc,
            "compression_scheme": if zstd { "zstd-per-kernel" } else { "none" },
        });
        if let Some(m) = t.as_object_mut() {
            if zstd {
                m.insert("zstd_offset".into(), json!(64));
                m.insert("zstd_size".into(), json!(blob.len()));
            } else {
                m.insert("blobs".into(), json!(blobs));
            }
        }
        let mut out = b"KPAK".to_vec();
        out.extend_from_slice(&1u32.to_le_bytes());
        let toc_offset = (64 + blob.len()) as u64;
        out.extend_from_slice(&toc_offset.to_le_bytes());
        out.resize(64, 0);
        out.extend_from_slice(&blob);
        out.extend_from_slice(&msgpack_of(&t));
        out
    }

    /// `add_kpack_ref_section`'s MessagePack.
    pub fn kpack_ref(kernel_name: &str, paths: &[&str]) -> Vec<u8> {
        msgpack_of(&json!({"kpack_search_paths": paths, "kernel_name": kernel_name}))
    }

    /// A `.hipFatBinSegment` of wrappers `(magic, reserved)`, version 1, null pointers.
    pub fn wrappers(list: &[(u32, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (magic, reserved) in list {
            out.extend_from_slice(&magic.to_le_bytes());
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(&0u64.to_le_bytes());
            out.extend_from_slice(&reserved.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::fixture::{kpack, kpack_ref, wrappers};
    use super::*;
    use crate::parse::elf::parse_code_object;
    use crate::testing::{code_object, msgpack_of, CodeObjectSpec};

    fn co(mach: u32) -> Vec<u8> {
        code_object(&CodeObjectSpec::v4(mach, 0, &["k"]))
    }

    #[test]
    fn kpack_py_noop_archive_gives_raw_code_objects_per_arch() {
        // rocm-kpack python/rocm_kpack/kpack.py PackedKernelArchive.write, NoOpCompressor.
        let (a, b) = (co(0x41), co(0x42));
        let bytes = kpack(
            &[("lib/librocblas.so.5#0", "gfx1100", &a), ("lib/librocblas.so.5#0", "gfx1101", &b)],
            false,
        );
        let k = parse_kpack(&bytes).expect("parses");
        assert_eq!(k.compression, KpackCompression::None);
        assert_eq!(k.group_name.as_deref(), Some("blas"));
        assert_eq!(k.gfx_arches, vec!["gfx1100", "gfx1101"]);
        assert_eq!(k.kernel_arches(), vec!["gfx1100", "gfx1101"]);
        for (kernel, mach) in k.kernels.iter().zip([0x41, 0x42]) {
            assert_eq!(kernel.kind.as_deref(), Some("hsaco"));
            let view = Slice::new(&bytes, kernel.offset, kernel.size);
            let parsed = parse_code_object(&view, Some(kernel.size)).expect("code object");
            assert_eq!(parsed.header.e_flags & 0xff, mach);
        }
    }

    #[test]
    fn build_zstd_frame_index_layout_gives_each_kernel_its_frame() {
        // runtime/src/compression.cpp build_zstd_frame_index: u32 count, then u32 size + frame.
        let a = co(0x41);
        let bytes = kpack(&[("bin/hipcc#0", "gfx1100", &a), ("bin/other#0", "gfx1100", &a)], true);
        let k = parse_kpack(&bytes).expect("parses");
        assert_eq!(k.compression, KpackCompression::ZstdPerKernel);
        assert_eq!(k.kernels.len(), 2);
        let f = &k.kernels[1];
        let frame = &bytes[f.offset as usize..][..f.size as usize];
        assert_eq!(zstd::bulk::decompress(frame, a.len()).unwrap(), a);
        assert_eq!(f.original_size, Some(a.len() as u64));
    }

    #[test]
    fn validate_header_refuses_other_versions() {
        let mut bytes = kpack(&[("x#0", "gfx1100", &co(0x41))], false);
        bytes[4] = 2;
        let err = parse_kpack(&bytes).unwrap_err();
        assert!(err.to_string().contains("unsupported kpack version"), "{err}");
    }

    #[test]
    fn lying_offsets_ordinals_and_counts_are_errors() {
        let a = co(0x41);
        // TOC offset past the end.
        let mut bytes = kpack(&[("x#0", "gfx1100", &a)], false);
        let len = bytes.len() as u64;
        bytes[8..16].copy_from_slice(&(len + 5).to_le_bytes());
        assert!(parse_kpack(&bytes).is_err());
        // A zstd frame count far larger than the blob.
        let mut z = kpack(&[("x#0", "gfx1100", &a)], true);
        z[64..68].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_kpack(&z).is_err());
        // A zstd frame running past its blob.
        let mut z = kpack(&[("x#0", "gfx1100", &a)], true);
        z[68..72].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_kpack(&z).is_err());
    }

    fn handmade(toc: serde_json::Value) -> Vec<u8> {
        let mut out = b"KPAK".to_vec();
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&128u64.to_le_bytes());
        out.resize(128, 7);
        out.extend_from_slice(&msgpack_of(&toc));
        out
    }

    #[test]
    fn blobs_outside_the_file_shared_or_overlapping_are_refused() {
        use serde_json::json;
        let entry = |o: u64| json!({"type": "hsaco", "ordinal": o});
        let cases = [
            (json!([{"offset": 64, "size": 1u64 << 40}]), json!({"gfx1100": entry(0)})),
            (json!([{"offset": 64, "size": 32}]), json!({"gfx1100": entry(0), "gfx1101": entry(0)})),
            (json!([{"offset": 64, "size": 32}, {"offset": 70, "size": 8}]), json!({"gfx1100": entry(0)})),
            (json!([{"offset": 64, "size": 32}]), json!({"gfx1100": entry(5)})),
            (json!([{"offset": 64}]), json!({"gfx1100": entry(0)})),
        ];
        for (blobs, arches) in cases {
            let bytes = handmade(json!({
                "compression_scheme": "none", "blobs": blobs, "toc": {"bin/x#0": arches}
            }));
            assert!(parse_kpack(&bytes).is_err(), "{blobs} {arches}");
        }
        let unknown = handmade(json!({"compression_scheme": "lz4", "toc": {}}));
        assert!(parse_kpack(&unknown).unwrap_err().to_string().contains("compression scheme"));
        let fine = handmade(json!({"compression_scheme": "none", "blobs": [], "toc": {}}));
        assert!(parse_kpack(&fine).unwrap().kernels.is_empty());
    }

    #[test]
    fn truncation_at_every_byte_is_an_error_never_a_panic() {
        let a = co(0x41);
        for zstd in [false, true] {
            let bytes = kpack(&[("x#0", "gfx1100", &a), ("x#0", "gfx1101", &a)], zstd);
            for n in 0..bytes.len() {
                assert!(parse_kpack(&&bytes[..n]).is_err(), "zstd {zstd} cut at {n}");
            }
        }
    }

    #[test]
    fn add_kpack_ref_section_marker_names_kernel_and_search_paths() {
        // python/rocm_kpack/elf/kpack_transform.py add_kpack_ref_section.
        let mut b = kpack_ref("rocrand/lib/librocrand.so.1.1", &["../../.kpack/rocrand_lib_@GFXARCH@.kpack"]);
        b.resize(0x800, 0);
        let r = parse_kpack_ref(&b).expect("parses");
        assert_eq!(r.kernel_name, "rocrand/lib/librocrand.so.1.1");
        assert_eq!(r.paths_for("gfx1100"), vec!["../../.kpack/rocrand_lib_gfx1100.kpack"]);
        assert!(parse_kpack_ref(&msgpack_of(&serde_json::json!({"kernel_name": "x"}))).is_err());
        for n in 0..kpack_ref("a", &["b"]).len() {
            assert!(parse_kpack_ref(&&kpack_ref("a", &["b"])[..n]).is_err());
        }
    }

    #[test]
    fn rewrite_hipfatbin_magic_wrappers_are_told_apart() {
        // elf/kpack_transform.py rewrite_hipfatbin_magic: HIPF -> HIPK, reserved = co index.
        let seg = wrappers(&[(HIPK_MAGIC, 0), (HIPK_MAGIC, 1)]);
        assert_eq!(&seg[..4], b"HIPK");
        let w = parse_fatbin_wrappers(&seg).expect("parses");
        assert!(is_kpack_split(&w));
        assert_eq!(w[1].reserved, 1);
        let plain = parse_fatbin_wrappers(&wrappers(&[(HIPF_MAGIC, 0)])).unwrap();
        assert_eq!(&wrappers(&[(HIPF_MAGIC, 0)])[..4], b"FPIH");
        assert!(!is_kpack_split(&plain));
        assert!(parse_fatbin_wrappers(&&seg[..30]).is_err());
    }
}
