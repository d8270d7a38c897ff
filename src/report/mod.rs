//! Reports: snapshots and tables to bytes. With `main`, the only code that prints.
//!
//! Each writer is a function of the data and a `Write`; nothing here reads files or decides
//! anything about the scan. Progress bars and live warnings (`progress`) go to stderr, and only
//! when stderr is a terminal.

pub mod output;
pub mod progress;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use comfy_table::presets::{ASCII_MARKDOWN, NOTHING};
use comfy_table::{CellAlignment, Table};

use crate::check::{CheckReport, Outcome, Status};
use crate::cli::OutputFormat;
use crate::diff::{DiffOutcome, SnapshotDiff};
use crate::families::FAMILY_ROWS;
use crate::model::{Snapshot, TargetCounts};
use crate::vocab::targets::Targets;
use crate::vocab::units::{human_bytes, thousands};

/// Writes one pretty-printed JSON document and a newline. Serialized first, then written, so a
/// closed pipe stays an `io::Error` the binary recognises.
fn write_json(out: &mut dyn Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    out.write_all(&text)?;
    Ok(())
}

/// Right-aligns the table's numeric columns.
fn align_right(t: &mut Table, columns: std::ops::Range<usize>) {
    for i in columns {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// The per-target rows to show, in `targets.toml` order (unknown processors last): the
/// `only` targets, zeros included, or else every target found. Each listed target whose code
/// here is only its generic target's brings that generic target's row along, named in the
/// returned map (`gfx1151` → `gfx11-generic`).
pub fn target_rows(
    snap: &Snapshot,
    targets: &Targets,
    only: &[String],
) -> (Vec<(String, TargetCounts)>, BTreeMap<String, String>) {
    let mut names: Vec<String> =
        if only.is_empty() { snap.targets.keys().cloned().collect() } else { only.to_vec() };
    let via = if only.is_empty() { BTreeMap::new() } else { generic_servers(snap, targets, only) };
    names.extend(via.values().cloned());
    names.sort_by_key(|n| (targets.rank(n), n.clone()));
    names.dedup();
    let rows = names
        .into_iter()
        .map(|n| {
            let counts = snap.targets.get(&n).cloned().unwrap_or_default();
            (n, counts)
        })
        .collect();
    (rows, via)
}

/// For each chosen target whose generic target has code here, that generic target: the
/// runtime loads it where no code built for the target itself is present.
fn generic_servers(snap: &Snapshot, targets: &Targets, chosen: &[String]) -> BTreeMap<String, String> {
    chosen
        .iter()
        .filter_map(|t| {
            let g = targets.by_name(t)?.generic.clone()?;
            snap.targets.get(&g).filter(|c| c.code_objects > 0)?;
            Some((t.clone(), g))
        })
        .collect()
}

/// The header line of a scan report.
fn headline(snap: &Snapshot) -> String {
    let s = &snap.summary;
    // Archives read as trees: the format of a single one, else how many.
    let archives = match snap.archives.as_slice() {
        [] => String::new(),
        [one] => format!(" ({})", one.format),
        many => format!(" ({} archives)", thousands(many.len() as u64)),
    };
    format!(
        "gfxscan {} · {} root{}{} · {} file{} ({}) · {} with device code · {} code object{} · {} problem{}",
        snap.tool.version,
        snap.roots.len(),
        if snap.roots.len() == 1 { "" } else { "s" },
        archives,
        thousands(s.files),
        if s.files == 1 { "" } else { "s" },
        human_bytes(s.bytes),
        thousands(s.files_with_device_code),
        thousands(s.code_objects),
        if s.code_objects == 1 { "" } else { "s" },
        thousands(snap.problems.len() as u64),
        if snap.problems.len() == 1 { "" } else { "s" },
    )
}

const COLUMNS: [&str; 5] = ["target", "code objects", "kernels", "device code", "files"];

fn table_of(rows: &[(String, TargetCounts)], markdown: bool) -> Table {
    let mut t = Table::new();
    t.load_preset(if markdown { ASCII_MARKDOWN } else { NOTHING });
    t.set_header(COLUMNS.map(|c| if markdown { c.to_string() } else { c.to_uppercase() }));
    for (name, c) in rows {
        t.add_row(vec![
            name.clone(),
            thousands(c.code_objects),
            thousands(c.kernels),
            human_bytes(c.bytes),
            thousands(c.files),
        ]);
    }
    align_right(&mut t, 1..COLUMNS.len());
    t
}

fn write_problems(snap: &Snapshot, out: &mut dyn Write, markdown: bool) -> io::Result<()> {
    if snap.problems.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}Problems ({}):", if markdown { "### " } else { "" }, snap.problems.len())?;
    for p in &snap.problems {
        writeln!(
            out,
            "{}{}: {}",
            if markdown { "- " } else { "  " },
            p.path.display(&snap.roots),
            p.message
        )?;
    }
    Ok(())
}

/// Writes a scan result in the chosen format.
pub fn write_scan(
    snap: &Snapshot,
    targets: &Targets,
    only: &[String],
    format: OutputFormat,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let (rows, via) = target_rows(snap, targets, only);
    let label = |name: &str| -> String {
        let served: Vec<&str> = via.iter().filter(|(_, g)| *g == name).map(|(t, _)| t.as_str()).collect();
        if served.is_empty() {
            name.to_string()
        } else {
            format!("{name} (generic; serves {})", served.join(", "))
        }
    };
    match format {
        OutputFormat::Json => {
            let mut view = snap.clone();
            if !only.is_empty() {
                view.targets = rows.into_iter().collect();
                view.filtered_to = Some(only.to_vec());
                view.via_generic = via;
            }
            // Serialized first, then written: a closed pipe stays an io::Error the binary knows.
            write_json(out, &view)?;
        }
        OutputFormat::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(["target", "code_objects", "kernels", "bytes", "files"])?;
            for (name, c) in &rows {
                w.write_record([
                    label(name),
                    c.code_objects.to_string(),
                    c.kernels.to_string(),
                    c.bytes.to_string(),
                    c.files.to_string(),
                ])?;
            }
            out.write_all(&w.into_inner().map_err(|e| e.into_error())?)?;
        }
        OutputFormat::Table | OutputFormat::Markdown => {
            let md = format == OutputFormat::Markdown;
            writeln!(out, "{}", headline(snap))?;
            writeln!(out)?;
            if rows.is_empty() {
                writeln!(out, "No AMDGPU code objects found.")?;
            } else {
                let shown: Vec<(String, TargetCounts)> =
                    rows.iter().map(|(n, c)| (label(n), c.clone())).collect();
                writeln!(out, "{}", table_of(&shown, md))?;
                for (t, g) in &via {
                    let own = snap.targets.get(t).map_or(0, |c| c.code_objects);
                    let what = if own == 0 {
                        "no code built for it here"
                    } else {
                        "where no code built for it is present"
                    };
                    writeln!(out, "{t}: {what}; served by {g} code (the runtime loads generic code when a library has no code for the target itself)")?;
                }
            }
            write_mismatches(snap, out, md)?;
            write_problems(snap, out, md)?;
        }
    }
    Ok(())
}

