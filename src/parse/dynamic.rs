//! The dynamic section of an ELF program or shared library: what glibc's `ld.so` reads of an
//! object to load its dependencies (`DT_NEEDED`, `DT_RPATH`, `DT_RUNPATH`, `DT_SONAME`,
//! `DF_1_NODEFLIB`, `PT_INTERP`), and the identity it checks a candidate file by (class, byte
//! order, machine, type: glibc `elf/dl-load.c` `open_verify`). Read through the program
//! headers, as the loader reads them; the string table is found by its address (`DT_STRTAB`)
//! in a `PT_LOAD` segment.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use object::elf::{
    DynamicTag, DF_1_NODEFLIB, DT_SONAME, DT_STRSZ, DT_STRTAB, PT_DYNAMIC, PT_INTERP, PT_LOAD,
};
use object::elf::{FileHeader32, FileHeader64, DT_FLAGS_1, DT_NEEDED, DT_NULL, DT_RPATH, DT_RUNPATH};
use object::pod;
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use object::Endianness;

use super::{ByteSource, ParseError, Result};

/// Most program headers read from one object.
const MAX_PROGRAM_HEADERS: usize = 4096;
/// Dynamic entries read at a time: the section is read in chunks up to `DT_NULL` or its end,
/// however many entries the file holds (glibc `elf/get-dynamic-info.h` stops only at `DT_NULL`).
const DYNAMIC_CHUNK: usize = 4096;
/// A string table up to this size is read whole; a larger one string by string, so memory
/// follows the names an object has, not the table it keeps them in (MIGraphX's is 21 MB).
const WHOLE_DYNSTR: u64 = 16 << 20;
/// Longest name or search path taken from the string table, as glibc bounds none: past this
/// the string is cut (PATH_MAX is 4,096; a search path lists several).
const MAX_STRING: usize = 64 << 10;
/// Longest interpreter path read.
const MAX_INTERP: u64 = 4096;
/// The dynamic tags read: the string table, and what `ld.so` takes from it and the flags.
const KEPT: [DynamicTag; 7] = [DT_STRTAB, DT_STRSZ, DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_SONAME, DT_FLAGS_1];

/// What `ld.so` reads of one ELF object to load it and its dependencies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynamic {
    /// ELFCLASS64.
    pub class64: bool,
    /// ELFDATA2LSB.
    pub little_endian: bool,
    /// `e_machine` (62 for x86-64).
    pub machine: u16,
    /// `e_type` (2 for a program, 3 for a shared object or a position-independent program).
    pub e_type: u16,
    /// `PT_INTERP`: the loader a program names.
    pub interp: Option<String>,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<String>,
    /// `DT_RPATH`, as stored (colon-separated, with `$ORIGIN` and the like).
    pub rpath: Option<String>,
    /// `DT_RUNPATH`, as stored.
    pub runpath: Option<String>,
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// `DF_1_NODEFLIB`: dependencies are not looked for in `ld.so.cache` or the default folders.
    pub nodeflib: bool,
    /// It has a dynamic section (a static program has none).
    pub dynamic: bool,
}

/// Reads the dynamic facts of the ELF object `src`.
pub fn parse_dynamic(src: &dyn ByteSource) -> Result<Dynamic> {
    let head = src.read_up_to(0, 64)?;
    if head.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(ParseError::Malformed { what: "ELF magic", offset: 0 });
    }
    match head.get(4) {
        Some(2) => dynamic_of::<FileHeader64<Endianness>>(src, &head),
        Some(1) => dynamic_of::<FileHeader32<Endianness>>(src, &head),
        _ => Err(ParseError::Malformed { what: "unknown ELF class", offset: 4 }),
    }
}

/// A `PT_LOAD` segment's file range and address: to find the string table by its address.
struct Load {
    vaddr: u64,
    offset: u64,
    filesz: u64,
}

