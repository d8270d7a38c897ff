//! gfxscan: what AMD GPU code an installed ROCm stack really ships, per GPU target.
//!
//! The modules are the pipeline, and no stage imports a later one: `source` (where bytes come
//! from) → `parse` (pure parsers) → `inspect` and `families` (one item → its record) → `archive`
//! (packages and images as trees) → `scan` (the parallel driver, which hands its tallies to
//! `aggregate`: records → snapshot) → `check`, `diff` (verdicts) → `report` (every output).
//! `vocab` and `model` are the shared words and the JSON contract. This file turns a command line into those
//! calls; only `source` touches files on the way in, only `report` and `main` print.

pub mod aggregate;
pub mod archive;
pub mod check;
pub mod cli;
pub mod decode;
pub mod diff;
pub mod exit;
pub mod explain;
pub mod families;
pub mod inspect;
pub mod library;
pub mod merge;
pub mod model;
pub mod parse;
pub mod records;
pub mod report;
pub mod scan;
pub mod schema;
pub mod source;
#[cfg(any(test, feature = "fixtures"))]
pub mod testing;
pub mod vocab;

use anyhow::bail;

use cli::{
    CheckArgs, Cli, Command, DiffArgs, ExplainArgs, MergeArgs, OutputFormat, ScanArgs, ScanOpts, TableArgs,
};
use exit::ExitStatus;
use report::output::{deliver_all, Output, Planned};
use source::snapshot;
use vocab::targets::Targets;

