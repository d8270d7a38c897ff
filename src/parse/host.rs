//! Host ELF libraries: where their device code lives.
//!
//! Four places (clang `CGCUDANV.cpp`, `OffloadBundler.cpp`): the `.hip_fatbin` section, holding
//! one bundle per translation unit (walked by [`super::bundle::parse_bundles`]); sections of a
//! "fat object" named `__CLANG_OFFLOAD_BUNDLE__<entry ID>`, each one code object (Intel SYCL uses
//! the same prefix with `sycl-` IDs, which are not AMD device code); raw code objects embedded as
//! data, as libhsa-runtime64 and mojolearn do in `.rodata`; and whole offload bundles kept as
//! data by frameworks that hand them to `hipModuleLoadData`. Only the section table is read to
//! find the sections; in allocated, non-executable data sections embedded objects are found by
//! their ELF magic and each is checked (strict header, `e_machine` 224) and bounded by its own
//! tables, and bundles by their magics, each bounded by its own header (a magic that starts no
//! valid bundle is a string, as in comgr and the HIP runtime). The same hunt reads a PE image's
//! data sections ([`hunt_data`]).
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use memchr::memmem;
use object::elf::{FileHeader32, FileHeader64, SHF_ALLOC, SHF_EXECINSTR, SHT_PROGBITS};
use object::pod;
use object::read::elf::{FileHeader, SectionHeader};
use object::Endianness;

use super::bundle::{
    parse_bundle_table, parse_bundle_to, parse_bundles_to, parse_ccob_header, parse_entry_id, Bundle,
    Bundles, BUNDLE_MAGIC, CCOB_MAGIC,
};
use super::elf::{is_amdgpu_elf, parse_code_object, parse_header, CodeObject};
use super::kpack::{parse_fatbin_wrappers, parse_kpack_ref, KpackRef, WrapperMagic};
use super::offload::{parse_offload_binaries_with, OffloadBinaries};
use super::{ByteSource, Depth, ParseError, Result, Slice};
use crate::decode::Inflater;

/// Most section headers read from one host ELF.
pub const MAX_SECTIONS: u64 = 1 << 20;
/// Largest section-name table read.
pub const MAX_SHSTRTAB: u64 = 16 << 20;
/// Bytes scanned per read when hunting embedded code objects.
const SCAN_CHUNK: usize = 4 << 20;
/// The most data-section bytes one file's hunt for embedded code objects reads. Real data
/// sections are tens of MB (rocRAND's `.rodata` 26 MB); a sparse or lying file claiming a
/// terabyte of `.rodata` must not cost a terabyte of reads.
pub const MAX_EMBED_SCAN: u64 = 1 << 30;

/// One section of a host ELF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Section name.
    pub name: String,
    /// `sh_type`.
    pub sh_type: u32,
    /// `sh_flags`.
    pub flags: u64,
    /// File offset of the contents.
    pub offset: u64,
    /// Size of the contents.
    pub size: u64,
}

/// A code object found in a host ELF outside any bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedded {
    /// File offset where it starts.
    pub offset: u64,
    /// The entry ID, for a fat-object bundle section.
    pub bundle_entry_id: Option<String>,
    /// What it parsed to.
    pub code_object: std::result::Result<CodeObject, ParseError>,
}

/// The offload bundles one data section holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataBundles {
    /// The section's name.
    pub section: String,
    /// Its file offset.
    pub offset: u64,
    /// Its bundles, their offsets relative to the section.
    pub bundles: Bundles,
}

