//! One item inspected as the scanner inspects it (`inspect::inspect`): classification, then the
//! collection of code objects from whatever container the bytes are — code object, bundles,
//! host ELF (`.hip_fatbin`, embedded, `.llvm.offloading`, kpack marks), OffloadBinary (inflated
//! when compressed), `.kpack` kernels (zstd frames), PE images — and family facts. The path it is
//! judged by is picked from the first byte, so family detection runs too.
#![no_main]

use std::ffi::OsStr;
use std::path::Path;

use gfxscan::decode::Decoding;
use gfxscan::inspect::{inspect, Reading};
use gfxscan::parse::Depth;
use gfxscan::model::RelPath;
use gfxscan::parse::magic::SNIFF_LEN;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const NAMES: [&str; 6] = [
    "lib/libfoo.so",
    "lib/rocblas/library/TensileLibrary_lazy_gfx942.dat",
    "share/miopen/db/gfx942130.HIP.fdb.txt",
    "lib/firmware/amdgpu/gc_11_0_0_mec.bin",
    "lib/aotriton.images/amd-gfx942/flash/attn_fwd/k.aks2",
    ".kpack/blas_lib_gfx1151.kpack",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let name = Path::new(NAMES[usize::from(pick) % NAMES.len()]);
    let head = &bytes[..bytes.len().min(SNIFF_LEN)];
    // The top bit of the first byte picks how deep compressed bundles are read.
    let wanted = ["gfx1100".to_string()];
    let targets = common::targets();
    let depth = if pick & 0x80 == 0 { Depth::Facts } else { Depth::Tables { wanted: &wanted, targets } };
    let decoding = Decoding::default();
    let reading = Reading { targets: common::targets(), depth, decoding: &decoding, digests: false };
    let out = inspect(&bytes, head, name, None, RelPath::new(0, OsStr::new("x")), reading);
    std::hint::black_box(format!("{out:?}"));
});
