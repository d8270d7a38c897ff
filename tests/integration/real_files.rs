//! Real files under `tests/data/real` (provenance in its README): exact facts, and no prefix
//! of any of them may panic or pass unnoticed.

use gfxscan::model::Location;
use gfxscan::parse::bundle::BundleFormat;
use gfxscan::vocab::codec::Codec;
use std::collections::BTreeMap;
use std::path::PathBuf;

use gfxscan::parse::bundle::parse_bundles;
use gfxscan::parse::elf::parse_code_object;
use gfxscan::scan::{scan, ScanConfig, Silent};
use gfxscan::vocab::targets::Targets;

fn real() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/real")
}

#[test]
fn real_files_give_their_known_facts() {
    let config = ScanConfig::of(vec![real()]).with_threads(2);
    let snap = scan(&config, &Targets::builtin(), &Silent).expect("scan runs");
    assert!(snap.problems.is_empty(), "{:?}", snap.problems);
    let by_path: BTreeMap<&str, _> = snap.files.iter().map(|f| (f.path.path.as_str(), f)).collect();

    let k = by_path["Kernels.so-000-gfx1032.hsaco"];
    assert_eq!(k.code_objects.len(), 1);
    let c = &k.code_objects[0];
    assert_eq!(
        (c.target_id.as_str(), c.code_object_version, c.kernels, c.size),
        ("gfx1032", Some(5), Some(14), 41264)
    );

    let t = &by_path["hsa-trap-handler-v2.o"].code_objects[0];
    assert_eq!(
        (t.processor.as_str(), t.code_object_version, t.kernels, t.e_flags),
        ("gfx700", Some(2), Some(10), 0)
    );

    let j = by_path["jax-prng.hip_fatbin"];
    assert_eq!((j.bundles, j.code_objects.len()), (1, 27));
    assert!(j.code_objects.iter().all(|c| matches!(
        c.location,
        Location::BundleEntry { format: BundleFormat::Ccob(3), compression: Some(Codec::Zstd), .. }
    ) && c.code_object_version == Some(6)));
    let procs: Vec<&str> = j.code_objects.iter().map(|c| c.processor.as_str()).collect();
    for p in ["gfx950", "gfx1250", "gfx1153", "gfx1010", "gfx90a"] {
        assert!(procs.contains(&p), "{p} missing from {procs:?}");
    }

    let m = &by_path["mori-io.hip_fatbin"].code_objects[0];
    assert_eq!((m.target_id.as_str(), m.code_object_version), ("gfx942", Some(6)));
    assert!(matches!(m.location, Location::BundleEntry { format: BundleFormat::Plain, .. }), "{m:?}");
}

/// Every prefix of every real file parses to a value or an error, and a cut-off code object is
/// never taken for a whole one.
#[test]
fn every_prefix_of_a_real_file_is_handled() {
    for name in ["Kernels.so-000-gfx1032.hsaco", "hsa-trap-handler-v2.o"] {
        let bytes = std::fs::read(real().join(name)).expect("fixture");
        for n in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
            let cut = bytes[..n].to_vec();
            if let Ok(co) = parse_code_object(&cut, Some(n as u64)) {
                assert!(co.defect.is_some(), "{name} cut at {n} passed as whole");
            }
        }
    }
    for name in ["jax-prng.hip_fatbin", "mori-io.hip_fatbin"] {
        let bytes = std::fs::read(real().join(name)).expect("fixture");
        let whole: usize = parse_bundles(&bytes).bundles.iter().map(|b| b.entries.len()).sum();
        for n in (0..bytes.len()).step_by(13) {
            let got = parse_bundles(&bytes[..n].to_vec());
            let clean = got.stopped.is_none()
                && got.bundles.iter().all(|b| b.error.is_none())
                && got.bundles.iter().map(|b| b.entries.len()).sum::<usize>() == whole
                && got.bundles.iter().flat_map(|b| &b.entries).all(|e| {
                    e.code_object.as_ref().is_some_and(|r| r.as_ref().is_ok_and(|c| c.defect.is_none()))
                });
            assert!(!clean || n == 0, "{name} cut at {n} of {} looks complete", bytes.len());
        }
    }
}

/// A real bundle TensorFlow keeps in `.rodata` (tensorflow-rocm 2.14.0.600, `*_kernel_blob`),
/// placed in a host ELF's `.rodata` behind the magic as a string: read as the bundle it is,
/// with its `hip-` entry IDs (what clang-offload-bundler lists), and judged by the comgr lookup
/// as clr judges the image handed to `hipModuleLoadData`.
#[test]
fn a_real_bundle_kept_as_data_is_read_as_its_bundle() {
    use gfxscan::testing::{host_elf, HostSection};
    let real_bundle = std::fs::read(real().join("tf-cast-bool-int8.bundle")).expect("real file");
    let mut rodata = b"__CLANG_OFFLOAD_BUNDLE__\0".to_vec();
    rodata.resize(0x50, 0);
    rodata.extend_from_slice(&real_bundle);
    let tree = crate::util::Tree::new();
    tree.file("lib/libtensorflow_cc.so.2", &host_elf(&[HostSection::rodata(".rodata", &rodata)]));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let f = &snap["files"][0];
    assert_eq!(f["bundles"], 1);
    let mut sorted = crate::util::location_field(f, "entry_id");
    sorted.sort_unstable();
    let want: Vec<String> = ["gfx1030", "gfx1100", "gfx900", "gfx906", "gfx908", "gfx90a"]
        .iter()
        .map(|p| format!("hip-amdgcn-amd-amdhsa--{p}"))
        .collect();
    assert_eq!(sorted, want);
    let lib = tree.path("lib/libtensorflow_cc.so.2").to_string_lossy().into_owned();
    let run = crate::util::gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1100", &lib]);
    run.expect_code(0);
    assert_eq!(
        run.json()["installs"][0]["gpus"][0]["verdicts"][0]["loads"],
        "hip-amdgcn-amd-amdhsa--gfx1100"
    );
    let run = crate::util::gfxscan(["check", "--quiet", "--json", "--gpu", "gfx1151", &lib]);
    run.expect_code(1);
}
