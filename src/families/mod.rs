//! Artifact families: which Tensile, MIOpen, firmware and bitcode files a tree holds, and which
//! targets each serves. Pure: names, paths and already-read facts in, records out.
//!
//! Membership is decided from the file's path and name together with its content kind (a
//! `.db` must be SQLite or text, a `.bc` must be LLVM bitcode), never by extension alone.
//! Names are attributed to targets through `targets.toml`: the longest known target name wins
//! (`gfx90878` is gfx908 with 0x78 CUs). Content decides where it can: Tensile code files serve
//! the processors of their code objects, Tensile indexes the processors of their hardware rows;
//! a name that claims a target its content does not serve is a [`Mismatch`].
//! Sources: FORMATS.md §3 (Tensile), §4 (MIOpen), §5 (firmware); USERS.md §5 (naming traps).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use crate::model::{Artifact, Family, FileRecord, LinkRecord, Mismatch, RelPath};
use crate::parse::magic::Kind;
use crate::vocab::targets::Targets;

fn has_component(path: &Path, names: &[&str]) -> bool {
    path.components()
        .any(|c| matches!(c, Component::Normal(n) if names.iter().any(|x| n.eq_ignore_ascii_case(x))))
}

/// The target a Tensile file name names, as `(processor, variant)`: the last `gfx…` that is a
/// whole known target name (`TensileLibrary_lazy_gfx90a.dat`, `Kernels.so-000-gfx90a-xnack+.hsaco`).
pub fn tensile_name_target(name: &str, targets: &Targets) -> Option<(String, Option<String>)> {
    let mut found = None;
    for (i, _) in name.match_indices("gfx") {
        let rest = name.get(i..).unwrap_or("");
        let after_sep = i == 0 || name[..i].ends_with(['_', '-', '/']);
        let best = targets
            .iter()
            .filter(|t| rest.starts_with(t.name.as_str()))
            .filter(|t| !rest[t.name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric()))
            .max_by_key(|t| t.name.len());
        if let (true, Some(t)) = (after_sep, best) {
            let tail = &rest[t.name.len()..];
            let variant = ["xnack+", "xnack-"]
                .into_iter()
                .find(|v| tail.strip_prefix(['-', ':']).is_some_and(|x| x.starts_with(v)))
                .map(str::to_string);
            found = Some((t.name.clone(), variant));
        }
    }
    found
}

/// The target a per-arch folder (`library/gfx90a/`, `library/gfx90a-xnack+/`) names.
fn folder_target(path: &Path, targets: &Targets) -> Option<(String, Option<String>)> {
    let dir = path.parent()?.file_name()?.to_str()?;
    let (name, variant) = match dir.split_once(['-', ':']) {
        Some((n, v)) if v == "xnack+" || v == "xnack-" => (n, Some(v.to_string())),
        _ => (dir, None),
    };
    targets.by_name(name).filter(|t| !t.is_generic() || name == dir).map(|t| (t.name.clone(), variant))
}

/// A MIOpen database base name (`gfx900_56`, `gfx90878`, `gfx906_nosramecc_60`,
/// `gfx942_metadata`): processor, variant and CU count. MIOpen `handle.hpp` `GetDbBasename`:
/// the CU count follows as `_<decimal>` up to 64 CUs and as lowercase hex above.
pub fn miopen_name(base: &str, targets: &Targets) -> Option<(String, Option<String>, Option<u32>)> {
    let t = targets.longest_prefix_of(base)?;
    let mut rest = &base[t.name.len()..];
    let mut variant = None;
    for v in ["_nosramecc", "_sramecc", "_xnack"] {
        if let Some(r) = rest.strip_prefix(v) {
            variant = Some(v.trim_start_matches('_').to_string());
            rest = r;
        }
    }
    let cu = if let Some(dec) = rest.strip_prefix('_') {
        dec.parse::<u32>().ok()
    } else if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        u32::from_str_radix(rest, 16).ok()
    } else {
        None
    };
    Some((t.name.clone(), variant, cu))
}

