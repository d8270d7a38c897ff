//! A snapshot read back (a saved side of `diff`, a source of `merge`): held against itself
//! before anything is judged from it, then its families table made again as this version makes
//! it — the one place a saved snapshot is refreshed (its findings, as every snapshot's, are
//! the library model's to make).
//!
//! Nothing in it is believed as written: its roots and paths, its summary against its files,
//! each code object's target ID against its processor and its `e_flags` (as a scan resolves
//! them, `inspect::resolve`), and each object's bytes against its file's size. A snapshot that
//! fails is refused whole, naming the first problem and how many more.

use std::collections::BTreeSet;

use crate::aggregate::families_table;
use crate::inspect::resolve::resolve_flags;
use crate::model::{CodeObjectRecord, FileRecord, Snapshot};
use crate::vocab::target_id::{processor_of, settings, target_id};
use crate::vocab::targets::Targets;

/// The most problems listed by name; the rest are counted.
const NAMED: usize = 1;

/// `snap` checked and refreshed: its families table made again from its files (unless it was
/// filtered to some targets); its findings are the model's to judge again ([`super::Model::build`]).
/// An error names the first problem and how many more.
pub fn read_back(mut snap: Snapshot, targets: &Targets) -> Result<Snapshot, String> {
    let problems = tampering(&snap, targets);
    if let Some(first) = problems.first() {
        let more = match problems.len() - NAMED {
            0 => String::new(),
            1 => " (and 1 more problem)".to_string(),
            n => format!(" (and {n} more problems)"),
        };
        return Err(format!(
            "{first}{more}: the snapshot disagrees with itself (changed after gfxscan wrote it); rescan"
        ));
    }
    // Rows made again from the files, as this version makes them: a snapshot from an older
    // gfxscan lacks newer rows (the runtime's own code objects), which would read as changes.
    if snap.filtered_to.is_none() {
        snap.families = families_table(&snap.files, targets);
    }
    Ok(snap)
}

/// Every way the snapshot disagrees with itself or with what a scan writes, in file order.
fn tampering(snap: &Snapshot, targets: &Targets) -> Vec<String> {
    let mut out = Vec::new();
    if snap.roots.is_empty() {
        out.push("the snapshot names no root".to_string());
    }
    let n = snap.roots.len();
    let paths = snap.files.iter().map(|f| &f.path).chain(snap.problems.iter().map(|p| &p.path));
    for p in paths.chain(snap.links.iter().map(|l| &l.path)).filter(|p| p.root >= n) {
        out.push(format!("{:?} names root {} of {n}", p.path, p.root));
    }
    // By exact bytes: two names that are not UTF-8 may show alike.
    let mut seen = BTreeSet::new();
    for f in &snap.files {
        if !seen.insert(f.path.sort_key()) {
            out.push(format!("{}: listed twice", f.path.path));
        }
        out.extend(f.code_objects.iter().filter_map(|c| code_object_problem(f, c, targets)));
    }
    out.extend(summary_problems(snap));
    out
}

/// The summary's counts that its files give: files with device code and code objects.
fn summary_problems(snap: &Snapshot) -> Vec<String> {
    let with_code = snap.files.iter().filter(|f| !f.code_objects.is_empty()).count() as u64;
    let objects: u64 = snap.files.iter().map(|f| f.code_objects.len() as u64).sum();
    let mut out = Vec::new();
    for (what, said, counted) in [
        ("files_with_device_code", snap.summary.files_with_device_code, with_code),
        ("code_objects", snap.summary.code_objects, objects),
    ] {
        if said != counted {
            out.push(format!("summary.{what} is {said}, but its files hold {counted}"));
        }
    }
    out
}

/// What is wrong with one code object of `f`, if anything: a processor no scan writes, a target
/// ID that is not its processor's canonical one, `e_flags` that state another target, bytes
/// past the end of its file (or of its inflated bundle). A code object V2 is named from its ISA
/// note (`inspect::resolve`), whatever the table knows, so only its target ID is held to it.
fn code_object_problem(f: &FileRecord, c: &CodeObjectRecord, targets: &Targets) -> Option<String> {
    let at = || format!("{}: the code object at {:#x}", f.path.path, c.offset);
    let v2 = c.code_object_version == Some(2);
    if !v2 && !c.processor.starts_with("unknown-") && targets.by_name(&c.processor).is_none() {
        return Some(format!(
            "{}: a code object for {:?}, which no scan writes (not in the target table, not unknown-…)",
            f.path.path, c.processor
        ));
    }
    let (sramecc, xnack) = settings(&c.target_id);
    if processor_of(&c.target_id) != c.processor || target_id(&c.processor, sramecc, xnack) != c.target_id {
        return Some(format!("{}: target ID {:?} is not processor {:?}'s", at(), c.target_id, c.processor));
    }
    let why = flags_problem(c, targets).or_else(|| bytes_problem(f, c))?;
    Some(format!("{}: {why}", at()))
}

/// `e_flags` (V3 and later) that state another processor than the record, or (V4 and later,
/// whose flags spell the features out) other features or another generic version. A processor
/// an older table did not know (`unknown-0x41`) that today's table names is the table's change,
/// not the snapshot's; so are V3 features, which the table's `features` decide.
fn flags_problem(c: &CodeObjectRecord, targets: &Targets) -> Option<String> {
    let v = c.code_object_version.filter(|v| *v >= 3)?;
    let mach = c.e_flags & crate::inspect::resolve::EF_AMDGPU_MACH;
    if mach == 0 {
        return None;
    }
    let r = resolve_flags(c.e_flags, Some(v), targets);
    let older_table = c.processor == crate::inspect::resolve::unknown_mach(mach) && r.known;
    let agree = match v {
        3 => r.processor == c.processor,
        _ => {
            (&r.processor, &r.target_id, r.generic_version) == (&c.processor, &c.target_id, c.generic_version)
        }
    };
    (!agree && !older_table)
        .then(|| format!("its e_flags {:#x} state {}, not {}", c.e_flags, r.target_id, c.target_id))
}

/// Bytes past the end of the file (or, compressed, of the inflated bundle).
fn bytes_problem(f: &FileRecord, c: &CodeObjectRecord) -> Option<String> {
    let (end, within, of) = match (c.file_range(), c.bundle_sizes()) {
        (Some((offset, size)), _) => (offset.checked_add(size), f.size, "its file"),
        (None, Some((_, inflated))) => (c.offset.checked_add(c.size), inflated, "its inflated bundle"),
        (None, None) => return None,
    };
    end.is_none_or(|e| e > within)
        .then(|| format!("{} bytes run past the end of {of} ({within} bytes)", c.size))
}
