//! The library model: a snapshot turned into the libraries a program loads, once per run, for
//! every view. [`Model::build`] takes the snapshot's facts, the target table and the run's
//! [`Context`] (one program's closure, how deep the files were read, the Tensile folders the
//! environment names) and owns the libraries, the findings and every (library, device) verdict,
//! judged once and kept. Each library has its install, its kind, where it is, and — for a
//! device — what serves it, decided by one rule (`vocab::runtime`): `check`, `diff`, `merge`,
//! `explain`, the library matrix and prune take `&Model`, and none of them decides again what a
//! library is or what serves a target. No view writes into the snapshot.
//!
//! A library is a host library (an ELF or a PE `.dll`/`.pyd`) or a standalone bundle with
//! its code groups (one per registered fat binary, and one for the objects the runtime takes
//! whole), a kpack-split host library, a folder of per-arch plugins, or a folder of an artifact
//! family (a Tensile library, MIOpen's databases, the device-library bitcode, AOTriton's images).
//! Code only in `.llvm.offloading` is no library's: LLVM drops the section from linked output
//! (it is for the linker wrapper) and clr never reads it.

pub mod environment;
pub mod findings;
pub mod identity;
pub mod install;
pub mod kpack;
pub mod matrix;
pub mod placeholders;
pub mod plugins;
pub mod readback;
pub mod release;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use crate::families::{cataloger, Library as FamilyLibrary};
use crate::model::{CodeObjectRecord, Container, Family, FileRecord, HipRuntime, RelPath, Snapshot};
use crate::vocab::runtime::{near_miss, pick, Runtime, Via};
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::verdict::{LibraryKind, Status, Verdict};
use install::{install_of, Install};

pub use crate::families::HOST_CODE;

pub use environment::LibPath;

/// What a run knows besides the snapshot's facts.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The files of one program's closure (`check --exe`, `--pid`): the one HIP runtime it
    /// loads is the one every library of it is judged by, whatever install each is in.
    pub one_program: bool,
    /// The processors whose entries were read whole (`check` reads bundle tables for the
    /// others): findings are judged as deep as the files were read. `None`: every fact.
    pub read_for: Option<Vec<String>>,
    /// The Tensile folders the environment names, standing in for an install's own.
    pub libpaths: Vec<LibPath>,
}

/// The library model of one snapshot, built once per run ([`Model::build`]): the snapshot's
/// facts with its findings, the libraries, and every (library, device) verdict, judged once
/// and kept, so every view reads the same answer whatever order it asks in.
#[derive(Debug)]
pub struct Model {
    snap: Snapshot,
    libraries: Vec<Library>,
    context: Context,
    judged: Mutex<HashMap<(Place, DeviceTarget), Option<Verdict>>>,
    /// The table the kept verdicts were judged by (its address: one table per run).
    table: std::sync::OnceLock<usize>,
}

impl Model {
    /// The model of `snap`: its libraries, and its findings judged from them as deep as its
    /// files were read — the one place findings are made.
    pub fn build(mut snap: Snapshot, targets: &Targets, context: Context) -> Model {
        let libraries = libraries(&snap, context.one_program, targets);
        let depth = match &context.read_for {
            Some(wanted) => crate::parse::Depth::Tables { wanted, targets },
            None => crate::parse::Depth::Facts,
        };
        snap.findings = findings::findings_to(&snap, &libraries, targets, depth);
        Model { snap, libraries, context, judged: Mutex::default(), table: std::sync::OnceLock::new() }
    }

    /// The snapshot's facts, with the findings the model made.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// The libraries, in a stable order.
    pub fn libraries(&self) -> &[Library] {
        &self.libraries
    }

    /// What the run knows besides the facts.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The HIP runtime `install` ships, and the rules it matches by ([`runtime_of`]).
    pub fn runtime_of(&self, install: &Install, targets: &Targets) -> (Runtime, Option<&HipRuntime>) {
        runtime_of(&self.snap, install, self.context.one_program, targets)
    }

