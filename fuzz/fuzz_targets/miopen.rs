//! MIOpen text databases and git-lfs pointers, and the file-name parsers of `family`
//! (MIOpen DB names, firmware prefixes, Tensile file names).
#![no_main]

use gfxscan::families::firmware::firmware_prefix;
use gfxscan::families::miopen::miopen_name;
use gfxscan::families::tensile::tensile_name_target;
use gfxscan::parse::miopen::{count_text_records, parse_lfs_pointer};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = std::hint::black_box(count_text_records(&data));
    std::hint::black_box(parse_lfs_pointer(data));

    let t = common::targets();
    let name = String::from_utf8_lossy(data);
    std::hint::black_box(miopen_name(&name, t));
    std::hint::black_box(firmware_prefix(&name, t));
    std::hint::black_box(tensile_name_target(&name, t));
});
