//! Findings: ways an install is broken as shipped, seen from its files alone, with no GPU.
//!
//! Each rule is read from the library's source, and each has a fixture reproducing the public
//! case it comes from (tests/integration/findings.rs):
//! - **host ↔ Tensile** (TheRock#5179): rocBLAS needs, for a GPU, both its own code objects
//!   (its host library's `.hip_fatbin`, loaded by clr `hip_fatbin.cpp`) and a Tensile index
//!   (rocBLAS `library/src/tensile_host.cpp` `TensileHost::initialize` aborts without one). A
//!   target on one side only is a GPU that loads the library and then fails.
//! - **Tensile names** (TheRock#7790): Tensile's `PlaceholderLibrary::loadPlaceholderLibrary`
//!   opens `<prefix>.dat` and `getCodeObjectFileName` asks for `<prefix>.co`, `<prefix>.hsaco`,
//!   or `<prefix>_<arch>.hsaco` when the prefix names a fallback library
//!   (Tensile/Source/lib/include/Tensile/PlaceholderLibrary.hpp). So `…_fallback_<arch>.dat`
//!   is never opened, and a `<prefix>_fallback_<arch>.hsaco` without its `<prefix>_fallback.dat`
//!   is reached through a file rocBLAS asks for and does not find (an ENOENT, then a crash in
//!   #7790). Other pairings vary with the Tensile version (xnack-suffixed source kernels,
//!   `Kernels.so-*` bundles) and are not judged by name.
//! - **siblings** (pytorch#179865: a nightly dropped gfx900 from its rocBLAS, not from
//!   libtorch_hip): a library lacking a target that at least half of the other device-code
//!   libraries of its install have fails on that GPU while they run.
//! - **names that lie**: files named for a target their content does not serve.

use std::collections::{BTreeMap, BTreeSet};

use super::install::{install_of, Install};
use crate::families::cataloger;
use crate::model::{Component, Container, Family, FileRecord, Finding, FindingKind, RelPath, Role, Snapshot};
use crate::parse::magic::Kind;
use crate::vocab::target_id::{DeviceTarget, Setting};
use crate::vocab::targets::Targets;
use crate::vocab::verdict::Status;

/// Every finding of a snapshot, sorted by kind, then library.
pub fn findings(snap: &Snapshot, targets: &Targets) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(host_tensile(snap, targets));
    out.extend(tensile_names(snap));
    out.extend(siblings(snap, targets));
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

/// A folder's path, ending in `/`, relative to its root.
fn folder(root: usize, dir: &str) -> RelPath {
    RelPath { root, path: format!("{dir}/"), path_hex: None }
}

