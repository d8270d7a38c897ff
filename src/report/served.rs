//! `check --gpu all` for people: one row per GPU (status, the first library that decides it
//! and how many more, the override that would help), fitted to the width; the same rows as CSV
//! (the page's table is `html`'s). The rows are the check's (`check::summary`), never judged here.

use std::io::{self, Write};

use crate::check::driver::DriverOutcome;
use crate::check::summary::GpuRow;
use crate::check::CheckReport;
use crate::vocab::units::count;

use super::style::{status_color, wrap, Style};
use super::table::{render, Column};

/// The columns besides the first decider's: GPU, STATUS, MORE, OVERRIDE.
const HEADERS: [&str; 5] = ["gpu", "status", "first missing or warn", "more", "override"];

/// A row's GPU as shown: its target ID, what an override makes it, and `*` for this machine's.
pub fn gpu_cell(r: &GpuRow) -> String {
    let mut s = r.target.clone();
    if let Some(c) = &r.checked_as {
        s.push_str(&format!("→{c}"));
    }
    if r.node.is_some() {
        s.push_str(" *");
    }
    s
}

/// The decider's library as shown: inside its install when only one was checked; the kernel's
/// driver first when it leaves the GPU down.
pub fn decider_cell(r: &GpuRow, report: &CheckReport) -> String {
    match r.driver {
        DriverOutcome::NotKnown => return "amdgpu driver: does not know it".to_string(),
        DriverOutcome::NoDriver => return "amdgpu driver: not in this kernel".to_string(),
        DriverOutcome::Missing => return "amdgpu driver: firmware absent".to_string(),
        DriverOutcome::Ok | DriverOutcome::Unknown => {}
    }
    let Some(d) = &r.first else { return String::new() };
    match report.installs.as_slice() {
        [one] => one.install.inner(&d.library).to_string(),
        _ => d.library.clone(),
    }
}

/// The override's value (`10.3.0`), the variable named once in the notes.
fn override_cell(r: &GpuRow) -> String {
    let value = r.override_helps.as_deref().map(|s| s.split_once('=').map_or(s, |(_, v)| v));
    value.unwrap_or_default().to_string()
}

/// The table's columns, the decider's cut to what the width leaves it.
fn columns(report: &CheckReport, md: bool, style: Style) -> Vec<Column> {
    let rows = &report.summary;
    let gpu: Vec<String> = rows.iter().map(gpu_cell).collect();
    let status: Vec<String> = rows.iter().map(|r| r.status.word().to_string()).collect();
    let more: Vec<String> =
        rows.iter().map(|r| if r.more > 0 { format!("+{}", r.more) } else { String::new() }).collect();
    let over: Vec<String> = rows.iter().map(override_cell).collect();
    let widest =
        |cells: &[String], h: &str| cells.iter().map(|c| c.chars().count()).max().unwrap_or(0).max(h.len());
    let used = widest(&gpu, HEADERS[0])
        + widest(&status, HEADERS[1])
        + widest(&more, HEADERS[3])
        + widest(&over, HEADERS[4]);
    // Five columns, a space each side.
    let room = style.width.filter(|_| !md).map(|w| w.saturating_sub(used + 10).max(16));
    let decider: Vec<String> = rows
        .iter()
        .map(|r| {
            let name = decider_cell(r, report);
            room.map_or_else(
                || name.clone(),
                |room| super::table::fit_name(&name, room.max(HEADERS[2].len())),
            )
        })
        .collect();
    let colors = rows.iter().map(|r| Some(status_color(r.status))).collect();
    // Headers on one line each, in capitals for people.
    let head = |i: usize| if md { HEADERS[i].to_string() } else { HEADERS[i].to_uppercase() };
    let one_line = |c: Column| Column { verbatim: true, ..c };
    vec![
        one_line(Column::left(&head(0), gpu, None)),
        one_line(Column::left(&head(1), status, None).colored(colors)),
        one_line(Column::left(&head(2), decider, None)),
        one_line(Column::right(&head(3), more, None)),
        one_line(Column::left(&head(4), over, None)),
    ]
}

/// The notes under the table: what `*` and OVERRIDE mean, where the details are.
fn notes(report: &CheckReport) -> Vec<String> {
    let rows = &report.summary;
    let mut out = Vec::new();
    let nodes: Vec<String> = rows.iter().filter_map(|r| r.node.map(|n| n.to_string())).collect();
    if !nodes.is_empty() {
        out.push(format!(
            "*: this machine's GPU (KFD node {}), as its environment leaves it; the other rows are each target as it is.",
            nodes.join(", ")
        ));
    }
    out.push(
        "FIRST MISSING OR WARN: the first library (or folder) with the row's status; MORE: how many more have it."
            .to_string(),
    );
    if rows.iter().any(|r| r.override_helps.is_some()) {
        out.push(
            "OVERRIDE: the HSA_OVERRIDE_GFX_VERSION under which more of its code is found — a workaround, not support."
                .to_string(),
        );
    }
    out.push("Every verdict of one GPU, and the caveats: gfxscan check --gpu TARGET.".to_string());
    out
}

/// Writes the rows as a table (Markdown with `md`), and the notes.
pub fn write_rows(report: &CheckReport, md: bool, style: Style, out: &mut dyn Write) -> io::Result<()> {
    let cols = columns(report, md, style);
    let text = render(&cols.iter().collect::<Vec<_>>(), md, style);
    for line in text.lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(out)?;
    let li = if md { "- " } else { "" };
    for n in notes(report) {
        writeln!(out, "{}", wrap(&n, li, "  ", style.width))?;
    }
    writeln!(out)
}

/// The outcome line of `--gpu all`: how many GPUs are served, and how many are not, the rows
/// `rows_are` (above, below) it.
pub fn outcome_line(report: &CheckReport, counted: &str, rows_are: &str) -> Option<String> {
    let rows = &report.summary;
    let missing = rows.iter().filter(|r| !r.served()).count();
    (!rows.is_empty() && missing > 0).then(|| {
        format!(
            "{counted} · MISSING: {} of {} lack a required piece (rows {rows_are}); {} served",
            missing,
            count(rows.len() as u64, "GPU"),
            rows.len() - missing
        )
    })
}

/// The rows as CSV records: one a GPU, every field of the JSON row.
pub fn write_csv(report: &CheckReport, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "gpu",
        "target",
        "checked_as",
        "node",
        "status",
        "install",
        "first_library",
        "first_kind",
        "more",
        "override",
        "driver",
    ];
    super::safe::write_record(&mut w, header)?;
    for r in &report.summary {
        let (install, library, kind) = match &r.first {
            Some(d) => (d.install.clone(), d.library.clone(), super::json_word(d.kind)),
            None => Default::default(),
        };
        super::safe::write_record(
            &mut w,
            [
                r.gpu.to_string(),
                r.target.clone(),
                r.checked_as.clone().unwrap_or_default(),
                r.node.map(|n| n.to_string()).unwrap_or_default(),
                super::json_word(r.status),
                install,
                library,
                kind,
                r.more.to_string(),
                r.override_helps.clone().unwrap_or_default(),
                super::json_word(r.driver),
            ],
        )?;
    }
    out.write_all(&w.into_inner()?)?;
    Ok(())
}
