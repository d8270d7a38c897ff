//! Host ELF: section table, bundle sections (`.hip_fatbin`, `__CLANG_OFFLOAD_BUNDLE__*`) and the
//! finder for raw embedded AMDGPU ELFs.
#![no_main]

use gfxscan::parse::host::{parse_host_elf, parse_sections};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(sections) = parse_sections(&data) {
        std::hint::black_box(format!("{sections:?}"));
    }
    match parse_host_elf(&data) {
        Ok(facts) => {
            if let Some((_off, bundles)) = &facts.fatbin {
                common::drive_bundles(bundles);
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
