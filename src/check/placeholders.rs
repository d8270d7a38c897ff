//! The files a lazy Tensile index names, held against the files beside it (TheRock#7790).
//!
//! A lazy index's rows end in placeholders, `{"type": "Placeholder", "value": P}`. When a
//! problem first reaches one, Tensile opens `P.dat` in the index's own folder
//! (`PlaceholderLibrary.hpp` `loadPlaceholderLibrary`; the folder is set in
//! `Serialization/PlaceholderLibrary.hpp`) and dereferences what it loaded without a check: a
//! missing `P.dat` is a segmentation fault on the first GEMM of that type (TheRock#7790,
//! rocm-libraries#12335). Its kernels come from `P.co` (assembly), `P.hsaco` (source) or, for
//! a fallback library, `P_<arch>.hsaco` (`getCodeObjectFileName`), each also as the `-xnack±`
//! variants Tensile writes for targets with xnack modes. hipBLASLt's TensileLite opens `P.dat` and `P.co` the same way.
//!
//! The judgement goes by what each index names, never by how names look: rocm-libraries#6840
//! (April 2026) moved fallback libraries from one shared `…_fallback.dat` to per-arch
//! `…_fallback_<arch>.dat`, and both generations are whole as long as index and files agree.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::model::{Artifact, Family, Finding, FindingKind, RelPath, Role, Snapshot};
use crate::parse::tensile::MAX_PLACEHOLDERS;
use crate::vocab::verdict::{GapRule, Status, Verdict};

/// Every name the snapshot saw (read, unreadable, or a link), by root, with what it is.
fn present(snap: &Snapshot) -> Vec<(&RelPath, Option<&Artifact>)> {
    let files = snap.files.iter().map(|f| (&f.path, f.artifact.as_ref()));
    let problems = snap.problems.iter().map(|p| (&p.path, None));
    let links = snap.links.iter().map(|l| (&l.path, None));
    files.chain(problems).chain(links).collect()
}

/// The names in one folder, each with what it is.
type Folder<'a> = HashMap<&'a str, Option<&'a Artifact>>;

/// A lazy index that names sub-libraries.
struct LazyIndex<'a> {
    path: &'a RelPath,
    artifact: &'a Artifact,
    /// The processor it is opened for (`TensileLibrary_lazy_<arch>.dat`).
    arch: &'a str,
}

fn lazy_indexes(snap: &Snapshot) -> Vec<LazyIndex<'_>> {
    snap.files
        .iter()
        .filter_map(|f| {
            let a = f.artifact.as_ref().filter(|a| a.family == Some(Family::Tensile))?;
            let name = f.path.file_name();
            let arch = name.strip_prefix("TensileLibrary_lazy_")?.split('.').next()?;
            (a.role == Role::LazyIndex && !a.placeholders.is_empty()).then_some(LazyIndex {
                path: &f.path,
                artifact: a,
                arch,
            })
        })
        .collect()
}

/// Where a folder's file is, as the snapshot names it (`dir` empty at the root).
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// True when a placeholder's kernels have a file: `P.co`, `P.hsaco` or `P_<arch>.hsaco`, each
/// also as its target-feature variants `-xnack-` and `-xnack+` before the extension (Tensile's
/// `TensileCreateLibrary` writes `P-xnack±.hsaco` for source kernels of targets with xnack
/// modes: Debian's rocBLAS 4.4 ships 26 such gfx90a pairs, and its gfx90a fallbacks as
/// `P_gfx90a-xnack±.hsaco`). Any of them counts: the rule must not call a working library
/// broken.
fn kernels_present(folder: &Folder, prefix: &str, arch: &str) -> bool {
    let stems = [prefix.to_string(), format!("{prefix}_{arch}")];
    let mut names = stems.iter().flat_map(|stem| {
        ["", "-xnack-", "-xnack+"]
            .into_iter()
            .flat_map(move |v| ["co", "hsaco"].into_iter().map(move |ext| format!("{stem}{v}.{ext}")))
    });
    names.any(|n| folder.contains_key(n.as_str()))
}

/// The sub-library a placeholder names, if present (`P.dat`, or with the index's own suffix).
fn sub_library<'a>(folder: &Folder<'a>, prefix: &str, suffix: &str) -> Option<Option<&'a Artifact>> {
    [format!("{prefix}.dat"), format!("{prefix}.{suffix}")]
        .iter()
        .find_map(|n| folder.get(n.as_str()).copied())
}

/// Findings for one index: the sub-libraries it names that are absent, and those present
/// whose kernels are absent.
fn index_finding(idx: &LazyIndex, folder: &Folder) -> Option<Finding> {
    let dir = idx.path.dir();
    let suffix = idx.path.file_name().split_once('.').map_or("dat", |(_, s)| s);
    let mut no_library = Vec::new();
    let mut no_kernels = Vec::new();
    for p in &idx.artifact.placeholders {
        let Some(sub) = sub_library(folder, p, suffix) else {
            no_library.push(RelPath {
                root: idx.path.root,
                path: join(dir, &format!("{p}.dat")),
                path_hex: None,
            });
            continue;
        };
        // A sub-library without solutions names no kernels (rocBLAS 6.x gfx1032's SS library).
        let no_solutions = sub.and_then(|a| a.solutions) == Some(0);
        if !no_solutions && !kernels_present(folder, p, idx.arch) {
            let first =
                if p.contains("fallback") { format!("{p}_{}.hsaco", idx.arch) } else { format!("{p}.co") };
            no_kernels.push(RelPath { root: idx.path.root, path: join(dir, &first), path_hex: None });
        }
    }
    if no_library.is_empty() && no_kernels.is_empty() {
        return None;
    }
    let named = idx.artifact.placeholders.len();
    let why = match (no_library.len(), no_kernels.len()) {
        (l, 0) => format!(
            "names {named} sub-libraries; {l} are absent: the first problem that reaches one loads \
             nothing and the library dereferences it (a segmentation fault in loadPlaceholderLibrary)"
        ),
        (0, k) => format!(
            "names {named} sub-libraries; {k} have no code-object file beside them: their kernels \
             fail to load when chosen"
        ),
        (l, k) => format!(
            "names {named} sub-libraries; {l} are absent (a segmentation fault in \
             loadPlaceholderLibrary when reached) and {k} more have no code-object file"
        ),
    };
    no_library.sort();
    no_kernels.sort();
    let mut paths = no_library;
    paths.extend(no_kernels);
    Some(Finding {
        kind: FindingKind::IndexNamesMissing,
        library: idx.path.clone(),
        targets: vec![idx.arch.to_string()],
        paths,
        why,
    })
}