/// Loads the target table a command asked for.
fn load_targets(args: &TableArgs) -> anyhow::Result<Targets> {
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

/// Scans `roots` as `opts` say, with a progress bar; for `check`, `check_for` names the GPUs' processors and the
/// scan reads only what their verdicts need.
fn scan_roots(
    roots: Vec<std::path::PathBuf>,
    opts: &ScanOpts,
    targets: &Targets,
    check_for: Option<Vec<String>>,
    parts: Option<Vec<std::path::PathBuf>>,
    digests: bool,
) -> anyhow::Result<model::Snapshot> {
    let config = scan::ScanConfig {
        roots,
        threads: opts.resources.threads,
        follow_links: opts.follow_links,
        cross_file_systems: opts.cross_file_systems,
        max_memory: opts.resources.max_memory,
        check_for,
        parts,
        digests,
    };
    let bar = report::progress::Bar::new(opts.quiet);
    let snap = scan::scan(&config, targets, &bar);
    bar.finish();
    let mut snap = snap?;
    snap.findings = library::findings::findings_to(&snap, targets, config.depth(targets));
    Ok(snap)
}

/// Scans what `opts` names (or the default roots), with a progress bar; with `digests`, each
/// listed file's SHA-256 is taken.
fn scan_for(opts: &ScanOpts, targets: &Targets, digests: bool) -> anyhow::Result<model::Snapshot> {
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
    scan_roots(roots, opts, targets, None, None, digests)
}

/// The processors whose entries a scanned side of `diff --only` reads whole (see
/// [`scan::ScanConfig::check_for`]); `None`, every fact, for a diff of every target.
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
fn style_for(color: cli::ColorChoice, output: Option<&std::path::Path>) -> report::Style {
    let to_stdout = output.is_none_or(|p| p.as_os_str() == "-");
    report::Style::detect(color, to_stdout, |k| std::env::var(k).ok())
}

/// Opens every output a command line asks for (see [`cli::resolve_outputs`]), before any
/// work: a format the command does not write, or a file that cannot be made, fails now.
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

fn run_scan(mut args: ScanArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
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
    let snap = scan_for(&args.opts, &targets, args.digests)?;
    // Files not read come first: findings from a partial read are not trusted to gate on.
    let status = match (snap.problems.is_empty(), snap.findings.is_empty()) {
        (false, _) => ExitStatus::Problems,
        (true, false) if args.fail_on_findings => ExitStatus::Findings,
        _ => ExitStatus::Clean,
    };
    let view = match &args.compare {
        Some(chosen) => report::ScanView {
            view: cli::View::Layer,
            only: distinct(chosen),
            wide: args.wide,
            created,
            gates: Vec::new(),
        },
        None => report::ScanView {
            view: args.by,
            only: distinct(&args.only),
            wide: args.wide,
            created,
            gates: Vec::new(),
        },
    };
    let mut view = view;
    if outputs.iter().any(|o| o.format == OutputFormat::Html) {
        // A column for each processor the page's per-target table has a row for.
        let shown = report::views::shown_targets(&snap, &targets, &view.only);
        view.gates = gates_for(&snap, &targets, &shown.into_iter().map(|(t, _)| t).collect::<Vec<_>>());
    }
    if !args.keep.is_empty() {
        let report = check::prune::prune(&snap, &distinct(&args.keep), &targets);
        return deliver_all(outputs, status, |format, style, w| {
            report::prune::write_prune(&report, &snap.roots, format, args.verbose, style, w)
        });
    }
    let matrix = library::matrix::library_matrix(&snap, &targets);
    deliver_all(outputs, status, |format, style, w| {
        report::write_scan(&snap, &targets, &matrix, &view, format, style, w)
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

fn run_check(mut args: CheckArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    // A running process, read first: its environment is the one its GPUs and libraries see.
    let process = match args.pid {
        Some(pid) => Some(source::process::read_process(pid).map_err(anyhow::Error::msg)?),
        None => None,
    };
    if !args.env.is_empty() && args.exe.is_none() && process.is_none() {
        bail!("--env sets the environment of the program --exe or --pid names: give one");
    }
    // The program's environment: this process's (or the process's), with --env on top.
    let vars = program_env(process.as_ref().map(|p| p.env.clone()), &args.env)?;
    let env = check::devices::Env::from_vars(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    let found = if args.gpus.is_empty() {
        let root = args.sysfs_root.clone().unwrap_or_else(|| "/".into());
        let found = check::devices::from_kfd(&root, &env, &targets).map_err(anyhow::Error::msg)?;
        if found.devices.is_empty() && found.unknown.is_empty() {
            if let Some(v) = env.get("ROCR_VISIBLE_DEVICES") {
                bail!("ROCR_VISIBLE_DEVICES={v:?} leaves no GPU of the KFD topology under {} visible: the runtime would see none", root.display());
            }
            bail!("no GPU in the KFD topology under {}: name one with --gpu TARGET_ID", root.display());
        }
        found
    } else {
        check::devices::from_args(&args.gpus, &env, &targets).map_err(anyhow::Error::msg)?
    };
    let outputs = open_outputs(color, args.json, args.format, &args.opts.outputs, OutputFormat::CHECK)?;
    // With --exe: what the program loads, found as the loader finds it, is what is read; with
    // --pid, what the process has mapped.
    let program = match (&process, &args.exe) {
        (Some(p), _) => {
            let label = format!("process {} ({})", p.pid, p.exe);
            Some((check::program::from_process(p), p.root.clone(), p.root.clone(), label))
        }
        (None, Some(exe)) => {
            let (loads, real, label) = load_program(exe, args.root.as_deref(), &vars)?;
            // The root as given: paths in the report read as the user wrote them.
            Some((loads, args.root.clone().unwrap_or_else(|| "/".into()), real, label))
        }
        (None, None) => None,
    };
    let (roots, not_checked) = if let Some((_, root, _, _)) = &program {
        (vec![root.clone()], Vec::new())
    } else if args.opts.roots.is_empty() {
        let (checked, not) = source::walk::check_roots_under(std::path::Path::new("/"));
        if checked.is_empty() {
            bail!(
                "no /opt/rocm and no Ollama folder here{}; name a ROOT, e.g. `gfxscan check /path/to/rocm`",
                if not.is_empty() {
                    String::new()
                } else {
                    let names: Vec<String> = not.iter().map(|p| p.display().to_string()).collect();
                    format!(" (other installs, not checked: {})", names.join(", "))
                }
            );
        }
        (checked, not.iter().map(|p| p.display().to_string()).collect())
    } else {
        (args.opts.roots.clone(), Vec::new())
    };
    // A program's Tensile folders are its data folders, resolved inside its root; without a
    // program, the environment's are placed among the roots.
    let (roots, pending) = match &program {
        Some(_) => (roots, Vec::new()),
        None => with_libpaths(roots, &env)?,
    };
    // Verdicts need a compressed bundle's table, not its code objects: the runtime picks by
    // entry ID (clr hip_fatbin.cpp, comgr lookUpCodeObject); the entries the checked GPUs
    // would load are read all the same.
    let mut processors: Vec<String> = found.devices.iter().map(|d| d.effective.processor.clone()).collect();
    processors.sort();
    processors.dedup();
    args.opts.resources.max_memory = Some(memory_aim(&args.opts.resources, false));
    let parts = program.as_ref().map(|(loads, _, real, _)| loads.files(real));
    let mut snap = scan_roots(roots.clone(), &args.opts, &targets, Some(processors), parts, false)?;
    snap.one_program = program.is_some();
    let libpaths = pending.into_iter().map(|p| p.place_in(&roots)).collect();
    let mut result = check::check(&snap, &found, &targets, check::CheckOptions { not_checked, libpaths });
    if let Some((loads, shown, real, label)) = &program {
        result = result.with_program(loads.report(label, shown, real));
    }
    deliver_all(outputs, result.exit_status(), |format, style, w| {
        report::write_check(&result, &targets, format, style, w)
    })
}

/// `gfxscan explain`: the target as `--gpu` takes it, the roots as `check` takes them (none
/// found: vendor policy alone), one whole scan for scan's counts, and check's verdicts for a
/// GPU of the target, without and with the override `targets.toml` records. This process's
/// environment is not read: the matrix is about the target, not this shell.
fn run_explain(mut args: ExplainArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    let none = check::devices::Env::default();
    let gpus = check::devices::from_args(std::slice::from_ref(&args.target), &none, &targets)
        .map_err(anyhow::Error::msg)?;
    let processor = gpus.devices.first().map(|d| d.native.processor.clone()).unwrap_or_default();
    let Some(target) = targets.by_name(&processor).cloned() else {
        bail!("{}: not a target in the table", args.target);
    };
    let outputs = open_outputs(color, args.json, args.format, &args.opts.outputs, OutputFormat::EXPLAIN)?;
    let (roots, not_checked) = if args.opts.roots.is_empty() {
        let (checked, not) = source::walk::check_roots_under(std::path::Path::new("/"));
        (checked, not.iter().map(|p| p.display().to_string()).collect())
    } else {
        (args.opts.roots.clone(), Vec::new())
    };
    let (e, status) = if roots.is_empty() {
        let none = explain::Inputs { snap: None, check: None, with_override: None };
        (explain::explain(&target, &targets, none), ExitStatus::Clean)
    } else {
        args.opts.resources.max_memory = Some(memory_aim(&args.opts.resources, false));
        let snap = scan_roots(roots, &args.opts, &targets, None, None, false)?;
        let (e, report) = explain_scanned(&snap, &target, &args.target, &gpus, &targets, not_checked);
        (e, report.exit_status())
    };
    deliver_all(outputs, status, |format, style, w| {
        report::explain::write_explain(&e, format, args.verbose, style, w)
    })
}

/// The gates of each of `names` that is a processor of the table (generic targets and unknown
/// names have no GPU to explain; one `--gpu` refuses has none either), as `explain` gives them
/// for the scanned roots.
fn gates_for(snap: &model::Snapshot, targets: &Targets, names: &[String]) -> Vec<explain::Explanation> {
    let none = check::devices::Env::default();
    names
        .iter()
        .filter_map(|n| targets.by_name(n))
        .filter(|t| !t.is_generic())
        .filter_map(|t| {
            let gpus = check::devices::from_args(std::slice::from_ref(&t.name), &none, targets).ok()?;
            Some(explain_scanned(snap, t, &t.name, &gpus, targets, Vec::new()).0)
        })
        .collect()
}

/// `explain`'s matrix for a GPU of `target` (`gpus`, as `--gpu given` makes it) over a scan:
/// check's report for it and for it under the override, and the gates read from them; with
/// that report, whose exit status `explain` gives.
fn explain_scanned(
    snap: &model::Snapshot,
    target: &vocab::targets::Target,
    given: &str,
    gpus: &check::devices::Gpus,
    targets: &Targets,
    not_checked: Vec<String>,
) -> (explain::Explanation, check::CheckReport) {
    let report = check::check(snap, gpus, targets, check::CheckOptions { not_checked, libpaths: Vec::new() });
    let over = override_gpus(given, target, targets)
        .map(|g| check::check(snap, &g, targets, check::CheckOptions::default()));
    let inputs = explain::Inputs { snap: Some(snap), check: Some(&report), with_override: over.as_ref() };
    (explain::explain(target, targets, inputs), report)
}

/// The GPU of `given` with HSA_OVERRIDE_GFX_VERSION set to its ISA-compatible target's
/// version (`targets.toml` isa_compatible), as `check` would see it; `None` without one, or
/// when the runtime would refuse that value (the override is then unknown).
fn override_gpus(
    given: &str,
    target: &vocab::targets::Target,
    targets: &Targets,
) -> Option<check::devices::Gpus> {
    let alt = target.isa_compatible.as_deref().and_then(|a| targets.by_name(a))?;
    let value = check::override_value(alt)?;
    let env = check::devices::Env { vars: vec![("HSA_OVERRIDE_GFX_VERSION".to_string(), value)] };
    check::devices::from_args(&[given.to_string()], &env, targets).ok()
}

/// The program's environment — `base` (a process's), else this process's — with `--env
/// NAME=VALUE` settings on top, sorted by name.
fn program_env(
    base: Option<Vec<(String, String)>>,
    settings: &[String],
) -> anyhow::Result<Vec<(String, String)>> {
    let mut vars: std::collections::BTreeMap<String, String> = match base {
        Some(b) => b.into_iter().collect(),
        None => std::env::vars().collect(),
    };
    for s in settings {
        let Some((k, v)) = s.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            bail!("--env {s:?}: give NAME=VALUE");
        };
        vars.insert(k.to_string(), v.to_string());
    }
    Ok(vars.into_iter().collect())
}

/// What `exe` loads inside `root` (`/` by default) under `vars`: the loads, the root, and the
/// program as given.
fn load_program(
    exe: &str,
    root: Option<&std::path::Path>,
    vars: &[(String, String)],
) -> anyhow::Result<(check::program::ProgramLoads, std::path::PathBuf, String)> {
    let root = root.unwrap_or(std::path::Path::new("/"));
    let root =
        anyhow::Context::with_context(std::fs::canonicalize(root), || format!("--root {}", root.display()))?;
    let var = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let env = source::loader::LoaderEnv { root, ld_library_path: var("LD_LIBRARY_PATH"), path: var("PATH") };
    let loads = check::program::load(exe, &env, &var).map_err(anyhow::Error::msg)?;
    Ok((loads, env.root, exe.to_string()))
}

/// A Tensile folder named by the environment, before the scan places it among the roots.
struct PendingLibPath {
    variable: &'static str,
    component: model::Component,
    value: String,
    real: Option<std::path::PathBuf>,
}

impl PendingLibPath {
    /// Its root index and folder in the snapshot scanned from `roots`.
    fn place_in(self, roots: &[std::path::PathBuf]) -> check::LibPath {
        let place = self.real.as_ref().and_then(|real| {
            roots.iter().enumerate().find_map(|(i, r)| {
                let rel = real.strip_prefix(std::fs::canonicalize(r).ok()?).ok()?;
                let inside = rel.join("x");
                Some((i, families::tensile::tensile_dir(&inside.to_string_lossy())))
            })
        });
        check::LibPath {
            variable: self.variable.to_string(),
            component: self.component,
            place,
            value: self.value,
        }
    }
}

/// Adds the Tensile folders `ROCBLAS_TENSILE_LIBPATH` and `HIPBLASLT_TENSILE_LIBPATH` name to
/// the roots of a check, unless a root already holds them.
fn with_libpaths(
    mut roots: Vec<std::path::PathBuf>,
    env: &check::devices::Env,
) -> anyhow::Result<(Vec<std::path::PathBuf>, Vec<PendingLibPath>)> {
    let mut pending = Vec::new();
    for (variable, component) in [
        ("ROCBLAS_TENSILE_LIBPATH", model::Component::Rocblas),
        ("HIPBLASLT_TENSILE_LIBPATH", model::Component::Hipblaslt),
    ] {
        let Some(value) = env.get(variable).filter(|v| !v.is_empty()) else { continue };
        let real = std::fs::canonicalize(value).ok().filter(|p| p.is_dir());
        if let Some(real) = &real {
            let inside = roots.iter().any(|r| std::fs::canonicalize(r).is_ok_and(|r| real.starts_with(r)));
            if !inside {
                roots.push(real.clone());
            }
        }
        pending.push(PendingLibPath { variable, component, value: value.to_string(), real });
    }
    Ok((roots, pending))
}

fn run_diff(mut args: DiffArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.table)?;
    args.only = known_targets("--only", &args.only, &targets)?;
    let outputs = open_outputs(color, args.json, args.format, &args.outputs, OutputFormat::DIFF)?;
    // Both sides are checked before either is scanned: a bad snapshot fails at once.
    let read = |p: &std::path::Path| -> anyhow::Result<Option<model::Snapshot>> {
        match snapshot::side_kind(p) {
            snapshot::SideKind::Snapshot => snapshot::read_snapshot(p).map(Some),
            snapshot::SideKind::Scan => Ok(None),
            snapshot::SideKind::Neither(why) => bail!("{}: {why}", p.display()),
        }
    };
    let old_snap = read(&args.old)?;
    let new_snap = read(&args.new)?;
    if old_snap.is_none() || new_snap.is_none() {
        // A side is scanned: its memory aim, said once with --verbose.
        args.resources.max_memory = Some(memory_aim(&args.resources, args.verbose));
    }
    let opts = |p: &std::path::Path| ScanOpts {
        roots: vec![p.to_path_buf()],
        outputs: Vec::new(),
        resources: args.resources,
        follow_links: false,
        cross_file_systems: false,
        quiet: args.quiet,
        table: TableArgs { targets: args.table.targets.clone() },
    };
    let side = |p: &std::path::Path,
                read: Option<model::Snapshot>|
     -> anyhow::Result<(model::Snapshot, diff::SideSource)> {
        match read {
            // A saved snapshot is checked against itself, and its derived tables made again.
            Some(s) => {
                let s = library::readback::read_back(s, &targets)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
                Ok((s, diff::SideSource::Snapshot))
            }
            // Asked about some targets only, a side is read as `check` reads it for them: their
            // entries whole, the others' from bundle tables (losses are verdicts).
            None => Ok((
                scan_roots(
                    vec![p.to_path_buf()],
                    &opts(p),
                    &targets,
                    diff_reads_for(&args.only),
                    None,
                    false,
                )?,
                diff::SideSource::Scan,
            )),
        }
    };
    let (old, so) = side(&args.old, old_snap)?;
    let (new, sn) = side(&args.new, new_snap)?;
    let mut d = diff::diff(&old, &new, (so, sn), &targets);
    d.restrict(&distinct(&args.only), &targets);
    deliver_all(outputs, d.exit_status(args.fail_on_loss), |format, style, w| {
        report::write_diff(&d, &targets, format, args.verbose, style, w)
    })
}

fn run_merge(mut args: MergeArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.table)?;
    let outputs = open_outputs(color, args.json, args.format, &args.outputs, OutputFormat::MERGE)?;
    args.only = known_targets("--only", &args.only, &targets)?;
    if !aggregate::layers().iter().any(|l| l.header == args.layer) {
        let names: Vec<&str> = aggregate::layers().iter().map(|l| l.header).collect();
        bail!("--layer: unknown layer {:?} (one of: {})", args.layer, names.join(", "));
    }
    let gpus = if args.gpus.is_empty() {
        None
    } else {
        // The sources' own environments are unknown here: no override is applied.
        let env = check::devices::Env::default();
        Some(check::devices::from_args(&args.gpus, &env, &targets).map_err(anyhow::Error::msg)?)
    };
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
            None => snapshot::read_snapshot(p).and_then(|s| {
                library::readback::read_back(s, &targets).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
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

/// Runs one command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Scan(args) => run_scan(args, cli.color),
        Command::Check(args) => run_check(args, cli.color),
        Command::Explain(args) => run_explain(args, cli.color),
        Command::Diff(args) => run_diff(args, cli.color),
        Command::Merge(args) => run_merge(args, cli.color),
        Command::Completions(args) => {
            Output::Stdout.deliver(ExitStatus::Clean, |w| report::write_completions(args.shell, w))
        }
        Command::Man(args) => {
            // Made first: an unknown subcommand is an error of the arguments, not of the output.
            let mut page = Vec::new();
            report::write_man(args.subcommand.as_deref(), &mut page)?;
            Output::Stdout.deliver(ExitStatus::Clean, |w| Ok(w.write_all(&page)?))
        }
        Command::Schema(args) => {
            Output::Stdout.deliver(ExitStatus::Clean, |w| report::write_schema(args.kind, w))
        }
        Command::Targets(args) => {
            let targets = load_targets(&args.table)?;
            let style = style_for(cli.color, None);
            Output::Stdout
                .deliver(ExitStatus::Clean, |w| report::write_targets(&targets, args.json, style, w))
        }
    }
}

/// Reads a saved snapshot (see [`source::snapshot::read_snapshot`]).
pub use source::snapshot::read_snapshot;
