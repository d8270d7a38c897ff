//! Terminal-safe text: control characters that came with names (a file in a wheel named
//! `lib\e[2J\e[31mRED.so`, a Tensile file whose name sets the terminal's title) are shown
//! escaped, never sent to the reader's terminal, spreadsheet or log as they are.
//!
//! [`shown`] escapes one name; [`TerminalSafe`] is the writer every text output (tables,
//! Markdown, CSV, Prometheus, URIs) goes through, whatever built its lines: C0 controls but the
//! newline, DEL and C1 controls (U+0080–U+009F) become `\e`, `\xNN` and `\u{NN}`. Colour stays:
//! with colour on, a complete SGR sequence (`ESC [ digits and ; m`, all the styles gfxscan and
//! comfy-table write) passes; any other escape — erasing, moving the cursor, setting a title —
//! is escaped.

use std::borrow::Cow;
use std::io::{self, Write};

/// The longest SGR sequence let through (`ESC [ 38;5;196 m` and the like are far shorter).
const MAX_SGR: usize = 24;

/// How one control character is shown (`\e`, `\x07`, `\u{9b}`), or `None` for other characters.
fn escape(c: char) -> Option<String> {
    match c {
        '\x1b' => Some("\\e".to_string()),
        '\0'..='\x1f' | '\x7f' => Some(format!("\\x{:02x}", c as u32)),
        '\u{80}'..='\u{9f}' => Some(format!("\\u{{{:x}}}", c as u32)),
        _ => None,
    }
}

/// `name` with every control character escaped (the newline too: a name is one line).
pub fn shown(name: &str) -> Cow<'_, str> {
    if !name.chars().any(|c| escape(c).is_some()) {
        return Cow::Borrowed(name);
    }
    Cow::Owned(name.chars().map(|c| escape(c).unwrap_or_else(|| c.to_string())).collect())
}

/// `text` with every control character but the newline escaped: a message of several lines.
pub fn shown_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && escape(c).is_some()) {
        return Cow::Borrowed(text);
    }
    let each = |c: char| match c {
        '\n' => "\n".to_string(),
        c => escape(c).unwrap_or_else(|| c.to_string()),
    };
    Cow::Owned(text.chars().map(each).collect())
}

/// A CSV cell a spreadsheet would take as a formula (`=`, `+`, `-`, `@`, or a tab or carriage
/// return first: OWASP "CSV Injection") made plain text by a leading apostrophe; numbers
/// (`-1`) stay numbers.
pub fn csv_cell(cell: &str) -> Cow<'_, str> {
    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']) && cell.parse::<f64>().is_err();
    match formula {
        true => Cow::Owned(format!("'{cell}")),
        false => Cow::Borrowed(cell),
    }
}

/// One CSV record, each cell through [`csv_cell`].
pub fn write_record<I, T>(w: &mut csv::Writer<Vec<u8>>, record: I) -> csv::Result<()>
where
    I: IntoIterator<Item = T>,
    T: AsRef<str>,
{
    w.write_record(record.into_iter().map(|c| csv_cell(c.as_ref()).into_owned()))
}

/// A writer that escapes control characters on their way out ([`shown`]'s escapes; the newline
/// passes, and with `sgr` complete SGR colour sequences). Bytes are held only while a sequence
/// may still be completed by the next write: a UTF-8 lead byte, an escape sequence.
pub struct TerminalSafe<'w> {
    inner: &'w mut dyn Write,
    sgr: bool,
    pending: Vec<u8>,
}

impl<'w> TerminalSafe<'w> {
    /// Escapes what is written to `inner`; `sgr` lets colour through.
    pub fn new(inner: &'w mut dyn Write, sgr: bool) -> Self {
        TerminalSafe { inner, sgr, pending: Vec::new() }
    }

