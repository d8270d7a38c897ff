//! Tensile libraries: the folders of GEMM kernels rocBLAS and hipBLASLt load at run time
//! (`lib/rocblas/library`, `lib/hipblaslt/library`, Debian's `rocblas/<ver>/library`, per-arch
//! `library/<arch>/` subfolders): indexes (`TensileLibrary_lazy_<arch>.dat`, per-arch and merged
//! `TensileLibrary.dat`), sub-libraries, `_fallback` files, code-object files, hipBLASLt's
//! solution map and ExtOp index.
//!
//! Content decides: a code file serves the processors of its code objects, an index the
//! processors of its hardware rows. `check` follows rocBLAS's lookup (rocBLAS
//! `library/src/tensile_host.cpp` `TensileHost::initialize`: lazy, then per-arch, then merged
//! index) and needs code for the device in the code files; what a gap costs is each rule below,
//! read from the library's source.

use std::collections::BTreeSet;
use std::path::Path;

use super::{file_name, files_of, Cataloger, Content, Item, Library};
use super::{FactsError, Row};
use crate::decode::stream::zlib;
use crate::model::{Artifact, Component, Family, FileRecord, Role, Storage, TensileFacts};
use crate::parse::bundle::MAX_UNCOMPRESSED;
use crate::parse::push_unique;
use crate::parse::tensile::{
    parse_extop_archs, parse_lazy_index, parse_solution_map, parse_tensile_index, solution_count,
};
use crate::vocab::codec::Codec;
use crate::vocab::runtime::loads;
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::verdict::{Cost, GapRule, LibraryKind, Status, Verdict};

/// The Tensile family (rocBLAS and hipBLASLt libraries).
pub struct Tensile;

/// rocBLAS library/src/tensile_host.cpp `TensileHost::initialize` (l.799-842): none of
/// `TensileLibrary_lazy_<arch>.dat`, `TensileLibrary_<arch>.dat`, TensileLibrary.dat exists → the
/// message below, then rocblas_abort() (std::abort) at the first GEMM-type call.
pub const ROCBLAS_NO_INDEX: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "at its first GEMM rocBLAS prints \"rocBLAS error: Cannot read …/TensileLibrary.dat: No such file or directory for GPU arch : <arch>\" and aborts the process",
};

/// rocBLAS tensile_host.cpp `TensileHost::initialize`: the index it opens (the first that exists
/// in its lookup order) does not load — Tensile MessagePack.cpp `LoadLibraryFile` returns null
/// for a truncated or corrupt file — so it prints the message below, then "rocBLAS error: Could
/// not initialize Tensile library", and calls rocblas_abort().
pub const ROCBLAS_INDEX_UNREADABLE: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "at its first GEMM rocBLAS prints \"rocBLAS error: Could not load …\" and \"Could not initialize Tensile library\" and aborts the process",
};

/// rocBLAS tensile_host.cpp l.874-952 and `runContractionProblem` (l.1119-1262): a merged
/// index loads; with no code file for the arch it warns "No paths matched `<path>/*<arch>*co`",
/// and with no row serving it each GEMM prints "rocBLAS error: No Tensile solution found" and
/// returns rocblas_status_not_implemented. Not an abort, but no GEMM runs.
pub const ROCBLAS_MERGED_NO_ROW: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "rocBLAS does not abort, but every GEMM fails: \"rocBLAS error: No Tensile solution found …\" and rocblas_status_not_implemented",
};

/// rocBLAS tensile_host.cpp l.874-952 (merged: "rocBLAS warning: No paths matched
/// `<path>/*<arch>*co`"); lazy: Tensile HipSolutionAdapter `launchKernel` cannot load the code
/// file and the call returns a HIP error converted to a rocBLAS status.
pub const ROCBLAS_NO_CODE: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "the index loads, but the GEMMs it selects fail: their code file is absent (\"rocBLAS warning: No paths matched …*<arch>*co\" or a HIP error per call)",
};

