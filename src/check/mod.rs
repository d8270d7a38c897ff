//! Check: will each GPU find its code? Pure: a snapshot and devices in, verdicts out, one set
//! per install (`install::install_of`), and an overall [`Outcome`].
//!
//! What a library is and what serves a device is the library model's (`crate::library`, with
//! the runtime's matching in `vocab::runtime`); check adds the devices, the environment's
//! Tensile folders, override hints and the outcome.
//!
//! Per library: a host library (or standalone bundle) needs a compatible code object in every
//! bundle — a bundle without one is a translation unit whose kernels fail with "invalid device
//! function" — and in its embedded objects if it has any. A Tensile library (rocBLAS,
//! hipBLASLt) needs an index that serves the target, in rocBLAS's lookup order (lazy,
//! per-arch, merged; an index is believed by its hardware rows, a link by what it leads to), and
//! code objects for the target in its code files: names alone never make a target supported.
//! What a gap costs — MISSING when the program stops or its calls fail, WARN when it only runs
//! slower or without an optional path — is data: a [`GapRule`] per kind of gap, each read from
//! the library's source, kept with the library (host code here, each artifact family in its
//! cataloger, which also judges its folders). Nothing found is [`Outcome::NothingToCheck`],
//! files not read make the outcome [`Outcome::Incomplete`]: an OK is only given for what was
//! read.

pub mod devices;
pub mod driver;
pub mod program;
pub mod prune;
pub mod summary;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::families::cataloger;
use crate::library::environment::library_verdicts;
use crate::library::install::{install_of, Install};
pub use crate::library::LibPath;
use crate::library::Model;
use crate::model::{Problem, Tool};
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::split_version;
use crate::vocab::targets::Targets;
pub use crate::vocab::verdict::{GapRule, LibraryKind, Status, Verdict};
use devices::{Device, Gpus, UnknownGpu};

/// Version of the check JSON document (2: verdicts per install, an overall `outcome`).
pub const CHECK_SCHEMA_VERSION: u32 = 2;

/// Everything said about one GPU in one install.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GpuReport {
    pub device: Device,
    pub verdicts: Vec<Verdict>,
    /// Overrides that would help, each with its caveat.
    pub hints: Vec<String>,
    /// Dangers: an override across incompatible ISAs.
    pub warnings: Vec<String>,
    /// The override the hint names (`HSA_OVERRIDE_GFX_VERSION=10.3.0`), when one would help.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub override_helps: Option<String>,
}

impl GpuReport {
    /// The worst status of the GPU's verdicts.
    pub fn status(&self) -> Status {
        self.verdicts.iter().map(|v| v.status).max().unwrap_or(Status::Ok)
    }
}

/// The verdicts for one install.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InstallReport {
    #[serde(flatten)]
    pub install: Install,
    /// The worst status of its GPUs.
    pub status: Status,
    /// Files of the install that could not be read in full: its OK holds only for what was read.
    #[serde(skip_serializing_if = "crate::model::is_zero")]
    pub unread: u64,
    /// The HIP runtime the install ships, whose rules its verdicts follow (absent: none shipped,
    /// the report's `runtime` applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<InstallRuntime>,
    pub gpus: Vec<GpuReport>,
}

/// An install's own HIP runtime.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InstallRuntime {
    /// The library, as shown (`…/libamdhip64.so.6.4.43484`).
    pub library: String,
    /// Its version from its name (`6.4.43484`).
    pub version: String,
    /// How it matches code objects to a GPU.
    pub rules: &'static str,
}

impl InstallReport {
    /// The status as a header says it: an OK over files not read in full is only "as far as
    /// read", never a plain OK above an INCOMPLETE outcome.
    pub fn status_shown(&self, status: Status) -> String {
        match (status, self.unread) {
            (Status::Ok, n) if n > 0 => {
                format!("OK as far as read ({} not read in full)", crate::vocab::units::count(n, "file"))
            }
            (s, _) => s.word().to_string(),
        }
    }
}

