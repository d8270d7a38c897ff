//! MIOpen's databases: per-arch perf DBs (`gfx90a68.db`, SQLite `perf_db`), find-DBs
//! (`gfx90a68.HIP.fdb.txt`, lines), kernel DBs (`gfx90a.kdb`, SQLite `kern_db`), user DBs and
//! tuning models, named by MIOpen's DB basename (MIOpen `handle.hpp` `GetDbBasename`: the arch,
//! then the CU count as `_<decimal>` up to 64 CUs and as lowercase hex above). A missing system
//! database costs tuning and first-run compile time, never a failure.

use std::collections::BTreeSet;
use std::path::Path;

use super::{file_name, files_of, has_component, parent, Cataloger, Content, Item, Library};
use super::{FactsError, Row};
use crate::model::{Artifact, Family, FileRecord, MiopenFacts, Role, Storage};
use crate::parse::magic::Kind;
use crate::parse::miopen::{count_text_records, parse_lfs_pointer};
use crate::source::sqlite;
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::units::{human_bytes, thousands};
use crate::vocab::verdict::{Cost, GapRule, LibraryKind, Verdict};

/// The MIOpen database family.
pub struct Miopen;

/// MIOpen execution_context.hpp `GetPerfDbPathFile`, find_db.cpp `GetInstalledPathFile`,
/// binary_cache.cpp `GetDb`, hip/handlehip.cpp `LoadProgram`: a missing system database is an
/// info-level log line; solvers use default tuning and kernels compile at first use.
pub const NO_DATABASE: GapRule = GapRule {
    cost: Cost::Slower,
    consequence:
        "MIOpen runs with default tuning and compiles kernels at first use (slow first runs, nothing fails)",
};

/// MIOpen database kinds by suffix, longest first: (suffix, role).
#[rustfmt::skip]
const SUFFIXES: &[(&str, Role)] = &[
    (".HIP.fdb.txt", Role::FindDb), (".OpenCL.fdb.txt", Role::FindDb), (".fdb.txt", Role::FindDb),
    (".HIP.ufdb.txt", Role::UserFindDb), (".OpenCL.ufdb.txt", Role::UserFindDb), (".ufdb.txt", Role::UserFindDb),
    (".udb.txt", Role::UserPerfDb), (".udb", Role::UserPerfDb), (".ukdb", Role::UserKernelDb),
    (".ktn.model", Role::TuningModel), (".tn.model", Role::TuningModel),
    (".db.txt", Role::PerfDb), (".db", Role::PerfDb), (".kdb", Role::KernelDb),
];

const ROWS: &[Row] = &[
    Row {
        key: "miopen-perf-db-records",
        label: "MIOpen perf-DB records",
        column: "perf-db",
        within: None,
        gap: Some(&NO_DATABASE),
    },
    Row {
        key: "miopen-find-db-records",
        label: "MIOpen find-DB records",
        column: "find-db",
        within: None,
        gap: Some(&NO_DATABASE),
    },
    Row {
        key: "miopen-kernel-db-entries",
        label: "MIOpen kernel-DB entries",
        column: "kernel-db",
        within: None,
        gap: Some(&NO_DATABASE),
    },
    Row {
        key: "miopen-tuning-models",
        label: "MIOpen tuning models",
        column: "tn models",
        within: None,
        gap: Some(&NO_DATABASE),
    },
    Row {
        key: "miopen-unread-find-db-records",
        label: "MIOpen find-DB records HIP never reads (OpenCL, no suffix)",
        column: "unread fdb",
        within: None,
        gap: None,
    },
];

/// A MIOpen database base name (`gfx900_56`, `gfx90878`, `gfx906_nosramecc_60`,
/// `gfx942_metadata`): processor, variant and CU count.
pub fn miopen_name(base: &str, targets: &Targets) -> Option<(String, Option<String>, Option<u32>)> {
    let t = targets.longest_prefix_of(base)?;
    let mut rest = &base[t.name.len()..];
    let mut variant = None;
    for v in ["_nosramecc", "_sramecc", "_xnack"] {
        if let Some(r) = rest.strip_prefix(v) {
            variant = Some(v.trim_start_matches('_').to_string());
            rest = r;
        }
    }
    let cu = if let Some(dec) = rest.strip_prefix('_') {
        dec.parse::<u32>().ok()
    } else if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        u32::from_str_radix(rest, 16).ok()
    } else {
        None
    };
    Some((t.name.clone(), variant, cu))
}

/// True for a system find-DB MIOpen's HIP build never opens: MIOpen find_db.cpp
/// `GetInstalledPath` opens `<basename>.<GetSystemFindDbSuffix()>.fdb.txt`, the suffix being
/// `HIP` in ROCm's build, so an OpenCL find-DB (`gfx900_56.OpenCL.fdb.txt`) or one without the
/// backend suffix is never looked up.
fn unread_find_db(name: &str) -> bool {
    let name = name.trim_end_matches(".bz2");
    name.ends_with(".fdb.txt") && !name.ends_with(".HIP.fdb.txt")
}

