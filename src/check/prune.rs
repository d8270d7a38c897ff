//! The prune report (`scan --keep gfx1100,…`): per library and in total, the bytes that serve
//! only other targets — what an install for these GPUs could drop — and what must stay. It
//! reads the snapshot only: nothing is written, nothing deleted.
//!
//! What stays: code built for a kept target, code for a generic target that serves one
//! (`targets.toml` `generic`: the runtime loads it when no code for the GPU itself is there),
//! the host code of every library, the HSA runtime's own code objects (part of the runtime),
//! and files not tied to a target (indexes serving any GPU, manifests). What could go: code
//! objects, Tensile files, MIOpen databases, firmware blobs and bitcode for other targets only.
//! An entry of a compressed bundle costs its share of the bundle on disk (its size × the
//! bundle's stored ÷ inflated size: an estimate, since a bundle is compressed as one stream)
//! and its own size inflated; both are reported.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::library::{library_of_files, Library, Model, Place};
use crate::model::{CodeObjectRecord, FileRecord, RelPath};
use crate::vocab::runtime::{loads, Runtime, Via};
use crate::vocab::target_id::{DeviceTarget, Setting};
use crate::vocab::targets::Targets;

/// Bytes on disk and inflated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Bytes {
    /// Bytes on disk (a compressed bundle's entry: its share of the bundle, an estimate).
    pub stored: u64,
    /// Bytes inflated.
    pub inflated: u64,
}

impl Bytes {
    fn add(&mut self, stored: u64, inflated: u64) {
        self.stored += stored;
        self.inflated += inflated;
    }

    fn plus(self, o: Bytes) -> Bytes {
        Bytes { stored: self.stored + o.stored, inflated: self.inflated + o.inflated }
    }
}

/// One library (a host library, or an artifact folder) and what of it could go or must stay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PruneRow {
    pub library: RelPath,
    /// Device code and files serving only other targets.
    pub drop: Bytes,
    /// Device code and files serving a kept target (generic code included).
    pub keep: Bytes,
    /// Of `keep`: generic code that serves a kept target.
    pub generic: Bytes,
    /// Host code, runtime-internal code, and files tied to no target: they stay.
    pub stays: u64,
    /// Of `drop`: whole files that could be deleted (every byte of them serves only other
    /// targets). The rest is code inside files that also hold kept code or host code — fat
    /// binaries — which only a rebuild (or a kpack split) could drop.
    pub drop_whole: Bytes,
    /// Those files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files_to_drop: Vec<RelPath>,
}

/// The version of the prune document (`scan --keep --json`).
pub const PRUNE_SCHEMA_VERSION: u32 = 1;

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PruneReport {
    /// The version of the prune document ([`PRUNE_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: crate::model::Tool,
    /// The targets kept (`--keep`).
    pub keep: Vec<String>,
    /// Libraries with something to drop first, largest first.
    pub libraries: Vec<PruneRow>,
    /// Every row added up (an empty `library` path, no `files_to_drop`).
    pub total: PruneRow,
    /// Files with nothing a GPU target decides (no device code, no GPU data: libMIOpen,
    /// libamdhip64, headers, tools; and files that could not be read): they stay whatever is
    /// kept, and are in no row.
    pub untied: Untied,
}

/// Files the rows leave out, by name (a hard link among them counts under each name).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Untied {
    /// Files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What a code object is to the kept targets.
enum Serves {
    Kept,
    Generic,
    Other,
}

/// What a code object is to the kept targets, as the install's runtime would load it on a GPU
/// of each (`vocab::runtime::loads`): built for one, loaded by one through its generic target,
/// or neither (code no kept GPU loads, a pre-4.1 entry under a comgr runtime included).
fn serves(c: &CodeObjectRecord, keep: &[String], targets: &Targets, rt: Runtime) -> Serves {
    let via =
        |k: &String| loads(c.code_target(), &DeviceTarget::new(k, Setting::Any, Setting::Any), targets, rt);
    let vias: Vec<Via> = keep.iter().filter_map(via).collect();
    if vias.contains(&Via::Native) {
        Serves::Kept
    } else if vias.contains(&Via::Generic) {
        Serves::Generic
    } else {
        Serves::Other
    }
}

/// A code object's bytes on disk and inflated.
fn cost(c: &CodeObjectRecord) -> (u64, u64) {
    match c.bundle_sizes() {
        Some((stored, inflated)) if inflated > 0 => {
            ((c.size as u128 * stored as u128 / inflated as u128) as u64, c.size)
        }
        _ => (c.size, c.size),
    }
}