fn root_of(snap: &Snapshot, root: usize) -> &str {
    snap.roots.get(root).map_or("", String::as_str)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The library a host ELF is, by its name: rocBLAS or hipBLASLt (`librocblas.so.4`,
/// `rocblas.dll`), the two that load Tensile folders.
fn host_component(f: &FileRecord) -> Option<Component> {
    let name = file_name(&f.path.path).to_ascii_lowercase();
    let name = name.strip_prefix("lib").unwrap_or(&name);
    [Component::Rocblas, Component::Hipblaslt].into_iter().find(|c| {
        name.strip_prefix(c.name()).is_some_and(|rest| rest.starts_with(".so") || rest.starts_with(".dll"))
    })
}

/// The processors a host library has code built for (generic targets aside).
fn host_targets(f: &FileRecord, targets: &Targets) -> BTreeSet<String> {
    f.code_objects
        .iter()
        .filter(|c| c.container != Container::OffloadBinary)
        .map(|c| c.processor.clone())
        .filter(|p| !targets.by_name(p).is_some_and(|t| t.is_generic()))
        .collect()
}

fn sorted(set: impl IntoIterator<Item = String>, targets: &Targets) -> Vec<String> {
    let mut v: Vec<String> = set.into_iter().collect();
    targets.sort(&mut v);
    v
}

/// A Tensile folder: where it is, whose it is, and the archs its per-arch indexes are named for.
struct TensileFolder {
    root: usize,
    dir: String,
    install: Install,
    component: Component,
    indexed: BTreeSet<String>,
}

fn tensile_folders(snap: &Snapshot) -> Vec<TensileFolder> {
    let mut by_dir: BTreeMap<(usize, String), TensileFolder> = BTreeMap::new();
    for f in &snap.files {
        let Some(a) = f.artifact.as_ref().filter(|a| a.family == Some(Family::Tensile)) else { continue };
        let Some(dir) = cataloger(Family::Tensile).library_dir(&f.path.path) else { continue };
        let rel = crate::model::RelPath { root: f.path.root, path: dir.clone(), path_hex: None };
        let shown = format!("{}/", rel.display(&snap.roots));
        let slot = by_dir.entry((f.path.root, dir.clone())).or_insert_with(|| TensileFolder {
            root: f.path.root,
            dir,
            install: install_of(root_of(snap, f.path.root), &shown),
            component: a.library.unwrap_or(Component::Rocblas),
            indexed: BTreeSet::new(),
        });
        if matches!(a.role, Role::LazyIndex | Role::Index) {
            slot.indexed.extend(a.name_target.clone());
        }
    }
    by_dir.into_values().collect()
}

/// Host libraries whose code objects and Tensile library disagree on targets: a target the
/// library is built for that no index serves (judged as `check` judges it, so a merged index
/// with fallback rows for any GPU serves it), or a per-arch index for a target the library
/// has no code for.
fn host_tensile(snap: &Snapshot, targets: &Targets) -> Vec<Finding> {
    let folders = tensile_folders(snap);
    let mut out = Vec::new();
    for f in snap.files.iter().filter(|f| f.kind == Kind::HostElf) {
        let Some(component) = host_component(f) else { continue };
        let shown = f.path.display(&snap.roots);
        let install = install_of(root_of(snap, f.path.root), &shown);
        let host = host_targets(f, targets);
        let all: BTreeSet<String> = f.code_objects.iter().map(|c| c.processor.clone()).collect();
        let has_code = |t: &str| {
            all.contains(t)
                || targets.by_name(t).and_then(|x| x.generic.as_ref()).is_some_and(|g| all.contains(g))
        };
        for folder in folders.iter().filter(|d| d.install == install && d.component == component) {
            if host.is_empty() {
                continue;
            }
            let lib = super::library(snap, folder.root, &folder.dir, targets);
            let no_index: Vec<String> = host
                .iter()
                .filter(|t| {
                    let dev = DeviceTarget::new(t, Setting::Any, Setting::Any);
                    super::tensile::verdict(&lib, &dev).status == Status::Missing
                })
                .cloned()
                .collect();
            let no_index = sorted(no_index, targets);
            let no_code = sorted(folder.indexed.iter().filter(|t| !has_code(t)).cloned(), targets);
            let paths = vec![f.path.clone(), self::folder(folder.root, &folder.dir)];
            if !no_index.is_empty() {
                out.push(Finding {
                    kind: FindingKind::HostTensileMismatch,
                    library: f.path.clone(),
                    targets: no_index.clone(),
                    paths: paths.clone(),
                    why: format!(
                        "built for {} but no Tensile index serves {}: on such a GPU the library loads, then its first GEMM aborts (TensileHost::initialize finds no TensileLibrary for the arch)",
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

/// The arch a name ends with (`…_fallback_gfx1151` → `gfx1151`).
fn arch_suffix(base: &str) -> Option<&str> {
    let (_, arch) = base.rsplit_once('_')?;
    arch.starts_with("gfx").then_some(arch)
}

/// Tensile files rocBLAS never opens, and files it opens that are not there.
fn tensile_names(snap: &Snapshot) -> Vec<Finding> {
    let mut by_dir: BTreeMap<(usize, String), Vec<&FileRecord>> = BTreeMap::new();
    for f in &snap.files {
        let Some(a) = f.artifact.as_ref().filter(|a| a.family == Some(Family::Tensile)) else { continue };
        if a.library != Some(Component::Rocblas) {
            continue;
        }
        if let Some(dir) = cataloger(Family::Tensile).library_dir(&f.path.path) {
            by_dir.entry((f.path.root, dir)).or_default().push(f);
        }
    }
    by_dir.into_iter().flat_map(|((root, dir), files)| folder_names(root, &dir, &files)).collect()
}

/// One rocBLAS folder's name findings.
fn folder_names(root: usize, dir: &str, files: &[&FileRecord]) -> Vec<Finding> {
    let names: BTreeSet<&str> = files.iter().map(|f| file_name(&f.path.path)).collect();
    let lazy = files.iter().any(|f| f.artifact.as_ref().is_some_and(|a| a.role == Role::LazyIndex));
    let place = folder(root, dir);
    let (mut unopened, mut missing) = (Vec::new(), BTreeSet::new());
    let mut archs: BTreeSet<String> = BTreeSet::new();
    for f in files {
        let (name, role) = (file_name(&f.path.path), f.artifact.as_ref().map(|a| a.role));
        let base = name.trim_end_matches(".dat").trim_end_matches(".hsaco").trim_end_matches(".co");
        match role {
            // `<prefix>_fallback_<arch>.dat`: Tensile opens `<prefix>_fallback.dat` only.
            Some(Role::FallbackLibrary) if arch_suffix(base).is_some() => {
                unopened.push(name.to_string());
                archs.extend(arch_suffix(base).map(String::from));
            }
            // `<prefix>_fallback_<arch>.hsaco` is found through `<prefix>_fallback.dat`.
            Some(Role::FallbackCode) if lazy => {
                if let Some(arch) = arch_suffix(base) {
                    let dat = format!("{}.dat", &base[..base.len() - arch.len() - 1]);
                    if !names.contains(dat.as_str()) {
                        missing.insert(dat);
                        archs.insert(arch.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let archs: Vec<String> = archs.into_iter().collect();
    if !unopened.is_empty() {
        out.push(Finding {
            kind: FindingKind::UnopenedTensileFile,
            library: place.clone(),
            targets: archs.clone(),
            paths: unopened.iter().map(|n| RelPath { root, path: format!("{dir}/{n}"), path_hex: None }).collect(),
            why: format!(
                "{} fallback {} named with an arch suffix: Tensile opens `<prefix>_fallback.dat` and never these",
                unopened.len(),
                if unopened.len() == 1 { "library is" } else { "libraries are" }
            ),
        });
    }
    if !missing.is_empty() {
        out.push(Finding {
            kind: FindingKind::MissingTensileFile,
            library: place,
            targets: archs,
            paths: missing.iter().map(|n| RelPath { root, path: format!("{dir}/{n}"), path_hex: None }).collect(),
            why: format!(
                "rocBLAS asks for {} file{} this folder lacks: the GEMMs that need {} fail to load (in TheRock#7790 an ENOENT, then a crash)",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                if missing.len() == 1 { "it" } else { "them" }
            ),
        });
    }
    out
}

/// A library's name with its digits dropped: builds of one library for two ROCm versions
/// (`libbitsandbytes_rocm64.so`, `libbitsandbytes_rocm72.so`) are alternatives, not siblings.
fn build_family(name: &str) -> String {
    name.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// Libraries lacking targets that at least half of the other device-code libraries shipped
/// beside them (same folder) have; code for a target's generic target counts as having it.
fn siblings(snap: &Snapshot, targets: &Targets) -> Vec<Finding> {
    type Lib = (RelPath, String, BTreeSet<String>, BTreeSet<String>);
    let mut by_folder: BTreeMap<(usize, String), Vec<Lib>> = BTreeMap::new();
    for f in snap.files.iter().filter(|f| f.kind == Kind::HostElf && f.artifact.is_none()) {
        let name = file_name(&f.path.path);
        // The HSA runtime's code objects are its own (image blit kernels), not a library's.
        if name.starts_with("libhsa-runtime64") {
            continue;
        }
        let own = host_targets(f, targets);
        if own.is_empty() {
            continue;
        }
        let all: BTreeSet<String> = f.code_objects.iter().map(|c| c.processor.clone()).collect();
        let dir = f.path.path.rsplit_once('/').map_or(String::new(), |(d, _)| d.to_string());
        by_folder.entry((f.path.root, dir)).or_default().push((f.path.clone(), build_family(name), own, all));
    }
    let mut out = Vec::new();
    for libs in by_folder.values() {
        for (shown, family, _, all) in libs {
            let others: Vec<&BTreeSet<String>> =
                libs.iter().filter(|l| &l.1 != family).map(|l| &l.2).collect();
            if others.is_empty() {
                continue;
            }
            let serves = |t: &str| {
                all.contains(t)
                    || targets.by_name(t).and_then(|x| x.generic.as_ref()).is_some_and(|g| all.contains(g))
            };
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
