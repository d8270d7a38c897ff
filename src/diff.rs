//! Diff: what changed between two snapshots (two installs, or saved JSON). Pure.
//!
//! Libraries are paired by identity, not raw path (see [`identity`]): `librocblas.so.4` in
//! `/opt/rocm-6.3.0/lib` pairs with `librocblas.so.5` in `/opt/rocm-7.2.0/lib` and with
//! Debian's `usr/lib/x86_64-linux-gnu/librocblas.so.0.1`. Artifact folders are units of their
//! own: a Tensile library, MIOpen's databases, the firmware folder, the device-library bitcode.
//!
//! Losses are judged as `check` judges: for each unit, each device variant (each processor
//! with each xnack/sramecc mode it supports) gets the worst verdict of the unit's libraries on
//! each side from the library model (`library::Model::judge`); a variant whose status is worse after
//! (OK → WARN → MISSING, no library counting as MISSING) is a loss, a better one a gain. Units
//! no program loads (firmware) have no verdicts: there a variant whose files are gone is a loss. A processor served on both sides under other target
//! IDs is a target-ID change (`gfx90a:xnack-` and `gfx90a:xnack+` become plain `gfx90a`, which
//! serves both): never a loss by itself.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::families::cataloger;
pub use crate::library::identity::{identity, path_identity};
use crate::library::{registrable, Library, Model};
use crate::model::{CodeObjectRecord, FileRecord, Snapshot, Tool};
use crate::vocab::runtime::{loads, CodeTarget, Runtime};
use crate::vocab::target_id::{processor_of, target_id, DeviceTarget, Setting};
use crate::vocab::targets::Targets;
use crate::vocab::verdict::Status;

/// Version of the diff JSON document.
/// 2: losses per device (generic targets resolved), sides' problems, an overall `outcome`.
pub const DIFF_SCHEMA_VERSION: u32 = 2;

/// What a unit (library or artifact folder) holds on one side.
#[derive(Debug, Clone, Default)]
struct Unit {
    /// Target IDs its code or files are for, each with the generic version of its generic
    /// code objects (`None` for specific targets).
    target_ids: BTreeMap<String, Option<u8>>,
    /// Files of the unit on this side, by path (with their facts).
    files: Vec<FileRecord>,
}

impl Unit {
    fn add(&mut self, id: String, generic_version: Option<u8>) {
        let slot = self.target_ids.entry(id).or_insert(generic_version);
        *slot = (*slot).max(generic_version);
    }

    fn add_code(&mut self, cos: &[CodeObjectRecord]) {
        for c in cos.iter().filter(|c| registrable(c)) {
            self.add(c.target_id.clone(), c.generic_version);
        }
    }
}

fn units(snap: &Snapshot) -> BTreeMap<String, Unit> {
    let mut out: BTreeMap<String, Unit> = BTreeMap::new();
    for f in &snap.files {
        let u = out.entry(identity(f)).or_default();
        match f.artifact.as_ref().and_then(|a| Some((a, a.family?))) {
            Some((a, family)) => {
                for (id, generic_version) in cataloger(family).unit_targets(f, a) {
                    u.add(id, generic_version);
                }
            }
            None => u.add_code(&f.code_objects),
        }
        u.files.push(f.clone());
    }
    out
}

/// Every xnack/sramecc variant of a device target.
fn device_variants(d: &crate::vocab::targets::Target) -> Vec<DeviceTarget> {
    let modes = |f: &str| if d.supports(f) { vec![Setting::Off, Setting::On] } else { vec![Setting::Any] };
    let mut out = Vec::new();
    for s in modes("sramecc") {
        for x in modes("xnack") {
            out.push(DeviceTarget {
                processor: d.name.clone(),
                sramecc: s,
                xnack: x,
                target_id: target_id(&d.name, s, x),
            });
        }
    }
    out
}

/// The device variants (each processor with each xnack/sramecc mode it supports) a unit's
/// target IDs serve, as the runtime would match them (`vocab::runtime`), each with the
/// generic target that serves it when no code for the device itself does. A generic target is
/// never a device: `gfx11-generic` code shows as the gfx1100…gfx1153 variants it serves.
fn served(unit: &Unit, targets: &Targets) -> BTreeMap<String, Option<String>> {
    let mut out: BTreeMap<String, Option<String>> = BTreeMap::new();
    for (id, generic_version) in &unit.target_ids {
        let processor = processor_of(id);
        let Some(t) = targets.by_name(processor) else {
            // A processor the table does not know stays visible as itself.
            out.insert(id.clone(), None);
            continue;
        };
        let devices: Vec<&crate::vocab::targets::Target> = if t.is_generic() {
            targets.members_of(processor).into_iter().filter_map(|m| targets.by_name(m)).collect()
        } else {
            vec![t]
        };
        let code = CodeTarget {
            target_id: id,
            generic_version: *generic_version,
            entry_id: None,
            compressed: false,
        };
        let via = t.is_generic().then(|| processor.to_string());
        for dev in devices.into_iter().flat_map(device_variants) {
            // Files no program loads: what they are for, under the assumed runtime's rules.
            if loads(code, &dev, targets, Runtime::default()).is_some() {
                let slot = out.entry(dev.target_id).or_insert_with(|| via.clone());
                if via.is_none() {
                    *slot = None;
                }
            }
        }
    }
    out
}

