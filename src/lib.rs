//! gfxscan: what AMD GPU code an installed ROCm stack really ships, per GPU target.
//!
//! The modules are the pipeline, and no stage imports a later one: `source` (where bytes come
//! from) → `parse` (pure parsers) → `inspect` and `families` (one item → its record) → `archive`
//! (packages and images as trees) → `scan` (the parallel driver, which hands its tallies to
//! `aggregate`: records → snapshot) → `library` (the model, built once per run) → `check`,
//! `diff`, `merge`, `explain` (verdicts, read from the model) → `report` (every output) → `cmd`
//! (each command's orchestration). `vocab` and `model` are the shared words and the JSON
//! contract. This file only wires a command line to its command; only `source` touches files
//! on the way in, only `report` and `main` print.

pub mod aggregate;
pub mod archive;
pub mod check;
pub mod cli;
pub mod cmd;
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
pub mod reuse;
pub mod scan;
pub mod schema;
pub mod source;
#[cfg(any(test, feature = "fixtures"))]
pub mod testing;
pub mod vocab;

use cli::{Cli, Command};
use exit::ExitStatus;
use report::output::Output;

/// Runs one command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Scan(args) => cmd::scan::run(args, cli.color),
        Command::Check(args) => cmd::check::run(args, cli.color),
        Command::Explain(args) => cmd::explain::run(args, cli.color),
        Command::Diff(args) => cmd::diff::run(args, cli.color),
        Command::Merge(args) => cmd::merge::run(args, cli.color),
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
            let targets = cmd::load_targets(&args.table)?;
            let style = cmd::style_for(cli.color, None);
            if args.policy_age {
                let today = cmd::today();
                return Output::Stdout.deliver(ExitStatus::Clean, |w| {
                    report::write_policy_age(targets.policy(), today, style, w)
                });
            }
            Output::Stdout
                .deliver(ExitStatus::Clean, |w| report::write_targets(&targets, args.json, style, w))
        }
    }
}

/// Reads a saved snapshot (see [`source::snapshot::read_snapshot`]).
pub use source::snapshot::read_snapshot;
