//! `scan` for people: the per-target table (the default), the per-layer view and the
//! per-library view, each fitted to the reader's width.
//!
//! The per-target table is the comparison users come for: targets down in the natural order,
//! the install's layers across (code objects in libraries, the runtime's own, rocBLAS and
//! hipBLASLt files, MIOpen records, firmware, bitcode). Its columns come from the families'
//! rows (`families::FAMILY_ROWS`, grouped by their `column`), so a new family is a new column.

use std::io::Write;

use crate::aggregate::{layer_count, layers, Layer};
use crate::cli::{OutputFormat, View};
use crate::families::{Row, FAMILY_ROWS};
use crate::library::matrix::{LibraryRow, Mark};
use crate::model::{RelPath, Snapshot, TargetCounts};
use crate::vocab::targets::Targets;
use crate::vocab::units::{human_bytes, thousands};

use super::style::{wrap, Style};
use super::table::{fit, render_blocks, shorten_middle, Column};
use super::views::{
    generic_servers, headline, library_targets, product, runtime_only, served_line, shown_targets,
    RUNTIME_ROW,
};
use super::write_json;

/// What the reader asked to see.
#[derive(Debug, Clone, Default)]
pub struct ScanView {
    pub view: View,
    /// `--only`: these targets, in this order, zeros included.
    pub only: Vec<String>,
    /// `--wide`: every row and column (kernels, bytes, files), no width limit.
    pub wide: bool,
    /// `SOURCE_DATE_EPOCH`, the one time a CycloneDX BOM states (none without it).
    pub created: Option<u64>,
    /// For the HTML page: each shown target's gates (`explain`), made only when a page is
    /// written.
    pub gates: Vec<crate::explain::Explanation>,
    /// For the header of the table and the page: each GPU target's row as `check --gpu all`
    /// gives it (`check::summary::code_rows`), made only for those outputs.
    pub served: Vec<crate::check::summary::GpuRow>,
}

/// Writes a scan result in the chosen format and view.
pub fn write_scan(
    snap: &Snapshot,
    targets: &Targets,
    matrix: &[LibraryRow],
    view: &ScanView,
    format: OutputFormat,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let style = match (format, view.wide) {
        // Markdown is pasted, not shown: no width, no escapes.
        (OutputFormat::Markdown, _) => Style { color: false, width: None },
        (_, true) => style.unbounded(),
        _ => style,
    };
    match format {
        OutputFormat::Json => write_json(out, &json_view(snap, targets, view)),
        OutputFormat::Csv => write_csv(snap, targets, matrix, view, out),
        OutputFormat::Html => super::html::write_scan_html(snap, targets, matrix, view, out),
        OutputFormat::Prometheus => super::prometheus::write_scan_metrics(snap, targets, &view.only, out),
        OutputFormat::Jsonl => super::jsonl::write_scan_jsonl(&json_view(snap, targets, view), out),
        OutputFormat::Uris => {
            let shown: Vec<String> = match view.only.is_empty() {
                true => Vec::new(),
                false => shown_targets(snap, targets, &view.only).into_iter().map(|(t, _)| t).collect(),
            };
            super::uris::write_uris(snap, &shown, out)
        }
        OutputFormat::Cyclonedx => super::cyclonedx::write_cyclonedx(snap, targets, view.created, out),
        OutputFormat::Table | OutputFormat::Markdown => {
            let md = format == OutputFormat::Markdown;
            writeln!(out, "{}", wrap(&headline(snap), "", "  ", style.width))?;
            if let Some(line) = served_line(&view.served, style.width) {
                writeln!(out, "{}", wrap(&line, "", "  ", style.width))?;
            }
            writeln!(out)?;
            match view.view {
                View::Target => write_by_target(snap, targets, view, md, style, out)?,
                View::Layer => write_by_layer(snap, targets, &view.only, md, style, out)?,
                View::Library => write_by_library(snap, targets, matrix, &view.only, md, style, out)?,
            }
            write_declared(snap, out, style)?;
            match view.view {
                View::Target => write_findings(snap, out, md, style)?,
                // The other views are about their matrix: the findings are counted, not told.
                View::Layer | View::Library => write_findings_count(snap, out, style)?,
            }
            write_mismatches(snap, out, md, style)?;
            write_problems(snap, out, md)?;
            Ok(())
        }
    }
}

