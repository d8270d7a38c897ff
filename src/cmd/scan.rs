//! `gfxscan scan`: read the roots, build the model, and write the per-target, per-library or
//! per-layer view, the snapshot, the page, the SBOM — or, with `--keep`, what could be dropped.

use std::path::PathBuf;

use anyhow::bail;

use super::{distinct, known_targets, load_targets, memory_aim, open_outputs, scan_roots};
use crate::cli::{self, OutputFormat, ScanArgs, ScanOpts};
use crate::exit::ExitStatus;
use crate::library::{Context, Model};
use crate::report::output::{deliver_all, Planned};
use crate::scan::{Recording, ScanConfig};
use crate::vocab::targets::Targets;
use crate::{check, library, report, source};

/// The roots `opts` names, or the default roots that exist.
fn roots_of(opts: &ScanOpts) -> anyhow::Result<Vec<PathBuf>> {
    Ok(if opts.roots.is_empty() {
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
    })
}

/// The options of `scan` that shape its JSON, for the rescan key (`reuse::Survey::key`): every
/// field is named here, so a new option must be sorted in or out of the key before it builds.
/// Out: where outputs go and in which format (the JSON is the same), how many threads and how
/// much memory (the same facts, or problems, which a key is never written with), what is said on
/// standard error, the snapshots reused, the exit status asked for, and the table's path (its
/// text is in the key).
fn rescan_options(args: &ScanArgs) -> crate::reuse::ScanOptions {
    let ScanArgs {
        opts,
        format: _,
        json: _,
        only,
        by,
        wide,
        keep,
        verbose: _,
        digests,
        fail_on_findings: _,
        compare,
    } = args;
    let ScanOpts {
        roots: _,
        outputs: _,
        resources: _,
        follow_links,
        cross_file_systems,
        quiet: _,
        reuse: _,
        images,
        table: _,
    } = opts;
    let cli::ImageArgs { platform, insecure_registry } = images;
    format!(
        "only={only:?} by={by:?} wide={wide} keep={keep:?} digests={digests} compare={compare:?} \
         follow_links={follow_links} cross_file_systems={cross_file_systems} platform={platform:?} \
         insecure_registry={insecure_registry:?}"
    )
}

/// `scan --reuse SNAPSHOT` to JSON alone, of a tree unchanged since SNAPSHOT was written: the
/// snapshot's document is this scan's, when its seal holds and a walk that opens no file makes
/// its rescan key again (`scan::survey`), with the exit status it gives. `None`: the scan runs.
fn unchanged(
    args: &ScanArgs,
    roots: &[PathBuf],
    targets: &Targets,
    outputs: &[Planned],
) -> anyhow::Result<Option<(Vec<u8>, ExitStatus)>> {
    let [snapshot] = args.opts.reuse.as_slice() else { return Ok(None) };
    if !args.keep.is_empty() || outputs.iter().any(|o| o.format != OutputFormat::Json) {
        return Ok(None);
    }
    let Some(doc) = source::snapshot::read_regular_document(snapshot) else { return Ok(None) };
    let Some(key) = crate::reuse::stated_key(&doc).map(str::to_string) else { return Ok(None) };
    let config = ScanConfig {
        threads: args.opts.resources.threads,
        follow_links: args.opts.follow_links,
        cross_file_systems: args.opts.cross_file_systems,
        recording: Recording::Rescan(rescan_options(args)),
        ..ScanConfig::of(roots.to_vec())
    };
    // A root that cannot be walked is the scan's to report.
    if crate::scan::survey(&config, targets).ok().flatten() != Some(key) || !crate::reuse::seal_holds(&doc) {
        return Ok(None);
    }
    // A key is written only with no problem: what remains to tell is whether it has findings.
    #[derive(serde::Deserialize)]
    struct Gate {
        #[serde(default)]
        findings: Vec<serde::de::IgnoredAny>,
    }
    let status = match args.fail_on_findings {
        true => match serde_json::from_slice::<Gate>(&doc) {
            Ok(g) if g.findings.is_empty() => ExitStatus::Clean,
            Ok(_) => ExitStatus::Findings,
            Err(_) => return Ok(None),
        },
        false => ExitStatus::Clean,
    };
    report::progress::say_reuse(args.opts.quiet, snapshot, &crate::reuse::Taken::Unchanged);
    Ok(Some((doc, status)))
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
    let roots = roots_of(&args.opts)?;
    if let Some((doc, status)) = unchanged(&args, &roots, &targets, &outputs)? {
        return deliver_all(outputs, status, |_, _, w| w.write_all(&doc).map_err(anyhow::Error::from));
    }
    let recording = match args.opts.reuse.is_empty() {
        true => Recording::Off,
        false => Recording::Rescan(rescan_options(&args)),
    };
    let facts = scan_roots(roots, &args.opts, &targets, None, None, args.digests, recording)?;
    let model = Model::build(facts, &targets, Context::default());
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
