//! The prune report for people: per library, what an install for the kept targets could drop
//! and what stays, largest first, with a total; or the same as JSON, CSV, Markdown.

use std::io::Write;

use crate::check::prune::{Bytes, PruneReport, PruneRow};
use crate::cli::OutputFormat;
use crate::vocab::units::human_bytes;

use super::style::{wrap, Style};
use super::table::{fit, Column};
use super::write_json;

/// Bytes on disk, with the inflated size beside it when it differs (compressed bundles).
fn both(b: Bytes) -> String {
    match (b.stored, b.inflated) {
        (0, 0) => "—".to_string(),
        (s, i) if s == i => human_bytes(s),
        (s, i) => format!("{} ({} inflated)", human_bytes(s), human_bytes(i)),
    }
}

fn bytes(n: u64) -> String {
    if n == 0 {
        "—".to_string()
    } else {
        human_bytes(n)
    }
}

/// `--verbose`: per library, the whole files that could go, in path order, each whole and
/// under its root as given (a list to act on is never cut to fit).
fn write_files_to_drop(
    rows: &[&PruneRow],
    roots: &[String],
    md: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let files: usize = rows.iter().map(|r| r.files_to_drop.len()).sum();
    writeln!(out)?;
    writeln!(out, "Whole files that could go ({files}):")?;
    let (lib, file) = if md { ("- ", "  - ") } else { ("  ", "    ") };
    for r in rows.iter().filter(|r| !r.files_to_drop.is_empty()) {
        let name = if roots.len() == 1 { r.library.path.clone() } else { r.library.display(roots) };
        writeln!(out, "{}", wrap(&format!("{name} ({}):", r.files_to_drop.len()), lib, lib, style.width))?;
        for f in &r.files_to_drop {
            writeln!(out, "{file}{}", f.display(roots))?;
        }
    }
    Ok(())
}

/// Writes the prune report.
pub fn write_prune(
    report: &PruneReport,
    roots: &[String],
    format: OutputFormat,
    verbose: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let rows: Vec<&PruneRow> = report.libraries.iter().collect();
    match format {
        OutputFormat::Json => return write_json(out, report),
        OutputFormat::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            super::safe::write_record(
                &mut w,
                [
                    "library",
                    "drop_stored",
                    "drop_inflated",
                    "drop_whole_files_stored",
                    "keep_stored",
                    "keep_inflated",
                    "generic_stored",
                    "stays",
                ],
            )?;
            for r in rows.iter().copied().chain(std::iter::once(&report.total)) {
                let name =
                    if r.library.path.is_empty() { "total".to_string() } else { r.library.display(roots) };
                super::safe::write_record(
                    &mut w,
                    [
                        name,
                        r.drop.stored.to_string(),
                        r.drop.inflated.to_string(),
                        r.drop_whole.stored.to_string(),
                        r.keep.stored.to_string(),
                        r.keep.inflated.to_string(),
                        r.generic.stored.to_string(),
                        r.stays.to_string(),
                    ],
                )?;
            }
            out.write_all(&w.into_inner().map_err(|e| e.into_error())?)?;
            return Ok(());
        }
        _ => {}
    }
    let md = format == OutputFormat::Markdown;
    let style = if md { style.unbounded() } else { style };
    let t = &report.total;
    let head = format!(
        "Keeping {}: {} of device code and files serve only other targets and could go; {} serve them and stay ({} of it generic code); {} of host code and untied files stay.",
        report.keep.join(", "),
        both(t.drop),
        both(t.keep),
        human_bytes(t.generic.stored),
        human_bytes(t.stays)
    );
    writeln!(out, "{}", wrap(&head, "", "", style.width))?;
    let files: usize = rows.iter().map(|r| r.files_to_drop.len()).sum();
    let split = format!(
        "Of what could go, {} is whole files ({}: deleting them is enough; `--verbose` or `--json` lists them); {} is code inside libraries that also hold code for the kept targets, which only a rebuild or a kpack split could drop.",
        human_bytes(t.drop_whole.stored),
        crate::vocab::units::count(files as u64, "file"),
        human_bytes(t.drop.stored.saturating_sub(t.drop_whole.stored)),
    );
    writeln!(out, "{}", wrap(&split, "", "", style.width))?;
    writeln!(out)?;
    let all: Vec<&PruneRow> = rows.iter().copied().chain(std::iter::once(t)).collect();
    // One root: paths inside it, the root said once above the table.
    if let [root] = roots {
        writeln!(out, "{}", wrap(&format!("Under {root}:"), "", "  ", style.width))?;
    }
    let name = |r: &PruneRow| match (r.library.path.is_empty(), roots.len()) {
        (true, _) => "total".to_string(),
        (false, 1) => r.library.path.clone(),
        _ => r.library.display(roots),
    };
    let cols = vec![
        Column::left("library", all.iter().map(|r| name(r)).collect(), None),
        Column::right("could go", all.iter().map(|r| bytes(r.drop.stored)).collect(), None),
        Column::right("whole files", all.iter().map(|r| bytes(r.drop_whole.stored)).collect(), Some(5)),
        Column::right("inflated", all.iter().map(|r| bytes(r.drop.inflated)).collect(), Some(2)),
        Column::right("stays for them", all.iter().map(|r| bytes(r.keep.stored)).collect(), Some(3)),
        Column::right("of it generic", all.iter().map(|r| bytes(r.generic.stored)).collect(), Some(1)),
        Column::right("host and other", all.iter().map(|r| bytes(r.stays)).collect(), Some(4)),
    ];
    let (text, dropped) = fit(cols, md, style);
    writeln!(out, "{text}")?;
    writeln!(out)?;
    // A column left out for the width is said, never silently gone.
    if !dropped.is_empty() {
        let note = format!(
            "Left out for the width: {}; a wider terminal or `--format csv` shows them.",
            dropped.join(", ")
        );
        writeln!(out, "{}", wrap(&note, "", "", style.width))?;
    }
    let untied = &report.untied;
    let note = format!(
        "{} ({}) {} no device code or GPU data (or could not be read) and {}; in no row. An entry of a compressed bundle counts its share of the bundle on disk (its size × the bundle's stored ÷ inflated size) and its own size inflated. A hard link is counted once. Nothing was written or deleted.",
        crate::vocab::units::count(untied.files, "other file"),
        human_bytes(untied.bytes),
        if untied.files == 1 { "holds" } else { "hold" },
        if untied.files == 1 { "stays" } else { "stay" },
    );
    writeln!(out, "{}", wrap(&note, "", "", style.width))?;
    if verbose {
        write_files_to_drop(&rows, roots, md, style, out)?;
    }
    Ok(())
}
