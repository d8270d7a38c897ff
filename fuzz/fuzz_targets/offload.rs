//! LLVM OffloadBinary: headers v1-v3, entry tables, string maps, compressed (zstd/zlib) v3
//! metadata, and the walk over binaries laid end to end; every uncompressed AMDGPU image is
//! parsed as a code object through its sub-range and resolved.
#![no_main]

use gfxscan::parse::elf::parse_code_object;
use gfxscan::parse::offload::{
    is_offload_binary, offload_kind_name, parse_offload_binaries, parse_offload_header,
};
use gfxscan::parse::Slice;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = is_offload_binary(data);
    if let Ok(h) = parse_offload_header(data, data.len() as u64) {
        std::hint::black_box((h, h.is_compressed()));
    }
    let got = parse_offload_binaries(&data);
    for b in &got.binaries {
        for e in &b.entries {
            std::hint::black_box((e.image_kind.name(), offload_kind_name(e.offload_kind), &e.arch));
            if b.compression.is_none() {
                let view = Slice::new(&data, e.image_offset, e.image_size);
                common::drive_co_result(&parse_code_object(&view, Some(e.image_size)));
            }
        }
    }
    std::hint::black_box(format!("{got:?}"));
});
