//! Check: will each GPU find its code? Pure: a snapshot and devices in, verdicts out, one set
//! per install (`install::install_of`), and an overall [`Outcome`].
//!
//! Matching follows the runtime (clr `hip_code_object.cpp` / `hip_fatbin.cpp`, comgr
//! `isCompatibleIsaName`, ROCr `Isa::IsCompatible`): the code object's processor must be the
//! device's, or the generic target of the device's family (`targets.toml` `generic`) with a
//! generic version of at least 1; every feature the code object states (`xnack±`, `sramecc±`)
//! must equal the device's when the device's is known. The first compatible entry is the one
//! that loads.
//!
//! Per library: a host library (or standalone bundle) needs a compatible code object in every
//! bundle — a bundle without one is a translation unit whose kernels fail with "invalid device
//! function" — and in its embedded objects if it has any. A Tensile library (rocBLAS,
//! hipBLASLt) needs an index that serves the target, in rocBLAS's lookup order (lazy,
//! per-arch, merged; an index is believed by its hardware rows, a link by what it leads to), and
//! code objects for the target in its code files: names alone never make a target supported.
//! What a gap costs — MISSING when the program stops or its calls fail, WARN when it only runs
//! slower or without an optional path — is data, [`GAP_RULES`], each row read from the
//! library's source. Nothing found is [`Outcome::NothingToCheck`], files not read make the
//! outcome [`Outcome::Incomplete`]: an OK is only given for what was read.

pub mod devices;
pub mod install;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::check::install::{install_of, Install};
use crate::model::{CodeObjectRecord, Family, FileRecord, Problem, Snapshot, Tool};
use crate::vocab::target_id::{compatible, split_version, CodeTarget, DeviceTarget};
use crate::vocab::targets::Targets;
use devices::{Device, Gpus, UnknownGpu};

/// Version of the check JSON document (2: verdicts per install, an overall `outcome`).
pub const CHECK_SCHEMA_VERSION: u32 = 2;

/// A library's verdict for one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Missing,
}

impl Status {
    /// The word shown in tables.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Missing => "MISSING",
        }
    }
}

/// What kind of library a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LibraryKind {
    /// A host library with device code (`.hip_fatbin`, embedded code objects).
    HostLibrary,
    /// A standalone offload bundle.
    Bundle,
    /// A Tensile library folder (rocBLAS, hipBLASLt).
    Tensile,
    /// MIOpen's database folder.
    Miopen,
    /// The device-library bitcode folder.
    Bitcode,
}

/// What a library does when the code for the device is not there, as its source shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gap {
    /// Host code with no code object for the device.
    HostCode,
    /// rocBLAS with no Tensile index file for the device and no merged one.
    RocblasNoIndex,
    /// rocBLAS with a merged `TensileLibrary.dat` whose hardware rows do not serve the device.
    RocblasMergedNoRow,
    /// rocBLAS with an index for the device but no code file holding its code.
    RocblasCode,
    /// hipBLASLt without an index or code for the device.
    Hipblaslt,
    /// The same, on a GPU whose GEMMs PyTorch sends to hipBLASLt by default.
    HipblasltDefault,
    /// MIOpen without a database for the device.
    Miopen,
    /// No device-library bitcode for the device.
    Bitcode,
}

/// One row of the gap table: how bad a gap is and what the user will see.
#[derive(Debug, Clone, Copy)]
pub struct GapRule {
    pub gap: Gap,
    /// MISSING when the program stops or its calls fail; WARN when it runs slower or without
    /// one optional path.
    pub status: Status,
    /// What happens, in the library's own words where it prints some.
    pub consequence: &'static str,
}

