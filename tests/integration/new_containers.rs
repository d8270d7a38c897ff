//! Where ROCm packaging is going: LLVM OffloadBinaries (the new offload driver), TheRock's
//! kpack split (device code moved out of host libraries into per-arch `.kpack` archives), and
//! Windows PE images. Fixtures are written with the upstream writers' logic (LLVM
//! `OffloadBinary::write`, rocm-kpack `PackedKernelArchive.write` and `kpack_transform.py`, the
//! PE/COFF layout clang's `.hip_fat` section lands in), through `gfxscan::parse::*::fixture`.

use serde_json::Value;

use gfxscan::parse::kpack::fixture::{kpack, kpack_ref, wrappers};
use gfxscan::parse::offload::fixture::{compressed_offload_binary, offload_binary, Image};
use gfxscan::parse::pe::fixture::pe_image;
use gfxscan::testing::{fatbin, host_elf, HostSection};

use crate::fixtures::{co, hip_bundle, GFX1100, GFX942};
use crate::util::{gfxscan, Tree};

const GFX1151: u32 = 0x04a;
/// `HIPK` as a little-endian u32 (rocm-kpack `kpack_transform.py` `rewrite_hipfatbin_magic`).
const HIPK: u32 = 0x4b50_4948;

fn code_objects<'a>(snap: &'a Value, path: &str) -> Vec<(&'a str, &'a str)> {
    let f = snap["files"].as_array().expect("files").iter().find(|f| f["path"] == path).expect(path);
    f["code_objects"]
        .as_array()
        .expect("code objects")
        .iter()
        .map(|c| (c["processor"].as_str().unwrap_or(""), c["location"]["in"].as_str().unwrap_or("")))
        .collect()
}

/// LLVM `OffloadBinary` (llvm/lib/Object/OffloadBinary.cpp `write`): a standalone file, the same
/// binaries in a host ELF's `.llvm.offloading` section, and a compressed (version 3) one.
#[test]
fn offload_binaries_are_read_standalone_in_host_sections_and_compressed() {
    let (a, b) = (co(GFX942, 0, 2), co(GFX1100, 0, 3));
    let plain = offload_binary(&[Image::hip("gfx942", &a), Image::hip("gfx1100", &b)]);
    let tree = Tree::new();
    tree.file("lib/kernels.offload", &plain);
    tree.file("lib/libnew.so", &host_elf(&[HostSection::rodata(".llvm.offloading", &plain)]));
    tree.file("lib/packed.offload", &compressed_offload_binary(&[Image::hip("gfx942", &a)], true));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let want = [("gfx942", "offload-image"), ("gfx1100", "offload-image")];
    assert_eq!(code_objects(&snap, "lib/kernels.offload"), want);
    assert_eq!(code_objects(&snap, "lib/libnew.so"), want);
    assert_eq!(code_objects(&snap, "lib/packed.offload"), [("gfx942", "offload-image")]);
    // `.llvm.offloading` is for the linker wrapper: LLVM drops it from linked output and clr
    // never reads it, so code found only there is no library's, and there is nothing to check.
    let check = gfxscan([
        "check",
        "--quiet",
        "--json",
        "--gpu",
        "gfx1100",
        &tree.path("lib/libnew.so").to_string_lossy(),
    ]);
    check.expect_code(4);
}

/// A kpack-split library (rocm-kpack `elf/kpack_transform.py`: `.rocm_kpack_ref` names the
/// archives, `HIPK` wrappers carry the code-object index) with one archive installed.
fn split_install() -> Tree {
    let tree = Tree::new();
    let reference = kpack_ref("lib/libblas.so", &["../.kpack/blas_lib_@GFXARCH@.kpack"]);
    let marks = wrappers(&[(HIPK, 0), (HIPK, 1)]);
    let lib = host_elf(&[
        HostSection::rodata(".rocm_kpack_ref", &reference),
        HostSection::rodata(".hipFatBinSegment", &marks),
    ]);
    tree.file("lib/libblas.so", &lib);
    let (k0, k1) = (co(GFX1151, 0, 4), co(GFX1151, 0, 5));
    let kernels = [("lib/libblas.so#0", "gfx1151", &k0[..]), ("lib/libblas.so#1", "gfx1151", &k1[..])];
    tree.file(".kpack/blas_lib_gfx1151.kpack", &kpack(&kernels, true));
    tree
}

#[test]
fn kpack_archives_count_per_target_and_split_libraries_record_their_reference() {
    let tree = split_install();
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(
        code_objects(&snap, ".kpack/blas_lib_gfx1151.kpack"),
        [("gfx1151", "kpack-kernel"), ("gfx1151", "kpack-kernel")]
    );
    let lib =
        snap["files"].as_array().expect("files").iter().find(|f| f["path"] == "lib/libblas.so").expect("lib");
    assert_eq!(lib["kpack_ref"]["kernel_name"], "lib/libblas.so");
    assert_eq!(lib["kpack_ref"]["code_objects"], serde_json::json!([0, 1]));
}