/// The targets of a comparison: those chosen, else every target any family holds; in
/// targets.toml order.
pub fn compare_targets(snap: &Snapshot, targets: &Targets, chosen: &[String]) -> Vec<String> {
    let mut names: Vec<String> = if chosen.is_empty() {
        snap.families.values().flat_map(|m| m.keys().cloned()).collect()
    } else {
        chosen.to_vec()
    };
    names.sort_by_key(|n| (targets.rank(n), n.clone()));
    names.dedup();
    names
}

/// Writes the comparison view: artifact families down, targets across.
pub fn write_compare(
    snap: &Snapshot,
    targets: &Targets,
    chosen: &[String],
    format: OutputFormat,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let cols = compare_targets(snap, targets, chosen);
    let via = if chosen.is_empty() { BTreeMap::new() } else { generic_servers(snap, targets, chosen) };
    let count = |row: &str, t: &str| snap.families.get(row).and_then(|m| m.get(t)).copied().unwrap_or(0);
    // A cell without code built for its target shows what its generic target holds, marked.
    let cell = |row: &str, t: &str| match (count(row, t), via.get(t).map(|g| (g, count(row, g)))) {
        (0, Some((g, n))) if n > 0 => format!("via {g}: {}", thousands(n)),
        (own, Some((g, n))) if n > 0 => format!("{} (+{} via {g})", thousands(own), thousands(n)),
        (0, _) => "—".to_string(),
        (n, _) => thousands(n),
    };
    match format {
        OutputFormat::Json => {
            let mut view = snap.clone();
            let mut shown = cols.clone();
            shown.extend(via.values().cloned());
            view.families = FAMILY_ROWS
                .iter()
                .map(|(row, _)| (row.to_string(), shown.iter().map(|t| (t.clone(), count(row, t))).collect()))
                .collect();
            if !chosen.is_empty() {
                view.filtered_to = Some(cols.clone());
                view.via_generic = via.clone();
            }
            write_json(out, &view)?;
        }
        OutputFormat::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(std::iter::once("family".to_string()).chain(cols.iter().cloned()))?;
            for (row, _) in FAMILY_ROWS.iter() {
                w.write_record(
                    std::iter::once(row.to_string()).chain(cols.iter().map(|t| count(row, t).to_string())),
                )?;
            }
            out.write_all(&w.into_inner().map_err(|e| e.into_error())?)?;
        }
        OutputFormat::Table | OutputFormat::Markdown => {
            let md = format == OutputFormat::Markdown;
            writeln!(out, "{}", headline(snap))?;
            writeln!(out)?;
            let mut t = Table::new();
            t.load_preset(if md { ASCII_MARKDOWN } else { NOTHING });
            t.set_header(
                std::iter::once(if md { "artifact".to_string() } else { "ARTIFACT".to_string() })
                    .chain(cols.iter().cloned()),
            );
            for (row, label) in FAMILY_ROWS.iter() {
                let cells = cols.iter().map(|c| cell(row, c));
                t.add_row(std::iter::once(label.to_string()).chain(cells));
            }
            align_right(&mut t, 1..cols.len() + 1);
            writeln!(out, "{t}")?;
            write_mismatches(snap, out, md)?;
            write_problems(snap, out, md)?;
        }
    }
    Ok(())
}

