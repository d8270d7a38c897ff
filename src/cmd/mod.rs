//! The commands: each turns its parsed command line into the pipeline's calls — read the
//! roots or the snapshots, build the library model once, hand it to the views, deliver every
//! output. The helpers here are what several commands share: the target table, the memory
//! aim, a scan with its progress bar, target lists as people type them, the outputs.

pub mod check;
pub mod diff;
pub mod explain;
pub mod merge;
pub mod scan;

use std::path::{Path, PathBuf};

use crate::cli::{self, OutputFormat, ScanOpts, TableArgs};
use crate::report::output::{Output, Planned};
use crate::vocab::targets::Targets;
use crate::{decode, model, report, source, vocab};

/// Loads the target table a command asked for.
pub fn load_targets(args: &TableArgs) -> anyhow::Result<Targets> {
    match &args.targets {
        None => Ok(Targets::builtin()),
        Some(p) => {
            Targets::load(p).map_err(|errs| anyhow::anyhow!("invalid targets file:\n  {}", errs.join("\n  ")))
        }
    }
}

/// The memory a scan aims under: `--max-memory`, else a share of the room the process has (its
/// cgroup limits or `MemAvailable`, read once); with `tell`, said on stderr with where it came
/// from.
fn memory_aim(resources: &cli::Resources, tell: bool) -> u64 {
    let (aim, room) = match resources.max_memory {
        Some(given) => (given, None),
        None => {
            let room = source::memory::room();
            (decode::budget::default_target(room.map(|r| r.bytes)), room)
        }
    };
    if tell {
        report::progress::say_memory(aim, resources.max_memory.is_some(), room);
    }
    aim
}

/// Scans `roots` as `opts` say, with a progress bar; for `check`, `check_for` names the GPUs'
/// processors and the scan reads only what their verdicts need. `recording`: what goes in the
/// snapshot for a later `--reuse` (`scan --reuse`). The facts only: the library
/// model is built from them by the command ([`crate::library::Model::build`]).
fn scan_roots(
    roots: Vec<PathBuf>,
    opts: &ScanOpts,
    targets: &Targets,
    check_for: Option<Vec<String>>,
    parts: Option<Vec<PathBuf>>,
    digests: bool,
    recording: crate::scan::Recording,
) -> anyhow::Result<model::Snapshot> {
    let roots_named: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    let reuse = earlier_facts(&opts.reuse, &roots_named, targets, digests, opts.quiet);
    let config = crate::scan::ScanConfig {
        roots,
        threads: opts.resources.threads,
        follow_links: opts.follow_links,
        cross_file_systems: opts.cross_file_systems,
        max_memory: opts.resources.max_memory,
        check_for,
        parts,
        digests,
        reuse,
        recording,
        fetching: opts.images.fetching(),
    };
    let bar = report::progress::Bar::new(opts.quiet);
    let snap = crate::scan::scan(&config, targets, &bar);
    bar.finish();
    snap
}

/// `--reuse`: the facts the snapshots at `paths` hold for `roots`, each snapshot's use said on
/// standard error (unless `quiet`). A snapshot that does not exist yet, or cannot be read, gives
/// nothing: the scan reads every file, as without it.
fn earlier_facts(
    paths: &[PathBuf],
    roots: &[String],
    targets: &Targets,
    digests: bool,
    quiet: bool,
) -> Option<std::sync::Arc<crate::reuse::Earlier>> {
    if paths.is_empty() {
        return None;
    }
    let mut snaps = Vec::new();
    let mut read = Vec::new();
    for p in paths {
        // Held against itself first, as `diff` and `merge` hold a saved snapshot: its facts are
        // about to be believed for every file that looks unchanged.
        let checked = source::snapshot::read_snapshot(p)
            .and_then(|s| crate::library::readback::read_back(s, targets).map_err(anyhow::Error::msg));
        match checked {
            Ok(s) => {
                snaps.push(s);
                read.push(p);
            }
            Err(_) if !p.exists() => report::progress::say_reuse(quiet, p, &crate::reuse::Taken::Absent),
            Err(e) => {
                report::progress::say_reuse(quiet, p, &crate::reuse::Taken::Unreadable(format!("{e:#}")))
            }
        }
    }
    let (earlier, taken) = crate::reuse::Earlier::of(snaps, roots, targets, digests);
    for (p, t) in read.iter().zip(&taken) {
        report::progress::say_reuse(quiet, p, t);
    }
    Some(std::sync::Arc::new(earlier))
}

/// The processors whose entries a scanned side of `diff --only` reads whole (see
/// [`crate::scan::ScanConfig::check_for`]); `None`, every fact, for a diff of every target.
pub fn diff_reads_for(only: &[String]) -> Option<Vec<String>> {
    (!only.is_empty()).then(|| distinct(only))
}

/// A target list as given, without repeats (the first place kept).
fn distinct(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for n in names {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// The targets a list option names, as processors: names, products, versions and target IDs
/// as people type them (`vocab::target_id::resolve_processor`; `gfx90a:xnack+` is gfx90a,
/// whose tables count every mode), `unknown-0x…` kept as written.
fn known_targets(flag: &str, names: &[String], targets: &Targets) -> anyhow::Result<Vec<String>> {
    names
        .iter()
        .map(|name| {
            if name.starts_with("unknown-") {
                return Ok(name.clone());
            }
            let processor = name.split(':').next().unwrap_or(name);
            vocab::target_id::resolve_processor(processor, targets)
                .map(|t| t.name.clone())
                .map_err(|e| anyhow::anyhow!("{flag}: {e}"))
        })
        .collect()
}

/// How the report meets its reader: colour and width for standard output, plain for a file.
pub fn style_for(color: cli::ColorChoice, output: Option<&Path>) -> report::Style {
    let to_stdout = output.is_none_or(|p| p.as_os_str() == "-");
    report::Style::detect(color, to_stdout, |k| std::env::var(k).ok())
}

/// Opens every output a command line asks for (see [`cli::resolve_outputs`]), before any
/// work: a format the command does not write, two outputs to one place, or a file that cannot
/// be made, fails now.
fn open_outputs(
    color: cli::ColorChoice,
    json: bool,
    format: Option<OutputFormat>,
    specs: &[cli::OutputSpec],
    takes: &[OutputFormat],
) -> anyhow::Result<Vec<Planned>> {
    let plan = cli::resolve_outputs(json, format, specs, takes).map_err(anyhow::Error::msg)?;
    report::output::one_place_each(&plan.iter().map(|(_, p)| p.as_deref()).collect::<Vec<_>>())?;
    plan.into_iter()
        .map(|(format, path)| {
            let style = style_for(color, path.as_deref());
            Ok(Planned { format, output: Output::open(path.as_deref())?, style })
        })
        .collect()
}

/// The installs `check` and `explain` take when no ROOT is named: those under `/` it checks,
/// and the others found, by name.
fn default_installs() -> (Vec<PathBuf>, Vec<String>) {
    let (checked, not) = source::walk::check_roots_under(Path::new("/"));
    (checked, not.iter().map(|p| p.display().to_string()).collect())
}

/// Today as days since 1970-01-01 (UTC), for how old a recorded list is: `SOURCE_DATE_EPOCH`
/// when set (reproducible output), else the clock; `None` when neither can be read.
pub fn today() -> Option<i64> {
    let secs = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => v.trim().parse::<i64>().ok()?,
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs() as i64,
    };
    Some(secs.div_euclid(86_400))
}