/// Tensile `PlaceholderLibrary.hpp` `loadPlaceholderLibrary`: a lazy index's sub-library
/// (`P.dat`) that is absent loads as null and is dereferenced (TheRock#7790;
/// rocm-libraries#12335). Judged from the index's placeholders (`library::placeholders`).
pub const SUB_LIBRARY_ABSENT: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "the index loads, but the first problem that reaches an absent sub-library crashes the process: Tensile dereferences the library that failed to load (a segmentation fault in loadPlaceholderLibrary, TheRock#7790); problems whose sub-libraries are present run",
};

/// Tensile `PlaceholderLibrary.hpp` `getCodeObjectFileName`: a present sub-library whose
/// code-object file is absent; rocBLAS and hipBLASLt alike fail the call that selects it.
pub const KERNELS_ABSENT: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "the index loads, but the kernels it selects from a sub-library without its code-object file fail to load (a HIP error on that call)",
};

/// hipBLASLt library/src/amd_detail/rocblaslt/src/tensile_host.cpp l.1381-1437: "rocblaslt
/// error: Cannot read …/TensileLibrary_lazy_`<arch>`.dat"; rocblaslt_abort() is commented out;
/// matmuls then return HIPBLAS_STATUS_INVALID_VALUE. rocBLAS (handle.cpp l.252-266) uses hipBLASLt
/// by default only on gfx1200/1201 and falls back to Tensile when it fails (tensile_host.cpp
/// l.1147). PyTorch (aten Context.cpp `blasPreferredBackend`) uses rocBLAS unless its build
/// prefers hipBLASLt for every GPU of the process; ROCm's own PyTorch builds add gfx110x and
/// gfx115x to that list (ROCm/pytorch release branches 2.8 and later).
pub const HIPBLASLT_GAP: GapRule = GapRule {
    cost: Cost::FailsItsUsers,
    consequence: "hipBLASLt does not abort: it prints \"rocblaslt error: Cannot read …TensileLibrary_lazy_<arch>.dat\" and its matmuls return HIPBLAS_STATUS_INVALID_VALUE; rocBLAS falls back to its own GEMMs, and PyTorch uses rocBLAS unless its build prefers hipBLASLt for this GPU (ROCm's own builds do for gfx110x/gfx115x)",
};

/// PyTorch aten/src/ATen/cuda/detail/CUDAHooks.cpp `getHipblasltPreferredArchs` (the
/// targets.toml `pytorch_hipblaslt` rows; gfx1200/gfx1201 from ROCm 6.4, gfx950 from 7.0) and
/// Context.cpp `blasPreferredBackend`: when every GPU of the process is one of these, PyTorch
/// picks hipBLASLt and falls back only for archs missing from `getHipblasltSupportedArchs`,
/// never because the installed library lacks its files. hipBLASLt itself still does not abort,
/// so this is a WARN whose consequence names the failing PyTorch path.
pub const HIPBLASLT_DEFAULT_GAP: GapRule = GapRule {
    cost: Cost::FailsItsUsers,
    consequence: "hipBLASLt does not abort, but PyTorch sends this GPU's GEMMs to hipBLASLt by default (when every GPU of the process is a gfx90a/gfx942/gfx950/gfx1200/gfx1201): its matmuls then fail with HIPBLAS_STATUS_INVALID_VALUE after \"rocblaslt error: Cannot read …TensileLibrary_lazy_<arch>.dat\" unless the program selects rocBLAS (torch.backends.cuda.preferred_blas_library)",
};

const ROWS: &[Row] = &[
    Row {
        key: "rocblas-files",
        label: "rocBLAS Tensile files (indexes, sub-libraries and code-object files alike)",
        column: "rocblas",
        within: None,
        gap: Some(&ROCBLAS_NO_INDEX),
    },
    Row {
        key: "hipblaslt-files",
        label: "hipBLASLt Tensile files (indexes, sub-libraries and code-object files alike)",
        column: "hipblaslt",
        within: None,
        gap: Some(&HIPBLASLT_GAP),
    },
];

const EXTENSIONS: [&str; 6] = [".dat", ".dat.zlib", ".co", ".hsaco", ".yaml", ".txt"];

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