fn dynamic_of<H: FileHeader<Endian = Endianness>>(src: &dyn ByteSource, head: &[u8]) -> Result<Dynamic> {
    let bad = |what, offset| ParseError::Malformed { what, offset };
    let h: &H =
        pod::from_bytes(head).map_err(|()| ParseError::Truncated { what: "ELF header", offset: 0 })?.0;
    let e = h.endian().map_err(|_| bad("ELF byte order", 5))?;
    let mut out = Dynamic {
        class64: h.is_class_64(),
        little_endian: e == Endianness::Little,
        machine: h.e_machine(e).0,
        e_type: h.e_type(e).0,
        ..Dynamic::default()
    };
    let (phoff, phnum) = (h.e_phoff(e).into(), usize::from(h.e_phnum(e)));
    let entsize = std::mem::size_of::<H::ProgramHeader>();
    if phnum == 0 {
        return Ok(out);
    }
    if usize::from(h.e_phentsize(e)) != entsize || phnum > MAX_PROGRAM_HEADERS {
        return Err(bad("ELF program header table", 0));
    }
    let table = src.read_at(phoff, phnum * entsize)?;
    let (phdrs, _) = pod::slice_from_bytes::<H::ProgramHeader>(&table, phnum)
        .map_err(|()| ParseError::Truncated { what: "program headers", offset: phoff })?;
    let range = |p: &H::ProgramHeader| -> (u64, u64) { (p.p_offset(e).into(), p.p_filesz(e).into()) };
    let loads: Vec<Load> = phdrs
        .iter()
        .filter(|p| p.p_type(e) == PT_LOAD)
        .map(|p| Load {
            vaddr: p.p_vaddr(e).into(),
            offset: p.p_offset(e).into(),
            filesz: p.p_filesz(e).into(),
        })
        .collect();
    if let Some((off, size)) = phdrs.iter().find(|p| p.p_type(e) == PT_INTERP).map(range) {
        let bytes = src.read_at(off, size.min(MAX_INTERP) as usize)?;
        out.interp = Some(c_string(&bytes));
    }
    let Some((off, size)) = phdrs.iter().find(|p| p.p_type(e) == PT_DYNAMIC).map(range) else {
        return Ok(out);
    };
    out.dynamic = true;
    let entries = dynamic_entries::<H>(src, e, off, size)?;
    let value = |tag: DynamicTag| entries.iter().find(|(t, _)| *t == tag).map(|(_, v)| *v);
    let (Some(strtab), Some(strsz)) = (value(DT_STRTAB), value(DT_STRSZ)) else {
        return Err(bad("dynamic section without a string table", off));
    };
    let at = file_offset(&loads, strtab).ok_or_else(|| bad("dynamic string table outside the file", off))?;
    // The table as far as the file holds it: a string past the file's end is not there.
    let strsz = strsz.min(src.len().saturating_sub(at));
    let table = match strsz <= WHOLE_DYNSTR {
        true => Some(src.read_at(at, strsz as usize)?),
        false => None,
    };
    let string = |v: u64| -> Option<String> {
        if v >= strsz {
            return None;
        }
        match &table {
            Some(t) => usize::try_from(v).ok().and_then(|v| t.get(v..)).map(c_string),
            None => string_at(src, at + v, strsz - v),
        }
    };
    for &(tag, v) in &entries {
        match tag {
            DT_NEEDED => {
                out.needed.push(string(v).ok_or_else(|| bad("DT_NEEDED outside its string table", off))?)
            }
            DT_RPATH => out.rpath = string(v),
            DT_RUNPATH => out.runpath = string(v),
            DT_SONAME => out.soname = string(v),
            DT_FLAGS_1 => out.nodeflib = v & DF_1_NODEFLIB.0 != 0,
            _ => {}
        }
    }
    Ok(out)
}

/// The entries of the dynamic section at `off` (`size` bytes) up to `DT_NULL` that the loader
/// reads here: read a chunk at a time, as far as the section and the file go, keeping only the
/// (tag, value) pairs of those tags, so that entries of other tags cost no memory.
fn dynamic_entries<H: FileHeader<Endian = Endianness>>(
    src: &dyn ByteSource,
    e: Endianness,
    off: u64,
    size: u64,
) -> Result<Vec<(DynamicTag, u64)>> {
    let dynsize = std::mem::size_of::<H::Dyn>() as u64;
    let total = size.min(src.len().saturating_sub(off)) / dynsize;
    let mut out = Vec::new();
    let mut done = 0u64;
    while done < total {
        let n = (total - done).min(DYNAMIC_CHUNK as u64) as usize;
        let at = off + done * dynsize;
        let bytes = src.read_at(at, n * dynsize as usize)?;
        let (chunk, _) = pod::slice_from_bytes::<H::Dyn>(&bytes, n)
            .map_err(|()| ParseError::Truncated { what: "dynamic section", offset: at })?;
        for d in chunk {
            let tag = d.d_tag(e);
            if tag == DT_NULL {
                return Ok(out);
            }
            if KEPT.contains(&tag) {
                out.push((tag, d.d_val(e).into()));
            }
        }
        done += n as u64;
    }
    Ok(out)
}

/// The NUL-terminated string at file offset `at`, at most `left` bytes (the rest of the table)
/// and [`MAX_STRING`]: a short read first, the longest only when the name is that long.
fn string_at(src: &dyn ByteSource, at: u64, left: u64) -> Option<String> {
    let mut want = 256usize;
    loop {
        let cap = (want as u64).min(left) as usize;
        let bytes = src.read_up_to(at, cap).ok()?;
        if bytes.contains(&0) || cap as u64 >= left || want >= MAX_STRING || bytes.len() < cap {
            return Some(c_string(&bytes));
        }
        want = (want * 16).min(MAX_STRING);
    }
}

