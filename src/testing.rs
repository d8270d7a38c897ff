//! Fixture builders shared by unit and integration tests: real AMDGPU code objects, offload
//! bundles, compressed bundles and host ELFs built in code, so `cargo test` needs no LLVM.
//!
//! Each builder writes the bytes the format's source defines (LLVM AMDGPUUsage "ELF Code
//! Object", clang `OffloadBundler.cpp`, Tensile's MessagePack indexes), so a test shows its
//! input next to its assertion. Not part of the stable API.
#![doc(hidden)]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

pub use crate::vocab::codec::Codec;
use std::io::Write;

use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Sym, Writer};
use object::Endianness;

/// What to put in a generated AMDGPU code object.
#[derive(Debug, Clone)]
pub struct CodeObjectSpec {
    /// `EI_ABIVERSION`: 0..=4 for code object V2..V6.
    pub abi_version: u8,
    /// Whole `e_flags` (machine | feature bits | generic version << 24).
    pub e_flags: u32,
    /// Kernel names; each gets a `.kd` symbol and a metadata entry.
    pub kernels: Vec<String>,
    /// Emit the metadata note (MessagePack for V3+, YAML for V2).
    pub metadata: bool,
    /// `amdhsa.target` string for the metadata (V4+).
    pub target: Option<String>,
    /// V2 `NT_AMD_HSA_ISA_VERSION`.
    pub v2_isa: Option<(u32, u32, u32)>,
    /// `e_type`: `ET_DYN` (linked) or `ET_REL`.
    pub e_type: elf::FileType,
    /// Extra bytes of `.text`, to give the object some body.
    pub text_len: usize,
    /// How many PT_NOTE program headers name the note section (real objects: one).
    pub note_phdrs: u32,
}

impl CodeObjectSpec {
    /// A code object of version `abi_version + 2` with `e_flags` and kernels.
    pub fn new(abi_version: u8, e_flags: u32, kernels: &[&str]) -> Self {
        CodeObjectSpec {
            abi_version,
            e_flags,
            kernels: kernels.iter().map(|s| s.to_string()).collect(),
            metadata: true,
            target: None,
            v2_isa: None,
            e_type: elf::ET_DYN,
            text_len: 256,
            note_phdrs: 1,
        }
    }

    /// A V4 code object for `mach` with V4 feature bits (e.g. 0x300 = xnack on).
    pub fn v4(mach: u32, features: u32, kernels: &[&str]) -> Self {
        Self::new(2, mach | features, kernels)
    }

    /// A V2 code object whose processor is only in its ISA note.
    pub fn v2(isa: (u32, u32, u32), kernels: &[&str]) -> Self {
        let mut s = Self::new(0, 0, kernels);
        s.v2_isa = Some(isa);
        s
    }

    /// A relocatable object (`ET_REL`), as a fat object's bundle sections hold.
    pub fn relocatable(mut self) -> Self {
        self.e_type = elf::ET_REL;
        self
    }

    /// Sets the `amdhsa.target` metadata string.
    pub fn with_target(mut self, target: &str) -> Self {
        self.target = Some(target.to_string());
        self
    }
}

fn note(name: &[u8], n_type: u32, desc: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let namesz = name.len() as u32 + 1;
    out.extend_from_slice(&namesz.to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&n_type.to_le_bytes());
    out.extend_from_slice(name);
    out.push(0);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out.extend_from_slice(desc);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out
}

fn msgpack_metadata(spec: &CodeObjectSpec) -> Vec<u8> {
    use rmp::encode::*;
    let mut b = Vec::new();
    let with_target = spec.target.is_some();
    write_map_len(&mut b, if with_target { 3 } else { 2 }).unwrap();
    write_str(&mut b, "amdhsa.kernels").unwrap();
    write_array_len(&mut b, spec.kernels.len() as u32).unwrap();
    for k in &spec.kernels {
        write_map_len(&mut b, 3).unwrap();
        write_str(&mut b, ".name").unwrap();
        write_str(&mut b, k).unwrap();
        write_str(&mut b, ".symbol").unwrap();
        write_str(&mut b, &format!("{k}.kd")).unwrap();
        write_str(&mut b, ".args").unwrap();
        write_array_len(&mut b, 1).unwrap();
        write_map_len(&mut b, 1).unwrap();
        write_str(&mut b, ".size").unwrap();
        write_uint(&mut b, 8).unwrap();
    }
    if let Some(t) = &spec.target {
        write_str(&mut b, "amdhsa.target").unwrap();
        write_str(&mut b, t).unwrap();
    }
    write_str(&mut b, "amdhsa.version").unwrap();
    write_array_len(&mut b, 2).unwrap();
    write_uint(&mut b, 1).unwrap();
    write_uint(&mut b, u64::from(spec.abi_version.saturating_sub(1))).unwrap();
    b
}

