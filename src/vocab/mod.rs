//! Shared vocabulary: the words every stage uses, defined once — the GPU target table, target
//! IDs, how the HIP runtime picks a device's code object, vendor policy, units for people, and
//! compression codecs.

pub mod codec;
pub mod library;
pub mod policy;
pub mod runtime;
pub mod target_id;
pub mod targets;
pub mod units;
pub mod verdict;
