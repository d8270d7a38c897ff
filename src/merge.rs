//! A fleet at once: many snapshots (a node's, an image's, a wheel's) into one matrix of
//! sources × targets × layers, and with GPUs named, a verdict per source.
//!
//! It streams: each snapshot is read, reduced to its row — per target, per layer, a count —
//! and dropped, so memory is bounded by the matrix, not by the snapshots; up to the thread
//! count are read at once. A snapshot that cannot be read is a row with its error, and the
//! merge goes on.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::aggregate::{layer_count, layers};
use crate::check::devices::Gpus;
use crate::check::{self, CheckOptions, Outcome};
use crate::library::{Context, Model};
use crate::model::{IndexMap, Snapshot, TargetMap, Tool};
use crate::vocab::targets::Targets;

/// The version of the merge document.
pub const MERGE_SCHEMA_VERSION: u32 = 1;

/// One source: where its snapshot came from, what it held, and its verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Source {
    /// The snapshot file's name without its extensions (`node-17` for `node-17.json.zst`).
    pub name: String,
    /// The snapshot file.
    pub path: String,
    /// The roots its scan read.
    pub roots: Vec<String>,
    /// Files it looked at, and files it could not read.
    pub files: u64,
    pub problems: u64,
    /// Per target with anything: a count per layer, in the order of [`Fleet::layers`].
    pub counts: TargetMap<Vec<u64>>,
    /// With `--gpu`: the check's outcome for this source over every GPU named (`ok`,
    /// `missing`, …): the worst of `gpu_verdicts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Outcome>,
    /// With `--gpu`: the check's outcome for each GPU alone, by its target ID, in the order named.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub gpu_verdicts: IndexMap<String, Outcome>,
    /// Why the snapshot could not be read; the row is otherwise empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The merged matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Fleet {
    /// The version of the merge document ([`MERGE_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: Tool,
    /// The layers, in column order.
    pub layers: Vec<String>,
    /// Every target any source holds (or those asked for), in the natural order.
    pub targets: Vec<String>,
    /// With `--gpu`: the GPUs each source was checked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<String>,
    /// One row per snapshot, in the order given (folders: by file name).
    pub sources: Vec<Source>,
}

impl Fleet {
    /// Sources whose snapshot could not be read.
    pub fn unreadable(&self) -> usize {
        self.sources.iter().filter(|s| s.error.is_some()).count()
    }
}

/// A snapshot file's name without `.json` and a compression suffix.
fn source_name(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = name.strip_suffix(".zst").or_else(|| name.strip_suffix(".xz")).unwrap_or(&name).to_string();
    name.strip_suffix(".json").unwrap_or(&name).to_string()
}

/// One snapshot's row.
fn row(
    path: &Path,
    snap: Option<Snapshot>,
    error: Option<String>,
    gpus: Option<&Gpus>,
    only: &[String],
    targets: &Targets,
) -> Source {
    let mut src =
        Source { name: source_name(path), path: path.display().to_string(), error, ..Source::default() };
    // Read back by `library::readback::read_back`: checked, its tables made again; its model
    // built once for every GPU's check.
    let Some(snap) = snap else { return src };
    let model = Model::build(snap, targets, Context::default());
    let snap = model.snapshot();
    src.roots = snap.roots.clone();
    src.files = snap.summary.files;
    src.problems = snap.problems.len() as u64;
    let mut names: Vec<String> = snap.families.values().flat_map(|m| m.keys().cloned()).collect();
    names.retain(|t| only.is_empty() || only.contains(t));
    targets.sort(&mut names);
    names.dedup();
    let all = layers();
    for t in names {
        let per: Vec<u64> = all.iter().map(|l| layer_count(snap, l, &t)).collect();
        if per.iter().any(|n| *n > 0) {
            src.counts.insert(t, per);
        }
    }
    src.counts.shrink_to_fit();
    if let Some(g) = gpus {
        let opts = CheckOptions::default;
        for d in &g.devices {
            let one = Gpus { devices: vec![d.clone()], unknown: g.unknown.clone() };
            src.gpu_verdicts
                .insert(d.effective.target_id.clone(), check::check(&model, &one, targets, opts()).outcome);
        }
        // The check of all the GPUs at once: MISSING when one GPU's is; otherwise what is left
        // (unread files, unknown GPUs, nothing to check) does not depend on the GPU.
        let mut each = src.gpu_verdicts.values().copied();
        src.verdict = Some(match each.clone().find(|o| *o == Outcome::Missing).or_else(|| each.next()) {
            Some(o) => o,
            None => check::check(&model, g, targets, opts()).outcome,
        });
    }
    src
}