fn notes_for(spec: &CodeObjectSpec) -> Vec<u8> {
    let mut notes = Vec::new();
    if let Some((ma, mi, st)) = spec.v2_isa {
        let mut d = Vec::new();
        d.extend_from_slice(&4u16.to_le_bytes());
        d.extend_from_slice(&7u16.to_le_bytes());
        for v in [ma, mi, st] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.extend_from_slice(b"AMD\0AMDGPU\0");
        notes.extend(note(b"AMD", 3, &d));
    }
    if spec.metadata {
        if spec.abi_version == 0 {
            let mut y = String::from("---\nVersion: [ 1, 0 ]\nKernels:\n");
            for k in &spec.kernels {
                y.push_str(&format!("  - Name: {k}\n    SymbolName: '{k}@kd'\n    Args:\n      - Name: p\n"));
            }
            y.push_str("...\n");
            notes.extend(note(b"AMD", 10, y.as_bytes()));
        } else {
            notes.extend(note(b"AMDGPU", 32, &msgpack_metadata(spec)));
        }
    }
    notes
}

/// Builds an AMDGPU code object: header, one PT_NOTE segment, `.note`, `.text`, `.rodata`
/// with one 64-byte kernel descriptor per kernel, `.symtab`, `.strtab`, `.shstrtab`.
///
/// Longer than most functions on purpose: it writes one ELF file top to bottom, and each
/// offset it writes depends on the sizes before it; split, the layout would no longer be
/// readable in one place (a test fixture, not shipped code).
pub fn code_object(spec: &CodeObjectSpec) -> Vec<u8> {
    let mut buf = Vec::new();
    let names: Vec<Vec<u8>> = spec
        .kernels
        .iter()
        .map(|k| if spec.abi_version == 0 { k.clone().into_bytes() } else { format!("{k}.kd").into_bytes() })
        .collect();
    let notes = notes_for(spec);
    let text = vec![0xBFu8; spec.text_len];
    let rodata = vec![0u8; 64 * spec.kernels.len().max(1)];
    let mut w = Writer::new(Endianness::Little, true, &mut buf);
    w.reserve_file_header();
    let linked = spec.e_type == elf::ET_DYN;
    if linked {
        w.reserve_program_headers(spec.note_phdrs);
    }
    w.reserve_null_section_index();
    let note_name = w.add_section_name(b".note");
    let note_idx = w.reserve_section_index();
    let note_off = w.reserve(notes.len() as u64, 4);
    let text_name = w.add_section_name(b".text");
    let _text_idx = w.reserve_section_index();
    let text_off = w.reserve(text.len() as u64, 256);
    let ro_name = w.add_section_name(b".rodata");
    let ro_idx = w.reserve_section_index();
    let ro_off = w.reserve(rodata.len() as u64, 64);
    w.reserve_null_symbol_index();
    let sym_names: Vec<_> = names.iter().map(|n| w.add_string(n)).collect();
    for _ in &names {
        w.reserve_symbol_index(Some(ro_idx));
    }
    w.reserve_symtab_section_index();
    w.reserve_symtab();
    w.reserve_strtab_section_index();
    w.reserve_strtab().expect("a string table of a few names");
    w.reserve_shstrtab_section_index();
    w.reserve_shstrtab().expect("a section name table of a few names");
    w.reserve_section_headers();

    w.write_file_header(&FileHeader {
        os_abi: elf::OsAbi(64),
        abi_version: spec.abi_version,
        e_type: spec.e_type,
        e_machine: elf::EM_AMDGPU,
        e_entry: 0,
        e_flags: elf::FileFlags(spec.e_flags),
    })
    .unwrap();
    if linked {
        w.write_align_program_headers();
    }
    for _ in 0..if linked { spec.note_phdrs } else { 0 } {
        w.write_program_header(&ProgramHeader {
            p_type: elf::PT_NOTE,
            p_flags: elf::PF_R,
            p_offset: note_off,
            p_vaddr: note_off,
            p_paddr: note_off,
            p_filesz: notes.len() as u64,
            p_memsz: notes.len() as u64,
            p_align: 4,
        });
    }
    w.write_align(4);
    w.write(&notes);
    w.write_align(256);
    w.write(&text);
    w.write_align(64);
    w.write(&rodata);
    w.write_null_symbol();
    let st_type = if spec.abi_version == 0 { elf::SymbolType(10) } else { elf::STT_OBJECT };
    for (i, id) in sym_names.iter().enumerate() {
        w.write_symbol(&Sym {
            st_name: w.string_offset(Some(*id)),
            section: Some(ro_idx.0),
            st_info: elf::SymbolInfo::new(elf::STB_GLOBAL, st_type),
            st_other: elf::SymbolOther(0),
            st_shndx: elf::SymbolSection(0),
            st_value: (i * 64) as u64,
            st_size: 64,
        });
    }
    w.write_strtab();
    w.write_shstrtab();
    w.write_null_section_header();
    let sh = |name: u32, sh_type, flags, off: u64, size: usize, align| SectionHeader {
        sh_name: name,
        sh_type,
        sh_flags: flags,
        sh_addr: off,
        sh_offset: off,
        sh_size: size as u64,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: align,
        sh_entsize: 0,
    };
    let (note_name, text_name, ro_name) = (
        w.section_name_offset(Some(note_name)),
        w.section_name_offset(Some(text_name)),
        w.section_name_offset(Some(ro_name)),
    );
    w.write_section_header(&sh(note_name, elf::SHT_NOTE, elf::SHF_ALLOC, note_off, notes.len(), 4));
    let exec = elf::SHF_ALLOC | elf::SHF_EXECINSTR;
    w.write_section_header(&sh(text_name, elf::SHT_PROGBITS, exec, text_off, text.len(), 256));
    w.write_section_header(&sh(ro_name, elf::SHT_PROGBITS, elf::SHF_ALLOC, ro_off, rodata.len(), 64));
    w.write_symtab_section_header(1);
    w.write_strtab_section_header();
    w.write_shstrtab_section_header();
    let _ = note_idx;
    buf
}