/// Beside the targets found, the targets each TheRock install declares it was built for
/// (`share/therock/dist_info.json`); a finding says when the two differ.
fn write_declared(snap: &Snapshot, out: &mut dyn Write, style: Style) -> std::io::Result<()> {
    for d in &snap.declared_targets {
        let said = if d.targets.is_empty() { "no targets".to_string() } else { d.targets.join(", ") };
        let line = format!("Declared by TheRock ({}): {said}", d.path.display(&snap.roots));
        writeln!(out, "{}", wrap(&line, "", "  ", style.width))?;
    }
    if !snap.declared_targets.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

/// The JSON snapshot, cut to `--only` targets when given (zeros included; generic servers
/// beside them; every family row listed for each).
fn json_view<'a>(snap: &'a Snapshot, targets: &Targets, view: &ScanView) -> std::borrow::Cow<'a, Snapshot> {
    if view.only.is_empty() {
        return std::borrow::Cow::Borrowed(snap);
    }
    let mut v = snap.clone();
    let shown = shown_targets(snap, targets, &view.only);
    v.targets =
        shown.iter().map(|(t, _)| (t.clone(), snap.targets.get(t).cloned().unwrap_or_default())).collect();
    v.families = FAMILY_ROWS
        .iter()
        .map(|r| {
            let per: crate::model::TargetMap<u64> = shown
                .iter()
                .map(|(t, _)| {
                    (t.clone(), snap.families.get(r.key).and_then(|m| m.get(t)).copied().unwrap_or(0))
                })
                .collect();
            (r.key.to_string(), per)
        })
        .collect();
    v.filtered_to = Some(view.only.clone());
    // In the order the targets were asked for.
    let via = generic_servers(snap, targets, &view.only);
    v.via_generic = view.only.iter().filter_map(|t| Some((t.clone(), via.get(t)?.clone()))).collect();
    std::borrow::Cow::Owned(v)
}

/// One row per target: its code-object totals and every family row, raw numbers.
fn write_csv(
    snap: &Snapshot,
    targets: &Targets,
    matrix: &[LibraryRow],
    view: &ScanView,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let shown = shown_targets(snap, targets, &view.only);
    if view.view == View::Layer {
        super::safe::write_record(
            &mut w,
            std::iter::once("family").chain(shown.iter().map(|(t, _)| t.as_str())),
        )?;
        for r in FAMILY_ROWS.iter() {
            let per = shown.iter().map(|(t, _)| {
                snap.families.get(r.key).and_then(|m| m.get(t)).copied().unwrap_or(0).to_string()
            });
            super::safe::write_record(&mut w, std::iter::once(r.key.to_string()).chain(per))?;
        }
    } else if view.view == View::Library {
        // The table's columns: no generic targets, and every target when asked for all.
        let (mut cols, folded) = library_targets(snap, targets, matrix, &view.only);
        cols.extend(folded);
        targets.sort(&mut cols);
        if !view.only.is_empty() {
            cols = view.only.clone();
        }
        let names: Vec<&str> = cols.iter().map(String::as_str).collect();
        super::safe::write_record(
            &mut w,
            ["install", "library", "layer"].into_iter().chain(names.iter().copied()),
        )?;
        for r in matrix {
            let marks = names.iter().map(|t| mark_word(r.mark(t, targets)));
            super::safe::write_record(
                &mut w,
                [r.install.path.as_str(), &r.library, &r.layer].into_iter().chain(marks),
            )?;
        }
    } else {
        let head = ["target", "product", "code_objects", "kernels", "bytes", "files"];
        super::safe::write_record(&mut w, head.into_iter().chain(FAMILY_ROWS.iter().map(|r| r.key)))?;
        for (t, _) in &shown {
            let c = snap.targets.get(t).cloned().unwrap_or_default();
            let mut rec = vec![
                t.clone(),
                targets.by_name(t).and_then(|x| x.products.first().cloned()).unwrap_or_default(),
                c.code_objects.to_string(),
                c.kernels.to_string(),
                c.bytes.to_string(),
                c.files.to_string(),
            ];
            rec.extend(
                FAMILY_ROWS.iter().map(|r| {
                    snap.families.get(r.key).and_then(|m| m.get(t)).copied().unwrap_or(0).to_string()
                }),
            );
            super::safe::write_record(&mut w, rec)?;
        }
    }
    out.write_all(&w.into_inner().map_err(|e| e.into_error())?)?;
    Ok(())
}