/// The snapshot files the inputs name: a folder gives its snapshots (`list`), anything else
/// is taken as one. A folder that cannot be listed stays an input, with the reason, so that it
/// is a row that could not be read rather than the end of the merge.
pub fn gather(
    inputs: &[PathBuf],
    list: &dyn Fn(&Path) -> anyhow::Result<Vec<PathBuf>>,
) -> (Vec<PathBuf>, std::collections::HashMap<PathBuf, String>) {
    let mut paths = Vec::new();
    let mut unlisted = std::collections::HashMap::new();
    for input in inputs {
        if !input.is_dir() {
            paths.push(input.clone());
            continue;
        }
        match list(input) {
            Ok(found) => paths.extend(found),
            Err(e) => {
                unlisted.insert(input.clone(), format!("{e:#}"));
                paths.push(input.clone());
            }
        }
    }
    (paths, unlisted)
}

/// Sources whose file names are the same (`a/node.json`, `b/node.json`) are named by their
/// paths instead, so that no two rows read alike.
fn name_apart(sources: &mut [Source]) {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for s in sources.iter() {
        *seen.entry(s.name.clone()).or_default() += 1;
    }
    for s in sources.iter_mut().filter(|s| seen.get(&s.name).is_some_and(|&n| n > 1)) {
        s.name = s.path.clone();
    }
}

/// Merges the snapshots at `paths`, read by `read`, into one matrix. `only` cuts the targets.
pub fn merge(
    paths: &[PathBuf],
    read: &(dyn Fn(&Path) -> anyhow::Result<Snapshot> + Sync),
    gpus: Option<(&Gpus, Vec<String>)>,
    only: &[String],
    targets: &Targets,
) -> Fleet {
    let g = gpus.as_ref().map(|(g, _)| *g);
    let mut sources: Vec<Source> = paths
        .par_iter()
        .map(|p| match read(p) {
            Ok(s) => row(p, Some(s), None, g, only, targets),
            Err(e) => row(p, None, Some(format!("{e:#}")), None, only, targets),
        })
        .collect();
    name_apart(&mut sources);
    let mut all: Vec<String> = if only.is_empty() {
        let mut v: Vec<String> = sources.iter().flat_map(|s| s.counts.keys().cloned()).collect();
        targets.sort(&mut v);
        v.dedup();
        v
    } else {
        only.to_vec()
    };
    all.dedup();
    Fleet {
        schema_version: MERGE_SCHEMA_VERSION,
        tool: Tool::current(),
        layers: layers().iter().map(|l| l.header.to_string()).collect(),
        targets: all,
        gpus: gpus.map(|(_, names)| names).unwrap_or_default(),
        sources,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A folder that cannot be listed is kept as an input with its reason (root passes
    /// permission checks, so the lister stands in for a folder it may not read).
    #[test]
    fn a_folder_that_cannot_be_listed_is_kept_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.json");
        std::fs::write(&file, b"{}").unwrap();
        let inputs = vec![file.clone(), dir.path().to_path_buf()];
        let deny = |p: &Path| -> anyhow::Result<Vec<PathBuf>> {
            anyhow::bail!("cannot read {}: Permission denied", p.display())
        };
        let (paths, unlisted) = gather(&inputs, &deny);
        assert_eq!(paths, inputs);
        assert!(unlisted.get(dir.path()).is_some_and(|e| e.contains("Permission denied")), "{unlisted:?}");
        let (paths, unlisted) = gather(&inputs, &|_| Ok(vec![file.clone()]));
        assert_eq!(paths, [file.clone(), file]);
        assert!(unlisted.is_empty());
    }
}
