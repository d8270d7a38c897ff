//! `check` for people: per install, per GPU, a verdict per library, statuses in colour, long
//! details wrapped inside their cell so every line fits the width; then what was not checked,
//! what could not be read, and the outcome.

use std::io::{self, Write};

use comfy_table::Cell;

use crate::check::{CheckReport, GpuReport, InstallReport, LibraryKind, Outcome, Status};
use crate::cli::OutputFormat;
use crate::model::Family;
use crate::vocab::targets::Targets;
use crate::vocab::units::count;

use super::style::{fill_cell, paint, status_color, wrap, Style};
use super::table::fit_name;
use super::write_json;

/// The GPU's line: index, where it was found, its target (and override), its product.
fn gpu_line(gpu: &GpuReport, targets: &Targets) -> String {
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
    let product = targets.by_name(&d.native.processor).and_then(|t| t.products.first());
    let product = product.map(|p| format!(" · {p}")).unwrap_or_default();
    format!("GPU {} · {origin} · {target}{product}", d.index)
}

/// A verdict's detail: what was found, what a gap costs, what the library has.
fn detail(v: &crate::check::Verdict) -> String {
    let mut detail = v.detail.clone();
    if let Some(c) = &v.consequence {
        detail.push_str(&format!(": {c}"));
    }
    // A Tensile verdict's detail already says what its indexes and code files serve.
    if !v.available.is_empty() && v.kind != LibraryKind::Family(Family::Tensile) {
        detail.push_str(&format!(" — has {}", v.available.join(", ")));
    }
    if let Some(l) = &v.loads {
        if v.status == Status::Ok {
            // A file in the library's own folder is named by its file name.
            let shown = match l.rsplit_once('/') {
                Some((dir, file)) if in_folder(&v.library, dir) => file,
                _ => l.as_str(),
            };
            detail.push_str(&format!(" — loads {shown}"));
        }
    }
    detail
}

/// The widths of the library and detail cells in `width` columns: a detail keeps at least 40
/// columns, and a library name takes what it needs of the rest; on a narrow screen the file
/// names still fit whole (behind "…/") up to half the room.
fn cell_widths(names: &[&str], width: usize) -> (usize, usize) {
    // Three columns, one space of padding on each side; STATUS is at most 7 wide (MISSING).
    let (padding, status) = (6, 7);
    let room = width.saturating_sub(padding + status);
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0).max("LIBRARY".len());
    let file = |n: &&str| n.trim_end_matches('/').rsplit('/').next().map_or(0, |f| f.chars().count() + 3);
    let files = names.iter().map(file).max().unwrap_or(0).min(room / 2);
    // A detail never gets under 20 columns: the name gives way first.
    let library = longest.min(room.saturating_sub(40)).max(files).max(16).min(room.saturating_sub(20)).max(8);
    (library, room.saturating_sub(library))
}

/// `text · word` wrapped after `first`, the status word at its end in its colour: painted after
/// wrapping, since escapes take no columns (a word wrapped across lines is left unpainted).
fn status_line(text: &str, first: &str, word: &str, status: Status, style: Style) -> String {
    let line = wrap(&format!("{text} · {word}"), first, "  ", style.width);
    match line.strip_suffix(word) {
        Some(head) => format!("{head}{}", paint(word, status_color(status), style.color)),
        None => line,
    }
}

/// True when `library` (a displayed folder or file path) is the folder `dir` names (`dir` is
/// relative to a root, so it may be only its end, but never part of a folder's name).
fn in_folder(library: &str, dir: &str) -> bool {
    let folder = library.trim_end_matches('/');
    folder == dir || folder.ends_with(&format!("/{dir}"))
}

/// Where the outcome line stands: after everything (text), or first (the page).
#[derive(Clone, Copy)]
pub enum Place {
    End,
    Top,
}