/// An uncompressed offload bundle (`__CLANG_OFFLOAD_BUNDLE__`) with entries aligned to `align`.
pub fn bundle(entries: &[(&str, &[u8])], align: usize) -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(b"__CLANG_OFFLOAD_BUNDLE__");
    header.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    let table_len: usize = entries.iter().map(|(id, _)| 24 + id.len()).sum();
    let mut pos = header.len() + table_len;
    let mut offsets = Vec::new();
    for (_, data) in entries {
        if !data.is_empty() {
            pos = pos.div_ceil(align) * align;
        }
        offsets.push(pos);
        pos += data.len();
    }
    for ((id, data), off) in entries.iter().zip(&offsets) {
        header.extend_from_slice(&(*off as u64).to_le_bytes());
        header.extend_from_slice(&(data.len() as u64).to_le_bytes());
        header.extend_from_slice(&(id.len() as u64).to_le_bytes());
        header.extend_from_slice(id.as_bytes());
    }
    let mut out = header;
    for ((_, data), off) in entries.iter().zip(&offsets) {
        out.resize(*off, 0);
        out.extend_from_slice(data);
    }
    out
}

/// A compressed offload bundle (`CCOB`) of `version` 1, 2 or 3 around `payload`.
pub fn ccob(version: u16, method: Codec, payload: &[u8]) -> Vec<u8> {
    let data = match method {
        Codec::Zstd => zstd::bulk::compress(payload, 3).unwrap(),
        _ => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(payload).unwrap();
            e.finish().unwrap()
        }
    };
    let hash = 0x1122_3344_5566_7788u64;
    let mut out = Vec::new();
    out.extend_from_slice(b"CCOB");
    out.extend_from_slice(&version.to_le_bytes());
    // `llvm::compression::Format`: 0 zlib, 1 zstd.
    let method_id: u16 = if method == Codec::Zstd { 1 } else { 0 };
    out.extend_from_slice(&method_id.to_le_bytes());
    match version {
        1 => {
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&hash.to_le_bytes());
        }
        2 => {
            out.extend_from_slice(&((24 + data.len()) as u32).to_le_bytes());
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&hash.to_le_bytes());
        }
        _ => {
            out.extend_from_slice(&((32 + data.len()) as u64).to_le_bytes());
            out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
            out.extend_from_slice(&hash.to_le_bytes());
        }
    }
    out.extend_from_slice(&data);
    out
}