fn write_mismatches(snap: &Snapshot, out: &mut dyn Write, markdown: bool) -> io::Result<()> {
    if snap.mismatches.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}Names that lie ({}):", if markdown { "### " } else { "" }, snap.mismatches.len())?;
    for m in &snap.mismatches {
        let via = m.via_link.as_ref().map(|v| format!(" (a link to {v})")).unwrap_or_default();
        writeln!(
            out,
            "{}{}{via}: named for {}, but serves {}",
            if markdown { "- " } else { "  " },
            m.path.display(&snap.roots),
            m.name_target,
            m.content_targets.join(", ")
        )?;
    }
    Ok(())
}

/// Writes one GPU's verdicts in one install.
fn write_gpu(gpu: &crate::check::GpuReport, md: bool, out: &mut dyn Write) -> io::Result<()> {
    let d = &gpu.device;
    let origin = match d.node {
        Some(n) => format!("KFD node {n}"),
        None => "--gpu".to_string(),
    };
    let target = match &d.r#override {
        Some(o) => format!(
            "{} → checked as {} ({}={})",
            d.native.target_id, d.effective.target_id, o.variable, o.value
        ),
        None => d.native.target_id.clone(),
    };
    writeln!(
        out,
        "{}GPU {} · {origin} · {target} · {}",
        if md { "#### " } else { "" },
        d.index,
        gpu.status().word()
    )?;
    writeln!(out)?;
    let mut t = Table::new();
    t.load_preset(if md { ASCII_MARKDOWN } else { NOTHING });
    t.set_header(if md { ["library", "status", "detail"] } else { ["LIBRARY", "STATUS", "DETAIL"] });
    for v in &gpu.verdicts {
        let mut detail = v.detail.clone();
        if let Some(c) = &v.consequence {
            detail.push_str(&format!(": {c}"));
        }
        // A Tensile verdict's detail already says what its indexes and code files serve.
        if !v.available.is_empty()
            && v.kind != crate::check::LibraryKind::Family(crate::model::Family::Tensile)
        {
            detail.push_str(&format!(" — has {}", v.available.join(", ")));
        }
        if let Some(l) = &v.loads {
            if v.status == Status::Ok {
                detail.push_str(&format!(" — loads {l}"));
            }
        }
        t.add_row(vec![v.library.clone(), v.status.word().to_string(), detail]);
    }
    writeln!(out, "{t}")?;
    for h in &gpu.hints {
        writeln!(out, "{}hint: {h}", if md { "- " } else { "  " })?;
    }
    for w in &gpu.warnings {
        writeln!(out, "{}warning: {w}", if md { "- " } else { "  " })?;
    }
    writeln!(out)
}