/// Collapses variants to processors where all of a processor's variants in `all` are present.
fn summarize(vars: &BTreeSet<String>, all: &BTreeSet<String>) -> Vec<String> {
    let mut by_proc: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    for v in vars {
        by_proc.entry(processor_of(v)).or_default().push(v);
    }
    let mut out = Vec::new();
    for (p, vs) in by_proc {
        let total = all.iter().filter(|v| processor_of(v) == p).count();
        if vs.len() == total {
            out.push(p.to_string());
        } else {
            out.extend(vs.into_iter().cloned());
        }
    }
    out
}

/// The generic target that served each listed device (or variant) on one side, for those a
/// generic target served.
fn via_of(listed: &[String], side: &BTreeMap<String, Option<String>>) -> BTreeMap<String, String> {
    listed
        .iter()
        .filter_map(|t| {
            let via =
                side.iter().filter(|(v, _)| *v == t || processor_of(v) == t).find_map(|(_, g)| g.clone())?;
            Some((t.clone(), via))
        })
        .collect()
}

/// A change of what a unit serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Coverage {
    /// The unit's identity (`librocblas.so`, `tensile:rocblas`, `firmware:amdgpu`).
    pub library: String,
    /// Whether the unit is there on both sides.
    pub how: UnitChange,
    /// Devices (or single variants, `gfx90a:xnack+`) that lost or gained their code; never a
    /// generic target.
    pub targets: Vec<String>,
    /// For a loss, the generic target that served a device before; for a gain, the one that
    /// serves it now (`gfx941` → `gfx9-4-generic`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub via_generic: BTreeMap<String, String>,
}

/// How a unit is there across the two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UnitChange {
    /// Nothing of it before (no device code, files or databases at all).
    New,
    /// Nothing of it left.
    Gone,
    /// There on both sides.
    Changed,
}

/// A library whose code objects or bundles changed in number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LibraryChange {
    pub library: String,
    /// Code objects per code object version (`v4`: 26), old and new.
    pub old_code_objects: BTreeMap<String, u64>,
    pub new_code_objects: BTreeMap<String, u64>,
    pub old_bundles: u64,
    pub new_bundles: u64,
}

/// Target IDs that changed while every device variant stays served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IdChange {
    /// The unit's identity.
    pub library: String,
    pub processor: String,
    /// Its target IDs on the old side.
    pub old: Vec<String>,
    /// Its target IDs on the new side.
    pub new: Vec<String>,
}

/// One family × target count, old and new.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CountChange {
    /// A `families` row of the snapshot, or `code-objects` for all code objects.
    pub family: String,
    /// The processor.
    pub target: String,
    /// The count on the old side.
    pub old: u64,
    /// The count on the new side.
    pub new: u64,
}

/// A file present on both sides, changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileChange {
    pub identity: String,
    pub old_path: String,
    pub new_path: String,
    pub old_size: u64,
    pub new_size: u64,
    pub old_targets: Vec<String>,
    pub new_targets: Vec<String>,
    pub old_code_objects: usize,
    pub new_code_objects: usize,
    /// Firmware: ucode version old → new, when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ucode: Option<(u32, u32)>,
    /// MIOpen: records old → new, when they changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<(u64, u64)>,
}

/// A file on one side only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileOnly {
    /// The identity of the unit it belongs to (`librocblas.so`, `tensile:rocblas`).
    pub identity: String,
    /// Its path, relative to its root.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// The targets it serves.
    pub targets: Vec<String>,
}

/// Where a side of a diff came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SideSource {
    /// A root scanned now.
    Scan,
    /// A JSON snapshot read back.
    Snapshot,
}

/// One side of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Side {
    /// A root scanned now, or a snapshot read back.
    pub source: SideSource,
    /// Its roots, as given (a snapshot's: as its scan gave them).
    pub roots: Vec<String>,
    /// Regular files looked at.
    pub files: u64,
    /// Code objects in all.
    pub code_objects: u64,
    /// Files of this side that could not be read (paths joined with their roots).
    pub problems: Vec<SideProblem>,
    /// The targets a snapshot's tables were cut to (`scan --only` / `--compare`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filtered_to: Option<Vec<String>>,
    /// Images of this side read from a registry: where each came from, its manifest digest
    /// first (a tag moves; the digest says what was compared). Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::model::ImageSource>,
}

