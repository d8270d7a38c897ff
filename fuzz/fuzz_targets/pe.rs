//! PE images and COFF objects: section table, long names through the string table, the file
//! range of `.hip_fat`/`.hip_fatbin`; the bundles found there are walked and resolved, and the
//! data sections hunted for raw code objects and bundles kept as data.
#![no_main]

use gfxscan::parse::bundle::parse_bundles;
use gfxscan::decode::Decoding;
use gfxscan::parse::host::{hunt_data, HostFacts};
use gfxscan::parse::pe::{hip_fatbin_range, is_pe_or_coff, parse_pe};
use gfxscan::parse::Depth;
use gfxscan::parse::Slice;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = is_pe_or_coff(data);
    if let Ok(pe) = parse_pe(&data) {
        std::hint::black_box(pe.offloading().count());
        let end = data.len() as u64;
        let sections: Vec<(&str, u64, u64)> = pe
            .data_sections()
            .filter(|s| s.offset.checked_add(s.size).is_some_and(|e| e <= end))
            .map(|s| (s.name.as_str(), s.offset, s.size))
            .collect();
        let mut facts = HostFacts::default();
        hunt_data(&data, &sections, (Depth::Facts, &Decoding::default().inflater()), &mut facts);
        for d in &facts.data_bundles {
            common::drive_bundles(&d.bundles);
        }
        for e in &facts.embedded {
            common::drive_co_result(&e.code_object);
        }
        std::hint::black_box(format!("{pe:?}"));
    }
    if let Ok(Some((off, size))) = hip_fatbin_range(&data) {
        common::drive_bundles(&parse_bundles(&Slice::new(&data, off, size)));
    }
});
