//! `gfxscan merge`: a fleet of snapshots, each read back and checked, merged into one matrix
//! of sources × targets × layers, with `--gpu` a verdict per source.

use anyhow::bail;

use super::{distinct, known_targets, load_targets, open_outputs};
use crate::check::devices::{self, Env};
use crate::cli::{self, MergeArgs, OutputFormat};
use crate::exit::ExitStatus;
use crate::library::readback;
use crate::report::output::deliver_all;
use crate::scan::Recording;
use crate::source::snapshot;
use crate::{aggregate, check, merge, report};

/// A `registry:` input's snapshot: the image scanned for every fact.
fn scan_image(
    p: &std::path::Path,
    args: &MergeArgs,
    targets: &crate::vocab::targets::Targets,
) -> anyhow::Result<crate::model::Snapshot> {
    let mut resources = cli::Resources { threads: args.threads, max_memory: None };
    // Sources are read in parallel: each image scanned gets its share of the memory aim.
    let share = rayon::current_num_threads().max(1) as u64;
    resources.max_memory = Some((super::memory_aim(&resources, false) / share).max(100 << 20));
    let opts = cli::ScanOpts {
        roots: vec![p.to_path_buf()],
        outputs: Vec::new(),
        resources,
        follow_links: false,
        cross_file_systems: false,
        quiet: args.quiet,
        reuse: Vec::new(),
        images: args.images.clone(),
        table: cli::TableArgs { targets: args.table.targets.clone() },
    };
    super::scan_roots(vec![p.to_path_buf()], &opts, targets, None, None, false, Recording::Off)
}

/// Runs `gfxscan merge`.
pub fn run(mut args: MergeArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.table)?;
    let outputs = open_outputs(color, args.json, args.format, &args.outputs, OutputFormat::MERGE)?;
    args.only = known_targets("--only", &args.only, &targets)?;
    // One spelling is as good as another: `library code`, `library-code`, `LIBRARY_CODE`.
    let plain = |s: &str| s.to_lowercase().replace(['-', '_'], " ");
    match aggregate::layers().iter().find(|l| plain(l.header) == plain(&args.layer)) {
        Some(l) => args.layer = l.header.to_string(),
        None => {
            let names: Vec<&str> = aggregate::layers().iter().map(|l| l.header).collect();
            bail!("--layer: unknown layer {:?} (one of: {})", args.layer, names.join(", "));
        }
    }
    // The sources' own environments are unknown here: no override is applied.
    let gpus = match args.gpus.is_empty() {
        true => None,
        false => Some(devices::from_args(&args.gpus, &Env::default(), &targets).map_err(anyhow::Error::msg)?),
    };
    let is_image = |p: &std::path::Path| {
        matches!(crate::source::walk::root_kind(p), Ok((crate::source::walk::RootKind::Registry(_), _)))
    };
    let on_disk: Vec<std::path::PathBuf> = args.inputs.iter().filter(|p| !is_image(p)).cloned().collect();
    if let [first, ..] = snapshot::missing(&on_disk).as_slice() {
        bail!("{}: no such file or folder (merge takes snapshots and folders of them)", first.display());
    }
    let (paths, unlisted) = merge::gather(&args.inputs, &|d| snapshot::snapshots_in(d));
    if paths.is_empty() {
        let given: Vec<String> = args.inputs.iter().map(|p| p.display().to_string()).collect();
        bail!("no snapshot in {} (*.json, *.json.zst, *.json.xz): nothing to merge", given.join(", "));
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(args.threads.unwrap_or(0)).build()?;
    let fleet = pool.install(|| {
        let g = gpus.as_ref().map(|g| (g, args.gpus.clone()));
        let read = |p: &std::path::Path| match unlisted.get(p) {
            Some(why) => Err(anyhow::anyhow!("{why}")),
            // An image in a registry: scanned now, as `scan` would write its snapshot.
            None if is_image(p) => scan_image(p, &args, &targets),
            None => snapshot::read_snapshot(p).and_then(|s| {
                readback::read_back(s, &targets).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
            }),
        };
        merge::merge(&paths, &read, g, &distinct(&args.only), &targets)
    });
    // No OK for a source that could not be read, or judged: a missing piece first (it is
    // certain), then anything unread or with nothing to check.
    let verdict = |o| fleet.sources.iter().any(|s| s.verdict == Some(o));
    let status = if verdict(check::Outcome::Missing) {
        ExitStatus::Missing
    } else if fleet.unreadable() > 0
        || verdict(check::Outcome::Incomplete)
        || verdict(check::Outcome::NothingToCheck)
    {
        ExitStatus::Incomplete
    } else {
        ExitStatus::Clean
    };
    deliver_all(outputs, status, |format, style, w| {
        report::merge::write_merge(&fleet, &targets, &args.layer, format, style, w)
    })
}