    /// The HIP runtime library `install` ships, if any ([`hip_runtime_of`]).
    pub fn hip_runtime_of(&self, install: &Install) -> Option<&HipRuntime> {
        hip_runtime_of(&self.snap, install, self.context.one_program)
    }

    /// `lib`'s verdict for `dev` ([`judge`]), judged once and kept. Kept only for a library of
    /// this model under the table it was first judged by: another model's library, or another
    /// table, is judged afresh.
    pub fn judge(&self, lib: &Library, dev: &DeviceTarget, targets: &Targets) -> Option<Verdict> {
        let ours = self.libraries.as_ptr_range().contains(&std::ptr::from_ref(lib));
        let table = std::ptr::from_ref(targets) as usize;
        if !ours || *self.table.get_or_init(|| table) != table {
            return judge(&self.snap, lib, dev, targets);
        }
        let key = (lib.place.clone(), dev.clone());
        let kept = |m: &Mutex<HashMap<_, Option<Verdict>>>| {
            m.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key).cloned()
        };
        if let Some(v) = kept(&self.judged) {
            return v;
        }
        let v = judge(&self.snap, lib, dev, targets);
        let mut map = self.judged.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(key).or_insert(v).clone()
    }

    /// What `dev` gets where `lib` (a library of this model) is gone ([`judge_absent`]).
    pub fn judge_absent(&self, lib: &Library, dev: &DeviceTarget, targets: &Targets) -> Status {
        judge_absent(&self.snap, lib, dev, targets)
    }
}

/// Where a library is in its snapshot.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    /// A file with device code (index into the snapshot's files).
    Code(usize),
    /// A folder of an artifact family: root, folder, family.
    Folder(usize, String, Family),
    /// The per-arch plugins of one kind in one folder (`plugins::PLUGINS`).
    Plugins(usize, String, usize),
}

/// One library of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// The install it belongs to.
    pub install: Install,
    pub place: Place,
    /// Its path for people (a folder ends in `/`).
    pub shown: String,
    pub kind: LibraryKind,
    /// What it is across installs and versions (`librocblas.so`, `tensile:rocblas`), for `diff`.
    pub identity: String,
    /// Its path inside its root (a folder's without the trailing `/`).
    pub rel: String,
    /// Its files, by index into the snapshot's.
    pub files: Vec<usize>,
    /// The HIP runtime rules its install's runtime matches by (`runtime_of`, found once).
    pub runtime: Runtime,
}

impl Library {
    /// True when a program loads it, so a verdict judges it (a firmware folder: no).
    pub fn judged(&self) -> bool {
        match self.place {
            Place::Folder(_, _, fam) => cataloger(fam).loaded_by_programs(),
            _ => true,
        }
    }
}

/// Which library of `libs` each file of the snapshot belongs to, if any (by index).
pub fn library_of_files(snap: &Snapshot, libs: &[Library]) -> Vec<Option<usize>> {
    let mut out = vec![None; snap.files.len()];
    for (l, lib) in libs.iter().enumerate() {
        for &i in &lib.files {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(l);
            }
        }
    }
    out
}

/// The kind of library a file with device code is.
fn code_kind(f: &FileRecord) -> LibraryKind {
    if f.kind.is_host_binary() {
        LibraryKind::HostLibrary
    } else {
        LibraryKind::Bundle
    }
}

/// True for a code object the runtime can register (not only in `.llvm.offloading`).
pub fn registrable(c: &CodeObjectRecord) -> bool {
    c.container() != Container::OffloadBinary
}

/// True when a file is a library of device code in its own right.
fn holds_code(f: &FileRecord) -> bool {
    f.kpack_ref.is_some()
        || (f.code_objects.iter().any(registrable) && (f.kind.is_host_binary() || f.bundles > 0))
}