/// A file one side could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideProblem {
    /// The file, joined with its root.
    pub path: String,
    /// One line: what went wrong.
    pub message: String,
}

/// The overall answer of a diff, and its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DiffOutcome {
    /// Nothing differs.
    Same,
    /// Something changed, and no device lost its code.
    Changed,
    /// Some device lost its code in some library.
    Loss,
    /// A side has files that could not be read: what looks lost may only be unread.
    Incomplete,
}

/// Everything that changed, most important first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SnapshotDiff {
    /// The version of the diff document ([`DIFF_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: Tool,
    /// The overall answer, and the exit code it gives.
    pub outcome: DiffOutcome,
    /// The old side: where it came from and what it held.
    pub old: Side,
    /// The new side.
    pub new: Side,
    /// Targets compared, when a side was written filtered (`scan --only`): only these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared_targets: Option<Vec<String>>,
    /// Units in which a device's (or variant's) code is worse on the new side.
    pub losses: Vec<Coverage>,
    /// Units in which a device's (or variant's) code is better on the new side.
    pub gains: Vec<Coverage>,
    /// Target IDs that changed while every device variant stays served.
    pub target_id_changes: Vec<IdChange>,
    /// Libraries whose code objects (per version) or bundles changed in number.
    pub libraries: Vec<LibraryChange>,
    /// Per family and target, old and new counts for every target whose counts changed in
    /// some family (`code-objects` counts all code objects); equal rows give context.
    pub counts: Vec<CountChange>,
    /// Files on the new side only.
    pub files_added: Vec<FileOnly>,
    /// Files on the old side only.
    pub files_removed: Vec<FileOnly>,
    /// Files on both sides that changed.
    pub files_changed: Vec<FileChange>,
    /// `diff --only`: the targets this diff was cut to; absent when it covers every target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
}

/// The processor of a target ID (`gfx90a:xnack+` → `gfx90a`).
fn processor(target_id: &str) -> &str {
    target_id.split(':').next().unwrap_or(target_id)
}

impl SnapshotDiff {
    /// Cuts the diff to what concerns `only` (by processor; a generic target counts for the
    /// targets it serves): losses, gains, target-ID changes, counts and files of other targets
    /// go, as do per-library code-object totals (not per target), and the outcome is judged
    /// again on what is left.
    pub fn restrict(&mut self, only: &[String], targets: &Targets) {
        if only.is_empty() {
            return;
        }
        let keep = |t: &str| {
            let p = processor(t);
            only.iter().any(|o| o == p || crate::vocab::runtime::generic_of(o, targets) == Some(p))
        };
        for list in [&mut self.losses, &mut self.gains] {
            for c in list.iter_mut() {
                c.targets.retain(|t| keep(t));
                c.via_generic.retain(|t, _| keep(t));
            }
            list.retain(|c| !c.targets.is_empty());
        }
        self.target_id_changes.retain(|c| keep(&c.processor));
        // Code-object totals per library are not per target: they say nothing about these.
        self.libraries.clear();
        self.counts.retain(|c| keep(&c.target));
        let touches = |ts: &[String]| ts.iter().any(|t| keep(t));
        self.files_added.retain(|f| touches(&f.targets));
        self.files_removed.retain(|f| touches(&f.targets));
        self.files_changed.retain(|f| touches(&f.old_targets) || touches(&f.new_targets));
        self.only = Some(only.to_vec());
        if self.outcome != DiffOutcome::Incomplete {
            self.outcome = if !self.losses.is_empty() {
                DiffOutcome::Loss
            } else if self.is_empty() {
                DiffOutcome::Same
            } else {
                DiffOutcome::Changed
            };
        }
    }
    /// True when nothing differs.
    pub fn is_empty(&self) -> bool {
        self.losses.is_empty()
            && self.gains.is_empty()
            && self.target_id_changes.is_empty()
            && self.libraries.is_empty()
            && self.counts.iter().all(|c| c.old == c.new)
            && self.files_added.is_empty()
            && self.files_removed.is_empty()
            && self.files_changed.is_empty()
    }

    /// The exit status the result deserves: incomplete sides first (a loss from a partial
    /// read is not a loss), then losses when the caller gates on them.
    pub fn exit_status(&self, fail_on_loss: bool) -> crate::exit::ExitStatus {
        use crate::exit::ExitStatus;
        match self.outcome {
            DiffOutcome::Incomplete => ExitStatus::Incomplete,
            DiffOutcome::Loss if fail_on_loss => ExitStatus::Missing,
            _ => ExitStatus::Clean,
        }
    }
}

fn file_targets(f: &FileRecord) -> Vec<String> {
    let mut t: BTreeSet<String> = f.code_objects.iter().map(|c| c.target_id.clone()).collect();
    if let Some(a) = &f.artifact {
        t.extend(a.targets());
    }
    t.into_iter().collect()
}

