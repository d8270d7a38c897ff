//! Kernel modules: `parse::modinfo::parse_modinfo` (the section table, then `.modinfo`) and
//! `modinfo_of` on the raw bytes taken as a section.
#![no_main]

use gfxscan::parse::modinfo::{modinfo_of, parse_modinfo, pci_device};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = parse_modinfo(&data) {
        std::hint::black_box(m.release());
        for a in &m.aliases {
            std::hint::black_box(pci_device(a));
        }
    }
    let m = modinfo_of(data);
    std::hint::black_box(m.firmware.len());
});
