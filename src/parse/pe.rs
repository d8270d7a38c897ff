//! Windows PE images and COFF objects: the file range of a named section, so the bundle,
//! OffloadBinary and kpack parsers can run on the device code a DLL carries.
//!
//! Clang names the sections the same on every OS (llvm/llvm-project
//! `clang/lib/CodeGen/CGCUDANV.cpp` `makeModuleCtorFunction`: `FatbinConstantName =
//! ".hip_fatbin"`, `FatbinSectionName = ".hipFatBinSegment"`). A COFF object keeps such a
//! long name in its string table (`/NNN`, or `//` and base 64); a linked image keeps only 8
//! bytes, so a DLL has `.hip_fat` and `.hipFatB`, and a kpack-split DLL `.kpackrf`
//! (ROCm/rocm-kpack `python/rocm_kpack/coff/kpack_transform.py` `SECTION_HIP_FATBIN`,
//! `SECTION_HIP_FATBIN_SEGMENT`, `SECTION_KPACK_REF`). ROCm/clr `hipamd/src/hip_code_object.cpp`
//! reads no section at all: it is handed the wrapper's pointer at run time, so the names above
//! are the whole contract. The new offload driver's `.llvm.offloading*` sections are found by
//! name prefix in COFF (llvm `lib/Object/OffloadBinary.cpp` `extractFromObject`).
//!
//! Layout (Microsoft PE format; object `read/pe` and `read/coff`): `MZ`, `e_lfanew` at 0x3C,
//! `PE\0\0`, the 20-byte `IMAGE_FILE_HEADER`, `SizeOfOptionalHeader` bytes, then
//! `NumberOfSections` 40-byte `IMAGE_SECTION_HEADER`s. A bare COFF object starts at the file
//! header. Why not `object::read::pe::PeFile`: it wants the whole file as one `ReadRef` (a
//! `ReadCache` keeps every byte it ever read), parses data directories and symbols this reader
//! does not need, and DLLs run to 1 GB; this module reads the headers and section table only
//! (and the string table only when a name points into it), but uses the `object` crate's
//! on-disk types and its name and file-range rules (`ImageSectionHeader::name`,
//! `pe_file_range`, `coff_file_range`), so nothing of the format itself is hand-written.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use object::pe::{ImageFileHeader, ImageSectionHeader};
use object::pod;
use object::read::StringTable;
use object::LittleEndian as LE;

use super::{le16, le32, ByteSource, ParseError, Result};

/// Names of the fat binary section: in an object, then in a linked image.
pub const HIP_FATBIN_SECTIONS: [&str; 2] = [".hip_fatbin", ".hip_fat"];
/// Names of the fat binary wrapper section: in an object, then in a linked image.
pub const HIP_FATBIN_SEGMENT_SECTIONS: [&str; 2] = [".hipFatBinSegment", ".hipFatB"];
/// Names of the kpack reference section: the ELF name, then rocm-kpack's PE name.
pub const KPACK_REF_SECTIONS: [&str; 2] = [".rocm_kpack_ref", ".kpackrf"];
/// Prefix of sections holding OffloadBinaries in COFF.
pub const LLVM_OFFLOADING_PREFIX: &str = ".llvm.offloading";
/// Largest string table read to resolve long section names.
pub const MAX_STRTAB: u64 = 16 << 20;

/// Section characteristics (PE format, "Section Flags").
const IMAGE_SCN_CNT_CODE: u32 = 0x20;
const IMAGE_SCN_CNT_INITIALIZED_DATA: u32 = 0x40;
const IMAGE_SCN_MEM_EXECUTE: u32 = 0x2000_0000;
const DOS_MAGIC: &[u8; 2] = b"MZ";
const PE_MAGIC: &[u8; 4] = b"PE\0\0";
const FILE_HEADER_LEN: u64 = 20;
const SECTION_HEADER_LEN: u64 = 40;
const SYMBOL_LEN: u64 = 18;
/// Machines a bare COFF object is recognised by: i386, ARMNT, AMD64, ARM64.
const OBJECT_MACHINES: [u16; 4] = [0x014c, 0x01c4, 0x8664, 0xaa64];

