//! Inspection of one item: a file or an archive member becomes its record.

pub mod resolve;
