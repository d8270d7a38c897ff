//! `diff` for people, most important first. By default in one screen: both sides, the verdict,
//! each library's losses on a line, the gains and files counted. With `--verbose` everything: a
//! summary per target (libraries lost and gained) and per library (targets lost and gained),
//! the target × layer pivot (old → new), target-ID changes, code objects per library, files.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use comfy_table::Color;

use crate::cli::OutputFormat;
use crate::diff::{Coverage, DiffOutcome, SnapshotDiff, UnitChange};
use crate::vocab::targets::Targets;
use crate::vocab::units::{count, human_bytes, thousands};

use super::style::{paint, wrap, Style};
use super::table::{render_blocks, Column};
use super::write_json;
use crate::aggregate::layers;

/// How many items a list shows before "and N more" (without `--verbose`).
const CAP: usize = 8;

/// How a diff is laid out for its reader.
#[derive(Clone, Copy)]
struct Layout {
    h: &'static str,
    li: &'static str,
    md: bool,
    verbose: bool,
    style: Style,
}

/// `items` joined, cut after [`CAP`] with "and N more" unless verbose.
fn capped(items: &[String], verbose: bool) -> String {
    if verbose || items.len() <= CAP {
        return items.join(", ");
    }
    format!("{} and {} more", items[..CAP].join(", "), thousands((items.len() - CAP) as u64))
}

fn signed(old: u64, new: u64) -> String {
    match new.cmp(&old) {
        std::cmp::Ordering::Equal => "=".to_string(),
        std::cmp::Ordering::Greater => format!("+{}", thousands(new - old)),
        std::cmp::Ordering::Less => format!("-{}", thousands(old - new)),
    }
}

/// Writes a diff as text, Markdown or JSON (the HTML page is `html`'s).
pub fn write_diff_text(
    d: &SnapshotDiff,
    targets: &Targets,
    format: OutputFormat,
    verbose: bool,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if format == OutputFormat::Json {
        return write_json(out, d);
    }
    let md = format == OutputFormat::Markdown;
    // Markdown is pasted, not shown: no width, no escapes.
    let style = if md { Style { color: false, width: None } } else { style };
    let l = if md {
        Layout { h: "### ", li: "- ", md, verbose, style }
    } else {
        Layout { h: "", li: "  ", md, verbose, style }
    };
    write_sides(d, l, out)?;
    if d.is_empty() {
        writeln!(out)?;
        writeln!(out, "No differences.")?;
        return Ok(());
    }
    if !verbose {
        return Ok(write_short(d, l, out)?);
    }
    write_by_target(d, targets, l, out)?;
    // A side read in part proves no loss: what it lacks may only be unread.
    let lost_title = if d.outcome == DiffOutcome::Incomplete {
        "Targets not found on a side read in part (unconfirmed losses)"
    } else {
        "Targets lost"
    };
    write_coverage(lost_title, &d.losses, "lost", l, out)?;
    write_coverage("Targets gained", &d.gains, "gained", l, out)?;
    write_pivot(d, targets, l, out)?;
    write_id_changes(d, l, out)?;
    write_libraries(d, l, out)?;
    write_files(d, l, out)?;
    Ok(())
}

/// How many losses the short form lists before "and N more libraries".
const SHORT_LOSSES: usize = 14;

/// The processors a list of coverage changes names, each once.
fn processors_in(list: &[Coverage]) -> usize {
    let all: BTreeSet<&str> =
        list.iter().flat_map(|c| &c.targets).map(|t| t.split(':').next().unwrap_or(t)).collect();
    all.len()
}

/// The verdict line: what the diff's outcome says, with how many targets and libraries.
fn verdict_line(d: &SnapshotDiff) -> String {
    let side = |list: &[Coverage], verb: &str| {
        format!(
            "{} {verb} code in {}",
            count(processors_in(list) as u64, "target"),
            count(list.len() as u64, "library")
        )
    };
    let gained = (!d.gains.is_empty()).then(|| side(&d.gains, "gained"));
    match d.outcome {
        DiffOutcome::Loss => {
            let mut s = format!("LOSS: {}", side(&d.losses, "lost"));
            if let Some(g) = gained {
                s.push_str(&format!("; {g}"));
            }
            s
        }
        DiffOutcome::Incomplete => format!(
            "INCOMPLETE: {} not found on a side read in part (unconfirmed losses)",
            count(processors_in(&d.losses) as u64, "target")
        ),
        _ => match gained {
            Some(g) => format!("CHANGED: no target lost code; {g}"),
            None => "CHANGED: no target lost or gained code".to_string(),
        },
    }
}