/// Device code found in one host ELF.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// The `.hip_fatbin` section's file offset and its bundles, if it has one.
    pub fatbin: Option<(u64, Bundles)>,
    /// Code objects in bundle sections and raw embedded ones, in file order.
    pub embedded: Vec<Embedded>,
    /// Offload bundles kept as data (`.rodata`, `.data`, ...), per section.
    pub data_bundles: Vec<DataBundles>,
    /// Data sections that could not be searched for embedded code objects, and why.
    pub unsearched: Vec<(String, ParseError)>,
    /// `.llvm.offloading` sections (the new offload driver): file offset and the
    /// OffloadBinaries in them.
    pub offloading: Vec<(u64, OffloadBinaries)>,
    /// A kpack-split binary (TheRock): its `.rocm_kpack_ref` (`.kpackrf` in PE images) and the
    /// code-object indexes of its `HIPK` wrappers.
    pub kpack: Option<Result<(KpackRef, Vec<u64>)>>,
}

/// Section names the new offload driver gives device code (clang `OffloadBundler` /
/// `clang-linker-wrapper`; `.llvm.offloading` is `SHT_LLVM_OFFLOADING` in ELF).
pub const OFFLOADING_SECTION: &str = ".llvm.offloading";
/// `SHT_LLVM_OFFLOADING` (LLVM `BinaryFormat/ELF.h`).
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c03;
/// Where a kpack-split binary keeps its archive reference (rocm-kpack
/// `elf/kpack_transform.py` `add_kpack_ref_section`) and its fat binary wrappers.
pub const KPACK_REF_SECTION: &str = ".rocm_kpack_ref";
pub const FATBIN_WRAPPER_SECTION: &str = ".hipFatBinSegment";

/// The kpack reference and the `HIPK` wrappers' code-object indexes of a split binary, read
/// from its reference section and its wrapper section (when it has one).
pub fn kpack_marks(
    src: &dyn ByteSource,
    reference: (u64, u64),
    wrappers: Option<(u64, u64)>,
) -> Result<(KpackRef, Vec<u64>)> {
    let r = parse_kpack_ref(&Slice::new(src, reference.0, reference.1))?;
    let mut indexes = Vec::new();
    if let Some((off, size)) = wrappers {
        for w in parse_fatbin_wrappers(&Slice::new(src, off, size))? {
            if w.magic == WrapperMagic::Hipk {
                indexes.push(w.reserved);
            }
        }
    }
    if indexes.is_empty() {
        // A reference without HIPK wrappers names the binary's one code object, index 0.
        indexes.push(0);
    }
    Ok((r, indexes))
}

fn sections_of<H: FileHeader<Endian = Endianness>>(
    src: &dyn ByteSource,
    head: &[u8],
) -> Result<Vec<Section>> {
    let bad = |what| ParseError::Malformed { what, offset: 0 };
    let h: &H =
        pod::from_bytes(head).map_err(|()| ParseError::Truncated { what: "ELF header", offset: 0 })?.0;
    let endian = h.endian().map_err(|_| bad("ELF byte order"))?;
    let shoff: u64 = h.e_shoff(endian).into();
    let entsize = std::mem::size_of::<H::SectionHeader>() as u64;
    if shoff == 0 {
        return Ok(Vec::new());
    }
    if u64::from(h.e_shentsize(endian)) != entsize {
        return Err(bad("ELF section header size"));
    }
    let first = src.read_at(shoff, entsize as usize)?;
    let (first, _) = pod::from_bytes::<H::SectionHeader>(&first)
        .map_err(|()| ParseError::Truncated { what: "section headers", offset: shoff })?;
    // Extended numbering: e_shnum 0 puts the count in section 0's sh_size.
    let count: u64 = match h.e_shnum(endian) {
        0 => first.sh_size(endian).into(),
        n => u64::from(n),
    };
    if count > MAX_SECTIONS || count.saturating_mul(entsize) > src.len() {
        return Err(bad("section count larger than the file"));
    }
    let table = src.read_at(shoff, (count * entsize) as usize)?;
    let (shdrs, _) = pod::slice_from_bytes::<H::SectionHeader>(&table, count as usize)
        .map_err(|()| ParseError::Truncated { what: "section headers", offset: shoff })?;
    let strndx = match u32::from(h.e_shstrndx(endian).0) {
        0xffff => first.sh_link(endian),
        n => n,
    };
    let names = match shdrs.get(strndx as usize) {
        Some(s) => {
            let (off, size): (u64, u64) = (s.sh_offset(endian).into(), s.sh_size(endian).into());
            if size > MAX_SHSTRTAB {
                return Err(ParseError::TooLarge {
                    what: "section name table",
                    claimed: size,
                    limit: MAX_SHSTRTAB,
                });
            }
            src.read_at(off, size as usize)?.into_owned()
        }
        None => Vec::new(),
    };
    Ok(shdrs
        .iter()
        .map(|s| {
            let name = names.get(s.sh_name(endian) as usize..).unwrap_or(&[]);
            let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
            Section {
                name: String::from_utf8_lossy(name).into_owned(),
                sh_type: s.sh_type(endian).0,
                flags: s.sh_flags(endian).0,
                offset: s.sh_offset(endian).into(),
                size: s.sh_size(endian).into(),
            }
        })
        .collect())
}