/// rocm-kpack runtime/src/loader.cpp: the archive for the GPU is found through the search
/// path, or the library's kernels have no code.
#[test]
fn check_says_which_kpack_serves_the_gpu_or_that_it_is_not_installed() {
    let tree = split_install();
    let run = gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1151", &tree.root_str()]);
    run.expect_code(0);
    let v = &run.json()["installs"][0]["gpus"][0]["verdicts"][0];
    assert_eq!(v["status"], "ok", "{v:#}");
    assert!(
        v["detail"].as_str().unwrap_or("").contains("gfx1151 code is in blas_lib_gfx1151.kpack"),
        "{v:#}"
    );

    let run = gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1100", &tree.root_str()]);
    run.expect_code(1);
    let v = &run.json()["installs"][0]["gpus"][0]["verdicts"][0];
    assert_eq!(v["status"], "missing", "{v:#}");
    let detail = v["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("none for gfx1100 is installed") && detail.contains(".kpack/blas_lib_gfx1100.kpack"),
        "{detail}"
    );

    // The archive for the GPU, without the library's second code object: the loader fails it.
    let (k0,) = (co(GFX1151, 0, 4),);
    tree.file(".kpack/blas_lib_gfx1151.kpack", &kpack(&[("lib/libblas.so#0", "gfx1151", &k0[..])], false));
    let run = gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1151", &tree.root_str()]);
    run.expect_code(1);
    let v = &run.json()["installs"][0]["gpus"][0]["verdicts"][0];
    assert!(v["detail"].as_str().unwrap_or("").contains("not lib/libblas.so#1"), "{v:#}");
}

/// clang puts HIP fat binaries in `.hip_fatbin`, cut to `.hip_fat` in a linked PE image
/// (clang/lib/CodeGen/CGCUDANV.cpp; 8-character COFF section names).
#[test]
fn windows_dlls_carry_bundles_in_hip_fat() {
    let fat = fatbin(&[hip_bundle(&[("gfx1100", &co(GFX1100, 0, 2)), ("gfx942", &co(GFX942, 0, 1))])]);
    let tree = Tree::new();
    tree.file("bin/rocblas.dll", &pe_image(&[(".text", b"\x90\x90"), (".hip_fat", &fat)]));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(
        code_objects(&snap, "bin/rocblas.dll"),
        [("gfx1100", "bundle-entry"), ("gfx942", "bundle-entry")]
    );
    assert_eq!(snap["summary"]["kinds"]["pe"], 1);
    let run = gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1151", &tree.root_str()]);
    run.expect_code(1);
}

/// Review finding: clr's `FatBinaryInfo::ExtractKpackBinary` asks the kpack loader for the
/// device's ISA and then its generic target (`TargetToGeneric`), so an archive of generic code
/// serves the GPU.
#[test]
fn a_generic_kpack_archive_serves_the_gpu() {
    use crate::fixtures::{GENERIC_V1, GFX11_GENERIC};
    let tree = Tree::new();
    let reference = kpack_ref("lib/libblas.so", &["../.kpack/blas_lib_@GFXARCH@.kpack"]);
    let lib = host_elf(&[
        HostSection::rodata(".rocm_kpack_ref", &reference),
        HostSection::rodata(".hipFatBinSegment", &wrappers(&[(HIPK, 0)])),
    ]);
    tree.file("lib/libblas.so", &lib);
    let k = co(GFX11_GENERIC, GENERIC_V1, 3);
    tree.file(
        ".kpack/blas_lib_gfx11-generic.kpack",
        &kpack(&[("lib/libblas.so#0", "gfx11-generic", &k[..])], false),
    );
    let run = gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1151", &tree.root_str()]);
    run.expect_code(0);
    let v = &run.json()["installs"][0]["gpus"][0]["verdicts"][0];
    assert!(v["detail"].as_str().unwrap_or("").contains("blas_lib_gfx11-generic.kpack"), "{v:#}");
}

/// Review finding: a search path that leaves the scanned root (`check /opt/rocm/lib`) is not
/// seen, which is not missing: a WARN that says so, not a MISSING.
#[test]
fn kpack_archives_outside_the_root_are_not_checked_not_missing() {
    let tree = split_install();
    let run =
        gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1151", &tree.path("lib").to_string_lossy()]);
    run.expect_code(0);
    let v = &run.json()["installs"][0]["gpus"][0]["verdicts"][0];
    assert_eq!(v["status"], "warn", "{v:#}");
    assert!(v["detail"].as_str().unwrap_or("").contains("outside the scanned root"), "{v:#}");
}

