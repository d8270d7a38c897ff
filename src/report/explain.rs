//! `explain` for people: one target's gates, at a glance and then section by section, each
//! with its verdict (blocks, allows, unknown) and its source; as a table, Markdown or JSON (the
//! HTML page, and the scan page's gates per target, are `html`'s).

use std::io::Write;

use comfy_table::{Cell, Color};

use crate::cli::OutputFormat;
use crate::explain::{Explanation, Gate, GateRow, Section};
use crate::vocab::units::count;

use super::style::{fill_cell, wrap, Style};
use super::views::{install_summary, target_line};
use super::write_json;

/// Writes an explanation in the chosen format; `verbose` gives every library its own row.
pub fn write_explain(
    e: &Explanation,
    format: OutputFormat,
    verbose: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match format {
        OutputFormat::Json => write_json(out, e),
        OutputFormat::Html => super::html::write_explain_html(e, out),
        _ => {
            let md = format == OutputFormat::Markdown;
            let style = if md { Style { color: false, width: None } } else { style };
            write_text(e, md, verbose, style, out)
        }
    }
}

/// The colour of a verdict word.
fn gate_color(g: Gate) -> Color {
    match g {
        Gate::Allows => Color::Green,
        Gate::Blocks => Color::Red,
        Gate::Unknown => Color::Yellow,
    }
}

/// Rows as shown: without `verbose`, the OK library verdicts are one counted row.
fn shown_rows(rows: &[GateRow], verbose: bool) -> Vec<GateRow> {
    let ok = |r: &GateRow| r.status == Some(crate::check::Status::Ok);
    if verbose || rows.iter().filter(|r| ok(r)).count() < 2 {
        return rows.to_vec();
    }
    let n = rows.iter().filter(|r| ok(r)).count();
    let mut out: Vec<GateRow> = Vec::new();
    for r in rows {
        if !ok(r) {
            out.push(r.clone());
        } else if !out.iter().any(|o| o.section == Section::Runtime && o.gate.ends_with("(OK)")) {
            out.push(GateRow {
                gate: format!("{} (OK)", count(n as u64, "library")),
                says: "each finds code for the target (--verbose lists them)".to_string(),
                ..r.clone()
            });
        }
    }
    out
}

/// The widths of the gate and says cells in `width` columns, beside the verdict and a source
/// reference (`[12]`).
fn widths(width: usize) -> (usize, usize) {
    // Four columns, one space of padding each side; VERDICT is 7 wide, a reference 4.
    let room = width.saturating_sub(8 + 7 + 4);
    let gate = (room * 3 / 10).clamp(8, 34);
    (gate, room.saturating_sub(gate).max(8))
}

/// The sources a text report cites, numbered in order of first use.
#[derive(Default)]
struct Sources(Vec<String>);

impl Sources {
    /// The reference of `source` (`[3]`), numbering it when new.
    fn cite(&mut self, source: &str) -> String {
        let n = match self.0.iter().position(|s| s == source) {
            Some(i) => i + 1,
            None => {
                self.0.push(source.to_string());
                self.0.len()
            }
        };
        format!("[{n}]")
    }
}

/// Text for a Markdown table cell: its pipes escaped.
fn md_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// One section's rows as a table: in Markdown with each source whole; for people with a
/// reference into the list of sources that ends the report.
fn rows_table(rows: &[GateRow], md: bool, style: Style, sources: &mut Sources) -> String {
    let mut t = super::table::styled(md, style);
    t.set_header(if md { ["gate", "verdict", "says", "source"] } else { ["GATE", "VERDICT", "SAYS", "SRC"] });
    let w = (!md).then_some(style.width).flatten().map(widths);
    for r in rows {
        let word = Cell::new(r.verdict.word());
        let word = if style.color { word.fg(gate_color(r.verdict)) } else { word };
        let cells = match (md, w) {
            // A `|` inside a Markdown cell (a regex) would end it.
            (true, _) => (md_cell(&r.gate), md_cell(&r.says), md_cell(&r.source)),
            (false, Some((g, s))) => (fill_cell(&r.gate, g), fill_cell(&r.says, s), sources.cite(&r.source)),
            (false, None) => (r.gate.clone(), r.says.clone(), sources.cite(&r.source)),
        };
        t.add_row(vec![Cell::new(cells.0), word, Cell::new(cells.1), Cell::new(cells.2)]);
    }
    t.to_string().lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
}