/// Whether the file is a linked image or an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeKind {
    /// An `MZ` image: `.exe`, `.dll`.
    Image,
    /// A bare COFF object: `.obj`, or a member of a `.lib`.
    Object,
}

/// One section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeSection {
    /// Full name (a long name resolved through the string table).
    pub name: String,
    /// `VirtualSize` (0 in objects).
    pub virtual_size: u32,
    /// `VirtualAddress` (RVA in images).
    pub virtual_address: u32,
    /// File offset of the contents.
    pub offset: u64,
    /// Bytes of contents in the file: `min(VirtualSize, SizeOfRawData)` in images (the rest is
    /// alignment padding, or zero-filled memory when the virtual size is larger), the raw size
    /// in objects, 0 for uninitialised data.
    pub size: u64,
    /// `SizeOfRawData`.
    pub raw_size: u32,
    /// `Characteristics`.
    pub characteristics: u32,
}

/// What the headers of a PE image or COFF object say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeFile {
    /// Image or object.
    pub kind: PeKind,
    /// `Machine` (0x8664 for x86-64).
    pub machine: u16,
    /// Sections in table order.
    pub sections: Vec<PeSection>,
}

impl PeFile {
    /// The first section called `name`.
    pub fn section(&self, name: &str) -> Option<&PeSection> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The first section with any of `names`, tried in order.
    pub fn section_any(&self, names: &[&str]) -> Option<&PeSection> {
        names.iter().find_map(|n| self.section(n))
    }

    /// The HIP fat binary section (`.hip_fatbin` or `.hip_fat`), whose range the bundle walker
    /// reads.
    pub fn hip_fatbin(&self) -> Option<&PeSection> {
        self.section_any(&HIP_FATBIN_SECTIONS)
    }

    /// Sections of initialised, non-executable data that a program's own bytes fill, where
    /// raw code objects and offload bundles kept as data lie (as in an ELF's `.rodata`): not
    /// the sections the toolchain writes from its own records (the fat binary and its
    /// wrappers, OffloadBinaries, the kpack reference, unwind data, relocations, imports and
    /// exports).
    pub fn data_sections(&self) -> impl Iterator<Item = &PeSection> {
        const TOOLCHAIN: [&str; 7] = [".pdata", ".xdata", ".reloc", ".idata", ".edata", ".tls", ".CRT"];
        self.sections.iter().filter(|s| {
            s.characteristics & IMAGE_SCN_CNT_INITIALIZED_DATA != 0
                && s.characteristics & (IMAGE_SCN_CNT_CODE | IMAGE_SCN_MEM_EXECUTE) == 0
                && s.size >= 64
                && ![HIP_FATBIN_SECTIONS, HIP_FATBIN_SEGMENT_SECTIONS, KPACK_REF_SECTIONS]
                    .iter()
                    .any(|names| names.contains(&s.name.as_str()))
                && !s.name.starts_with(LLVM_OFFLOADING_PREFIX)
                && !TOOLCHAIN.contains(&s.name.as_str())
        })
    }

    /// Sections holding OffloadBinaries (`.llvm.offloading*`).
    pub fn offloading(&self) -> impl Iterator<Item = &PeSection> {
        self.sections.iter().filter(|s| s.name.starts_with(LLVM_OFFLOADING_PREFIX))
    }
}

/// True when `head` looks like a PE image (`MZ`) or a bare COFF object of a known machine.
pub fn is_pe_or_coff(head: &[u8]) -> bool {
    head.starts_with(DOS_MAGIC) || le16(head, 0).is_some_and(|m| OBJECT_MACHINES.contains(&m))
}

