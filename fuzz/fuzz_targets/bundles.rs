//! Offload bundles: plain tables, CCOB v1/v2/v3 (zlib and zstd streams), and the `.hip_fatbin`
//! walk over many bundles; entry IDs; CCOB headers.
#![no_main]

use gfxscan::parse::bundle::{is_bundle, parse_bundles, parse_ccob_header, parse_entry_id};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = is_bundle(data);
    let bundles = parse_bundles(&data);
    common::drive_bundles(&bundles);

    if let Ok(h) = parse_ccob_header(data) {
        std::hint::black_box(format!("{h:?}"));
    }

    let text = String::from_utf8_lossy(data);
    let id = parse_entry_id(&text);
    let _ = (id.is_host(), id.is_amdgcn());
    std::hint::black_box(format!("{id:?}"));
});