/// The library a path belongs to, by the names in it.
fn component(path: &Path) -> Option<Component> {
    let p = path.to_string_lossy().to_ascii_lowercase();
    if p.contains("hipblaslt") {
        Some(Component::Hipblaslt)
    } else if p.contains("rocblas") || p.contains("tensile") {
        Some(Component::Rocblas)
    } else {
        None
    }
}

/// A Tensile file's role, from the names Tensile and TensileLite write.
fn role(name: &str) -> Role {
    let base = name.trim_end_matches(".zlib");
    if base.starts_with("Kernels.so-") {
        Role::SourceKernels
    } else if base == "TensileManifest.txt" {
        Role::Manifest
    } else if base == "TensileLibrary.dat" || base == "TensileLibrary.yaml" {
        Role::MergedIndex
    } else if base.starts_with("TensileLiteLibrary_lazy_") && base.contains("Mapping") {
        // hipBLASLt: first solution index → code-object library (parse::tensile::SolutionMap).
        Role::SolutionMap
    } else if base.starts_with("hipblasltExtOpLibrary") {
        Role::ExtopIndex
    } else if base.starts_with("TensileLibrary_lazy_") {
        Role::LazyIndex
    } else if base.ends_with(".dat") || base.ends_with(".yaml") {
        let parts = base.trim_end_matches(".dat").trim_end_matches(".yaml").split('_').count();
        match (base.contains("_fallback"), parts) {
            (true, _) => Role::FallbackLibrary,
            (false, 2) if base.starts_with("TensileLibrary_gfx") => Role::Index,
            _ => Role::SubLibrary,
        }
    } else if base.contains("_fallback") {
        Role::FallbackCode
    } else {
        Role::Code
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

/// The folder a Tensile file belongs to: up to its `library` folder (per-arch subfolders
/// included), else its own folder.
pub fn tensile_dir(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.iter().rposition(|p| *p == "library") {
        Some(i) => parts[..=i].join("/"),
        None => parts[..parts.len().saturating_sub(1)].join("/"),
    }
}

/// The component (`rocblas`, `hipblaslt`) of a Tensile folder, from its files.
pub fn component_of(lib: &Library) -> Component {
    files_of(lib, Family::Tensile)
        .iter()
        .find_map(|f| f.artifact.as_ref().and_then(|a| a.component()))
        .unwrap_or_default()
}

/// What a hipBLASLt gap costs on `arch`: more where PyTorch uses hipBLASLt by default.
pub fn hipblaslt_gap(arch: &str, targets: &Targets) -> &'static GapRule {
    if targets.by_name(arch).is_some_and(|t| t.pytorch_hipblaslt) {
        &HIPBLASLT_DEFAULT_GAP
    } else {
        &HIPBLASLT_GAP
    }
}

/// The rule for a library an environment variable names and that does not exist.
pub fn missing_folder_gap(component: Component, arch: &str, targets: &Targets) -> &'static GapRule {
    match component {
        Component::Hipblaslt => hipblaslt_gap(arch, targets),
        Component::Rocblas => &ROCBLAS_NO_INDEX,
    }
}

/// Reads an index's hardware rows into the artifact.
fn index_facts(a: &mut Artifact, item: &Item, problems: &mut Vec<FactsError>) {
    let parse = if a.role == Role::LazyIndex { parse_lazy_index } else { parse_tensile_index };
    let index = match a.format {
        Storage::Msgpack => parse(item.src),
        Storage::Compressed(Codec::Zlib) => parse(&zlib(item.src, (0, item.src.len()), MAX_UNCOMPRESSED)),
        _ => return,
    };
    match index {
        Ok(idx) if idx.library_type.as_deref() == Some("Hardware") => {
            a.content_targets = Some(idx.processors);
            let t = a.tensile_mut();
            t.any_processor = idx.any_processor;
            t.placeholders = idx.placeholders;
            if idx.placeholders_truncated {
                // Not every name was kept: no file of its folder can be called unopened.
                problems.push(FactsError::PlaceholdersCapped { kept: a.placeholders().len() });
            }
        }
        Ok(_) => {}
        Err(e) => {
            // Tensile MessagePack.cpp `LoadLibraryFile` returns no library for a file it cannot
            // parse to the end of its one object ("Unexpected end of file"): it serves nothing.
            a.content_targets = Some(Vec::new());
            a.tensile_mut().unreadable = true;
            problems.push(FactsError::TensileIndex(e));
        }
    }
}

