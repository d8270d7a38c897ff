//! AMDGPU code object ELF: header, section/program tables, notes (V2 ISA notes, V3+ MessagePack
//! metadata), kernel symbols; then target resolution through the built-in targets.toml.
#![no_main]

use gfxscan::parse::elf::parse_code_object;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    // As a bundle entry (the container gives the size) and standalone (size from its tables).
    let sized = parse_code_object(&data, Some(data.len() as u64));
    common::drive_co_result(&sized);
    let unsized_ = parse_code_object(&data, None);
    common::drive_co_result(&unsized_);
    // A container may claim more or less than the bytes at hand.
    if let Some(&b) = data.first() {
        let claimed = (data.len() as u64).wrapping_add(u64::from(b)).wrapping_sub(128);
        common::drive_co_result(&parse_code_object(&data, Some(claimed)));
    }
});
