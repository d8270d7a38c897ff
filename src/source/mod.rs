//! Where bytes come from: the walk of the roots and positioned reads of the files it finds.
//! With KFD's sysfs (`check::devices`), the only code that touches the file system on the way in.

pub mod file;
pub mod origin;
pub mod snapshot;
pub mod sqlite;
pub mod walk;
