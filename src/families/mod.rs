//! Artifact families as catalogers: the Tensile, MIOpen, firmware, bitcode and AOTriton files around the
//! code that decide whether a GPU can run. Each family is one module holding all it knows —
//! which files are its members, the facts only their content can say, the rows it adds to the
//! families table, what `check` says of one of its libraries for a GPU, and how `diff` pairs its
//! files across installs — behind the [`Cataloger`] trait, registered in [`CATALOGERS`]. Adding
//! a family is one module and one line there (and its `Family` name in the snapshot contract).
//!
//! Membership is decided from the file's path and name together with its content kind (a
//! `.db` must be SQLite or text, a `.bc` must be LLVM bitcode), never by extension alone.
//! Names are attributed to targets through `targets.toml`: the longest known target name wins
//! (`gfx90878` is gfx908 with 0x78 CUs). Content decides where it can: Tensile code files serve
//! the processors of their code objects, Tensile indexes the processors of their hardware rows.

pub mod aotriton;
pub mod bitcode;
pub mod firmware;
pub mod miopen;
pub mod tensile;

use std::path::{Component as PathPart, Path};
use std::sync::LazyLock;

use crate::model::{Artifact, CodeObjectRecord, Container, Family, FileRecord, Snapshot, Storage};
use crate::parse::magic::{looks_like_text, Kind};
use crate::parse::ByteSource;
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::verdict::{Cost, GapRule, Verdict};

/// What is known of a file's bytes when its family is decided.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    /// A regular file: its kind by magic, and its first bytes.
    File(Kind, &'a [u8]),
    /// A symbolic link: no content of its own, judged by its name.
    Link,
}

impl Content<'_> {
    /// The kind by magic (`Other` for a link).
    fn kind(self) -> Kind {
        match self {
            Content::File(kind, _) => kind,
            Content::Link => Kind::Other,
        }
    }

    /// True for a link.
    fn is_link(self) -> bool {
        matches!(self, Content::Link)
    }

    /// How a member is stored, from its kind, with `plain` for bytes of no known kind.
    fn storage(self, plain: Storage) -> Storage {
        match self {
            Content::Link => Storage::Link,
            Content::File(kind, _) => match kind {
                Kind::AmdgpuElf => Storage::Elf,
                Kind::OffloadBundle => Storage::Bundle,
                Kind::CompressedOffloadBundle => Storage::Ccob,
                Kind::Sqlite => Storage::Sqlite,
                Kind::Bzip2 => Storage::Bzip2,
                Kind::Zlib => Storage::Compressed(crate::vocab::codec::Codec::Zlib),
                Kind::Zstd | Kind::Xz | Kind::Gzip => kind.codec().map_or(plain, Storage::Compressed),
                Kind::GitLfsPointer => Storage::GitLfsPointer,
                Kind::LlvmBitcode => Storage::Bitcode,
                _ => plain,
            },
        }
    }

    /// True when the first bytes of a regular file of no known kind read as text.
    fn is_text(self) -> bool {
        matches!(self, Content::File(Kind::Other, head) if looks_like_text(head))
    }
}

/// What a cataloger reads a member's facts from: its bytes, its name, its path on disk when it
/// has one, its first bytes and the code objects already found in it.
pub struct Item<'a> {
    pub src: &'a dyn ByteSource,
    /// The path its family was judged by.
    pub name: &'a Path,
    /// Its path on disk (not for archive members).
    pub disk: Option<&'a Path>,
    pub head: &'a [u8],
    pub code_objects: &'a [CodeObjectRecord],
    pub targets: &'a Targets,
}

/// One library of a family in a snapshot, as `check` judges it: a folder under one root.
pub struct Library<'s> {
    pub snap: &'s Snapshot,
    pub root: usize,
    /// The folder, relative to the root.
    pub dir: &'s str,
    /// The library that loads the folder when its path does not say (a Tensile folder named by
    /// `HIPBLASLT_TENSILE_LIBPATH` may be named anything).
    pub component: Option<crate::model::Component>,
    pub targets: &'s Targets,
    /// The HIP runtime whose matching rules its code files are judged by.
    pub runtime: crate::vocab::runtime::Runtime,
    /// Its files, when the library model already knows them (else they are looked up).
    pub files: Option<Vec<&'s FileRecord>>,
}