/// True when a MIOpen file is a database MIOpen's HIP build reads for the target it names.
fn is_database(f: &FileRecord) -> bool {
    f.artifact.as_ref().is_some_and(|a| {
        a.role.is_database()
            && matches!(a.format, Storage::Sqlite | Storage::Text)
            && !unread_find_db(file_name(&f.path.path))
    })
}

/// What a MIOpen file that is not a database MIOpen reads is, for the verdict's detail.
fn stand_in(name: &str, a: &Artifact) -> String {
    match (a.role.is_database(), a.format) {
        (true, _) if unread_find_db(name) => {
            let base = name.trim_end_matches(".bz2").trim_end_matches(".fdb.txt").trim_end_matches(".OpenCL");
            let which = if name.contains(".OpenCL.") {
                "for MIOpen's OpenCL backend"
            } else {
                "without a backend suffix"
            };
            format!("{name} is a find-DB {which}; ROCm's HIP build reads {base}.HIP.fdb.txt")
        }
        (true, Storage::GitLfsPointer) => format!(
            "{name} is a git-lfs pointer{}, not a database",
            a.lfs_size.map(|n| format!(" to {}", human_bytes(n))).unwrap_or_default()
        ),
        (true, Storage::Bzip2) => format!("{name} is a compressed source form MIOpen does not read"),
        (false, _) if a.role == Role::TuningModel => format!("{name} is a tuning model, not a perf DB"),
        _ => format!("{name} ({})", a.format.name()),
    }
}

/// MIOpen's databases for a device: what is a real database, and what only looks like one.
fn detail(mine: &[&FileRecord], arch: &str) -> (Option<&'static GapRule>, String) {
    let mut real = Vec::new();
    let mut not_dbs = Vec::new();
    for f in mine {
        let Some(a) = f.artifact.as_ref() else { continue };
        let name = file_name(&f.path.path);
        match a.records() {
            _ if !is_database(f) => not_dbs.push(stand_in(name, a)),
            Some(n) => real.push(format!(
                "{name} ({} {})",
                thousands(n),
                if a.role.is_kernel_db() { "entries" } else { "records" }
            )),
            None => real.push(name.to_string()),
        }
    }
    let also = if not_dbs.is_empty() { String::new() } else { format!(" ({})", not_dbs.join("; ")) };
    if real.is_empty() {
        (Some(&NO_DATABASE), format!("no MIOpen database for {arch}{also}"))
    } else {
        (None, format!("{}{also}", real.join(", ")))
    }
}

/// The least a MIOpen database takes on disk: a git-lfs pointer standing for one is smaller
/// (its text is about 130 bytes), so only a file this large is judged by its name.
const DATABASE_AT_LEAST: u64 = 1024;

/// A MIOpen database that `check` judges by its name alone, unopened (issue 38): a database
/// (find-DB, perf-DB, kernel DB; not a bzip2 source form, a model or a user DB) whose name
/// says a known processor none of the `wanted` GPUs is, in a MIOpen folder (or with a suffix
/// only MIOpen uses), and large enough not to be a git-lfs pointer. Its verdict needs only
/// which target it serves (`Miopen::verdict` counts records of the checked GPU's databases
/// alone), so it is read neither for its records nor for its first bytes; its format is the
/// one its suffix gives MIOpen's files (`.txt` text, the others SQLite), both databases alike.
pub fn judged_by_name(path: &Path, size: u64, wanted: &[String], targets: &Targets) -> Option<Artifact> {
    let name = path.file_name()?.to_str()?;
    let (suffix, role) = SUFFIXES.iter().find(|(suf, _)| name.ends_with(suf))?;
    let is_db = matches!(role, Role::FindDb | Role::PerfDb | Role::KernelDb);
    let base = &name[..name.len() - suffix.len()];
    let in_miopen = has_component(path, &["miopen", "kernels", "db"]);
    let distinctive = !matches!(*suffix, ".db" | ".db.txt");
    if !is_db || size < DATABASE_AT_LEAST || !base.starts_with("gfx") || !(in_miopen || distinctive) {
        return None;
    }
    let (processor, variant, cu) = miopen_name(base, targets)?;
    if wanted.contains(&processor) {
        return None;
    }
    let format = if suffix.ends_with(".txt") { Storage::Text } else { Storage::Sqlite };
    Some(Artifact {
        family: Some(Family::Miopen),
        role: *role,
        format,
        name_target: Some(processor),
        name_variant: variant,
        miopen: cu.map(|cu| MiopenFacts { cu_count: Some(cu), records: None }),
        ..Artifact::default()
    })
}

impl Cataloger for Miopen {
    fn family(&self) -> Family {
        Family::Miopen
    }

