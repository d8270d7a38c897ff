//! Tables that fit: columns built as data, rendered with comfy-table, narrowed to the reader's
//! width by dropping the least needed columns (never by wrapping a row), or split into blocks
//! of columns under a repeated label column. Lines carry no trailing spaces.

use comfy_table::presets::{ASCII_MARKDOWN, NOTHING};
use comfy_table::{Cell, CellAlignment, Color, Table};

use super::style::Style;

/// One column: a header, one cell per row, and how readily it goes when space is short.
pub struct Column {
    pub header: String,
    pub cells: Vec<String>,
    pub align: CellAlignment,
    /// Lower goes first; `None` never goes.
    pub drop: Option<u8>,
    /// Per-cell colours (statuses), when the style allows colour.
    pub colors: Vec<Option<Color>>,
    /// The header is a name to keep as spelled (a target), not a title to upper-case.
    pub verbatim: bool,
}

impl Column {
    pub fn left(header: &str, cells: Vec<String>, drop: Option<u8>) -> Column {
        Column {
            header: header.to_string(),
            cells,
            align: CellAlignment::Left,
            drop,
            colors: Vec::new(),
            verbatim: false,
        }
    }

    pub fn right(header: &str, cells: Vec<String>, drop: Option<u8>) -> Column {
        Column { align: CellAlignment::Right, ..Column::left(header, cells, drop) }
    }

    /// A column headed by a target name, its cells centred marks.
    pub fn target(name: &str, cells: Vec<String>) -> Column {
        Column { align: CellAlignment::Center, verbatim: true, ..Column::left(name, cells, None) }
    }

    /// A column headed by a target name, its cells right-aligned counts.
    pub fn target_counts(name: &str, cells: Vec<String>) -> Column {
        Column { verbatim: true, ..Column::right(name, cells, None) }
    }

    /// The same column with a colour per cell.
    pub fn colored(self, colors: Vec<Option<Color>>) -> Column {
        Column { colors, ..self }
    }

    fn empty(&self) -> bool {
        self.cells.iter().all(|c| c.is_empty())
    }
}

/// An empty table in the house style: no borders for people, pipes for Markdown, colour
/// exactly when the style says so.
pub fn styled(md: bool, style: Style) -> Table {
    let mut t = Table::new();
    t.load_preset(if md { ASCII_MARKDOWN } else { NOTHING });
    if style.color {
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    t
}

/// Renders columns as one table: upper-case headers for people, Markdown pipes for `md`.
pub fn render(cols: &[&Column], md: bool, style: Style) -> String {
    let mut t = styled(md, style);
    // Headers stack their words: a column is as wide as its numbers, not its name.
    t.set_header(cols.iter().map(|c| match (md, c.verbatim) {
        (true, _) | (_, true) => c.header.clone(),
        _ => c.header.to_uppercase().replace(' ', "\n"),
    }));
    let rows = cols.iter().map(|c| c.cells.len()).max().unwrap_or(0);
    for i in 0..rows {
        t.add_row(cols.iter().map(|c| {
            let text = c.cells.get(i).cloned().unwrap_or_default();
            match c.colors.get(i).copied().flatten() {
                Some(color) if style.color => Cell::new(text).fg(color),
                _ => Cell::new(text),
            }
        }));
    }
    for (i, c) in cols.iter().enumerate() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(c.align);
        }
    }
    t.to_string().lines().map(trim_styled_end).collect::<Vec<_>>().join("\n")
}

/// A line without trailing spaces, also those a styled last cell pads inside its escapes.
fn trim_styled_end(line: &str) -> String {
    let line = line.trim_end();
    match line.rfind('\x1b') {
        Some(at) if line[at..].ends_with('m') && !line[at..].contains(' ') => {
            format!("{}{}", line[..at].trim_end(), &line[at..])
        }
        _ => line.to_string(),
    }
}

/// The widest line of a rendered table, in characters, escapes not counted.
pub fn width_of(text: &str) -> usize {
    text.lines().map(|l| strip_escapes(l).chars().count()).max().unwrap_or(0)
}

fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Renders `cols`, dropping droppable columns (lowest `drop` first) until the table fits the
/// style's width; columns with no text at all go first. Returns the text and the headers
/// dropped (not counting empty ones).
pub fn fit(cols: Vec<Column>, md: bool, style: Style) -> (String, Vec<String>) {
    let mut kept: Vec<Column> = cols.into_iter().filter(|c| !c.empty() || c.drop.is_none()).collect();
    let mut dropped: Vec<String> = Vec::new();
    loop {
        let text = render(&kept.iter().collect::<Vec<_>>(), md, style);
        let too_wide = style.width.is_some_and(|w| width_of(&text) > w);
        let victim = kept.iter().enumerate().filter_map(|(i, c)| c.drop.map(|d| (d, i))).min();
        match victim {
            Some((_, i)) if too_wide => {
                let c = kept.remove(i);
                dropped.push(c.header);
            }
            _ => return (text, dropped),
        }
    }
}

/// The width a column takes in a borderless table: its widest cell or header line, and one
/// space of padding each side.
fn column_width(c: &Column) -> usize {
    let header = c.header.split(' ').map(|w| w.chars().count()).max().unwrap_or(0);
    let header = if c.verbatim { c.header.chars().count() } else { header };
    c.cells.iter().map(|x| x.chars().count()).max().unwrap_or(0).max(header) + 2
}