/// Writes the rows of each section in turn, under its title.
fn write_sections(
    rows: &[GateRow],
    md: bool,
    style: Style,
    sources: &mut Sources,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut sections: Vec<Section> = Vec::new();
    for r in rows {
        if !sections.contains(&r.section) {
            sections.push(r.section);
        }
    }
    for s in sections {
        let these: Vec<GateRow> = rows.iter().filter(|r| r.section == s).cloned().collect();
        writeln!(out, "{}{}", if md { "### " } else { "" }, s.title())?;
        if md {
            writeln!(out)?;
        }
        writeln!(out, "{}", rows_table(&these, md, style, sources))?;
        writeln!(out)?;
    }
    Ok(())
}

/// How many of `rows` allow, and which: `2 of 6 allow (a, b)`.
fn allowing(rows: &[&GateRow], noun: &str) -> String {
    let yes: Vec<&str> = rows.iter().filter(|r| r.verdict == Gate::Allows).map(|r| r.gate.as_str()).collect();
    let which = if yes.is_empty() { String::new() } else { format!(": {}", yes.join(", ")) };
    format!("{} of {} {noun}{which}", yes.len(), rows.len())
}

/// How many layers the roots ship for the target, and which; then those absent at no cost
/// (their gate allows: nothing fails without them).
fn shipping(rows: &[&GateRow]) -> String {
    // Layers are counted; the kernel's driver is a gate of its own, said after them.
    let (layers, kernel): (Vec<&GateRow>, Vec<&GateRow>) = rows.iter().partition(|r| r.count.is_some());
    let has = |r: &&&GateRow| r.count.is_some_and(|n| n > 0);
    let yes: Vec<&str> = layers.iter().filter(has).map(|r| r.gate.as_str()).collect();
    let which = if yes.is_empty() { String::new() } else { format!(": {}", yes.join(", ")) };
    let mut s = format!("{} of {} layers{which}", yes.len(), layers.len());
    let spare: Vec<&str> =
        layers.iter().filter(|r| !has(r) && r.verdict == Gate::Allows).map(|r| r.gate.as_str()).collect();
    if !spare.is_empty() {
        s.push_str(&format!(" (absent, nothing fails without them: {})", spare.join(", ")));
    }
    for k in kernel {
        let word = if k.verdict == Gate::Unknown { "not judged" } else { k.verdict.word() };
        s.push_str(&format!("; {}: {word}", k.gate));
    }
    s
}

/// The matrix at a glance, a line per section and per install, before the tables.
fn glance(e: &Explanation) -> Vec<String> {
    fn of(rows: &[GateRow], s: Section) -> Vec<&GateRow> {
        rows.iter().filter(|r| r.section == s).collect()
    }
    let mut out = vec![
        format!("Vendor policy: {}", allowing(&of(&e.policy, Section::Vendor), "allow")),
        format!("Default builds: {}", allowing(&of(&e.policy, Section::Build), "keep it")),
    ];
    if !e.roots.is_empty() {
        out.push(format!("The roots ship: {}", shipping(&of(&e.ships, Section::Ships))));
    }
    out.extend(e.installs.iter().map(|i| format!("{}: {}", i.install.path, install_summary(i))));
    out
}

