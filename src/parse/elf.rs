//! AMDGPU code objects: the ELF header facts, the notes, and the kernel count.
//!
//! Layout facts (LLVM `AMDGPUUsage.rst` "ELF Code Object", `llvm/BinaryFormat/ELF.h`):
//! `e_machine` is `EM_AMDGPU` (224); `EI_OSABI` 64 is HSA, whose `EI_ABIVERSION` 0..4 means code
//! object V2..V6; `e_flags` carries the processor (`EF_AMDGPU_MACH`, low byte) and the
//! xnack/sramecc settings from V3 on, V2 names the processor only in its
//! `NT_AMD_HSA_ISA_VERSION` note. The kernel count is `len(amdhsa.kernels)` in the
//! `NT_AMDGPU_METADATA` MessagePack note (V3+), the `Kernels:` list of the V2 YAML metadata, or,
//! without metadata, the `*.kd` kernel-descriptor symbols (V3+) / `STT_AMDGPU_HSA_KERNEL`
//! symbols (V2).
//!
//! Only the header, the program headers and the note segment are read, all at the front of a
//! linked code object; the section table at its end is read only to size an embedded object or
//! when no metadata note counts the kernels.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use object::elf::{
    FileHeader64, ProgramHeader64, SectionHeader64, Sym64, EM_AMDGPU, PT_NOTE, SHT_DYNSYM, SHT_NOBITS,
    SHT_NOTE, SHT_SYMTAB, STT_OBJECT,
};
use std::borrow::Cow;

use object::pod;
use object::read::elf::{FileHeader as _, ProgramHeader as _, SectionHeader as _, Sym as _};
use object::LittleEndian as LE;

use super::msgpack::{leading_kernel_count, parse_kernel_metadata, KernelMetadata};
use super::{align_up, le16, le32, ByteSource, ParseError, Prefetched, Result};

/// `EI_OSABI` of an HSA code object.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `n_type` of the V3+ MessagePack metadata note (owner "AMDGPU").
pub const NT_AMDGPU_METADATA: u32 = 32;
/// V2 note types (owner "AMD").
pub const NT_AMD_HSA_ISA_VERSION: u32 = 3;
/// V2 YAML metadata note.
pub const NT_AMD_HSA_METADATA: u32 = 10;
/// V2 ISA name note (not NUL-terminated).
pub const NT_AMD_HSA_ISA_NAME: u32 = 11;
/// Symbol type of a V2 kernel (`STT_AMDGPU_HSA_KERNEL`).
pub const STT_AMDGPU_HSA_KERNEL: u8 = 10;

/// The most note bytes read from one code object (metadata of thousands of kernels fits).
pub const MAX_NOTES: u64 = 64 << 20;
/// The most symbol-table bytes read for the `.kd` fallback.
pub const MAX_SYMTAB: u64 = 64 << 20;

const EHDR64: usize = 64;
/// Bytes of a metadata descriptor read first: enough for the map header and the kernel list's
/// length, which LLVM writes first.
const METADATA_PREFIX: u64 = 64;
/// What one note needs in view: its header, a name of up to 64 bytes, and the descriptor prefix.
const NOTE_WINDOW: u64 = 12 + 64 + METADATA_PREFIX;
/// Bytes of a note segment read at a time.
const NOTE_CHUNK: u64 = 16 << 10;
/// How far a container's size may run past a code object's section table (alignment padding).
const SIZE_SLACK: u64 = 64 << 10;
/// Bytes read up front from each code object: its header, program headers and first notes.
const PREFETCH: usize = 8192;
const EHDR32: usize = 52;

/// The ELF header fields that identify an AMDGPU code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// True for ELFCLASS64 (amdgcn), false for ELFCLASS32 (r600).
    pub class64: bool,
    /// `EI_OSABI`.
    pub os_abi: u8,
    /// `EI_ABIVERSION`.
    pub abi_version: u8,
    /// `e_type` (ET_REL or ET_DYN).
    pub e_type: u16,
    /// `e_flags`: processor and features.
    pub e_flags: u32,
    /// Section header table offset, entry size and count.
    pub shoff: u64,
    pub shentsize: u16,
    pub shnum: u16,
    /// Program header table offset, entry size and count.
    pub phoff: u64,
    pub phentsize: u16,
    pub phnum: u16,
}