/// Concatenates bundles the way the linker fills `.hip_fatbin`: each 4096-aligned, zero-padded.
pub fn fatbin(bundles: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for b in bundles {
        out.resize(out.len().div_ceil(4096) * 4096, 0);
        out.extend_from_slice(b);
    }
    out
}

/// One section of a generated host ELF.
pub struct HostSection<'a> {
    pub name: &'a str,
    pub data: &'a [u8],
    pub flags: elf::SectionFlags,
    pub align: usize,
}

impl<'a> HostSection<'a> {
    /// An allocated read-only data section.
    pub fn rodata(name: &'a str, data: &'a [u8]) -> Self {
        HostSection { name, data, flags: elf::SHF_ALLOC, align: 16 }
    }

    /// `.hip_fatbin` as the HIP toolchain emits it (`.p2align 12`).
    pub fn hip_fatbin(data: &'a [u8]) -> Self {
        HostSection { name: ".hip_fatbin", data, flags: elf::SHF_ALLOC, align: 4096 }
    }
}

/// What [`dynamic_elf`] writes: an ELF program or shared library as the loader sees it.
#[derive(Debug, Clone)]
pub struct DynamicSpec {
    pub class64: bool,
    pub machine: u16,
    /// `e_type`: 3 (shared object) by default.
    pub e_type: u16,
    pub needed: Vec<String>,
    pub rpath: Option<String>,
    pub runpath: Option<String>,
    pub soname: Option<String>,
    pub nodeflib: bool,
    pub interp: Option<String>,
}

impl Default for DynamicSpec {
    fn default() -> Self {
        DynamicSpec {
            class64: true,
            machine: 62,
            e_type: 3,
            needed: Vec::new(),
            rpath: None,
            runpath: None,
            soname: None,
            nodeflib: false,
            interp: None,
        }
    }
}

/// A little-endian ELF object holding only what `ld.so` reads: one `PT_LOAD` over the whole
/// file (addresses equal offsets), `PT_DYNAMIC` with its string table, and `PT_INTERP` when
/// the spec names an interpreter (System V gABI "Dynamic Section").
pub fn dynamic_elf(spec: &DynamicSpec) -> Vec<u8> {
    let (word, ehsize, phsize) = if spec.class64 { (8usize, 64usize, 56usize) } else { (4, 52, 32) };
    let mut strtab = vec![0u8];
    let mut string = |s: &str| {
        let at = strtab.len() as u64;
        strtab.extend_from_slice(s.as_bytes());
        strtab.push(0);
        at
    };
    let mut dyns: Vec<(u64, u64)> =
        spec.needed.iter().map(|n| (elf::DT_NEEDED.0 as u64, string(n))).collect();
    for (tag, v) in
        [(elf::DT_RPATH, &spec.rpath), (elf::DT_RUNPATH, &spec.runpath), (elf::DT_SONAME, &spec.soname)]
    {
        if let Some(v) = v {
            dyns.push((tag.0 as u64, string(v)));
        }
    }
    if spec.nodeflib {
        dyns.push((elf::DT_FLAGS_1.0 as u64, elf::DF_1_NODEFLIB.0));
    }
    let phnum = if spec.interp.is_some() { 3 } else { 2 };
    let strtab_at = (ehsize + phnum * phsize) as u64;
    let dyn_at = (strtab_at + strtab.len() as u64).next_multiple_of(8);
    dyns.push((elf::DT_STRTAB.0 as u64, strtab_at));
    dyns.push((elf::DT_STRSZ.0 as u64, strtab.len() as u64));
    dyns.push((elf::DT_NULL.0 as u64, 0));
    let dyn_len = (dyns.len() * 2 * word) as u64;
    let interp_at = dyn_at + dyn_len;
    let interp = spec.interp.as_ref().map(|i| [i.as_bytes(), &[0]].concat()).unwrap_or_default();
    let total = interp_at + interp.len() as u64;
    let mut out = Vec::new();
    let w = |out: &mut Vec<u8>, v: u64| match word {
        8 => out.extend_from_slice(&v.to_le_bytes()),
        _ => out.extend_from_slice(&(v as u32).to_le_bytes()),
    };
    // ELF header.
    out.extend_from_slice(b"\x7fELF");
    out.extend_from_slice(&[if spec.class64 { 2 } else { 1 }, 1, 1, 0]);
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&spec.e_type.to_le_bytes());
    out.extend_from_slice(&spec.machine.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    w(&mut out, 0); // e_entry
    w(&mut out, ehsize as u64); // e_phoff
    w(&mut out, 0); // e_shoff
    out.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    for v in [ehsize, phsize, phnum, 64, 0, 0] {
        out.extend_from_slice(&(v as u16).to_le_bytes());
    }
    // Program headers: type, then the fields in each class's order.
    let phdr = |out: &mut Vec<u8>, p_type: u32, off: u64, size: u64, flags: u32| {
        out.extend_from_slice(&p_type.to_le_bytes());
        if spec.class64 {
            out.extend_from_slice(&flags.to_le_bytes());
            for v in [off, off, off, size, size, 8] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        } else {
            for v in [off, off, off, size, size] {
                out.extend_from_slice(&(v as u32).to_le_bytes());
            }
            out.extend_from_slice(&flags.to_le_bytes());
            out.extend_from_slice(&8u32.to_le_bytes());
        }
    };
    phdr(&mut out, elf::PT_LOAD.0, 0, total, 4);
    phdr(&mut out, elf::PT_DYNAMIC.0, dyn_at, dyn_len, 6);
    if spec.interp.is_some() {
        phdr(&mut out, elf::PT_INTERP.0, interp_at, interp.len() as u64, 4);
    }
    out.extend_from_slice(&strtab);
    out.resize(dyn_at as usize, 0);
    for (tag, v) in dyns {
        w(&mut out, tag);
        w(&mut out, v);
    }
    out.extend_from_slice(&interp);
    out
}

