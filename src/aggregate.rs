//! Aggregation: per-processor totals from the file records. Pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{FileRecord, TargetCounts};

/// Code objects, kernels, bytes and files per processor.
pub fn summarize_targets(files: &[FileRecord]) -> BTreeMap<String, TargetCounts> {
    let mut out: BTreeMap<String, TargetCounts> = BTreeMap::new();
    for f in files {
        let mut seen = BTreeSet::new();
        for co in &f.code_objects {
            let t = out.entry(co.processor.clone()).or_default();
            t.code_objects += 1;
            t.kernels += co.kernels.unwrap_or(0);
            t.bytes += co.size;
            *t.target_ids.entry(co.target_id.clone()).or_default() += 1;
            if seen.insert(co.processor.as_str()) {
                t.files += 1;
            }
        }
    }
    out
}
