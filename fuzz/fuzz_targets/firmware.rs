//! amdgpu firmware: the common header, and whole-blob zstd / xz inflation with its size cap.
#![no_main]

use gfxscan::parse::firmware::{inflate_firmware, parse_firmware_header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    std::hint::black_box(parse_firmware_header(data, data.len() as u64));
    for xz in [false, true] {
        if let Ok(plain) = inflate_firmware(data, xz) {
            std::hint::black_box(parse_firmware_header(&plain, plain.len() as u64));
        }
    }
});