/// A firmware file name's prefix: an IP version (`gc_11_0_0`, `psp_13_0_10`, `vcn_4_0_6_1`,
/// `dcn_3_5`) when the name has two or more numeric parts in a row; else the longest codename
/// in targets.toml (`sienna_cichlid`, `raven`); else its first part (`banks`, `BONAIRE`).
pub fn firmware_prefix(file_name: &str, targets: &Targets) -> String {
    let stem = file_name.trim_end_matches(".zst").trim_end_matches(".xz");
    let stem = stem.strip_suffix(".bin").unwrap_or(stem);
    let parts: Vec<&str> = stem.split('_').collect();
    let numeric =
        |i: usize| parts.get(i).is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    for i in 1..parts.len() {
        if numeric(i) && numeric(i + 1) {
            let mut end = i + 1;
            while numeric(end + 1) {
                end += 1;
            }
            return parts[..=end].join("_");
        }
    }
    targets
        .firmware_prefixes()
        .filter(|p| stem == *p || stem.strip_prefix(p).is_some_and(|r| r.starts_with('_')))
        .max_by_key(|p| p.len())
        .map_or_else(|| parts.first().copied().unwrap_or(stem).to_string(), str::to_string)
}

/// The firmware folder (`amdgpu`, `radeon`) a path lies directly in, if it is under `firmware/`.
fn firmware_dir(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let name = dir.file_name()?.to_str()?;
    (matches!(name, "amdgpu" | "radeon") && has_component(dir, &["firmware"])).then(|| name.to_string())
}

fn tensile_library(path: &Path) -> Option<&'static str> {
    let p = path.to_string_lossy().to_ascii_lowercase();
    if p.contains("hipblaslt") {
        Some("hipblaslt")
    } else if p.contains("rocblas") || p.contains("tensile") {
        Some("rocblas")
    } else {
        None
    }
}

fn tensile_role(name: &str) -> &'static str {
    let base = name.trim_end_matches(".zlib");
    if base.starts_with("Kernels.so-") {
        "source-kernels"
    } else if base == "TensileManifest.txt" {
        "manifest"
    } else if base == "TensileLibrary.dat" || base == "TensileLibrary.yaml" {
        "merged-index"
    } else if base.starts_with("TensileLiteLibrary_lazy_") && base.contains("Mapping") {
        // hipBLASLt: first solution index → code-object library (parse::tensile::SolutionMap).
        "solution-map"
    } else if base.starts_with("hipblasltExtOpLibrary") {
        "extop-index"
    } else if base.starts_with("TensileLibrary_lazy_") {
        "lazy-index"
    } else if base.ends_with(".dat") || base.ends_with(".yaml") {
        let parts = base.trim_end_matches(".dat").trim_end_matches(".yaml").split('_').count();
        match (base.contains("_fallback"), parts) {
            (true, _) => "fallback-library",
            (false, 2) if base.starts_with("TensileLibrary_gfx") => "index",
            _ => "sub-library",
        }
    } else if base.contains("_fallback") {
        "fallback-code"
    } else {
        "code"
    }
}

/// True for file names Tensile and hipBLASLt write into a library folder.
fn is_tensile_name(name: &str) -> bool {
    name.starts_with("TensileLibrary")
        || name.starts_with("TensileLiteLibrary")
        || name.starts_with("Kernels.so-")
        || name == "TensileManifest.txt"
        || name.starts_with("extop_")
        || name.starts_with("hipblaslt")
}

fn in_library_folder(path: &Path) -> bool {
    let mut dirs = path.ancestors().skip(1).take(2);
    dirs.any(|d| d.file_name().is_some_and(|n| n == "library"))
}

const TENSILE_EXTENSIONS: [&str; 6] = [".dat", ".dat.zlib", ".co", ".hsaco", ".yaml", ".txt"];

fn format_of(kind: Kind, text_default: &str) -> String {
    match kind {
        Kind::AmdgpuElf => "elf",
        Kind::OffloadBundle => "bundle",
        Kind::CompressedOffloadBundle => "ccob",
        Kind::Sqlite => "sqlite",
        Kind::Bzip2 => "bzip2",
        Kind::Zstd => "zstd",
        Kind::Xz => "xz",
        Kind::Gzip => "gzip",
        Kind::Zlib => "zlib",
        Kind::GitLfsPointer => "git-lfs-pointer",
        Kind::LlvmBitcode => "bitcode",
        _ => text_default,
    }
    .to_string()
}

/// MIOpen database kinds by suffix, longest first: (suffix, role).
#[rustfmt::skip]
const MIOPEN_SUFFIXES: &[(&str, &str)] = &[
    (".HIP.fdb.txt", "find-db"), (".OpenCL.fdb.txt", "find-db"), (".fdb.txt", "find-db"),
    (".HIP.ufdb.txt", "user-find-db"), (".OpenCL.ufdb.txt", "user-find-db"), (".ufdb.txt", "user-find-db"),
    (".udb.txt", "user-perf-db"), (".udb", "user-perf-db"), (".ukdb", "user-kernel-db"),
    (".ktn.model", "tuning-model"), (".tn.model", "tuning-model"),
    (".db.txt", "perf-db"), (".db", "perf-db"), (".kdb", "kernel-db"),
];