impl Library<'_> {
    /// The library's path for people, with a trailing `/`.
    pub fn display(&self) -> String {
        let p = crate::model::RelPath { root: self.root, path: self.dir.to_string(), path_hex: None };
        format!("{}/", p.display(&self.snap.roots))
    }
}

/// One artifact family.
pub trait Cataloger: Sync {
    /// The family it catalogs.
    fn family(&self) -> Family;

    /// Its artifact record when `path` (with `content`) is one of its files; content facts come
    /// later, from [`Cataloger::facts`].
    fn detect(&self, path: &Path, name: &str, content: Content, targets: &Targets) -> Option<Artifact>;

    /// Adds what only the content can say. A fact that cannot be read is a problem; the
    /// artifact is still listed.
    fn facts(&self, _a: &mut Artifact, _item: &Item, _problems: &mut Vec<FactsError>) {}

    /// Its rows of the families table, in display order.
    fn rows(&self) -> &'static [Row];

    /// The row one of its files counts in, and how much it adds for each of its targets.
    fn tally(&self, f: &FileRecord, a: &Artifact) -> Option<(&'static str, u64)>;

    /// The folder that is the library a file belongs to (`None`: the file is in none).
    fn library_dir(&self, path: &str) -> Option<String>;

    /// True when a program loads its libraries (firmware's the kernel driver loads: no verdict
    /// judges them, and what they lose is what their files no longer hold).
    fn loaded_by_programs(&self) -> bool {
        true
    }

    /// True when its libraries hold device code (a Tensile library does; MIOpen's databases
    /// and the bitcode do not): a check that finds only libraries that do not has nothing to
    /// check.
    fn holds_device_code(&self) -> bool {
        false
    }

    /// True when the members of the archive at `archive` (a path relative to its root) belong to
    /// this family's layout as if unpacked beside it into a folder named by its stem: they are
    /// judged by that path, not by their name inside the archive alone.
    fn unpacks_in_place(&self, _archive: &str) -> bool {
        false
    }

    /// What `check` says of one of its libraries for a GPU; `None` for a family whose files
    /// no program loads (firmware).
    fn verdict(&self, lib: &Library, dev: &DeviceTarget) -> Option<Verdict>;

    /// The identity of a file's unit across installs and versions, for `diff`.
    fn identity(&self, a: &Artifact) -> String;

    /// The target IDs a file adds to its unit in `diff`, each with its generic version.
    fn unit_targets(&self, f: &FileRecord, a: &Artifact) -> Vec<(String, Option<u8>)> {
        let _ = f;
        a.targets().into_iter().map(|t| (t, None)).collect()
    }
}

/// What a cataloger could not read of a file's content: the problem the scan records for the
/// file, whose artifact is still listed.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    /// A Tensile index whose hardware rows could not be read: it serves no target.
    #[error("Tensile index: {0}")]
    TensileIndex(crate::parse::ParseError),
    /// A lazy index naming more sub-libraries than are kept.
    #[error("Tensile lazy index names more sub-libraries than are read ({kept} kept)")]
    PlaceholdersCapped { kept: usize },
    /// hipBLASLt's `TensileLiteLibrary_lazy_Mapping.dat`.
    #[error("hipBLASLt solution map: {0}")]
    SolutionMap(crate::parse::ParseError),
    /// hipBLASLt's `hipblasltExtOpLibrary.dat`.
    #[error("hipBLASLt ExtOp index: {0}")]
    ExtopIndex(crate::parse::ParseError),
    /// A `.bin.zst` or `.bin.xz` firmware blob that does not inflate.
    #[error("compressed firmware: {0}")]
    CompressedFirmware(String),
    /// A firmware blob named as compressed whose bytes are not.
    #[error("named as compressed firmware, but holds no zstd or xz data")]
    NotCompressedFirmware,
    /// An SQLite MIOpen database whose rows could not be counted.
    #[error("{0}")]
    MiopenRows(String),
    /// A text MIOpen database whose records could not be counted.
    #[error("{0}")]
    MiopenText(crate::parse::ParseError),
    /// An AOTriton AKS2 archive whose kernels could not be counted.
    #[error("{0}")]
    AotritonArchive(crate::parse::ParseError),
}