/// Writes the verdicts of `gfxscan check`: per install, per GPU; then what was not checked,
/// the files that could not be read, and the overall outcome.
pub fn write_check(report: &CheckReport, format: OutputFormat, out: &mut dyn Write) -> anyhow::Result<()> {
    if format == OutputFormat::Json {
        write_json(out, report)?;
        return Ok(());
    }
    let md = format == OutputFormat::Markdown;
    let (h, li) = if md { ("### ", "- ") } else { ("", "  ") };
    for inst in &report.installs {
        let kind = serde_json::to_value(inst.install.kind).ok().and_then(|v| v.as_str().map(String::from));
        writeln!(
            out,
            "{h}Install {} ({}) · {}",
            inst.install.path,
            kind.unwrap_or_default(),
            inst.status.word()
        )?;
        writeln!(out)?;
        for gpu in &inst.gpus {
            write_gpu(gpu, md, out)?;
        }
    }
    for u in &report.unknown_gpus {
        writeln!(out, "{li}unknown GPU: {u}: not in the target table, not checked (update gfxscan, or pass --targets FILE)")?;
    }
    for n in &report.not_checked {
        writeln!(out, "{li}not checked: {n} (another install; name it as ROOT to check it)")?;
    }
    if !report.problems.is_empty() {
        writeln!(out)?;
        writeln!(out, "{h}Could not be read ({}):", report.problems.len())?;
        for p in &report.problems {
            writeln!(out, "{li}{}: {}", p.path.display(&report.roots), p.message)?;
        }
    }
    if !report.unknown_gpus.is_empty() || !report.not_checked.is_empty() || !report.problems.is_empty() {
        writeln!(out)?;
    }
    let gpus = report.devices.len();
    let installs = report.installs.len();
    let counted = format!(
        "{gpus} GPU{} checked in {installs} install{}",
        if gpus == 1 { "" } else { "s" },
        if installs == 1 { "" } else { "s" }
    );
    let line = match report.outcome {
        Outcome::Ok => format!("{counted} · OK: every required piece present"),
        Outcome::Missing => {
            let missing: Vec<String> = report
                .installs
                .iter()
                .flat_map(|i| {
                    i.gpus
                        .iter()
                        .filter(|g| g.status() == Status::Missing)
                        .map(move |g| format!("{} in {}", g.device.effective.target_id, i.install.path))
                })
                .collect();
            format!("{counted} · MISSING: code for {}", missing.join("; "))
        }
        Outcome::Incomplete => format!(
            "{counted} · INCOMPLETE: {}; no OK is given for what could not be read",
            match (report.problems.len(), report.unknown_gpus.len()) {
                (0, u) => format!("{u} GPU(s) not in the target table"),
                (p, 0) => format!("{p} file(s) could not be read (listed above)"),
                (p, u) => format!("{p} file(s) could not be read and {u} GPU(s) are not in the target table"),
            }
        ),
        Outcome::NothingToCheck => {
            format!("NOTHING TO CHECK: no library with device code under {}", report.roots.join(", "))
        }
    };
    writeln!(out, "{line}")?;
    Ok(())
}

fn signed(old: u64, new: u64) -> String {
    match new.cmp(&old) {
        std::cmp::Ordering::Equal => "[ = ]".to_string(),
        std::cmp::Ordering::Greater => format!("+{}", thousands(new - old)),
        std::cmp::Ordering::Less => format!("-{}", thousands(old - new)),
    }
}

/// Writes a diff, most important first: losses, gains, target-ID changes, counts, files.
pub fn write_diff(d: &SnapshotDiff, format: OutputFormat, out: &mut dyn Write) -> anyhow::Result<()> {
    if format == OutputFormat::Json {
        write_json(out, d)?;
        return Ok(());
    }
    let style = if format == OutputFormat::Markdown { DIFF_MARKDOWN } else { DIFF_TABLE };
    write_diff_sides(d, style, out)?;
    if d.is_empty() {
        writeln!(out)?;
        writeln!(out, "No differences.")?;
        return Ok(());
    }
    // A side read in part proves no loss: what it lacks may only be unread.
    let lost_title = if d.outcome == DiffOutcome::Incomplete {
        "Targets not found on a side read in part (unconfirmed losses)"
    } else {
        "Targets lost"
    };
    write_coverage(lost_title, &d.losses, "lost", style, out)?;
    write_coverage("Targets gained", &d.gains, "gained", style, out)?;
    write_diff_libraries(d, style, out)?;
    write_diff_counts(d, style, out)?;
    write_diff_files(d, style, out)?;
    Ok(())
}