/// A loss on one line of `width`: the library, then as many of its targets as fit, and how
/// many more.
fn loss_line(c: &Coverage, width: Option<usize>) -> String {
    let head = format!("{}{}: ", c.library, unit_change_words(c.how));
    let listed = listed_targets(c, true);
    let Some(width) = width else { return format!("{head}{}", capped(&listed, false)) };
    let mut shown = 0;
    loop {
        let rest = listed.len() - shown;
        let tail = if rest > 0 { format!(" … and {rest} more") } else { String::new() };
        let line = format!("{head}{}{tail}", listed[..shown].join(", "));
        let next = shown < listed.len() && {
            let more = listed.len() - shown - 1;
            let tail = if more > 0 { format!(" … and {more} more") } else { String::new() };
            let wider = format!("{head}{}{tail}", listed[..=shown].join(", "));
            wider.chars().count() + 2 <= width
        };
        if !next {
            return line;
        }
        shown += 1;
    }
}

/// The short form: the verdict, each loss on a line, the gains and the files counted, and what
/// `--verbose` adds.
fn write_short(d: &SnapshotDiff, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    let color = match d.outcome {
        DiffOutcome::Loss => Some(Color::Red),
        DiffOutcome::Incomplete => Some(Color::Yellow),
        _ => None,
    };
    let verdict = wrap(&verdict_line(d), "", "  ", l.style.width);
    writeln!(out, "{}", color.map_or_else(|| verdict.clone(), |c| paint(&verdict, c, l.style.color)))?;
    if !d.losses.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}Lost, per library ({}):", l.h, d.losses.len())?;
        for c in d.losses.iter().take(SHORT_LOSSES) {
            writeln!(out, "{}{}", l.li, paint(&loss_line(c, l.style.width), Color::Red, l.style.color))?;
        }
        if d.losses.len() > SHORT_LOSSES {
            let more = count((d.losses.len() - SHORT_LOSSES) as u64, "library");
            writeln!(out, "{}… and {more} more", l.li)?;
        }
    }
    writeln!(out)?;
    if !d.gains.is_empty() {
        let each: Vec<String> =
            d.gains.iter().map(|c| format!("{} ({})", c.library, c.targets.len())).collect();
        let line = format!("Gained, per library (targets): {}", each.join(", "));
        writeln!(out, "{}", wrap(&line, l.li.trim_end(), "  ", l.style.width))?;
    }
    let id_changes = match d.target_id_changes.len() {
        0 => String::new(),
        n => format!("; {}", count(n as u64, "target-ID change")),
    };
    writeln!(out, "{}{}{id_changes}", l.li.trim_end(), files_line(d))?;
    let hint = "--verbose: per target, per layer (old → new), code objects per library and every file.";
    writeln!(out, "{}", wrap(hint, "", "  ", l.style.width))
}

/// Both sides: roots, whether scanned or read from a snapshot, files and code objects.
pub fn sides(d: &SnapshotDiff) -> String {
    let side = |s: &crate::diff::Side| {
        format!(
            "{} ({}, {}, {})",
            s.roots.join(", "),
            match s.source {
                crate::diff::SideSource::Scan => "scan",
                crate::diff::SideSource::Snapshot => "snapshot",
            },
            count(s.files, "file"),
            count(s.code_objects, "code object")
        )
    };
    format!("{} → {}", side(&d.old), side(&d.new))
}

/// The diff's first lines: both sides, filters, the targets compared, each side's problems.
fn write_sides(d: &SnapshotDiff, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", wrap(&format!("gfxscan diff · {}", sides(d)), "", "  ", l.style.width))?;
    for (name, s) in [("old", &d.old), ("new", &d.new)] {
        for i in &s.images {
            let platform = i.platform.as_deref().map(|p| format!(" · {p}")).unwrap_or_default();
            let line = format!("{name} image: {}{platform}", i.digest);
            writeln!(out, "{}", wrap(&super::safe::shown(&line), "", "  ", l.style.width))?;
        }
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
    if let Some(o) = &d.only {
        writeln!(out, "Only targets {} (--only).", o.join(", "))?;
    }
    for (name, s) in [("old", &d.old), ("new", &d.new)] {
        if s.problems.is_empty() {
            continue;
        }
        writeln!(out)?;
        let n = s.problems.len() as u64;
        writeln!(out, "{}The {name} side could not be read in full ({}):", l.h, count(n, "problem"))?;
        for p in &s.problems {
            writeln!(out, "{}{}: {}", l.li, p.path, p.message)?;
        }
    }
    if d.outcome == DiffOutcome::Incomplete {
        writeln!(out)?;
        writeln!(out, "INCOMPLETE: what follows compares only what could be read; a target listed as lost may only be unread.")?;
    }
    Ok(())
}

/// Per target (by processor): the libraries it lost and gained, natural order.
fn per_target(d: &SnapshotDiff, targets: &Targets) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut by: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    for (list, lost) in [(&d.losses, true), (&d.gains, false)] {
        for c in list {
            for t in &c.targets {
                let p = t.split(':').next().unwrap_or(t).to_string();
                let slot = by.entry(p).or_default();
                if lost { &mut slot.0 } else { &mut slot.1 }.insert(c.library.clone());
            }
        }
    }
    let mut names: Vec<String> = by.keys().cloned().collect();
    targets.sort(&mut names);
    names
        .into_iter()
        .map(|n| {
            let (lost, gained) = by.remove(&n).unwrap_or_default();
            (n, lost.into_iter().collect(), gained.into_iter().collect())
        })
        .collect()
}