/// Key of a file within its unit: artifact files by name (and Tensile per-arch folder), other
/// files by the unit identity itself.
fn file_key(f: &FileRecord) -> String {
    let id = identity(f);
    if f.artifact.is_some() {
        let parts: Vec<&str> = f.path.path.rsplit('/').take(2).collect();
        let name = parts.first().copied().unwrap_or("");
        let folder = parts.get(1).copied().filter(|d| d.starts_with("gfx"));
        return match folder {
            Some(d) => format!("{id}/{d}/{name}"),
            None => format!("{id}/{name}"),
        };
    }
    id
}

fn side(snap: &Snapshot, source: SideSource) -> Side {
    Side {
        source,
        roots: snap.roots.clone(),
        files: snap.summary.files,
        code_objects: snap.summary.code_objects,
        problems: snap
            .problems
            .iter()
            .map(|p| SideProblem { path: p.path.display(&snap.roots), message: p.message.clone() })
            .collect(),
        filtered_to: snap.filtered_to.clone(),
        images: snap.archives.iter().filter_map(|a| a.image.clone()).collect(),
    }
}

/// The targets both sides can speak for: every target, unless a side was written filtered.
fn comparable(old: &Snapshot, new: &Snapshot) -> Option<BTreeSet<String>> {
    match (&old.filtered_to, &new.filtered_to) {
        (None, None) => None,
        (Some(a), None) | (None, Some(a)) => Some(a.iter().cloned().collect()),
        (Some(a), Some(b)) => Some(a.iter().filter(|t| b.contains(t)).cloned().collect()),
    }
}

/// The libraries of a model, by identity.
fn libraries_by_identity(model: &Model) -> BTreeMap<String, Vec<&Library>> {
    let mut out: BTreeMap<String, Vec<&Library>> = BTreeMap::new();
    for lib in model.libraries().iter().filter(|l| l.judged()) {
        out.entry(lib.identity.clone()).or_default().push(lib);
    }
    out
}

/// The device variants worth judging: every mode of each processor either side has code or
/// data for, and of the processors a generic target there serves.
fn variants(units: &[&BTreeMap<String, Unit>], targets: &Targets) -> Vec<DeviceTarget> {
    let mut procs: BTreeSet<&str> = BTreeSet::new();
    for id in units.iter().flat_map(|u| u.values()).flat_map(|u| u.target_ids.keys()) {
        let p = processor_of(id);
        match targets.by_name(p) {
            Some(t) if t.is_generic() => procs.extend(targets.members_of(p)),
            Some(_) => {
                procs.insert(p);
            }
            None => {}
        }
    }
    procs.into_iter().filter_map(|p| targets.by_name(p)).flat_map(device_variants).collect()
}

/// The libraries of one unit paired across the sides: the same path inside their roots first;
/// then, when one library of the unit is left on each side, those two (an upgrade moves
/// `opt/rocm-6.3.0/lib/librocblas.so.4` to `opt/rocm-7.2.0/lib/librocblas.so.5`); any other
/// library is new or gone. A library added beside others never stands in for them.
fn pairs<'a>(lo: &[&'a Library], ln: &[&'a Library]) -> Vec<(Option<&'a Library>, Option<&'a Library>)> {
    let mut out = Vec::new();
    let mut taken = vec![false; ln.len()];
    let mut rest_old = Vec::new();
    for &o in lo {
        match ln.iter().enumerate().find(|(j, n)| !taken[*j] && n.rel == o.rel) {
            Some((j, &n)) => {
                taken[j] = true;
                out.push((Some(o), Some(n)));
            }
            None => rest_old.push(o),
        }
    }
    let rest_new: Vec<&Library> = ln.iter().zip(&taken).filter(|(_, t)| !**t).map(|(n, _)| *n).collect();
    match (rest_old.as_slice(), rest_new.as_slice()) {
        ([o], [n]) => out.push((Some(*o), Some(*n))),
        _ => {
            out.extend(rest_old.into_iter().map(|o| (Some(o), None)));
            out.extend(rest_new.into_iter().map(|n| (None, Some(n))));
        }
    }
    out
}

/// One side of a pair for a device: its library's status and the generic target that serves
/// it, or, where the library is not on this side, what its loader does without it
/// (`library::Model::judge_absent`, from the other side's library). `None`: nothing to say.
fn side_status(
    (model, lib): (&Model, Option<&Library>),
    (other_model, other): (&Model, Option<&Library>),
    dev: &DeviceTarget,
    targets: &Targets,
) -> Option<(Status, Option<String>)> {
    match (lib, other) {
        (Some(l), _) => model.judge(l, dev, targets).map(|v| (v.status, v.via_generic)),
        (None, Some(o)) => Some((other_model.judge_absent(o, dev, targets), None)),
        (None, None) => None,
    }
}

