//! Findings: ways an install is broken as shipped, seen from its files alone, with no GPU.
//!
//! Each rule is read from the library's source, and each has a fixture reproducing the public
//! case it comes from (tests/integration/findings.rs):
//! - **host ↔ Tensile** (TheRock#5179): rocBLAS needs, for a GPU, both its own code objects
//!   (its host library's `.hip_fatbin`, loaded by clr `hip_fatbin.cpp`) and a Tensile index
//!   (rocBLAS `library/src/tensile_host.cpp` `TensileHost::initialize` aborts without one). A
//!   target on one side only is a GPU that loads the library and then fails.
//! - **what lazy indexes name** (TheRock#7790: a sub-library under another generation's name,
//!   a segmentation fault): judged by the placeholders each index holds, never by how names
//!   look (see [`super::placeholders`]).
//! - **siblings** (pytorch#179865: a nightly dropped gfx900 from its rocBLAS, not from
//!   libtorch_hip): a library lacking a target that at least half of the other device-code
//!   libraries of its install have fails on that GPU while they run.
//! - **names that lie**: files named for a target their content does not serve.

use std::collections::{BTreeMap, BTreeSet};

use super::{registrable, serves_processor, Library, Place};
use crate::model::{
    Artifact, Component, DeclaredTargets, Family, FileRecord, Finding, FindingKind, RelPath, Role, Snapshot,
};
use crate::parse::Depth;
use crate::vocab::runtime::{generic_of, Runtime};
use crate::vocab::target_id::{DeviceTarget, Setting};
use crate::vocab::targets::Targets;
use crate::vocab::verdict::LibraryKind;
use crate::vocab::verdict::Status;

/// The findings of a snapshot read to `depth`: every one for a scan's facts; for `check`'s
/// tables, those a verdict reads (lazy indexes that name absent files,
/// [`super::placeholders::held_to_index`]) and no others.
pub fn findings_to(snap: &Snapshot, libs: &[Library], targets: &Targets, depth: Depth<'_>) -> Vec<Finding> {
    match depth {
        Depth::Facts => findings(snap, libs, targets),
        Depth::Tables { .. } => {
            let mut out = super::placeholders::placeholder_findings(snap);
            out.retain(|f| f.kind == FindingKind::IndexNamesMissing);
            out.sort();
            out
        }
    }
}

/// Every finding of a snapshot with libraries `libs`, sorted by kind, then library.
fn findings(snap: &Snapshot, libs: &[Library], targets: &Targets) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(host_tensile(snap, libs, targets));
    out.extend(siblings(snap, libs, targets));
    out.extend(super::placeholders::placeholder_findings(snap));
    out.extend(snap.declared_targets.iter().filter_map(|d| declared_differ(snap, d, targets)));
    out.extend(snap.mismatches.iter().map(|m| Finding {
        kind: FindingKind::NameLies,
        library: m.path.clone(),
        targets: vec![m.name_target.clone()],
        paths: vec![m.path.clone()],
        why: format!(
            "named for {}, but its content serves {}: a tool or person trusting the name is misled",
            m.name_target,
            m.content_targets.join(", ")
        ),
    }));
    out.sort();
    out
}

/// A TheRock install whose declared targets (`dist_info.json`) and the device code of its
/// libraries differ: a declared target no code serves (its own or its generic target's, as the
/// runtime falls back, `vocab::runtime::generic_of`) fails on that GPU; code for targets it
/// does not declare is code the build was not asked for. Only the install's `lib/` counts:
/// TheRock builds its tests for every target whatever it declares (therock_subproject.cmake
/// `USE_TEST_AMDGPU_TARGETS`, which "does not affect dist_info.json"), and the HSA runtime's
/// own code objects serve every target the runtime knows. An install with no library code
/// (a runtime-only copy, a wheel of the core) says nothing.
fn declared_differ(snap: &Snapshot, d: &DeclaredTargets, targets: &Targets) -> Option<Finding> {
    let prefix = d.path.path.strip_suffix(crate::parse::therock::DIST_INFO)?;
    let lib = format!("{prefix}lib/");
    let found: BTreeSet<&str> = snap
        .files
        .iter()
        .filter(|f| f.path.root == d.path.root && f.path.path.starts_with(&lib))
        .flat_map(|f| f.code_objects.iter().filter(move |c| !crate::families::runtime_own(f, c)))
        .map(|c| c.processor.as_str())
        .collect();
    if found.is_empty() {
        return None;
    }
    let served = |t: &str| found.contains(t) || generic_of(t, targets).is_some_and(|g| found.contains(g));
    let lacking: Vec<String> = d.targets.iter().filter(|t| !served(t)).cloned().collect();
    let serves_declared = |g: &str| d.targets.iter().any(|t| generic_of(t, targets) == Some(g));
    let mut extra: Vec<String> = found
        .iter()
        .filter(|t| !d.targets.iter().any(|x| x == *t) && !serves_declared(t))
        .map(|t| t.to_string())
        .collect();
    targets.sort(&mut extra);
    if lacking.is_empty() && extra.is_empty() {
        return None;
    }
    let mut why = Vec::new();
    if !lacking.is_empty() {
        why.push(format!(
            "declares {} but no library here has code for {}: such a GPU finds none",
            lacking.join(", "),
            if lacking.len() == 1 { "it" } else { "them" }
        ));
    }
    if !extra.is_empty() {
        why.push(format!("ships code for {}, which it does not declare", extra.join(", ")));
    }
    let mut all: Vec<String> = lacking.into_iter().chain(extra).collect();
    targets.sort(&mut all);
    let folder = RelPath { root: d.path.root, path: prefix.to_string(), path_hex: None };
    Some(Finding {
        kind: FindingKind::DeclaredTargetsDiffer,
        library: folder,
        targets: all,
        paths: vec![d.path.clone()],
        why: format!("TheRock's dist_info.json {}", why.join("; ")),
    })
}