impl Cataloger for Tensile {
    fn family(&self) -> Family {
        Family::Tensile
    }

    fn detect(&self, path: &Path, name: &str, content: Content, targets: &Targets) -> Option<Artifact> {
        let library = component(path);
        let tensile_ext = EXTENSIONS.iter().any(|e| name.ends_with(e));
        if !tensile_ext || !(is_tensile_name(name) || (in_library_folder(path) && library.is_some())) {
            return None;
        }
        let (name_target, name_variant) = tensile_name_target(name, targets)
            .or_else(|| folder_target(path, targets))
            .map_or((None, None), |(t, v)| (Some(t), v));
        let plain = if name.ends_with(".txt") { Storage::Text } else { Storage::Msgpack };
        Some(Artifact {
            family: Some(Family::Tensile),
            role: role(name),
            tensile: Some(TensileFacts {
                library: Some(library.unwrap_or_default()),
                ..TensileFacts::default()
            }),
            format: content.storage(plain),
            name_target,
            name_variant,
            ..Artifact::default()
        })
    }

    /// The processors of its code objects, the hardware rows of an index, the libraries a
    /// hipBLASLt solution map names, the architectures of an ExtOp index.
    fn facts(&self, a: &mut Artifact, item: &Item, problems: &mut Vec<FactsError>) {
        let known = |archs: Vec<String>| -> Vec<String> {
            archs.into_iter().filter_map(|x| item.targets.by_name(&x).map(|t| t.name.clone())).collect()
        };
        if !item.code_objects.is_empty() {
            let mut procs: Vec<String> = Vec::new();
            for c in item.code_objects {
                push_unique(&mut procs, &c.processor);
            }
            a.content_targets = Some(procs);
            return;
        }
        match (a.role, a.format) {
            (Role::SolutionMap, Storage::Msgpack) => match parse_solution_map(item.src) {
                Ok(m) => {
                    let t = a.tensile_mut();
                    t.entries = Some(m.libraries);
                    t.lists_targets = Some(known(m.archs));
                }
                Err(e) => problems.push(FactsError::SolutionMap(e)),
            },
            // Its entries are per architecture, like an index's hardware rows.
            (Role::ExtopIndex, Storage::Msgpack) => match parse_extop_archs(item.src) {
                Ok(archs) => a.content_targets = Some(known(archs)),
                Err(e) => problems.push(FactsError::ExtopIndex(e)),
            },
            (role, _) if role.is_index() => index_facts(a, item, problems),
            (Role::SubLibrary | Role::FallbackLibrary, Storage::Msgpack) => {
                a.tensile_mut().solutions = solution_count(item.head)
            }
            _ => {}
        }
    }

    fn rows(&self) -> &'static [Row] {
        ROWS
    }

    fn tally(&self, _f: &FileRecord, a: &Artifact) -> Option<(&'static str, u64)> {
        match a.component() {
            Some(Component::Hipblaslt) => Some((ROWS[1].key, 1)),
            _ => Some((ROWS[0].key, 1)),
        }
    }

    fn library_dir(&self, path: &str) -> Option<String> {
        Some(tensile_dir(path))
    }

    fn holds_device_code(&self) -> bool {
        true
    }

    fn verdict(&self, lib: &Library, dev: &DeviceTarget) -> Option<Verdict> {
        Some(verdict(lib, dev))
    }

    /// `tensile:rocblas` or `tensile:hipblaslt`.
    fn identity(&self, a: &Artifact) -> String {
        format!("tensile:{}", a.component().unwrap_or_default().name())
    }

    /// Content first: its code objects and the processors its hardware rows name; its name only
    /// where the content says nothing of targets, or serves any processor.
    fn unit_targets(&self, f: &FileRecord, a: &Artifact) -> Vec<(String, Option<u8>)> {
        let mut out: Vec<(String, Option<u8>)> =
            a.content_targets.clone().unwrap_or_default().into_iter().map(|t| (t, None)).collect();
        if f.code_objects.is_empty() && (a.content_targets.is_none() || a.any_processor()) {
            out.extend(a.name_target.clone().map(|t| (t, None)));
        }
        out.extend(f.code_objects.iter().map(|c| (c.target_id.clone(), c.generic_version)));
        out
    }
}