/// Review finding: rocm-kpack `coff/zero_page.py` drops only whole pages of `.hip_fat`, so a
/// split DLL keeps a partial page of bundle bytes; they are leftovers, not bundles to read.
#[test]
fn a_kpack_split_dll_keeps_no_bundles_and_no_problem() {
    let fat = fatbin(&[hip_bundle(&[("gfx1100", &co(GFX1100, 0, 2))])]);
    let leftover = &fat[fat.len().saturating_sub(700)..];
    let reference = kpack_ref("bin/blas.dll", &["../.kpack/blas_lib_@GFXARCH@.kpack"]);
    let marks = wrappers(&[(HIPK, 0)]);
    let dll = pe_image(&[(".hip_fat", leftover), (".kpackrf", &reference), (".hipFatB", &marks)]);
    let tree = Tree::new();
    tree.file("bin/blas.dll", &dll);
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(snap["problems"], serde_json::json!([]));
    let f =
        snap["files"].as_array().expect("files").iter().find(|f| f["path"] == "bin/blas.dll").expect("dll");
    assert_eq!(f["kpack_ref"]["kernel_name"], "bin/blas.dll");
    assert_eq!(f["bundles"], 0);
}

/// A framework's `.rodata` (or a DLL's `.rdata`) as a library that loads its kernels with
/// `hipModuleLoadData` keeps them: a plain bundle with generic and gfx1100 code, and a CCOB v2
/// bundle with gfx942 and gfx1100 code, behind the magics as string constants.
fn framework_data() -> Vec<u8> {
    use crate::fixtures::{GENERIC_V1, GFX11_GENERIC};
    use gfxscan::testing::{code_object, CodeObjectSpec};
    use gfxscan::vocab::codec::Codec;
    // A V6 object (ABI version 4) of generic version 1, as clang writes gfx11-generic code.
    let generic = code_object(&CodeObjectSpec::new(4, GFX11_GENERIC | GENERIC_V1, &["k0"]));
    let first = hip_bundle(&[("gfx11-generic", &generic), ("gfx1100", &co(GFX1100, 0, 2))]);
    let second = hip_bundle(&[("gfx942", &co(GFX942, 0, 1)), ("gfx1100", &co(GFX1100, 0, 1))]);
    let mut data = b"__CLANG_OFFLOAD_BUNDLE__\0CCOB\0".to_vec();
    for b in [first, gfxscan::testing::ccob(2, Codec::Zstd, &second)] {
        data.resize(data.len().div_ceil(16) * 16, 0);
        data.extend_from_slice(&b);
    }
    data
}

/// clr `hip_module.cpp` `hipModuleLoadData` → `PlatformState::loadModule` → `DynCO::loadCodeObject`
/// → `FatBinaryInfo::ExtractFatBinaryUsingCOMGR` (hip_fatbin.cpp): the image a program hands the
/// runtime is unbundled by the same comgr lookup as a `.hip_fatbin` bundle. So a bundle kept in
/// `.rodata` is a bundle — entry IDs, format, its own code group — never loose objects: a
/// gfx1151 finds generic code in the first bundle and nothing in the second, which is MISSING,
/// where one pool of loose objects said OK.
#[test]
fn bundles_kept_as_data_are_bundles_a_gpu_needs_code_in_each() {
    let data = framework_data();
    let tree = Tree::new();
    tree.file("lib/libframework.so", &host_elf(&[HostSection::rodata(".rodata", &data)]));
    tree.file("bin/framework.dll", &pe_image(&[(".text", b"\x90\x90"), (".rdata", &data)]));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let want = [
        ("gfx11-generic", "bundle-entry"),
        ("gfx1100", "bundle-entry"),
        ("gfx942", "bundle-entry"),
        ("gfx1100", "bundle-entry"),
    ];
    for lib in ["lib/libframework.so", "bin/framework.dll"] {
        assert_eq!(code_objects(&snap, lib), want, "{lib}");
        let f = snap["files"].as_array().expect("files").iter().find(|f| f["path"] == lib).expect(lib);
        assert_eq!(f["bundles"], 2, "{lib}");
        let formats = crate::util::location_field(f, "format");
        assert_eq!(formats, ["plain", "plain", "ccob-v2", "ccob-v2"], "{lib}");
    }
    for lib in ["lib/libframework.so", "bin/framework.dll"] {
        let path = tree.path(lib).to_string_lossy().into_owned();
        let ok = gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1100", &path]);
        ok.expect_code(0);
        let v = &ok.json()["installs"][0]["gpus"][0]["verdicts"][0];
        // Native before generic whatever their order (comgr lookUpCodeObject, clr's native-first query).
        assert_eq!(v["loads"], "hipv4-amdgcn-amd-amdhsa--gfx1100", "{v:#}");
        let missing = gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1151", &path]);
        missing.expect_code(1);
        let v = &missing.json()["installs"][0]["gpus"][0]["verdicts"][0];
        assert!(v["detail"].as_str().unwrap_or("").contains("1 of 2 code groups"), "{lib}: {v:#}");
    }
}