/// The gap table. Each rule cites the source it was read from (ROCm/clr f9f995c6, rocBLAS
/// b520bc83 and tags rocm-5.5.0…6.2.0, hipBLASLt 7d9fb683, MIOpen 2d1fd997, PyTorch main).
pub const GAP_RULES: &[GapRule] = &[
    // clr hipamd/src/hip_fatbin.cpp `FatBinaryInfo::ExtractFatBinaryUsingCOMGR` finds no code
    // object for the device ("No compatible code objects found for: gfx…" with AMD_LOG_LEVEL);
    // hip_platform.cpp `ihipLaunchKernel` then fails each launch of the library's kernels with
    // hipErrorNoBinaryForGpu / hipErrorInvalidDeviceFunction. Registration is lazy
    // (HIP_ENABLE_DEFERRED_LOADING=1), so only this library's kernels fail.
    GapRule {
        gap: Gap::HostCode,
        status: Status::Missing,
        consequence: "its kernel launches fail with hipErrorNoBinaryForGpu / \"invalid device function\"",
    },
    // rocBLAS library/src/tensile_host.cpp `TensileHost::initialize` (l.799-842): none of
    // TensileLibrary_lazy_<arch>.dat, TensileLibrary_<arch>.dat, TensileLibrary.dat exists →
    // the message below, then rocblas_abort() (std::abort) at the first GEMM-type call.
    GapRule {
        gap: Gap::RocblasNoIndex,
        status: Status::Missing,
        consequence: "at its first GEMM rocBLAS prints \"rocBLAS error: Cannot read …/TensileLibrary.dat: No such file or directory for GPU arch : <arch>\" and aborts the process",
    },
    // rocBLAS tensile_host.cpp l.874-952 and `runContractionProblem` (l.1119-1262): a merged
    // index loads; with no code file for the arch it warns "No paths matched <path>/*<arch>*co",
    // and with no row serving it each GEMM prints "rocBLAS error: No Tensile solution found"
    // and returns rocblas_status_not_implemented. Not an abort, but no GEMM runs.
    GapRule {
        gap: Gap::RocblasMergedNoRow,
        status: Status::Missing,
        consequence: "rocBLAS does not abort, but every GEMM fails: \"rocBLAS error: No Tensile solution found …\" and rocblas_status_not_implemented",
    },
    // rocBLAS tensile_host.cpp l.874-952 (merged: "rocBLAS warning: No paths matched
    // <path>/*<arch>*co"); lazy: Tensile HipSolutionAdapter `launchKernel` cannot load the code
    // file and the call returns a HIP error converted to a rocBLAS status.
    GapRule {
        gap: Gap::RocblasCode,
        status: Status::Missing,
        consequence: "the index loads, but the GEMMs it selects fail: their code file is absent (\"rocBLAS warning: No paths matched …*<arch>*co\" or a HIP error per call)",
    },
    // hipBLASLt library/src/amd_detail/rocblaslt/src/tensile_host.cpp l.1381-1437: "rocblaslt
    // error: Cannot read …/TensileLibrary_lazy_<arch>.dat"; rocblaslt_abort() is commented
    // out; matmuls then return HIPBLAS_STATUS_INVALID_VALUE. PyTorch (aten Context.cpp
    // `blasPreferredBackend`) uses hipBLASLt only on its supported archs and otherwise
    // rocBLAS; rocBLAS (handle.cpp l.252-266) uses hipBLASLt by default only on gfx1200/1201
    // and falls back to Tensile when it fails (tensile_host.cpp l.1147).
    GapRule {
        gap: Gap::Hipblaslt,
        status: Status::Warn,
        consequence: "hipBLASLt does not abort: it prints \"rocblaslt error: Cannot read …TensileLibrary_lazy_<arch>.dat\" and its matmuls return HIPBLAS_STATUS_INVALID_VALUE; PyTorch and rocBLAS use rocBLAS GEMMs on such GPUs",
    },
    // PyTorch aten/src/ATen/cuda/detail/CUDAHooks.cpp `getHipblasltPreferredArchs` (the
    // targets.toml `pytorch_hipblaslt` rows) and Context.cpp `blasPreferredBackend`: on these
    // GPUs PyTorch picks hipBLASLt by default and falls back only when the arch is missing from
    // `getHipblasltSupportedArchs`, never because the installed library lacks its files.
    GapRule {
        gap: Gap::HipblasltDefault,
        status: Status::Missing,
        consequence: "PyTorch sends this GPU's GEMMs to hipBLASLt by default: they fail with HIPBLAS_STATUS_INVALID_VALUE after \"rocblaslt error: Cannot read …TensileLibrary_lazy_<arch>.dat\" unless the program selects rocBLAS (torch.backends.cuda.preferred_blas_library)",
    },
    // MIOpen execution_context.hpp `GetPerfDbPathFile`, find_db.cpp `GetInstalledPathFile`,
    // binary_cache.cpp `GetDb`, hip/handlehip.cpp `LoadProgram`: a missing system database is
    // an info-level log line; solvers use default tuning and kernels compile at first use.
    GapRule {
        gap: Gap::Miopen,
        status: Status::Warn,
        consequence: "MIOpen runs with default tuning and compiles kernels at first use (slow first runs, nothing fails)",
    },
    // comgr links oclc_isa_version_<isa>.bc when compiling at run time (hipRTC, MIOpen's
    // runtime kernels, OpenCL).
    GapRule {
        gap: Gap::Bitcode,
        status: Status::Warn,
        consequence: "runtime compilation (hipRTC, OpenCL, MIOpen's kernels) fails for this GPU; prebuilt code is unaffected",
    },
];

/// The rule for a gap.
pub fn gap_rule(gap: Gap) -> &'static GapRule {
    GAP_RULES.iter().find(|r| r.gap == gap).unwrap_or(&GAP_RULES[0])
}

/// One library's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The library: a file, or a folder for Tensile, MIOpen and bitcode.
    pub library: String,
    pub kind: LibraryKind,
    /// For Tensile folders: `rocblas` or `hipblaslt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    pub status: Status,
    /// One line: what was found or what is missing.
    pub detail: String,
    /// What the gap costs at run time, when something is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consequence: Option<String>,
    /// What would load: the bundle entry or index file.
    pub loads: Option<String>,
    /// Targets the library has instead, when something is missing.
    pub available: Vec<String>,
}