/// The libraries of a snapshot, each with its install, in a stable order (`one_program`: the
/// files are one program's closure, [`Context::one_program`]).
fn libraries(snap: &Snapshot, one_program: bool, targets: &Targets) -> Vec<Library> {
    // Each place with its identity (a folder's, from its first file) and its files.
    let mut places: BTreeMap<Place, (String, Vec<usize>)> = BTreeMap::new();
    for (i, f) in snap.files.iter().enumerate() {
        let (place, identity) = match f.artifact.as_ref().and_then(|a| Some((a, a.family?))) {
            Some((a, fam)) => match cataloger(fam).library_dir(&f.path.path) {
                Some(dir) => (Place::Folder(f.path.root, dir, fam), cataloger(fam).identity(a)),
                None => continue,
            },
            None if holds_code(f) => {
                let (dir, name) = f.path.path.rsplit_once('/').unwrap_or(("", &f.path.path));
                match plugins::plugin_of(name) {
                    Some((kind, _, _)) => {
                        let id = format!("{}/{}*", identity::path_identity(dir), plugins::PLUGINS[kind].name);
                        (Place::Plugins(f.path.root, dir.to_string(), kind), id)
                    }
                    None => (Place::Code(i), identity::path_identity(&f.path.path)),
                }
            }
            None => continue,
        };
        places.entry(place).or_insert_with(|| (identity, Vec::new())).1.push(i);
    }
    places
        .into_iter()
        .map(|(place, (identity, files))| {
            let (root, rel, shown, kind) = match &place {
                Place::Code(i) => {
                    let f = &snap.files[*i];
                    (f.path.root, f.path.path.clone(), f.path.display(&snap.roots), code_kind(f))
                }
                Place::Folder(r, d, fam) => {
                    (*r, d.clone(), folder_shown(snap, *r, d), LibraryKind::Family(*fam))
                }
                Place::Plugins(r, d, _) => {
                    (*r, d.clone(), folder_shown(snap, *r, d), LibraryKind::HostLibrary)
                }
            };
            let install = install_of(snap.root_given(root), &shown);
            let runtime = runtime_of(snap, &install, one_program, targets).0;
            Library { install, place, shown, kind, identity, rel, files, runtime }
        })
        .collect()
}

/// A folder's path for people, with a trailing `/`.
fn folder_shown(snap: &Snapshot, root: usize, dir: &str) -> String {
    let rel = RelPath { root, path: dir.to_string(), path_hex: None };
    format!("{}/", rel.display(&snap.roots))
}

/// A family folder, for its cataloger to judge.
pub fn family_library<'s>(
    model: &'s Model,
    root: usize,
    dir: &'s str,
    targets: &'s Targets,
) -> FamilyLibrary<'s> {
    let snap = model.snapshot();
    let install = install_of(snap.root_given(root), &folder_shown(snap, root, dir));
    let runtime = model.runtime_of(&install, targets).0;
    FamilyLibrary { snap, root, dir, component: None, targets, runtime, files: None }
}

/// A family folder of the model (`root`, `dir`), for its cataloger to judge: its files and
/// runtime already known.
fn library_of<'s>(
    snap: &'s Snapshot,
    lib: &'s Library,
    (root, dir): (usize, &'s str),
    targets: &'s Targets,
) -> FamilyLibrary<'s> {
    let files = lib.files.iter().filter_map(|&i| snap.files.get(i)).collect();
    FamilyLibrary { snap, root, dir, component: None, targets, runtime: lib.runtime, files: Some(files) }
}

/// The HIP runtime an install ships (the one whose name says most of its version, then the
/// first in path order: `libamdhip64.so.6.4.43484` over a copy named `libamdhip64.so.6`), and
/// the rules it matches by; ROCm 7.x's where it ships none (`vocab::runtime::ASSUMED_RUNTIME`).
/// In one program's closure (`one_program`), its runtime, wherever it lies: the one the
/// program loads.
pub fn runtime_of<'s>(
    snap: &'s Snapshot,
    install: &Install,
    one_program: bool,
    targets: &Targets,
) -> (Runtime, Option<&'s HipRuntime>) {
    let own = hip_runtime_of(snap, install, one_program);
    (own.map_or_else(Runtime::default, |r| Runtime::of_version(&r.version, targets)), own)
}