/// The two sides of a diff with their libraries.
struct Sides<'a> {
    old: &'a Model,
    new: &'a Model,
    lo: BTreeMap<String, Vec<&'a Library>>,
    ln: BTreeMap<String, Vec<&'a Library>>,
}

/// Variants lost and gained in a unit, each with the generic target that served it on the side
/// that served it, and the variants some side serves (OK or WARN).
type Changes = (BTreeMap<String, Option<String>>, BTreeMap<String, Option<String>>, BTreeSet<String>);

/// The changes of one unit with verdicts: a variant is lost when some pair of its libraries
/// judges it worse on the new side, gained when some pair judges it better.
fn judged_changes(sides: &Sides, id: &str, devices: &[DeviceTarget], targets: &Targets) -> Changes {
    let none = Vec::new();
    let (lo, ln) = (sides.lo.get(id).unwrap_or(&none), sides.ln.get(id).unwrap_or(&none));
    let pairs = pairs(lo, ln);
    let (mut lost, mut won, mut seen) = (BTreeMap::new(), BTreeMap::new(), BTreeSet::new());
    for dev in devices {
        for (o, n) in &pairs {
            let old = side_status((sides.old, *o), (sides.new, *n), dev, targets);
            let new = side_status((sides.new, *n), (sides.old, *o), dev, targets);
            let (Some((so, vo)), Some((sn, vn))) = (old, new) else { continue };
            if so.min(sn) < Status::Missing {
                seen.insert(dev.target_id.clone());
            }
            if sn > so {
                lost.entry(dev.target_id.clone()).or_insert(vo);
            } else if sn < so {
                won.entry(dev.target_id.clone()).or_insert(vn);
            }
        }
    }
    (lost, won, seen)
}

/// The changes of a unit no program loads (firmware): by what its files serve.
fn held_changes(a: &Unit, b: &Unit, keep: impl Fn(&String) -> bool, targets: &Targets) -> Changes {
    let (sa, sb) = (served(a, targets), served(b, targets));
    let pick = |x: &BTreeMap<String, Option<String>>, y: &BTreeMap<String, Option<String>>| {
        x.iter()
            .filter(|(v, _)| !y.contains_key(*v) && keep(v))
            .map(|(v, g)| (v.clone(), g.clone()))
            .collect()
    };
    let seen = sa.keys().chain(sb.keys()).filter(|v| keep(v)).cloned().collect();
    (pick(&sa, &sb), pick(&sb, &sa), seen)
}

/// A coverage entry for the variants of one unit that changed, collapsed to processors where
/// every variant of the processor judged changed.
fn coverage_of(
    id: &str,
    how: UnitChange,
    changed: &BTreeMap<String, Option<String>>,
    all: &BTreeSet<String>,
) -> Option<Coverage> {
    if changed.is_empty() {
        return None;
    }
    let vars: BTreeSet<String> = changed.keys().cloned().collect();
    let listed = summarize(&vars, all);
    let via_generic = via_of(&listed, changed);
    Some(Coverage { library: id.to_string(), how, targets: listed, via_generic })
}

/// Losses, gains and target-ID changes of every unit.
fn coverage(
    sides: &Sides,
    uo: &BTreeMap<String, Unit>,
    un: &BTreeMap<String, Unit>,
    only: Option<&BTreeSet<String>>,
    targets: &Targets,
) -> (Vec<Coverage>, Vec<Coverage>, Vec<IdChange>) {
    let (mut losses, mut gains, mut id_changes) = (Vec::new(), Vec::new(), Vec::new());
    let empty = Unit::default();
    let devices: Vec<DeviceTarget> = variants(&[uo, un], targets)
        .into_iter()
        .filter(|d| only.is_none_or(|o| o.contains(&d.processor)))
        .collect();
    let ids: BTreeSet<&String> =
        uo.keys().chain(un.keys()).chain(sides.lo.keys()).chain(sides.ln.keys()).collect();
    for id in ids {
        let (a, b) = (uo.get(id).unwrap_or(&empty), un.get(id).unwrap_or(&empty));
        let how = match (uo.contains_key(id), un.contains_key(id)) {
            (true, false) => UnitChange::Gone,
            (false, true) => UnitChange::New,
            _ => UnitChange::Changed,
        };
        let (lost, won, seen) = if sides.lo.contains_key(id) || sides.ln.contains_key(id) {
            judged_changes(sides, id, &devices, targets)
        } else {
            held_changes(a, b, |v: &String| only.is_none_or(|o| o.contains(processor_of(v))), targets)
        };
        losses.extend(coverage_of(id, how, &lost, &seen));
        gains.extend(coverage_of(id, how, &won, &seen));
        // A processor served on both sides under other target IDs: a change of spelling. Any
        // device variant it gains or loses is listed above with the gains and losses.
        let procs: BTreeSet<&str> =
            a.target_ids.keys().chain(b.target_ids.keys()).map(|t| processor_of(t)).collect();
        for p in procs.into_iter().filter(|p| only.is_none_or(|o| o.contains(*p))) {
            let of =
                |u: &Unit| u.target_ids.keys().filter(|t| processor_of(t) == p).cloned().collect::<Vec<_>>();
            let (oa, ob) = (of(a), of(b));
            if !oa.is_empty() && !ob.is_empty() && oa != ob {
                id_changes.push(IdChange { library: id.clone(), processor: p.to_string(), old: oa, new: ob });
            }
        }
    }
    (losses, gains, id_changes)
}

