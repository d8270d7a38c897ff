//! The fleet matrix for people and tools: sources down, targets across, one layer's counts per
//! cell (and a verdict per source with `--gpu`); CSV and JSON carry every layer; HTML draws,
//! per target, how many sources can serve it.

use std::fmt::Write as _;
use std::io::Write;

use crate::check::Outcome;
use crate::cli::OutputFormat;
use crate::merge::{Fleet, Source};
use crate::vocab::targets::Targets;
use crate::vocab::units::{count, thousands};

use super::style::{paint, status_color, wrap, Style};
use super::table::{render_blocks, Column};
use super::write_json;

fn verdict_word(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Ok) => "OK",
        Some(Outcome::Missing) => "MISSING",
        Some(Outcome::Incomplete) => "INCOMPLETE",
        Some(Outcome::NothingToCheck) => "NOTHING",
        None => "",
    }
}

/// A source's count of layer number `layer` for `target`.
fn get(s: &Source, target: &str, layer: usize) -> u64 {
    s.counts.get(target).and_then(|v| v.get(layer)).copied().unwrap_or(0)
}

fn cell(s: &Source, target: &str, layer: usize) -> String {
    match get(s, target, layer) {
        _ if s.error.is_some() => "?".to_string(),
        0 => "—".to_string(),
        n => thousands(n),
    }
}

/// Writes the merged matrix.
pub fn write_merge(
    fleet: &Fleet,
    targets: &Targets,
    layer: &str,
    format: OutputFormat,
    style: Style,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let at = fleet.layers.iter().position(|l| l == layer).unwrap_or(0);
    match format {
        OutputFormat::Json => return write_json(out, fleet),
        OutputFormat::Csv => return write_csv(fleet, out),
        OutputFormat::Html => return write_html(fleet, targets, layer, at, out),
        _ => {}
    }
    let md = format == OutputFormat::Markdown;
    let style = if md { Style { color: false, width: None } } else { style };
    let head = format!(
        "gfxscan merge · {} · {} · cells: {layer}{}",
        count(fleet.sources.len() as u64, "source"),
        count(fleet.targets.len() as u64, "target"),
        if fleet.gpus.is_empty() {
            String::new()
        } else {
            format!(" · verdicts for {}", fleet.gpus.join(", "))
        }
    );
    writeln!(out, "{}", wrap(&head, "", "  ", style.width))?;
    writeln!(out)?;
    let mut label = fleet.sources.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    if !fleet.gpus.is_empty() {
        let words: Vec<String> = fleet.sources.iter().map(source_words).collect();
        label = label
            .into_iter()
            .zip(words)
            .map(|(n, w)| if w.is_empty() { n } else { format!("{n} {w}") })
            .collect();
    }
    let cols: Vec<Column> = fleet
        .targets
        .iter()
        .map(|t| Column::target_counts(t, fleet.sources.iter().map(|s| cell(s, t, at)).collect()))
        .collect();
    writeln!(out, "{}", render_blocks(Column::left("source", label, None), cols, md, style))?;
    let unreadable: Vec<&Source> = fleet.sources.iter().filter(|s| s.error.is_some()).collect();
    if !unreadable.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}Could not be read ({}):", if md { "### " } else { "" }, unreadable.len())?;
        for s in unreadable {
            // The error names the file.
            let line = s.error.clone().unwrap_or_default();
            writeln!(out, "{}", wrap(&line, if md { "- " } else { "  " }, "    ", style.width))?;
        }
    }
    if !fleet.gpus.is_empty() {
        writeln!(out)?;
    }
    for gpu in gpu_names(fleet) {
        let missing =
            fleet.sources.iter().filter(|s| s.gpu_verdicts.get(&gpu) == Some(&Outcome::Missing)).count();
        let line = format!(
            "{gpu}: {} of {} lack a required piece",
            thousands(missing as u64),
            count(fleet.sources.len() as u64, "source"),
        );
        let color = if missing > 0 {
            status_color(crate::check::Status::Missing)
        } else {
            status_color(crate::check::Status::Ok)
        };
        writeln!(out, "{}", paint(&line, color, style.color))?;
    }
    Ok(())
}