fn write_text(
    e: &Explanation,
    md: bool,
    verbose: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let h = if md { "## " } else { "" };
    writeln!(out, "{}", wrap(&format!("{h}{}", target_line(e)), "", "  ", style.width))?;
    if !e.roots.is_empty() {
        writeln!(out, "{}", wrap(&format!("Roots: {}", e.roots.join(", ")), "", "  ", style.width))?;
    }
    writeln!(out)?;
    for line in glance(e) {
        writeln!(out, "{}", wrap(&line, if md { "- " } else { "" }, "  ", style.width))?;
    }
    writeln!(out)?;
    if !verbose {
        return Ok(write_deciding(e, md, style, out)?);
    }
    let mut sources = Sources::default();
    write_sections(&e.policy, md, style, &mut sources, out)?;
    if e.roots.is_empty() {
        let line = "No install found (no /opt/rocm, no Ollama folder): vendor policy only. Name a ROOT to see what an install ships and serves.";
        writeln!(out, "{}", wrap(line, "", "  ", style.width))?;
        return write_sources(&sources, style, out);
    }
    write_sections(&e.ships, md, style, &mut sources, out)?;
    for i in &e.installs {
        let head = format!("Install {} ({})", i.install.path, super::json_word(i.install.kind));
        writeln!(out, "{}", wrap(&format!("{h}{head}"), "", "  ", style.width))?;
        for w in i.check.hints.iter().chain(&i.check.warnings) {
            writeln!(out, "{}", wrap(w, if md { "- " } else { "  " }, "    ", style.width))?;
        }
        writeln!(out)?;
        write_sections(&shown_rows(&i.rows, verbose), md, style, &mut sources, out)?;
    }
    if e.installs.is_empty() {
        writeln!(out, "No library with device code under the roots: nothing for the runtime to find.")?;
    }
    for n in &e.not_checked {
        writeln!(out, "{}", wrap(&format!("Not checked: {n}"), "", "  ", style.width))?;
    }
    for p in &e.problems {
        let line = format!("Could not be read: {}: {}", p.path.display(&e.roots), p.message);
        writeln!(out, "{}", wrap(&line, "", "  ", style.width))?;
    }
    write_sources(&sources, style, out)
}

/// The rows that decide the answer: every gate that blocks, each on one line of the width.
fn deciding(e: &Explanation) -> Vec<&GateRow> {
    let installs = e.installs.iter().flat_map(|i| &i.rows);
    e.policy.iter().chain(&e.ships).chain(installs).filter(|r| r.verdict == Gate::Blocks).collect()
}

/// `text` in one line of `width` (none: whole), cut after its last whole word that fits, for
/// "…".
fn one_line(text: &str, width: Option<usize>) -> String {
    let Some(w) = width.filter(|&w| text.chars().count() > w) else { return text.to_string() };
    let head: String = text.chars().take(w.saturating_sub(1)).collect();
    let cut = head.rfind(' ').filter(|&at| at > head.len() / 2).unwrap_or(head.len());
    format!("{}…", head[..cut].trim_end_matches([',', ':', ';']))
}

/// The short form after the glance: the gates that block (or that none does), the hints,
/// what stops the answer being whole, and what `--verbose` adds.
fn write_deciding(e: &Explanation, md: bool, style: Style, out: &mut dyn Write) -> std::io::Result<()> {
    let li = if md { "- " } else { "  " };
    let rows = deciding(e);
    match rows.is_empty() {
        true => writeln!(out, "Nothing blocks it.")?,
        false => writeln!(out, "{}Blocked by ({}):", if md { "### " } else { "" }, rows.len())?,
    }
    for r in &rows {
        // A library is named by its last folders, as the full table's cells do.
        let line = format!("{li}{}: {}", super::style::cut_path_start(&r.gate, 28), r.says);
        let line = one_line(&line, style.width);
        let line = match style.color {
            true => super::style::paint(&line, gate_color(r.verdict), true),
            false => line,
        };
        writeln!(out, "{line}")?;
    }
    for i in &e.installs {
        for h in i.check.hints.iter().chain(&i.check.warnings) {
            writeln!(out, "{}", one_line(&format!("{li}{h}"), style.width))?;
        }
    }
    if !e.problems.is_empty() {
        let line = format!(
            "{} could not be read: gates read from them may be wrong",
            count(e.problems.len() as u64, "file")
        );
        writeln!(out, "{}", wrap(&line, "", "  ", style.width))?;
    }
    writeln!(out)?;
    let hint = "--verbose: every gate with what it says and its source, every library's verdict.";
    writeln!(out, "{}", wrap(hint, "", "  ", style.width))
}

/// The sources the tables refer to, one a line (targets.toml's header says what each names).
fn write_sources(sources: &Sources, style: Style, out: &mut dyn Write) -> anyhow::Result<()> {
    if sources.0.is_empty() {
        return Ok(());
    }
    let head = "Sources (targets.toml's header names each; scan and check: this run):";
    writeln!(out, "{}", wrap(head, "", "  ", style.width))?;
    for (i, s) in sources.0.iter().enumerate() {
        writeln!(out, "{}", wrap(&format!("[{}] {s}", i + 1), "", "    ", style.width))?;
    }
    Ok(())
}
