//! SQLite databases (MIOpen's perf and kernel DBs): rows of one table counted, read-only. A file
//! on disk is opened immutable, so SQLite reads only that table's b-tree pages and writes no
//! lock, journal or WAL file; an archive member is loaded into memory first, up to a cap.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::parse::ByteSource;
use crate::source::origin::SourceReader;

/// Counts the rows of `table` in an SQLite database, opened read-only and immutable (no
/// locks, no journal or WAL files): SQLite reads only the table's b-tree pages.
pub fn rows_on_disk(path: &Path, table: &str) -> Result<u64, String> {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags).map_err(|e| format!("sqlite: {e}"))?;
    count_rows(&conn, table)
}

fn count_rows(conn: &Connection, table: &str) -> Result<u64, String> {
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
        .map_err(|e| format!("sqlite: {e}"))
}

/// Largest SQLite database without a path (an archive member) loaded into memory to count rows.
const SQLITE_IN_MEMORY: u64 = 256 << 20;

/// Counts the rows of `table` in an SQLite database that has no path on disk: it is loaded
/// read-only into an in-memory database, up to `SQLITE_IN_MEMORY` bytes.
pub fn rows_in_memory(src: &dyn ByteSource, table: &str) -> Result<u64, String> {
    let len = src.len();
    if len > SQLITE_IN_MEMORY {
        return Err(format!(
            "SQLite database of {len} bytes in an archive, over {SQLITE_IN_MEMORY}: rows not counted"
        ));
    }
    let mut conn = Connection::open_in_memory().map_err(|e| format!("sqlite: {e}"))?;
    conn.deserialize_read_exact("main", SourceReader::new(src, len), len as usize, true)
        .map_err(|e| format!("sqlite: {e}"))?;
    count_rows(&conn, table)
}
