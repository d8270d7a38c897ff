//! PE images and COFF objects: section table, long names through the string table, the file
//! range of `.hip_fat`/`.hip_fatbin`; the bundles found there are walked and resolved.
#![no_main]

use gfxscan::parse::bundle::parse_bundles;
use gfxscan::parse::pe::{hip_fatbin_range, is_pe_or_coff, parse_pe};
use gfxscan::parse::Slice;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = is_pe_or_coff(data);
    if let Ok(pe) = parse_pe(&data) {
        std::hint::black_box(pe.offloading().count());
        std::hint::black_box(format!("{pe:?}"));
    }
    if let Ok(Some((off, size))) = hip_fatbin_range(&data) {
        common::drive_bundles(&parse_bundles(&Slice::new(&data, off, size)));
    }
});