/// Reads the section table of a host ELF (32- or 64-bit, either byte order).
pub fn parse_sections(src: &dyn ByteSource) -> Result<Vec<Section>> {
    let head = src.read_up_to(0, 64)?;
    match head.get(4) {
        Some(2) => sections_of::<FileHeader64<Endianness>>(src, &head),
        Some(1) => sections_of::<FileHeader32<Endianness>>(src, &head),
        _ => Err(ParseError::Malformed { what: "unknown ELF class", offset: 4 }),
    }
}

/// Prefix of fat-object sections that each hold one bundle entry.
pub const BUNDLE_SECTION_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

/// Allocated data sections whose bytes the toolchain writes from its own records, never from a
/// program's data: unwind tables (binutils `ld/elf-eh-frame.c`, GCC `except.cc`
/// `output_function_exception_table`, SFrame), the linker's GOT and interpreter path, and the
/// fat binary wrappers clang emits (`CGCUDANV.cpp`, 24-byte records pointing at `.hip_fatbin`).
/// A code object a program embeds as data lies in `.rodata`, `.data` or the like, so these are
/// not searched: in rocSPARSE they are 9 of its 12 MB of data sections.
const TOOLCHAIN_SECTIONS: &[&str] = &[
    ".eh_frame",
    ".eh_frame_hdr",
    ".gcc_except_table",
    ".sframe",
    ".got",
    ".got.plt",
    ".interp",
    FATBIN_WRAPPER_SECTION,
    ".nvFatBinSegment",
    ".tm_clone_table",
];

/// True for sections that may hold raw embedded code objects.
fn may_embed(s: &Section) -> bool {
    s.sh_type == SHT_PROGBITS.0
        && s.flags & SHF_ALLOC.0 != 0
        && s.flags & SHF_EXECINSTR.0 == 0
        && s.size >= 64
        && s.name != ".hip_fatbin"
        && s.name != ".nv_fatbin"
        && !TOOLCHAIN_SECTIONS.contains(&s.name.as_str())
        && s.sh_type != SHT_LLVM_OFFLOADING
        && !s.name.starts_with(OFFLOADING_SECTION)
        && !s.name.starts_with(BUNDLE_SECTION_PREFIX)
}

/// What a hunt through a data section finds by magic: raw code objects, and whole offload
/// bundles (a framework that loads its kernels with `hipModuleLoadData` keeps them as data).
#[derive(Debug, Default)]
struct DataFinds {
    objects: Vec<Embedded>,
    /// Bundles, their offsets relative to the section.
    bundles: Vec<Bundle>,
}

/// What a magic found in data may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Magic {
    Elf,
    Bundle,
    Ccob,
}

/// The magics a hunt looks for, each with what it may start.
const MAGICS: [(&[u8], Magic); 3] =
    [(b"\x7fELF", Magic::Elf), (BUNDLE_MAGIC, Magic::Bundle), (CCOB_MAGIC, Magic::Ccob)];