/// Writes one GPU's verdicts in one install.
fn write_gpu(
    gpu: &GpuReport,
    inst: &InstallReport,
    targets: &Targets,
    md: bool,
    style: Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let status = gpu.status();
    let head = if md { "#### " } else { "" };
    let line = status_line(&gpu_line(gpu, targets), head, &inst.status_shown(status), status, style);
    writeln!(out, "{line}")?;
    // The answer first: what would change it, and the dangers, before the table behind them.
    let (first, rest) = if md { ("- ", "  ") } else { ("  ", "    ") };
    for h in &gpu.hints {
        writeln!(out, "{}", wrap(&format!("hint: {h}"), first, rest, style.width))?;
    }
    for w in &gpu.warnings {
        writeln!(out, "{}", wrap(&format!("warning: {w}"), first, rest, style.width))?;
    }
    writeln!(out)?;
    let mut t = super::table::styled(md, style);
    t.set_header(if md { ["library", "status", "detail"] } else { ["LIBRARY", "STATUS", "DETAIL"] });
    // Libraries are named inside their install, whose path heads the section.
    let names: Vec<&str> = gpu.verdicts.iter().map(|v| inst.install.inner(&v.library)).collect();
    let widths = (!md).then_some(style.width).flatten().map(|w| cell_widths(&names, w));
    for (v, name) in gpu.verdicts.iter().zip(&names) {
        let word = Cell::new(v.status.word());
        let word = if style.color { word.fg(status_color(v.status)) } else { word };
        let (library, detail) = match widths {
            // No line passes the width: a path loses leading folders, a detail wraps between words.
            Some((lib, det)) => (fit_name(name, lib), fill_cell(&detail(v), det)),
            None => (name.to_string(), detail(v)),
        };
        t.add_row(vec![Cell::new(library), word, Cell::new(detail)]);
    }
    let text = t.to_string();
    for line in text.lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(out)
}

/// What a program loads (`check --exe`): whether it starts, the chain to each library whose
/// code the verdicts below judge, the data folders they read, and what fails to load.
fn write_program(
    p: &crate::check::program::ProgramReport,
    report: &CheckReport,
    (h, li): (&str, &str),
    style: Style,
    out: &mut dyn Write,
) -> io::Result<()> {
    let more = "      ";
    let what = match p.program.strip_prefix("process ") {
        Some(rest) => format!("Process {rest}"),
        None => format!("Program {}", p.program),
    };
    let text = match p.root.as_str() {
        "/" => what,
        root => format!("{what} (in {root})"),
    };
    writeln!(out, "{}", status_line(&text, h, &super::json_word(p.status).to_uppercase(), p.status, style))?;
    let judged: Vec<&str> = report
        .installs
        .iter()
        .flat_map(|i| &i.gpus)
        .flat_map(|g| &g.verdicts)
        .map(|v| v.library.trim_end_matches('/'))
        .collect();
    let gpu_code: Vec<_> = p.loads.iter().filter(|l| judged.iter().any(|j| j.ends_with(&l.file))).collect();
    let starts = if p.starts { "starts" } else { "does not start" };
    let summary = format!(
        "{starts}; loads {}, {} with GPU code (judged below)",
        count(p.loads.len() as u64, "library"),
        gpu_code.len()
    );
    writeln!(out, "{}", wrap(&summary, li, more, style.width))?;
    for l in &gpu_code {
        writeln!(
            out,
            "{}",
            wrap(&format!("{} — {}", l.chain.join(" ← "), l.through), li, more, style.width)
        )?;
    }
    for d in &p.data {
        let line = format!("{} read by {}", d.folder, d.read_by.first().map_or("", String::as_str));
        writeln!(out, "{}", wrap(&line, li, more, style.width))?;
    }
    for r in p.runtime.iter().filter(|r| r.loaded.is_none()) {
        let why = r.failed.as_deref().unwrap_or("not found");
        let by = r.by.first().map_or("", String::as_str);
        // A backend for other hardware failing is skipped by ggml: said, not a failure.
        let (word, status) =
            if r.gpu { ("not loaded", Status::Missing) } else { ("not loaded (skipped)", Status::Ok) };
        let line = format!("{word}: {} ({}) by {by}: {why}", r.what, r.name);
        let line = if r.gpu { paint(&line, status_color(status), style.color) } else { line };
        writeln!(out, "{}", wrap(&line, li, more, style.width))?;
    }
    for l in &p.lacking {
        let line = format!(
            "no data folder for {}: looked in {}: {}",
            l.library.first().map_or("", String::as_str),
            l.looked.join(", "),
            l.effect
        );
        writeln!(out, "{}", wrap(&paint(&line, status_color(l.status), style.color), li, more, style.width))?;
    }
    // Each name once, with the first object that needs it (the JSON has every one); counted in
    // one pass, so a program missing 100,000 names is told in linear time.
    let mut needers: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for m in &p.missing {
        *needers.entry(m.name.as_str()).or_default() += 1;
    }
    for m in &p.missing {
        let Some(n) = needers.remove(m.name.as_str()) else { continue };
        let others = n - 1;
        let also = if others > 0 { format!(" (and {} more)", others) } else { String::new() };
        let effect = "the program does not start (\"cannot open shared object file\")";
        let line = format!("missing: {}, needed by {}{also}: {effect}", m.name, m.needed_by.join(" ← "));
        writeln!(
            out,
            "{}",
            wrap(&paint(&line, status_color(Status::Missing), style.color), li, more, style.width)
        )?;
    }
    for u in &p.unread {
        writeln!(out, "{}", wrap(&format!("not read: {u}"), li, more, style.width))?;
    }
    for problem in &p.problems {
        writeln!(out, "{}", wrap(&format!("cannot be loaded: {problem}"), li, more, style.width))?;
    }
    writeln!(out)
}

