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

use crate::families::tensile::{KERNELS_ABSENT, SUB_LIBRARY_ABSENT};
use crate::model::{Artifact, Family, Finding, FindingKind, RelPath, Role, Snapshot};
use crate::vocab::verdict::Verdict;

/// A lazy index that names sub-libraries.
struct LazyIndex<'a> {
    path: &'a RelPath,
    artifact: &'a Artifact,
    /// The processor it is opened for (`TensileLibrary_lazy_<arch>.dat`).
    arch: &'a str,
}

/// A name in a folder of lazy indexes.
#[derive(Clone, Copy)]
struct Entry<'a> {
    path: &'a RelPath,
    /// What it is, when it was read as a file.
    artifact: Option<&'a Artifact>,
    /// It is a file the scan read (not a link, nor a file that could not be read).
    read: bool,
}

/// A folder holding lazy indexes: the indexes that name sub-libraries, and every name in it.
#[derive(Default)]
struct Folder<'a> {
    indexes: Vec<LazyIndex<'a>>,
    names: HashMap<&'a str, Entry<'a>>,
}

const LAZY: &str = "TensileLibrary_lazy_";

/// The folders with lazy indexes that name sub-libraries, each with every name in it (files
/// read, files that could not be read, links), in one pass over the snapshot.
fn folders(snap: &Snapshot) -> BTreeMap<(usize, &str), Folder<'_>> {
    let mut out: BTreeMap<(usize, &str), Folder> = BTreeMap::new();
    for f in &snap.files {
        let Some(a) = f.artifact.as_ref().filter(|a| a.family == Some(Family::Tensile)) else { continue };
        let arch = f.path.file_name().strip_prefix(LAZY).and_then(|n| n.split('.').next());
        if let (Some(arch), Role::LazyIndex, false) = (arch, a.role, a.placeholders().is_empty()) {
            let idx = LazyIndex { path: &f.path, artifact: a, arch };
            out.entry((f.path.root, f.path.dir())).or_default().indexes.push(idx);
        }
    }
    let files = snap.files.iter().map(|f| Entry { path: &f.path, artifact: f.artifact.as_ref(), read: true });
    let problems = snap.problems.iter().map(|p| Entry { path: &p.path, artifact: None, read: false });
    let links = snap.links.iter().map(|l| Entry { path: &l.path, artifact: None, read: false });
    for e in files.chain(problems).chain(links) {
        if let Some(folder) = out.get_mut(&(e.path.root, e.path.dir())) {
            // A file that was read and also has a problem counts as not read.
            let slot = folder.names.entry(e.path.file_name()).or_insert(e);
            slot.read &= e.read;
            slot.artifact = slot.artifact.or(e.artifact);
        }
    }
    out
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
    names.any(|n| folder.names.contains_key(n.as_str()))
}

/// The sub-library a placeholder names, if present (`P.dat`, or with the index's own suffix),
/// and what it is when it was read.
fn sub_library<'a>(folder: &Folder<'a>, prefix: &str, suffix: &str) -> Option<Option<&'a Artifact>> {
    [format!("{prefix}.dat"), format!("{prefix}.{suffix}")]
        .iter()
        .find_map(|n| folder.names.get(n.as_str()).map(|e| e.artifact))
}

/// Findings for one index: the sub-libraries it names that are absent, and those present
/// whose kernels are absent.
fn index_finding(idx: &LazyIndex, folder: &Folder) -> Option<Finding> {
    let suffix = idx.path.file_name().split_once('.').map_or("dat", |(_, s)| s);
    let mut no_library = Vec::new();
    let mut no_kernels = Vec::new();
    for p in idx.artifact.placeholders() {
        let Some(sub) = sub_library(folder, p, suffix) else {
            no_library.push(idx.path.beside(&format!("{p}.dat")));
            continue;
        };
        // A sub-library without solutions names no kernels (rocBLAS 6.x gfx1032's SS library).
        let no_solutions = sub.and_then(|a| a.tensile.as_ref()?.solutions) == Some(0);
        if !no_solutions && !kernels_present(folder, p, idx.arch) {
            let first =
                if p.contains("fallback") { format!("{p}_{}.hsaco", idx.arch) } else { format!("{p}.co") };
            no_kernels.push(idx.path.beside(&first));
        }
    }
    if no_library.is_empty() && no_kernels.is_empty() {
        return None;
    }
    let named = idx.artifact.placeholders().len();
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
fn all_indexes_read(folder: &Folder) -> bool {
    let lazy = folder.names.iter().filter(|(n, _)| n.starts_with(LAZY));
    // One read through a link, or not read, names sub-libraries not seen here.
    let (mut files, mut unread) = (0, false);
    for (_, e) in lazy {
        files += usize::from(e.read);
        unread |= !e.read;
    }
    // (One with more names than were kept has a problem: it counts as not read.)
    !unread && files == folder.indexes.len()
}

/// Sub-libraries in a folder of lazy indexes that none of them names: never opened.
fn unopened(folder: &Folder, root: usize, dir: &str) -> Option<Finding> {
    let named: HashSet<&str> =
        folder.indexes.iter().flat_map(|i| i.artifact.placeholders().iter().map(String::as_str)).collect();
    let mut never: Vec<(&RelPath, &Artifact)> = (folder.names.iter())
        .filter_map(|(name, e)| {
            let a = e.artifact.filter(|a| a.family == Some(Family::Tensile))?;
            let stem = name.split_once('.').map_or(*name, |(s, _)| s);
            let sub = matches!(a.role, Role::SubLibrary | Role::FallbackLibrary);
            (sub && !named.contains(stem)).then_some((e.path, a))
        })
        .collect();
    never.sort_by(|a, b| a.0.cmp(b.0));
    let mut targets: Vec<String> = Vec::new();
    for t in never.iter().filter_map(|(_, a)| a.name_target.as_ref()) {
        if !targets.contains(t) {
            targets.push(t.clone());
        }
    }
    let paths: Vec<RelPath> = never.into_iter().map(|(p, _)| p.clone()).collect();
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
    let mut out = Vec::new();
    for ((root, dir), folder) in folders(snap) {
        out.extend(folder.indexes.iter().filter_map(|idx| index_finding(idx, &folder)));
        if all_indexes_read(&folder) {
            out.extend(unopened(&folder, root, dir));
        }
    }
    out
}

/// A Tensile folder's verdict held to what the index it loads names: MISSING when that index
/// names absent files (`found`: the snapshot's findings, where [`placeholder_findings`] put
/// them when it was scanned).
pub fn held_to_index(mut v: Verdict, root: usize, found: &[Finding]) -> Verdict {
    let broken = found.iter().find(|f| {
        f.kind == FindingKind::IndexNamesMissing
            && f.library.root == root
            && Some(&f.library.path) == v.loads.as_ref()
    });
    let Some(f) = broken else { return v };
    let rule =
        if f.paths.iter().any(|p| p.path.ends_with(".dat")) { &SUB_LIBRARY_ABSENT } else { &KERNELS_ABSENT };
    v.detail
        .push_str(&format!("; but the index {}", f.why.split_once(':').map_or(f.why.as_str(), |(w, _)| w)));
    v.apply(rule, "");
    v
}
