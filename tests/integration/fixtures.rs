//! Inputs shared by several test files: code objects by target, bundle entry IDs, and the
//! "mixed" tree that holds one of every container gfxscan reads (and a few decoys).

use gfxscan::testing::{bundle, ccob, code_object, fatbin, host_elf, CodeObjectSpec, Codec, HostSection};

use crate::util::Tree;

/// `EF_AMDGPU_MACH` values from targets.toml.
pub const GFX900: u32 = 0x02c;
pub const GFX906: u32 = 0x02f;
pub const GFX1030: u32 = 0x036;
pub const GFX90A: u32 = 0x03f;
pub const GFX1100: u32 = 0x041;
pub const GFX942: u32 = 0x04c;

/// V4 feature fields: xnack on/off, sramecc on/off.
pub const XNACK_ON: u32 = 0x300;
pub const XNACK_OFF: u32 = 0x200;
pub const SRAMECC_ON: u32 = 0xc00;

/// `EF_AMDGPU_MACH` of gfx1010 and of the generic targets gfx9-4-generic and gfx11-generic
/// (targets.toml), and the V6 generic version 1 in `e_flags`.
pub const GFX1010: u32 = 0x033;
pub const GFX9_4_GENERIC: u32 = 0x05f;
pub const GFX11_GENERIC: u32 = 0x054;
pub const GFX9_GENERIC: u32 = 0x051;
pub const GENERIC_V1: u32 = 1 << 24;

/// A host library whose `.hip_fatbin` holds one bundle with a device entry per
/// `(target ID, code object)`.
pub fn host_lib(entries: &[(&str, &[u8])]) -> Vec<u8> {
    use gfxscan::testing::{fatbin, host_elf, HostSection};
    let fat = fatbin(&[hip_bundle(entries)]);
    host_elf(&[HostSection::rodata(".rodata", b"libfoo\0"), HostSection::hip_fatbin(&fat)])
}

/// The host entry clang puts first in every bundle (empty).
pub const HOST: &str = "host-x86_64-unknown-linux-gnu";

