//! Reports: snapshots and tables to bytes. With `main`, the only code that prints.
//!
//! Each writer is a function of the data and a `Write`; nothing here reads files or decides
//! anything about the scan. Progress bars and live warnings (`progress`) go to stderr, and only
//! when stderr is a terminal.

pub mod check;
pub mod cyclonedx;
pub mod diff;
pub mod explain;
pub mod html;
pub mod jsonl;
pub mod merge;
pub mod output;
pub mod progress;
pub mod prometheus;
pub mod prune;
pub mod safe;
pub mod scan;
pub mod served;
pub mod style;
pub mod table;
pub mod uris;
pub mod views;

pub use check::write_check;
pub use scan::{write_scan, ScanView};
pub use style::Style;

use std::io::Write;

use crate::vocab::policy::Platform;
use crate::vocab::targets::Targets;

/// The word the JSON uses for a value (`nothing-to-check`, `index-names-missing`), so tables,
/// CSV and HTML say what the JSON says.
fn json_word(value: impl serde::Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// Writes one pretty-printed JSON document and a newline. Serialized first, then written, so a
/// closed pipe stays an `io::Error` the binary recognises.
fn write_json(out: &mut dyn Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    // A scan's JSON with a rescan key carries the digest of its own text (`reuse::seal`).
    crate::reuse::seal(&mut text);
    out.write_all(&text)?;
    Ok(())
}

/// Writes a diff in the chosen format: the HTML page, or the text, Markdown and JSON of
/// [`diff::write_diff_text`].
pub fn write_diff(
    d: &crate::diff::SnapshotDiff,
    targets: &Targets,
    format: crate::cli::OutputFormat,
    verbose: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match format {
        crate::cli::OutputFormat::Html => html::write_diff_html(d, targets, out),
        _ => diff::write_diff_text(d, targets, format, verbose, style, out),
    }
}

/// Writes the target table, fitted to the reader's width (the least needed columns go first,
/// and a note names them), or JSON. A target's products are its first product and how many
/// more `targets.toml` lists (`--json` has them all).
pub fn write_targets(targets: &Targets, json: bool, style: Style, out: &mut dyn Write) -> anyhow::Result<()> {
    if json {
        return write_json(out, &targets.document());
    }
    let rows: Vec<_> = targets.iter().collect();
    let policy = targets.policy();
    let cells = |f: &dyn Fn(&crate::vocab::targets::Target) -> String| rows.iter().map(|t| f(t)).collect();
    let products = |t: &crate::vocab::targets::Target| match t.products.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} (+{} more)", rest.len()),
    };
    let cols = vec![
        table::Column::left("NAME", cells(&|t| t.name.clone()), None),
        table::Column::left("MACH", cells(&|t| format!("{:#05x}", t.mach)), None),
        table::Column::left("FAMILY", cells(&|t| t.family.clone()), Some(6)),
        table::Column::left("GENERIC", cells(&|t| t.generic.clone().unwrap_or_default()), Some(3)),
        table::Column::left("FEATURES", cells(&|t| t.features.join(",")), Some(4)),
        table::Column::right(
            "KFD VERSION",
            cells(&|t| t.gfx_target_version.map(|v| v.to_string()).unwrap_or_default()),
            Some(2),
        ),
        table::Column::left(
            "ISA-COMPATIBLE",
            cells(&|t| t.isa_compatible.clone().unwrap_or_default()),
            Some(1),
        ),
        table::Column::left("PRODUCTS", cells(&products), Some(5)),
        table::Column::left("ROCM LINUX", cells(&|t| policy.supported_in(Platform::Linux, &t.name)), Some(7)),
        table::Column::left(
            "ROCM WINDOWS",
            cells(&|t| policy.supported_in(Platform::Windows, &t.name)),
            Some(0),
        ),
    ];
    let (text, dropped) = table::fit(cols, false, style);
    writeln!(out, "{} targets from {}", targets.len(), targets.origin)?;
    writeln!(out, "{text}")?;
    let lists: Vec<&str> =
        ["ROCM LINUX", "ROCM WINDOWS"].into_iter().filter(|h| !dropped.iter().any(|d| d == h)).collect();
    if !lists.is_empty() {
        let note = format!(
            "{}: the releases whose support list names the target (deprecated included; Windows: HIP runtime or SDK), as targets.toml records them from AMD's documentation; `gfxscan explain TARGET` says how, and cites each.",
            lists.join(", ")
        );
        writeln!(out, "{}", style::wrap(&note, "", "  ", style.width))?;
    }
    not_shown(out, style, &dropped, "--json")
}

/// Says which columns a table left out to fit, and where every field is.
fn not_shown(out: &mut dyn Write, style: Style, dropped: &[String], every: &str) -> anyhow::Result<()> {
    if !dropped.is_empty() {
        let width = style.width.unwrap_or_default();
        let line =
            format!("Not shown, to fit {width} columns: {} ({every} shows every field).", dropped.join(", "));
        writeln!(out, "{}", style::wrap(&line, "", "  ", style.width))?;
    }
    Ok(())
}

