//! Host ELF: section table, bundle sections (`.hip_fatbin`, `__CLANG_OFFLOAD_BUNDLE__*`), the
//! finder for raw embedded AMDGPU ELFs and bundles kept as data, the dynamic section the loader reads, and the same
//! bytes as an `ld.so.cache`.
#![no_main]

use gfxscan::parse::dynamic::parse_dynamic;
use gfxscan::parse::host::{parse_host_elf, parse_sections};
use gfxscan::parse::ldcache::parse_ld_cache;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    std::hint::black_box(format!("{:?}", parse_dynamic(&data)));
    std::hint::black_box(format!("{:?}", parse_ld_cache(data)));
    if let Ok(sections) = parse_sections(&data) {
        std::hint::black_box(format!("{sections:?}"));
    }
    match parse_host_elf(&data) {
        Ok(facts) => {
            if let Some((_off, bundles)) = &facts.fatbin {
                common::drive_bundles(bundles);
            }
            for d in &facts.data_bundles {
                common::drive_bundles(&d.bundles);
            }
            for e in &facts.embedded {
                std::hint::black_box(&e.bundle_entry_id);
                common::drive_co_result(&e.code_object);
            }
        }
        Err(e) => {
            std::hint::black_box(e.to_string());
        }
    }
});
