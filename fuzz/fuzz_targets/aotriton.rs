//! AOTriton AKS2 archives: `parse::aotriton::parse_aks2_header`, the directory walk on the
//! bytes after the header taken as an already-inflated directory, and
//! `families::aotriton::count_kernels` (header, bounded xz inflation of the directory, walk).
#![no_main]

use gfxscan::families::aotriton::count_kernels;
use gfxscan::parse::aotriton::{is_aks2, parse_aks2_directory, parse_aks2_header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = is_aks2(data);
    if let Ok(h) = parse_aks2_header(&data) {
        if let Some(rest) = data.get(16..) {
            if let Ok(entries) = parse_aks2_directory(rest, &h) {
                std::hint::black_box(format!("{entries:?}"));
            }
        }
    }
    match count_kernels(&data) {
        Ok(n) => {
            std::hint::black_box(n);
        }
        Err(e) => {
            std::hint::black_box(e.to_string());
        }
    }
});
