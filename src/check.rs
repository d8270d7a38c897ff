//! Check: will each GPU find its code? Pure: a snapshot and devices in, verdicts out.
//!
//! Matching follows the runtime (FORMATS.md §2.5; clr `hip_code_object.cpp`, comgr
//! `lookUpCodeObject`, ROCr `Isa::IsCompatible`): the code object's processor must be the
//! device's, or the generic target of the device's family (`targets.toml` `generic`) with a
//! generic version of at least 1; every feature the code object states (`xnack±`, `sramecc±`)
//! must equal the device's when the device's is known. The first compatible entry is the one
//! that loads.
//!
//! Per library: a host library (or standalone bundle) needs a compatible code object in every
//! bundle — a bundle without one is a translation unit whose kernels fail with "invalid device
//! function" — and in its embedded objects if it has any. A Tensile library (rocBLAS,
//! hipBLASLt) needs an index that serves the target, in rocBLAS's lookup order (lazy,
//! per-arch, merged; an index is believed by its content, a link by what it leads to), and code
//! objects for the target in its code files: names alone never make a target supported. MIOpen
//! without a database for the target, and device libraries without the target's ISA bitcode,
//! are warnings: slower first runs, no runtime compilation — not a failed start.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::devices::{split_version, Device, DeviceTarget};
use crate::model::{CodeObjectRecord, Family, FileRecord, Problem, Snapshot, Tool};
use crate::resolve::Setting;
use crate::targets::Targets;

/// Version of the check JSON document.
pub const CHECK_SCHEMA_VERSION: u32 = 1;

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

/// One library's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The library: a file, or a folder for Tensile, MIOpen and bitcode.
    pub library: String,
    /// `host-library`, `bundle`, `tensile`, `miopen`, `bitcode`.
    pub kind: String,
    pub status: Status,
    /// One line: what was found or what is missing.
    pub detail: String,
    /// What would load: the bundle entry or index file.
    pub loads: Option<String>,
    /// Processors the library has instead, when something is missing.
    pub available: Vec<String>,
}

/// Everything said about one GPU.
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

/// The result of `gfxscan check`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub schema_version: u32,
    pub tool: Tool,
    pub roots: Vec<String>,
    pub gpus: Vec<GpuReport>,
    /// Files that could not be fully read during the scan.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// True when any GPU lacks a required piece.
    pub fn missing(&self) -> bool {
        self.gpus.iter().any(|g| g.status() == Status::Missing)
    }
}

fn settings_of(target_id: &str) -> (Setting, Setting) {
    let (mut s, mut x) = (Setting::Any, Setting::Any);
    for f in target_id.split(':').skip(1) {
        let v = if f.ends_with('+') { Setting::On } else { Setting::Off };
        if f.starts_with("sramecc") {
            s = v;
        } else if f.starts_with("xnack") {
            x = v;
        }
    }
    (s, x)
}