/// The overall answer of a check, and its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CheckReport {
    /// The version of the check document ([`CHECK_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: Tool,
    /// The overall answer, and the exit code it gives.
    pub outcome: Outcome,
    /// The HIP runtime whose matching rules the verdicts follow (`vocab::runtime`).
    pub runtime: &'static str,
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
    /// With `--follow-links`: links followed out of their root, whose code was judged as part
    /// of the install (as the scan records them); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links_out_of_root: Vec<crate::model::LinkRecord>,
    /// `check --exe`: what the program loads and whether it starts; the verdicts are those of
    /// the libraries it loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<program::ProgramReport>,
    /// `check --gpu all`: one row per GPU, read from the verdicts above (absent otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<summary::GpuRow>,
    /// Each checked GPU against each amdgpu kernel module in the roots: does the driver know
    /// it, and does the root hold every firmware file it asks for (absent when no root holds a
    /// kernel module: whether the GPU comes up is not judged).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<driver::DriverCheck>,
}

impl CheckReport {
    /// The report of a program's libraries, with what it loads: a program that does not start,
    /// or whose GPU libraries cannot be loaded at run time, fails whatever its libraries' code.
    pub fn with_program(mut self, p: program::ProgramReport) -> CheckReport {
        // A program that does not start fails whatever else could not be read.
        if p.status == Status::Missing && (self.outcome != Outcome::Incomplete || !p.starts) {
            self.outcome = Outcome::Missing;
        } else if !p.unread.is_empty() && self.outcome == Outcome::Ok {
            self.outcome = Outcome::Incomplete;
        }
        self.program = Some(p);
        self
    }

    /// The report with one row per GPU (`check --gpu all`).
    pub fn with_summary(mut self) -> CheckReport {
        self.summary = summary::rows(&self);
        self
    }

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

/// What a check is told besides the model and the GPUs (the environment's Tensile folders are
/// the model's context, `library::Context::libpaths`).
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Installs found and not checked.
    pub not_checked: Vec<String>,
    /// The running system's kernel, to judge the GPUs' driver and firmware against in place of
    /// the roots' (`check` without ROOT).
    pub running_kernel: Option<driver::RunningKernel>,
}

/// `major.minor.stepping` of a target's KFD version, the form HSA_OVERRIDE_GFX_VERSION takes.
pub fn override_value(t: &crate::vocab::targets::Target) -> Option<String> {
    t.gfx_target_version.map(split_version).map(|(a, b, c)| format!("{a}.{b}.{c}"))
}

/// How many of `verdicts` are MISSING.
pub fn missing_count(verdicts: &[Verdict]) -> usize {
    verdicts.iter().filter(|v| v.status == Status::Missing).count()
}

/// The override hint for a device whose install misses pieces an ISA-compatible target has:
/// the setting, and the hint that explains it.
fn override_hint(
    model: &Model,
    device: &Device,
    targets: &Targets,
    by_install: &BTreeMap<Install, Vec<Verdict>>,
) -> BTreeMap<Install, (String, String)> {
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
    let alt_verdicts = library_verdicts(model, &alt_dev, targets);
    for (install, verdicts) in by_install {
        let missing = missing_count(verdicts);
        let still = alt_verdicts.get(install).map_or(missing, |v| missing_count(v));
        if missing > 0 && still < missing {
            let setting = format!("HSA_OVERRIDE_GFX_VERSION={value}");
            out.insert(install.clone(), (setting.clone(), format!(
                "{setting} makes the runtime treat this {} as {} ({} missing; {} code for {} of them). targets.toml records {} as ISA-compatible with {}: a widely used workaround, not support — it applies to every GPU in the process unless set per node (HSA_OVERRIDE_GFX_VERSION_<node>)",
                t.name, alt.name, crate::vocab::units::count(missing as u64, "library"), alt.name, missing - still, t.name, alt.name
            )));
        }
    }
    out
}