/// The row a file counts under: its library in the model (`library::Model::libraries`) — a family's
/// folder, or the host library itself — else the file itself. A per-arch plugin is one GPU's:
/// each plugin file is its own row, so the one a kept GPU loads stays and the others go whole.
fn row_of(f: &FileRecord, lib: Option<&Library>) -> RelPath {
    match lib.map(|l| &l.place) {
        Some(Place::Folder(root, dir, _)) => RelPath::folder(*root, dir),
        _ => f.path.clone(),
    }
}

/// The prune report of a snapshot for the `keep` targets.
pub fn prune(model: &Model, keep: &[String], targets: &Targets) -> PruneReport {
    let snap = model.snapshot();
    let mut rows: BTreeMap<RelPath, PruneRow> = BTreeMap::new();
    let libs = model.libraries();
    let lib_of = library_of_files(snap, libs);
    // A hard link's bytes are on disk once, under the name it links to.
    for (i, f) in snap.files.iter().enumerate().filter(|(_, f)| f.hard_link_of.is_none()) {
        let lib = row_of(f, lib_of[i].map(|l| &libs[l]));
        let rt = lib_of[i].map_or_else(Runtime::default, |l| libs[l].runtime);
        let row = rows.entry(lib.clone()).or_insert_with(|| PruneRow { library: lib, ..PruneRow::default() });
        let before = (row.drop, row.keep.stored, row.stays);
        let mut device_stored = 0u64;
        let mut any_kept = false;
        // Compressed bundles (offset, stored size, entries' shares): counted once per bundle;
        // what the entries' shares leave of one (its header and padding, inflated) stays with
        // the file, so every byte of the file is counted once.
        let mut bundles: Vec<(u64, u64, u64)> = Vec::new();
        for c in &f.code_objects {
            let (stored, inflated) = cost(c);
            match (c.group(), c.bundle_sizes()) {
                (Some(at), Some((size, _))) => match bundles.iter_mut().find(|b| b.0 == at) {
                    Some(b) => b.2 += stored,
                    None => bundles.push((at, size, stored)),
                },
                _ => device_stored += stored,
            }
            match serves(c, keep, targets, rt) {
                _ if crate::families::runtime_own(f, c) => row.stays += stored,
                Serves::Kept => {
                    any_kept = true;
                    row.keep.add(stored, inflated);
                }
                Serves::Generic => {
                    any_kept = true;
                    row.keep.add(stored, inflated);
                    row.generic.add(stored, inflated);
                }
                Serves::Other => row.drop.add(stored, inflated),
            }
        }
        for (_, size, shares) in bundles {
            device_stored += size;
            row.stays += size.saturating_sub(shares);
        }
        match &f.artifact {
            // A family file with code objects (a Tensile `.co`) was counted by its code.
            Some(a) if f.code_objects.is_empty() => {
                let tied = a.targets();
                let for_kept = tied.iter().any(|t| keep.contains(t));
                match (tied.is_empty(), for_kept) {
                    (true, _) => row.stays += f.size,
                    (false, true) => row.keep.add(f.size, f.size),
                    (false, false) => row.drop.add(f.size, f.size),
                }
            }
            // A Tensile code file for other targets only goes whole.
            Some(_) if !any_kept => {
                let rest = f.size.saturating_sub(device_stored);
                row.drop.add(rest, rest);
            }
            // Host code (and a file's headers) stays with the library.
            _ => row.stays += f.size.saturating_sub(device_stored),
        }
        // A file all of whose bytes could go can be deleted as it is.
        let dropped = Bytes {
            stored: row.drop.stored - before.0.stored,
            inflated: row.drop.inflated - before.0.inflated,
        };
        if dropped.stored > 0 && row.keep.stored == before.1 && row.stays == before.2 {
            row.drop_whole.add(dropped.stored, dropped.inflated);
            row.files_to_drop.push(f.path.clone());
        }
    }
    let mut libraries: Vec<PruneRow> = rows.into_values().collect();
    libraries.sort_by(|a, b| b.drop.stored.cmp(&a.drop.stored).then_with(|| a.library.cmp(&b.library)));
    let total = libraries.iter().fold(PruneRow::default(), |t, r| PruneRow {
        library: RelPath::default(),
        drop: t.drop.plus(r.drop),
        keep: t.keep.plus(r.keep),
        generic: t.generic.plus(r.generic),
        stays: t.stays + r.stays,
        drop_whole: t.drop_whole.plus(r.drop_whole),
        files_to_drop: Vec::new(),
    });
    let recorded = snap.files.iter().fold((0u64, 0u64), |(n, b), f| (n + 1, b + f.size));
    let untied = Untied {
        files: snap.summary.files.saturating_sub(recorded.0),
        bytes: snap.summary.bytes.saturating_sub(recorded.1),
    };
    PruneReport {
        schema_version: PRUNE_SCHEMA_VERSION,
        tool: crate::model::Tool::current(),
        keep: keep.to_vec(),
        libraries,
        total,
        untied,
    }
}