/// What is known of a file's bytes when its family is decided.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    /// A regular file: its kind by magic, and its first bytes.
    File(Kind, &'a [u8]),
    /// A symbolic link: no content of its own, judged by its name.
    Link,
}

/// True when the first bytes of a file read as text (no NUL, no control bytes but tab, CR, LF).
pub fn looks_like_text(head: &[u8]) -> bool {
    head.iter().all(|&b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r'))
}

/// The family of a file from its real path and content, with what its name says.
/// Content facts (records, processors, headers) are added by the scanner.
pub fn detect(path: &Path, content: Content, targets: &Targets) -> Option<Artifact> {
    let name = path.file_name()?.to_str()?;
    let (kind, link) = match content {
        Content::File(kind, _) => (kind, false),
        Content::Link => (Kind::Other, true),
    };
    let text = match content {
        Content::File(Kind::Other, head) => looks_like_text(head),
        _ => false,
    };
    let format = |default: &str| if link { "link".to_string() } else { format_of(kind, default) };
    if let Some(dir) = firmware_dir(path) {
        let prefix = firmware_prefix(name, targets);
        let name_target = targets.by_firmware(&prefix).map(|t| t.name.clone());
        return Some(Artifact {
            family: Some(Family::Firmware),
            role: "blob".into(),
            format: format("raw"),
            name_target,
            prefix: Some(prefix),
            firmware_dir: Some(dir),
            ..Artifact::default()
        });
    }
    if let Some(isa) = name.strip_prefix("oclc_isa_version_").and_then(|r| r.strip_suffix(".bc")) {
        if kind == Kind::LlvmBitcode || link {
            let name_target = targets.by_name(&format!("gfx{isa}")).map(|t| t.name.clone());
            return Some(Artifact {
                family: Some(Family::Bitcode),
                role: "isa".into(),
                format: format("bitcode"),
                name_target,
                ..Artifact::default()
            });
        }
    }
    let lower = name.to_ascii_lowercase();
    let bz2 = lower.ends_with(".bz2");
    let base_name = name.trim_end_matches(".bz2");
    if let Some((suffix, role)) = MIOPEN_SUFFIXES.iter().find(|(suf, _)| base_name.ends_with(suf)) {
        let base = &base_name[..base_name.len() - suffix.len()];
        let in_miopen = has_component(path, &["miopen", "kernels", "db"]);
        // `.db`, `.db.txt` and bzip2 source forms are too common to trust outside MIOpen's
        // folders; the other suffixes are MIOpen's alone.
        let distinctive = !bz2 && !matches!(*suffix, ".db" | ".db.txt");
        if base.starts_with("gfx") && (in_miopen || distinctive) {
            let (processor, variant, cu) = miopen_name(base, targets).unwrap_or((String::new(), None, None));
            // A text database must read as text; models are opaque; a `.db`/`.kdb` is SQLite.
            let ok_kind = link
                || matches!(kind, Kind::Sqlite | Kind::Bzip2 | Kind::GitLfsPointer)
                || (kind == Kind::Other && (suffix.ends_with(".model") || (text && !suffix.ends_with("db"))))
                || (kind == Kind::Other && text && matches!(*suffix, ".db"));
            if ok_kind {
                return Some(Artifact {
                    family: Some(Family::Miopen),
                    role: (*role).into(),
                    format: format(if suffix.ends_with(".model") { "model" } else { "text" }),
                    name_target: (!processor.is_empty()).then_some(processor),
                    name_variant: variant,
                    cu_count: cu,
                    ..Artifact::default()
                });
            }
        }
    }
    let tensile_ext = TENSILE_EXTENSIONS.iter().any(|e| name.ends_with(e));
    let library = tensile_library(path);
    if tensile_ext && (is_tensile_name(name) || (in_library_folder(path) && library.is_some())) {
        let (name_target, name_variant) = tensile_name_target(name, targets)
            .or_else(|| folder_target(path, targets))
            .map_or((None, None), |(t, v)| (Some(t), v));
        let default = if name.ends_with(".txt") { "text" } else { "msgpack" };
        return Some(Artifact {
            family: Some(Family::Tensile),
            role: tensile_role(name).into(),
            library: Some(library.unwrap_or("rocblas").into()),
            format: format(default),
            name_target,
            name_variant,
            ..Artifact::default()
        });
    }
    None
}

/// Rows of the comparison table, in display order: (key, label).
pub const FAMILY_ROWS: &[(&str, &str)] = &[
    ("host-library-code-objects", "device code in host libraries (code objects)"),
    ("standalone-code-objects", "standalone code objects (outside Tensile folders)"),
    ("rocblas-files", "rocBLAS Tensile files"),
    ("hipblaslt-files", "hipBLASLt Tensile files"),
    ("miopen-perf-db-records", "MIOpen perf-DB records"),
    ("miopen-find-db-records", "MIOpen find-DB records"),
    ("miopen-kernel-db-entries", "MIOpen kernel-DB entries"),
    ("miopen-tuning-models", "MIOpen tuning models"),
    ("firmware-blobs", "firmware blobs"),
    ("device-lib-bitcode", "device-lib bitcode files"),
];

/// Per family row, per target: how much the tree holds.
pub fn families_table(files: &[FileRecord]) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut t: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut add = |row: &str, target: &str, n: u64| {
        if n > 0 {
            *t.entry(row.to_string()).or_default().entry(target.to_string()).or_default() += n;
        }
    };
    for f in files {
        let art = f.artifact.as_ref();
        let row = match art.and_then(|a| a.family) {
            None if f.kind == Kind::HostElf => Some("host-library-code-objects"),
            None => Some("standalone-code-objects"),
            _ => None,
        };
        if let Some(row) = row {
            for c in &f.code_objects {
                add(row, &c.processor, 1);
            }
        }
        let Some(a) = art else { continue };
        let row = match (a.family, a.role.as_str()) {
            (Some(Family::Tensile), _) if a.library.as_deref() == Some("hipblaslt") => "hipblaslt-files",
            (Some(Family::Tensile), _) => "rocblas-files",
            (Some(Family::Miopen), "perf-db") => "miopen-perf-db-records",
            (Some(Family::Miopen), "find-db") => "miopen-find-db-records",
            (Some(Family::Miopen), "kernel-db") => "miopen-kernel-db-entries",
            (Some(Family::Miopen), "tuning-model") => "miopen-tuning-models",
            (Some(Family::Firmware), _) => "firmware-blobs",
            (Some(Family::Bitcode), _) => "device-lib-bitcode",
            _ => continue,
        };
        let n = if row.ends_with("records") || row.ends_with("entries") { a.records.unwrap_or(0) } else { 1 };
        for target in a.targets() {
            add(row, &target, n);
        }
    }
    t
}