/// The last line of the text (`Place::End`), or the first of the page (`Place::Top`): how
/// many GPUs in how many installs, and the outcome; what it points to is where it says.
/// One GPU against one kernel module: the driver-and-firmware row.
/// The driver-and-firmware lines: one per GPU and driver judged; GPUs not judged for the same
/// reason share one line.
pub(super) fn driver_lines(drivers: &[crate::check::driver::DriverCheck]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut unknown: Vec<(String, Vec<&str>)> = Vec::new();
    for d in drivers {
        match (d.module.as_ref(), d.unjudged) {
            (None, Some(why)) => {
                let release =
                    d.judgement.release.as_deref().map(|r| format!("Linux {r} · ")).unwrap_or_default();
                let words = format!("{release}unknown: {}", why.words())
                    + &d.problem.as_deref().map(|p| format!(": {p}")).unwrap_or_default();
                match unknown.iter_mut().find(|(w, _)| *w == words) {
                    Some((_, gpus)) => gpus.push(&d.gpu),
                    None => unknown.push((words, vec![&d.gpu])),
                }
            }
            _ => out.push(driver_line(d)),
        }
    }
    let grouped = unknown.into_iter().map(|(words, gpus)| format!("{} · {words}", gpus.join(", ")));
    grouped.chain(out).collect()
}

fn driver_line(d: &crate::check::driver::DriverCheck) -> String {
    use crate::check::driver::{DriverOutcome, Settings};
    let j = &d.judgement;
    let module = d.module.as_deref().unwrap_or("");
    let built_in = if d.built_in { ", built in" } else { "" };
    let kernel = format!(
        "{} · Linux {} ({module}{built_in})",
        d.gpu,
        j.release.as_deref().unwrap_or("of unknown release")
    );
    let optional = match j.optional_absent.len() {
        0 => String::new(),
        n => format!(
            "; {n} optional absent: {}",
            j.optional_absent.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>().join(", ")
        ),
    };
    // The running driver's parameters, where they change what it asks for.
    let defaults = Settings::default();
    let mut set = Vec::new();
    for (name, v, default) in [
        ("mes", d.settings.mes, defaults.mes),
        ("mes_kiq", d.settings.mes_kiq, defaults.mes_kiq),
        ("uni_mes", d.settings.uni_mes, defaults.uni_mes),
        ("fw_load_type", d.settings.fw_load_type, defaults.fw_load_type),
    ] {
        if v != default {
            set.push(format!("amdgpu.{name}={v}"));
        }
    }
    let settings = match (set.is_empty(), d.running) {
        (true, _) => String::new(),
        (false, true) => format!("; as the running driver is set: {}", set.join(" ")),
        (false, false) => format!("; as the system sets the driver: {}", set.join(" ")),
    };
    match (j.outcome, d.unjudged) {
        (_, Some(why)) => format!(
            "{kernel} · unknown: {}{}",
            why.words(),
            d.problem.as_deref().map(|p| format!(": {p}")).unwrap_or_default()
        ),
        (DriverOutcome::Ok, None) => {
            format!("{kernel} · OK: the {} files it asks for are there{optional}{settings}", j.asked.len())
        }
        (DriverOutcome::Missing, None) => format!(
            "{kernel} · MISSING: {} of the {} files it asks for are absent ({}){optional}{settings}; dmesg: {}",
            j.missing.len(),
            j.asked.len(),
            j.missing.join(", "),
            d.dmesg.as_deref().unwrap_or("")
        ),
        (DriverOutcome::NoDriver, None) => format!(
            "{kernel} · MISSING: this kernel has no amdgpu driver (modules.dep names none; Ubuntu keeps it in linux-modules-extra-{})",
            j.release.as_deref().unwrap_or("<release>")
        ),
        (DriverOutcome::NotKnown, None) => {
            format!("{kernel} · MISSING: the driver asks for no firmware of this GPU: it does not know it (no /dev/kfd node)")
        }
        (DriverOutcome::Unknown, None) => format!("{kernel} · unknown"),
    }
}