/// Reads the section table of a PE image or COFF object.
pub fn parse_pe(src: &dyn ByteSource) -> Result<PeFile> {
    let head = src.read_up_to(0, 64)?;
    let (kind, fh_at) = if head.starts_with(DOS_MAGIC) {
        let lfanew = le32(&head, 0x3c).ok_or(ParseError::Truncated { what: "DOS header", offset: 0x3c })?;
        let sig = src.read_at(u64::from(lfanew), 4)?;
        if sig.as_ref() != PE_MAGIC {
            return Err(ParseError::Malformed { what: "PE signature", offset: u64::from(lfanew) });
        }
        (PeKind::Image, u64::from(lfanew) + 4)
    } else if is_pe_or_coff(&head) {
        (PeKind::Object, 0)
    } else {
        return Err(ParseError::Malformed { what: "neither a PE image nor a COFF object", offset: 0 });
    };
    let fh_bytes = src.read_at(fh_at, FILE_HEADER_LEN as usize)?;
    let (fh, _) = pod::from_bytes::<ImageFileHeader>(&fh_bytes)
        .map_err(|()| ParseError::Truncated { what: "COFF file header", offset: fh_at })?;
    let count = u64::from(fh.number_of_sections.get(LE));
    let table_at = fh_at + FILE_HEADER_LEN + u64::from(fh.size_of_optional_header.get(LE));
    let table_len = count * SECTION_HEADER_LEN;
    if table_at.checked_add(table_len).is_none_or(|e| e > src.len()) {
        return Err(ParseError::Truncated { what: "section table", offset: table_at });
    }
    let table = src.read_at(table_at, table_len as usize)?;
    let (headers, _) = pod::slice_from_bytes::<ImageSectionHeader>(&table, count as usize)
        .map_err(|()| ParseError::Truncated { what: "section table", offset: table_at })?;

    // The string table follows the symbol table; it is read only if some name points into it.
    let needs_strings = headers.iter().any(|h| h.name.first() == Some(&b'/'));
    let strtab = if needs_strings { read_strtab(src, fh)? } else { Vec::new() };
    let strings = StringTable::new(strtab.as_slice(), 0, strtab.len() as u64);

    let mut sections = Vec::with_capacity(headers.len());
    for (i, h) in headers.iter().enumerate() {
        let at = table_at + i as u64 * SECTION_HEADER_LEN;
        let name =
            h.name(strings).map_err(|_| ParseError::Malformed { what: "section name offset", offset: at })?;
        let (offset, size) = match kind {
            PeKind::Image => h.pe_file_range(),
            PeKind::Object => h.coff_file_range().unwrap_or((0, 0)),
        };
        sections.push(PeSection {
            name: String::from_utf8_lossy(name).into_owned(),
            virtual_size: h.virtual_size.get(LE),
            virtual_address: h.virtual_address.get(LE),
            offset: u64::from(offset),
            size: u64::from(size),
            raw_size: h.size_of_raw_data.get(LE),
            characteristics: h.characteristics.get(LE).0,
        });
    }
    Ok(PeFile { kind, machine: fh.machine.get(LE).0, sections })
}

/// Reads the COFF string table (its `u32` length counts itself).
fn read_strtab(src: &dyn ByteSource, fh: &ImageFileHeader) -> Result<Vec<u8>> {
    let symbols = u64::from(fh.pointer_to_symbol_table.get(LE));
    if symbols == 0 {
        return Err(ParseError::Malformed { what: "long section name without a string table", offset: 0 });
    }
    let at = symbols + u64::from(fh.number_of_symbols.get(LE)) * SYMBOL_LEN;
    let len = u64::from(
        le32(&src.read_at(at, 4)?, 0)
            .ok_or(ParseError::Truncated { what: "COFF string table", offset: at })?,
    );
    if len > MAX_STRTAB {
        return Err(ParseError::TooLarge { what: "COFF string table", claimed: len, limit: MAX_STRTAB });
    }
    if len < 4 {
        return Err(ParseError::Malformed { what: "COFF string table length", offset: at });
    }
    Ok(src.read_at(at, len as usize)?.into_owned())
}