/// The file offset of address `vaddr`, in the `PT_LOAD` segment whose file bytes hold it.
fn file_offset(loads: &[Load], vaddr: u64) -> Option<u64> {
    loads
        .iter()
        .find(|l| vaddr >= l.vaddr && vaddr - l.vaddr < l.filesz)
        .and_then(|l| l.offset.checked_add(vaddr - l.vaddr))
}

/// The NUL-terminated string at the start of `bytes`.
fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(bytes.get(..end).unwrap_or_default()).into_owned()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::{dynamic_elf, DynamicSpec};

    #[test]
    fn reads_what_the_loader_reads() {
        let spec = DynamicSpec {
            needed: vec!["libamdhip64.so.6".into(), "libc.so.6".into()],
            runpath: Some("$ORIGIN/../lib:/opt/rocm/lib".into()),
            soname: Some("libggml-hip.so".into()),
            nodeflib: true,
            ..DynamicSpec::default()
        };
        let d = parse_dynamic(&dynamic_elf(&spec)).expect("parses");
        assert_eq!(d.needed, spec.needed);
        assert_eq!(d.runpath, spec.runpath);
        assert_eq!((d.rpath, d.soname.as_deref()), (None, Some("libggml-hip.so")));
        assert!(d.nodeflib && d.class64 && d.little_endian && d.dynamic);
        assert_eq!((d.machine, d.e_type), (62, 3));
    }

    /// The fixture is what binutils reads too (when `readelf` is here).
    #[test]
    fn readelf_reads_the_fixture_alike() {
        let spec = DynamicSpec {
            needed: vec!["libx.so.1".into()],
            runpath: Some("$ORIGIN".into()),
            interp: Some("/lib64/ld-linux-x86-64.so.2".into()),
            ..DynamicSpec::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prog");
        std::fs::write(&path, dynamic_elf(&spec)).unwrap();
        let Ok(out) = std::process::Command::new("readelf").arg("-dlW").arg(&path).output() else {
            eprintln!("skipped: no readelf here");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        for want in
            ["Shared library: [libx.so.1]", "Library runpath: [$ORIGIN]", "/lib64/ld-linux-x86-64.so.2"]
        {
            assert!(text.contains(want), "{want}: {text}");
        }
    }

    /// Issue 34: a string table past 16 MiB (Debian's libmigraphx.so.2014000.0 has DT_STRSZ
    /// 21,305,915) and more than 65,536 dynamic entries are read, as glibc reads them: the
    /// table string by string, the section to its DT_NULL.
    #[test]
    fn tables_as_large_as_the_file_holds_are_read() {
        let long = "x".repeat(200);
        let needed: Vec<String> = (0..100_000).map(|i| format!("lib{i}{long}.so")).collect();
        let spec = DynamicSpec {
            needed: needed.clone(),
            soname: Some("libbig.so".into()),
            ..DynamicSpec::default()
        };
        let elf = dynamic_elf(&spec);
        assert!(elf.len() > 20 << 20, "the fixture's string table passes 16 MiB");
        let d = parse_dynamic(&elf.as_slice()).expect("parses");
        assert_eq!(d.needed.len(), needed.len());
        assert_eq!((d.needed.first(), d.needed.last()), (needed.first(), needed.last()));
        assert_eq!(d.soname.as_deref(), Some("libbig.so"));
    }

    #[test]
    fn a_32_bit_object_says_so() {
        let spec = DynamicSpec {
            class64: false,
            machine: 3,
            rpath: Some("/lib32".into()),
            ..DynamicSpec::default()
        };
        let d = parse_dynamic(&dynamic_elf(&spec)).expect("parses");
        assert_eq!((d.class64, d.machine, d.rpath.as_deref()), (false, 3, Some("/lib32")));
    }

    #[test]
    fn cut_and_lying_objects_are_errors_not_panics() {
        let whole = dynamic_elf(&DynamicSpec { needed: vec!["liba.so".into()], ..DynamicSpec::default() });
        for n in 0..whole.len() {
            let _ = parse_dynamic(&&whole[..n]);
        }
        // Fuzz-style: a PT_LOAD at an offset near the end of the address space (it overflowed).
        let mut far = whole.clone();
        far[64 + 8..64 + 16].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
        let _ = parse_dynamic(&far);
        let mut lying = whole.clone();
        // e_phnum of 60,000.
        lying[56..58].copy_from_slice(&60_000u16.to_le_bytes());
        assert!(parse_dynamic(&lying).is_err());
        assert!(parse_dynamic(&b"not an ELF at all".as_slice()).is_err());
    }
}