pub fn outcome_line(report: &CheckReport, at: Place) -> String {
    let (hints, listed) = match at {
        Place::End => ("above", "above"),
        Place::Top => ("below", "at the end"),
    };
    let counted = format!(
        "{} checked in {}",
        count(report.devices.len() as u64, "GPU"),
        count(report.installs.len() as u64, "install")
    );
    match report.outcome {
        Outcome::Ok => {
            // Never a plain OK below a WARN: the last line says what the tables above say.
            // Libraries (and a program's data folders) with a WARN, each once however many GPUs.
            let mut warned: std::collections::BTreeSet<&str> = report
                .installs
                .iter()
                .flat_map(|i| &i.gpus)
                .flat_map(|g| &g.verdicts)
                .filter(|v| v.status == Status::Warn)
                .map(|v| v.library.as_str())
                .collect();
            let lacking = report.program.iter().flat_map(|p| &p.lacking).filter(|l| l.status == Status::Warn);
            warned.extend(lacking.filter_map(|l| l.library.first().map(String::as_str)));
            let warned = warned.len();
            match warned {
                0 => format!("{counted} · OK: every required piece present"),
                n => format!(
                    "{counted} · OK with WARN: every required piece present; {} WARN (slower, or an optional path lost)",
                    count(n as u64, "library")
                ),
            }
        }
        Outcome::Missing if report.program.as_ref().is_some_and(|p| !p.starts) => {
            format!("{counted} · MISSING: the program does not start")
        }
        Outcome::Missing
            if report.program.as_ref().is_some_and(|p| p.runtime.iter().any(|r| r.loaded.is_none())) =>
        {
            format!("{counted} · MISSING: a library the program loads at run time cannot be loaded")
        }
        Outcome::Missing if !report.summary.is_empty() => {
            super::served::outcome_line(report, &counted, hints).unwrap_or_default()
        }
        // The GPU does not come up: said before any library, which cannot help it then.
        Outcome::Missing if report.drivers.iter().any(|d| d.judgement.outcome.down()) => {
            let mut down: Vec<&str> = report
                .drivers
                .iter()
                .filter(|d| d.judgement.outcome.down())
                .map(|d| d.gpu.as_str())
                .collect();
            down.dedup();
            format!("{counted} · MISSING: the kernel's driver or its firmware leaves {} down (driver and firmware, {listed})", down.join(", "))
        }
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
            // The last line repeats what would change the answer, when something would.
            let hinted = report.installs.iter().flat_map(|i| &i.gpus).any(|g| !g.hints.is_empty());
            let hint = match hinted {
                true => format!(" · an override would help (hint under the GPU {hints})"),
                false => String::new(),
            };
            format!("{counted} · MISSING: code for {}{hint}", missing.join("; "))
        }
        Outcome::Incomplete => format!(
            "{counted} · INCOMPLETE: {}; no OK is given for what could not be read",
            match (report.problems.len(), report.unknown_gpus.len()) {
                (0, u) => format!("{} not in the target table", count(u as u64, "GPU")),
                (p, 0) => format!("{} could not be read (listed {listed})", count(p as u64, "file")),
                (p, u) => format!(
                    "{} could not be read and {} not in the target table",
                    count(p as u64, "file"),
                    count(u as u64, "GPU")
                ),
            }
        ),
        Outcome::NothingToCheck => {
            format!("NOTHING TO CHECK: no library with device code under {}", report.roots.join(", "))
        }
    }
}

/// Writes every verdict as a CSV record: install, GPU, target, library, kind, status, detail.
fn write_check_csv(report: &CheckReport, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = ["install", "gpu", "target", "checked_as", "library", "kind", "status", "detail"];
    super::safe::write_record(&mut w, header)?;
    for inst in &report.installs {
        for g in &inst.gpus {
            let d = &g.device;
            for v in &g.verdicts {
                super::safe::write_record(
                    &mut w,
                    [
                        inst.install.path.clone(),
                        d.index.to_string(),
                        d.native.target_id.clone(),
                        d.effective.target_id.clone(),
                        v.library.clone(),
                        super::json_word(v.kind),
                        super::json_word(v.status),
                        detail(v),
                    ],
                )?;
            }
        }
    }
    out.write_all(&w.into_inner()?)?;
    Ok(())
}

