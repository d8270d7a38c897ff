//! MIOpen database contents: text records and git-lfs pointers.
//!
//! Text databases (perf `*.db.txt`, find `*.fdb.txt`, user `*.udb.txt`/`*.ufdb.txt`) hold one
//! record per line, `KEY=ID:VALUES;…` (MIOpen `db_record.hpp`); their record count is their
//! number of non-empty lines. SQLite databases (`*.db`, `*.kdb`) are counted by the scanner
//! through SQLite itself. A git-lfs pointer (`version https://git-lfs…`, `oid sha256:…`,
//! `size N`) stands where a database should be in source checkouts.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use serde::{Deserialize, Serialize};

use super::{ByteSource, Result};

/// What only a MIOpen file has.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MiopenFacts {
    /// Compute-unit count from the name (`gfx900_56`: 56).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cu_count: Option<u32>,
    /// Database records (text lines, `perf_db` or `kern_db` rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
}

const CHUNK: usize = 1 << 20;

/// Non-empty lines of a text database, read in chunks (a text DB can be hundreds of MB).
pub fn count_text_records(src: &dyn ByteSource) -> Result<u64> {
    let mut records = 0u64;
    let mut pos = 0u64;
    let mut line_has_text = false;
    while pos < src.len() {
        let chunk = src.read_up_to(pos, CHUNK)?;
        let mut start = 0usize;
        for nl in memchr::memchr_iter(b'\n', &chunk) {
            let line = chunk.get(start..nl).unwrap_or(&[]);
            if line_has_text || line.iter().any(|b| !b.is_ascii_whitespace()) {
                records += 1;
            }
            line_has_text = false;
            start = nl + 1;
        }
        let tail = chunk.get(start..).unwrap_or(&[]);
        line_has_text |= tail.iter().any(|b| !b.is_ascii_whitespace());
        pos += chunk.len() as u64;
    }
    Ok(records + u64::from(line_has_text))
}

/// The size a git-lfs pointer file says the real file has.
pub fn parse_lfs_pointer(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    if !text.starts_with("version https://git-lfs.github.com/spec/") {
        return None;
    }
    text.lines().find_map(|l| l.strip_prefix("size ")).and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn counts_non_empty_lines_with_or_without_final_newline() {
        assert_eq!(count_text_records(&b"a=1\nb=2\n".to_vec()).unwrap(), 2);
        assert_eq!(count_text_records(&b"a=1\n\n  \nb=2".to_vec()).unwrap(), 2);
        assert_eq!(count_text_records(&Vec::new()).unwrap(), 0);
    }

    #[test]
    fn lines_across_chunk_boundaries_count_once() {
        let mut text = vec![b'x'; CHUNK - 1];
        text.extend_from_slice(b"\nsecond line\n");
        assert_eq!(count_text_records(&text).unwrap(), 2);
    }

    #[test]
    fn lfs_pointer_size() {
        let p = b"version https://git-lfs.github.com/spec/v1\noid sha256:6252\nsize 1670498\n";
        assert_eq!(parse_lfs_pointer(p), Some(1670498));
        assert_eq!(parse_lfs_pointer(b"SQLite format 3\0"), None);
    }
}