/// How a diff is laid out: headings, list items, and whether tables are Markdown.
#[derive(Clone, Copy)]
struct DiffStyle {
    h: &'static str,
    li: &'static str,
    md: bool,
}

const DIFF_TABLE: DiffStyle = DiffStyle { h: "", li: "  ", md: false };
const DIFF_MARKDOWN: DiffStyle = DiffStyle { h: "### ", li: "- ", md: true };

/// The diff's first lines: both sides, filters, the targets compared, each side's problems.
fn write_diff_sides(d: &SnapshotDiff, st: DiffStyle, out: &mut dyn Write) -> io::Result<()> {
    let side = |s: &crate::diff::Side| {
        format!(
            "{} ({}, {}, {})",
            s.roots.join(", "),
            match s.source {
                crate::diff::SideSource::Scan => "scan",
                crate::diff::SideSource::Snapshot => "snapshot",
            },
            crate::vocab::units::count(s.files, "file"),
            crate::vocab::units::count(s.code_objects, "code object")
        )
    };
    writeln!(out, "gfxscan diff · {} → {}", side(&d.old), side(&d.new))?;
    for (name, s) in [("old", &d.old), ("new", &d.new)] {
        if let Some(f) = &s.filtered_to {
            writeln!(
                out,
                "The {name} side was written with --only {}: its other targets are unknown.",
                f.join(",")
            )?;
        }
    }
    if let Some(t) = &d.compared_targets {
        let listed = if t.is_empty() { "none in common".to_string() } else { t.join(", ") };
        writeln!(out, "Compared targets: {listed}")?;
    }
    for (name, s) in [("old", &d.old), ("new", &d.new)] {
        if s.problems.is_empty() {
            continue;
        }
        writeln!(out)?;
        let n = s.problems.len();
        writeln!(
            out,
            "{}The {name} side could not be read in full ({n} problem{}):",
            st.h,
            if n == 1 { "" } else { "s" }
        )?;
        for p in &s.problems {
            writeln!(out, "{}{}: {}", st.li, p.path, p.message)?;
        }
    }
    if d.outcome == DiffOutcome::Incomplete {
        writeln!(out)?;
        writeln!(out, "INCOMPLETE: what follows compares only what could be read; a target listed as lost may only be unread.")?;
    }
    Ok(())
}

/// Losses or gains of device code, one line per library.
fn write_coverage(
    title: &str,
    list: &[crate::diff::Coverage],
    verb: &str,
    st: DiffStyle,
    out: &mut dyn Write,
) -> io::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}{title} ({}):", st.h, list.len())?;
    for c in list {
        let whole = match c.how {
            crate::diff::UnitChange::Gone => " (nothing of it left)",
            crate::diff::UnitChange::New => " (nothing of it before)",
            crate::diff::UnitChange::Changed => "",
        };
        let listed: Vec<String> = c
            .targets
            .iter()
            .map(|t| match c.via_generic.get(t) {
                Some(g) if verb == "lost" => format!("{t} (was served by {g})"),
                Some(g) => format!("{t} (served by {g})"),
                None => t.clone(),
            })
            .collect();
        writeln!(out, "{}{}{whole}: {verb} {}", st.li, c.library, listed.join(", "))?;
    }
    Ok(())
}

/// Target-ID changes, and code objects (per version) and bundles per library.
fn write_diff_libraries(d: &SnapshotDiff, st: DiffStyle, out: &mut dyn Write) -> io::Result<()> {
    if !d.target_id_changes.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{}Target-ID changes (a device loses its code only if listed under lost) ({}):",
            st.h,
            d.target_id_changes.len()
        )?;
        for c in &d.target_id_changes {
            writeln!(out, "{}{}: {} → {}", st.li, c.library, c.old.join(", "), c.new.join(", "))?;
        }
    }
    if d.libraries.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}Code objects per library ({}):", st.h, d.libraries.len())?;
    for l in &d.libraries {
        let versions: BTreeSet<&String> =
            l.old_code_objects.keys().chain(l.new_code_objects.keys()).collect();
        let mut parts: Vec<String> = versions
            .into_iter()
            .map(|v| {
                let a = l.old_code_objects.get(v).copied().unwrap_or(0);
                let b = l.new_code_objects.get(v).copied().unwrap_or(0);
                format!("{v} {a} → {b} ({})", signed(a, b))
            })
            .collect();
        if l.old_bundles != l.new_bundles {
            let (a, b) = (l.old_bundles, l.new_bundles);
            parts.push(format!("bundles {a} → {b} ({})", signed(a, b)));
        }
        writeln!(out, "{}{}: {}", st.li, l.library, parts.join(", "))?;
    }
    Ok(())
}