/// Compares two library models (a scan's, or a snapshot's read back).
pub fn diff(
    old_model: &Model,
    new_model: &Model,
    sources: (SideSource, SideSource),
    targets: &Targets,
) -> SnapshotDiff {
    let (old, new) = (old_model.snapshot(), new_model.snapshot());
    let (uo, un) = (units(old), units(new));
    let compared = comparable(old, new);
    let sides = Sides {
        old: old_model,
        new: new_model,
        lo: libraries_by_identity(old_model),
        ln: libraries_by_identity(new_model),
    };
    let (mut losses, mut gains, id_changes) = coverage(&sides, &uo, &un, compared.as_ref(), targets);
    let (lost, gained) = driver_coverage(old, new, compared.as_ref(), targets);
    losses.extend(lost);
    gains.extend(gained);
    let files = file_changes(old, new);
    let mut d = SnapshotDiff {
        schema_version: DIFF_SCHEMA_VERSION,
        tool: Tool::current(),
        outcome: DiffOutcome::Same,
        old: side(old, sources.0),
        new: side(new, sources.1),
        counts: count_changes(old, new, compared.as_ref(), targets),
        compared_targets: compared.map(|o| {
            let mut v: Vec<String> = o.into_iter().collect();
            targets.sort(&mut v);
            v
        }),
        losses,
        gains,
        target_id_changes: id_changes,
        libraries: library_changes(&uo, &un),
        files_added: files.added,
        files_removed: files.removed,
        files_changed: files.changed,
        only: None,
    };
    // Every list of targets in the natural order.
    for c in d.losses.iter_mut().chain(d.gains.iter_mut()) {
        targets.sort(&mut c.targets);
    }
    for f in d.files_added.iter_mut().chain(d.files_removed.iter_mut()) {
        targets.sort(&mut f.targets);
    }
    for f in d.files_changed.iter_mut() {
        targets.sort(&mut f.old_targets);
        targets.sort(&mut f.new_targets);
    }
    d.outcome = if !old.problems.is_empty() || !new.problems.is_empty() {
        DiffOutcome::Incomplete
    } else if !d.losses.is_empty() {
        DiffOutcome::Loss
    } else if d.is_empty() {
        DiffOutcome::Same
    } else {
        DiffOutcome::Changed
    };
    d
}

/// The unit a kernel's amdgpu driver and its firmware make, across the two sides.
pub const DRIVER_UNIT: &str = "driver:amdgpu";

/// Targets the kernel's side serves on one side and not the other: a target is served when some
/// amdgpu module of the side knows it and the side holds every firmware file it asks for
/// (`check::driver`, as `check` judges it). A side without a kernel says nothing: no loss or
/// gain is claimed against it.
fn driver_coverage(
    old: &Snapshot,
    new: &Snapshot,
    compared: Option<&BTreeSet<String>>,
    targets: &Targets,
) -> (Option<Coverage>, Option<Coverage>) {
    if old.drivers.is_empty() || new.drivers.is_empty() {
        return (None, None);
    }
    let served = |s: &Snapshot| -> BTreeSet<String> {
        let gpus: Vec<(String, Vec<String>)> = targets
            .iter()
            .filter(|t| !t.firmware.is_empty() && compared.is_none_or(|c| c.contains(&t.name)))
            .map(|t| (t.name.clone(), t.firmware.clone()))
            .collect();
        let kernel = crate::check::driver::Kernel::Roots { drivers: &s.drivers, roots: &s.roots };
        // As check judges a GPU: served when a kernel serves it and none leaves it down.
        let rows = crate::check::driver::check_drivers(kernel, &gpus);
        let down: BTreeSet<&str> =
            rows.iter().filter(|d| d.judgement.outcome.down()).map(|d| d.gpu.as_str()).collect();
        rows.iter()
            .filter(|d| d.judgement.outcome == crate::check::driver::DriverOutcome::Ok)
            .filter(|d| !down.contains(d.gpu.as_str()))
            .map(|d| d.gpu.clone())
            .collect()
    };
    let (before, after) = (served(old), served(new));
    let unit = |t: Vec<String>| {
        (!t.is_empty()).then(|| Coverage {
            library: DRIVER_UNIT.to_string(),
            how: UnitChange::Changed,
            targets: t,
            via_generic: BTreeMap::new(),
        })
    };
    (unit(before.difference(&after).cloned().collect()), unit(after.difference(&before).cloned().collect()))
}

