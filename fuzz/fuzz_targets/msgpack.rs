//! MessagePack: code object metadata (`NT_AMDGPU_METADATA`), the leading-kernel-count shortcut,
//! and Tensile `.dat` master-library indexes.
#![no_main]

use gfxscan::parse::msgpack::{leading_kernel_count, parse_kernel_metadata};
use gfxscan::parse::tensile::parse_tensile_index;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_kernel_metadata(data) {
        Ok(m) => std::hint::black_box(format!("{m:?}")),
        Err(e) => std::hint::black_box(e.to_string()),
    };
    std::hint::black_box(leading_kernel_count(data));
    match parse_tensile_index(&data) {
        Ok(t) => std::hint::black_box(format!("{t:?}")),
        Err(e) => std::hint::black_box(e.to_string()),
    };
});