/// The GPUs with a verdict in some source, in the order named.
fn gpu_names(fleet: &Fleet) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for g in fleet.sources.iter().flat_map(|s| s.gpu_verdicts.keys()) {
        if !names.contains(g) {
            names.push(g.clone());
        }
    }
    names
}

/// A source's verdicts after its name: the one word for one GPU, `gpu WORD` each for several.
fn source_words(s: &Source) -> String {
    match s.gpu_verdicts.len() {
        0 | 1 => verdict_word(s.verdict).to_string(),
        _ => s
            .gpu_verdicts
            .iter()
            .map(|(g, o)| format!("{g} {}", verdict_word(Some(*o))))
            .collect::<Vec<_>>()
            .join(" · "),
    }
}

/// The CSV's per-GPU cell: `gfx1031=missing;gfx1100=ok`.
fn gpu_cell(s: &Source) -> String {
    s.gpu_verdicts.iter().map(|(g, o)| format!("{g}={}", super::json_word(*o))).collect::<Vec<_>>().join(";")
}

/// One row per source, target and layer with anything: the whole matrix, long form.
fn write_csv(fleet: &Fleet, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    super::safe::write_record(
        &mut w,
        ["source", "path", "verdict", "gpu_verdicts", "target", "layer", "count", "error"],
    )?;
    for s in &fleet.sources {
        // The JSON's word for it (`nothing-to-check`), so CSV and JSON readers agree.
        let verdict = s.verdict.map(super::json_word).unwrap_or_default();
        let per_gpu = gpu_cell(s);
        if s.counts.is_empty() {
            let err = s.error.clone().unwrap_or_default();
            super::safe::write_record(
                &mut w,
                [s.name.as_str(), &s.path, &verdict, &per_gpu, "", "", "", &err],
            )?;
        }
        for (t, per) in &s.counts {
            for (layer, n) in fleet.layers.iter().zip(per).filter(|(_, n)| **n > 0) {
                super::safe::write_record(
                    &mut w,
                    [s.name.as_str(), &s.path, &verdict, &per_gpu, t, layer, &n.to_string(), ""],
                )?;
            }
        }
    }
    out.write_all(&w.into_inner().map_err(|e| e.into_error())?)?;
    Ok(())
}

/// The page: per target, how many sources hold the layer for it; then the matrix.
fn write_html(
    fleet: &Fleet,
    targets: &Targets,
    layer: &str,
    at: usize,
    w: &mut dyn Write,
) -> anyhow::Result<()> {
    use super::html::{bar_chart, esc, page_end, page_start, table_head};
    let mut out = String::new();
    page_start(&mut out, "gfxscan merge");
    let _ = writeln!(
        out,
        "<h1>A fleet at once</h1><p class=\"sub\">{} · cells: {}</p>",
        esc(&count(fleet.sources.len() as u64, "source")),
        esc(layer)
    );
    let bars: Vec<(String, u64)> = fleet
        .targets
        .iter()
        .map(|t| {
            let n = fleet.sources.iter().filter(|s| get(s, t, at) > 0).count();
            (super::html::target_label(targets, t), n as u64)
        })
        .collect();
    out.push_str("<div class=\"charts\">");
    bar_chart(&mut out, &format!("sources with {layer} for each target"), &bars, 0);
    out.push_str("</div><h2>Sources × targets</h2><div class=\"matrix\">");
    let mut heads: Vec<(&str, bool)> = vec![("source", true)];
    let gpus = gpu_names(fleet);
    heads.extend(gpus.iter().map(|g| (g.as_str(), true)));
    heads.extend(fleet.targets.iter().map(|t| (t.as_str(), false)));
    table_head(&mut out, &heads);
    for s in &fleet.sources {
        let _ = write!(
            out,
            "<tr><td class=\"l\" title=\"{}\">{}</td>",
            esc(&s.path),
            super::html::esc_path(&s.name)
        );
        for g in &gpus {
            let word = verdict_word(s.gpu_verdicts.get(g).copied());
            let _ = write!(out, "<td class=\"l {}\">{word}</td>", word.to_lowercase());
        }
        for t in &fleet.targets {
            let _ = write!(out, "<td>{}</td>", esc(&cell(s, t, at)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    page_end(&mut out);
    w.write_all(out.as_bytes())?;
    Ok(())
}