    fn detect(&self, path: &Path, name: &str, content: Content, targets: &Targets) -> Option<Artifact> {
        let bz2 = name.to_ascii_lowercase().ends_with(".bz2");
        let base_name = name.trim_end_matches(".bz2");
        let (suffix, role) = SUFFIXES.iter().find(|(suf, _)| base_name.ends_with(suf))?;
        let base = &base_name[..base_name.len() - suffix.len()];
        let in_miopen = has_component(path, &["miopen", "kernels", "db"]);
        // `.db`, `.db.txt` and bzip2 source forms are too common to trust outside MIOpen's
        // folders; the other suffixes are MIOpen's alone.
        let distinctive = !bz2 && !matches!(*suffix, ".db" | ".db.txt");
        if !base.starts_with("gfx") || !(in_miopen || distinctive) {
            return None;
        }
        // A text database must read as text; models are opaque; a `.db`/`.kdb` is SQLite.
        let model = suffix.ends_with(".model");
        let kind = content.kind();
        let ok_kind = content.is_link()
            || matches!(kind, Kind::Sqlite | Kind::Bzip2 | Kind::GitLfsPointer)
            || (kind == Kind::Other && (model || (content.is_text() && !suffix.ends_with("db"))))
            || (content.is_text() && *suffix == ".db");
        if !ok_kind {
            return None;
        }
        let (processor, variant, cu) = miopen_name(base, targets).unwrap_or((String::new(), None, None));
        Some(Artifact {
            family: Some(Family::Miopen),
            role: *role,
            format: content.storage(if model { Storage::Model } else { Storage::Text }),
            name_target: (!processor.is_empty()).then_some(processor),
            name_variant: variant,
            miopen: cu.map(|cu| MiopenFacts { cu_count: Some(cu), records: None }),
            ..Artifact::default()
        })
    }

    /// Record counts (SQLite rows, text lines) and the size a git-lfs pointer stands for.
    fn facts(&self, a: &mut Artifact, item: &Item, problems: &mut Vec<FactsError>) {
        let src = item.src;
        match a.format {
            Storage::Sqlite => {
                let table = if a.role.is_kernel_db() { "kern_db" } else { "perf_db" };
                let rows = match item.disk {
                    Some(p) => sqlite::rows_on_disk(p, table),
                    None => sqlite::rows_in_memory(src, table),
                };
                match rows {
                    Ok(n) => a.miopen_mut().records = Some(n),
                    Err(e) => problems.push(FactsError::MiopenRows(e)),
                }
            }
            Storage::Text if a.role.is_database() => match count_text_records(src) {
                Ok(n) => a.miopen_mut().records = Some(n),
                Err(e) => problems.push(FactsError::MiopenText(e)),
            },
            Storage::GitLfsPointer => {
                a.lfs_size = src.read_up_to(0, 1024).ok().and_then(|t| parse_lfs_pointer(&t))
            }
            _ => {}
        }
    }

    fn rows(&self) -> &'static [Row] {
        ROWS
    }

    /// Databases count their records, models count once.
    /// A find-DB MIOpen's HIP build never opens counts apart (`unread_find_db`): the FIND-DB
    /// column holds only records a GPU's MIOpen will use, as `check` judges them.
    fn tally(&self, f: &FileRecord, a: &Artifact) -> Option<(&'static str, u64)> {
        let records = a.records().unwrap_or(0);
        match a.role {
            Role::FindDb if unread_find_db(file_name(&f.path.path)) => Some((ROWS[4].key, records)),
            Role::PerfDb => Some((ROWS[0].key, records)),
            Role::FindDb => Some((ROWS[1].key, records)),
            Role::KernelDb => Some((ROWS[2].key, records)),
            Role::TuningModel => Some((ROWS[3].key, 1)),
            _ => None,
        }
    }

    fn library_dir(&self, path: &str) -> Option<String> {
        Some(parent(path))
    }

    fn verdict(&self, lib: &Library, dev: &DeviceTarget) -> Option<Verdict> {
        let arch = dev.processor.as_str();
        let here = files_of(lib, Family::Miopen);
        let name = |f: &&FileRecord| f.artifact.as_ref().and_then(|a| a.name_target.clone());
        let mine: Vec<&FileRecord> =
            here.iter().copied().filter(|f| name(f).as_deref() == Some(arch)).collect();
        let (rule, detail) = detail(&mine, arch);
        let mut v = Verdict::judged(lib.display(), LibraryKind::Family(Family::Miopen), rule, detail, arch);
        if rule.is_some() {
            // A target is offered only where a real database serves it, never by a stand-in's name.
            v.available = here
                .iter()
                .filter(|f| is_database(f))
                .filter_map(name)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
        }
        Some(v)
    }

    fn identity(&self, _a: &Artifact) -> String {
        "miopen".into()
    }

    /// A find-DB MIOpen's HIP build never opens serves no target.
    fn unit_targets(&self, f: &FileRecord, a: &Artifact) -> Vec<(String, Option<u8>)> {
        if unread_find_db(file_name(&f.path.path)) {
            return Vec::new();
        }
        a.targets().into_iter().map(|t| (t, None)).collect()
    }
}