/// The file range `(offset, size)` of the HIP fat binary section of a PE image or COFF object,
/// checked against the file, or `None` when there is none.
pub fn hip_fatbin_range(src: &dyn ByteSource) -> Result<Option<(u64, u64)>> {
    let pe = parse_pe(src)?;
    let Some(s) = pe.hip_fatbin() else { return Ok(None) };
    if s.offset.checked_add(s.size).is_none_or(|e| e > src.len()) {
        return Err(ParseError::Truncated { what: "fat binary section", offset: s.offset });
    }
    Ok(Some((s.offset, s.size)))
}

/// Builds minimal PE images for tests and fuzz seeds.
#[cfg(any(test, feature = "fixtures"))]
#[doc(hidden)]
pub mod fixture {
    /// A PE32+ x86-64 image with `sections` (8-byte names, contents), file alignment 0x200,
    /// an all-zero optional header of 240 bytes.
    pub fn pe_image(sections: &[(&str, &[u8])]) -> Vec<u8> {
        let align = |v: usize| v.div_ceil(0x200) * 0x200;
        let mut out = b"MZ".to_vec();
        out.resize(0x3c, 0);
        out.extend_from_slice(&0x40u32.to_le_bytes());
        out.extend_from_slice(b"PE\0\0");
        out.extend_from_slice(&0x8664u16.to_le_bytes());
        out.extend_from_slice(&(sections.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0u8; 12]);
        out.extend_from_slice(&240u16.to_le_bytes());
        out.extend_from_slice(&0x2022u16.to_le_bytes());
        let mut opt = 0x20bu16.to_le_bytes().to_vec();
        opt.resize(240, 0);
        out.extend_from_slice(&opt);
        let mut data_at = align(out.len() + 40 * sections.len());
        let mut rva = 0x1000u32;
        let mut bodies = Vec::new();
        for (name, body) in sections {
            let mut n: Vec<u8> = name.bytes().take(8).collect();
            n.resize(8, 0);
            out.extend_from_slice(&n);
            let raw = align(body.len());
            for v in [body.len() as u32, rva, raw as u32, data_at as u32, 0, 0] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&[0u8; 4]);
            out.extend_from_slice(&0x4000_0040u32.to_le_bytes());
            bodies.push((data_at, *body));
            data_at += raw;
            rva += (raw as u32).div_ceil(0x1000) * 0x1000;
        }
        for (at, body) in bodies {
            out.resize(at, 0);
            out.extend_from_slice(body);
        }
        out.resize(align(out.len()), 0);
        out
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::fixture::pe_image;
    use super::*;
    use crate::parse::bundle::parse_bundles;
    use crate::parse::Slice;
    use crate::testing::{bundle, code_object, fatbin, CodeObjectSpec};

    fn fat() -> Vec<u8> {
        let co = code_object(&CodeObjectSpec::v4(0x41, 0, &["k"]));
        fatbin(&[bundle(
            &[("host-x86_64-pc-windows-msvc", &[]), ("hipv4-amdgcn-amd-amdhsa--gfx1100", &co)],
            4096,
        )])
    }

    #[test]
    fn dll_hip_fat_section_range_feeds_the_bundle_walker() {
        // kpack coff/kpack_transform.py SECTION_HIP_FATBIN = ".hip_fat" in linked images.
        let fat = fat();
        let wrapper = crate::parse::kpack::fixture::wrappers(&[(crate::parse::kpack::HIPF_MAGIC, 0)]);
        let dll = pe_image(&[(".text", &[0xc3; 16]), (".hipFatB", &wrapper), (".hip_fat", &fat)]);
        let pe = parse_pe(&dll).expect("parses");
        assert_eq!((pe.kind, pe.machine), (PeKind::Image, 0x8664));
        let (off, size) = hip_fatbin_range(&dll).unwrap().expect("has .hip_fat");
        assert_eq!(size, fat.len() as u64);
        let got = parse_bundles(&Slice::new(&dll, off, size));
        assert!(got.stopped.is_none(), "{:?}", got.stopped);
        assert_eq!(got.bundles[0].entries.len(), 1);
        assert_eq!(pe.section_any(&HIP_FATBIN_SEGMENT_SECTIONS).unwrap().size, 24);
    }