/// True when the runtime would load `co` on `dev`.
pub fn compatible(co: &CodeObjectRecord, dev: &DeviceTarget, targets: &Targets) -> bool {
    let same = co.processor == dev.processor;
    let generic = !same
        && targets.by_name(&dev.processor).and_then(|t| t.generic.as_deref()) == Some(co.processor.as_str())
        && co.generic_version.is_some_and(|g| g >= 1);
    if !same && !generic {
        return false;
    }
    let (s, x) = settings_of(&co.target_id);
    let agree = |c: Setting, d: Setting| c == Setting::Any || d == Setting::Any || c == d;
    agree(s, dev.sramecc) && agree(x, dev.xnack)
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
        match cos.iter().find(|c| compatible(c, dev, targets)) {
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
    let kind = if f.kind == crate::classify::Kind::HostElf { "host-library" } else { "bundle" };
    let available = processors(f.code_objects.iter());
    let (status, detail) = if lacking.is_empty() {
        let what = if f.bundles > 0 {
            format!("all {} bundles have code for it", f.bundles)
        } else {
            "has code for it".into()
        };
        (Status::Ok, what)
    } else if lacking.len() == groups.len() {
        (Status::Missing, format!("no code object for {}", dev.target_id))
    } else {
        let where_ = lacking
            .iter()
            .map(|b| b.map_or_else(|| "embedded objects".to_string(), |o| format!("bundle at {o:#x}")))
            .take(3)
            .collect::<Vec<_>>()
            .join(", ");
        (
            Status::Missing,
            format!("{} of {} code groups have no code for {} ({where_}…): their kernels fail with \"invalid device function\"", lacking.len(), groups.len(), dev.target_id),
        )
    };
    let available = if status == Status::Ok { Vec::new() } else { available };
    Verdict { library: display, kind: kind.into(), status, detail, loads, available }
}

/// The folder a Tensile file belongs to: up to its `library` folder (per-arch subfolders
/// included), else its own folder.
fn tensile_dir(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.iter().rposition(|p| *p == "library") {
        Some(i) => parts[..=i].join("/"),
        None => parts[..parts.len().saturating_sub(1)].join("/"),
    }
}

fn parent(path: &str) -> String {
    path.rsplit_once('/').map_or(String::new(), |(d, _)| d.to_string())
}

const INDEX_ROLES: [&str; 3] = ["lazy-index", "index", "merged-index"];

/// A Tensile library: an index that serves the target, and code objects for it.
fn tensile_verdict(
    snap: &Snapshot,
    root: usize,
    dir: &str,
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
    let library = files
        .iter()
        .find_map(|f| f.artifact.as_ref().and_then(|a| a.library.clone()))
        .unwrap_or_else(|| "rocblas".into());
    let lying: BTreeSet<(usize, &str)> =
        snap.mismatches.iter().map(|m| (m.path.root, m.path.path.as_str())).collect();
    let rank = |role: &str| INDEX_ROLES.iter().position(|r| *r == role).unwrap_or(9);
    // Index candidates: (lookup rank, path, serves?, note).
    let mut candidates: Vec<(usize, String, bool, Option<String>)> = Vec::new();
    let mut served_by_indexes: BTreeSet<String> = BTreeSet::new();
    for f in &files {
        let Some(a) = f.artifact.as_ref().filter(|a| INDEX_ROLES.contains(&a.role.as_str())) else {
            continue;
        };
        served_by_indexes.extend(a.targets());
        let names_it = a.name_target.as_deref() == Some(arch) || a.role == "merged-index";
        if !names_it {
            continue;
        }
        let serves = match &a.content_targets {
            Some(c) => c.iter().any(|t| t == arch),
            None => a.name_target.as_deref() == Some(arch),
        };
        let note = (!serves && a.name_target.as_deref() == Some(arch)).then(|| {
            format!(
                "{} is named for {arch} but serves {}",
                f.path.path,
                a.content_targets.clone().unwrap_or_default().join(", ")
            )
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
    let index = candidates.iter().find(|c| c.2).map(|c| c.1.clone());
    let notes: Vec<String> = candidates.iter().filter_map(|c| c.3.clone()).collect();
    let code_files =
        files.iter().filter(|f| f.code_objects.iter().any(|c| compatible(c, dev, targets))).count();
    let code_targets = processors(files.iter().flat_map(|f| f.code_objects.iter()));
    let mut available: BTreeSet<String> = served_by_indexes;
    available.extend(code_targets.iter().map(|t| t.split(':').next().unwrap_or(t).to_string()));
    let note = if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) };
    let (status, detail) = match (&index, code_files) {
        (Some(_), n) if n > 0 => (Status::Ok, format!("index serves {arch}; {n} code files hold code for it")),
        (Some(i), _) => (Status::Missing, format!("{i} names {arch}, but no code file in the library holds code for {}{note}", dev.target_id)),
        (None, _) => (Status::Missing, format!("no Tensile index serves {arch}: {library} aborts with \"Cannot read …TensileLibrary.dat\"{note}")),
    };
    let available = if status == Status::Ok { Vec::new() } else { available.into_iter().collect() };
    Verdict {
        library: format!("{}/", display(snap, root, dir)),
        kind: "tensile".into(),
        status,
        detail,
        loads: index,
        available,
    }
}

fn display(snap: &Snapshot, root: usize, path: &str) -> String {
    crate::model::RelPath { root, path: path.to_string(), path_hex: None }.display(&snap.roots)
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
    let available: Vec<String> = here
        .iter()
        .filter_map(|f| f.artifact.as_ref().and_then(|a| a.name_target.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let (kind, status, detail) = match family {
        Family::Miopen => {
            let dbs: Vec<String> = mine
                .iter()
                .filter_map(|f| {
                    let a = f.artifact.as_ref()?;
                    let name = f.path.path.rsplit('/').next().unwrap_or("");
                    Some(match a.records {
                        Some(n) => format!(
                            "{name} ({} {})",
                            crate::report::thousands(n),
                            if a.role.contains("kernel") { "entries" } else { "records" }
                        ),
                        None => format!("{name} ({})", a.format),
                    })
                })
                .collect();
            if dbs.is_empty() {
                (
                    "miopen",
                    Status::Warn,
                    format!(
                        "no MIOpen database for {arch}: first runs tune and compile kernels from scratch"
                    ),
                )
            } else {
                ("miopen", Status::Ok, dbs.join(", "))
            }
        }
        _ => {
            if mine.is_empty() {
                ("bitcode", Status::Warn, format!("no device-library bitcode for {arch}: runtime compilation (hipRTC, OpenCL, MIOpen) fails"))
            } else {
                (
                    "bitcode",
                    Status::Ok,
                    format!("{} present", mine[0].path.path.rsplit('/').next().unwrap_or("")),
                )
            }
        }
    };
    let available = if status == Status::Ok { Vec::new() } else { available };
    Verdict {
        library: format!("{}/", display(snap, root, dir)),
        kind: kind.into(),
        status,
        detail,
        loads: None,
        available,
    }
}

/// Every library's verdict for one target.
pub fn library_verdicts(snap: &Snapshot, dev: &DeviceTarget, targets: &Targets) -> Vec<Verdict> {
    let mut out = Vec::new();
    let mut tensile_dirs = BTreeSet::new();
    let mut folders: BTreeSet<(usize, String, Family)> = BTreeSet::new();
    for f in &snap.files {
        match f.artifact.as_ref().and_then(|a| a.family) {
            Some(Family::Tensile) => {
                tensile_dirs.insert((f.path.root, tensile_dir(&f.path.path)));
            }
            Some(fam @ (Family::Miopen | Family::Bitcode)) => {
                folders.insert((f.path.root, parent(&f.path.path), fam));
            }
            Some(Family::Firmware) => {}
            None if !f.code_objects.is_empty()
                && (f.kind == crate::classify::Kind::HostElf || f.bundles > 0) =>
            {
                out.push(code_verdict(f, f.path.display(&snap.roots), dev, targets));
            }
            None => {}
        }
    }
    for (root, dir) in &tensile_dirs {
        out.push(tensile_verdict(snap, *root, dir, dev, targets));
    }
    for (root, dir, fam) in &folders {
        out.push(folder_verdict(snap, *root, dir, *fam, dev));
    }
    out
}

/// `major.minor.stepping` of a target's KFD version, the form HSA_OVERRIDE_GFX_VERSION takes.
pub fn override_value(t: &crate::targets::Target) -> Option<String> {
    t.gfx_target_version.map(split_version).map(|(a, b, c)| format!("{a}.{b}.{c}"))
}

/// Verdicts, hints and warnings for one device.
pub fn check_device(snap: &Snapshot, device: &Device, targets: &Targets) -> GpuReport {
    let verdicts = library_verdicts(snap, &device.effective, targets);
    let mut hints = Vec::new();
    let mut warnings = Vec::new();
    let native = targets.by_name(&device.native.processor);
    let missing = verdicts.iter().filter(|v| v.status == Status::Missing).count();
    if let (Some(t), None, true) = (native, &device.r#override, missing > 0) {
        if let Some(alt) = t.isa_compatible.as_deref().and_then(|a| targets.by_name(a)) {
            let alt_dev = DeviceTarget {
                processor: alt.name.clone(),
                target_id: alt.name.clone(),
                ..device.native.clone()
            };
            let still = library_verdicts(snap, &alt_dev, targets)
                .iter()
                .filter(|v| v.status == Status::Missing)
                .count();
            if still < missing {
                if let Some(value) = override_value(alt) {
                    hints.push(format!(
                        "HSA_OVERRIDE_GFX_VERSION={value} makes the runtime treat this {} as {} ({} of {missing} missing libraries have {} code). targets.toml records {} as ISA-compatible with {}: a widely used workaround, not support — it applies to every GPU in the process unless set per node (HSA_OVERRIDE_GFX_VERSION_<node>)",
                        t.name, alt.name, missing - still, alt.name, t.name, alt.name
                    ));
                }
            }
        }
    }
    if let (Some(o), Some(t)) = (&device.r#override, native) {
        if device.native.processor != device.effective.processor {
            let base = |n: &str| {
                targets.by_name(n).and_then(|x| x.isa_compatible.clone()).unwrap_or_else(|| n.to_string())
            };
            if base(&t.name) != base(&device.effective.processor) {
                warnings.push(format!(
                    "{}={} runs {} code on a {}: targets.toml does not record these ISAs as compatible; kernels may fault, compute wrong results or hang the GPU",
                    o.variable, o.value, device.effective.processor, t.name
                ));
            }
        }
    }
    GpuReport { device: device.clone(), verdicts, hints, warnings }
}

/// Checks every device against a snapshot.
pub fn check(snap: &Snapshot, devices: &[Device], targets: &Targets) -> CheckReport {
    CheckReport {
        schema_version: CHECK_SCHEMA_VERSION,
        tool: Tool::current(),
        roots: snap.roots.clone(),
        gpus: devices.iter().map(|d| check_device(snap, d, targets)).collect(),
        problems: snap.problems.clone(),
    }
}