/// Counts per family and target (and all code objects per target) that differ, for the
/// targets compared, in target order.
fn count_changes(
    old: &Snapshot,
    new: &Snapshot,
    compared: Option<&BTreeSet<String>>,
    targets: &Targets,
) -> Vec<CountChange> {
    let table = |s: &Snapshot| {
        let mut t = s.families.clone();
        t.insert("code-objects".into(), s.targets.iter().map(|(k, v)| (k.clone(), v.code_objects)).collect());
        t
    };
    let (to, tn) = (table(old), table(new));
    let families: Vec<&String> = to.keys().chain(tn.keys()).collect::<BTreeSet<_>>().into_iter().collect();
    let get = |t: &crate::model::IndexMap<String, crate::model::TargetMap<u64>>, f: &str, k: &str| {
        t.get(f).and_then(|m| m.get(k)).copied().unwrap_or(0)
    };
    let mut changed_targets: Vec<String> = families
        .iter()
        .flat_map(|f| to.get(*f).into_iter().chain(tn.get(*f)).flat_map(|m| m.keys()))
        .filter(|t| compared.is_none_or(|o| o.contains(*t)))
        .filter(|t| families.iter().any(|f| get(&to, f, t) != get(&tn, f, t)))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    targets.sort(&mut changed_targets);
    let mut counts = Vec::new();
    for t in &changed_targets {
        for fam in &families {
            let (x, y) = (get(&to, fam, t), get(&tn, fam, t));
            if x > 0 || y > 0 {
                counts.push(CountChange { family: (*fam).clone(), target: t.clone(), old: x, new: y });
            }
        }
    }
    counts
}

/// Libraries whose code objects (per code object version) or bundles changed in number.
fn library_changes(uo: &BTreeMap<String, Unit>, un: &BTreeMap<String, Unit>) -> Vec<LibraryChange> {
    let tally = |u: Option<&Unit>| {
        let mut by_version: BTreeMap<String, u64> = BTreeMap::new();
        let mut bundles = 0;
        for f in u.map(|u| u.files.as_slice()).unwrap_or_default() {
            bundles += f.bundles;
            for c in &f.code_objects {
                let v = c.code_object_version.map_or_else(|| "other".to_string(), |v| format!("v{v}"));
                *by_version.entry(v).or_default() += 1;
            }
        }
        (by_version, bundles)
    };
    let mut libraries = Vec::new();
    for id in uo.keys().chain(un.keys()).collect::<BTreeSet<_>>() {
        let ((oc, ob), (nc, nb)) = (tally(uo.get(id)), tally(un.get(id)));
        if (oc != nc || ob != nb) && !(oc.is_empty() && nc.is_empty()) {
            libraries.push(LibraryChange {
                library: id.clone(),
                old_code_objects: oc,
                new_code_objects: nc,
                old_bundles: ob,
                new_bundles: nb,
            });
        }
    }
    libraries
}

/// Files added, removed and changed, paired by [`file_key`].
#[derive(Default)]
struct FileChanges {
    added: Vec<FileOnly>,
    removed: Vec<FileOnly>,
    changed: Vec<FileChange>,
}

fn file_only(f: &FileRecord) -> FileOnly {
    FileOnly { identity: identity(f), path: f.path.path.clone(), size: f.size, targets: file_targets(f) }
}

/// How a file paired across the two sides changed, if it did: size, targets, code objects,
/// firmware ucode version, database records.
fn file_change(x: &FileRecord, y: &FileRecord) -> Option<FileChange> {
    let header =
        |f: &FileRecord| f.artifact.as_ref().and_then(|a| a.firmware_header()).map(|h| h.ucode_version);
    let records = |f: &FileRecord| f.artifact.as_ref().and_then(|a| a.records());
    let (ucode, recs) = (differ(header(x), header(y)), differ(records(x), records(y)));
    let (tx, ty) = (file_targets(x), file_targets(y));
    let same = x.size == y.size
        && tx == ty
        && x.code_objects.len() == y.code_objects.len()
        && ucode.is_none()
        && recs.is_none();
    (!same).then(|| FileChange {
        identity: identity(x),
        old_path: x.path.path.clone(),
        new_path: y.path.path.clone(),
        old_size: x.size,
        new_size: y.size,
        old_targets: tx,
        new_targets: ty,
        old_code_objects: x.code_objects.len(),
        new_code_objects: y.code_objects.len(),
        ucode,
        records: recs,
    })
}

/// Both values, when both are known and differ.
fn differ<T: PartialEq>(p: Option<T>, q: Option<T>) -> Option<(T, T)> {
    match (p, q) {
        (Some(p), Some(q)) if p != q => Some((p, q)),
        _ => None,
    }
}