impl Header {
    /// Code object version 2..=6, from the ABI version of an HSA object.
    pub fn code_object_version(&self) -> Option<u8> {
        (self.os_abi == ELFOSABI_AMDGPU_HSA && self.abi_version <= 4).then(|| self.abi_version + 2)
    }
}

/// True when `b` starts like an AMDGPU ELF (magic, little-endian, `e_machine` 224).
pub fn is_amdgpu_elf(b: &[u8]) -> bool {
    b.get(..4) == Some(b"\x7fELF") && b.get(5) == Some(&1) && le16(b, 18) == Some(EM_AMDGPU.0)
}

/// Parses and checks the ELF header at the start of `b` (at least 64 bytes for ELF64).
///
/// `strict` also demands the standard header and table entry sizes: used when hunting for
/// code objects inside other data, where a stray `\x7fELF` must not pass.
pub fn parse_header(b: &[u8], strict: bool) -> Result<Header> {
    let malformed = |what| ParseError::Malformed { what, offset: 0 };
    if b.get(..4) != Some(b"\x7fELF") {
        return Err(malformed("not an ELF file"));
    }
    if b.get(5) != Some(&1) {
        return Err(malformed("AMDGPU ELF is not little-endian"));
    }
    if b.get(6) != Some(&1) {
        return Err(malformed("unknown ELF version"));
    }
    let class64 = match b.get(4) {
        Some(2) => true,
        Some(1) => false,
        _ => return Err(malformed("unknown ELF class")),
    };
    let need = if class64 { EHDR64 } else { EHDR32 };
    if b.len() < need {
        return Err(ParseError::Truncated { what: "ELF header", offset: 0 });
    }
    let field = |at| le16(b, at).ok_or(ParseError::Truncated { what: "ELF header", offset: 0 });
    if field(18)? != EM_AMDGPU.0 {
        return Err(malformed("not an AMDGPU ELF"));
    }
    let h = if class64 {
        let eh: &FileHeader64<LE> = pod::from_bytes(b).map_err(|()| malformed("ELF header"))?.0;
        Header {
            class64,
            os_abi: eh.e_ident.os_abi.0,
            abi_version: eh.e_ident.abi_version,
            e_type: eh.e_type(LE).0,
            e_flags: eh.e_flags(LE).0,
            shoff: eh.e_shoff(LE),
            shentsize: eh.e_shentsize(LE),
            shnum: eh.e_shnum(LE),
            phoff: eh.e_phoff(LE),
            phentsize: eh.e_phentsize(LE),
            phnum: eh.e_phnum(LE),
        }
    } else {
        let w = |at| le32(b, at).map(u64::from).ok_or(malformed("ELF header"));
        Header {
            class64,
            os_abi: b.get(7).copied().unwrap_or(0),
            abi_version: b.get(8).copied().unwrap_or(0),
            e_type: field(16)?,
            e_flags: le32(b, 36).ok_or(malformed("ELF header"))?,
            shoff: w(32)?,
            shentsize: field(46)?,
            shnum: field(48)?,
            phoff: w(28)?,
            phentsize: field(42)?,
            phnum: field(44)?,
        }
    };
    if strict && class64 {
        let ehsize = field(52)?;
        if ehsize as usize != EHDR64
            || (h.shnum > 0 && h.shentsize as usize != std::mem::size_of::<SectionHeader64<LE>>())
            || (h.phnum > 0 && h.phentsize as usize != std::mem::size_of::<ProgramHeader64<LE>>())
            || h.e_type > 4
        {
            return Err(malformed("ELF header sizes are not those of an AMDGPU code object"));
        }
    }
    Ok(h)
}

/// Facts read from the notes of a code object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NoteFacts {
    /// V2 `NT_AMD_HSA_ISA_VERSION`: major, minor, stepping.
    pub isa_version: Option<(u32, u32, u32)>,
    /// V2 `NT_AMD_HSA_ISA_NAME`.
    pub isa_name: Option<String>,
    /// V3+ MessagePack metadata.
    pub metadata: Option<KernelMetadata>,
    /// Kernels listed in the V2 YAML metadata.
    pub v2_kernels: Option<u64>,
}