/// An index that may serve the device, in rocBLAS's lookup order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Candidate {
    /// Its place in the lookup order (lazy, per-arch, merged).
    rank: usize,
    path: String,
    serves: bool,
    /// Its hardware rows could not be read: the library fails to load it.
    unreadable: bool,
    /// Why an index named for the device does not serve it.
    note: Option<String>,
}

/// The indexes of a Tensile folder that name `arch`, in rocBLAS's lookup order, and the
/// targets every index of the folder serves.
fn index_candidates(lib: &Library, files: &[&FileRecord], arch: &str) -> (Vec<Candidate>, BTreeSet<String>) {
    let rank = |role: Role| Role::INDEXES.iter().position(|r| *r == role).unwrap_or(9);
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut served: BTreeSet<String> = BTreeSet::new();
    for f in files {
        let Some(a) = f.artifact.as_ref().filter(|a| a.role.is_index()) else { continue };
        served.extend(a.targets());
        if a.any_processor() {
            served.extend(a.name_target.clone());
        }
        let merged = a.role == Role::MergedIndex;
        let named = a.name_target.as_deref() == Some(arch);
        if !named && !merged {
            continue;
        }
        // rocBLAS opens a lazy or per-arch index by the device's name, then evaluates its
        // hardware rows; a `TruePred` row serves whichever device loaded the file.
        let serves = match &a.content_targets {
            Some(c) => c.iter().any(|t| t == arch) || a.any_processor(),
            None => named,
        };
        let unreadable = a.tensile.as_ref().is_some_and(|t| t.unreadable);
        let note = (!serves && named && !unreadable).then(|| {
            let has = a.content_targets.clone().unwrap_or_default();
            let has = if has.is_empty() { "no processor".to_string() } else { has.join(", ") };
            format!("{} is named for {arch}, but its hardware rows name {has}", f.path.path)
        });
        let path = f.path.path.clone();
        candidates.push(Candidate { rank: rank(a.role), path, serves, unreadable, note });
    }
    candidates.extend(link_candidates(lib, arch, rank));
    candidates.sort();
    (candidates, served)
}

/// Links in the folder named as the device's index: believed by what they lead to.
fn link_candidates(lib: &Library, arch: &str, rank: impl Fn(Role) -> usize) -> Vec<Candidate> {
    let snap = lib.snap;
    let lying: BTreeSet<(usize, &str)> =
        snap.mismatches.iter().map(|m| (m.path.root, m.path.path.as_str())).collect();
    let mut out = Vec::new();
    for l in snap.links.iter().filter(|l| l.path.root == lib.root && tensile_dir(&l.path.path) == lib.dir) {
        let Some(a) = &l.artifact else { continue };
        if a.role.is_index() && a.name_target.as_deref() == Some(arch) {
            let lies = lying.contains(&(lib.root, l.path.path.as_str()));
            let note = lies
                .then(|| format!("{} is a link to {}, which serves another target", l.path.path, l.target));
            let path = l.path.path.clone();
            out.push(Candidate { rank: rank(a.role), path, serves: !lies, unreadable: false, note });
        }
    }
    out
}

/// What a Tensile folder holds for one device: the facts its verdict is judged from.
struct Evidence<'s> {
    files: Vec<&'s FileRecord>,
    component: Component,
    /// The index that loads, if any.
    index: Option<String>,
    /// The index the library opens first and cannot read, if one comes before any that serves.
    unreadable: Option<String>,
    /// Why indexes named for the device do not serve it.
    notes: Vec<String>,
    /// Targets every index of the folder serves.
    served: BTreeSet<String>,
    /// Code files holding code the device can load.
    code_files: usize,
    /// Processors of every code object in the folder.
    code_targets: BTreeSet<String>,
}