impl Verdict {
    /// A verdict with the status and consequence its gap's rule gives (for the device's
    /// `arch`), or OK without a gap.
    fn judged(library: String, kind: LibraryKind, gap: Option<Gap>, detail: String, arch: &str) -> Verdict {
        let rule = gap.map(gap_rule);
        Verdict {
            library,
            kind,
            component: None,
            status: rule.map_or(Status::Ok, |r| r.status),
            detail,
            consequence: rule.map(|r| r.consequence.replace("<arch>", arch)),
            loads: None,
            available: Vec::new(),
        }
    }
}

/// Everything said about one GPU in one install.
#[derive(Debug, Clone, Serialize)]
pub struct GpuReport {
    pub device: Device,
    pub verdicts: Vec<Verdict>,
    /// Overrides that would help, each with its caveat.
    pub hints: Vec<String>,
    /// Dangers: an override across incompatible ISAs.
    pub warnings: Vec<String>,
}

impl GpuReport {
    /// The worst status of the GPU's verdicts.
    pub fn status(&self) -> Status {
        self.verdicts.iter().map(|v| v.status).max().unwrap_or(Status::Ok)
    }
}

/// The verdicts for one install.
#[derive(Debug, Clone, Serialize)]
pub struct InstallReport {
    #[serde(flatten)]
    pub install: Install,
    /// The worst status of its GPUs.
    pub status: Status,
    pub gpus: Vec<GpuReport>,
}

/// The overall answer of a check, and its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every checked install has every required piece for every GPU (warnings allowed).
    Ok,
    /// Some install lacks a required piece for some GPU.
    Missing,
    /// Nothing required is missing in what was read, but some files could not be read.
    Incomplete,
    /// No library with device code was found: nothing was checked.
    NothingToCheck,
}

/// The result of `gfxscan check`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub schema_version: u32,
    pub tool: Tool,
    pub outcome: Outcome,
    pub roots: Vec<String>,
    /// The GPUs checked.
    pub devices: Vec<Device>,
    /// GPUs of the KFD topology whose ISA the target table does not know: not checked.
    pub unknown_gpus: Vec<UnknownGpu>,
    /// One entry per install found, each with every GPU's verdicts.
    pub installs: Vec<InstallReport>,
    /// Installs that exist but were not checked (the default roots check the install
    /// `/opt/rocm` leads to and Ollama's, not every `/opt/rocm-*`).
    pub not_checked: Vec<String>,
    /// Files that could not be fully read during the scan.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// The exit status the outcome deserves.
    pub fn exit_status(&self) -> crate::exit::ExitStatus {
        use crate::exit::ExitStatus;
        match self.outcome {
            Outcome::Ok => ExitStatus::Clean,
            Outcome::Missing => ExitStatus::Missing,
            Outcome::Incomplete => ExitStatus::Incomplete,
            Outcome::NothingToCheck => ExitStatus::NothingToCheck,
        }
    }
}

/// What a code object is for, as [`compatible`] matches it.
fn code_target(c: &CodeObjectRecord) -> CodeTarget<'_> {
    CodeTarget { target_id: &c.target_id, generic_version: c.generic_version }
}

fn processors<'a>(cos: impl Iterator<Item = &'a CodeObjectRecord>) -> Vec<String> {
    cos.map(|c| c.target_id.clone()).collect::<BTreeSet<_>>().into_iter().collect()
}