/// The HIP runtime library an install ships (see [`runtime_of`]).
pub fn hip_runtime_of<'s>(
    snap: &'s Snapshot,
    install: &Install,
    one_program: bool,
) -> Option<&'s HipRuntime> {
    snap.hip_runtimes
        .iter()
        .filter(|r| {
            one_program || &install_of(snap.root_given(r.path.root), &r.path.display(&snap.roots)) == install
        })
        .rev()
        .max_by_key(|r| r.version.split('.').count())
}

/// The code groups of a file, in file order: one per offload bundle (a fat binary the runtime
/// registers and picks from on its own), and one of the objects it takes whole (`None`).
pub fn code_groups(f: &FileRecord) -> BTreeMap<Option<u64>, Vec<&CodeObjectRecord>> {
    let mut groups: BTreeMap<Option<u64>, Vec<&CodeObjectRecord>> = BTreeMap::new();
    for c in f.code_objects.iter().filter(|c| registrable(c)) {
        groups.entry(c.group()).or_default().push(c);
    }
    groups
}

/// What a device loads from one code group, and how.
pub fn pick_in<'s>(
    group: &[&'s CodeObjectRecord],
    dev: &DeviceTarget,
    targets: &Targets,
    rt: Runtime,
) -> Option<(&'s CodeObjectRecord, Via)> {
    pick(group, |c| c.code_target(), dev, targets, rt).map(|(c, via)| (*c, via))
}

/// The targets code is offered for, as the runtime reads them: a bundle entry's from its ID
/// (comgr matches by it, `vocab::runtime::comgr_target`), other code's from its ELF. The same
/// whether its ELF was read or not (`check` reads only the checked GPU's entries), so every
/// view lists the same.
fn processors<'a>(cos: impl Iterator<Item = &'a CodeObjectRecord>) -> Vec<String> {
    let offered = |c: &CodeObjectRecord| {
        let from_id = c.code_target().entry_id.and_then(crate::vocab::runtime::comgr_target);
        from_id.unwrap_or(&c.target_id).to_string()
    };
    cos.map(offered).collect::<BTreeSet<_>>().into_iter().collect()
}

/// Host libraries and standalone bundles: every code group must serve — a bundle without code
/// for the device is a translation unit whose kernels fail with "invalid device function".
pub fn code_verdict(
    f: &FileRecord,
    display: String,
    dev: &DeviceTarget,
    targets: &Targets,
    rt: Runtime,
) -> Verdict {
    let groups = code_groups(f);
    let mut loads = None;
    let mut via_generic = None;
    let mut lacking = Vec::new();
    for (bundle, cos) in &groups {
        match pick_in(cos, dev, targets, rt) {
            Some((c, via)) => {
                if via == Via::Generic {
                    via_generic.get_or_insert_with(|| c.processor.clone());
                }
                loads.get_or_insert_with(|| {
                    c.stored_id()
                        .map_or_else(|| format!("{} at {:#x}", c.target_id, c.offset), str::to_string)
                });
            }
            None => lacking.push(*bundle),
        }
    }
    let why = || {
        let all: Vec<&CodeObjectRecord> = groups.values().flatten().copied().collect();
        near_miss(&all, |c| c.code_target(), dev, targets, rt)
            .map(|m| format!(": {}", m.explain(dev)))
            .unwrap_or_default()
    };
    let (gap, detail) = if lacking.is_empty() {
        let what = match f.bundles {
            0 => "has code for it".to_string(),
            1 => "its bundle has code for it".to_string(),
            n => format!("all {} bundles have code for it", crate::vocab::units::thousands(n)),
        };
        (None, what)
    } else if lacking.len() == groups.len() {
        (Some(&HOST_CODE), format!("no code object for {}{}", dev.target_id, why()))
    } else {
        let where_ = lacking
            .iter()
            .map(|b| b.map_or_else(|| "embedded objects".to_string(), |o| format!("bundle at {o:#x}")))
            .take(3)
            .collect::<Vec<_>>()
            .join(", ");
        let detail = format!(
            "{} of {} code groups have no code for {} ({where_}…){}",
            lacking.len(),
            groups.len(),
            dev.target_id,
            why()
        );
        (Some(&HOST_CODE), detail)
    };
    let mut v = Verdict::judged(display, code_kind(f), gap, detail, &dev.processor);
    v.loads = loads;
    v.via_generic = via_generic;
    if v.status != Status::Ok {
        v.available = processors(f.code_objects.iter().filter(|c| registrable(c)));
    }
    v
}

