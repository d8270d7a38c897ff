//! What the views show, decided once for every format: the targets a table lists and in what
//! order, the generic targets beside them, targets whose only code is the runtime's own, the
//! people's product names, the headline. The text tables (`scan`) and the HTML page use it.

use std::collections::{BTreeMap, BTreeSet};

use crate::explain::{Explanation, Gate, InstallGates, Section};
use crate::library::matrix::LibraryRow;
use crate::model::Snapshot;
use crate::vocab::targets::Targets;
use crate::vocab::units::{count, human_bytes, thousands};

use crate::aggregate::layers;
pub use crate::aggregate::{runtime_only, RUNTIME_ROW};

/// The people's name of a target's first product, short (`Radeon RX 6700 XT` → `RX 6700 XT`).
pub fn product(targets: &Targets, name: &str) -> Option<String> {
    let p = targets.by_name(name)?.products.first()?;
    Some(p.strip_prefix("Radeon RX ").map_or_else(|| p.clone(), |rest| format!("RX {rest}")))
}

/// The targets the tables show: with `only`, those in the user's order, each followed by its
/// generic target when that has code here; else every target anything here is for, in the
/// natural order. Each generic row names the targets it serves.
pub fn shown_targets(snap: &Snapshot, targets: &Targets, only: &[String]) -> Vec<(String, Vec<String>)> {
    if only.is_empty() {
        let mut all: Vec<String> = crate::aggregate::targets_present(snap).into_iter().collect();
        targets.sort(&mut all);
        return all.into_iter().map(|t| (t, Vec::new())).collect();
    }
    let via = generic_servers(snap, targets, only);
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for t in only {
        if !out.iter().any(|(n, _)| n == t) {
            out.push((t.clone(), Vec::new()));
        }
        if let Some(g) = via.get(t) {
            match out.iter_mut().find(|(n, _)| n == g) {
                Some((_, served)) => served.push(t.clone()),
                None => out.push((g.clone(), vec![t.clone()])),
            }
        }
    }
    out
}

/// For each chosen target whose generic target has code here, that generic target: the
/// runtime loads it where no code built for the target itself is present.
pub fn generic_servers(snap: &Snapshot, targets: &Targets, chosen: &[String]) -> BTreeMap<String, String> {
    chosen
        .iter()
        .filter_map(|t| {
            let g = crate::vocab::runtime::generic_of(t, targets)?;
            snap.targets.get(g).filter(|c| c.code_objects > 0)?;
            Some((t.clone(), g.to_string()))
        })
        .collect()
}

/// The header line of a scan report.
pub fn headline(snap: &Snapshot) -> String {
    let s = &snap.summary;
    // Archives read as trees: the format of a single one, else how many.
    let archives = match snap.archives.as_slice() {
        [] => String::new(),
        [one] => format!(" ({})", one.format),
        many => format!(" ({} archives)", thousands(many.len() as u64)),
    };
    // Problems are files not read in full; findings are installs broken as shipped: the
    // header names both, so neither reads as the other's "0".
    let read = match snap.problems.len() as u64 {
        0 => "all read".to_string(),
        n => count(n, "problem"),
    };
    let findings = match snap.findings.len() as u64 {
        0 => String::new(),
        n => format!(" · {}", count(n, "finding")),
    };
    // Counted, never problems: what the walk skipped or went outside the roots for.
    let skipped = match s.special_files {
        0 => String::new(),
        n => format!(" · {} skipped", count(n, "special file")),
    };
    let left = match snap.links_out_of_root.len() as u64 {
        0 => String::new(),
        n => format!(" · {} followed out of the root", count(n, "link")),
    };
    format!(
        "gfxscan {} · {}{archives} · {} ({}) · {} with device code · {} · {read}{findings}{skipped}{left}",
        snap.tool.version,
        count(snap.roots.len() as u64, "root"),
        count(s.files, "file"),
        human_bytes(s.bytes),
        thousands(s.files_with_device_code),
        count(s.code_objects, "code object"),
    )
}

/// The scan header's second line: how many GPU targets are served (OK or WARN in every
/// install, as `check --gpu all` judges them), named when they fit in two lines of `width`.
pub fn served_line(rows: &[crate::check::summary::GpuRow], width: Option<usize>) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let served: Vec<&str> = rows.iter().filter(|r| r.served()).map(|r| r.target.as_str()).collect();
    let of = format!("{} of {}", served.len(), count(rows.len() as u64, "GPU target"));
    let line = match served.as_slice() {
        [] => format!(
            "Served: none of {} (`gfxscan check --gpu all` says what each lacks)",
            count(rows.len() as u64, "GPU target")
        ),
        names => format!("Served, every required piece present: {of}: {}", names.join(", ")),
    };
    let fits = width.is_none_or(|w| line.chars().count() <= (2 * w).saturating_sub(2));
    Some(match fits {
        true => line,
        false => format!("Served, every required piece present: {of} (`gfxscan check --gpu all` lists them)"),
    })
}