/// Every magic of `chunk`, in order.
fn magics_in(chunk: &[u8], finders: &[(memmem::Finder<'_>, Magic)]) -> Vec<(usize, Magic)> {
    let mut hits: Vec<(usize, Magic)> =
        finders.iter().flat_map(|(f, m)| f.find_iter(chunk).map(move |at| (at, *m))).collect();
    hits.sort_unstable();
    hits
}

/// The offload bundle that starts at `at` of `src` and ends by `end`, if the bytes there are
/// one and not data that happens to hold its magic (the magic is a string constant in comgr,
/// the HIP runtime and LLVM): a plain bundle's entry table must lie inside the section and
/// name AMDGPU code; a CCOB header must be one clang writes (version, method, sizes inside the
/// section) with a zstd or zlib stream after it. A bundle read this way is a bundle in every
/// respect, its errors included.
fn bundle_at(
    src: &dyn ByteSource,
    at: u64,
    end: u64,
    (depth, inf): (Depth<'_>, &Inflater<'_>),
    budget: &mut u64,
) -> Result<Option<Bundle>> {
    let view = Slice::new(src, at, end - at);
    let Ok(head) = src.read_up_to(at, 32) else { return Ok(None) };
    if head.starts_with(BUNDLE_MAGIC) {
        let Ok((table, _)) = parse_bundle_table(&view) else { return Ok(None) };
        if !table.iter().any(|e| parse_entry_id(&e.id).is_amdgcn()) {
            return Ok(None);
        }
    } else {
        let Ok(h) = parse_ccob_header(&head) else { return Ok(None) };
        if h.total_size.is_some_and(|t| t > view.len()) || !compressed_stream_at(&view, h.header_len) {
            return Ok(None);
        }
        // What compressed bundles kept as data may inflate comes out of the same budget as the
        // bytes searched: a section of crafted headers costs at most that, then is reported.
        *budget = budget.checked_sub(h.uncompressed_size).ok_or(ParseError::TooLarge {
            what: "compressed offload bundles kept as data, inflated",
            claimed: h.uncompressed_size,
            limit: MAX_EMBED_SCAN,
        })?;
    }
    Ok(parse_bundle_to(&view, depth, inf).ok())
}

/// True when a zstd frame or a zlib stream starts at `at` of `src` (RFC 8878 magic; RFC 1950:
/// deflate, a 32 KiB window at most, header check bits).
fn compressed_stream_at(src: &dyn ByteSource, at: u64) -> bool {
    match src.read_up_to(at, 4).ok().as_deref() {
        Some([0x28, 0xb5, 0x2f, 0xfd, ..]) => true,
        Some([cmf, flg, ..]) => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

/// Finds AMDGPU code objects and offload bundles stored as plain data inside
/// `[start, start + len)` of `src`.
fn find_in_data(
    src: &dyn ByteSource,
    (start, len): (u64, u64),
    budget: &mut u64,
    (depth, inf): (Depth<'_>, &Inflater<'_>),
    out: &mut DataFinds,
) -> Result<()> {
    let end = start.saturating_add(len).min(src.len());
    if end.saturating_sub(start) > *budget {
        return Err(ParseError::TooLarge {
            what: "data sections to search for embedded code objects",
            claimed: end - start,
            limit: MAX_EMBED_SCAN,
        });
    }
    *budget -= end.saturating_sub(start);
    let finders: Vec<(memmem::Finder<'_>, Magic)> =
        MAGICS.iter().map(|(m, kind)| (memmem::Finder::new(m), *kind)).collect();
    let mut pos = start;
    // Where the next hit may start: past what was taken, and past every hit examined (chunks
    // overlap by the longest magic less one byte, so a shorter magic there is met twice).
    let mut resume = start;
    while pos + 32 <= end {
        let n = (end - pos).min(SCAN_CHUNK as u64) as usize;
        let chunk = src.read_at(pos, n)?;
        // Every hit of this chunk is examined from the chunk itself; only a real header costs
        // more reads. (Re-reading a chunk per false hit made data full of "\x7fELF" quadratic.)
        // A magic straddling the chunk's end is found in the next chunk.
        let mut next = if n < SCAN_CHUNK { end } else { pos + n as u64 - (BUNDLE_MAGIC.len() as u64 - 1) };
        for (hit, magic) in magics_in(&chunk, &finders) {
            let at = pos + hit as u64;
            if at < resume {
                continue;
            }
            resume = at + 1;
            let taken = match magic {
                Magic::Elf => embedded_at(src, &chunk, (hit, at), end).map(|e| {
                    let size = e.code_object.as_ref().map_or(0, |co| co.size.max(64));
                    out.objects.push(e);
                    size
                }),
                Magic::Bundle | Magic::Ccob => bundle_at(src, at, end, (depth, inf), budget)?.map(|mut b| {
                    let size = b.stored_size;
                    b.offset = at - start;
                    out.bundles.push(b);
                    size
                }),
            };
            // A bundle or object whose end is known is not searched again: its code objects are
            // its own, never also loose ones.
            if let Some(size) = taken.filter(|&s| s > 0) {
                resume = at.saturating_add(size);
                next = next.max(resume);
            }
        }
        pos = next;
    }
    Ok(())
}

/// The raw AMDGPU code object at `at` (`hit` in `chunk`), if its header is one.
fn embedded_at(src: &dyn ByteSource, chunk: &[u8], (hit, at): (usize, u64), end: u64) -> Option<Embedded> {
    if at + 64 > end {
        return None;
    }
    let head = match chunk.get(hit..hit + 64) {
        Some(h) => std::borrow::Cow::Borrowed(h),
        None => src.read_up_to(at, 64).ok()?,
    };
    if !is_amdgpu_elf(&head) || parse_header(&head, true).is_err() {
        return None;
    }
    let code_object = parse_code_object(&Slice::new(src, at, end - at), None);
    Some(Embedded { offset: at, bundle_entry_id: None, code_object })
}

/// Searches data sections (name, file offset, size) of a host binary for raw code objects and
/// offload bundles, into `facts`; one budget for them all. A section over the budget is
/// reported, and what else the file holds is still read.
pub fn hunt_data(
    src: &dyn ByteSource,
    sections: &[(&str, u64, u64)],
    reading: (Depth<'_>, &Inflater<'_>),
    facts: &mut HostFacts,
) {
    let mut budget = MAX_EMBED_SCAN;
    for &(name, offset, size) in sections {
        let mut found = DataFinds::default();
        if let Err(e) = find_in_data(src, (offset, size), &mut budget, reading, &mut found) {
            facts.unsearched.push((name.to_string(), e));
        }
        facts.embedded.append(&mut found.objects);
        if !found.bundles.is_empty() {
            let bundles = Bundles { bundles: found.bundles, stopped: None };
            facts.data_bundles.push(DataBundles { section: name.to_string(), offset, bundles });
        }
    }
    facts.embedded.sort_by_key(|e| e.offset);
}

/// Finds all device code in a host ELF: `.hip_fatbin` bundles, bundle sections, embedded objects.
pub fn parse_host_elf(src: &dyn ByteSource) -> Result<HostFacts> {
    parse_host_elf_to(src, Depth::Facts, &crate::decode::Decoding::default().inflater())
}

/// [`parse_host_elf`], the code objects of its bundles read to `depth`.
pub fn parse_host_elf_to(src: &dyn ByteSource, depth: Depth<'_>, inf: &Inflater<'_>) -> Result<HostFacts> {
    let sections = parse_sections(src)?;
    let mut facts = HostFacts::default();
    let mut data = Vec::new();
    for s in &sections {
        if s.sh_type == object::elf::SHT_NOBITS.0 {
            continue;
        }
        if s.offset.checked_add(s.size).is_none_or(|e| e > src.len()) {
            if s.name == ".hip_fatbin" || s.name.starts_with(BUNDLE_SECTION_PREFIX) {
                return Err(ParseError::Truncated { what: "device code section", offset: s.offset });
            }
            continue;
        }
        if s.name == ".hip_fatbin" {
            let region = Slice::new(src, s.offset, s.size);
            facts.fatbin = Some((s.offset, parse_bundles_to(&region, depth, inf)));
        } else if s.sh_type == SHT_LLVM_OFFLOADING || s.name.starts_with(OFFLOADING_SECTION) {
            facts
                .offloading
                .push((s.offset, parse_offload_binaries_with(&Slice::new(src, s.offset, s.size), inf)));
        } else if let Some(id) = s.name.strip_prefix(BUNDLE_SECTION_PREFIX) {
            if parse_entry_id(id).is_amdgcn() && s.size > 0 {
                let view = Slice::new(src, s.offset, s.size);
                let code_object = parse_code_object(&view, Some(s.size));
                facts.embedded.push(Embedded {
                    offset: s.offset,
                    bundle_entry_id: Some(id.to_string()),
                    code_object,
                });
            }
        } else if may_embed(s) {
            data.push((s.name.as_str(), s.offset, s.size));
        }
    }
    hunt_data(src, &data, (depth, inf), &mut facts);
    let range = |name: &str| {
        sections
            .iter()
            .find(|s| s.name == name && s.sh_type != object::elf::SHT_NOBITS.0)
            .filter(|s| s.offset.checked_add(s.size).is_some_and(|e| e <= src.len()))
            .map(|s| (s.offset, s.size))
    };
    if let Some(reference) = range(KPACK_REF_SECTION) {
        facts.kpack = Some(kpack_marks(src, reference, range(FATBIN_WRAPPER_SECTION)));
    }
    Ok(facts)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::parse::bundle::BundleFormat;
    use crate::testing::{bundle, code_object, fatbin, host_elf, CodeObjectSpec, HostSection};
    use crate::vocab::codec::Codec;

    #[test]
    fn finds_fatbin_bundles_and_embedded_objects() {
        let a = code_object(&CodeObjectSpec::v4(0x4c, 0, &["k1", "k2"]));
        let b = code_object(&CodeObjectSpec::v4(0x41, 0, &["k"]));
        let fat = fatbin(&[bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx942", &a)], 4096)]);
        let mut rodata = b"some text mentioning __CLANG_OFFLOAD_BUNDLE__ and \x7fELF".to_vec();
        rodata.extend_from_slice(&b);
        rodata.extend_from_slice(&[7u8; 100]);
        rodata.extend_from_slice(&a);
        let host = host_elf(&[HostSection::rodata(".rodata", &rodata), HostSection::hip_fatbin(&fat)]);
        let facts = parse_host_elf(&host).expect("parses");
        let (_, bundles) = facts.fatbin.expect("has .hip_fatbin");
        assert_eq!(bundles.bundles.len(), 1);
        let machs: Vec<u32> = facts
            .embedded
            .iter()
            .map(|e| e.code_object.as_ref().expect("valid").header.e_flags & 0xff)
            .collect();
        assert_eq!(machs, vec![0x41, 0x4c]);
    }

    /// A `.rodata` as a framework that loads its kernels with `hipModuleLoadData` fills it:
    /// the magics as string constants (comgr and the HIP runtime hold them so), a plain bundle,
    /// a raw code object, a CCOB v3 bundle; each bundle's code objects are its own.
    fn framework_rodata() -> (Vec<u8>, Vec<usize>) {
        let gfx942 = code_object(&CodeObjectSpec::v4(0x4c, 0, &["k"]));
        let gfx1100 = code_object(&CodeObjectSpec::v4(0x41, 0, &["k"]));
        let plain = bundle(
            &[
                ("host-x86_64-unknown-linux-gnu-", &[]),
                ("hipv4-amdgcn-amd-amdhsa--gfx942", &gfx942),
                ("hipv4-amdgcn-amd-amdhsa--gfx1100", &gfx1100),
            ],
            8,
        );
        let compressed = crate::testing::ccob(3, Codec::Zstd, &plain);
        let mut rodata =
            b"offload bundle magic __CLANG_OFFLOAD_BUNDLE__\0CCOB\0 in a string table\0".to_vec();
        let mut at = Vec::new();
        for part in [&plain, &gfx942, &compressed] {
            rodata.resize(rodata.len().div_ceil(8) * 8, 0);
            at.push(rodata.len());
            rodata.extend_from_slice(part);
        }
        (rodata, at)
    }

    #[test]
    fn bundles_kept_as_data_are_read_as_bundles_and_their_objects_are_not_loose() {
        let (rodata, at) = framework_rodata();
        let host = host_elf(&[HostSection::rodata(".rodata", &rodata)]);
        let facts = parse_host_elf(&host).expect("parses");
        let [data] = facts.data_bundles.as_slice() else { panic!("one section: {:?}", facts.data_bundles) };
        assert_eq!(data.section, ".rodata");
        let found: Vec<(u64, BundleFormat, usize)> =
            data.bundles.bundles.iter().map(|b| (b.offset, b.format, b.entries.len())).collect();
        assert_eq!(
            found,
            vec![(at[0] as u64, BundleFormat::Plain, 2), (at[2] as u64, BundleFormat::Ccob(3), 2)]
        );
        assert!(data.bundles.bundles.iter().all(|b| b.error.is_none()), "{:?}", data.bundles);
        // The one raw object, not the two inside the plain bundle.
        let loose: Vec<u64> = facts.embedded.iter().map(|e| e.offset - data.offset).collect();
        assert_eq!(loose, vec![at[1] as u64]);
        assert!(facts.unsearched.is_empty());
    }

    /// Review finding: chunks overlap by the longest magic less one byte, and a shorter magic in
    /// the overlap was met twice (a broken object listed twice). Each is met once, and a bundle
    /// whose magic straddles a chunk's end is found.
    #[test]
    fn magics_at_chunk_edges_are_met_once() {
        let co = code_object(&CodeObjectSpec::v4(0x41, 0, &["k"]));
        let mut rodata = vec![0u8; 2 * SCAN_CHUNK + 4096];
        let broken_at = SCAN_CHUNK - 8;
        rodata[broken_at..broken_at + 64].copy_from_slice(&co[..64]);
        let b = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1100", &co)], 8);
        let bundle_at = 2 * SCAN_CHUNK - 20;
        rodata[bundle_at..bundle_at + b.len()].copy_from_slice(&b);
        let host = host_elf(&[HostSection::rodata(".rodata", &rodata)]);
        let facts = parse_host_elf(&host).expect("parses");
        let base = facts.data_bundles.first().map_or(0, |d| d.offset);
        let loose: Vec<u64> = facts.embedded.iter().map(|e| e.offset - base).collect();
        assert_eq!(loose, vec![broken_at as u64], "{:?}", facts.embedded);
        let found: Vec<u64> =
            facts.data_bundles.iter().flat_map(|d| d.bundles.bundles.iter().map(|b| b.offset)).collect();
        assert_eq!(found, vec![bundle_at as u64]);
    }

    #[test]
    fn a_bundle_magic_that_starts_no_bundle_is_data() {
        // libamd_comgr, libamdhip64, libhiprtc and libLLVM hold both magics in `.rodata` as
        // strings (found in Debian's ROCm 6.4 and 7.1 trees): not bundles, not problems.
        let mut rodata = b"__CLANG_OFFLOAD_BUNDLE__ is the magic; CCOB too".to_vec();
        rodata.extend_from_slice(b"__CLANG_OFFLOAD_BUNDLE__\x01\0\0\0\0\0\0\0");
        rodata.extend_from_slice(&[0u8; 8]);
        rodata.extend_from_slice(&1000u64.to_le_bytes()); // an entry past the section
        rodata.extend_from_slice(&[0u8; 64]);
        rodata.extend_from_slice(b"CCOB\x03\0\x01\0"); // a v3 zstd header with no frame after it
        rodata.extend_from_slice(&[0x40u8, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0]);
        rodata.extend_from_slice(&[0u8; 80]);
        let host = host_elf(&[HostSection::rodata(".rodata", &rodata)]);
        let facts = parse_host_elf(&host).expect("parses");
        assert!(facts.data_bundles.is_empty() && facts.embedded.is_empty(), "{facts:?}");
        assert!(facts.unsearched.is_empty());
    }

    #[test]
    fn a_data_bundle_whose_entry_is_broken_says_so() {
        let mut broken = code_object(&CodeObjectSpec::v4(0x41, 0, &["k"]));
        broken.truncate(70);
        let b = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1100", &broken)], 8);
        let host = host_elf(&[HostSection::rodata(".data.rel.ro", &b)]);
        let facts = parse_host_elf(&host).expect("parses");
        let entry = &facts.data_bundles[0].bundles.bundles[0].entries[0];
        let defect = match &entry.code_object {
            Some(Ok(co)) => co.defect.is_some(),
            other => matches!(other, Some(Err(_))),
        };
        assert!(defect, "{entry:?}");
    }

    #[test]
    fn data_full_of_elf_magics_is_searched_in_linear_time() {
        // Review finding: each false "\x7fELF" re-read a 4 MiB chunk: a 4 MiB section of
        // magics took 76 s. Each hit is now judged from the chunk already read.
        let data = b"\x7fELF".repeat(1 << 20);
        let host = host_elf(&[HostSection::rodata(".rodata", &data)]);
        let start = std::time::Instant::now();
        let facts = parse_host_elf(&host).expect("parses");
        assert!(facts.embedded.is_empty());
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
    }

    /// A source that remembers every range read from it.
    struct Logged<'a>(&'a [u8], std::cell::RefCell<Vec<(u64, usize)>>);

    impl ByteSource for Logged<'_> {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }

        fn read_at(&self, offset: u64, len: usize) -> Result<std::borrow::Cow<'_, [u8]>> {
            self.1.borrow_mut().push((offset, len));
            self.0.read_at(offset, len)
        }
    }

    #[test]
    fn unwind_tables_and_the_got_are_not_searched_for_embedded_code() {
        let co = code_object(&CodeObjectSpec::v4(0x41, 0, &["k"]));
        let sections: Vec<HostSection> = TOOLCHAIN_SECTIONS
            .iter()
            .map(|name| HostSection::rodata(name, &co))
            .chain([HostSection::rodata(".data", &co)])
            .collect();
        let host = host_elf(&sections);
        let logged = Logged(&host, Default::default());
        let facts = parse_host_elf(&logged).expect("parses");
        assert_eq!(facts.embedded.len(), 1, "only .data's code object: {:?}", facts.embedded);
        // One section's bytes searched (and its object's tables read again), not eleven.
        let total: usize = logged.1.borrow().iter().map(|r| r.1).sum();
        assert!(total < 3 * co.len(), "read {total} bytes for a {}-byte object", co.len());
    }

    #[test]
    fn sycl_bundle_sections_are_not_amd_code() {
        let host = host_elf(&[HostSection::rodata(
            "__CLANG_OFFLOAD_BUNDLE__sycl-spir64-unknown-unknown",
            b"\x03\x02\x23\x07 spirv",
        )]);
        let facts = parse_host_elf(&host).expect("parses");
        assert!(facts.embedded.is_empty() && facts.fatbin.is_none());
    }
}