/// Targets with the same losses and gains, together: (targets, libraries lost, libraries
/// gained), in the natural order of each group's first target. The text and the HTML page both
/// show these groups.
pub fn target_groups(d: &SnapshotDiff, targets: &Targets) -> Vec<(Vec<String>, Vec<String>, Vec<String>)> {
    let mut groups: Vec<(Vec<String>, Vec<String>, Vec<String>)> = Vec::new();
    for (t, lost, gained) in per_target(d, targets) {
        match groups.iter_mut().find(|(_, l2, g2)| *l2 == lost && *g2 == gained) {
            Some((ts, _, _)) => ts.push(t),
            None => groups.push((vec![t], lost, gained)),
        }
    }
    groups
}

/// What a unit's presence on both sides adds to its name: " (nothing of it left)", " (nothing
/// of it before)", or nothing.
pub fn unit_change_words(how: UnitChange) -> &'static str {
    match how {
        UnitChange::Gone => " (nothing of it left)",
        UnitChange::New => " (nothing of it before)",
        UnitChange::Changed => "",
    }
}

/// A coverage change's targets as listed: each with the generic target that served it before
/// (a loss) or serves it now (a gain).
pub fn listed_targets(c: &Coverage, lost: bool) -> Vec<String> {
    c.targets
        .iter()
        .map(|t| match c.via_generic.get(t) {
            Some(g) if lost => format!("{t} (was served by {g})"),
            Some(g) => format!("{t} (served by {g})"),
            None => t.clone(),
        })
        .collect()
}

/// The summary per target: one line each, losses first and in red.
fn write_by_target(d: &SnapshotDiff, targets: &Targets, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    // Targets with the same losses and gains share a line.
    let groups = target_groups(d, targets);
    if groups.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}Per target ({} in {}):",
        l.h,
        groups.iter().map(|g| g.0.len()).sum::<usize>(),
        count(groups.len() as u64, "group")
    )?;
    for (ts, lost, gained) in groups {
        let t = ts.join(", ");
        let mut parts = Vec::new();
        if !lost.is_empty() {
            let text =
                format!("lost in {}: {}", count(lost.len() as u64, "library"), capped(&lost, l.verbose));
            parts.push(paint(&text, Color::Red, l.style.color));
        }
        if !gained.is_empty() {
            let text = format!(
                "gained in {}: {}",
                count(gained.len() as u64, "library"),
                capped(&gained, l.verbose)
            );
            parts.push(paint(&text, Color::Green, l.style.color));
        }
        let line = format!("{t}: {}", parts.join("; "));
        writeln!(out, "{}", wrap(&line, l.li, "      ", l.style.width))?;
    }
    Ok(())
}

/// Losses or gains of device code, one line per library, its targets capped.
fn write_coverage(
    title: &str,
    list: &[Coverage],
    verb: &str,
    l: Layout,
    out: &mut dyn Write,
) -> io::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}{title}, per library ({}):", l.h, list.len())?;
    for c in list {
        let whole = unit_change_words(c.how);
        let listed = listed_targets(c, verb == "lost");
        let line = format!("{}{whole}: {verb} {}", c.library, capped(&listed, l.verbose));
        writeln!(out, "{}", wrap(&line, l.li, "      ", l.style.width))?;
    }
    Ok(())
}