/// Every family, in the order membership is decided: a file is the first one's that claims it
/// (a file in `firmware/amdgpu` is firmware whatever its name).
pub static CATALOGERS: &[&dyn Cataloger] =
    &[&firmware::Firmware, &bitcode::Bitcode, &miopen::Miopen, &aotriton::Aotriton, &tensile::Tensile];

/// The cataloger of a family: one per `Family`, matched exhaustively, so a family without a
/// cataloger does not compile (none falls back to another's rules).
pub fn cataloger(family: Family) -> &'static dyn Cataloger {
    match family {
        Family::Tensile => &tensile::Tensile,
        Family::Miopen => &miopen::Miopen,
        Family::Firmware => &firmware::Firmware,
        Family::Bitcode => &bitcode::Bitcode,
        Family::Aotriton => &aotriton::Aotriton,
    }
}

/// The family of a file from its real path and content, with what its name says.
pub fn detect(path: &Path, content: Content, targets: &Targets) -> Option<Artifact> {
    let name = path.file_name()?.to_str()?;
    CATALOGERS.iter().find_map(|c| c.detect(path, name, content, targets))
}

/// The path an archive member is judged by: its name inside the archive, or, for an archive a
/// family unpacks in place, `<archive folder>/<archive stem>/<name>`.
pub fn member_name(archive: &str, member: &Path) -> std::path::PathBuf {
    if !CATALOGERS.iter().any(|c| c.unpacks_in_place(archive)) {
        return member.to_path_buf();
    }
    let archive = Path::new(archive);
    let stem = archive.file_stem().unwrap_or_default();
    archive.parent().unwrap_or(Path::new("")).join(stem).join(member)
}

/// The family a link's name places it in (links have no content of their own).
pub fn detect_link(path: &Path, targets: &Targets) -> Option<Artifact> {
    detect(path, Content::Link, targets)
}

/// clr hipamd/src/hip_fatbin.cpp `FatBinaryInfo::ExtractFatBinaryUsingCOMGR` finds no code
/// object for the device ("No compatible code objects found for: gfx…" with AMD_LOG_LEVEL);
/// hip_platform.cpp `ihipLaunchKernel` then fails each launch of the library's kernels with
/// hipErrorNoBinaryForGpu / hipErrorInvalidDeviceFunction. Registration is lazy
/// (HIP_ENABLE_DEFERRED_LOADING=1), so only this library's kernels fail.
pub const HOST_CODE: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "its kernel launches fail with hipErrorNoBinaryForGpu / \"invalid device function\" (a bundle it loads itself: hipModuleLoadData fails with hipErrorNoBinaryForGpu)",
};

/// Rows of code objects outside any family, first in the families table.
const CODE_ROWS: &[Row] = &[
    Row {
        key: "host-library-code-objects",
        label: "device code in host libraries (code objects; the runtime's own included)",
        column: "library code",
        within: None,
        gap: Some(&HOST_CODE),
    },
    Row {
        key: "standalone-code-objects",
        label: "standalone code objects (outside Tensile folders)",
        column: "library code",
        within: None,
        gap: Some(&HOST_CODE),
    },
    Row {
        key: "runtime-internal-code-objects",
        label: "runtime-internal code objects (HSA runtime image blit kernels, trap handlers)",
        column: "runtime",
        within: Some("host-library-code-objects"),
        gap: None,
    },
];

