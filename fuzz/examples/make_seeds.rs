//! Regenerates the seed corpora under `fuzz/seeds/<target>/` from the fixture builders of
//! `gfxscan::testing`, the real files in `tests/data/real`, `targets.toml` and a scan of a small
//! tree built here. Run from `fuzz/`: `cargo run --example make_seeds`.

use std::fs;
use std::path::{Path, PathBuf};

use gfxscan::testing::{
    bundle, ccob, code_object, fatbin, firmware_blob, host_elf, tensile_index, CodeObjectSpec, HostSection,
    Codec,
};

const GFX906: u32 = 0x02f;
const GFX90A: u32 = 0x03f;
const GFX1100: u32 = 0x041;
const GFX942: u32 = 0x04c;
const HOST: &str = "host-x86_64-unknown-linux-gnu";

fn small(mut spec: CodeObjectSpec) -> Vec<u8> {
    spec.text_len = 16;
    code_object(&spec)
}

fn put(dir: &Path, name: &str, data: &[u8]) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join(name), data).unwrap();
}

fn hip(t: &str) -> String {
    format!("hipv4-amdgcn-amd-amdhsa--{t}")
}

fn main() {
    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = fuzz.parent().unwrap().to_path_buf();
    let real = root.join("tests/data/real");
    let seeds = fuzz.join("seeds");
    let _ = fs::remove_dir_all(&seeds);
    let real_file = |n: &str| fs::read(real.join(n)).unwrap();

    // Code objects: V2 (ISA note + YAML), V3, V4 with features and target, V5, V6 generic.
    let co_v2 = small(CodeObjectSpec::v2((9, 0, 6), &["k0"]));
    let co_v3 = small(CodeObjectSpec::new(1, GFX906 | 0x200, &["k0", "k1"]));
    let co_v4 =
        small(CodeObjectSpec::v4(GFX90A, 0x300, &["k0"]).with_target("amdgcn-amd-amdhsa--gfx90a:xnack+"));
    let co_v5 = small(CodeObjectSpec::new(3, GFX942 | 0xc00, &["a", "b", "c"]));
    let co_v6 = small(CodeObjectSpec::new(4, 0x052 | (1 << 24), &["g"]));
    let mut co_rel = CodeObjectSpec::v4(GFX1100, 0, &["r"]).relocatable();
    co_rel.metadata = false;
    let co_rel = small(co_rel);

    let d = seeds.join("code_object");
    for (n, b) in [
        ("v2.co", &co_v2),
        ("v3.co", &co_v3),
        ("v4-xnack.co", &co_v4),
        ("v5.co", &co_v5),
        ("v6-generic.co", &co_v6),
        ("rel-nometa.co", &co_rel),
    ] {
        put(&d, n, b);
    }
    put(&d, "Kernels.so-000-gfx1032.hsaco", &real_file("Kernels.so-000-gfx1032.hsaco"));
    put(&d, "hsa-trap-handler-v2.o", &real_file("hsa-trap-handler-v2.o"));

    // Bundles: plain, CCOB v1/v2/v3 x zlib/zstd, a .hip_fatbin of several, the real ones.
    let plain = bundle(&[(HOST, &[]), (&hip("gfx90a:xnack+"), &co_v4), (&hip("gfx906"), &co_v3)], 64);
    let d = seeds.join("bundles");
    put(&d, "plain.bundle", &plain);
    put(&d, "ccob-v1-zlib", &ccob(1, Codec::Zlib, &plain));
    put(&d, "ccob-v2-zstd", &ccob(2, Codec::Zstd, &plain));
    put(&d, "ccob-v3-zlib", &ccob(3, Codec::Zlib, &plain));
    put(&d, "ccob-v3-zstd", &ccob(3, Codec::Zstd, &plain));
    let one = bundle(&[(HOST, &[]), (&hip("gfx900"), &co_v2)], 8);
    put(
        &d,
        "fatbin-3.hip_fatbin",
        &fatbin(&[one.clone(), ccob(1, Codec::Zstd, &one), ccob(2, Codec::Zlib, &one)]),
    );
    put(&d, "jax-prng.hip_fatbin", &real_file("jax-prng.hip_fatbin"));
    put(&d, "mori-io.hip_fatbin", &real_file("mori-io.hip_fatbin"));
    put(&d, "entry-id.txt", b"hip-amdgcn-amd-amdhsa-gfx906:sramecc+:xnack-");

    // Host ELFs: .hip_fatbin, a raw embedded code object in .rodata, a fat-object section.
    let fat = fatbin(&[plain.clone(), ccob(3, Codec::Zstd, &one)]);
    let d = seeds.join("host_elf");
    put(&d, "libfat.so", &host_elf(&[HostSection::hip_fatbin(&fat)]));
    put(&d, "embedded.so", &host_elf(&[HostSection::rodata(".rodata", &co_v5)]));
    let fat_o_name = format!("__CLANG_OFFLOAD_BUNDLE__{}", hip("gfx1100"));
    put(
        &d,
        "fat.o",
        &host_elf(&[HostSection::rodata(&fat_o_name, &co_rel), HostSection::rodata(".rodata", &co_v2)]),
    );
    put(&d, "mori-io.so", &host_elf(&[HostSection::hip_fatbin(&real_file("mori-io.hip_fatbin"))]));
    // Bundles kept as data, as a framework loading them with hipModuleLoadData keeps them, behind
    // the magics as strings.
    let mut data_bundles = b"__CLANG_OFFLOAD_BUNDLE__\0CCOB\0".to_vec();
    for b in [plain.clone(), ccob(2, Codec::Zstd, &one)] {
        data_bundles.resize(data_bundles.len().div_ceil(16) * 16, 0);
        data_bundles.extend_from_slice(&b);
    }
    put(&d, "rodata-bundles.so", &host_elf(&[HostSection::rodata(".rodata", &data_bundles)]));

    // MessagePack: Tensile indexes and a metadata note descriptor cut from a code object.
    let d = seeds.join("msgpack");
    put(&d, "TensileLibrary.dat", &tensile_index(&["gfx90a", "gfx942", "gfx1100"], 3));
    put(&d, "TensileLibrary_lazy_gfx90a.dat", &tensile_index(&["gfx90a"], 1));
    if let Some(meta) = msgpack_note(&co_v5) {
        put(&d, "kernel-metadata.msgpack", meta);
    }

    // MIOpen text DBs, an LFS pointer, and names.
    let d = seeds.join("miopen");
    put(&d, "gfx90a68.db.txt", b"key1=v:1,2;x:3\n\n  \nkey2=v:4\nlast-line-no-newline");
    put(&d, "lfs-pointer", b"version https://git-lfs.github.com/spec/v1\noid sha256:6252\nsize 1670498\n");
    put(&d, "name-miopen", b"gfx906_nosramecc_60");
    put(&d, "name-miopen-hex", b"gfx90878");
    put(&d, "name-firmware", b"gc_11_0_0_mec.bin.zst");
    put(&d, "name-tensile", b"Kernels.so-000-gfx90a-xnack+.hsaco");

    // Firmware: a raw blob with a common header, and the same blob zstd- and xz-compressed.
    let d = seeds.join("firmware");
    let blob = firmware_blob(0x1234, (11, 0), 512);
    put(&d, "gc_11_0_0_mec.bin", &blob);
    put(&d, "gc_11_0_0_mec.bin.zst", &zstd::bulk::compress(&blob, 19).unwrap());
    let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
    std::io::Write::write_all(&mut enc, &blob).unwrap();
    let xz = enc.finish().unwrap();
    put(&d, "gc_11_0_0_mec.bin.xz", &xz);

    // targets.toml: the built-in table and a small valid one.
    let d = seeds.join("targets_toml");
    let toml = fs::read_to_string(root.join("targets.toml")).unwrap();
    put(&d, "targets.toml", toml.as_bytes());
    put(
        &d,
        "small.toml",
        b"schema = 1\n\n[[target]]\nname = \"gfx90a\"\nmach = 0x03f\nfamily = \"gfx9\"\nfeatures = [\"sramecc\", \"xnack\"]\ngfx_target_version = 90010\n",
    );

    // Snapshots: a scan of tests/data/real, and of a tree with one file of every family.
    let d = seeds.join("snapshot");
    put(&d, "real.json", &scan_json(&real));
    // OffloadBinaries: one and two images, v3 compressed with zstd and zlib, two end to end.
    {
        use gfxscan::parse::offload::fixture::{compressed_offload_binary, offload_binary, Image};
        let images = [Image::hip("gfx90a:xnack+", &co_v4), Image::hip("gfx906", &co_v3)];
        let one = offload_binary(&images[..1]);
        let d = seeds.join("offload");
        put(&d, "one.offload", &one);
        put(&d, "two-images.offload", &offload_binary(&images));
        put(&d, "zstd.offload", &compressed_offload_binary(&images, true));
        put(&d, "zlib.offload", &compressed_offload_binary(&images[..1], false));
        put(&d, "section-of-two.bin", &[one.clone(), one].concat());
    }

    // kpack: raw and zstd-per-kernel archives, a .rocm_kpack_ref marker, HIPF/HIPK wrappers.
    {
        use gfxscan::parse::kpack::{fixture, HIPF_MAGIC, HIPK_MAGIC};
        let kernels: [fixture::Kernel; 2] =
            [("lib/libx.so#0", "gfx90a", co_v4.as_slice()), ("lib/libx.so#0", "gfx906", co_v3.as_slice())];
        let d = seeds.join("kpack");
        put(&d, "none.kpack", &fixture::kpack(&kernels, false));
        put(&d, "zstd.kpack", &fixture::kpack(&kernels, true));
        put(&d, "rocm_kpack_ref", &fixture::kpack_ref("lib/libx.so", &["../.kpack/x_@GFXARCH@.kpack"]));
        put(&d, "hipFatBinSegment", &fixture::wrappers(&[(HIPK_MAGIC, 0), (HIPF_MAGIC, 1)]));
    }

    // PE: a DLL with .hip_fat (the fat binary above), .hipFatB and .kpackrf sections.
    {
        use gfxscan::parse::kpack::{fixture as kp, HIPF_MAGIC};
        use gfxscan::parse::pe::fixture::pe_image;
        let wrappers = kp::wrappers(&[(HIPF_MAGIC, 0)]);
        let marker = kp::kpack_ref("bin/x.dll", &[".kpack/x_@GFXARCH@.kpack"]);
        let d = seeds.join("pe");
        put(&d, "hip.dll", &pe_image(&[(".text", &[0xc3; 16]), (".hipFatB", &wrappers), (".hip_fat", &fat)]));
        put(&d, "kpack-split.dll", &pe_image(&[(".hipFatB", &wrappers), (".kpackrf", &marker)]));
        put(&d, "rdata-bundles.dll", &pe_image(&[(".text", &[0xc3; 16]), (".rdata", &data_bundles)]));
    }

    let tmp = std::env::temp_dir().join("gfxscan-fuzz-seed-tree");
    let _ = fs::remove_dir_all(&tmp);
    put(&tmp.join("lib"), "libx.so", &host_elf(&[HostSection::hip_fatbin(&fat)]));
    put(&tmp.join("lib/rocblas/library"), "TensileLibrary_lazy_gfx90a.dat", &tensile_index(&["gfx90a"], 1));
    put(&tmp.join("lib/rocblas/library"), "Kernels.so-000-gfx90a-xnack+.hsaco", &co_v4);
    put(&tmp.join("share/miopen/db"), "gfx90a68.db.txt", b"a=1\nb=2\n");
    put(&tmp.join("lib/firmware/amdgpu"), "gc_11_0_0_mec.bin", &blob);
    put(&tmp.join("lib"), "a.co", &ccob(2, Codec::Zstd, &plain));
    put(&d, "mixed.json", &scan_json(&tmp));
    fs::remove_dir_all(&tmp).unwrap();
}

/// The descriptor of the first `NT_AMDGPU_METADATA` (type 32) note: found by its owner name.
fn msgpack_note(co: &[u8]) -> Option<&[u8]> {
    let at = co.windows(8).position(|w| w == b"AMDGPU\0\0")?;
    let hdr = at.checked_sub(12)?;
    let descsz = u32::from_le_bytes(co[hdr + 4..hdr + 8].try_into().ok()?) as usize;
    co.get(at + 8..at + 8 + descsz)
}

fn scan_json(root: &Path) -> Vec<u8> {
    let targets = gfxscan::vocab::targets::Targets::builtin();
    let config = gfxscan::scan::ScanConfig::of(vec![root.to_path_buf()]).with_threads(1);
    let bar = gfxscan::report::progress::Bar::new(true);
    let snap = gfxscan::scan::scan(&config, &targets, &bar).unwrap();
    let mut out = Vec::new();
    let view = gfxscan::report::scan::ScanView::default();
    let style = gfxscan::report::style::Style { color: false, width: None };
    gfxscan::report::write_scan(&snap, &targets, &[], &view, gfxscan::cli::OutputFormat::Json, style, &mut out)
        .unwrap();
    out
}