/// Joins a link's target to the folder holding the link, resolving `.` and `..` lexically.
fn link_destination(link: &RelPath, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut out: Vec<String> =
        Path::new(&link.path).parent()?.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    for part in Path::new(target).components() {
        match part {
            Component::Normal(p) => out.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop()?;
            }
            _ => {}
        }
    }
    Some(out.join("/"))
}

/// Files and links whose name claims a target their content does not serve. Content means
/// what the bytes say (code objects, Tensile hardware rows), never another file's name.
pub fn mismatches(files: &[FileRecord], links: &[LinkRecord]) -> Vec<Mismatch> {
    let mut out = BTreeSet::new();
    let by_path: BTreeMap<(usize, &str), &FileRecord> =
        files.iter().map(|f| ((f.path.root, f.path.path.as_str()), f)).collect();
    let link_by_path: BTreeMap<(usize, &str), &LinkRecord> =
        links.iter().map(|l| ((l.path.root, l.path.path.as_str()), l)).collect();
    for f in files {
        let Some(a) = &f.artifact else { continue };
        if let (Some(name), Some(content)) = (&a.name_target, &a.content_targets) {
            // An index with a row for any processor serves whatever device loads it.
            if !content.is_empty() && !content.contains(name) && !a.any_processor {
                out.insert(Mismatch {
                    path: f.path.clone(),
                    name_target: name.clone(),
                    content_targets: content.clone(),
                    via_link: None,
                });
            }
        }
    }
    for l in links {
        let Some(name) = l.artifact.as_ref().and_then(|a| a.name_target.clone()) else { continue };
        // Follow links to links, a few hops at most.
        let (mut at, mut dest) = (l.path.clone(), link_destination(&l.path, &l.target));
        for _ in 0..8 {
            let Some(d) = dest.clone() else { break };
            if let Some(next) = link_by_path.get(&(at.root, d.as_str())) {
                at = next.path.clone();
                dest = link_destination(&next.path, &next.target);
                continue;
            }
            if let Some(file) = by_path.get(&(at.root, d.as_str())) {
                // Only content can convict a name: a link to a file known only by its own name
                // (firmware, which linux-firmware shares across chips by links on purpose;
                // Tensile sub-libraries) proves nothing.
                let served =
                    file.artifact.as_ref().and_then(|a| a.content_targets.clone()).unwrap_or_default();
                let any = file.artifact.as_ref().is_some_and(|a| a.any_processor);
                if !served.is_empty() && !served.contains(&name) && !any {
                    out.insert(Mismatch {
                        path: l.path.clone(),
                        name_target: name.clone(),
                        content_targets: served,
                        via_link: Some(d),
                    });
                }
            }
            break;
        }
    }
    out.into_iter().collect()
}