/// Targets down, layers across, `old → new` per cell: one row per target with a change.
fn write_pivot(d: &SnapshotDiff, targets: &Targets, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    if !d.counts.iter().any(|c| c.old != c.new) {
        return Ok(());
    }
    let all = layers();
    let cells = super::views::layer_changes(d);
    let rows = super::views::changed_targets(&cells, targets);
    let used: BTreeSet<usize> = cells.keys().map(|(_, i)| *i).collect();
    let cols: Vec<Column> = used
        .iter()
        .map(|&i| {
            let texts = rows
                .iter()
                .map(|t| match cells.get(&(t.clone(), i)) {
                    None | Some((0, 0)) => "—".to_string(),
                    Some((a, b)) if a == b => thousands(*a),
                    Some((a, b)) => format!("{} → {}", thousands(*a), thousands(*b)),
                })
                .collect();
            Column::right(all[i].header, texts, None)
        })
        .collect();
    writeln!(out)?;
    writeln!(out, "{}Per target and layer (old → new; one number: unchanged):", l.h)?;
    writeln!(out, "{}", render_blocks(Column::left("target", rows, None), cols, l.md, l.style))?;
    Ok(())
}

/// Target-ID changes, capped.
fn write_id_changes(d: &SnapshotDiff, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    if d.target_id_changes.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}Target-ID changes (a device loses its code only if listed under lost) ({}):",
        l.h,
        d.target_id_changes.len()
    )?;
    let lines: Vec<String> = d
        .target_id_changes
        .iter()
        .map(|c| format!("{}: {} → {}", c.library, c.old.join(", "), c.new.join(", ")))
        .collect();
    write_capped_lines(&lines, false, l, out)
}

/// Lines, one per item, the rest counted after [`CAP`] unless verbose. Lines that start with
/// a path are not wrapped: a path is one word, and a copied line must stay whole.
fn write_capped_lines(lines: &[String], paths: bool, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    let shown = if l.verbose { lines.len() } else { lines.len().min(CAP) };
    for line in &lines[..shown] {
        match paths {
            true => writeln!(out, "{}{line}", l.li)?,
            false => writeln!(out, "{}", wrap(line, l.li, "      ", l.style.width))?,
        }
    }
    if shown < lines.len() {
        writeln!(out, "{}… and {} more", l.li, thousands((lines.len() - shown) as u64))?;
    }
    Ok(())
}

/// Code objects (per version) and bundles per library.
fn write_libraries(d: &SnapshotDiff, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    if d.libraries.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}Code objects per library ({}):", l.h, d.libraries.len())?;
    let lines: Vec<String> = d
        .libraries
        .iter()
        .map(|lib| {
            let versions: BTreeSet<&String> =
                lib.old_code_objects.keys().chain(lib.new_code_objects.keys()).collect();
            let mut parts: Vec<String> = versions
                .into_iter()
                .map(|v| {
                    let a = lib.old_code_objects.get(v).copied().unwrap_or(0);
                    let b = lib.new_code_objects.get(v).copied().unwrap_or(0);
                    format!("{v} {} → {} ({})", thousands(a), thousands(b), signed(a, b))
                })
                .collect();
            if lib.old_bundles != lib.new_bundles {
                let (a, b) = (lib.old_bundles, lib.new_bundles);
                parts.push(format!("bundles {} → {} ({})", thousands(a), thousands(b), signed(a, b)));
            }
            format!("{}: {}", lib.library, parts.join(", "))
        })
        .collect();
    write_capped_lines(&lines, false, l, out)
}

/// How many files were added, removed and changed.
pub fn files_line(d: &SnapshotDiff) -> String {
    format!(
        "Files: {} added, {} removed, {} changed",
        thousands(d.files_added.len() as u64),
        thousands(d.files_removed.len() as u64),
        thousands(d.files_changed.len() as u64)
    )
}

/// Files removed, added and changed, each with what changed.
fn write_files(d: &SnapshotDiff, l: Layout, out: &mut dyn Write) -> io::Result<()> {
    let (added, removed, changed) = (&d.files_added, &d.files_removed, &d.files_changed);
    if added.len() + removed.len() + changed.len() == 0 {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}{}", l.h, files_line(d))?;
    let only = |mark: &str, f: &crate::diff::FileOnly| {
        let targets =
            if f.targets.is_empty() { String::new() } else { format!(", {}", f.targets.join(", ")) };
        format!("{mark} {} ({}{targets})", f.path, human_bytes(f.size))
    };
    let mut lines: Vec<String> = removed.iter().map(|f| only("-", f)).collect();
    lines.extend(added.iter().map(|f| only("+", f)));
    lines.extend(changed.iter().map(|f| {
        let mut what = Vec::new();
        if f.old_size != f.new_size {
            what.push(format!("size {} → {}", human_bytes(f.old_size), human_bytes(f.new_size)));
        }
        if f.old_code_objects != f.new_code_objects {
            what.push(format!(
                "code objects {} → {}",
                thousands(f.old_code_objects as u64),
                thousands(f.new_code_objects as u64)
            ));
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
        format!("~ {path}: {}", what.join("; "))
    }));
    write_capped_lines(&lines, true, l, out)
}