/// One row of the families table: a count the tree holds per target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Its key in the snapshot's `families` map.
    pub key: &'static str,
    /// What it counts, for people.
    pub label: &'static str,
    /// Its column in the per-target table; rows sharing a column add up.
    pub column: &'static str,
    /// The row that also counts what this one does: the per-target table shows this part
    /// apart, taking it out of that row's column.
    pub within: Option<&'static str>,
    /// What a run meets where the tree holds none of it for a target: the gap rule `check`
    /// judges that absence by, whose cost is also `explain`'s gate for the layer. `None` for
    /// what only the runtime itself uses (its blit kernels) or no HIP run reads (OpenCL
    /// find-DBs): those count what is there, but gate nothing.
    pub gap: Option<&'static GapRule>,
}

/// Rows of the families table, in display order (the families in `Family` order).
pub static FAMILY_ROWS: LazyLock<Vec<Row>> = LazyLock::new(|| {
    let mut families: Vec<&dyn Cataloger> = CATALOGERS.to_vec();
    families.sort_by_key(|c| c.family());
    CODE_ROWS.iter().copied().chain(families.iter().flat_map(|c| c.rows().iter().copied())).collect()
});

/// The rows a code object counts in: host libraries' apart from standalone objects; and the
/// HSA runtime's own also in a row of their own, since they serve the runtime, not
/// applications (the per-target table shows them apart). Those are the raw code objects
/// libhsa-runtime64 embeds: the image extension's blit kernels (rocr-runtime
/// `hsa-runtime/image/blit_src/`: `imageblit_kernels.cl` built per `TARGET_DEVICES` and
/// embedded with `xxd -i`, ten `copy_image_*`/`clear_image_*` kernels each) and, in the 5.x/6.x
/// builds of the corpus, three code-object-V2 trap handlers. (Today's blit shaders and trap
/// handlers, `core/runtime/blit_shaders/` and `trap_handler/`, are dumped `.text`, not code
/// objects, and are not seen.)
pub fn code_rows(f: &FileRecord, c: &CodeObjectRecord) -> Vec<&'static str> {
    match f.artifact.as_ref().and_then(|a| a.family) {
        None if f.kind.is_host_binary() && runtime_own(f, c) => vec![CODE_ROWS[0].key, CODE_ROWS[2].key],
        None if f.kind.is_host_binary() => vec![CODE_ROWS[0].key],
        None => vec![CODE_ROWS[1].key],
        Some(_) => Vec::new(),
    }
}

/// True for the HSA runtime's own code objects (see [`code_rows`]).
pub fn runtime_own(f: &FileRecord, c: &CodeObjectRecord) -> bool {
    c.container() == Container::Embedded && f.path.file_name().starts_with("libhsa-runtime64")
}

/// True when a folder of `path` is named one of `names` (case folded).
fn has_component(path: &Path, names: &[&str]) -> bool {
    path.components()
        .any(|c| matches!(c, PathPart::Normal(n) if names.iter().any(|x| n.eq_ignore_ascii_case(x))))
}

/// The folder of a `/`-separated path.
fn parent(path: &str) -> String {
    path.rsplit_once('/').map_or(String::new(), |(d, _)| d.to_string())
}