impl<'s> Evidence<'s> {
    fn gather(lib: &Library<'s>, dev: &DeviceTarget) -> Self {
        let arch = dev.processor.as_str();
        let files = files_of(lib, Family::Tensile);
        let component = lib.component.unwrap_or_else(|| component_of(lib));
        let (candidates, served) = index_candidates(lib, &files, arch);
        // A Tensile code file is one code group: rocBLAS/Tensile loads it with
        // hipModuleLoad, which picks from its bundle as the runtime picks from a fat binary.
        let code = |c: &crate::model::CodeObjectRecord| {
            loads(c.code_target(), dev, lib.targets, lib.runtime).is_some()
        };
        // rocBLAS opens the first index that exists in its lookup order; one it cannot parse
        // fails the library's initialisation, whatever comes after it.
        let first = candidates.iter().find(|c| c.serves || c.unreadable);
        Evidence {
            index: first.filter(|c| c.serves).map(|c| c.path.clone()),
            unreadable: first.filter(|c| c.unreadable).map(|c| c.path.clone()),
            notes: candidates.iter().filter_map(|c| c.note.clone()).collect(),
            code_files: files.iter().filter(|f| f.code_objects.iter().any(code)).count(),
            code_targets: files
                .iter()
                .flat_map(|f| f.code_objects.iter())
                .map(|c| c.processor.clone())
                .collect(),
            files,
            component,
            served,
        }
    }

    fn artifacts(&self, role: Role) -> Vec<&'s Artifact> {
        self.files.iter().filter_map(|f| f.artifact.as_ref()).filter(|a| a.role == role).collect()
    }

    /// The index that loads holds only `TruePred` rows for the device: untuned fallback kernels.
    fn fallback_only(&self, arch: &str) -> bool {
        self.index.as_ref().is_some_and(|i| {
            self.files.iter().any(|f| {
                &f.path.path == i
                    && f.artifact.as_ref().is_some_and(|a| {
                        a.any_processor()
                            && !a.content_targets.as_ref().is_some_and(|c| c.iter().any(|t| t == arch))
                    })
            })
        })
    }

    /// hipBLASLt's solution map names the code-object library of every solution; true when it
    /// names none for `arch`.
    fn unmapped(&self, arch: &str) -> bool {
        let maps = self.artifacts(Role::SolutionMap);
        self.component == Component::Hipblaslt
            && !maps.is_empty()
            && !maps.iter().any(|m| {
                m.tensile
                    .as_ref()
                    .and_then(|t| t.lists_targets.as_ref())
                    .is_some_and(|l| l.iter().any(|t| t == arch))
            })
    }

    /// hipBLASLt's extension operations (AMax, Softmax, LayerNorm) have their own index; true
    /// when it lacks `arch`.
    fn extops_lack(&self, arch: &str) -> bool {
        let extops = self.artifacts(Role::ExtopIndex);
        self.component == Component::Hipblaslt
            && self.index.is_some()
            && !extops.is_empty()
            && extops.iter().all(|e| !e.targets().iter().any(|t| t == arch))
    }
}