fn mark_word(m: Mark) -> &'static str {
    match m {
        Mark::Own => "own",
        Mark::Generic => "generic",
        Mark::None => "",
    }
}

/// A count as a table cell: thousands separators, a dash for none.
fn cell(n: u64) -> String {
    if n == 0 {
        "—".to_string()
    } else {
        thousands(n)
    }
}

/// The default table: targets down, layers across.
fn write_by_target(
    snap: &Snapshot,
    targets: &Targets,
    view: &ScanView,
    md: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let shown = shown_targets(snap, targets, &view.only);
    let fold = view.only.is_empty() && !view.wide;
    let (rows, folded): (Vec<_>, Vec<_>) =
        shown.into_iter().partition(|(t, _)| !(fold && runtime_only(snap, targets, t)));
    if rows.is_empty() && folded.is_empty() {
        writeln!(out, "No AMDGPU code objects, Tensile libraries, MIOpen databases or firmware found.")?;
        for n in driver_notes(snap, targets) {
            writeln!(out, "{}", wrap(&n, if md { "- " } else { "" }, "  ", style.width))?;
        }
        return Ok(());
    }
    let all = layers();
    let present: Vec<&Layer> =
        all.iter().filter(|l| snap.families.keys().any(|k| l.rows.iter().any(|r| r.key == k))).collect();
    let mut cols = vec![
        Column::left("target", rows.iter().map(|(t, served)| target_label(t, served)).collect(), None),
        Column::left(
            "product",
            rows.iter().map(|(t, _)| product(targets, t).unwrap_or_default()).collect(),
            Some(0),
        ),
    ];
    for (i, l) in present.iter().enumerate() {
        // The code-object column stays; when the width is short the runtime's own goes first,
        // then the layers no verdict rests on (their rows have no gap rule: records HIP never
        // reads, tuning models), then the rest from the right.
        let runtime = l.rows.iter().any(|r| r.key == RUNTIME_ROW);
        let judged = l.rows.iter().any(|r| r.gap.is_some());
        let drop = (i > 0).then_some(match (runtime, judged) {
            (true, _) => 0,
            (false, false) => (50 - i.min(40)) as u8,
            (false, true) => (100 - i.min(40)) as u8,
        });
        cols.push(Column::right(
            l.header,
            rows.iter().map(|(t, _)| cell(layer_count(snap, l, t))).collect(),
            drop,
        ));
    }
    if view.wide {
        let totals: Vec<TargetCounts> =
            rows.iter().map(|(t, _)| snap.targets.get(t).cloned().unwrap_or_default()).collect();
        cols.push(Column::right("code objects", totals.iter().map(|c| cell(c.code_objects)).collect(), None));
        cols.push(Column::right("kernels", totals.iter().map(|c| cell(c.kernels)).collect(), None));
        cols.push(Column::right(
            "device code",
            totals
                .iter()
                .map(|c| if c.bytes == 0 { "—".to_string() } else { human_bytes(c.bytes) })
                .collect(),
            None,
        ));
        cols.push(Column::right("files", totals.iter().map(|c| cell(c.files)).collect(), None));
    }
    let (text, dropped) = fit(cols, md, style);
    if !rows.is_empty() {
        writeln!(out, "{text}")?;
    }
    let mut notes: Vec<String> = Vec::new();
    for (g, served) in rows.iter().filter(|(_, s)| !s.is_empty()) {
        notes.push(format!(
            "{}: served by {g} code where a library has none built for it (the runtime loads generic code then).",
            served.join(", ")
        ));
    }
    let legend: Vec<String> = present
        .iter()
        .filter(|l| !dropped.iter().any(|d| d == l.header))
        .map(|l| {
            let what: Vec<&str> = l.rows.iter().map(|r| r.label).collect();
            // Parts another column shows apart are not counted twice.
            let apart: Vec<String> = FAMILY_ROWS
                .iter()
                .filter(|r| r.within.is_some_and(|w| l.rows.iter().any(|x| x.key == w)))
                .filter(|r| present.iter().any(|p| p.header == r.column))
                .map(|r| r.column.to_uppercase())
                .collect();
            let less = if apart.is_empty() { String::new() } else { format!(", less {}", apart.join(", ")) };
            format!("{}: {}{less}", l.header.to_uppercase(), what.join(" + "))
        })
        .collect();
    if !rows.is_empty() && !legend.is_empty() {
        notes.push(format!("Columns: {}.", legend.join("; ")));
    }
    notes.extend(driver_notes(snap, targets));
    if !folded.is_empty() {
        let names: Vec<&str> = folded.iter().map(|(t, _)| t.as_str()).collect();
        notes.push(format!(
            "Only the runtime's own code (no library code; --wide lists them): {}.",
            names.join(", ")
        ));
    }
    let absent: Vec<&str> =
        all.iter().filter(|l| !present.iter().any(|p| p.header == l.header)).map(|l| l.header).collect();
    if !absent.is_empty() {
        notes.push(format!("None in this tree: {}.", absent.join(", ")));
    }
    let hidden: Vec<&str> = dropped.iter().map(String::as_str).filter(|h| *h != "product").collect();
    if !hidden.is_empty() {
        notes.push(format!(
            "Not shown, to fit {} columns: {} (--wide or --format csv shows every column).",
            style.width.unwrap_or_default(),
            hidden.join(", ")
        ));
    }
    writeln!(out)?;
    for n in notes {
        writeln!(out, "{}", wrap(&n, if md { "- " } else { "" }, "  ", style.width))?;
    }
    Ok(())
}