/// A host (x86-64) shared object holding the given sections, for the scanner's host paths.
pub fn host_elf(sections: &[HostSection]) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = Writer::new(Endianness::Little, true, &mut buf);
    w.reserve_file_header();
    w.reserve_null_section_index();
    let mut placed = Vec::new();
    for s in sections {
        let name = w.add_section_name(s.name.as_bytes());
        w.reserve_section_index();
        let off = w.reserve(s.data.len() as u64, s.align as u64);
        placed.push((name, off));
    }
    w.reserve_shstrtab_section_index();
    w.reserve_shstrtab().expect("a section name table of a few names");
    w.reserve_section_headers();
    w.write_file_header(&FileHeader {
        os_abi: elf::OsAbi(0),
        abi_version: 0,
        e_type: elf::ET_DYN,
        e_machine: elf::EM_X86_64,
        e_entry: 0,
        e_flags: elf::FileFlags(0),
    })
    .unwrap();
    for s in sections {
        w.write_align(s.align as u64);
        w.write(s.data);
    }
    w.write_shstrtab();
    w.write_null_section_header();
    for (s, (name, off)) in sections.iter().zip(&placed) {
        let sh_name = w.section_name_offset(Some(*name));
        w.write_section_header(&SectionHeader {
            sh_name,
            sh_type: elf::SHT_PROGBITS,
            sh_flags: s.flags,
            sh_addr: *off,
            sh_offset: *off,
            sh_size: s.data.len() as u64,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: s.align as u64,
            sh_entsize: 0,
        });
    }
    w.write_shstrtab_section_header();
    buf
}

/// A Tensile master library (`.dat`, MessagePack) with `solutions` dummy solutions and one
/// `Hardware` row per processor, the first as an `And` with a CU count as real files have.
pub fn tensile_index(processors: &[&str], solutions: usize) -> Vec<u8> {
    use rmp::encode::*;
    let mut b = Vec::new();
    write_map_len(&mut b, 2).unwrap();
    write_str(&mut b, "solutions").unwrap();
    write_array_len(&mut b, solutions as u32).unwrap();
    for i in 0..solutions {
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "name").unwrap();
        write_str(&mut b, &format!("Cijk_Ailk_Bjlk_S_MT{i}")).unwrap();
        write_str(&mut b, "index").unwrap();
        write_uint(&mut b, i as u64).unwrap();
    }
    write_str(&mut b, "library").unwrap();
    write_map_len(&mut b, 2).unwrap();
    write_str(&mut b, "type").unwrap();
    write_str(&mut b, "Hardware").unwrap();
    write_str(&mut b, "rows").unwrap();
    write_array_len(&mut b, processors.len() as u32).unwrap();
    for (i, p) in processors.iter().enumerate() {
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "predicate").unwrap();
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "AMDGPU").unwrap();
        write_str(&mut b, "value").unwrap();
        let processor = |b: &mut Vec<u8>| {
            write_map_len(b, 2).unwrap();
            write_str(b, "type").unwrap();
            write_str(b, "Processor").unwrap();
            write_str(b, "value").unwrap();
            write_str(b, p).unwrap();
        };
        if i == 0 {
            write_map_len(&mut b, 2).unwrap();
            write_str(&mut b, "type").unwrap();
            write_str(&mut b, "And").unwrap();
            write_str(&mut b, "value").unwrap();
            write_array_len(&mut b, 2).unwrap();
            processor(&mut b);
            write_map_len(&mut b, 2).unwrap();
            write_str(&mut b, "type").unwrap();
            write_str(&mut b, "CUCount").unwrap();
            write_str(&mut b, "value").unwrap();
            write_uint(&mut b, 104).unwrap();
        } else {
            processor(&mut b);
        }
        write_str(&mut b, "library").unwrap();
        write_map_len(&mut b, 1).unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "ProblemMap").unwrap();
    }
    b
}

