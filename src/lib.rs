//! gfxscan: what AMD GPU code an installed ROCm stack really ships, per GPU target.
//!
//! The pipeline reads top to bottom:
//! `walk` (which files) → `classify` (what each is, by magic) → `parse` (raw facts from bytes,
//! pure) → `resolve` (facts to targets through `targets.toml`) → `aggregate` (per-target
//! totals) → `report` (table, JSON, Markdown, CSV). `scan` drives the first five in parallel;
//! only `walk` and `scan` touch files, only `report` and `main` print.

pub mod aggregate;
pub mod classify;
pub mod cli;
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

use cli::{Cli, Command, Format, ScanArgs, TableArgs};
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

fn run_scan(args: ScanArgs) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.table)?;
    for (flag, names) in [("--only", &args.only), ("--compare", &args.compare.clone().unwrap_or_default())] {
        for name in names {
            if targets.by_name(name).is_none() && !name.starts_with("unknown-") {
                bail!("{flag}: unknown target {name:?} (see `gfxscan targets`)");
            }
        }
    }
    let roots = if args.roots.is_empty() {
        let found = walk::default_roots();
        if found.is_empty() {
            bail!(
                "none of the default roots exists ({}); name a ROOT, e.g. `gfxscan scan /path/to/rocm`",
                walk::DEFAULT_ROOTS.join(", ")
            );
        }
        found
    } else {
        args.roots
    };
    let config = scan::ScanConfig { roots, threads: args.threads, follow_links: args.follow_links };
    let bar = report::progress::Bar::new(args.quiet);
    let snap = scan::scan(&config, &targets, &bar);
    bar.finish();
    let snap = snap?;
    let format = if args.json { Format::Json } else { args.format };
    let mut out = output(&args.output)?;
    match &args.compare {
        Some(chosen) => report::write_compare(&snap, &targets, chosen, format, &mut out)?,
        None => report::write_scan(&snap, &targets, &args.only, format, &mut out)?,
    }
    out.flush()?;
    Ok(if snap.problems.is_empty() { ExitStatus::Clean } else { ExitStatus::Problems })
}

/// Runs one command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Scan(args) => run_scan(args),
        Command::Targets(args) => {
            let targets = load_targets(&args.table)?;
            let mut out = output(&None)?;
            report::write_targets(&targets, args.json, &mut out)?;
            out.flush()?;
            Ok(ExitStatus::Clean)
        }
    }
}
