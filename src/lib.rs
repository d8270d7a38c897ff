//! gfxscan: what AMD GPU code an installed ROCm stack really ships, per GPU target.
//!
//! The pipeline reads top to bottom:
//! `walk` (which files) → `classify` (what each is, by magic) → `parse` (raw facts from bytes,
//! pure) → `resolve` (facts to targets through `targets.toml`) → `aggregate` (per-target
//! totals) → `report` (table, JSON, Markdown, CSV). `scan` drives the first five in parallel;
//! only `walk` and `scan` touch files, only `report` and `main` print.

pub mod aggregate;
pub mod archive;
pub mod check;
pub mod classify;
pub mod cli;
pub mod devices;
pub mod diff;
pub mod exit;
pub mod family;
pub mod model;
pub mod parse;
pub mod report;
pub mod resolve;
pub mod scan;
pub mod targets;
pub mod testing;
pub mod walk;

use std::fs::File;
use std::io::{self, BufWriter, Write};

use anyhow::{bail, Context};

use cli::{CheckArgs, Cli, Command, DiffArgs, Format, ScanArgs, ScanOpts, TableArgs};
use exit::ExitStatus;
use targets::Targets;

/// Loads the target table a command asked for.
fn load_targets(args: &TableArgs) -> anyhow::Result<Targets> {
    match &args.targets {
        None => Ok(Targets::builtin()),
        Some(p) => {
            Targets::load(p).map_err(|errs| anyhow::anyhow!("invalid targets file:\n  {}", errs.join("\n  ")))
        }
    }
}

/// Opens the output: a file, or stdout for none or `-`.
fn output(path: &Option<std::path::PathBuf>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) if p.as_os_str() != "-" => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot write {}", p.display()))?,
        )),
        _ => Box::new(BufWriter::new(io::stdout().lock())),
    })
}

/// Scans what `opts` names (or the default roots), with a progress bar.
fn scan_for(opts: &ScanOpts, targets: &Targets) -> anyhow::Result<model::Snapshot> {
    let roots = if opts.roots.is_empty() {
        let found = walk::default_roots();
        if found.is_empty() {
            bail!(
                "none of the default roots exists ({}); name a ROOT, e.g. `gfxscan scan /path/to/rocm`",
                walk::DEFAULT_ROOTS.join(", ")
            );
        }
        found
    } else {
        opts.roots.clone()
    };
    let config = scan::ScanConfig { roots, threads: opts.threads, follow_links: opts.follow_links };
    let bar = report::progress::Bar::new(opts.quiet);
    let snap = scan::scan(&config, targets, &bar);
    bar.finish();
    snap
}

fn known_targets(flag: &str, names: &[String], targets: &Targets) -> anyhow::Result<()> {
    for name in names {
        if targets.by_name(name).is_none() && !name.starts_with("unknown-") {
            bail!("{flag}: unknown target {name:?} (see `gfxscan targets`)");
        }
    }
    Ok(())
}

fn run_scan(args: ScanArgs) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    known_targets("--only", &args.only, &targets)?;
    known_targets("--compare", args.compare.as_deref().unwrap_or_default(), &targets)?;
    let snap = scan_for(&args.opts, &targets)?;
    let format = if args.json { Format::Json } else { args.format };
    let mut out = output(&args.opts.output)?;
    match &args.compare {
        Some(chosen) => report::write_compare(&snap, &targets, chosen, format, &mut out)?,
        None => report::write_scan(&snap, &targets, &args.only, format, &mut out)?,
    }
    out.flush()?;
    Ok(if snap.problems.is_empty() { ExitStatus::Clean } else { ExitStatus::Problems })
}

fn run_check(args: CheckArgs) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    let env = devices::Env::from_process();
    let devices = if args.gpus.is_empty() {
        let root = args.sysfs_root.clone().unwrap_or_else(|| "/".into());
        let found = devices::from_kfd(&root, &env, &targets).map_err(anyhow::Error::msg)?;
        if found.is_empty() {
            bail!("no GPU in the KFD topology under {}: name one with --gpu TARGET_ID", root.display());
        }
        found
    } else {
        devices::from_args(&args.gpus, &env, &targets).map_err(anyhow::Error::msg)?
    };
    let snap = scan_for(&args.opts, &targets)?;
    let result = check::check(&snap, &devices, &targets);
    let format = if args.json { Format::Json } else { args.format.into() };
    let mut out = output(&args.opts.output)?;
    report::write_check(&result, format, &mut out)?;
    out.flush()?;
    Ok(if result.missing() { ExitStatus::Missing } else { ExitStatus::Clean })
}

/// Reads a JSON snapshot written by `gfxscan scan --json`, refusing what it cannot read right.
pub fn read_snapshot(path: &std::path::Path) -> anyhow::Result<model::Snapshot> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_slice(&text).with_context(|| format!("{}: not a JSON snapshot", path.display()))?;
    let name = value.pointer("/tool/name").and_then(|v| v.as_str());
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    match (name, version) {
        (Some("gfxscan"), Some(v)) if v == u64::from(model::SCHEMA_VERSION) => {}
        (Some("gfxscan"), Some(v)) => bail!(
            "{}: snapshot schema_version {v}; this gfxscan reads schema_version {} — rescan with this version",
            path.display(),
            model::SCHEMA_VERSION
        ),
        _ => bail!("{}: JSON, but not a gfxscan snapshot (no tool.name \"gfxscan\" and schema_version)", path.display()),
    }
    serde_json::from_value(value)
        .with_context(|| format!("{}: snapshot does not match schema_version 1", path.display()))
}

/// True when `path` is a file whose content starts like JSON.
fn is_json_file(path: &std::path::Path) -> bool {
    use std::io::Read;
    let Ok(mut f) = File::open(path) else { return false };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 64];
    let n = f.read(&mut head).unwrap_or(0);
    head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

fn run_diff(args: DiffArgs) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.table)?;
    let side = |p: &std::path::Path| -> anyhow::Result<(model::Snapshot, &'static str)> {
        if is_json_file(p) {
            return Ok((read_snapshot(p)?, "snapshot"));
        }
        let opts = ScanOpts {
            roots: vec![p.to_path_buf()],
            output: None,
            threads: args.threads,
            follow_links: false,
            quiet: args.quiet,
            table: TableArgs { targets: args.table.targets.clone() },
        };
        Ok((scan_for(&opts, &targets)?, "scan"))
    };
    let (old, so) = side(&args.old)?;
    let (new, sn) = side(&args.new)?;
    let d = diff::diff(&old, &new, (so, sn), &targets);
    let format = if args.json { Format::Json } else { args.format.into() };
    let mut out = output(&args.output)?;
    report::write_diff(&d, format, &mut out)?;
    out.flush()?;
    Ok(if args.fail_on_loss && !d.losses.is_empty() { ExitStatus::Missing } else { ExitStatus::Clean })
}

/// Runs one command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Scan(args) => run_scan(args),
        Command::Check(args) => run_check(args),
        Command::Diff(args) => run_diff(args),
        Command::Targets(args) => {
            let targets = load_targets(&args.table)?;
            let mut out = output(&None)?;
            report::write_targets(&targets, args.json, &mut out)?;
            out.flush()?;
            Ok(ExitStatus::Clean)
        }
    }
}