/// True when the runtime finds code for a device of `processor` (modes not known) in every
/// code group of `f`: what a host library serves, for the views that have no device.
pub fn serves_processor(f: &FileRecord, processor: &str, targets: &Targets, rt: Runtime) -> bool {
    let dev = DeviceTarget::new(
        processor,
        crate::vocab::target_id::Setting::Any,
        crate::vocab::target_id::Setting::Any,
    );
    let groups = code_groups(f);
    !groups.is_empty() && groups.values().all(|g| pick_in(g, &dev, targets, rt).is_some())
}

/// A library's verdict for a device, with no environment: the same for every view
/// ([`Model::judge`] keeps it). `None` for a library with nothing to say for it (a plugin
/// folder without the device's plugin kind, a family whose files no program loads).
fn judge(snap: &Snapshot, lib: &Library, dev: &DeviceTarget, targets: &Targets) -> Option<Verdict> {
    let rt = lib.runtime;
    match &lib.place {
        Place::Code(i) => {
            let f = &snap.files[*i];
            Some(match &f.kpack_ref {
                Some(r) => kpack::verdict(snap, f, r, lib.shown.clone(), dev, targets),
                None => code_verdict(f, lib.shown.clone(), dev, targets, rt),
            })
        }
        Place::Folder(root, dir, Family::Tensile) => {
            let l = library_of(snap, lib, (*root, dir), targets);
            Some(placeholders::held_to_index(
                crate::families::tensile::verdict(&l, dev),
                *root,
                &snap.findings,
            ))
        }
        Place::Folder(root, dir, fam) => {
            cataloger(*fam).verdict(&library_of(snap, lib, (*root, dir), targets), dev)
        }
        Place::Plugins(root, dir, kind) => {
            let judge = |f: &FileRecord| code_verdict(f, f.path.display(&snap.roots), dev, targets, rt);
            plugins::verdict(snap, *root, dir, *kind, dev, &judge)
        }
    }
}

/// What a device gets where a library of `snap` is gone: what its loader does without it —
/// a family's own rule for a folder with nothing in it (MIOpen without databases runs with
/// default tuning: WARN; rocBLAS without its Tensile library aborts: MISSING), a per-arch
/// plugin's gap, and MISSING for host code (the program does not start, or its calls fail).
fn judge_absent(snap: &Snapshot, lib: &Library, dev: &DeviceTarget, targets: &Targets) -> Status {
    match &lib.place {
        Place::Folder(root, dir, fam) => {
            let component = (*fam == Family::Tensile).then(|| {
                crate::families::tensile::component_of(&library_of(snap, lib, (*root, dir), targets))
            });
            // A folder no file of the snapshot is in: the family judges it empty.
            let empty = FamilyLibrary {
                snap,
                root: usize::MAX,
                dir,
                component,
                targets,
                runtime: Runtime::default(),
                files: Some(Vec::new()),
            };
            cataloger(*fam).verdict(&empty, dev).map_or(Status::Missing, |v| v.status)
        }
        Place::Plugins(_, _, kind) => plugins::PLUGINS.get(*kind).map_or(Status::Missing, |p| p.gap.status()),
        Place::Code(_) => Status::Missing,
    }
}
