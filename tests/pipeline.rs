//! The pipeline run in-process through the library's own API, as the commands run it, for tests
//! that hold one reading of a tree to another (check's tables against a full scan's facts,
//! `diff --only`'s fast path against a full diff). Shared by the integration and corpus tests.

use std::path::Path;

use gfxscan::library::{Context, Model};
use gfxscan::vocab::targets::Targets;

/// A quiet scan of `root`, read as `check` reads it for `check_for` (every fact when `None`),
/// and its library model.
pub fn model_of(root: &Path, check_for: Option<Vec<String>>, targets: &Targets) -> Model {
    use gfxscan::scan::ScanConfig;
    let config = ScanConfig { check_for: check_for.clone(), ..ScanConfig::of(vec![root.to_path_buf()]) };
    let snap = gfxscan::scan::scan(&config, targets, &gfxscan::scan::Silent).expect("scan");
    Model::build(snap, targets, Context { read_for: check_for, ..Context::default() })
}

/// The JSON of `check` for `gpus` on `root`, its tree read as `check` reads it (`tables`:
/// only what the GPUs' verdicts need) or as `scan` does.
pub fn verdicts_at(root: &Path, tables: bool, gpus: &[&str]) -> String {
    let targets = Targets::builtin();
    let gpus: Vec<String> = gpus.iter().map(|g| g.to_string()).collect();
    let env = gfxscan::check::devices::Env::default();
    let found = gfxscan::check::devices::from_args(&gpus, &env, &targets).expect("GPUs");
    let processors: Vec<String> = found.devices.iter().map(|d| d.effective.processor.clone()).collect();
    let model = model_of(root, tables.then_some(processors), &targets);
    let report = gfxscan::check::check(&model, &found, &targets, gfxscan::check::CheckOptions::default());
    serde_json::to_string_pretty(&report).expect("JSON")
}

/// The JSON of `diff --only` between two folders, each read as `diff` reads it for those
/// targets (`tables`: their verdicts' needs, `cmd::diff_reads_for`) or as `scan` does.
pub fn diff_at(old: &Path, new: &Path, only: &[&str], tables: bool) -> String {
    let targets = Targets::builtin();
    let only: Vec<String> = only.iter().map(|o| o.to_string()).collect();
    let side = |root: &Path| {
        model_of(root, if tables { gfxscan::cmd::diff_reads_for(&only) } else { None }, &targets)
    };
    let sources = (gfxscan::diff::SideSource::Scan, gfxscan::diff::SideSource::Scan);
    let mut d = gfxscan::diff::diff(&side(old), &side(new), sources, &targets);
    d.restrict(&only, &targets);
    serde_json::to_string_pretty(&d).expect("JSON")
}