/// Everything gfxscan records about one AMDGPU code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject {
    /// The ELF header.
    pub header: Header,
    /// Size in bytes: the container's size for it, or the extent of its own tables.
    pub size: u64,
    /// What the notes say.
    pub notes: NoteFacts,
    /// Kernel-descriptor symbols, counted only when no metadata gives the kernel count.
    pub kernel_symbols: Option<u64>,
    /// Why part of the object could not be read (its tables or notes run past its end, ...).
    /// The target is still a fact; the scanner reports the defect as a problem.
    pub defect: Option<ParseError>,
}

impl CodeObject {
    /// The number of kernels: metadata first, then symbols; `None` when nothing says.
    pub fn kernels(&self) -> Option<u64> {
        self.notes.metadata.as_ref().and_then(|m| m.kernels).or(self.notes.v2_kernels).or(self.kernel_symbols)
    }
}

fn section_headers(src: &dyn ByteSource, h: &Header) -> Result<Vec<SectionHeader64<LE>>> {
    if h.shnum == 0 {
        return Ok(Vec::new());
    }
    let len = usize::from(h.shnum) * std::mem::size_of::<SectionHeader64<LE>>();
    let bytes = src.read_at(h.shoff, len)?;
    let (table, _) = pod::slice_from_bytes::<SectionHeader64<LE>>(&bytes, usize::from(h.shnum))
        .map_err(|()| ParseError::Truncated { what: "section header table", offset: h.shoff })?;
    Ok(table.to_vec())
}

/// The extent of a code object from its own tables: where its last header or section ends.
///
/// Used for code objects embedded in other data, which no container sizes.
pub fn code_object_extent(src: &dyn ByteSource, h: &Header) -> Result<u64> {
    if !h.class64 {
        return Err(ParseError::Malformed { what: "embedded ELFCLASS32 object", offset: 0 });
    }
    let mut end = EHDR64 as u64;
    let sht_end = h.shoff.checked_add(u64::from(h.shnum) * u64::from(h.shentsize));
    let pht_end = h.phoff.checked_add(u64::from(h.phnum) * u64::from(h.phentsize));
    for e in [sht_end, pht_end] {
        end = end.max(e.ok_or(ParseError::Malformed { what: "ELF table offset", offset: 0 })?);
    }
    if end > src.len() {
        return Err(ParseError::Truncated { what: "ELF tables", offset: end });
    }
    for s in section_headers(src, h)? {
        if s.sh_type(LE) == SHT_NOBITS {
            continue;
        }
        let s_end = s.sh_offset(LE).checked_add(s.sh_size(LE));
        match s_end {
            Some(e) if e <= src.len() => end = end.max(e),
            _ => return Err(ParseError::Truncated { what: "ELF section", offset: s.sh_offset(LE) }),
        }
    }
    Ok(end)
}

/// Counts the entries of the `Kernels:` list in V2 YAML metadata.
fn count_v2_yaml_kernels(text: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(text);
    let mut lines = text.lines().skip_while(|l| l.trim_end() != "Kernels:");
    if lines.next().is_none() {
        return 0;
    }
    let mut indent = None;
    let mut count = 0;
    for line in lines {
        let body = line.trim_start();
        let at = line.len() - body.len();
        if body.is_empty() {
            continue;
        }
        // A key at column 0 ends the Kernels list.
        if at == 0 && !body.starts_with('-') {
            break;
        }
        if body.starts_with("- ") || body == "-" {
            let want = *indent.get_or_insert(at);
            if at == want {
                count += 1;
            }
        }
    }
    count
}