/// The last part of a `/`-separated path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The files of one family in one folder of a snapshot (`library_dir` decides the folder).
fn files_of<'s>(lib: &Library<'s>, family: Family) -> Vec<&'s FileRecord> {
    if let Some(files) = &lib.files {
        let ours = |f: &&&FileRecord| f.artifact.as_ref().is_some_and(|a| a.family == Some(family));
        return files.iter().filter(ours).copied().collect();
    }
    let c = cataloger(family);
    lib.snap
        .files
        .iter()
        .filter(|f| f.path.root == lib.root && f.artifact.as_ref().is_some_and(|a| a.family == Some(family)))
        .filter(|f| c.library_dir(&f.path.path).as_deref() == Some(lib.dir))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::firmware::firmware_prefix;
    use super::miopen::miopen_name;
    use super::*;
    use crate::model::{Role, Storage};

    fn t() -> Targets {
        Targets::builtin()
    }

    /// Each family's cataloger is its own, and every registered cataloger is some family's.
    #[test]
    fn each_family_has_its_own_cataloger() {
        for c in CATALOGERS {
            assert_eq!(cataloger(c.family()).family(), c.family());
        }
        assert_eq!(CATALOGERS.len(), 5, "one cataloger per Family");
    }

    #[test]
    fn miopen_names_take_the_longest_target() {
        let t = t();
        assert_eq!(miopen_name("gfx900_56", &t), Some(("gfx900".into(), None, Some(56))));
        assert_eq!(miopen_name("gfx90878", &t), Some(("gfx908".into(), None, Some(120))));
        assert_eq!(miopen_name("gfx90a68", &t), Some(("gfx90a".into(), None, Some(104))));
        assert_eq!(miopen_name("gfx942130", &t), Some(("gfx942".into(), None, Some(304))));
        assert_eq!(miopen_name("gfx1030_36", &t), Some(("gfx1030".into(), None, Some(36))));
        assert_eq!(
            miopen_name("gfx906_nosramecc_60", &t),
            Some(("gfx906".into(), Some("nosramecc".into()), Some(60)))
        );
        assert_eq!(miopen_name("gfx942_metadata", &t), Some(("gfx942".into(), None, None)));
    }

    #[test]
    fn firmware_prefixes() {
        let t = t();
        for (name, want) in [
            ("gc_11_0_0_mes_2.bin", "gc_11_0_0"),
            ("vcn_4_0_6_1.bin", "vcn_4_0_6_1"),
            ("dcn_3_5_dmcub.bin", "dcn_3_5"),
            ("umsch_mm_4_0_0.bin", "umsch_mm_4_0_0"),
            ("banks_k_2_smc.bin", "banks"),
            ("polaris10_mec_2.bin", "polaris10"),
            ("sienna_cichlid_ce.bin", "sienna_cichlid"),
            ("cyan_skillfish2_ce.bin", "cyan_skillfish2"),
            ("raven_kicker_rlc.bin", "raven"),
            ("vega10_me.bin.zst", "vega10"),
            ("BONAIRE_ce.bin", "BONAIRE"),
        ] {
            assert_eq!(firmware_prefix(name, &t), want, "{name}");
        }
        let a = detect(
            Path::new("/lib/firmware/amdgpu/vega10_me.bin"),
            Content::File(Kind::Other, b"\x01\x02"),
            &t,
        )
        .expect("firmware");
        assert_eq!(a.name_target.as_deref(), Some("gfx900"));
        assert!(detect(Path::new("/tmp/amdgpu/vega10_me.bin"), Content::File(Kind::Other, b""), &t).is_none());
    }

    #[test]
    fn bitcode_needs_bitcode_content() {
        let t = t();
        let p = Path::new("/opt/rocm/amdgcn/bitcode/oclc_isa_version_90a.bc");
        assert_eq!(
            detect(p, Content::File(Kind::LlvmBitcode, b"BC\xc0\xde"), &t).and_then(|a| a.name_target),
            Some("gfx90a".into())
        );
        assert!(detect(p, Content::File(Kind::Other, b"text"), &t).is_none());
        assert_eq!(detect(p, Content::Link, &t).map(|a| a.format), Some(Storage::Link));
    }

    #[test]
    fn text_databases_must_read_as_text() {
        let t = t();
        let p = Path::new("/opt/rocm/share/miopen/db/gfx900_56.db");
        assert!(detect(p, Content::File(Kind::Other, b"\x00\x01binary"), &t).is_none());
        assert_eq!(
            detect(p, Content::File(Kind::Other, b"1-1-1=Solver:1,2\n"), &t).map(|a| a.format),
            Some(Storage::Text)
        );
        assert_eq!(
            detect(p, Content::File(Kind::Sqlite, b"SQLite format 3\0"), &t).map(|a| a.format),
            Some(Storage::Sqlite)
        );
        let k = Path::new("/opt/rocm/share/miopen/db/gfx90a68.kdb");
        assert!(detect(k, Content::File(Kind::Other, b"text"), &t).is_none());
        assert_eq!(detect(k, Content::Link, &t).map(|a| a.role), Some(Role::KernelDb));
    }
}