/// A target row's name: a generic target says which chosen targets it serves.
/// What each amdgpu driver of the roots asks for and finds, per target with firmware names, as
/// `check` judges it (`check::driver::check_drivers`): the FIRMWARE column counts files by
/// name; these lines say which of them a kernel requests and whether all it needs are there.
fn driver_notes(snap: &Snapshot, targets: &Targets) -> Vec<String> {
    use crate::check::driver::{check_drivers, DriverOutcome, Kernel};
    let gpus: Vec<(String, Vec<String>)> = targets
        .iter()
        .filter(|t| !t.firmware.is_empty())
        .map(|t| (t.name.clone(), t.firmware.clone()))
        .collect();
    let mut out = Vec::new();
    for d in &snap.drivers {
        let rows =
            check_drivers(Kernel::Roots { drivers: std::slice::from_ref(d), roots: &snap.roots }, &gpus);
        let of = |o: DriverOutcome| -> Vec<String> {
            let mut v: Vec<String> =
                rows.iter().filter(|r| r.judgement.outcome == o).map(|r| r.gpu.clone()).collect();
            targets.sort(&mut v);
            v
        };
        let (ok, missing) = (of(DriverOutcome::Ok), of(DriverOutcome::Missing));
        let release = d.release.as_deref().unwrap_or("of unknown release");
        let at = d.path.display(&snap.roots);
        if d.absent {
            out.push(format!(
                "Kernel: Linux {release} ({at}) has no amdgpu driver: no GPU comes up with it."
            ));
            continue;
        }
        if let Some(e) = &d.unreadable {
            out.push(format!("Kernel: the amdgpu module of Linux {release} ({at}) could not be read: {e}."));
            continue;
        }
        let mut line = format!(
            "Kernel: amdgpu of Linux {release} ({at}{}) declares {} firmware files, {} present; every file it needs is there for {}",
            if d.built_in { ", built in" } else { "" },
            d.firmware.len(),
            d.present.len(),
            if ok.is_empty() { "no target".to_string() } else { ok.join(", ") }
        );
        if !missing.is_empty() {
            line.push_str(&format!(
                "; absent for {} (gfxscan check --gpu TARGET names them)",
                missing.join(", ")
            ));
        }
        if d.built_in && !of(DriverOutcome::Unknown).is_empty() {
            line.push_str(
                "; built in, it loads firmware from the initramfs, not read here: the others are unknown",
            );
        }
        out.push(format!("{line}."));
    }
    // Names from the root escaped before the lines are wrapped, so widths count what is shown
    // (as check's and diff's lines are); the terminal writer then finds nothing to escape.
    out.into_iter().map(|l| super::safe::shown(&l).into_owned()).collect()
}

