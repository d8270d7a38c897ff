//! kpack: `.kpack` archives (header, MessagePack TOC, raw blobs and zstd frame index), every
//! raw kernel parsed as a code object; `.rocm_kpack_ref` markers and `.hipFatBinSegment`
//! wrappers on the same bytes.
#![no_main]

use gfxscan::parse::elf::parse_code_object;
use gfxscan::parse::kpack::{
    is_kpack, is_kpack_split, parse_fatbin_wrappers, parse_kpack, parse_kpack_ref, KpackCompression,
};
use gfxscan::parse::Slice;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = is_kpack(data);
    match parse_kpack(&data) {
        Ok(k) => {
            std::hint::black_box(k.kernel_arches());
            if k.compression == KpackCompression::None {
                for kernel in &k.kernels {
                    let view = Slice::new(&data, kernel.offset, kernel.size);
                    common::drive_co_result(&parse_code_object(&view, Some(kernel.size)));
                }
            }
            std::hint::black_box(format!("{k:?}"));
        }
        Err(e) => {
            std::hint::black_box(e.to_string());
        }
    }
    if let Ok(r) = parse_kpack_ref(&data) {
        std::hint::black_box(r.paths_for("gfx1100"));
    }
    if let Ok(w) = parse_fatbin_wrappers(&data) {
        std::hint::black_box(is_kpack_split(&w));
    }
});