/// `text` in at most `room` characters, "…" marking what was cut: the start of a path, the end
/// of anything else; leading spaces (an indent) are kept.
fn shorten(text: &str, room: usize) -> String {
    let n = text.chars().count();
    if n <= room {
        return text.to_string();
    }
    let indent = text.len() - text.trim_start().len();
    let (pad, body) = text.split_at(indent);
    let keep = room.saturating_sub(indent + 1);
    if body.contains('/') {
        format!("{pad}{}", super::style::cut_path_start(body, keep + 1))
    } else {
        format!("{pad}{}…", body.chars().take(keep).collect::<String>())
    }
}

/// A library's name in `room` columns: leading folders go first, then the middle of a name
/// too long by itself.
pub fn fit_name(name: &str, room: usize) -> String {
    let cut = super::style::cut_path_start(name, room);
    match cut.chars().count() > room {
        true => shorten_middle(&cut, room),
        false => cut,
    }
}

/// `text` in at most `room` characters, its middle cut for "…": a file name keeps both the
/// start that says what it is and the end that says for which target.
pub fn shorten_middle(text: &str, room: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= room || room < 3 {
        return text.to_string();
    }
    let tail = (room - 1) / 2;
    let head = room - 1 - tail;
    let start: String = chars.iter().take(head).collect();
    let end: String = chars.iter().skip(chars.len() - tail).collect();
    format!("{start}…{end}")
}

/// Renders a label column and many value columns as blocks of value columns that each fit
/// the width, the label column repeated in each; one block when everything fits. Blocks are
/// cut by the columns' widths, so a table of many rows is rendered once per block.
pub fn render_blocks(label: Column, values: Vec<Column>, md: bool, style: Style) -> String {
    if values.is_empty() {
        return render(&[&label], md, style);
    }
    let limit = if md { None } else { style.width };
    // A label column too wide to leave room for a few value columns is cut to fit, with "…":
    // paths lose their start (the file name says most), other labels their end.
    let label = match limit {
        Some(w) => {
            let widest = values.iter().map(column_width).max().unwrap_or(0);
            let room = w.saturating_sub(values.len().min(4) * widest + 2).max(16);
            Column { cells: label.cells.iter().map(|c| shorten(c, room)).collect(), ..label }
        }
        None => label,
    };
    let base = column_width(&label);
    let mut blocks: Vec<String> = Vec::new();
    let mut start = 0;
    while start < values.len() {
        let mut end = start + 1;
        let mut used = base + column_width(&values[start]);
        while end < values.len() {
            let next = column_width(&values[end]);
            if limit.is_some_and(|w| used + next > w) {
                break;
            }
            used += next;
            end += 1;
        }
        let cols: Vec<&Column> = std::iter::once(&label).chain(&values[start..end]).collect();
        blocks.push(render(&cols, md, style));
        start = end;
    }
    blocks.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(h: &str, n: usize, drop: Option<u8>) -> Column {
        Column::right(h, (0..3).map(|_| "x".repeat(n)).collect(), drop)
    }

    #[test]
    fn fit_drops_the_least_needed_columns_until_the_table_fits() {
        let style = Style { color: false, width: Some(25) };
        let cols = vec![col("target", 8, None), col("firmware", 8, Some(2)), col("kernels", 8, Some(1))];
        let (text, dropped) = fit(cols, false, style);
        assert!(width_of(&text) <= 25, "{text}");
        assert_eq!(dropped, ["kernels"]);
        assert!(text.lines().all(|l| l == l.trim_end()), "no trailing spaces");
    }

    #[test]
    fn blocks_repeat_the_label_and_each_fits() {
        let style = Style { color: false, width: Some(40) };
        let values: Vec<Column> =
            (0..10).map(|i| Column::target(&format!("gfx10{i}"), vec!["●".into(); 3])).collect();
        let text = render_blocks(Column::left("library", vec!["liba".into(); 3], None), values, false, style);
        let blocks: Vec<&str> = text.split("\n\n").collect();
        assert!(blocks.len() > 1);
        for b in &blocks {
            assert!(b.starts_with(" LIBRARY"), "{b}");
            assert!(b.contains(" gfx10"), "target headers keep their case: {b}");
            assert!(width_of(b) <= 40, "{b}");
        }
        assert_eq!(text.matches("gfx10").count(), 10, "every column once");
    }

    #[test]
    fn labels_too_wide_are_cut_to_fit() {
        let style = Style { color: false, width: Some(40) };
        let label = Column::left(
            "library",
            vec!["sample/venv/lib/python3.12/site-packages/jax_rocm7_plugin".into(), "  _prng.so".into()],
            None,
        );
        let values: Vec<Column> =
            (0..3).map(|i| Column::target(&format!("gfx110{i}"), vec!["●".into(); 2])).collect();
        let text = render_blocks(label, values, false, style);
        assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
        assert!(text.contains("…") && text.contains("rocm7_plugin") && text.contains("  _prng.so"), "{text}");
        assert_eq!(shorten("device code in host libraries", 12), "device code…");
        assert_eq!(shorten("  a/b/libfoo.so", 10), "  …bfoo.so");
    }

    #[test]
    fn colour_only_when_the_style_allows() {
        let c = Column::left("status", vec!["OK".into()], None).colored(vec![Some(Color::Green)]);
        assert!(!render(&[&c], false, Style { color: false, width: None }).contains('\x1b'));
        let painted = render(&[&c], false, Style { color: true, width: None });
        assert!(painted.contains('\x1b'), "{painted:?}");
        assert_eq!(width_of(&painted), width_of(&render(&[&c], false, Style { color: false, width: None })));
    }
}