/// Host libraries and standalone bundles: every bundle, and the embedded objects, must serve.
fn code_verdict(f: &FileRecord, display: String, dev: &DeviceTarget, targets: &Targets) -> Verdict {
    let mut groups: BTreeMap<Option<u64>, Vec<&CodeObjectRecord>> = BTreeMap::new();
    for c in &f.code_objects {
        groups.entry(c.bundle_offset).or_default().push(c);
    }
    let mut loads = None;
    let mut lacking = Vec::new();
    for (bundle, cos) in &groups {
        match cos.iter().find(|c| compatible(code_target(c), dev, targets)) {
            Some(c) if loads.is_none() => {
                loads = Some(
                    c.bundle_entry_id
                        .clone()
                        .unwrap_or_else(|| format!("{} at {:#x}", c.target_id, c.offset)),
                )
            }
            Some(_) => {}
            None => lacking.push(*bundle),
        }
    }
    let kind = if f.kind == crate::parse::magic::Kind::HostElf {
        LibraryKind::HostLibrary
    } else {
        LibraryKind::Bundle
    };
    let (gap, detail) = if lacking.is_empty() {
        let what = if f.bundles > 0 {
            format!("all {} bundles have code for it", f.bundles)
        } else {
            "has code for it".into()
        };
        (None, what)
    } else if lacking.len() == groups.len() {
        (Some(Gap::HostCode), format!("no code object for {}", dev.target_id))
    } else {
        let where_ = lacking
            .iter()
            .map(|b| b.map_or_else(|| "embedded objects".to_string(), |o| format!("bundle at {o:#x}")))
            .take(3)
            .collect::<Vec<_>>()
            .join(", ");
        (
            Some(Gap::HostCode),
            format!(
                "{} of {} code groups have no code for {} ({where_}…)",
                lacking.len(),
                groups.len(),
                dev.target_id
            ),
        )
    };
    let mut v = Verdict::judged(display, kind, gap, detail, &dev.processor);
    v.loads = loads;
    if v.status != Status::Ok {
        v.available = processors(f.code_objects.iter());
    }
    v
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

fn parent(path: &str) -> String {
    path.rsplit_once('/').map_or(String::new(), |(d, _)| d.to_string())
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

const INDEX_ROLES: [&str; 3] = ["lazy-index", "index", "merged-index"];

/// An index that may serve the device: (lookup rank, path, serves?, note).
type Candidate = (usize, String, bool, Option<String>);

/// The indexes of a Tensile folder that name `arch`, in rocBLAS's lookup order, and the
/// targets every index of the folder serves.
fn index_candidates(
    snap: &Snapshot,
    root: usize,
    dir: &str,
    files: &[&FileRecord],
    arch: &str,
) -> (Vec<Candidate>, BTreeSet<String>) {
    let lying: BTreeSet<(usize, &str)> =
        snap.mismatches.iter().map(|m| (m.path.root, m.path.path.as_str())).collect();
    let rank = |role: &str| INDEX_ROLES.iter().position(|r| *r == role).unwrap_or(9);
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut served: BTreeSet<String> = BTreeSet::new();
    for f in files {
        let Some(a) = f.artifact.as_ref().filter(|a| INDEX_ROLES.contains(&a.role.as_str())) else {
            continue;
        };
        served.extend(a.targets());
        if a.any_processor {
            served.extend(a.name_target.clone());
        }
        let merged = a.role == "merged-index";
        let named = a.name_target.as_deref() == Some(arch);
        if !named && !merged {
            continue;
        }
        // rocBLAS opens a lazy or per-arch index by the device's name, then evaluates its
        // hardware rows; a `TruePred` row serves whichever device loaded the file.
        let serves = match &a.content_targets {
            Some(c) => c.iter().any(|t| t == arch) || a.any_processor,
            None => named,
        };
        let note = (!serves && named).then(|| {
            let has = a.content_targets.clone().unwrap_or_default();
            let has = if has.is_empty() { "no processor".to_string() } else { has.join(", ") };
            format!("{} is named for {arch}, but its hardware rows name {has}", f.path.path)
        });
        candidates.push((rank(&a.role), f.path.path.clone(), serves, note));
    }
    for l in snap.links.iter().filter(|l| l.path.root == root && tensile_dir(&l.path.path) == dir) {
        let Some(a) = &l.artifact else { continue };
        if INDEX_ROLES.contains(&a.role.as_str()) && a.name_target.as_deref() == Some(arch) {
            let lies = lying.contains(&(root, l.path.path.as_str()));
            let note = lies
                .then(|| format!("{} is a link to {}, which serves another target", l.path.path, l.target));
            candidates.push((rank(&a.role), l.path.path.clone(), !lies, note));
        }
    }
    candidates.sort();
    (candidates, served)
}

/// A Tensile library: an index that serves the target, and code objects for it.
/// `component` names the library that loads the folder when its path does not (a folder set by
/// `HIPBLASLT_TENSILE_LIBPATH` may be named anything).
fn tensile_verdict(
    snap: &Snapshot,
    root: usize,
    dir: &str,
    component: Option<&str>,
    dev: &DeviceTarget,
    targets: &Targets,
) -> Verdict {
    let arch = dev.processor.as_str();
    let files: Vec<&FileRecord> = snap
        .files
        .iter()
        .filter(|f| {
            f.path.root == root && f.artifact.as_ref().is_some_and(|a| a.family == Some(Family::Tensile))
        })
        .filter(|f| tensile_dir(&f.path.path) == dir)
        .collect();
    let library = match component {
        Some(c) => c.to_string(),
        None => component_of(snap, root, dir),
    };
    let (candidates, served) = index_candidates(snap, root, dir, &files, arch);
    let index = candidates.iter().find(|c| c.2).map(|c| c.1.clone());
    let notes: Vec<String> = candidates.iter().filter_map(|c| c.3.clone()).collect();
    let code_files: Vec<&str> = files
        .iter()
        .filter(|f| f.code_objects.iter().any(|c| compatible(code_target(c), dev, targets)))
        .map(|f| f.path.path.as_str())
        .collect();
    let code_targets: BTreeSet<String> =
        files.iter().flat_map(|f| f.code_objects.iter()).map(|c| c.processor.clone()).collect();
    let note = if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) };
    let list = |s: &BTreeSet<String>| {
        if s.is_empty() {
            "none".to_string()
        } else {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    let hip = library == "hipblaslt";
    let hip_gap = hipblaslt_gap(arch, targets);
    let merged = files.iter().any(|f| f.artifact.as_ref().is_some_and(|a| a.role == "merged-index"));
    let fallback_only = index.as_ref().is_some_and(|i| {
        files.iter().any(|f| {
            &f.path.path == i
                && f.artifact.as_ref().is_some_and(|a| {
                    a.any_processor
                        && !a.content_targets.as_ref().is_some_and(|c| c.iter().any(|t| t == arch))
                })
        })
    });
    // hipBLASLt's solution map names the code-object library of every solution: an index
    // whose arch it names no library for has solutions whose kernels cannot be found.
    let role_files = |role: &str| -> Vec<&crate::model::Artifact> {
        files.iter().filter_map(|f| f.artifact.as_ref()).filter(|a| a.role == role).collect()
    };
    let maps = role_files("solution-map");
    let unmapped = hip
        && !maps.is_empty()
        && !maps.iter().any(|m| m.lists_targets.as_ref().is_some_and(|l| l.iter().any(|t| t == arch)));
    let (gap, mut detail) = match (&index, code_files.len()) {
        // TensileLite MasterSolutionLibrary.hpp: the mapping is read only by
        // `getSolutionByIndex` → `loadLibrary(index)`; `findBestSolution` does not need it.
        (Some(i), n) if n > 0 && unmapped => (
            Some(Gap::Hipblaslt),
            format!("{i} serves {arch}, but TensileLiteLibrary_lazy_Mapping.dat names no code-object library for it: solutions chosen by index (algorithm indexes, TunableOp) cannot load their kernels ({n} code files hold {arch} code)"),
        ),
        (Some(i), n) if n > 0 && fallback_only => (
            None,
            format!("{} serves any GPU that loads it (TruePred rows: untuned fallback kernels, slower); {n} code files hold code for {arch}", file_name(i)),
        ),
        (Some(_), n) if n > 0 => (None, format!("index serves {arch}; {n} code files hold code for it")),
        (Some(i), _) => (
            Some(if hip { hip_gap } else { Gap::RocblasCode }),
            format!("{i} names {arch}, but no code file in the library holds code for {}{note}", dev.target_id),
        ),
        (None, _) => {
            let code = if code_targets.contains(arch) {
                format!("code files hold {arch} code ({}), but no index leads to it", code_files.len())
            } else {
                format!("code files hold {}", list(&code_targets))
            };
            (
                Some(match (hip, merged) {
                    (true, _) => hip_gap,
                    (false, true) => Gap::RocblasMergedNoRow,
                    (false, false) => Gap::RocblasNoIndex,
                }),
                format!("no Tensile index serves {arch}: indexes serve {}; {code}{note}", list(&served)),
            )
        }
    };
    // hipBLASLt's extension operations (AMax, Softmax, LayerNorm) have their own index.
    let extops = role_files("extop-index");
    let mut gap = gap;
    if hip
        && index.is_some()
        && extops.iter().all(|e| !e.targets().iter().any(|t| t == arch))
        && !extops.is_empty()
    {
        detail.push_str(&format!(
            "; hipblasltExtOpLibrary.dat has no {arch} kernels: its extension operations (AMax, Softmax, LayerNorm) fail"
        ));
        gap = gap.or(Some(Gap::Hipblaslt));
    }
    let mut v =
        Verdict::judged(format!("{}/", display(snap, root, dir)), LibraryKind::Tensile, gap, detail, arch);
    v.component = Some(library);
    v.loads = index;
    if v.status != Status::Ok || gap.is_some() {
        let mut available = served;
        available.extend(code_targets);
        v.available = available.into_iter().collect();
    }
    v
}

/// What a hipBLASLt gap costs on `arch`: more where PyTorch uses hipBLASLt by default.
fn hipblaslt_gap(arch: &str, targets: &Targets) -> Gap {
    if targets.by_name(arch).is_some_and(|t| t.pytorch_hipblaslt) {
        Gap::HipblasltDefault
    } else {
        Gap::Hipblaslt
    }
}

fn display(snap: &Snapshot, root: usize, path: &str) -> String {
    crate::model::RelPath { root, path: path.to_string(), path_hex: None }.display(&snap.roots)
}

/// True for a find-DB of MIOpen's OpenCL backend (`gfx900_56.OpenCL.fdb.txt`).
fn opencl_find_db(name: &str) -> bool {
    name.trim_end_matches(".bz2").ends_with(".OpenCL.fdb.txt")
}

/// True when a MIOpen file is a database MIOpen's HIP build reads for the target it names.
fn is_miopen_database(f: &FileRecord) -> bool {
    f.artifact.as_ref().is_some_and(|a| {
        a.role.ends_with("-db")
            && matches!(a.format.as_str(), "sqlite" | "text")
            && !opencl_find_db(file_name(&f.path.path))
    })
}

/// MIOpen's databases for a device: what is a real database, and what only looks like one.
fn miopen_detail(mine: &[&FileRecord], arch: &str) -> (Option<Gap>, String) {
    let mut real = Vec::new();
    let mut not_dbs = Vec::new();
    for f in mine {
        let Some(a) = f.artifact.as_ref() else { continue };
        let name = file_name(&f.path.path);
        let is_db = a.role.ends_with("-db");
        match (is_db, a.format.as_str(), a.records) {
            // MIOpen find_db.cpp `GetInstalledPath`: `<basename>.<GetSystemFindDbSuffix()>.fdb.txt`,
            // the suffix being `HIP` in ROCm's build: an OpenCL find-DB is never looked up.
            (true, _, _) if opencl_find_db(name) => not_dbs.push(format!(
                "{name} is a find-DB for MIOpen's OpenCL backend; ROCm's HIP build reads {}",
                name.replace(".OpenCL.", ".HIP.")
            )),
            (true, "sqlite" | "text", Some(n)) => real.push(format!(
                "{name} ({} {})",
                crate::vocab::units::thousands(n),
                if a.role.contains("kernel") { "entries" } else { "records" }
            )),
            (true, "sqlite" | "text", None) => real.push(name.to_string()),
            (true, "git-lfs-pointer", _) => not_dbs.push(format!(
                "{name} is a git-lfs pointer{}, not a database",
                a.lfs_size
                    .map(|n| format!(" to {}", crate::vocab::units::human_bytes(n)))
                    .unwrap_or_default()
            )),
            (true, "bzip2", _) => {
                not_dbs.push(format!("{name} is a compressed source form MIOpen does not read"))
            }
            (false, _, _) if a.role == "tuning-model" => {
                not_dbs.push(format!("{name} is a tuning model, not a perf DB"))
            }
            _ => not_dbs.push(format!("{name} ({})", a.format)),
        }
    }
    let also = if not_dbs.is_empty() { String::new() } else { format!(" ({})", not_dbs.join("; ")) };
    if real.is_empty() {
        (Some(Gap::Miopen), format!("no MIOpen database for {arch}{also}"))
    } else {
        (None, format!("{}{also}", real.join(", ")))
    }
}

/// MIOpen databases and device-library bitcode: missing ones are warnings.
fn folder_verdict(snap: &Snapshot, root: usize, dir: &str, family: Family, dev: &DeviceTarget) -> Verdict {
    let arch = dev.processor.as_str();
    let here: Vec<&FileRecord> = snap
        .files
        .iter()
        .filter(|f| f.path.root == root && parent(&f.path.path) == dir)
        .filter(|f| f.artifact.as_ref().is_some_and(|a| a.family == Some(family)))
        .collect();
    let mine: Vec<&FileRecord> = here
        .iter()
        .copied()
        .filter(|f| f.artifact.as_ref().and_then(|a| a.name_target.as_deref()) == Some(arch))
        .collect();
    let (kind, gap, detail) = match family {
        Family::Miopen => {
            let (gap, detail) = miopen_detail(&mine, arch);
            (LibraryKind::Miopen, gap, detail)
        }
        _ => match mine.first() {
            None => {
                (LibraryKind::Bitcode, Some(Gap::Bitcode), format!("no device-library bitcode for {arch}"))
            }
            Some(f) => (LibraryKind::Bitcode, None, format!("{} present", file_name(&f.path.path))),
        },
    };
    let mut v = Verdict::judged(format!("{}/", display(snap, root, dir)), kind, gap, detail, arch);
    if gap.is_some() {
        // A target is offered only where a real database serves it, never by a stand-in's name.
        v.available = here
            .iter()
            .filter(|f| family != Family::Miopen || is_miopen_database(f))
            .filter_map(|f| f.artifact.as_ref().and_then(|a| a.name_target.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
    }
    v
}

/// A Tensile library folder an environment variable names (`ROCBLAS_TENSILE_LIBPATH`,
/// `HIPBLASLT_TENSILE_LIBPATH`): the library loads it instead of the folder beside it
/// (rocBLAS tensile_host.cpp `determine_tensile_base_path` uses the variable verbatim, then its
/// `<arch>` subfolder when one exists; hipBLASLt tensile_host.cpp `initialize` likewise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibPath {
    pub variable: String,
    /// `rocblas` or `hipblaslt`.
    pub component: String,
    /// The folder as scanned (root index and path inside it), or `None` when it does not exist.
    pub place: Option<(usize, String)>,
    /// The value as set.
    pub value: String,
}

/// What a check is told besides the snapshot and the GPUs.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Installs found and not checked.
    pub not_checked: Vec<String>,
    /// Tensile folders named by the environment.
    pub libpaths: Vec<LibPath>,
}

/// A library's place: its root and its path (a file, or a folder for artifact families).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Code(usize),
    Tensile(usize, String),
    Folder(usize, String, Family),
}

/// The libraries of a snapshot, each with the install it belongs to.
fn libraries(snap: &Snapshot) -> Vec<(Install, Place)> {
    let mut places: BTreeSet<Place> = BTreeSet::new();
    for (i, f) in snap.files.iter().enumerate() {
        match f.artifact.as_ref().and_then(|a| a.family) {
            Some(Family::Tensile) => {
                places.insert(Place::Tensile(f.path.root, tensile_dir(&f.path.path)));
            }
            Some(fam @ (Family::Miopen | Family::Bitcode)) => {
                places.insert(Place::Folder(f.path.root, parent(&f.path.path), fam));
            }
            Some(Family::Firmware) => {}
            None if !f.code_objects.is_empty()
                && (f.kind == crate::parse::magic::Kind::HostElf || f.bundles > 0) =>
            {
                places.insert(Place::Code(i));
            }
            None => {}
        }
    }
    let root_of = |root: usize| snap.roots.get(root).map_or("", String::as_str);
    places
        .into_iter()
        .map(|p| {
            let (root, shown) = match &p {
                Place::Code(i) => (snap.files[*i].path.root, snap.files[*i].path.display(&snap.roots)),
                Place::Tensile(r, d) | Place::Folder(r, d, _) => (*r, format!("{}/", display(snap, *r, d))),
            };
            (install_of(root_of(root), &shown), p)
        })
        .collect()
}

/// The component (`rocblas`, `hipblaslt`) of a Tensile folder.
fn component_of(snap: &Snapshot, root: usize, dir: &str) -> String {
    snap.files
        .iter()
        .filter(|f| f.path.root == root && tensile_dir(&f.path.path) == dir)
        .find_map(|f| f.artifact.as_ref().and_then(|a| a.library.clone()))
        .unwrap_or_else(|| "rocblas".into())
}

/// The verdict for a Tensile folder an environment variable puts in place of an install's own.
fn libpath_verdict(
    snap: &Snapshot,
    lp: &LibPath,
    own: &str,
    dev: &DeviceTarget,
    targets: &Targets,
) -> Verdict {
    let mut v = match &lp.place {
        Some((root, dir)) => tensile_verdict(snap, *root, dir, Some(&lp.component), dev, targets),
        None => {
            let gap = if lp.component == "hipblaslt" {
                hipblaslt_gap(&dev.processor, targets)
            } else {
                Gap::RocblasNoIndex
            };
            let mut v = Verdict::judged(
                format!("{}/", lp.value.trim_end_matches('/')),
                LibraryKind::Tensile,
                Some(gap),
                format!("{}={} does not exist", lp.variable, lp.value),
                &dev.processor,
            );
            v.component = Some(lp.component.clone());
            v
        }
    };
    v.detail = format!("{} (set by {}, in place of {own}); {}", v.library, lp.variable, v.detail);
    v
}

/// Every library's verdict for one target, by install, in a stable order. A Tensile folder
/// an environment variable names stands in for the install's own folder of that component.
pub fn library_verdicts(
    snap: &Snapshot,
    dev: &DeviceTarget,
    targets: &Targets,
    libpaths: &[LibPath],
) -> BTreeMap<Install, Vec<Verdict>> {
    let mut out: BTreeMap<Install, Vec<Verdict>> = BTreeMap::new();
    let listed = libraries(snap);
    let env_place = |root: usize, dir: &str| {
        libpaths.iter().any(|lp| lp.place.as_ref().is_some_and(|(r, d)| *r == root && d == dir))
    };
    let replaced: BTreeSet<&str> = libpaths
        .iter()
        .filter(|lp| {
            listed.iter().any(|(_, p)| {
                matches!(p, Place::Tensile(r, d) if !env_place(*r, d) && component_of(snap, *r, d) == lp.component)
            })
        })
        .map(|lp| lp.component.as_str())
        .collect();
    for (install, place) in &listed {
        let v = match place {
            Place::Code(i) => {
                let f = &snap.files[*i];
                code_verdict(f, f.path.display(&snap.roots), dev, targets)
            }
            // A folder named by the environment is judged where it stands in.
            Place::Tensile(root, dir)
                if libpaths.iter().any(|lp| {
                    lp.place.as_ref().is_some_and(|(r, d)| r == root && d == dir)
                        && replaced.contains(lp.component.as_str())
                }) =>
            {
                continue
            }
            Place::Tensile(root, dir) => {
                let component = component_of(snap, *root, dir);
                match libpaths.iter().find(|lp| lp.component == component && !env_place(*root, dir)) {
                    Some(lp) => {
                        libpath_verdict(snap, lp, &format!("{}/", display(snap, *root, dir)), dev, targets)
                    }
                    None => tensile_verdict(snap, *root, dir, None, dev, targets),
                }
            }
            Place::Folder(root, dir, fam) => folder_verdict(snap, *root, dir, *fam, dev),
        };
        out.entry(install.clone()).or_default().push(v);
    }
    for verdicts in out.values_mut() {
        verdicts.sort_by_key(|v| (v.kind, v.library.clone()));
    }
    out
}

/// `major.minor.stepping` of a target's KFD version, the form HSA_OVERRIDE_GFX_VERSION takes.
pub fn override_value(t: &crate::vocab::targets::Target) -> Option<String> {
    t.gfx_target_version.map(split_version).map(|(a, b, c)| format!("{a}.{b}.{c}"))
}

fn missing_count(verdicts: &[Verdict]) -> usize {
    verdicts.iter().filter(|v| v.status == Status::Missing).count()
}

/// The override hint for a device whose install misses pieces an ISA-compatible target has.
fn override_hint(
    snap: &Snapshot,
    device: &Device,
    targets: &Targets,
    by_install: &BTreeMap<Install, Vec<Verdict>>,
    libpaths: &[LibPath],
) -> BTreeMap<Install, String> {
    let mut out = BTreeMap::new();
    let native = targets.by_name(&device.native.processor);
    let (Some(t), None) = (native, &device.r#override) else { return out };
    let Some(alt) = t.isa_compatible.as_deref().and_then(|a| targets.by_name(a)) else { return out };
    let Some(value) = override_value(alt) else { return out };
    if by_install.values().all(|v| missing_count(v) == 0) {
        return out;
    }
    let alt_dev =
        DeviceTarget { processor: alt.name.clone(), target_id: alt.name.clone(), ..device.native.clone() };
    let alt_verdicts = library_verdicts(snap, &alt_dev, targets, libpaths);
    for (install, verdicts) in by_install {
        let missing = missing_count(verdicts);
        let still = alt_verdicts.get(install).map_or(missing, |v| missing_count(v));
        if missing > 0 && still < missing {
            out.insert(install.clone(), format!(
                "HSA_OVERRIDE_GFX_VERSION={value} makes the runtime treat this {} as {} ({} of {missing} missing libraries have {} code). targets.toml records {} as ISA-compatible with {}: a widely used workaround, not support — it applies to every GPU in the process unless set per node (HSA_OVERRIDE_GFX_VERSION_<node>)",
                t.name, alt.name, missing - still, alt.name, t.name, alt.name
            ));
        }
    }
    out
}

/// The warning for an override across ISAs the table does not call compatible.
fn override_warning(device: &Device, targets: &Targets) -> Option<String> {
    let (o, t) = (device.r#override.as_ref()?, targets.by_name(&device.native.processor)?);
    if device.native.processor == device.effective.processor {
        return None;
    }
    let base =
        |n: &str| targets.by_name(n).and_then(|x| x.isa_compatible.clone()).unwrap_or_else(|| n.to_string());
    (base(&t.name) != base(&device.effective.processor)).then(|| {
        format!(
            "{}={} runs {} code on a {}: targets.toml does not record these ISAs as compatible; kernels may fault, compute wrong results or hang the GPU",
            o.variable, o.value, device.effective.processor, t.name
        )
    })
}

/// Verdicts, hints and warnings for one device, per install.
pub fn check_device(
    snap: &Snapshot,
    device: &Device,
    targets: &Targets,
    libpaths: &[LibPath],
) -> BTreeMap<Install, GpuReport> {
    let by_install = library_verdicts(snap, &device.effective, targets, libpaths);
    let hints = override_hint(snap, device, targets, &by_install, libpaths);
    let warning = override_warning(device, targets);
    by_install
        .into_iter()
        .map(|(install, verdicts)| {
            let report = GpuReport {
                device: device.clone(),
                verdicts,
                hints: hints.get(&install).cloned().into_iter().collect(),
                warnings: warning.clone().into_iter().collect(),
            };
            (install, report)
        })
        .collect()
}

/// Checks every device against a snapshot, install by install.
pub fn check(snap: &Snapshot, gpus: &Gpus, targets: &Targets, opts: CheckOptions) -> CheckReport {
    let mut installs: BTreeMap<Install, Vec<GpuReport>> = BTreeMap::new();
    for d in &gpus.devices {
        for (install, report) in check_device(snap, d, targets, &opts.libpaths) {
            installs.entry(install).or_default().push(report);
        }
    }
    let installs: Vec<InstallReport> = installs
        .into_iter()
        .map(|(install, gpus)| InstallReport {
            status: gpus.iter().map(GpuReport::status).max().unwrap_or(Status::Ok),
            install,
            gpus,
        })
        .collect();
    // Only host code, bundles and Tensile libraries are libraries with device code; MIOpen's
    // databases and the device-library bitcode alone are nothing to check.
    let has_code = installs
        .iter()
        .flat_map(|i| &i.gpus)
        .flat_map(|g| &g.verdicts)
        .any(|v| matches!(v.kind, LibraryKind::HostLibrary | LibraryKind::Bundle | LibraryKind::Tensile));
    let outcome = if installs.iter().any(|i| i.status == Status::Missing) {
        Outcome::Missing
    } else if !snap.problems.is_empty() || !gpus.unknown.is_empty() {
        Outcome::Incomplete
    } else if !has_code {
        Outcome::NothingToCheck
    } else {
        Outcome::Ok
    };
    CheckReport {
        schema_version: CHECK_SCHEMA_VERSION,
        tool: Tool::current(),
        outcome,
        roots: snap.roots.clone(),
        devices: gpus.devices.clone(),
        unknown_gpus: gpus.unknown.clone(),
        installs,
        not_checked: opts.not_checked,
        problems: snap.problems.clone(),
    }
}
