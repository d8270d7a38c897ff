//! Aggregation: the records of a scan become its snapshot — counts folded as files come in
//! ([`Tally`]), then sorted records, per-target totals, the families table and the names that
//! lie. Pure: nothing here reads a file, and the result depends only on what was found, never
//! on the order it came in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use crate::families::{self, cataloger, Row, FAMILY_ROWS};
use crate::inspect::{Found, LinkSeen};
use crate::model::{
    ArchiveRecord, DeclaredTargets, FileRecord, HipRuntime, IndexMap, LinkRecord, Mismatch, Problem, RelPath,
    ReleaseMark, ReleaseSignal, Snapshot, Summary, TargetCounts, TargetMap, Tool, SCHEMA_VERSION,
};
use crate::vocab::runtime::hip_runtime_version;
use crate::vocab::targets::Targets;

/// What a scan has gathered: summary counts, the records of files worth reporting, problems,
/// links and archives. Files are counted and dropped as they come, unless they have a record.
#[derive(Default)]
pub struct Tally {
    pub summary: Summary,
    pub files: Vec<FileRecord>,
    pub problems: Vec<Problem>,
    pub links: Vec<LinkSeen>,
    pub archives: Vec<ArchiveRecord>,
    pub hip_runtimes: Vec<HipRuntime>,
    /// TheRock installs' declared targets.
    pub declared_targets: Vec<DeclaredTargets>,
    /// Files that state their install's ROCm release.
    pub rocm_releases: Vec<ReleaseMark>,
    /// Links followed out of their root (`--follow-links`), with the real path each leads to.
    pub links_out_of_root: Vec<LinkRecord>,
}

impl Tally {
    /// Counts what reading one candidate found, keeping only records worth reporting.
    pub fn add(&mut self, found: Found) {
        for o in found.files {
            self.summary.files += 1;
            self.summary.bytes += o.size;
            *self.summary.kinds.entry(o.kind).or_default() += 1;
            // The HIP runtime has no device code of its own: its name is what says it is here.
            if o.kind.is_host_binary() {
                if let Some(version) = hip_runtime_version(o.path.file_name()) {
                    self.hip_runtimes.push(HipRuntime { path: o.path.clone(), version });
                }
                if let Some(version) = crate::parse::release::rocm_core_version(o.path.file_name()) {
                    let signal = ReleaseSignal::RocmCoreLibrary;
                    self.rocm_releases.push(ReleaseMark { path: o.path.clone(), version, signal });
                }
            }
            if let Some((signal, version)) = o.release {
                self.rocm_releases.push(ReleaseMark { path: o.path.clone(), version, signal });
            }
            if let Some(targets) = o.declared_targets {
                self.declared_targets.push(DeclaredTargets { path: o.path.clone(), targets });
            }
            for message in o.problems {
                self.problems.push(Problem { path: o.path.clone(), message });
            }
            self.files.extend(o.record.map(|r| *r));
        }
        self.summary.files += found.counted.files;
        self.summary.bytes += found.counted.bytes;
        for (kind, n) in found.counted.kinds {
            *self.summary.kinds.entry(kind).or_default() += n;
        }
        self.summary.symlinks += found.symlinks;
        self.links.extend(found.links);
        self.problems.extend(found.problems);
        self.archives.extend(found.archives);
    }

    /// Both tallies in one; everything is sorted at the end, so the order of merging is free.
    pub fn merge(mut self, other: Tally) -> Tally {
        self.summary.files += other.summary.files;
        self.summary.bytes += other.summary.bytes;
        self.summary.symlinks += other.summary.symlinks;
        for (kind, n) in other.summary.kinds {
            *self.summary.kinds.entry(kind).or_default() += n;
        }
        self.files.extend(other.files);
        self.problems.extend(other.problems);
        self.links.extend(other.links);
        self.archives.extend(other.archives);
        self.hip_runtimes.extend(other.hip_runtimes);
        self.declared_targets.extend(other.declared_targets);
        self.rocm_releases.extend(other.rocm_releases);
        self.links_out_of_root.extend(other.links_out_of_root);
        self
    }
}