/// A V4 code object for `mach | features` with `kernels` kernels named `k0`, `k1`, ...
pub fn co(mach: u32, features: u32, kernels: usize) -> Vec<u8> {
    let names: Vec<String> = (0..kernels).map(|i| format!("k{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    code_object(&CodeObjectSpec::v4(mach, features, &names))
}

/// The HIP bundle entry ID of a target ID.
pub fn hip(target_id: &str) -> String {
    format!("hipv4-amdgcn-amd-amdhsa--{target_id}")
}

/// A plain bundle of a host entry and one device entry per `(target ID, code object)`.
pub fn hip_bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let ids: Vec<String> = entries.iter().map(|(t, _)| hip(t)).collect();
    let mut all: Vec<(&str, &[u8])> = vec![(HOST, &[])];
    all.extend(ids.iter().zip(entries).map(|(id, (_, data))| (id.as_str(), *data)));
    bundle(&all, 4096)
}

/// The code objects of the mixed tree, kept to check sizes and offsets against.
pub struct Mixed {
    pub tree: Tree,
    /// `foo.txt`: gfx90a:xnack+, 2 kernels, the whole file.
    pub foo_txt: Vec<u8>,
    /// `lib/rocblas/kernels.hsaco` (plain bundle): gfx900 (1 kernel), gfx906:sramecc+:xnack-
    /// (2), gfx1100 (3), after an empty host entry.
    pub hsaco: Vec<u8>,
    pub hsaco_900: Vec<u8>,
    pub hsaco_906: Vec<u8>,
    pub hsaco_1100: Vec<u8>,
    /// `lib/a.co`: CCOB v2 zstd of a bundle with gfx942:xnack- (4 kernels).
    pub a_942: Vec<u8>,
    /// `lib/b.co`: CCOB v3 zlib of a bundle with gfx1030 (5 kernels).
    pub b_1030: Vec<u8>,
    /// `lib/libx.so`: host ELF.
    pub libx: Vec<u8>,
    /// Its `.hip_fatbin` contents: plain bundle (gfx90a:xnack-, 1 kernel), CCOB v1 zlib
    /// (gfx900, 6 kernels), CCOB v3 zstd (gfx1100, 7 kernels), each 4096-aligned.
    pub fat: Vec<u8>,
    pub fat_90a: Vec<u8>,
    pub fat_900: Vec<u8>,
    pub fat_1100: Vec<u8>,
    /// Offsets of the three bundles inside `.hip_fatbin`.
    pub fat_bundle_offsets: [u64; 3],
    /// The raw gfx942 (sramecc+, 8 kernels) code object embedded in its `.rodata`.
    pub embedded_942: Vec<u8>,
    /// `obj/fat.o`: fat-object section `__CLANG_OFFLOAD_BUNDLE__hipv4-…--gfx1100` (9 kernels).
    pub fat_o: Vec<u8>,
    pub fat_o_1100: Vec<u8>,
}

/// Builds the mixed tree:
///
/// ```text
/// foo.txt                   AMDGPU code object (classified by magic, not name)
/// lib/rocblas/kernels.hsaco plain bundle: host + 3 device entries
/// lib/a.co                  CCOB v2 zstd
/// lib/b.co                  CCOB v3 zlib
/// lib/libx.so               host ELF: .rodata with a raw code object, .hip_fatbin with
///                           plain + CCOB v1 zlib + CCOB v3 zstd bundles
/// lib/plain.so              host ELF whose .rodata only mentions __CLANG_OFFLOAD_BUNDLE__
/// obj/sycl.o                host ELF with a __CLANG_OFFLOAD_BUNDLE__sycl-spir64 section
/// obj/fat.o                 host ELF with a __CLANG_OFFLOAD_BUNDLE__hipv4-…--gfx1100 section
/// ```
pub fn mixed() -> Mixed {
    let tree = Tree::new();

    let foo_txt = co(GFX90A, XNACK_ON, 2);
    tree.file("foo.txt", &foo_txt);

    let hsaco_900 = co(GFX900, 0, 1);
    let hsaco_906 = co(GFX906, SRAMECC_ON | XNACK_OFF, 2);
    let hsaco_1100 = co(GFX1100, 0, 3);
    let hsaco = hip_bundle(&[
        ("gfx900", &hsaco_900),
        ("gfx906:sramecc+:xnack-", &hsaco_906),
        ("gfx1100", &hsaco_1100),
    ]);
    tree.file("lib/rocblas/kernels.hsaco", &hsaco);

    let a_942 = co(GFX942, XNACK_OFF, 4);
    tree.file("lib/a.co", &ccob(2, Codec::Zstd, &hip_bundle(&[("gfx942:xnack-", &a_942)])));
    let b_1030 = co(GFX1030, 0, 5);
    tree.file("lib/b.co", &ccob(3, Codec::Zlib, &hip_bundle(&[("gfx1030", &b_1030)])));

    let fat_90a = co(GFX90A, XNACK_OFF, 1);
    let fat_900 = co(GFX900, 0, 6);
    let fat_1100 = co(GFX1100, 0, 7);
    let parts = [
        hip_bundle(&[("gfx90a:xnack-", &fat_90a)]),
        ccob(1, Codec::Zlib, &hip_bundle(&[("gfx900", &fat_900)])),
        ccob(3, Codec::Zstd, &hip_bundle(&[("gfx1100", &fat_1100)])),
    ];
    let fat = fatbin(&parts);
    let mut fat_bundle_offsets = [0u64; 3];
    let mut pos = 0usize;
    for (i, p) in parts.iter().enumerate() {
        pos = pos.div_ceil(4096) * 4096;
        fat_bundle_offsets[i] = pos as u64;
        pos += p.len();
    }
    let embedded_942 = co(GFX942, SRAMECC_ON, 8);
    let mut rodata = b"version string; __CLANG_OFFLOAD_BUNDLE__ appears in text too\0".to_vec();
    rodata.extend_from_slice(&embedded_942);
    rodata.extend_from_slice(&[0x5a; 200]);
    let libx = host_elf(&[HostSection::rodata(".rodata", &rodata), HostSection::hip_fatbin(&fat)]);
    tree.file("lib/libx.so", &libx);

    let decoy = b"error: expected __CLANG_OFFLOAD_BUNDLE__ magic in the fat binary\0 padding padding padding";
    tree.file("lib/plain.so", &host_elf(&[HostSection::rodata(".rodata", decoy)]));

    let spirv = [&b"\x03\x02\x23\x07"[..], &[0u8; 60], b"\x7fELF not amd"].concat();
    tree.file(
        "obj/sycl.o",
        &host_elf(&[HostSection {
            name: "__CLANG_OFFLOAD_BUNDLE__sycl-spir64",
            data: &spirv,
            flags: object::elf::SHF_EXCLUDE,
            align: 8,
        }]),
    );

    let fat_o_1100 = co(GFX1100, 0, 9);
    let fat_o = host_elf(&[
        HostSection {
            name: ".text",
            data: &[0xc3; 16],
            flags: object::elf::SHF_ALLOC | object::elf::SHF_EXECINSTR,
            align: 16,
        },
        HostSection {
            name: "__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu",
            data: &[],
            flags: object::elf::SHF_EXCLUDE,
            align: 1,
        },
        HostSection {
            name: "__CLANG_OFFLOAD_BUNDLE__hipv4-amdgcn-amd-amdhsa--gfx1100",
            data: &fat_o_1100,
            flags: object::elf::SHF_EXCLUDE,
            align: 8,
        },
    ]);
    tree.file("obj/fat.o", &fat_o);

    Mixed {
        tree,
        foo_txt,
        hsaco,
        hsaco_900,
        hsaco_906,
        hsaco_1100,
        a_942,
        b_1030,
        libx,
        fat,
        fat_90a,
        fat_900,
        fat_1100,
        fat_bundle_offsets,
        embedded_942,
        fat_o,
        fat_o_1100,
    }
}
