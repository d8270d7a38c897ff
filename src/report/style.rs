//! How a report meets its reader: colour or none, and the width a table must fit.
//!
//! Colour follows `--color` (auto, always, never): auto colours only a terminal, and never when
//! `NO_COLOR` is set (no-color.org) or `TERM` is `dumb`. Tables fit the terminal's width; a
//! pipe or a file gets [`DEFAULT_WIDTH`] unless `COLUMNS` says otherwise.

use std::io::IsTerminal;

use comfy_table::Color;

use crate::cli::ColorChoice;
use crate::vocab::verdict::Status;

/// The width a table is fitted to when there is no terminal to ask.
pub const DEFAULT_WIDTH: usize = 100;

/// The reader's side of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Statuses and changes in colour.
    pub color: bool,
    /// The widest line a table may make; `None` for no limit (`--wide`, Markdown, CSV).
    pub width: Option<usize>,
}

impl Style {
    /// Plain text fitted to [`DEFAULT_WIDTH`]: what tests and files get.
    pub const PLAIN: Style = Style { color: false, width: Some(DEFAULT_WIDTH) };

    /// The style for standard output (`to_terminal`: no `-o FILE`) under `choice` and an
    /// environment read through `var`.
    pub fn detect(choice: ColorChoice, to_terminal: bool, var: impl Fn(&str) -> Option<String>) -> Style {
        let tty = to_terminal && std::io::stdout().is_terminal();
        let dumb = var("TERM").is_some_and(|t| t == "dumb");
        let no_color = var("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && !dumb && !no_color,
        };
        let columns = var("COLUMNS").and_then(|c| c.trim().parse::<usize>().ok()).filter(|&c| c >= 40);
        // A terminal narrower than 40 columns gets 40: no table is readable narrower.
        let terminal =
            tty.then(terminal_size::terminal_size).flatten().map(|(w, _)| usize::from(w.0).max(40));
        Style { color, width: Some(terminal.or(columns).unwrap_or(DEFAULT_WIDTH)) }
    }

    /// The same style without a width limit.
    pub fn unbounded(self) -> Style {
        Style { width: None, ..self }
    }
}

/// The colour of a status: OK green, WARN yellow, MISSING red.
pub fn status_color(s: Status) -> Color {
    match s {
        Status::Ok => Color::Green,
        Status::Warn => Color::Yellow,
        Status::Missing => Color::Red,
    }
}

/// `text` in `color` as ANSI escapes when `on`, for lines outside tables.
pub fn paint(text: &str, color: Color, on: bool) -> String {
    if !on {
        return text.to_string();
    }
    let code = match color {
        Color::Green => 32,
        Color::Yellow => 33,
        Color::Red => 31,
        Color::Cyan => 36,
        _ => 1,
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// Wraps `text` to `width` (no limit: one line), continuing lines under `indent`.
pub fn wrap(text: &str, first: &str, indent: &str, width: Option<usize>) -> String {
    let Some(width) = width else { return format!("{first}{text}") };
    // A path longer than a line loses its start (its end names what it is), as table cells do.
    let room = width.max(40).saturating_sub(first.chars().count().max(indent.chars().count()));
    let fitted: Vec<String> = text.split(' ').map(|w| cut_path_start(w, room)).collect();
    let text = fitted.join(" ");
    let opts = textwrap::Options::new(width.max(40))
        .initial_indent(first)
        .subsequent_indent(indent)
        .break_words(false)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::fill(&text, opts)
}

/// `word` in at most `room` characters when it is a path: its start cut for "…", at a `/` so
/// whole trailing components stay (`…/x86_64-linux-gnu/librocblas.so.4.4`, never `…c.so.4.4`
/// when a component fits); any other word as it is.
pub fn cut_path_start(word: &str, room: usize) -> String {
    let n = word.chars().count();
    if n <= room || !word.contains('/') || room < 2 {
        return word.to_string();
    }
    // The longest tail that starts at a `/` (the path's own last `/` of a folder excepted) and
    // fits behind "…".
    let body = word.trim_end_matches('/');
    let at_slash = body.match_indices('/').map(|(i, _)| i).find(|&i| word[i..].chars().count() < room);
    if let Some(i) = at_slash {
        return format!("…{}", &word[i..]);
    }
    // Not even the last component fits: its end, which names the target, stays.
    let tail: String = word.chars().skip(n - (room - 1)).collect();
    format!("…{tail}")
}

/// Fills a table cell to `width` columns: paths cut at their start to fit, lines broken between
/// words, and only a word longer than the cell broken inside.
pub fn fill_cell(text: &str, width: usize) -> String {
    let fitted: Vec<String> = text.split(' ').map(|w| cut_path_start(w, width)).collect();
    let opts = textwrap::Options::new(width.max(1))
        .break_words(true)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::fill(&fitted.join(" "), opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn colour_follows_the_choice_and_the_environment() {
        // Tests run with stdout captured: not a terminal, so auto never colours.
        assert!(!Style::detect(ColorChoice::Auto, true, env(&[])).color);
        assert!(Style::detect(ColorChoice::Always, false, env(&[("NO_COLOR", "1"), ("TERM", "dumb")])).color);
        assert!(!Style::detect(ColorChoice::Never, true, env(&[])).color);
    }

    #[test]
    fn width_comes_from_columns_when_there_is_no_terminal() {
        assert_eq!(Style::detect(ColorChoice::Auto, true, env(&[])).width, Some(DEFAULT_WIDTH));
        assert_eq!(Style::detect(ColorChoice::Auto, true, env(&[("COLUMNS", "132")])).width, Some(132));
        // Nonsense and tiny widths are ignored.
        assert_eq!(
            Style::detect(ColorChoice::Auto, true, env(&[("COLUMNS", "x")])).width,
            Some(DEFAULT_WIDTH)
        );
        assert_eq!(
            Style::detect(ColorChoice::Auto, true, env(&[("COLUMNS", "8")])).width,
            Some(DEFAULT_WIDTH)
        );
    }

    #[test]
    fn paths_lose_whole_leading_components_first() {
        let p = "deb/sid-root/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.15.0";
        assert_eq!(cut_path_start(p, 40), "…/libhsa-runtime64.so.1.15.0");
        assert_eq!(cut_path_start(p, 48), "…/x86_64-linux-gnu/libhsa-runtime64.so.1.15.0");
        // A folder keeps its trailing `/`.
        assert_eq!(cut_path_start("usr/lib/x86_64-linux-gnu/hipblaslt/library/", 24), "…/hipblaslt/library/");
        // A last component too long for the room keeps its end.
        assert_eq!(cut_path_start("a/TensileLibrary_lazy_gfx1151.dat", 12), "…gfx1151.dat");
        assert_eq!(cut_path_start("short/path", 40), "short/path");
    }

    #[test]
    fn cells_break_between_words_and_cut_paths() {
        let cell = fill_cell(
            "loads usr/lib/x86_64-linux-gnu/hipblaslt/library/TensileLibrary_lazy_gfx1151.dat now",
            40,
        );
        assert_eq!(cell, "loads …/TensileLibrary_lazy_gfx1151.dat\nnow");
        assert!(fill_cell("hipv4-amdgcn-amd-amdhsa--gfx11-generic", 20)
            .lines()
            .all(|l| l.chars().count() <= 20));
    }

    #[test]
    fn paint_adds_escapes_only_when_on() {
        assert_eq!(paint("OK", Color::Green, false), "OK");
        assert_eq!(paint("OK", Color::Green, true), "\x1b[32mOK\x1b[0m");
    }
}
