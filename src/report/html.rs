//! The report to look at: one self-contained HTML page (no network, no external assets) with
//! an SVG bar chart per layer across the targets, the per-target table, the library × target
//! matrix, and for `check` the verdicts, for `diff` the summary and the target × layer pivot.
//!
//! A small inline script measures what the browser drew (bars with a width, labels that do not
//! overflow) and records it on `<body data-rendered=…>`, so a test can ask a real browser
//! whether the page rendered, not only whether its text is there.

use std::fmt::Write as _;
use std::io::Write;

use crate::check::{CheckReport, Status};
use crate::diff::SnapshotDiff;
use crate::library::matrix::{LibraryRow, Mark};
use crate::model::Snapshot;
use crate::vocab::targets::Targets;
use crate::vocab::units::{human_bytes, thousands};

use super::views::{headline, library_targets, product, shown_targets};
use crate::aggregate::{layer_count, layers, Layer};

/// Text made safe for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#1d2125;background:#fff}
h1{font-size:1.35em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.6em 0 .5em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
.sub{color:#57606a;margin:0 0 1em}
.charts{display:flex;flex-wrap:wrap;gap:1.2em}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.6em .8em;background:#f6f8fa}
figcaption{font-weight:600;margin-bottom:.3em}
svg text{font:12px system-ui,sans-serif;fill:#1d2125}svg .val{fill:#57606a}
svg rect.bar{fill:#d1242f}svg rect.bar.l1{fill:#0969da}svg rect.bar.l2{fill:#8250df}svg rect.bar.l3{fill:#1a7f37}svg rect.bar.l4{fill:#bc4c00}svg rect.bar.l5{fill:#6e7781}
table{border-collapse:collapse;margin:.3em 0}th,td{padding:.2em .6em;border-bottom:1px solid #eaeef2;text-align:right;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:0}td.l,th.l{text-align:left}td.m{text-align:center}
td.own{color:#1a7f37;font-weight:700}td.generic{color:#9a6700}td.none{color:#afb8c1}
.ok{color:#1a7f37;font-weight:700}.warn{color:#9a6700;font-weight:700}.missing{color:#d1242f;font-weight:700}
td.detail{white-space:normal;text-align:left;max-width:60em}
.matrix{overflow-x:auto}ul{margin:.3em 0}
";

/// Checks, in the browser, that every bar was drawn with a width and its label fits, and
/// records the result for tests (`data-rendered`).
const SELF_CHECK: &str = "<script>
(function(){
  var bars=document.querySelectorAll('rect.bar'),drawn=0,clipped=0;
  bars.forEach(function(b){ if(b.getBBox().width>0) drawn++; });
  document.querySelectorAll('svg').forEach(function(s){
    var w=s.viewBox.baseVal.width;
    s.querySelectorAll('text').forEach(function(t){ if(t.getBBox().x+t.getBBox().width>w+1) clipped++; });
  });
  document.body.setAttribute('data-rendered','bars='+drawn+'/'+bars.length+' clipped='+clipped);
})();
</script>";

pub fn page_start(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(title)
    );
}

pub fn page_end(out: &mut String) {
    let _ = writeln!(out, "{SELF_CHECK}\n</body></html>");
}

/// A target's label with its product, for charts and tables.
pub fn target_label(targets: &Targets, t: &str) -> String {
    match product(targets, t) {
        Some(p) => format!("{t} · {p}"),
        None => t.to_string(),
    }
}

/// One horizontal bar chart: a bar per (label, value), scaled to the largest value.
pub fn bar_chart(out: &mut String, title: &str, bars: &[(String, u64)], class: usize) {
    const LABEL: f64 = 190.0;
    const BAR: f64 = 260.0;
    const VALUE: f64 = 70.0;
    const ROW: f64 = 20.0;
    let width = LABEL + BAR + VALUE;
    let height = ROW * bars.len() as f64 + 6.0;
    let max = bars.iter().map(|(_, v)| *v).max().unwrap_or(1).max(1) as f64;
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\">",
        esc(title),
        esc(title)
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let y = 3.0 + ROW * i as f64;
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>",
            LABEL - 6.0,
            y + 13.0,
            esc(label)
        );
        // Nothing is no bar (a sliver would read as "a little"); any count is at least 1 px.
        let w = if *v == 0 { 0.0 } else { (BAR * *v as f64 / max).max(1.0) };
        if *v > 0 {
            let _ = write!(
                out,
                "<rect class=\"bar l{}\" x=\"{LABEL}\" y=\"{:.0}\" width=\"{w:.1}\" height=\"{:.0}\"><title>{}: {}</title></rect>",
                class % 6,
                y + 2.0,
                ROW - 5.0,
                esc(label),
                thousands(*v),
            );
        }
        let _ = write!(
            out,
            "<text class=\"val\" x=\"{:.1}\" y=\"{:.0}\">{}</text>",
            LABEL + w + 4.0,
            y + 13.0,
            thousands(*v)
        );
    }
    out.push_str("</svg></figure>\n");
}

pub fn table_head(out: &mut String, heads: &[(&str, bool)]) {
    out.push_str("<table><thead><tr>");
    for (h, left) in heads {
        let _ = write!(out, "<th{}>{}</th>", if *left { " class=\"l\"" } else { "" }, esc(h));
    }
    out.push_str("</tr></thead><tbody>\n");
}

/// The charts, one per layer with anything in it, across the shown targets.
fn charts(out: &mut String, snap: &Snapshot, targets: &Targets, only: &[String]) {
    let shown = shown_targets(snap, targets, only);
    out.push_str("<h2>Per target, layer by layer</h2><div class=\"charts\">\n");
    // The runtime's own code serves the runtime, not applications: its chart comes last.
    let mut order: Vec<(usize, Layer)> = layers().into_iter().enumerate().collect();
    order.sort_by_key(|(_, l)| l.rows.iter().any(|r| r.within.is_some()));
    for (i, l) in &order {
        let bars: Vec<(String, u64)> = shown
            .iter()
            .map(|(t, _)| (target_label(targets, t), layer_count(snap, l, t)))
            .filter(|(_, v)| *v > 0 || !only.is_empty())
            .collect();
        if bars.iter().all(|(_, v)| *v == 0) {
            continue;
        }
        let what: Vec<&str> = l.rows.iter().map(|r| r.label).collect();
        bar_chart(out, &what.join(" + "), &bars, *i);
    }
    out.push_str("</div>\n");
}

/// The per-target table: every layer, and the code-object totals.
fn target_table(out: &mut String, snap: &Snapshot, targets: &Targets, only: &[String]) {
    let shown = shown_targets(snap, targets, only);
    // Only the layers the tree holds; a note in the text report names the others.
    let all: Vec<Layer> =
        layers().into_iter().filter(|l| shown.iter().any(|(t, _)| layer_count(snap, l, t) > 0)).collect();
    let mut heads: Vec<(&str, bool)> = vec![("target", true), ("product", true)];
    heads.extend(all.iter().map(|l| (l.header, false)));
    heads.extend([("kernels", false), ("device code", false)]);
    out.push_str("<h2>Per target</h2><div class=\"matrix\">");
    table_head(out, &heads);
    for (t, served) in &shown {
        let c = snap.targets.get(t).cloned().unwrap_or_default();
        let name = if served.is_empty() { t.clone() } else { format!("{t} (serves {})", served.join(", ")) };
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>",
            esc(&name),
            esc(&product(targets, t).unwrap_or_default())
        );
        for l in &all {
            let n = layer_count(snap, l, t);
            let _ = write!(out, "<td>{}</td>", if n == 0 { "—".to_string() } else { thousands(n) });
        }
        let _ = writeln!(out, "<td>{}</td><td>{}</td></tr>", thousands(c.kernels), human_bytes(c.bytes));
    }
    out.push_str("</tbody></table></div>\n");
}

/// The library × target matrix.
fn matrix_table(
    out: &mut String,
    snap: &Snapshot,
    matrix: &[LibraryRow],
    targets: &Targets,
    only: &[String],
) {
    if matrix.is_empty() {
        return;
    }
    // The same columns as the text view: no generic targets, no runtime-only targets.
    let (cols, _) = library_targets(snap, targets, matrix, only);
    out.push_str("<h2>Libraries × targets</h2><p class=\"sub\">● code or data built for the target · ○ only its generic target's code · · nothing for it</p><div class=\"matrix\">");
    let mut heads: Vec<(&str, bool)> = vec![("install", true), ("library", true)];
    heads.extend(cols.iter().map(|c| (c.as_str(), false)));
    table_head(out, &heads);
    for r in matrix {
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>",
            esc(&r.install.path),
            esc(&r.library)
        );
        for t in &cols {
            let (class, mark) = match r.mark(t, targets) {
                Mark::Own => ("own", "●"),
                Mark::Generic => ("generic", "○"),
                Mark::None => ("none", "·"),
            };
            let _ = write!(out, "<td class=\"m {class}\" title=\"{}\">{mark}</td>", esc(t));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn list(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(out, "<h2>{} ({})</h2><ul>", esc(title), items.len());
    for i in items {
        let _ = write!(out, "<li>{}</li>", esc(i));
    }
    out.push_str("</ul>\n");
}

/// The scan report: findings, names that lie and problems first, then the charts, the
/// per-target table and the matrix.
pub fn write_scan_html(
    snap: &Snapshot,
    targets: &Targets,
    matrix: &[LibraryRow],
    only: &[String],
    w: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut out = String::new();
    page_start(&mut out, &format!("gfxscan · {}", snap.roots.join(", ")));
    let _ = writeln!(
        out,
        "<h1>What GPU code this install ships</h1><p class=\"sub\">{}<br>{}</p>",
        esc(&snap.roots.join(", ")),
        esc(&headline(snap))
    );
    // What is wrong first: findings, names that lie and unread files before the charts.
    let lies: Vec<String> = snap
        .mismatches
        .iter()
        .map(|m| {
            format!(
                "{}: named for {}, but serves {}",
                m.path.display(&snap.roots),
                m.name_target,
                m.content_targets.join(", ")
            )
        })
        .collect();
    let findings: Vec<String> = snap
        .findings
        .iter()
        .filter(|f| f.kind != crate::model::FindingKind::NameLies)
        .map(|f| {
            let mut paths: Vec<String> = f.paths.iter().take(5).map(|p| p.display(&snap.roots)).collect();
            if f.paths.len() > 5 {
                paths.push(format!("and {} more", f.paths.len() - 5));
            }
            format!(
                "{}: {}: {} ({})",
                super::json_word(f.kind),
                f.library.display(&snap.roots),
                f.why,
                paths.join(", ")
            )
        })
        .collect();
    list(&mut out, "Findings: broken as shipped", &findings);
    list(&mut out, "Names that lie", &lies);
    let problems: Vec<String> =
        snap.problems.iter().map(|p| format!("{}: {}", p.path.display(&snap.roots), p.message)).collect();
    list(&mut out, "Could not be read", &problems);
    charts(&mut out, snap, targets, only);
    target_table(&mut out, snap, targets, only);
    matrix_table(&mut out, snap, matrix, targets, only);

    page_end(&mut out);
    w.write_all(out.as_bytes())?;
    Ok(())
}

fn status_class(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Warn => "warn",
        Status::Missing => "missing",
    }
}

/// The check report: per install, per GPU, a verdict per library; then the outcome.
pub fn write_check_html(report: &CheckReport, outcome: &str, w: &mut dyn Write) -> anyhow::Result<()> {
    let mut out = String::new();
    page_start(&mut out, &format!("gfxscan check · {}", report.roots.join(", ")));
    let _ = writeln!(
        out,
        "<h1>Will each GPU find its code?</h1><p class=\"sub\">{}</p><p>{}</p>",
        esc(&report.roots.join(", ")),
        esc(outcome)
    );
    for inst in &report.installs {
        let _ = write!(
            out,
            "<h2>{} · <span class=\"{}\">{}</span></h2>",
            esc(&inst.install.path),
            status_class(inst.status),
            inst.status.word()
        );
        for gpu in &inst.gpus {
            let d = &gpu.device;
            let _ = write!(
                out,
                "<p><b>GPU {} · {}</b> · <span class=\"{}\">{}</span></p>",
                d.index,
                esc(&d.effective.target_id),
                status_class(gpu.status()),
                gpu.status().word()
            );
            table_head(&mut out, &[("library", true), ("status", true), ("detail", true)]);
            for v in &gpu.verdicts {
                let mut detail = v.detail.clone();
                if let Some(c) = &v.consequence {
                    detail.push_str(&format!(": {c}"));
                }
                let _ = writeln!(
                    out,
                    "<tr><td class=\"l\">{}</td><td class=\"l {}\">{}</td><td class=\"detail\">{}</td></tr>",
                    esc(&v.library),
                    status_class(v.status),
                    v.status.word(),
                    esc(&detail)
                );
            }
            out.push_str("</tbody></table>\n");
            let notes: Vec<String> = gpu.hints.iter().chain(&gpu.warnings).cloned().collect();
            if !notes.is_empty() {
                out.push_str("<ul>");
                for n in notes {
                    let _ = write!(out, "<li>{}</li>", esc(&n));
                }
                out.push_str("</ul>\n");
            }
        }
    }
    let problems: Vec<String> =
        report.problems.iter().map(|p| format!("{}: {}", p.path.display(&report.roots), p.message)).collect();
    list(&mut out, "Could not be read", &problems);
    page_end(&mut out);
    w.write_all(out.as_bytes())?;
    Ok(())
}

/// The diff report: the summary per target and per library, and the target × layer pivot
/// drawn as paired bars (old, new) per layer.
pub fn write_diff_html(d: &SnapshotDiff, summary: &[String], w: &mut dyn Write) -> anyhow::Result<()> {
    let mut out = String::new();
    page_start(&mut out, &format!("gfxscan diff · {} → {}", d.old.roots.join(", "), d.new.roots.join(", ")));
    let _ = writeln!(
        out,
        "<h1>What changed</h1><p class=\"sub\">{} → {}</p>",
        esc(&d.old.roots.join(", ")),
        esc(&d.new.roots.join(", "))
    );
    list(&mut out, "Summary", summary);
    // The same layers and numbers as the text pivot (`layer_changes`).
    let cells = super::views::layer_changes(d);
    let used: std::collections::BTreeSet<usize> = cells.keys().map(|(_, i)| *i).collect();
    if cells.values().any(|(a, b)| a != b) {
        let all = layers();
        out.push_str("<h2>Per target and layer (old → new)</h2><div class=\"charts\">\n");
        for (k, i) in used.iter().enumerate() {
            // Targets in the order of the counts (the natural order).
            let mut order: Vec<&String> = Vec::new();
            for c in &d.counts {
                if !order.contains(&&c.target) {
                    order.push(&c.target);
                }
            }
            let bars: Vec<(String, u64)> = order
                .into_iter()
                .filter_map(|t| cells.get(&(t.clone(), *i)).map(|c| (t, c)))
                .flat_map(|(t, (a, b))| [(format!("{t} old"), *a), (format!("{t} new"), *b)])
                .collect();
            bar_chart(&mut out, all[*i].header, &bars, k);
        }
        out.push_str("</div>\n");
    }
    page_end(&mut out);
    w.write_all(out.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(esc("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn a_chart_has_one_bar_per_value_and_labels_escaped() {
        let mut out = String::new();
        bar_chart(&mut out, "rocBLAS <files>", &[("gfx900".into(), 128), ("gfx1100".into(), 96)], 0);
        assert_eq!(out.matches("<rect class=\"bar").count(), 2);
        assert!(out.contains("rocBLAS &lt;files&gt;") && out.contains(">128<") && out.contains(">96<"));
        assert!(!out.contains("http://") || out.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    }

    /// A diff's "before" of nothing is no bar, not a 1-pixel sliver; its value is still shown.
    #[test]
    fn a_zero_is_no_bar() {
        let mut out = String::new();
        bar_chart(&mut out, "rocBLAS files", &[("gfx900".into(), 0), ("gfx1100".into(), 1)], 0);
        assert_eq!(out.matches("<rect class=\"bar").count(), 1);
        assert!(out.contains(">0<") && out.contains("width=\"260.0\""), "{out}");
    }
}