fn target_label(t: &str, served: &[String]) -> String {
    if served.is_empty() {
        t.to_string()
    } else {
        format!("{t} (serves {})", served.join(", "))
    }
}

/// Layers down, targets across (the old `--compare`), in blocks of targets that fit.
fn write_by_layer(
    snap: &Snapshot,
    targets: &Targets,
    only: &[String],
    md: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let shown = shown_targets(snap, targets, only);
    let rows: Vec<&Row> = FAMILY_ROWS.iter().collect();
    let labels: Vec<String> = rows.iter().map(|r| r.label.to_string()).collect();
    let cols: Vec<Column> = shown
        .iter()
        .map(|(t, served)| {
            let cells = rows
                .iter()
                .map(|r| cell(snap.families.get(r.key).and_then(|m| m.get(t)).copied().unwrap_or(0)))
                .collect();
            Column::target_counts(&target_label(t, served), cells)
        })
        .collect();
    writeln!(out, "{}", render_blocks(Column::left("layer", labels, None), cols, md, style))?;
    Ok(())
}

/// Libraries down (grouped under their install), targets across, one mark per cell: which
/// library lacks which target.
fn write_by_library(
    snap: &Snapshot,
    targets: &Targets,
    matrix: &[LibraryRow],
    only: &[String],
    md: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if matrix.is_empty() {
        writeln!(out, "No library with device code, Tensile files, MIOpen databases or firmware found.")?;
        return Ok(());
    }
    let (shown, folded) = library_targets(snap, targets, matrix, only);
    // One line per install, then its libraries, indented, with their marks.
    let mut labels: Vec<String> = Vec::new();
    let mut rows: Vec<Option<&LibraryRow>> = Vec::new();
    for (i, r) in matrix.iter().enumerate() {
        if i == 0 || matrix[i - 1].install != r.install {
            labels.push(r.install.path.clone());
            rows.push(None);
        }
        labels.push(format!("  {}", r.library));
        rows.push(Some(r));
    }
    let cols: Vec<Column> = shown
        .iter()
        .map(|t| {
            let marks = rows
                .iter()
                .map(|r| match r.map(|r| r.mark(t, targets)) {
                    None => "",
                    Some(Mark::Own) => "●",
                    Some(Mark::Generic) => "○",
                    Some(Mark::None) => "·",
                })
                .map(str::to_string)
                .collect();
            Column::target(t, marks)
        })
        .collect();
    writeln!(out, "{}", render_blocks(Column::left("library", labels, None), cols, md, style))?;
    writeln!(out)?;
    let li = if md { "- " } else { "" };
    let legend = "● code or data built for the target · ○ only its generic target's code · · nothing for it";
    writeln!(out, "{}", wrap(legend, li, "  ", style.width))?;
    if !folded.is_empty() {
        let line = format!("Only the runtime's own code (--only names them): {}.", folded.join(", "));
        writeln!(out, "{}", wrap(&line, li, "  ", style.width))?;
    }
    Ok(())
}

