//! Where bytes come from: the walk of the roots, positioned reads of the files it finds, byte
//! origins that can be reopened (file ranges, memory, decoded streams), SQLite row counts,
//! saved snapshots, images in registries (over HTTP), and how much memory the process may use. With KFD's sysfs (`check::devices`), the only code that reads the file
//! system.

pub mod digest;
pub mod dlopen;
pub mod file;
pub mod kernel;
pub mod loader;
pub mod memory;
pub mod origin;
pub mod process;
pub mod registry;
pub mod rooted;
pub mod snapshot;
pub mod sqlite;
pub mod walk;