/// Targets for people: in the natural order, or "none".
fn list(s: &BTreeSet<String>, targets: &Targets) -> String {
    let mut v: Vec<String> = s.iter().cloned().collect();
    targets.sort(&mut v);
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

/// The gap (if any) and the detail of a Tensile folder for a device.
fn judge(e: &Evidence, dev: &DeviceTarget, targets: &Targets) -> (Option<&'static GapRule>, String) {
    let arch = dev.processor.as_str();
    let hip = e.component == Component::Hipblaslt;
    let n = e.code_files;
    let note = if e.notes.is_empty() { String::new() } else { format!("; {}", e.notes.join("; ")) };
    if let Some(u) = &e.unreadable {
        let rule = if hip { hipblaslt_gap(arch, targets) } else { &ROCBLAS_INDEX_UNREADABLE };
        return (
            Some(rule),
            format!("{u} could not be read (see the problems): no index loads for {arch}{note}"),
        );
    }
    match &e.index {
        // TensileLite MasterSolutionLibrary.hpp: the mapping is read only by
        // `getSolutionByIndex` → `loadLibrary(index)`; `findBestSolution` does not need it.
        Some(i) if n > 0 && e.unmapped(arch) => (
            Some(&HIPBLASLT_GAP),
            format!("{i} serves {arch}, but TensileLiteLibrary_lazy_Mapping.dat names no code-object library for it: solutions chosen by index (algorithm indexes, TunableOp) cannot load their kernels ({n} code-object files hold {arch} code)"),
        ),
        Some(i) if n > 0 && e.fallback_only(arch) => (
            None,
            format!("{} serves any GPU that loads it (TruePred rows: untuned fallback kernels, slower); {n} code-object files hold code for {arch}", file_name(i)),
        ),
        Some(_) if n > 0 => (None, format!("index serves {arch}; {n} code-object files hold code for it")),
        Some(i) => (
            Some(if hip { hipblaslt_gap(arch, targets) } else { &ROCBLAS_NO_CODE }),
            format!("{i} names {arch}, but no code-object file in the library holds code for {}{note}", dev.target_id),
        ),
        None => {
            let code = if e.code_targets.contains(arch) {
                format!("code-object files hold {arch} code ({n}), but no index leads to it")
            } else {
                format!("code-object files hold {}", list(&e.code_targets, targets))
            };
            let merged = !e.artifacts(Role::MergedIndex).is_empty();
            let rule = match (hip, merged) {
                (true, _) => hipblaslt_gap(arch, targets),
                (false, true) => &ROCBLAS_MERGED_NO_ROW,
                (false, false) => &ROCBLAS_NO_INDEX,
            };
            (Some(rule), format!("no Tensile index serves {arch}: indexes serve {}; {code}{note}", list(&e.served, targets)))
        }
    }
}

/// A Tensile library: an index that serves the target, and code objects for it.
pub fn verdict(lib: &Library, dev: &DeviceTarget) -> Verdict {
    let arch = dev.processor.as_str();
    let e = Evidence::gather(lib, dev);
    let (mut rule, mut detail) = judge(&e, dev, lib.targets);
    if e.extops_lack(arch) {
        detail.push_str(&format!(
            "; hipblasltExtOpLibrary.dat has no {arch} kernels: its extension operations (AMax, Softmax, LayerNorm) fail"
        ));
        rule = rule.or(Some(&HIPBLASLT_GAP));
    }
    let mut v = Verdict::judged(lib.display(), LibraryKind::Family(Family::Tensile), rule, detail, arch);
    v.component = Some(e.component);
    v.loads = e.index;
    if v.status != Status::Ok || rule.is_some() {
        let mut available = e.served;
        available.extend(e.code_targets);
        v.available = available.into_iter().collect();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::detect;
    use crate::parse::magic::Kind;

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
        assert_eq!(role("TensileLibrary_lazy_gfx1032.dat"), Role::LazyIndex);
        assert_eq!(role("TensileLibrary_gfx90a.dat"), Role::Index);
        assert_eq!(role("TensileLibrary.dat"), Role::MergedIndex);
        assert_eq!(
            role("TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat"),
            Role::FallbackLibrary
        );
        assert_eq!(
            role("TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1032.hsaco"),
            Role::FallbackCode
        );
        assert_eq!(role("TensileLibrary_lazy_gfx1100.dat.zlib"), Role::LazyIndex);
    }

    #[test]
    fn per_arch_folders() {
        let t = t();
        let p = Path::new("/opt/rocm/lib/rocblas/library/gfx90a-xnack+/TensileLibrary_Type_x.dat");
        assert_eq!(folder_target(p, &t), Some(("gfx90a".into(), Some("xnack+".into()))));
        let a = detect(p, Content::File(Kind::Other, b"text"), &t).expect("tensile");
        assert_eq!((a.name_target.as_deref(), a.role), (Some("gfx90a"), Role::SubLibrary));
    }
}