/// A JSON value as MessagePack (maps keep their keys' order; integers as unsigned or signed).
pub fn msgpack_of(v: &serde_json::Value) -> Vec<u8> {
    fn put(b: &mut Vec<u8>, v: &serde_json::Value) {
        use rmp::encode::*;
        match v {
            serde_json::Value::Null => write_nil(b).unwrap(),
            serde_json::Value::Bool(x) => write_bool(b, *x).unwrap(),
            serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => drop(write_uint(b, u).unwrap()),
                (None, Some(i)) => drop(write_sint(b, i).unwrap()),
                _ => write_f64(b, n.as_f64().unwrap_or(0.0)).unwrap(),
            },
            serde_json::Value::String(x) => write_str(b, x).unwrap(),
            serde_json::Value::Array(items) => {
                write_array_len(b, items.len() as u32).unwrap();
                items.iter().for_each(|x| put(b, x));
            }
            serde_json::Value::Object(m) => {
                write_map_len(b, m.len() as u32).unwrap();
                for (k, x) in m {
                    write_str(b, k).unwrap();
                    put(b, x);
                }
            }
        }
    }
    let mut b = Vec::new();
    put(&mut b, v);
    b
}

/// A Tensile master library whose hardware rows have these predicates (Tensile's serialized
/// form: `{"type": "TruePred"}`, `{"type": "AMDGPU", "value": {"type": "Processor", …}}`).
pub fn tensile_index_of_rows(predicates: &[serde_json::Value]) -> Vec<u8> {
    let rows: Vec<serde_json::Value> = predicates
        .iter()
        .map(|p| serde_json::json!({"predicate": p, "library": {"type": "ProblemMap"}}))
        .collect();
    msgpack_of(&serde_json::json!({"solutions": [], "library": {"type": "Hardware", "rows": rows}}))
}

/// A lazy Tensile index as rocBLAS 6.4's are laid out: a `Hardware` row for `arch` whose
/// library maps each problem type to a `Placeholder` naming its sub-library.
pub fn lazy_index(arch: &str, placeholders: &[&str]) -> Vec<u8> {
    let map: Vec<serde_json::Value> = placeholders
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let leaf = serde_json::json!({"type": "Placeholder", "value": p});
            serde_json::json!({"key": format!("Contraction_{i}"), "value": {"type": "Matching", "library": leaf}})
        })
        .collect();
    let predicate = serde_json::json!({"type": "AMDGPU", "value": {"type": "Processor", "value": arch}});
    let library =
        serde_json::json!({"type": "ProblemMap", "property": {"type": "OperationIdentifier"}, "map": map});
    msgpack_of(&serde_json::json!({
        "solutions": [],
        "library": {"type": "Hardware", "rows": [{"predicate": predicate, "library": library}]}
    }))
}

/// An amdgpu firmware blob of `size` bytes with a version-1.0 common header.
pub fn firmware_blob(ucode_version: u32, ip: (u16, u16), size: usize) -> Vec<u8> {
    let mut b = vec![0u8; size.max(64)];
    let size = b.len() as u32;
    b[0..4].copy_from_slice(&size.to_le_bytes());
    b[4..8].copy_from_slice(&44u32.to_le_bytes());
    b[8..10].copy_from_slice(&1u16.to_le_bytes());
    b[12..14].copy_from_slice(&ip.0.to_le_bytes());
    b[14..16].copy_from_slice(&ip.1.to_le_bytes());
    b[16..20].copy_from_slice(&ucode_version.to_le_bytes());
    b[20..24].copy_from_slice(&(size - 256).to_le_bytes());
    b[24..28].copy_from_slice(&256u32.to_le_bytes());
    b[28..32].copy_from_slice(&0xdead_beefu32.to_le_bytes());
    b
}