/// The model's host libraries with their files (ELF or PE, with device code of their own).
fn host_libraries<'s>(
    snap: &'s Snapshot,
    libs: &'s [Library],
) -> impl Iterator<Item = (&'s Library, &'s FileRecord)> {
    libs.iter().filter(|l| l.kind == LibraryKind::HostLibrary).filter_map(|l| match l.place {
        Place::Code(i) => snap.files.get(i).map(|f| (l, f)),
        _ => None,
    })
}

/// The library a host ELF is, by its name: rocBLAS or hipBLASLt (`librocblas.so.4`,
/// `rocblas.dll`), the two that load Tensile folders.
fn host_component(f: &FileRecord) -> Option<Component> {
    let name = f.path.file_name().to_ascii_lowercase();
    let name = name.strip_prefix("lib").unwrap_or(&name);
    [Component::Rocblas, Component::Hipblaslt].into_iter().find(|c| {
        name.strip_prefix(c.name()).is_some_and(|rest| rest.starts_with(".so") || rest.starts_with(".dll"))
    })
}

/// The processors a host library has code built for (generic targets aside).
fn host_targets(f: &FileRecord, targets: &Targets) -> BTreeSet<String> {
    f.code_objects
        .iter()
        .filter(|c| registrable(c))
        .map(|c| c.processor.clone())
        .filter(|p| !targets.by_name(p).is_some_and(|t| t.is_generic()))
        .collect()
}

fn sorted(set: impl IntoIterator<Item = String>, targets: &Targets) -> Vec<String> {
    let mut v: Vec<String> = set.into_iter().collect();
    targets.sort(&mut v);
    v
}

/// A Tensile folder of the model: whose it is, and the archs its per-arch indexes are named for.
struct TensileFolder<'s> {
    lib: &'s Library,
    root: usize,
    dir: &'s str,
    component: Component,
    indexed: BTreeSet<String>,
}

fn tensile_folders<'s>(snap: &'s Snapshot, libs: &'s [Library]) -> Vec<TensileFolder<'s>> {
    libs.iter()
        .filter_map(|lib| {
            let Place::Folder(root, dir, Family::Tensile) = &lib.place else { return None };
            let arts: Vec<&Artifact> =
                lib.files.iter().filter_map(|&i| snap.files.get(i)?.artifact.as_ref()).collect();
            let component = arts.iter().find_map(|a| a.component()).unwrap_or(Component::Rocblas);
            let indexed = arts
                .iter()
                .filter(|a| matches!(a.role, Role::LazyIndex | Role::Index))
                .filter_map(|a| a.name_target.clone())
                .collect();
            Some(TensileFolder { lib, root: *root, dir, component, indexed })
        })
        .collect()
}

