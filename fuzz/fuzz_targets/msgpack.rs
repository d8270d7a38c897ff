//! MessagePack: code object metadata (`NT_AMDGPU_METADATA`), the leading-kernel-count shortcut,
//! Tensile `.dat` master-library indexes (lazy ones with their placeholder names), and a
//! sub-library's solution count from its first bytes.
#![no_main]

use gfxscan::parse::msgpack::{leading_kernel_count, parse_kernel_metadata};
use gfxscan::parse::tensile::{parse_lazy_index, parse_tensile_index, solution_count};
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
    match parse_lazy_index(&data) {
        Ok(t) => std::hint::black_box(format!("{t:?}")),
        Err(e) => std::hint::black_box(e.to_string()),
    };
    std::hint::black_box(solution_count(data));
});