/// The snapshot of a finished scan of `roots`: everything sorted by root and path bytes.
pub fn snapshot(tally: Tally, roots: Vec<String>, targets: &Targets) -> Snapshot {
    let Tally {
        mut summary,
        mut files,
        mut problems,
        links: all_links,
        mut archives,
        mut hip_runtimes,
        mut declared_targets,
        mut rocm_releases,
        mut links_out_of_root,
    } = tally;
    declared_targets.sort_by_cached_key(|d| d.path.sort_key());
    rocm_releases.sort_by_cached_key(|r| (r.path.sort_key(), r.signal));
    links_out_of_root.sort_by_cached_key(|l| l.path.sort_key());
    hip_runtimes.sort_by_cached_key(|r| r.path.sort_key());
    files.sort_by_cached_key(|f| f.path.sort_key());
    problems.sort_by_cached_key(|p| (p.path.sort_key(), p.message.clone()));
    summary.files_with_device_code = files.iter().filter(|f| !f.code_objects.is_empty()).count() as u64;
    summary.code_objects = files.iter().map(|f| f.code_objects.len() as u64).sum();
    let mut links: Vec<LinkRecord> = all_links
        .iter()
        .filter_map(|l| {
            let artifact = families::detect_link(&l.name, targets)?;
            Some(LinkRecord { path: l.path.clone(), target: l.target.clone(), artifact: Some(artifact) })
        })
        .collect();
    links.sort_by_cached_key(|l| l.path.sort_key());
    archives.sort_by_cached_key(|a| a.path.sort_key());
    Snapshot {
        schema_version: SCHEMA_VERSION,
        tool: Tool::current(),
        roots,
        summary,
        targets: in_natural_order(summarize_targets(&files), targets),
        mismatches: mismatches(&files, &links),
        families: families_table(&files, targets),
        files,
        problems,
        links,
        filtered_to: None,
        via_generic: TargetMap::new(),
        archives,
        findings: Vec::new(),
        hip_runtimes,
        declared_targets,
        rocm_releases,
        links_out_of_root,
        identities: None,
        drivers: Vec::new(),
    }
}

/// A column of the per-target table: one layer of the install, one or more family rows.
pub struct Layer {
    pub header: &'static str,
    pub rows: Vec<Row>,
}

/// The layers in display order: family rows grouped by their column, first one first.
pub fn layers() -> Vec<Layer> {
    let mut out: Vec<Layer> = Vec::new();
    for row in FAMILY_ROWS.iter() {
        match out.iter_mut().find(|l| l.header == row.column) {
            Some(l) => l.rows.push(*row),
            None => out.push(Layer { header: row.column, rows: vec![*row] }),
        }
    }
    out
}

/// How much `layer` holds for `target`, less the parts other layers show apart.
pub fn layer_count(snap: &Snapshot, layer: &Layer, target: &str) -> u64 {
    let count = |key: &str| snap.families.get(key).and_then(|m| m.get(target)).copied().unwrap_or(0);
    let total: u64 = layer.rows.iter().map(|r| count(r.key)).sum();
    let apart: u64 = FAMILY_ROWS
        .iter()
        .filter(|r| r.within.is_some_and(|w| layer.rows.iter().any(|x| x.key == w)))
        .map(|r| count(r.key))
        .sum();
    total.saturating_sub(apart)
}

/// The row key of the runtime's own code objects (`families::code_row`).
pub const RUNTIME_ROW: &str = "runtime-internal-code-objects";

/// Every target anything in the snapshot is for: code objects and every family's files.
pub fn targets_present(snap: &Snapshot) -> BTreeSet<String> {
    snap.targets.keys().chain(snap.families.values().flat_map(|m| m.keys())).cloned().collect()
}

/// True for a target whose only code here is the runtime's own: nothing else holds anything
/// for it, and no library has code for its generic target (which the runtime would load).
pub fn runtime_only(snap: &Snapshot, targets: &Targets, target: &str) -> bool {
    let counts = |t: &str| -> Vec<(bool, u64)> {
        layers()
            .iter()
            .map(|l| (l.rows.iter().any(|r| r.key == RUNTIME_ROW), layer_count(snap, l, t)))
            .collect()
    };
    let own = counts(target);
    let generic = crate::vocab::runtime::generic_of(target, targets);
    let served_generically = generic.is_some_and(|g| counts(g).iter().any(|(runtime, n)| !runtime && *n > 0));
    own.iter().any(|(runtime, n)| *runtime && *n > 0)
        && own.iter().all(|(runtime, n)| *runtime || *n == 0)
        && !served_generically
}

/// A map keyed by processor, in the natural target order.
pub fn in_natural_order<V>(m: BTreeMap<String, V>, targets: &Targets) -> TargetMap<V> {
    let mut out: TargetMap<V> = m.into_iter().collect();
    out.sort_by(|a, _, b, _| targets.cmp(a, b));
    out
}