    #[test]
    fn coff_object_long_name_hip_fatbin_resolves_through_the_string_table() {
        // CGCUDANV.cpp makeModuleCtorFunction names it ".hip_fatbin" (11 bytes): "/4" in COFF.
        use object::write::{Object, StandardSection};
        use object::{Architecture, BinaryFormat, Endianness, SectionKind};
        let fat = fat();
        let mut obj = Object::new(BinaryFormat::Coff, Architecture::X86_64, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        obj.append_section_data(text, &[0xc3], 1);
        let s = obj.add_section(Vec::new(), b".hip_fatbin".to_vec(), SectionKind::ReadOnlyData);
        obj.append_section_data(s, &fat, 4096);
        let o = obj.add_section(Vec::new(), b".llvm.offloading".to_vec(), SectionKind::ReadOnlyData);
        obj.append_section_data(o, &[1, 2, 3], 8);
        let bytes = obj.write().unwrap();
        let pe = parse_pe(&bytes).expect("parses");
        assert_eq!(pe.kind, PeKind::Object);
        let s = pe.hip_fatbin().expect(".hip_fatbin");
        assert_eq!(s.name, ".hip_fatbin");
        assert_eq!(&bytes[s.offset as usize..][..s.size as usize], fat.as_slice());
        assert_eq!(pe.offloading().count(), 1);
    }

    #[test]
    fn truncation_and_lying_headers_are_errors_never_panics() {
        let dll = pe_image(&[(".hip_fat", &fat())]);
        for n in 0..0x300.min(dll.len()) {
            let _ = parse_pe(&&dll[..n]);
        }
        // Truncated inside the section table: an error.
        assert!(parse_pe(&&dll[..0x40 + 24 + 240 + 20]).is_err());
        // e_lfanew past the end.
        let mut bad = dll.clone();
        bad[0x3c..0x40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_pe(&bad).is_err());
        // 65535 sections claimed.
        let mut many = dll.clone();
        many[0x46..0x48].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(parse_pe(&many).is_err());
        // A section range past the end of the file.
        let mut far = dll.clone();
        let sh = 0x40 + 24 + 240;
        far[sh + 20..sh + 24].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
        assert!(hip_fatbin_range(&far).is_err());
        // A long name whose string table is missing.
        let mut long = dll.clone();
        long[sh..sh + 8].copy_from_slice(b"/4\0\0\0\0\0\0");
        assert!(parse_pe(&long).is_err());
        // A string table claiming 4 GB.
        let mut huge = long.clone();
        huge[0x40 + 12..0x40 + 16].copy_from_slice(&0x200u32.to_le_bytes());
        huge[0x200..0x204].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_pe(&huge).is_err());
    }

    #[test]
    fn kpack_split_dll_has_its_marker_under_the_8_byte_name() {
        let marker = crate::parse::kpack::fixture::kpack_ref("bin/x.dll", &[".kpack/x_@GFXARCH@.kpack"]);
        let dll = pe_image(&[(".kpackrf", &marker)]);
        let pe = parse_pe(&dll).unwrap();
        let s = pe.section_any(&KPACK_REF_SECTIONS).expect("marker");
        let r = crate::parse::kpack::parse_kpack_ref(&Slice::new(&dll, s.offset, s.size)).unwrap();
        assert_eq!(r.kernel_name, "bin/x.dll");
    }
}
