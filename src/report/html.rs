//! The report to look at: one self-contained HTML page (no network, no external assets) with
//! an SVG bar chart per layer across the targets, the per-target table, the library × target
//! matrix and each target's gates (`explain`, whose own page is here too); for `check` the
//! verdicts, for `diff` the summary and the target × layer pivot.
//!
//! A small inline script measures what the browser drew (bars with a width, labels that do not
//! overflow) and records it on `<body data-rendered=…>`, so a test can ask a real browser
//! whether the page rendered, not only whether its text is there.

use std::fmt::Write as _;
use std::io::Write;

use crate::check::{CheckReport, Status};
use crate::diff::{Coverage, DiffOutcome, SnapshotDiff};
use crate::explain::{all_of, Explanation, Gate, GateRow, Section};
use crate::library::matrix::{LibraryRow, Mark};
use crate::model::Snapshot;
use crate::vocab::targets::Targets;
use crate::vocab::units::{count, human_bytes, thousands};

use super::views::{
    headline, install_summary, library_targets, product, served_line, shown_targets, target_line,
};
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
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#1d2125;background:#fff;overflow-wrap:break-word}
h1{font-size:1.35em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.6em 0 .5em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
.sub{color:#57606a;margin:0 0 1em}
.charts{display:flex;flex-wrap:wrap;gap:1.2em}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.6em .8em;background:#f6f8fa}
figcaption{font-weight:600;margin-bottom:.3em}
svg text{font:12px system-ui,sans-serif;fill:#1d2125}svg .val{fill:#57606a}
svg rect.bar.l0{fill:#0969da}svg rect.bar.l1{fill:#8250df}svg rect.bar.l2{fill:#1b7c83}svg rect.bar.l3{fill:#4d5bce}svg rect.bar.l4{fill:#bf3989}svg rect.bar.l5{fill:#6e7781}
svg rect.bar.old{fill:#afb8c1}svg rect.bar.same{fill:#6e7781}svg rect.bar.up{fill:#1a7f37}svg rect.bar.down{fill:#d1242f}
table{border-collapse:collapse;margin:.3em 0;display:block;max-width:100%;overflow-x:auto}th,td{padding:.2em .6em;border-bottom:1px solid #eaeef2;text-align:right;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:0;white-space:normal;vertical-align:bottom}td.l,th.l{text-align:left}td.m{text-align:center}
td.l{white-space:normal;max-width:26em}tr.install td{font-weight:600;background:#f6f8fa}
td.own{color:#1a7f37;font-weight:700}td.generic{color:#9a6700}td.none{color:#afb8c1}
.ok{color:#1a7f37;font-weight:700}.warn{color:#9a6700;font-weight:700}.missing{color:#d1242f;font-weight:700}
.ok,.warn,.missing,.allows,.blocks,.unknown,td.m{white-space:nowrap}
td.lost,.lost{color:#d1242f}td.gained,.gained{color:#1a7f37}.verdict{font-weight:600}
td.detail{white-space:normal;text-align:left;max-width:60em}
.matrix{overflow-x:auto}ul{margin:.3em 0}
";

/// Checks, in the browser, that every bar was drawn with a width, its label fits, nothing runs
/// past the page (a wide table scrolls inside its own box) and no word but a long name is
/// broken across lines, and records the result for tests (`data-rendered`).
const SELF_CHECK: &str = "<script>
(function(){
  var bars=document.querySelectorAll('rect.bar'),drawn=0,clipped=0;
  bars.forEach(function(b){ if(b.getBBox().width>0) drawn++; });
  document.querySelectorAll('svg').forEach(function(s){
    var w=s.viewBox.baseVal.width;
    s.querySelectorAll('text').forEach(function(t){ if(t.getBBox().x+t.getBBox().width>w+1) clipped++; });
  });
  var right=document.body.getBoundingClientRect().right+1,overflow=0;
  document.querySelectorAll('body > *').forEach(function(e){ if(e.getBoundingClientRect().right>right) overflow++; });
  document.querySelectorAll('table').forEach(function(t){ if(t.getBoundingClientRect().right>right) overflow++; });
  if(document.documentElement.scrollWidth>document.documentElement.clientWidth) overflow++;
  var broken=0,walk=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT),n,r=document.createRange();
  while((n=walk.nextNode())){
    if(n.parentNode.closest('svg,script,style')) continue;
    var re=/[^\\s\\u2010-\\u2015-]+/g,m;
    while((m=re.exec(n.data))){
      if(m[0].length>24||m[0].indexOf('/')>=0) continue;
      r.setStart(n,m.index); r.setEnd(n,m.index+m[0].length);
      var rects=r.getClientRects(),top=null,lines=0;
      for(var i=0;i<rects.length;i++){ if(rects[i].width>0&&rects[i].top!==top){ top=rects[i].top; lines++; } }
      if(lines>1) broken++;
    }
  }
  document.body.setAttribute('data-rendered','bars='+drawn+'/'+bars.length+' clipped='+clipped+' overflow='+overflow+' broken='+broken);
})();
</script>";

/// A path for a table cell: escaped, and free to break after each `/` (never inside a name).
pub fn esc_path(s: &str) -> String {
    esc(s).replace('/', "/<wbr>")
}

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

/// One bar of a chart: its label, its value, and its CSS class (its colour).
pub struct Bar {
    pub label: String,
    pub value: u64,
    pub class: &'static str,
}

impl Bar {
    pub fn new(label: String, value: u64, class: &'static str) -> Bar {
        Bar { label, value, class }
    }
}

/// The colours of layers' charts: none of them a status colour (OK green, WARN amber,
/// MISSING red), so a bar never reads as a verdict.
const LAYER_CLASSES: [&str; 6] = ["l0", "l1", "l2", "l3", "l4", "l5"];

/// One horizontal bar chart of a layer: a bar per (label, value) in the layer's colour.
pub fn bar_chart(out: &mut String, title: &str, bars: &[(String, u64)], class: usize) {
    let class = LAYER_CLASSES[class % LAYER_CLASSES.len()];
    let bars: Vec<Bar> = bars.iter().map(|(l, v)| Bar::new(l.clone(), *v, class)).collect();
    bars_chart(out, title, &bars);
}

/// One horizontal bar chart, each bar scaled to the largest value and coloured by its class.
pub fn bars_chart(out: &mut String, title: &str, bars: &[Bar]) {
    const LABEL: f64 = 190.0;
    const BAR: f64 = 260.0;
    const VALUE: f64 = 70.0;
    const ROW: f64 = 20.0;
    let width = LABEL + BAR + VALUE;
    let height = ROW * bars.len() as f64 + 6.0;
    let max = bars.iter().map(|b| b.value).max().unwrap_or(1).max(1) as f64;
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\">",
        esc(title),
        esc(title)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = 3.0 + ROW * i as f64;
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>",
            LABEL - 6.0,
            y + 13.0,
            esc(&b.label)
        );
        // Nothing is no bar (a sliver would read as "a little"); any count is at least 1 px.
        let w = if b.value == 0 { 0.0 } else { (BAR * b.value as f64 / max).max(1.0) };
        if b.value > 0 {
            let _ = write!(
                out,
                "<rect class=\"bar {}\" x=\"{LABEL}\" y=\"{:.0}\" width=\"{w:.1}\" height=\"{:.0}\"><title>{}: {}</title></rect>",
                b.class,
                y + 2.0,
                ROW - 5.0,
                esc(&b.label),
                thousands(b.value),
            );
        }
        let _ = write!(
            out,
            "<text class=\"val\" x=\"{:.1}\" y=\"{:.0}\">{}</text>",
            LABEL + w + 4.0,
            y + 13.0,
            thousands(b.value)
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

/// Target columns per block of the matrix: with the library columns, a block fits the page.
const MATRIX_TARGETS: usize = 10;

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
    // Readable at any target count: blocks of at most MATRIX_TARGETS target columns, the
    // library columns repeated in each, as the text view splits its blocks.
    for block in cols.chunks(MATRIX_TARGETS) {
        let mut heads: Vec<(&str, bool)> = vec![("library", true)];
        heads.extend(block.iter().map(|c| (c.as_str(), false)));
        table_head(out, &heads);
        // Libraries under their install, as in the text view: a row names the install once.
        let mut install = None;
        for r in matrix {
            if install != Some(&r.install) {
                install = Some(&r.install);
                let span = block.len() + 1;
                let _ = write!(
                    out,
                    "<tr class=\"install\"><td class=\"l\" colspan=\"{span}\">{}</td></tr>",
                    esc(&r.install.path)
                );
            }
            let _ = write!(out, "<tr><td class=\"l\">{}</td>", esc(&r.library));
            for t in block {
                let (class, mark) = match r.mark(t, targets) {
                    Mark::Own => ("own", "●"),
                    Mark::Generic => ("generic", "○"),
                    Mark::None => ("none", "·"),
                };
                let _ = write!(out, "<td class=\"m {class}\" title=\"{}\">{mark}</td>", esc(t));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
    }
    out.push_str("</div>\n");
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
    view: &super::ScanView,
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
    if let Some(line) = served_line(&view.served, None) {
        let _ = writeln!(out, "<p>{}</p>", esc(&line));
    }
    let (only, gates) = (&view.only, &view.gates);
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
    gate_matrix_html(&mut out, gates);

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
    if !report.summary.is_empty() {
        out.push_str("<h2>Which GPUs are served</h2>\n");
        served_table(&mut out, report);
    }
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
                    esc_path(&v.library),
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
    // The kernel's side, in the text's words.
    list(&mut out, "Driver and firmware", &super::check::driver_lines(&report.drivers));
    let problems: Vec<String> =
        report.problems.iter().map(|p| format!("{}: {}", p.path.display(&report.roots), p.message)).collect();
    list(&mut out, "Could not be read", &problems);
    page_end(&mut out);
    w.write_all(out.as_bytes())?;
    Ok(())
}

/// The diff report, in the text's order and with its counts: both sides; per library, the
/// targets lost (red) and gained (green); the same per target, grouped as the text groups
/// them; the target × layer pivot as paired bars (old grey, new coloured by the change).
pub fn write_diff_html(d: &SnapshotDiff, targets: &Targets, w: &mut dyn Write) -> anyhow::Result<()> {
    use super::diff::{files_line, sides, target_groups};
    let mut out = String::new();
    page_start(&mut out, &format!("gfxscan diff · {} → {}", d.old.roots.join(", "), d.new.roots.join(", ")));
    let _ = writeln!(out, "<h1>What changed</h1><p class=\"sub\">{}</p>", esc(&sides(d)));
    if d.outcome == DiffOutcome::Incomplete {
        out.push_str("<p class=\"warn\">INCOMPLETE: a side could not be read in full; a target listed as lost may only be unread.</p>\n");
    }
    let mut verdict = Vec::new();
    if !d.losses.is_empty() {
        verdict.push(format!(
            "<span class=\"lost\">{} lost targets</span>",
            count(d.losses.len() as u64, "library")
        ));
    }
    if !d.gains.is_empty() {
        verdict.push(format!(
            "<span class=\"gained\">{} gained targets</span>",
            count(d.gains.len() as u64, "library")
        ));
    }
    let verdict = match (d.is_empty(), verdict.is_empty()) {
        (true, _) => "No differences.".to_string(),
        (false, true) => "No library lost or gained a target.".to_string(),
        (false, false) => verdict.join(" · "),
    };
    let _ = writeln!(out, "<p class=\"verdict\">{verdict}</p>");
    diff_libraries(&mut out, d);
    let groups = target_groups(d, targets);
    if !groups.is_empty() {
        let _ = write!(
            out,
            "<h2>Per target ({} in {})</h2>",
            groups.iter().map(|g| g.0.len()).sum::<usize>(),
            count(groups.len() as u64, "group")
        );
        table_head(&mut out, &[("targets", true), ("lost in", true), ("gained in", true)]);
        for (ts, lost, gained) in &groups {
            lost_gained_row(&mut out, &ts.join(", "), &lost.join(", "), &gained.join(", "));
        }
        out.push_str("</tbody></table>\n");
    }
    diff_pivot(&mut out, d, targets);
    if !(d.files_added.is_empty() && d.files_removed.is_empty() && d.files_changed.is_empty()) {
        let _ = writeln!(
            out,
            "<p class=\"sub\">{} (the text report with --verbose lists them).</p>",
            esc(&files_line(d))
        );
    }
    page_end(&mut out);
    w.write_all(out.as_bytes())?;
    Ok(())
}

/// A row of what `name` lost (in red) and gained (in green).
fn lost_gained_row(out: &mut String, name: &str, lost: &str, gained: &str) {
    let _ = writeln!(
        out,
        "<tr><td class=\"l\">{}</td><td class=\"l detail lost\">{}</td><td class=\"l detail gained\">{}</td></tr>",
        esc(name),
        esc(lost),
        esc(gained)
    );
}

/// One row per library that lost or gained targets: losses first, in the text's order.
fn diff_libraries(out: &mut String, d: &SnapshotDiff) {
    use super::diff::listed_targets;
    let mut rows: Vec<(&str, Option<&Coverage>, Option<&Coverage>)> = Vec::new();
    for c in &d.losses {
        rows.push((&c.library, Some(c), None));
    }
    for c in &d.gains {
        match rows.iter_mut().find(|(l, _, _)| *l == c.library) {
            Some(row) => row.2 = Some(c),
            None => rows.push((&c.library, None, Some(c))),
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = write!(out, "<h2>Per library ({})</h2>", rows.len());
    table_head(out, &[("library", true), ("lost", true), ("gained", true)]);
    for (library, lost, gained) in rows {
        let how = lost.or(gained).map_or("", |c| super::diff::unit_change_words(c.how));
        let cell = |c: Option<&Coverage>, lost: bool| {
            c.map(|c| listed_targets(c, lost).join(", ")).unwrap_or_default()
        };
        lost_gained_row(out, &format!("{library}{how}"), &cell(lost, true), &cell(gained, false));
    }
    out.push_str("</tbody></table>\n");
}

/// The target × layer pivot of the text (`layer_changes`), a chart per layer: per target an
/// old bar (grey) and a new one, green when it grew and red when it shrank.
fn diff_pivot(out: &mut String, d: &SnapshotDiff, targets: &Targets) {
    let cells = super::views::layer_changes(d);
    if !cells.values().any(|(a, b)| a != b) {
        return;
    }
    let used: std::collections::BTreeSet<usize> = cells.keys().map(|(_, i)| *i).collect();
    let order = super::views::changed_targets(&cells, targets);
    let all = layers();
    out.push_str("<h2>Per target and layer (old → new)</h2><div class=\"charts\">\n");
    for i in used {
        let bars: Vec<Bar> = order
            .iter()
            .filter_map(|t| cells.get(&(t.clone(), i)).map(|c| (t, c)))
            // A target with nothing in this layer on either side draws no pair.
            .filter(|(_, (a, b))| *a > 0 || *b > 0)
            .flat_map(|(t, (a, b))| {
                let change = match b.cmp(a) {
                    std::cmp::Ordering::Greater => "up",
                    std::cmp::Ordering::Less => "down",
                    std::cmp::Ordering::Equal => "same",
                };
                [Bar::new(format!("{t} old"), *a, "old"), Bar::new(format!("{t} new"), *b, change)]
            })
            .collect();
        bars_chart(out, all[i].header, &bars);
    }
    out.push_str("</div>\n");
}

/// The HTML class of a verdict.
fn gate_class(g: Gate) -> &'static str {
    match g {
        Gate::Allows => "ok",
        Gate::Blocks => "missing",
        Gate::Unknown => "warn",
    }
}

/// `check --gpu all`'s rows (`served`), for the top of the check page.
fn served_table(out: &mut String, report: &CheckReport) {
    let heads = [
        ("GPU", true),
        ("status", true),
        ("first missing or warn", true),
        ("more", false),
        ("override", true),
    ];
    table_head(out, &heads);
    for r in &report.summary {
        let more = if r.more > 0 { format!("+{}", r.more) } else { String::new() };
        let _ = writeln!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l {}\">{}</td><td class=\"l\">{}</td><td>{more}</td><td class=\"l\">{}</td></tr>",
            esc(&super::served::gpu_cell(r)),
            status_class(r.status),
            r.status.word(),
            esc_path(&super::served::decider_cell(r, report)),
            esc(r.override_helps.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody></table>\n");
}

/// One section's rows as an HTML table.
fn rows_html(out: &mut String, title: &str, rows: &[&GateRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h2>{}</h2>", esc(title));
    table_head(out, &[("gate", true), ("verdict", true), ("says", true), ("source", true)]);
    for r in rows {
        let _ = writeln!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l {}\">{}</td><td class=\"detail\">{}</td><td class=\"l\">{}</td></tr>",
            esc_path(&r.gate),
            gate_class(r.verdict),
            r.verdict.word(),
            esc(&r.says),
            esc(&r.source)
        );
    }
    out.push_str("</table>\n");
}

/// The explain page: the target, each section's gates, per install its gates with check's
/// hints and warnings, then what was not checked or not read.
pub fn write_explain_html(e: &Explanation, w: &mut dyn Write) -> anyhow::Result<()> {
    let mut out = String::new();
    page_start(&mut out, &format!("gfxscan explain {}", e.target.name));
    let _ =
        writeln!(out, "<h1>{}</h1><p class=\"sub\">{}</p>", esc(&target_line(e)), esc(&e.roots.join(", ")));
    fn of(rows: &[GateRow], s: Section) -> Vec<&GateRow> {
        rows.iter().filter(|r| r.section == s).collect()
    }
    rows_html(&mut out, Section::Vendor.title(), &of(&e.policy, Section::Vendor));
    rows_html(&mut out, Section::Build.title(), &of(&e.policy, Section::Build));
    rows_html(&mut out, Section::Ships.title(), &e.ships.iter().collect::<Vec<_>>());
    for i in &e.installs {
        let title = format!("Install {} — {}", i.install.path, install_summary(i));
        rows_html(&mut out, &title, &i.rows.iter().collect::<Vec<_>>());
        let said: Vec<String> = i.check.hints.iter().chain(&i.check.warnings).cloned().collect();
        list(&mut out, "Hints and warnings", &said);
    }
    list(&mut out, "Installs not checked", &e.not_checked);
    let problems: Vec<String> =
        e.problems.iter().map(|p| format!("{}: {}", p.path.display(&e.roots), p.message)).collect();
    list(&mut out, "Could not be read", &problems);
    page_end(&mut out);
    w.write_all(out.as_bytes())?;
    Ok(())
}

/// Target columns per block of the gate matrix: with the gate column, a block fits the page.
const GATE_TARGETS: usize = 7;

/// The gate matrix across targets, for the HTML scan page: a row per gate (the same gate for
/// every target, matched by its name), a column per target in blocks that fit, each cell its
/// verdict, its title what the gate says.
pub fn gate_matrix_html(out: &mut String, all: &[Explanation]) {
    let each: Vec<Vec<(String, GateRow)>> = all.iter().map(matrix_rows).collect();
    let mut labels: Vec<&str> = Vec::new();
    for (label, _) in each.iter().flatten() {
        if !labels.contains(&label.as_str()) {
            labels.push(label);
        }
    }
    if labels.is_empty() {
        return;
    }
    out.push_str("<h2>Gates per target: vendor policy beside what this tree serves</h2>\n");
    for (block, rows) in all.chunks(GATE_TARGETS).zip(each.chunks(GATE_TARGETS)) {
        out.push_str("<div class=\"matrix gates\">");
        let mut heads: Vec<(&str, bool)> = vec![("gate", true)];
        heads.extend(block.iter().map(|e| (e.target.name.as_str(), false)));
        table_head(out, &heads);
        for label in &labels {
            let _ = write!(out, "<tr><td class=\"l\">{}</td>", esc(label));
            for target in rows {
                match target.iter().find(|(l, _)| l == label) {
                    Some((_, r)) => {
                        let (class, title) = (gate_class(r.verdict), esc(&r.says));
                        let _ = write!(
                            out,
                            "<td class=\"m {class}\" title=\"{title}\">{}</td>",
                            r.verdict.word()
                        );
                    }
                    None => out.push_str("<td></td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table></div>\n");
    }
}

/// One target's rows in the cross-target matrix, each under the name its row has for every
/// target: policy, layers, and per install its vendor rows, one row for its libraries (all of
/// check's verdicts together) and the override.
fn matrix_rows(e: &Explanation) -> Vec<(String, GateRow)> {
    let mut r: Vec<(String, GateRow)> = e.policy.iter().map(|g| (g.gate.clone(), g.clone())).collect();
    r.extend(e.ships.iter().map(|g| (format!("ships: {}", g.gate), g.clone())));
    for i in &e.installs {
        let at = |what: &str| format!("{}: {what}", i.install.path);
        for g in i.rows.iter().filter(|g| g.section == Section::Vendor) {
            r.push((at(&g.gate), g.clone()));
        }
        let runtime = i.rows.iter().filter(|g| g.section == Section::Runtime).map(|g| g.verdict);
        let libraries =
            GateRow::new(Section::Runtime, "libraries", install_summary(i), all_of(runtime), "check");
        r.push((at("its libraries, as check judges them"), libraries));
        for g in i.rows.iter().filter(|g| g.section == Section::Override) {
            r.push((at("HSA_OVERRIDE_GFX_VERSION to the ISA-compatible target"), g.clone()));
        }
    }
    r
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
    fn layer_colours_are_no_status_colours() {
        // OK green, WARN amber, MISSING red: a layer's bar must not read as a verdict.
        let status = ["#1a7f37", "#9a6700", "#d1242f"];
        for class in LAYER_CLASSES {
            let rule = format!("svg rect.bar.{class}{{fill:");
            let at = STYLE.find(&rule).unwrap_or_else(|| panic!("no colour for {class}")) + rule.len();
            let colour = &STYLE[at..at + 7];
            assert!(!status.contains(&colour), "{class} is {colour}");
        }
    }

    #[test]
    fn the_matrix_is_cut_into_blocks_that_fit() {
        use crate::library::install::{Install, InstallKind};
        let targets = Targets::builtin();
        let names: Vec<String> = targets
            .iter()
            .filter(|t| t.name.starts_with("gfx") && !t.is_generic())
            .take(27)
            .map(|t| t.name.clone())
            .collect();
        let row = LibraryRow {
            install: Install { path: "/opt/rocm".into(), kind: InstallKind::Rocm },
            library: "lib/libx.so".into(),
            layer: "code".into(),
            targets: names.clone(),
        };
        let snap = crate::aggregate::snapshot(crate::aggregate::Tally::default(), vec!["/".into()], &targets);
        let mut out = String::new();
        matrix_table(&mut out, &snap, &[row], &targets, &names);
        let tables: Vec<&str> = out.split("<table>").skip(1).collect();
        assert_eq!(tables.len(), 27usize.div_ceil(MATRIX_TARGETS), "{out}");
        for t in &tables {
            assert!(t.matches("</th>").count() <= MATRIX_TARGETS + 1, "{t}");
            // The install is named once per block, the library on its own row.
            assert_eq!(t.matches("/opt/rocm").count(), 1, "{t}");
        }
        // Every target is a column of exactly one block.
        assert_eq!(out.matches("<th>gfx").count(), 27);
    }

    #[test]
    fn a_zero_is_no_bar() {
        let mut out = String::new();
        bar_chart(&mut out, "rocBLAS files", &[("gfx900".into(), 0), ("gfx1100".into(), 1)], 0);
        assert_eq!(out.matches("<rect class=\"bar").count(), 1);
        assert!(out.contains(">0<") && out.contains("width=\"260.0\""), "{out}");
    }
}
