//! Where bytes come from: the walk of the roots, positioned reads of the files it finds, byte
//! origins that can be reopened (file ranges, memory, decoded streams), SQLite row counts, and
//! saved snapshots. With KFD's sysfs (`check::devices`), the only code that reads the file
//! system.

pub mod file;
pub mod origin;
pub mod snapshot;
pub mod sqlite;
pub mod walk;