    /// What `bytes` (pending ones first) become, and what stays pending.
    fn filter(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.pending);
        all.extend_from_slice(bytes);
        let mut out = Vec::with_capacity(all.len());
        let mut i = 0;
        while let Some(&b) = all.get(i) {
            match b {
                b'\n' => {
                    out.push(b);
                    i += 1;
                }
                0x1b if self.sgr => match sgr_len(all.get(i..).unwrap_or_default()) {
                    Sgr::Complete(n) => {
                        out.extend_from_slice(all.get(i..i + n).unwrap_or_default());
                        i += n;
                    }
                    Sgr::Incomplete => {
                        self.pending = all.get(i..).unwrap_or_default().to_vec();
                        return out;
                    }
                    Sgr::Not => {
                        out.extend_from_slice(b"\\e");
                        i += 1;
                    }
                },
                0..=0x1f | 0x7f => {
                    out.extend_from_slice(escape(char::from(b)).unwrap_or_default().as_bytes());
                    i += 1;
                }
                0xc2 => match all.get(i + 1) {
                    None => {
                        self.pending = vec![b];
                        return out;
                    }
                    Some(&n @ 0x80..=0x9f) => {
                        out.extend_from_slice(format!("\\u{{{n:x}}}").as_bytes());
                        i += 2;
                    }
                    Some(_) => {
                        out.push(b);
                        i += 1;
                    }
                },
                _ => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        out
    }
}

/// What the bytes at an escape are, as colour.
enum Sgr {
    /// A complete `ESC [ … m` of this many bytes.
    Complete(usize),
    /// Could still become one.
    Incomplete,
    /// Anything else.
    Not,
}

fn sgr_len(b: &[u8]) -> Sgr {
    match b.get(1) {
        None => return Sgr::Incomplete,
        Some(b'[') => {}
        Some(_) => return Sgr::Not,
    }
    for (n, c) in b.iter().enumerate().skip(2).take(MAX_SGR) {
        match c {
            b'm' => return Sgr::Complete(n + 1),
            b'0'..=b'9' | b';' => {}
            _ => return Sgr::Not,
        }
    }
    if b.len() < MAX_SGR + 2 {
        Sgr::Incomplete
    } else {
        Sgr::Not
    }
}

impl Write for TerminalSafe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let out = self.filter(buf);
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    /// Flushes what is pending as it stands (an escape that never completed is shown escaped).
    fn flush(&mut self) -> io::Result<()> {
        let rest = std::mem::take(&mut self.pending);
        let sgr = std::mem::replace(&mut self.sgr, false);
        let out = self.filter(&rest);
        self.sgr = sgr;
        self.inner.write_all(&out)?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(sgr: bool, pieces: &[&[u8]]) -> String {
        let mut out = Vec::new();
        {
            let mut w = TerminalSafe::new(&mut out, sgr);
            for p in pieces {
                w.write_all(p).unwrap_or_default();
            }
            w.flush().unwrap_or_default();
        }
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn names_are_shown_escaped() {
        assert_eq!(shown("lib\x1b[2J\x1b[31mRED.so"), "lib\\e[2J\\e[31mRED.so");
        assert_eq!(shown("a\x07b\u{9b}c\nd"), "a\\x07b\\u{9b}c\\x0ad");
        assert!(matches!(shown("plain.so"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_writer_escapes_controls_and_keeps_colour_and_newlines() {
        let hostile: &[u8] = b"x\x1b]0;pwned\x07y\x1b[2Jz\n";
        assert_eq!(through(false, &[hostile]), "x\\e]0;pwned\\x07y\\e[2Jz\n");
        // With colour, SGR passes, erasing does not.
        assert_eq!(through(true, &[b"\x1b[32mOK\x1b[0m \x1b[2J"]), "\x1b[32mOK\x1b[0m \\e[2J");
        assert_eq!(through(false, &[b"\x1b[32mOK"]), "\\e[32mOK");
        // Split across writes: an escape, a C1 control's two bytes, an é.
        assert_eq!(through(true, &[b"\x1b[3", b"1mR\xc2", b"\x9b\xc3", b"\xa9"]), "\x1b[31mR\\u{9b}é");
        // An escape that never completes is shown escaped at the end.
        assert_eq!(through(true, &[b"a\x1b[31"]), "a\\e[31");
    }

    #[test]
    fn formula_cells_are_plain_text() {
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("-1"), "-1");
        assert_eq!(csv_cell("gfx1100"), "gfx1100");
    }
}