/// The table of counts per target and family, for targets with a change.
fn write_diff_counts(d: &SnapshotDiff, st: DiffStyle, out: &mut dyn Write) -> io::Result<()> {
    if !d.counts.iter().any(|c| c.old != c.new) {
        return Ok(());
    }
    writeln!(out)?;
    let mut t = Table::new();
    t.load_preset(if st.md { ASCII_MARKDOWN } else { NOTHING });
    t.set_header(if st.md {
        ["family", "target", "old", "new", "change"]
    } else {
        ["FAMILY", "TARGET", "OLD", "NEW", "CHANGE"]
    });
    for c in &d.counts {
        t.add_row(vec![
            c.family.clone(),
            c.target.clone(),
            thousands(c.old),
            thousands(c.new),
            signed(c.old, c.new),
        ]);
    }
    align_right(&mut t, 2..5);
    writeln!(out, "{}Per target and family (targets with a change; [ = ] unchanged):", st.h)?;
    writeln!(out, "{t}")
}

/// Files removed, added and changed, each with what changed.
fn write_diff_files(d: &SnapshotDiff, st: DiffStyle, out: &mut dyn Write) -> io::Result<()> {
    let (added, removed, changed) = (&d.files_added, &d.files_removed, &d.files_changed);
    if added.len() + removed.len() + changed.len() == 0 {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}Files: {} added, {} removed, {} changed",
        st.h,
        added.len(),
        removed.len(),
        changed.len()
    )?;
    for (mark, list) in [("-", removed), ("+", added)] {
        for f in list {
            writeln!(out, "{}{mark} {} ({}, {})", st.li, f.path, human_bytes(f.size), f.targets.join(", "))?;
        }
    }
    for f in changed {
        let mut what = Vec::new();
        if f.old_size != f.new_size {
            what.push(format!("size {} → {}", human_bytes(f.old_size), human_bytes(f.new_size)));
        }
        if f.old_code_objects != f.new_code_objects {
            what.push(format!("code objects {} → {}", f.old_code_objects, f.new_code_objects));
        }
        if f.old_targets != f.new_targets {
            what.push(format!("targets {} → {}", f.old_targets.len(), f.new_targets.len()));
        }
        if let Some((a, b)) = f.ucode {
            what.push(format!("ucode version {a} → {b}"));
        }
        if let Some((a, b)) = f.records {
            what.push(format!("records {} → {} ({})", thousands(a), thousands(b), signed(a, b)));
        }
        let path = if f.old_path == f.new_path {
            f.new_path.clone()
        } else {
            format!("{} → {}", f.old_path, f.new_path)
        };
        writeln!(out, "{}~ {path}: {}", st.li, what.join("; "))?;
    }
    Ok(())
}

/// Writes the target table: TOML-like lines for people, or JSON.
pub fn write_targets(targets: &Targets, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    if json {
        let list: Vec<_> = targets.iter().collect();
        write_json(out, &serde_json::json!({"origin": targets.origin, "targets": list}))?;
        return Ok(());
    }
    let mut t = Table::new();
    t.load_preset(NOTHING);
    t.set_header(["NAME", "MACH", "FAMILY", "GENERIC", "FEATURES", "KFD VERSION", "ISA-COMPATIBLE"]);
    for x in targets.iter() {
        t.add_row(vec![
            x.name.clone(),
            format!("{:#05x}", x.mach),
            x.family.clone(),
            x.generic.clone().unwrap_or_default(),
            x.features.join(","),
            x.gfx_target_version.map(|v| v.to_string()).unwrap_or_default(),
            x.isa_compatible.clone().unwrap_or_default(),
        ]);
    }
    writeln!(out, "{} targets from {}", targets.len(), targets.origin)?;
    writeln!(out, "{t}")?;
    Ok(())
}

/// A completion script for `shell`, generated from the command line's own definition.
pub fn write_completions(shell: clap_complete::Shell, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "gfxscan", out);
    Ok(())
}

/// The manual page (roff), generated from the command line's own definition.
pub fn write_man(out: &mut dyn Write) -> anyhow::Result<()> {
    let cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    clap_mangen::Man::new(cmd).render(out)?;
    Ok(())
}
