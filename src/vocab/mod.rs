//! Shared vocabulary: the words every stage uses, defined once — the GPU target table, target
//! IDs and the runtime's compatibility rule, units for people, and compression codecs.

pub mod codec;
pub mod library;
pub mod target_id;
pub mod targets;
pub mod units;
pub mod verdict;