/// Objects linked from many (Tensile's merged .co) carry one metadata note per input: the
/// kernels of all of them count; the first target and version stand.
fn merge_metadata(acc: Option<KernelMetadata>, md: Option<KernelMetadata>) -> Option<KernelMetadata> {
    match (acc, md) {
        (Some(mut a), Some(b)) => {
            a.kernels = match (a.kernels, b.kernels) {
                (Some(x), Some(y)) => Some(x + y),
                (x, y) => x.or(y),
            };
            a.target = a.target.or(b.target);
            a.version = a.version.or(b.version);
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

/// Reads the notes in `[off, off + size)` in order, in chunks of [`NOTE_CHUNK`]: each note needs
/// its header, name and up to [`METADATA_PREFIX`] bytes of descriptor, which hold every fact
/// gfxscan needs unless the metadata map does not lead with its kernel list.
///
/// AMDGPUUsage "Note Records": name and desc are padded to 4 bytes, whatever the section's
/// alignment says (V2 trap handlers declare 8 and are packed at 4).
fn read_note_range(src: &dyn ByteSource, facts: &mut NoteFacts, off: u64, size: u64) -> Result<()> {
    let end = off.checked_add(size).ok_or(ParseError::Malformed { what: "note segment", offset: off })?;
    let mut pos = off;
    let past = |what| ParseError::Malformed { what, offset: off };
    // One read serves every note it holds: a linked Tensile `.co` has one metadata note per
    // kernel, ~4 KiB apart, and a read per note cost more in calls than the bytes do.
    // The first note is read alone: most code objects have one, whose descriptor is skipped.
    let mut chunk: Cow<'_, [u8]> = Cow::Borrowed(&[]);
    let mut chunk_at = pos;
    let mut want = NOTE_WINDOW;
    while pos.saturating_add(12) <= end {
        let need = (end - pos).min(NOTE_WINDOW);
        let rel = pos - chunk_at;
        if rel.saturating_add(need) > chunk.len() as u64 {
            if want == NOTE_CHUNK && chunk_at == off {
                // A second note: the walk goes on to the segment's end, every page of it.
                src.will_need(pos, end - pos);
            }
            // A chunk may run past the data where a segment lies about its size: then the
            // note alone, which is an error only if it runs past the data itself.
            chunk = match src.read_up_to(pos, (end - pos).min(want) as usize) {
                Ok(c) if c.len() as u64 >= need => c,
                _ => src.read_at(pos, need as usize)?,
            };
            chunk_at = pos;
            want = NOTE_CHUNK;
        }
        let win = chunk.get((pos - chunk_at) as usize..).unwrap_or(&[]);
        let (Some(namesz), Some(descsz), Some(n_type)) = (le32(win, 0), le32(win, 4), le32(win, 8)) else {
            break;
        };
        let desc_rel = 12 + align_up(u64::from(namesz), 4);
        let desc_len = u64::from(descsz);
        let desc_off = pos.checked_add(desc_rel).ok_or(past("note name past its segment"))?;
        if namesz > 64 || desc_off.checked_add(desc_len).is_none_or(|e| e > end) {
            return Err(ParseError::Malformed { what: "note extends past its segment", offset: pos });
        }
        let name = win.get(12..12 + namesz as usize).unwrap_or(&[]);
        let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
        // The first `n` bytes of the descriptor, from the window when it holds them.
        let desc = |n: u64| -> Result<Cow<'_, [u8]>> {
            let n = n.min(desc_len);
            match win.get(desc_rel as usize..(desc_rel + n) as usize) {
                Some(b) => Ok(Cow::Borrowed(b)),
                None => src.read_at(desc_off, n as usize),
            }
        };
        match (name, n_type) {
            (b"AMDGPU", NT_AMDGPU_METADATA) => {
                let prefix = desc(METADATA_PREFIX)?;
                let md = match leading_kernel_count(&prefix) {
                    Some(k) => Some(KernelMetadata { kernels: Some(k), ..KernelMetadata::default() }),
                    None => parse_kernel_metadata(&desc(desc_len)?).ok(),
                };
                facts.metadata = merge_metadata(facts.metadata.take(), md);
            }
            (b"AMD", NT_AMD_HSA_ISA_VERSION) => {
                // {u16 vendor_size, u16 arch_size, u32 major, u32 minor, u32 stepping, names}
                let d = desc(16)?;
                if let (Some(ma), Some(mi), Some(st)) = (le32(&d, 4), le32(&d, 8), le32(&d, 12)) {
                    facts.isa_version = Some((ma, mi, st));
                }
            }
            (b"AMD", NT_AMD_HSA_ISA_NAME) => {
                let d = desc(256)?;
                facts.isa_name = Some(String::from_utf8_lossy(&d).trim_end_matches('\0').to_string());
            }
            (b"AMD", NT_AMD_HSA_METADATA) => facts.v2_kernels = Some(count_v2_yaml_kernels(&desc(desc_len)?)),
            _ => {}
        }
        pos = desc_off.saturating_add(align_up(desc_len, 4));
    }
    Ok(())
}

/// Reads the notes from the PT_NOTE segments, or else from the SHT_NOTE sections.
fn parse_notes(src: &dyn ByteSource, h: &Header) -> Result<NoteFacts> {
    let mut facts = NoteFacts::default();
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    if h.phnum > 0 {
        let len = usize::from(h.phnum) * std::mem::size_of::<ProgramHeader64<LE>>();
        let bytes = src.read_at(h.phoff, len)?;
        let (phdrs, _) = pod::slice_from_bytes::<ProgramHeader64<LE>>(&bytes, usize::from(h.phnum))
            .map_err(|()| ParseError::Truncated { what: "program headers", offset: h.phoff })?;
        for p in phdrs.iter().filter(|p| p.p_type(LE) == PT_NOTE) {
            ranges.push((p.p_offset(LE), p.p_filesz(LE)));
        }
    }
    // Relocatable objects, and V2 ones with only vendor segments (the HSA runtime's trap
    // handlers), keep their notes in SHT_NOTE sections alone.
    if ranges.is_empty() {
        for s in section_headers(src, h)?.iter().filter(|s| s.sh_type(LE) == SHT_NOTE) {
            ranges.push((s.sh_offset(LE), s.sh_size(LE)));
        }
    }
    // Each note is read once, however many headers name its bytes.
    ranges.sort_unstable();
    let mut covered = 0u64;
    ranges.retain(|&(off, size)| {
        let fresh = off >= covered;
        covered = covered.max(off.saturating_add(size));
        fresh
    });
    let total: u64 = ranges.iter().map(|r| r.1).fold(0, u64::saturating_add);
    if total > MAX_NOTES {
        return Err(ParseError::TooLarge { what: "notes", claimed: total, limit: MAX_NOTES });
    }
    for (off, size) in ranges {
        read_note_range(src, &mut facts, off, size)?;
    }
    Ok(facts)
}

/// Counts kernel symbols: `*.kd` objects (V3+) or `STT_AMDGPU_HSA_KERNEL` (V2).
fn count_kernel_symbols(src: &dyn ByteSource, h: &Header) -> Result<Option<u64>> {
    let shdrs = section_headers(src, h)?;
    // Prefer the full symbol table; linked objects keep the kernels in .dynsym too.
    let pick = shdrs
        .iter()
        .find(|s| s.sh_type(LE) == SHT_SYMTAB)
        .or_else(|| shdrs.iter().find(|s| s.sh_type(LE) == SHT_DYNSYM));
    let Some(symtab) = pick else { return Ok(None) };
    let strtab = shdrs
        .get(symtab.sh_link(LE) as usize)
        .ok_or(ParseError::Malformed { what: "symbol table link", offset: h.shoff })?;
    let (size, str_size) = (symtab.sh_size(LE), strtab.sh_size(LE));
    let claimed = size.saturating_add(str_size);
    if claimed > MAX_SYMTAB {
        return Err(ParseError::TooLarge { what: "symbol table", claimed, limit: MAX_SYMTAB });
    }
    let syms = src.read_at(symtab.sh_offset(LE), size as usize)?;
    let strs = src.read_at(strtab.sh_offset(LE), str_size as usize)?;
    let n = syms.len() / std::mem::size_of::<Sym64<LE>>();
    let (syms, _) = pod::slice_from_bytes::<Sym64<LE>>(&syms, n)
        .map_err(|()| ParseError::Truncated { what: "symbol table", offset: symtab.sh_offset(LE) })?;
    let v2 = h.code_object_version() == Some(2);
    let count = syms
        .iter()
        .filter(|s| {
            if v2 {
                return s.st_type().0 == STT_AMDGPU_HSA_KERNEL;
            }
            let name = strs.get(s.st_name(LE) as usize..).unwrap_or(&[]);
            let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
            s.st_type() == STT_OBJECT && name.ends_with(b".kd")
        })
        .count();
    Ok(Some(count as u64))
}

/// The code object of `size` bytes at the start of `src` read only as far as a runtime's choice
/// of it needs: its ELF header, where the target, its features and the generic version are
/// (code object V3 and later), and the bounds of its tables held to its size, so a truncated
/// one is still a defect; a V2 object names its target in a note, so it is read whole.
pub fn parse_code_object_header(src: &dyn ByteSource, size: u64) -> Result<CodeObject> {
    let head = src.read_up_to(0, 64)?;
    let header = parse_header(&head, false)?;
    if header.class64 && header.code_object_version().is_some_and(|v| v >= 3) {
        let defect = table_defect(&header, size);
        return Ok(CodeObject { header, size, notes: NoteFacts::default(), kernel_symbols: None, defect });
    }
    parse_code_object(src, Some(size))
}

/// What the header's own table bounds say is wrong with a code object of `size` bytes: its
/// tables run past its end (truncated), or the container claims far more than they span.
fn table_defect(header: &Header, size: u64) -> Option<ParseError> {
    let table_end = |off: u64, n: u16, entsize: u16| off.checked_add(u64::from(n) * u64::from(entsize));
    let sections = table_end(header.shoff, header.shnum, header.shentsize);
    let programs = table_end(header.phoff, header.phnum, header.phentsize);
    if [sections, programs].iter().any(|end| end.is_none_or(|e| e > size)) {
        return Some(ParseError::Truncated {
            what: "code object (its ELF tables run past its end)",
            offset: size,
        });
    }
    // The section table ends a linked code object: a container that claims far more than
    // that (a bundle entry "of a terabyte" around a 4 KiB object) is lying.
    let end = sections.filter(|_| header.shnum > 0)?;
    (size > end.saturating_add(SIZE_SLACK)).then_some(ParseError::Malformed {
        what: "container claims more bytes than the code object's own tables span",
        offset: end,
    })
}

/// Parses the code object at the start of `src`.
///
/// `size` is what the container says it occupies (a file's length, a bundle entry's size);
/// `None` measures it from its own tables. Notes that cannot be read leave the kernel count
/// unknown rather than failing the object: its target is still a fact.
pub fn parse_code_object(src: &dyn ByteSource, size: Option<u64>) -> Result<CodeObject> {
    let pre = Prefetched::new(src, size.unwrap_or(PREFETCH as u64).min(PREFETCH as u64) as usize)?;
    let src: &dyn ByteSource = &pre;
    let header = parse_header(pre.head(), size.is_none())?;
    let size = match size {
        Some(s) => s,
        None => code_object_extent(src, &header)?,
    };
    let mut co = CodeObject { header, size, notes: NoteFacts::default(), kernel_symbols: None, defect: None };
    if !header.class64 {
        return Ok(co);
    }
    co.defect = table_defect(&header, size);
    let view = super::Slice::new(src, 0, size);
    match parse_notes(&view, &header) {
        Ok(notes) => co.notes = notes,
        Err(e) => co.defect = co.defect.take().or(Some(e)),
    }
    if co.kernels().is_none() {
        co.kernel_symbols = count_kernel_symbols(&view, &header).ok().flatten();
    }
    Ok(co)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::{code_object, CodeObjectSpec};

    /// The `NT_AMDGPU_METADATA` note, header to padded end, of a V4 code object with `kernels`.
    fn metadata_note(kernels: &[&str]) -> Vec<u8> {
        let one = code_object(&CodeObjectSpec::v4(0x3f, 0, kernels));
        let start = one.windows(6).position(|w| w == b"AMDGPU").expect("note") - 12;
        let (namesz, descsz) = (le32(&one, start).expect("namesz"), le32(&one, start + 4).expect("descsz"));
        let len = 12 + align_up(u64::from(namesz), 4) as usize + align_up(u64::from(descsz), 4) as usize;
        one[start..start + len].to_vec()
    }

    #[test]
    fn reads_v4_header_notes_and_kernels() {
        let spec = CodeObjectSpec::v4(0x03f, 0x300, &["k1", "k2", "k3"])
            .with_target("amdgcn-amd-amdhsa--gfx90a:xnack+");
        let bytes = code_object(&spec);
        let co = parse_code_object(&bytes, Some(bytes.len() as u64)).expect("parses");
        assert_eq!(co.header.code_object_version(), Some(4));
        assert_eq!(co.header.e_flags & 0xff, 0x3f);
        assert_eq!(co.kernels(), Some(3));
        // The kernel list leads the metadata map: only its length is read.
        assert_eq!(co.notes.metadata.and_then(|m| m.target), None);
    }

    #[test]
    fn measures_an_embedded_object_by_its_tables() {
        let bytes = code_object(&CodeObjectSpec::v4(0x04c, 0, &["k"]));
        let mut host = vec![0u8; 100];
        host.extend_from_slice(&bytes);
        host.extend_from_slice(&[0xAA; 333]);
        let view = crate::parse::Slice::new(&host, 100, host.len() as u64 - 100);
        let co = parse_code_object(&view, None).expect("parses");
        assert_eq!(co.size, bytes.len() as u64);
    }

    #[test]
    fn v2_reads_isa_note_and_yaml_kernels() {
        let bytes = code_object(&CodeObjectSpec::v2((9, 0, 6), &["a", "b"]));
        let co = parse_code_object(&bytes, Some(bytes.len() as u64)).expect("parses");
        assert_eq!(co.header.code_object_version(), Some(2));
        assert_eq!(co.notes.isa_version, Some((9, 0, 6)));
        assert_eq!(co.kernels(), Some(2));
    }

    #[test]
    fn falls_back_to_kd_symbols_without_metadata() {
        let mut spec = CodeObjectSpec::v4(0x041, 0, &["x", "y"]);
        spec.metadata = false;
        let bytes = code_object(&spec);
        let co = parse_code_object(&bytes, Some(bytes.len() as u64)).expect("parses");
        assert!(co.notes.metadata.is_none());
        assert_eq!(co.kernels(), Some(2));
    }

    #[test]
    fn kernels_of_every_metadata_note_count() {
        // Tensile's merged code objects carry one metadata note per linked input: lay the
        // fixture's metadata note twice in a row and both lists must count.
        let note = metadata_note(&["a", "b"]);
        let twice = [&note[..], &note[..]].concat();
        let mut notes = NoteFacts::default();
        read_note_range(&twice, &mut notes, 0, twice.len() as u64).expect("notes read");
        assert_eq!(notes.metadata.and_then(|m| m.kernels), Some(4));
    }

    #[test]
    fn many_notes_count_across_read_chunks() {
        // A linked Tensile `.co` holds thousands of metadata notes, read a chunk at a time:
        // 300 notes of every size (other vendors' notes between), far more than one chunk.
        let mut seg = Vec::new();
        let mut want = 0u64;
        for i in 0..300usize {
            let names: Vec<String> =
                (0..i % 7 + 1).map(|k| format!("kernel_{i}_{k}_{}", "x".repeat(i % 97))).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            seg.extend_from_slice(&metadata_note(&names));
            want += names.len() as u64;
            if i % 11 == 0 {
                // A GNU build-id note of an odd descriptor size.
                seg.extend_from_slice(&[4, 0, 0, 0, 9 + (i % 5) as u8, 0, 0, 0, 3, 0, 0, 0]);
                seg.extend_from_slice(b"GNU\0");
                seg.extend_from_slice(&vec![0xab; align_up(9 + (i % 5) as u64, 4) as usize]);
            }
        }
        assert!(seg.len() as u64 > 4 * NOTE_CHUNK);
        let mut notes = NoteFacts::default();
        read_note_range(&seg, &mut notes, 0, seg.len() as u64).expect("notes read");
        assert_eq!(notes.metadata.and_then(|m| m.kernels), Some(want));
        // Cut short, the last note runs past its segment: an error, not a smaller count.
        let mut notes = NoteFacts::default();
        assert!(read_note_range(&seg, &mut notes, 0, seg.len() as u64 - 100).is_err());
    }

    #[test]
    fn the_rest_of_a_many_note_segment_is_asked_for_once() {
        // A source that records the ranges a parser says it will need.
        struct Recording(Vec<u8>, std::cell::RefCell<Vec<(u64, u64)>>);
        impl ByteSource for Recording {
            fn len(&self) -> u64 {
                self.0.len() as u64
            }
            fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
                self.0.read_at(offset, len)
            }
            fn will_need(&self, offset: u64, len: u64) {
                self.1.borrow_mut().push((offset, len));
            }
        }
        let note = &metadata_note(&["a"]);
        let len = note.len();
        // One note: its descriptor is skipped, nothing more is asked for.
        let single = Recording(note.to_vec(), Default::default());
        read_note_range(&single, &mut NoteFacts::default(), 0, note.len() as u64).expect("read");
        assert!(single.1.borrow().is_empty());
        // Many: after the first, the rest of the segment, once.
        let many = Recording(note.repeat(500), Default::default());
        let mut facts = NoteFacts::default();
        read_note_range(&many, &mut facts, 0, many.len()).expect("read");
        assert_eq!(facts.metadata.and_then(|m| m.kernels), Some(500));
        assert_eq!(*many.1.borrow(), [(len as u64, many.len() - len as u64)]);
    }

    #[test]
    fn a_chunk_past_the_data_does_not_fail_notes_inside_it() {
        // Review finding: reading notes in chunks failed where a segment claims more bytes than
        // the data holds, though every note read lies inside the data. Note 1: the ISA version
        // (9.0.0); note 2: unnamed, its descriptor claimed to the segment's end, past the data.
        let mut seg = vec![4u8, 0, 0, 0, 16, 0, 0, 0, 3, 0, 0, 0];
        seg.extend(b"AMD\0");
        seg.extend([4, 0, 7, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let second = seg.len() as u64;
        let data_len = second + 5000;
        let end = data_len + 10_000;
        seg.extend([0, 0, 0, 0]);
        seg.extend(((end - second - 12) as u32).to_le_bytes());
        seg.extend([0, 0, 0, 0]);
        seg.resize(data_len as usize, 0);
        let mut facts = NoteFacts::default();
        read_note_range(&seg, &mut facts, 0, end).expect("the notes read lie inside the data");
        assert_eq!(facts.isa_version, Some((9, 0, 0)));
        // A note header past the data is still an error.
        let mut facts = NoteFacts::default();
        assert!(read_note_range(&seg[..second as usize + 8].to_vec(), &mut facts, 0, end).is_err());
    }

    #[test]
    fn notes_named_by_two_headers_count_once() {
        // Review finding: two PT_NOTE headers over the same bytes doubled the kernel count.
        let mut spec = CodeObjectSpec::v4(0x3f, 0, &["a", "b", "c"]);
        spec.note_phdrs = 2;
        let bytes = code_object(&spec);
        let co = parse_code_object(&bytes, Some(bytes.len() as u64)).expect("parses");
        assert_eq!(co.kernels(), Some(3));
    }

    #[test]
    fn yaml_kernel_list_ignores_nested_args() {
        let y =
            b"---\nVersion: [ 1, 0 ]\nKernels:\n  - Name: a\n    Args:\n      - Name: x\n  - Name: b\n...\n";
        assert_eq!(count_v2_yaml_kernels(y), 2);
    }

    #[test]
    fn every_truncation_is_a_defect_or_an_error() {
        let bytes = code_object(&CodeObjectSpec::v4(0x3f, 0, &["k1", "k2"]));
        for n in 0..bytes.len() {
            let cut = bytes[..n].to_vec();
            match parse_code_object(&cut, Some(n as u64)) {
                Err(_) => assert!(n < 64, "only a cut header may fail outright (cut at {n})"),
                Ok(co) => assert!(co.defect.is_some(), "cut at {n} of {} went unnoticed", bytes.len()),
            }
        }
    }

    #[test]
    fn rejects_other_machines_and_truncation() {
        let mut bytes = code_object(&CodeObjectSpec::v4(0x041, 0, &[]));
        assert!(parse_code_object(&bytes[..40].to_vec(), None).is_err());
        bytes[18] = 62; // EM_X86_64
        assert!(parse_code_object(&bytes, None).is_err());
    }
}