/// Host libraries whose code objects and Tensile library disagree on targets: a target the
/// library is built for that no index serves (judged as `check` judges it, so a merged index
/// with fallback rows for any GPU serves it), or a per-arch index for a target the library
/// has no code for.
fn host_tensile(snap: &Snapshot, libs: &[Library], targets: &Targets) -> Vec<Finding> {
    let folders = tensile_folders(snap, libs);
    let mut out = Vec::new();
    for (host_lib, f) in host_libraries(snap, libs) {
        let Some(component) = host_component(f) else { continue };
        let host = host_targets(f, targets);
        let has_code = |t: &str| serves_processor(f, t, targets, host_lib.runtime);
        // rocBLAS looks for its Tensile library from its own folder (tensile_host.cpp
        // `determine_tensile_base_path`: `library/`, `rocblas/library/`, Debian's
        // `rocblas/<version>/library/`): a library elsewhere in the install (an ASAN build in
        // `lib/asan/`) loads another one, and is not paired with it.
        let own_dir = match f.path.dir() {
            "" => String::new(),
            d => format!("{d}/"),
        };
        let loads = |d: &&TensileFolder| d.root == f.path.root && format!("{}/", d.dir).starts_with(&own_dir);
        for folder in folders
            .iter()
            .filter(|d| d.lib.install == host_lib.install && d.component == component)
            .filter(loads)
        {
            if host.is_empty() {
                continue;
            }
            let lib = super::library_of(snap, folder.lib, (folder.root, folder.dir), targets);
            let no_index: Vec<String> = host
                .iter()
                .filter(|t| {
                    let dev = DeviceTarget::new(t, Setting::Any, Setting::Any);
                    crate::families::tensile::verdict(&lib, &dev).status == Status::Missing
                })
                .cloned()
                .collect();
            let no_index = sorted(no_index, targets);
            let no_code = sorted(folder.indexed.iter().filter(|t| !has_code(t)).cloned(), targets);
            let paths = vec![f.path.clone(), RelPath::folder(folder.root, folder.dir)];
            if !no_index.is_empty() {
                out.push(Finding {
                    kind: FindingKind::HostTensileMismatch,
                    library: f.path.clone(),
                    targets: no_index.clone(),
                    paths: paths.clone(),
                    why: format!(
                        "built for {} but its Tensile library cannot serve {} (no index for the arch, or no code files behind it; `check --gpu` says which): on such a GPU the library loads, then its first GEMM fails",
                        no_index.join(", "),
                        if no_index.len() == 1 { "it" } else { "them" }
                    ),
                });
            }
            if !no_code.is_empty() {
                out.push(Finding {
                    kind: FindingKind::HostTensileMismatch,
                    library: f.path.clone(),
                    targets: no_code.clone(),
                    paths,
                    why: format!(
                        "its Tensile library has indexes for {} but the library has no code object for {}: its own kernels fail with hipErrorNoBinaryForGpu, so those Tensile files are never used",
                        no_code.join(", "),
                        if no_code.len() == 1 { "it" } else { "them" }
                    ),
                });
            }
        }
    }
    out
}

/// Libraries built for every target of their release by design (their builds take the whole
/// `GPU_TARGETS`/`PYTORCH_ROCM_ARCH` list), by name without `lib` and the soversion. hipBLASLt,
/// hipSPARSELt and composable-kernel libraries are built for the targets they support only
/// (pytorch#138067): a target missing from them is no break, and they are not compared.
const FULL_ARCH: &[&str] =
    &["rocblas", "rocsolver", "rocsparse", "rocfft", "rocrand", "hiprand", "miopen", "torch_hip"];

/// True for a library built for every target of its release.
fn full_arch(file: &str) -> bool {
    let name = file.to_ascii_lowercase();
    let name = name.strip_prefix("lib").unwrap_or(&name);
    let stem = name.split('.').next().unwrap_or(name);
    FULL_ARCH.contains(&stem)
}

/// A library's name with its digits dropped: builds of one library for two ROCm versions
/// (`libbitsandbytes_rocm64.so`, `libbitsandbytes_rocm72.so`) are alternatives, not siblings.
fn build_family(name: &str) -> String {
    name.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// Libraries built for every target of their release lacking targets that at least half of the
/// other such libraries shipped beside them (same folder) have; code for a target's generic
/// target counts as having it.
fn siblings(snap: &Snapshot, libs: &[Library], targets: &Targets) -> Vec<Finding> {
    type Lib<'s> = (RelPath, String, BTreeSet<String>, &'s FileRecord, Runtime);
    let mut by_folder: BTreeMap<(usize, String), Vec<Lib>> = BTreeMap::new();
    for (lib, f) in host_libraries(snap, libs) {
        let name = f.path.file_name();
        // Only libraries built for every target are held to their siblings' targets (the HSA
        // runtime's code objects are its own, and hipBLASLt & co. are restricted by design).
        if !full_arch(name) {
            continue;
        }
        let own = host_targets(f, targets);
        if own.is_empty() {
            continue;
        }
        let dir = f.path.dir().to_string();
        by_folder.entry((f.path.root, dir)).or_default().push((
            f.path.clone(),
            build_family(name),
            own,
            f,
            lib.runtime,
        ));
    }
    let mut out = Vec::new();
    for libs in by_folder.values() {
        for (shown, family, _, f, rt) in libs {
            let others: Vec<&BTreeSet<String>> =
                libs.iter().filter(|l| &l.1 != family).map(|l| &l.2).collect();
            if others.is_empty() {
                continue;
            }
            let serves = |t: &str| serves_processor(f, t, targets, *rt);
            let candidates: BTreeSet<&String> = others.iter().flat_map(|s| s.iter()).collect();
            let lacking: Vec<String> = candidates
                .into_iter()
                .filter(|t| !serves(t))
                .filter(|t| 2 * others.iter().filter(|s| s.contains(*t)).count() >= others.len())
                .cloned()
                .collect();
            if lacking.is_empty() {
                continue;
            }
            let lacking = sorted(lacking, targets);
            out.push(Finding {
                kind: FindingKind::SiblingLacksTarget,
                library: shown.clone(),
                targets: lacking.clone(),
                paths: vec![shown.clone()],
                why: format!(
                    "has no code for {}, which most of the libraries beside it have: on such a GPU they run and this one fails with hipErrorNoBinaryForGpu",
                    lacking.join(", ")
                ),
            });
        }
    }
    out
}
