//! amdgpu firmware: the common header, and whole-blob zstd / xz inflation with its size cap.
#![no_main]

use gfxscan::parse::firmware::{inflate_firmware, parse_firmware_header};
use gfxscan::vocab::codec::Codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    std::hint::black_box(parse_firmware_header(data, data.len() as u64));
    for codec in [Codec::Zstd, Codec::Xz] {
        if let Ok(plain) = inflate_firmware(data, codec) {
            std::hint::black_box(parse_firmware_header(&plain, plain.len() as u64));
        }
    }
});