/// The family a link's name places it in (links have no content of their own).
pub fn detect_link(path: &Path, targets: &Targets) -> Option<Artifact> {
    detect(path, Content::Link, targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Targets {
        Targets::builtin()
    }

    #[test]
    fn tensile_names() {
        let t = t();
        let got = |n: &str| tensile_name_target(n, &t);
        assert_eq!(got("TensileLibrary_lazy_gfx1032.dat"), Some(("gfx1032".into(), None)));
        assert_eq!(got("Kernels.so-000-gfx90a-xnack+.hsaco"), Some(("gfx90a".into(), Some("xnack+".into()))));
        assert_eq!(
            got("TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1032.hsaco"),
            Some(("gfx1032".into(), None))
        );
        assert_eq!(got("TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat"), None);
        assert_eq!(got("TensileLibrary_gfx11-generic.co"), Some(("gfx11-generic".into(), None)));
        assert_eq!(tensile_role("TensileLibrary_lazy_gfx1032.dat"), "lazy-index");
        assert_eq!(tensile_role("TensileLibrary_gfx90a.dat"), "index");
        assert_eq!(tensile_role("TensileLibrary.dat"), "merged-index");
        assert_eq!(
            tensile_role("TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat"),
            "fallback-library"
        );
        assert_eq!(
            tensile_role("TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1032.hsaco"),
            "fallback-code"
        );
        assert_eq!(tensile_role("TensileLibrary_lazy_gfx1100.dat.zlib"), "lazy-index");
    }

    #[test]
    fn per_arch_folders() {
        let t = t();
        let p = Path::new("/opt/rocm/lib/rocblas/library/gfx90a-xnack+/TensileLibrary_Type_x.dat");
        assert_eq!(folder_target(p, &t), Some(("gfx90a".into(), Some("xnack+".into()))));
        let a = detect(p, Content::File(Kind::Other, b"text"), &t).expect("tensile");
        assert_eq!((a.name_target.as_deref(), a.role.as_str()), (Some("gfx90a"), "sub-library"));
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
        assert_eq!(detect(p, Content::Link, &t).map(|a| a.format), Some("link".into()));
    }

    #[test]
    fn text_databases_must_read_as_text() {
        let t = t();
        let p = Path::new("/opt/rocm/share/miopen/db/gfx900_56.db");
        assert!(detect(p, Content::File(Kind::Other, b"\x00\x01binary"), &t).is_none());
        assert_eq!(
            detect(p, Content::File(Kind::Other, b"1-1-1=Solver:1,2\n"), &t).map(|a| a.format),
            Some("text".into())
        );
        assert_eq!(
            detect(p, Content::File(Kind::Sqlite, b"SQLite format 3\0"), &t).map(|a| a.format),
            Some("sqlite".into())
        );
        let k = Path::new("/opt/rocm/share/miopen/db/gfx90a68.kdb");
        assert!(detect(k, Content::File(Kind::Other, b"text"), &t).is_none());
        assert_eq!(detect(k, Content::Link, &t).map(|a| a.role), Some("kernel-db".into()));
    }

    #[test]
    fn link_destinations() {
        let l = RelPath { root: 0, path: "lib/rocblas/library/a.dat".into(), path_hex: None };
        assert_eq!(link_destination(&l, "b.dat").as_deref(), Some("lib/rocblas/library/b.dat"));
        assert_eq!(link_destination(&l, "../x/c.dat").as_deref(), Some("lib/rocblas/x/c.dat"));
        assert_eq!(link_destination(&l, "/abs"), None);
    }
}