/// The warning for an override across ISAs the table does not call compatible.
fn override_warning(device: &Device, targets: &Targets) -> Option<String> {
    let o = device.r#override.as_ref()?;
    let Some(t) = targets.by_name(&device.native.processor) else {
        return Some(format!(
            "{}={} runs {} code on a {}, an ISA targets.toml does not know: nothing records them as compatible; kernels may fault, compute wrong results or hang the GPU",
            o.variable, o.value, device.effective.processor, device.native.processor
        ));
    };
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
pub fn check_device(model: &Model, device: &Device, targets: &Targets) -> BTreeMap<Install, GpuReport> {
    let by_install = library_verdicts(model, &device.effective, targets);
    let hints = override_hint(model, device, targets, &by_install);
    let warning = override_warning(device, targets);
    by_install
        .into_iter()
        .map(|(install, mut verdicts)| {
            // What each library has, in the natural order people read targets in.
            for v in &mut verdicts {
                v.available.sort_by(|a, b| targets.cmp(a, b));
            }
            let hint = hints.get(&install);
            let report = GpuReport {
                device: device.clone(),
                verdicts,
                hints: hint.map(|(_, text)| text.clone()).into_iter().collect(),
                warnings: warning.clone().into_iter().collect(),
                override_helps: hint.map(|(setting, _)| setting.clone()),
            };
            (install, report)
        })
        .collect()
}

/// Checks every device against a library model, install by install.
pub fn check(model: &Model, gpus: &Gpus, targets: &Targets, opts: CheckOptions) -> CheckReport {
    let snap = model.snapshot();
    let mut installs: BTreeMap<Install, Vec<GpuReport>> = BTreeMap::new();
    // Each GPU judged on its own (in parallel: `--gpu all` judges dozens), then gathered in
    // the devices' order, so the report is the same whatever the thread count.
    use rayon::prelude::*;
    let judged: Vec<BTreeMap<Install, GpuReport>> =
        gpus.devices.par_iter().map(|d| check_device(model, d, targets)).collect();
    for by_install in judged {
        for (install, report) in by_install {
            installs.entry(install).or_default().push(report);
        }
    }
    let unread_in = |install: &Install| {
        let of = |p: &Problem| install_of(snap.root_given(p.path.root), &p.path.display(&snap.roots));
        snap.problems.iter().filter(|p| &of(p) == install).count() as u64
    };
    let installs: Vec<InstallReport> = installs
        .into_iter()
        .map(|(install, gpus)| InstallReport {
            status: gpus.iter().map(GpuReport::status).max().unwrap_or(Status::Ok),
            unread: unread_in(&install),
            runtime: {
                let (rules, own) = model.runtime_of(&install, targets);
                own.map(|r| InstallRuntime {
                    library: r.path.display(&snap.roots),
                    version: r.version.clone(),
                    rules: rules.rules(),
                })
            },
            install,
            gpus,
        })
        .collect();
    // Only host code, bundles and Tensile libraries are libraries with device code; MIOpen's
    // databases and the device-library bitcode alone are nothing to check.
    let has_code = installs.iter().flat_map(|i| &i.gpus).flat_map(|g| &g.verdicts).any(|v| match v.kind {
        LibraryKind::HostLibrary | LibraryKind::Bundle => true,
        LibraryKind::Family(f) => cataloger(f).holds_device_code(),
    });
    // The kernel's side: a driver that does not know a GPU, or lacks a file it needs, leaves
    // the GPU down whatever its libraries hold.
    let mut targets_checked: Vec<(String, Vec<String>)> = Vec::new();
    for d in &gpus.devices {
        let name = d.native.processor.clone();
        if targets_checked.iter().all(|(n, _)| *n != name) {
            let prefixes = targets.by_name(&name).map(|t| t.firmware.clone()).unwrap_or_default();
            targets_checked.push((name, prefixes));
        }
    }
    let kernel = match &opts.running_kernel {
        Some(k) => driver::Kernel::Running(k),
        None => driver::Kernel::Roots { drivers: &snap.drivers, roots: &snap.roots },
    };
    let drivers = driver::check_drivers(kernel, &targets_checked);
    let driver_down = drivers.iter().any(|d| d.judgement.outcome.down());
    // A module that could not be read leaves the GPU's side unjudged: no OK over it.
    let driver_unread = drivers.iter().any(|d| d.unjudged == Some(driver::Unjudged::ModuleUnreadable));
    let outcome = if installs.iter().any(|i| i.status == Status::Missing) || driver_down {
        Outcome::Missing
    } else if !snap.problems.is_empty() || !gpus.unknown.is_empty() || driver_unread {
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
        runtime: crate::vocab::runtime::ASSUMED_RUNTIME,
        roots: snap.roots.clone(),
        devices: gpus.devices.clone(),
        unknown_gpus: gpus.unknown.clone(),
        installs,
        not_checked: opts.not_checked,
        problems: snap.problems.clone(),
        links_out_of_root: snap.links_out_of_root.clone(),
        program: None,
        summary: Vec::new(),
        drivers,
    }
}