/// How many paths a finding lists before "and N more".
const FINDING_PATHS: usize = 2;

/// One line saying how many findings the default view tells.
fn write_findings_count(snap: &Snapshot, out: &mut dyn Write, style: Style) -> std::io::Result<()> {
    let n = snap.findings.iter().filter(|f| f.kind != crate::model::FindingKind::NameLies).count();
    if n == 0 {
        return Ok(());
    }
    let line = format!(
        "{}: `gfxscan scan` without --by tells {}, `--format json` lists every path.",
        crate::vocab::units::count(n as u64, "finding"),
        if n == 1 { "it" } else { "them" }
    );
    writeln!(out)?;
    writeln!(out, "{}", wrap(&line, "", "  ", style.width))
}

/// Ways the install is broken as shipped (names that lie follow in their own section).
pub fn write_findings(snap: &Snapshot, out: &mut dyn Write, md: bool, style: Style) -> std::io::Result<()> {
    let shown: Vec<&crate::model::Finding> =
        snap.findings.iter().filter(|f| f.kind != crate::model::FindingKind::NameLies).collect();
    if shown.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let h = if md { "### " } else { "" };
    writeln!(out, "{h}Findings: broken as shipped ({}):", shown.len())?;
    for f in shown {
        let kind = super::json_word(f.kind);
        let library = f.library.display(&snap.roots);
        let head = format!("{kind}: {library}");
        let head = style.width.map_or(head.clone(), |w| shorten_middle(&head, w.saturating_sub(2)));
        writeln!(out, "{}{head}", if md { "- " } else { "  " })?;
        let indent = if md { "  " } else { "      " };
        writeln!(out, "{}", wrap(&f.why, indent, indent, style.width))?;
        // Files beside the library are named alone: the line above says where they are.
        let folder = match library.ends_with('/') {
            true => library.clone(),
            false => RelPath::folder(f.library.root, f.library.dir()).display(&snap.roots),
        };
        for p in f.paths.iter().filter(|p| **p != f.library).take(FINDING_PATHS) {
            let shown = p.display(&snap.roots);
            let shown = shown.strip_prefix(folder.as_str()).unwrap_or(&shown);
            let shown = style.width.map_or(shown.to_string(), |w| shorten_middle(shown, w.saturating_sub(6)));
            writeln!(out, "{}{shown}", if md { "  - " } else { "      " })?;
        }
        let more = f.paths.iter().filter(|p| **p != f.library).count().saturating_sub(FINDING_PATHS);
        if more > 0 {
            writeln!(out, "{}… and {more} more", if md { "  - " } else { "      " })?;
        }
    }
    Ok(())
}

/// Files and links whose name claims a target their content does not serve.
pub fn write_mismatches(snap: &Snapshot, out: &mut dyn Write, md: bool, style: Style) -> std::io::Result<()> {
    if snap.mismatches.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}Names that lie ({}):", if md { "### " } else { "" }, snap.mismatches.len())?;
    for m in &snap.mismatches {
        let via = m.via_link.as_ref().map(|v| format!(" (a link to {v})")).unwrap_or_default();
        let line = format!(
            "{}{via}: named for {}, but serves {}",
            m.path.display(&snap.roots),
            m.name_target,
            m.content_targets.join(", ")
        );
        writeln!(out, "{}", wrap(&line, if md { "- " } else { "  " }, "    ", style.width))?;
    }
    Ok(())
}

/// Everything that could not be read, with its path.
pub fn write_problems(snap: &Snapshot, out: &mut dyn Write, md: bool) -> std::io::Result<()> {
    if snap.problems.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}Problems ({}):", if md { "### " } else { "" }, snap.problems.len())?;
    for p in &snap.problems {
        writeln!(out, "{}{}: {}", if md { "- " } else { "  " }, p.path.display(&snap.roots), p.message)?;
    }
    Ok(())
}