/// The targets of the per-library view: those chosen, else every target a library holds
/// except those only the runtime's own code is for (listed apart).
pub fn library_targets(
    snap: &Snapshot,
    targets: &Targets,
    matrix: &[LibraryRow],
    only: &[String],
) -> (Vec<String>, Vec<String>) {
    if !only.is_empty() {
        return (only.to_vec(), Vec::new());
    }
    // Generic targets are not columns: their code shows as ○ under the targets it serves.
    let mut all: Vec<String> = matrix
        .iter()
        .flat_map(|r| r.targets.iter().cloned())
        .filter(|t| !targets.by_name(t).is_some_and(|x| x.is_generic()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    targets.sort(&mut all);
    all.into_iter().partition(|t| !runtime_only(snap, targets, t))
}

/// Per (target, layer index): old and new counts, the rows of a layer summed and a part shown
/// apart (the runtime's own code) taken out of the layer that also counts it — the same numbers
/// the scan's per-target table shows, for the text pivot and the HTML charts alike.
pub fn layer_changes(d: &crate::diff::SnapshotDiff) -> BTreeMap<(String, usize), (u64, u64)> {
    let all = layers();
    let layer_of = |key: &str| all.iter().position(|x| x.rows.iter().any(|r| r.key == key));
    let mut cells: BTreeMap<(String, usize), (u64, u64)> = BTreeMap::new();
    for c in &d.counts {
        let Some(i) = layer_of(&c.family) else { continue };
        let slot = cells.entry((c.target.clone(), i)).or_default();
        slot.0 += c.old;
        slot.1 += c.new;
    }
    for c in &d.counts {
        let within = crate::families::FAMILY_ROWS.iter().find(|r| r.key == c.family).and_then(|r| r.within);
        if let Some(i) = within.and_then(layer_of) {
            let slot = cells.entry((c.target.clone(), i)).or_default();
            slot.0 = slot.0.saturating_sub(c.old);
            slot.1 = slot.1.saturating_sub(c.new);
        }
    }
    cells
}

/// The targets of [`layer_changes`]' cells, in the natural order: the rows of the text pivot
/// and the pairs of the HTML charts.
pub fn changed_targets(cells: &BTreeMap<(String, usize), (u64, u64)>, targets: &Targets) -> Vec<String> {
    let mut rows: Vec<String> =
        cells.keys().map(|(t, _)| t.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    targets.sort(&mut rows);
    rows
}

/// The target's line: name, products, family, generic and ISA-compatible targets.
pub fn target_line(e: &Explanation) -> String {
    let t = &e.target;
    let mut parts = vec![t.name.clone()];
    match t.products.as_slice() {
        [] => {}
        [one] => parts.push(one.clone()),
        [first, rest @ ..] => parts.push(format!("{first} (+{} more)", rest.len())),
    }
    parts.push(t.family.clone());
    if let Some(g) = &t.generic {
        parts.push(format!("generic {g}"));
    }
    if let Some(c) = &t.isa_compatible {
        parts.push(format!("ISA-compatible with {c}"));
    }
    parts.join(" · ")
}

/// An install's answer in one line: its vendor rows together, its libraries by check's status
/// (and which are missing), and the override.
pub fn install_summary(i: &InstallGates) -> String {
    let (ok, warn, missing) = i.statuses();
    let mut libraries = format!("{} OK", count(ok as u64, "library"));
    if warn > 0 {
        libraries.push_str(&format!(", {warn} WARN"));
    }
    if missing > 0 {
        let which: Vec<&str> = i
            .rows
            .iter()
            .filter(|r| r.section == Section::Runtime && r.verdict == Gate::Blocks)
            .map(|r| r.gate.as_str())
            .collect();
        libraries.push_str(&format!(", {missing} MISSING ({})", which.join(", ")));
    }
    let over = match i.rows.iter().find(|r| r.section == Section::Override) {
        // A row named with its value is an override check judged; without, none is known.
        Some(r) if r.gate.contains('=') => {
            let mut s = format!("{} {}", r.gate, r.verdict.word());
            let under =
                i.with_override.as_ref().map(crate::explain::warned).map(|(u, _)| u).unwrap_or_default();
            if r.verdict == Gate::Unknown && !under.is_empty() {
                let names: Vec<&str> = under.iter().map(|l| i.install.inner(l)).collect();
                s.push_str(&format!(" ({} WARN under it)", names.join(", ")));
            }
            s
        }
        _ => "no override known".to_string(),
    };
    format!("vendor {}; {libraries}; {over}", i.vendor().word())
}