/// AMD's support lists as the table records them, newest first per platform, each with its
/// kind, its date and its age in days before `today` (`targets --json` carries each list's
/// date and completeness in the table's own document).
pub fn write_policy_age(
    policy: &crate::vocab::policy::Policy,
    today: Option<i64>,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut lists: Vec<&crate::vocab::policy::Release> = Vec::new();
    for platform in [Platform::Linux, Platform::Windows] {
        lists.extend(policy.history(platform).into_iter().rev());
    }
    let cells = |f: &dyn Fn(&crate::vocab::policy::Release) -> String| lists.iter().map(|r| f(r)).collect();
    let age = |r: &crate::vocab::policy::Release| match (r.day(), today) {
        (Some(d), Some(t)) => crate::vocab::units::thousands((t - d).max(0) as u64),
        _ => "—".to_string(),
    };
    let cols = vec![
        table::Column::left("LIST", cells(&|r| r.label()), None),
        table::Column::left("KIND", cells(&|r| r.kind().to_string()), Some(2)),
        table::Column::left("DATE", cells(&|r| r.dated()), Some(3)),
        table::Column::right("AGE (DAYS)", cells(&age), Some(1)),
        table::Column::left("SOURCE", cells(&|r| r.source.clone()), Some(0)),
    ];
    let (text, dropped) = table::fit(cols, false, style);
    writeln!(out, "{text}")?;
    let newest = policy.newest_release().map_or_else(|| "none".to_string(), |v| v.clone());
    let note = format!(
        "The newest release any list is for: {newest}. A list older than an install's release (or, with no install, than {newest}) never blocks a target it leaves out: explain says \"unknown\" with the list's age. A page read in part names only the rows read."
    );
    writeln!(out, "{}", style::wrap(&note, "", "  ", style.width))?;
    not_shown(out, style, &dropped, "`gfxscan targets --json`")
}

/// The JSON Schema of a kind of document, as one pretty-printed JSON document.
pub fn write_schema(kind: crate::schema::Document, out: &mut dyn Write) -> anyhow::Result<()> {
    write_json(out, &kind.schema())
}

/// A completion script for `shell`, generated from the command line's own definition.
pub fn write_completions(shell: clap_complete::Shell, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    // Made whole first: clap_complete panics when its writer fails (a closed pipe, a full disk).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "gfxscan", &mut script);
    out.write_all(&script)?;
    Ok(())
}

/// A manual page (roff), generated from the command line's own definition: gfxscan(1), or
/// a subcommand's own page (gfxscan-scan(1), …), which gfxscan(1) refers to.
pub fn write_man(subcommand: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    let cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    let man = match subcommand {
        None => clap_mangen::Man::new(cmd),
        Some(name) => {
            let names: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_string()).collect();
            let Some(sub) = cmd.find_subcommand(name).cloned() else {
                anyhow::bail!("no subcommand {name:?} (one of: {})", names.join(", "));
            };
            let page = format!("gfxscan-{name}");
            clap_mangen::Man::new(sub.display_name(page.clone()).bin_name(format!("gfxscan {name}")))
                .title(page)
        }
    };
    man.render(out)?;
    // Sections clap's page has not: the exit statuses (from `exit::ExitStatus`, one place) and
    // examples on the real sample.
    writeln!(out, ".SH \"EXIT STATUS\"")?;
    for (status, meaning) in crate::exit::ExitStatus::MEANINGS {
        writeln!(out, ".TP\n\\fB{}\\fR\n{}", status.code(), roff_text(meaning))?;
    }
    writeln!(out, ".SH EXAMPLES")?;
    for (command, what) in man_examples(subcommand) {
        writeln!(out, ".TP\n\\fB{}\\fR\n{}", roff_text(command), roff_text(what))?;
    }
    Ok(())
}

/// Text for roff: backslashes and leading dots or quotes made harmless.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\\\").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// Examples for a page: the subcommand's own, or one of each for gfxscan(1).
fn man_examples(subcommand: Option<&str>) -> Vec<(&'static str, &'static str)> {
    const ALL: &[(&str, &str, &str)] = &[
        (
            "scan",
            "gfxscan scan sample --only gfx900,gfx1030,gfx1100",
            "what the sample install holds for three targets, layer by layer",
        ),
        ("scan", "gfxscan scan /opt/rocm --by library --only gfx1031", "which library lacks gfx1031"),
        ("scan", "gfxscan scan /opt/rocm --keep gfx1100", "what an install for a gfx1100 could drop"),
        (
            "check",
            "gfxscan check /opt/rocm --gpu \"RX 6700 XT\"",
            "will a Radeon RX 6700 XT find its code, library by library",
        ),
        (
            "check",
            "gfxscan check --json -o verdicts.json",
            "the GPUs of this machine, every install, as JSON",
        ),
        (
            "explain",
            "gfxscan explain gfx900 /opt/rocm",
            "gfx900's gates: the support lists, default builds, what the install ships and serves, the override",
        ),
        (
            "diff",
            "gfxscan diff --fail-on-loss /opt/rocm-6.4.0 /opt/rocm-7.2.0",
            "an upgrade that loses no GPU exits 0",
        ),
        (
            "merge",
            "gfxscan merge snapshots/ --gpu gfx1100,gfx1031",
            "a fleet of snapshots, a verdict per node per GPU",
        ),
        ("targets", "gfxscan targets", "every GPU target gfxscan knows, with its products"),
        (
            "schema",
            "gfxscan schema snapshot > snapshot.schema.json",
            "the JSON Schema of the snapshot, for any JSON Schema validator (docs/schema/ holds every kind's)",
        ),
        ("completions", "gfxscan completions bash > /etc/bash_completion.d/gfxscan", "shell completions"),
    ];
    ALL.iter()
        .filter(|(sub, _, _)| subcommand.is_none_or(|s| s == *sub))
        .filter(|(sub, _, _)| subcommand.is_some() || !matches!(*sub, "completions"))
        .map(|(_, c, w)| (*c, *w))
        .collect()
}