/// Writes the verdicts of `gfxscan check`: per install, per GPU; then what was not checked,
/// the files that could not be read, and the overall outcome.
pub fn write_check(
    report: &CheckReport,
    targets: &Targets,
    format: OutputFormat,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match format {
        OutputFormat::Json => return write_json(out, report),
        OutputFormat::Html => {
            return super::html::write_check_html(report, &outcome_line(report, Place::Top), out)
        }
        OutputFormat::Prometheus => return super::prometheus::write_check_metrics(report, out),
        OutputFormat::Jsonl => return super::jsonl::write_check_jsonl(report, out),
        OutputFormat::Csv if !report.summary.is_empty() => return super::served::write_csv(report, out),
        OutputFormat::Csv => return write_check_csv(report, out),
        _ => {}
    }
    let md = format == OutputFormat::Markdown;
    // Markdown is pasted, not shown: no width, no escapes.
    let style = if md { Style { color: false, width: None } } else { style };
    let (h, li) = if md { ("### ", "- ") } else { ("", "  ") };
    if let Some(p) = &report.program {
        write_program(p, report, (h, li), style, out)?;
    }
    for inst in &report.installs {
        let kind = super::json_word(inst.install.kind);
        let text = format!("Install {} ({kind})", inst.install.path);
        writeln!(out, "{}", status_line(&text, h, &inst.status_shown(inst.status), inst.status, style))?;
        if let Some(r) = &inst.runtime {
            let lib = inst.install.inner(&r.library);
            // One row per GPU: the rules by name, in full under `check --gpu TARGET`.
            let line = match report.summary.is_empty() {
                true => format!("HIP runtime {lib} ({}): verdicts follow its rules — {}", r.version, r.rules),
                false => {
                    let name = r.rules.split(':').next().unwrap_or(r.rules);
                    format!("HIP runtime {lib} ({}): verdicts follow {name}'s rules", r.version)
                }
            };
            writeln!(out, "{}", wrap(&line, li, "    ", style.width))?;
        }
        writeln!(out)?;
        // `--gpu all`: one row per GPU below, for every install at once.
        for gpu in inst.gpus.iter().filter(|_| report.summary.is_empty()) {
            write_gpu(gpu, inst, targets, md, style, out)?;
        }
    }
    if !report.summary.is_empty() {
        super::served::write_rows(report, md, style, out)?;
    }
    for u in &report.unknown_gpus {
        let line = format!(
            "unknown GPU: {u}: not in the target table, not checked (update gfxscan, or pass --targets FILE)"
        );
        writeln!(out, "{}", wrap(&line, li, "    ", style.width))?;
    }
    for n in &report.not_checked {
        writeln!(out, "{li}not checked: {n} (another install; name it as ROOT to check it)")?;
    }
    // Code reached through a link out of a root was judged as part of its install: said.
    for l in &report.links_out_of_root {
        let line = format!("followed out of the root: {} → {}", l.path.display(&report.roots), l.target);
        writeln!(out, "{}", wrap(&line, li, "    ", style.width))?;
    }
    if !report.problems.is_empty() {
        writeln!(out)?;
        writeln!(out, "{h}Could not be read ({}):", report.problems.len())?;
        for p in &report.problems {
            writeln!(out, "{li}{}: {}", p.path.display(&report.roots), p.message)?;
        }
    }
    if !report.unknown_gpus.is_empty()
        || !report.not_checked.is_empty()
        || !report.problems.is_empty()
        || !report.links_out_of_root.is_empty()
    {
        writeln!(out)?;
    }
    if !report.drivers.is_empty() {
        writeln!(out, "{h}Driver and firmware:")?;
        for line in driver_lines(&report.drivers) {
            writeln!(out, "{}", wrap(&super::safe::shown(&line), li, "    ", style.width))?;
        }
        writeln!(out)?;
    }
    // The report's runtime is the one for installs that ship none: said only where it applies,
    // never beside an install's own runtime as if it judged that install too.
    let without_own = report.installs.iter().filter(|i| i.runtime.is_none()).count();
    if report.outcome != Outcome::NothingToCheck && (without_own > 0 || report.installs.is_empty()) {
        let note = match (without_own, report.installs.len()) {
            (w, n) if w == n => format!("Verdicts follow the {}.", report.runtime),
            _ => format!(
                "Installs without a HIP runtime of their own: verdicts follow the {}.",
                report.runtime
            ),
        };
        writeln!(out, "{}", wrap(&note, "", "  ", style.width))?;
    }
    let line = outcome_line(report, Place::End);
    let color = match report.outcome {
        Outcome::Ok => Some(status_color(Status::Ok)),
        Outcome::Missing => Some(status_color(Status::Missing)),
        Outcome::Incomplete => Some(status_color(Status::Warn)),
        Outcome::NothingToCheck => None,
    };
    let line = wrap(&line, "", "  ", style.width);
    writeln!(out, "{}", color.map_or_else(|| line.clone(), |c| paint(&line, c, style.color)))?;
    Ok(())
}
