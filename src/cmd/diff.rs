//! `gfxscan diff OLD NEW`: each side a saved snapshot (checked and refreshed,
//! `library::readback`) or a tree scanned now, each side's model built once, the two compared.

use std::path::Path;

use anyhow::bail;

use super::{diff_reads_for, distinct, known_targets, load_targets, memory_aim, open_outputs, scan_roots};
use crate::cli::{self, DiffArgs, OutputFormat, ScanOpts, TableArgs};
use crate::exit::ExitStatus;
use crate::library::{readback, Context, Model};
use crate::model::Snapshot;
use crate::report::output::deliver_all;
use crate::scan::Recording;
use crate::source::snapshot;
use crate::vocab::targets::Targets;
use crate::{diff, report};

/// Runs `gfxscan diff`.
pub fn run(mut args: DiffArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.table)?;
    args.only = known_targets("--only", &args.only, &targets)?;
    let outputs = open_outputs(color, args.json, args.format, &args.outputs, OutputFormat::DIFF)?;
    // Both sides are read and checked before either is scanned: a bad snapshot fails at once.
    let old_snap = saved(&args.old, &targets)?;
    let new_snap = saved(&args.new, &targets)?;
    if old_snap.is_none() || new_snap.is_none() {
        // A side is scanned: its memory aim, said once with --verbose.
        args.resources.max_memory = Some(memory_aim(&args.resources, args.verbose));
    }
    let (old, so) = side(&args, &args.old, old_snap, &targets)?;
    let (new, sn) = side(&args, &args.new, new_snap, &targets)?;
    let mut d = diff::diff(&old, &new, (so, sn), &targets);
    d.restrict(&distinct(&args.only), &targets);
    deliver_all(outputs, d.exit_status(args.fail_on_loss), |format, style, w| {
        report::write_diff(&d, &targets, format, args.verbose, style, w)
    })
}

/// A side that is a saved snapshot, read and checked (`library::readback`); `None` for a tree
/// to scan.
fn saved(p: &Path, targets: &Targets) -> anyhow::Result<Option<Snapshot>> {
    match snapshot::side_kind(p) {
        snapshot::SideKind::Snapshot => {
            let s = snapshot::read_snapshot(p)?;
            readback::read_back(s, targets).map(Some).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
        }
        snapshot::SideKind::Scan => Ok(None),
        snapshot::SideKind::Neither(why) => bail!("{}: {why}", p.display()),
    }
}

/// One side's model: a snapshot read back, or the tree scanned now — asked about some targets
/// only, read as `check` reads it for them (their entries whole, the others' from bundle
/// tables: losses are verdicts).
fn side(
    args: &DiffArgs,
    p: &Path,
    read: Option<Snapshot>,
    targets: &Targets,
) -> anyhow::Result<(Model, diff::SideSource)> {
    if let Some(s) = read {
        return Ok((Model::build(s, targets, Context::default()), diff::SideSource::Snapshot));
    }
    let opts = ScanOpts {
        roots: vec![p.to_path_buf()],
        outputs: Vec::new(),
        resources: args.resources,
        follow_links: false,
        cross_file_systems: false,
        quiet: args.quiet,
        reuse: args.reuse.clone(),
        images: args.images.clone(),
        table: TableArgs { targets: args.table.targets.clone() },
    };
    let reads_for = diff_reads_for(&args.only);
    let snap =
        scan_roots(vec![p.to_path_buf()], &opts, targets, reads_for.clone(), None, false, Recording::Off)?;
    let context = Context { read_for: reads_for, ..Context::default() };
    Ok((Model::build(snap, targets, context), diff::SideSource::Scan))
}
