//! `gfxscan scan`: read the roots, build the model, and write the per-target, per-library or
//! per-layer view, the snapshot, the page, the SBOM — or, with `--keep`, what could be dropped.

use anyhow::bail;

use super::{distinct, known_targets, load_targets, memory_aim, open_outputs, scan_roots};
use crate::cli::{self, OutputFormat, ScanArgs, ScanOpts};
use crate::exit::ExitStatus;
use crate::library::{Context, Model};
use crate::report::output::deliver_all;
use crate::vocab::targets::Targets;
use crate::{check, library, report, source};

/// Scans what `opts` names (or the default roots), with a progress bar; with `digests`, each
/// listed file's SHA-256 is taken.
fn scan_for(opts: &ScanOpts, targets: &Targets, digests: bool) -> anyhow::Result<crate::model::Snapshot> {
    let roots = if opts.roots.is_empty() {
        let found = source::walk::default_roots();
        if found.is_empty() {
            bail!(
                "none of the default roots exists ({}); name a ROOT, e.g. `gfxscan scan /path/to/rocm`",
                source::walk::DEFAULT_ROOTS.join(", ")
            );
        }
        found
    } else {
        opts.roots.clone()
    };
    scan_roots(roots, opts, targets, None, None, digests, !opts.reuse.is_empty())
}

/// Runs `gfxscan scan`.
pub fn run(mut args: ScanArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    args.only = known_targets("--only", &args.only, &targets)?;
    if let Some(c) = &args.compare {
        args.compare = Some(known_targets("--compare", c, &targets)?);
    }
    args.keep = known_targets("--keep", &args.keep, &targets)?;
    let takes = if args.keep.is_empty() { OutputFormat::SCAN } else { OutputFormat::PRUNE };
    let outputs = open_outputs(color, args.json, args.format, &args.opts.outputs, takes).map_err(|e| {
        if args.keep.is_empty() {
            e
        } else {
            e.context("--keep")
        }
    })?;
    // The time an SBOM states, checked before the scan.
    let sbom = outputs.iter().any(|o| o.format == OutputFormat::Cyclonedx);
    let created = if sbom { source_date_epoch()? } else { None };
    args.opts.resources.max_memory = Some(memory_aim(&args.opts.resources, args.verbose));
    let model = Model::build(scan_for(&args.opts, &targets, args.digests)?, &targets, Context::default());
    let snap = model.snapshot();
    // Files not read come first: findings from a partial read are not trusted to gate on.
    let status = match (snap.problems.is_empty(), snap.findings.is_empty()) {
        (false, _) => ExitStatus::Problems,
        (true, false) if args.fail_on_findings => ExitStatus::Findings,
        _ => ExitStatus::Clean,
    };
    let (view, only) = match &args.compare {
        Some(chosen) => (cli::View::Layer, distinct(chosen)),
        None => (args.by, distinct(&args.only)),
    };
    let mut view =
        report::ScanView { view, only, wide: args.wide, created, gates: Vec::new(), served: Vec::new() };
    // The header's served targets, for the outputs that show it.
    let headed =
        |f: OutputFormat| matches!(f, OutputFormat::Table | OutputFormat::Markdown | OutputFormat::Html);
    if args.keep.is_empty() && outputs.iter().any(|o| headed(o.format)) {
        view.served = check::summary::code_rows(&model, &targets);
    }
    if outputs.iter().any(|o| o.format == OutputFormat::Html) {
        // A column for each processor the page's per-target table has a row for.
        let shown = report::views::shown_targets(snap, &targets, &view.only);
        view.gates = gates_for(&model, &targets, &shown.into_iter().map(|(t, _)| t).collect::<Vec<_>>());
    }
    if !args.keep.is_empty() {
        let report = check::prune::prune(&model, &distinct(&args.keep), &targets);
        return deliver_all(outputs, status, |format, style, w| {
            report::prune::write_prune(&report, &snap.roots, format, args.verbose, style, w)
        });
    }
    let matrix = library::matrix::library_matrix(&model, &targets);
    deliver_all(outputs, status, |format, style, w| {
        report::write_scan(snap, &targets, &matrix, &view, format, style, w)
    })
}

/// `SOURCE_DATE_EPOCH` (reproducible-builds.org): the time a reproducible output may state,
/// in seconds since 1970; a value that is not one is refused, as that specification asks, and
/// so is one past the last time RFC 3339 writes (9999-12-31T23:59:59Z).
fn source_date_epoch() -> anyhow::Result<Option<u64>> {
    const LAST: u64 = 253_402_300_799;
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.is_empty() => match v.trim().parse::<u64>() {
            Ok(n) if n <= LAST => Ok(Some(n)),
            _ => bail!("SOURCE_DATE_EPOCH={v:?} is not a whole number of seconds from 1970 to the year 9999"),
        },
        _ => Ok(None),
    }
}

/// The gates of each of `names` that is a processor of the table (generic targets and unknown
/// names have no GPU to explain; one `--gpu` refuses has none either), as `explain` gives them
/// for the scanned roots.
fn gates_for(model: &Model, targets: &Targets, names: &[String]) -> Vec<crate::explain::Explanation> {
    let none = check::devices::Env::default();
    names
        .iter()
        .filter_map(|n| targets.by_name(n))
        .filter(|t| !t.is_generic())
        .filter_map(|t| {
            let gpus = check::devices::from_args(std::slice::from_ref(&t.name), &none, targets).ok()?;
            Some(super::explain::explain_scanned(model, t, &t.name, &gpus, targets, Default::default()).0)
        })
        .collect()
}