/// True when every lazy index in the folder was read and names its sub-libraries: only then
/// is a file no index names known to be unopened.
fn all_indexes_read(snap: &Snapshot, root: usize, dir: &str, read: &[LazyIndex]) -> bool {
    let here =
        |p: &RelPath| p.root == root && p.dir() == dir && p.file_name().starts_with("TensileLibrary_lazy_");
    // An index read through a link names sub-libraries that were not read here.
    let unread = snap.problems.iter().any(|p| here(&p.path)) || snap.links.iter().any(|l| here(&l.path));
    let indexes = snap.files.iter().filter(|f| here(&f.path)).count();
    // An index with more names than were kept may name the files that look unopened.
    let whole = read.iter().all(|i| i.artifact.placeholders.len() < MAX_PLACEHOLDERS);
    !unread && indexes == read.len() && whole
}

/// Sub-libraries in a folder of lazy indexes that none of them names: never opened.
fn unopened(snap: &Snapshot, root: usize, dir: &str, named: &HashSet<&str>) -> Option<Finding> {
    let mut paths: Vec<RelPath> = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    for f in snap.files.iter().filter(|f| f.path.root == root && f.path.dir() == dir) {
        let Some(a) = f.artifact.as_ref() else { continue };
        if !matches!(a.role, Role::SubLibrary | Role::FallbackLibrary) || a.family != Some(Family::Tensile) {
            continue;
        }
        let stem = f.path.file_name().split_once('.').map_or(f.path.file_name(), |(s, _)| s);
        if !named.contains(stem) {
            paths.push(f.path.clone());
            if let Some(t) = a.name_target.as_ref().filter(|t| !targets.contains(t)) {
                targets.push(t.clone());
            }
        }
    }
    (!paths.is_empty()).then(|| Finding {
        kind: FindingKind::NeverOpened,
        library: RelPath::folder(root, dir),
        why: format!(
            "{} sub-librar{} that no lazy index here names: the library never opens them (a name \
             from another build generation, or a file meant to stand in for a missing one)",
            paths.len(),
            if paths.len() == 1 { "y" } else { "ies" }
        ),
        targets,
        paths,
    })
}

/// Lazy indexes naming files that are absent, and sub-libraries no index names.
pub fn placeholder_findings(snap: &Snapshot) -> Vec<Finding> {
    let present = present(snap);
    let mut folders: BTreeMap<(usize, &str), Vec<LazyIndex>> = BTreeMap::new();
    for idx in lazy_indexes(snap) {
        folders.entry((idx.path.root, idx.path.dir())).or_default().push(idx);
    }
    let mut out = Vec::new();
    for ((root, dir), indexes) in folders {
        let folder: Folder = present
            .iter()
            .filter(|(p, _)| p.root == root && p.dir() == dir)
            .map(|(p, a)| (p.file_name(), *a))
            .collect();
        out.extend(indexes.iter().filter_map(|idx| index_finding(idx, &folder)));
        let named: HashSet<&str> =
            indexes.iter().flat_map(|i| i.artifact.placeholders.iter().map(String::as_str)).collect();
        if all_indexes_read(snap, root, dir, &indexes) {
            out.extend(unopened(snap, root, dir, &named));
        }
    }
    out
}

/// The index a device loads names sub-libraries that are absent.
pub const SUB_LIBRARY_ABSENT: GapRule = GapRule {
    status: Status::Missing,
    consequence: "the index loads, but the first problem that reaches an absent sub-library crashes the process: Tensile dereferences the library that failed to load (a segmentation fault in loadPlaceholderLibrary, TheRock#7790); problems whose sub-libraries are present run",
};

/// The index a device loads names sub-libraries whose code-object files are absent.
pub const KERNELS_ABSENT: GapRule = GapRule {
    status: Status::Missing,
    consequence: "the index loads, but the kernels it selects from a sub-library without its code-object file fail to load (a HIP error on that call)",
};

/// A Tensile folder's verdict held to what the index it loads names: MISSING when that index
/// names absent files (`found`: [`placeholder_findings`] of the snapshot).
pub fn held_to_index(mut v: Verdict, root: usize, found: &[Finding]) -> Verdict {
    let broken = found.iter().find(|f| {
        f.kind == FindingKind::IndexNamesMissing
            && f.library.root == root
            && Some(&f.library.path) == v.loads.as_ref()
    });
    let Some(f) = broken else { return v };
    let rule =
        if f.paths.iter().any(|p| p.path.ends_with(".dat")) { &SUB_LIBRARY_ABSENT } else { &KERNELS_ABSENT };
    v.status = rule.status;
    v.detail
        .push_str(&format!("; but the index {}", f.why.split_once(':').map_or(f.why.as_str(), |(w, _)| w)));
    v.consequence = Some(rule.consequence.to_string());
    v
}