/// Code objects, kernels, bytes and files per processor.
pub fn summarize_targets(files: &[FileRecord]) -> BTreeMap<String, TargetCounts> {
    let mut out: BTreeMap<String, TargetCounts> = BTreeMap::new();
    for f in files {
        let mut seen = BTreeSet::new();
        for co in &f.code_objects {
            let t = out.entry(co.processor.clone()).or_default();
            t.code_objects += 1;
            t.kernels += co.kernels.unwrap_or(0);
            t.bytes += co.size;
            *t.target_ids.entry(co.target_id.clone()).or_default() += 1;
            if seen.insert(co.processor.as_str()) {
                t.files += 1;
            }
        }
    }
    out
}

/// Per row of the families table (`families::FAMILY_ROWS`), per target: how much the tree
/// holds — code objects outside any family, and what each family's cataloger counts.
pub fn families_table(files: &[FileRecord], targets: &Targets) -> IndexMap<String, TargetMap<u64>> {
    let mut t: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut add = |row: &str, target: &str, n: u64| {
        if n > 0 {
            *t.entry(row.to_string()).or_default().entry(target.to_string()).or_default() += n;
        }
    };
    for f in files {
        for c in &f.code_objects {
            for row in families::code_rows(f, c) {
                add(row, &c.processor, 1);
            }
        }
        let Some(a) = &f.artifact else { continue };
        let Some((row, n)) = a.family.and_then(|fam| cataloger(fam).tally(f, a)) else { continue };
        for target in a.targets() {
            add(row, &target, n);
        }
    }
    // Rows in display order, targets in the natural order.
    families::FAMILY_ROWS
        .iter()
        .filter_map(|row| Some((row.key.to_string(), in_natural_order(t.remove(row.key)?, targets))))
        .collect()
}

/// Joins a link's target to the folder holding the link, resolving `.` and `..` lexically.
fn link_destination(link: &RelPath, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut out: Vec<String> =
        Path::new(&link.path).parent()?.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    for part in Path::new(target).components() {
        match part {
            Component::Normal(p) => out.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop()?;
            }
            _ => {}
        }
    }
    Some(out.join("/"))
}

/// Files and links whose name claims a target their content does not serve. Content means
/// what the bytes say (code objects, Tensile hardware rows), never another file's name.
pub fn mismatches(files: &[FileRecord], links: &[LinkRecord]) -> Vec<Mismatch> {
    let mut out = BTreeSet::new();
    let by_path: BTreeMap<(usize, &str), &FileRecord> =
        files.iter().map(|f| ((f.path.root, f.path.path.as_str()), f)).collect();
    let link_by_path: BTreeMap<(usize, &str), &LinkRecord> =
        links.iter().map(|l| ((l.path.root, l.path.path.as_str()), l)).collect();
    for f in files {
        let Some(a) = &f.artifact else { continue };
        if let (Some(name), Some(content)) = (&a.name_target, &a.content_targets) {
            // An index with a row for any processor serves whatever device loads it.
            if !content.is_empty() && !content.contains(name) && !a.any_processor() {
                out.insert(Mismatch {
                    path: f.path.clone(),
                    name_target: name.clone(),
                    content_targets: content.clone(),
                    via_link: None,
                });
            }
        }
    }
    for l in links {
        let Some(name) = l.artifact.as_ref().and_then(|a| a.name_target.clone()) else { continue };
        // Follow links to links, a few hops at most.
        let (mut at, mut dest) = (l.path.clone(), link_destination(&l.path, &l.target));
        for _ in 0..8 {
            let Some(d) = dest.clone() else { break };
            if let Some(next) = link_by_path.get(&(at.root, d.as_str())) {
                at = next.path.clone();
                dest = link_destination(&next.path, &next.target);
                continue;
            }
            if let Some(file) = by_path.get(&(at.root, d.as_str())) {
                // Only content can convict a name: a link to a file known only by its own name
                // (firmware, which linux-firmware shares across chips by links on purpose;
                // Tensile sub-libraries) proves nothing.
                let served =
                    file.artifact.as_ref().and_then(|a| a.content_targets.clone()).unwrap_or_default();
                let any = file.artifact.as_ref().is_some_and(|a| a.any_processor());
                if !served.is_empty() && !served.contains(&name) && !any {
                    out.insert(Mismatch {
                        path: l.path.clone(),
                        name_target: name.clone(),
                        content_targets: served,
                        via_link: Some(d),
                    });
                }
            }
            break;
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_destinations() {
        let l = RelPath { root: 0, path: "lib/rocblas/library/a.dat".into(), path_hex: None };
        assert_eq!(link_destination(&l, "b.dat").as_deref(), Some("lib/rocblas/library/b.dat"));
        assert_eq!(link_destination(&l, "../x/c.dat").as_deref(), Some("lib/rocblas/x/c.dat"));
        assert_eq!(link_destination(&l, "/abs"), None);
    }
}
