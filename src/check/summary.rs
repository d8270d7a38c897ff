//! `check --gpu all`: which GPUs the roots serve. The GPUs are every GPU target anything under
//! the roots is for, and this machine's; each gets one row read from the check's own verdicts
//! (never judged again): its worst status across the installs, the first library that decides
//! it and how many more share that status, and the override that would serve more of it.

use serde::Serialize;

use super::devices::{Device, Gpus};
use super::driver::DriverOutcome;
use super::{CheckReport, GpuReport, LibraryKind, Status};
use crate::model::Snapshot;
use crate::vocab::targets::Targets;

/// One GPU in one row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GpuRow {
    /// The GPU's number among the devices checked (`devices[].index`).
    pub gpu: u32,
    /// Its target ID.
    pub target: String,
    /// The target ID its code is looked up by, when an override makes it another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_as: Option<String>,
    /// KFD node, for a GPU of this machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The worst status of its verdicts in every install: OK and WARN serve it.
    pub status: Status,
    /// For WARN and MISSING: the first library (in install and verdict order) with that status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<Decider>,
    /// How many more libraries have that status.
    pub more: usize,
    /// The override under which more of its code is found (`HSA_OVERRIDE_GFX_VERSION=…`), as
    /// the check's hint for it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub override_helps: Option<String>,
    /// The kernel's driver and firmware, as the check judged them (`drivers`): a driver that
    /// leaves the GPU down makes the row MISSING whatever its libraries hold.
    pub driver: DriverOutcome,
}

impl GpuRow {
    /// True when every required piece is present (OK or WARN).
    pub fn served(&self) -> bool {
        self.status != Status::Missing
    }
}

/// The library that decides a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Decider {
    /// The install it belongs to, as shown.
    pub install: String,
    /// The library, as shown.
    pub library: String,
    pub kind: LibraryKind,
}

/// The GPU targets anything under the roots is for, in the natural order: processors of the
/// table with code or files of their own (those whose only code is the runtime's own are not:
/// `aggregate::runtime_only`), and each processor a generic target present serves.
pub fn code_targets(snap: &Snapshot, targets: &Targets) -> Vec<String> {
    let present = crate::aggregate::targets_present(snap);
    let mut out: Vec<String> = targets
        .iter()
        .filter(|t| !t.is_generic())
        .filter(|t| {
            let own = present.contains(&t.name) && !crate::aggregate::runtime_only(snap, targets, &t.name);
            let generic = t.generic.as_ref().is_some_and(|g| present.contains(g));
            own || generic
        })
        .map(|t| t.name.clone())
        .collect();
    targets.sort(&mut out);
    out
}

/// A device for each of [`code_targets`], each as it is: an environment's override applies to a
/// machine's GPUs, not to these.
pub fn code_gpus(snap: &Snapshot, targets: &Targets) -> Gpus {
    let names = code_targets(snap, targets);
    // Names from the table itself: each parses.
    super::devices::from_args(&names, &super::devices::Env::default(), targets).unwrap_or_default()
}

/// The rows of every GPU target the model's code is for, as `check --gpu all` gives them
/// without a machine: what `scan`'s header counts as served.
pub fn code_rows(model: &crate::library::Model, targets: &Targets) -> Vec<GpuRow> {
    let gpus = code_gpus(model.snapshot(), targets);
    rows(&super::check(model, &gpus, targets, super::CheckOptions::default()))
}

/// The GPUs `--gpu all` checks: `machine`'s (this machine's KFD GPUs, with the runtime's
/// environment), then `listed` (the code targets and any named beside `all`) that no GPU of
/// the machine already stands for, numbered in that order.
pub fn every_gpu(machine: Gpus, listed: Gpus) -> Gpus {
    let mut devices: Vec<Device> = machine.devices;
    for d in listed.devices {
        let same = |m: &Device| m.native.target_id == d.native.target_id && m.effective == d.effective;
        if !devices.iter().any(same) {
            devices.push(d);
        }
    }
    for (i, d) in devices.iter_mut().enumerate() {
        d.index = i as u32;
    }
    Gpus { devices, unknown: machine.unknown }
}

/// One row per GPU of `report`, in the order of its devices; none when no install was checked
/// (nothing to check: a row would read as OK).
pub fn rows(report: &CheckReport) -> Vec<GpuRow> {
    if report.installs.is_empty() {
        return Vec::new();
    }
    report.devices.iter().map(|d| row(report, d)).collect()
}

/// The row of one device: its reports in every install, folded.
fn row(report: &CheckReport, d: &Device) -> GpuRow {
    let of_gpu: Vec<(&str, &GpuReport)> = report
        .installs
        .iter()
        .flat_map(|i| i.gpus.iter().map(move |g| (i.install.path.as_str(), g)))
        .filter(|(_, g)| g.device.index == d.index)
        .collect();
    let driver = driver_of(report, &d.native.processor);
    let libraries = of_gpu.iter().map(|(_, g)| g.status()).max().unwrap_or(Status::Ok);
    let status = if driver.down() { Status::Missing } else { libraries };
    let mut deciders = of_gpu
        .iter()
        .flat_map(|(install, g)| g.verdicts.iter().map(move |v| (*install, v)))
        .filter(|(_, v)| status != Status::Ok && v.status == status);
    let first = deciders.next().map(|(install, v)| Decider {
        install: install.to_string(),
        library: v.library.clone(),
        kind: v.kind,
    });
    GpuRow {
        gpu: d.index,
        target: d.native.target_id.clone(),
        checked_as: d.r#override.as_ref().map(|_| d.effective.target_id.clone()),
        node: d.node,
        status,
        first,
        more: deciders.count(),
        override_helps: of_gpu.iter().find_map(|(_, g)| g.override_helps.clone()),
        driver,
    }
}

/// The driver's word on `processor` across the kernels judged: down if any leaves it down (the
/// first such), else OK if one serves it, else unknown.
fn driver_of(report: &CheckReport, processor: &str) -> DriverOutcome {
    let of: Vec<&DriverOutcome> =
        report.drivers.iter().filter(|x| x.gpu == processor).map(|x| &x.judgement.outcome).collect();
    let down = of.iter().find(|o| o.down());
    let ok = of.iter().any(|o| **o == DriverOutcome::Ok);
    down.map(|o| **o).unwrap_or(if ok { DriverOutcome::Ok } else { DriverOutcome::Unknown })
}