fn file_changes(old: &Snapshot, new: &Snapshot) -> FileChanges {
    let index = |s: &Snapshot| {
        let mut m: BTreeMap<String, Vec<FileRecord>> = BTreeMap::new();
        for f in &s.files {
            m.entry(file_key(f)).or_default().push(f.clone());
        }
        m
    };
    let (fo, fnew) = (index(old), index(new));
    let mut out = FileChanges::default();
    for key in fo.keys().chain(fnew.keys()).collect::<BTreeSet<_>>() {
        match (fo.get(key), fnew.get(key)) {
            (Some(a), None) => out.removed.extend(a.iter().map(file_only)),
            (None, Some(b)) => out.added.extend(b.iter().map(file_only)),
            (Some(a), Some(b)) => {
                out.changed.extend(a.iter().zip(b).filter_map(|(x, y)| file_change(x, y)));
                out.removed.extend(a.iter().skip(b.len()).map(file_only));
                out.added.extend(b.iter().skip(a.len()).map(file_only));
            }
            (None, None) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_pair_versions_and_layouts() {
        for (a, b) in [
            ("opt/rocm-6.3.0/lib/librocblas.so.4", "opt/rocm-7.2.0/lib/librocblas.so.5"),
            ("usr/lib/x86_64-linux-gnu/librocblas.so.0.1", "lib/librocblas.so.4.2"),
            ("usr/lib/x86_64-linux-gnu/libspfft.so.1.0.6", "usr/lib/x86_64-linux-gnu/libspfft.so.1.1.1"),
            (
                "venv/lib/python3.11/site-packages/torch/lib/libtorch_hip.so",
                "lib/python3.12/dist-packages/torch/lib/libtorch_hip.so",
            ),
        ] {
            assert_eq!(path_identity(a), path_identity(b), "{a} ~ {b}");
        }
        assert_eq!(path_identity("opt/rocm/lib/librocblas.so.4"), "librocblas.so");
        assert_ne!(path_identity("lib/ollama/libggml-hip.so"), path_identity("lib/libggml-hip2.so"));
    }

    fn unit(ids: &[(&str, Option<u8>)]) -> Unit {
        let mut u = Unit::default();
        for (id, g) in ids {
            u.add(id.to_string(), *g);
        }
        u
    }

    #[test]
    fn plain_ids_serve_every_xnack_variant() {
        let t = Targets::builtin();
        let keys = |u: &Unit| served(u, &t).into_keys().collect::<BTreeSet<_>>();
        let both = keys(&unit(&[("gfx90a:xnack-", None), ("gfx90a:xnack+", None)]));
        let plain = keys(&unit(&[("gfx90a", None)]));
        assert_eq!(both, plain);
        assert!(keys(&unit(&[("gfx90a:xnack-", None)])).len() < plain.len());
    }

    /// The real case behind issue 12 point 4: a library whose old version held only generic
    /// code and whose new one holds specific code for most devices. Generic code served only the
    /// processors the runtime maps to it (clr `TargetGenericMap`: gfx942 and gfx950 for
    /// gfx9-4-generic, not gfx940/gfx941; no gfx1154 for gfx11-generic), so nothing is lost,
    /// gfx1154 is gained, and generic targets are never listed as devices.
    #[test]
    fn generic_code_is_reported_as_the_devices_it_served() {
        let t = Targets::builtin();
        let old_ids = [("gfx9-4-generic", Some(1)), ("gfx11-generic", Some(1))];
        let new_ids = [
            ("gfx942", None),
            ("gfx950", None),
            ("gfx1100", None),
            ("gfx1101", None),
            ("gfx1102", None),
            ("gfx1103", None),
            ("gfx1150", None),
            ("gfx1151", None),
            ("gfx1152", None),
            ("gfx1153", None),
            ("gfx1154", None),
        ];
        let (lost, won, seen) = held_changes(&unit(&old_ids), &unit(&new_ids), |_| true, &t);
        assert!(lost.is_empty(), "{lost:?}");
        let gains = coverage_of("lib", UnitChange::Changed, &won, &seen).expect("a gain");
        assert_eq!(gains.targets, ["gfx1154"], "{gains:?}");
        let (lost, _, seen) = held_changes(&unit(&old_ids), &unit(&[]), |_| true, &t);
        let losses = coverage_of("lib", UnitChange::Gone, &lost, &seen).expect("a loss");
        assert!(losses.targets.iter().all(|x| !x.contains("generic")), "{losses:?}");
        assert!(!losses.targets.iter().any(|x| x == "gfx941"), "{losses:?}");
        assert_eq!(losses.via_generic.get("gfx942").map(String::as_str), Some("gfx9-4-generic"));
        // A generic object without a generic version serves nothing (the runtime refuses it).
        assert!(served(&unit(&[("gfx11-generic", None)]), &t).is_empty());
    }
}
