//! Findings: installs broken as shipped, each reproduced from the public case it comes from,
//! found with the right paths, exit 5 only under `--fail-on-findings`.

use serde_json::Value;

use gfxscan::testing::tensile_index;

use crate::archives::{zip_of, Entry};
use crate::fixtures::{co, host_lib, GFX1100, GFX900, GFX942};
use crate::util::Tree;

const GFX1151: u32 = 0x04a;
const GFX1200: u32 = 0x048;
const GFX1201: u32 = 0x04e;
const LIB: &str = "opt/rocm/lib/rocblas/library";

fn findings(snap: &Value, kind: &str) -> Vec<Value> {
    snap["findings"].as_array().into_iter().flatten().filter(|f| f["kind"] == kind).cloned().collect()
}

/// Paths of a finding's `paths` (root index dropped: one root here).
fn paths(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(|p| p["path"].as_str().map(String::from)).collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)).collect()
}

/// TheRock#5179: drop 23.2.0's `librocblas.so` was built for gfx942, its `library/` staged only
/// for gfx1200/1201 (55 files, all fallback).
#[test]
fn therock_5179_host_code_and_tensile_library_disagree() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/librocblas.so.5.0", &host_lib(&[("gfx942", &co(GFX942, 0, 3))]));
    for (arch, mach) in [("gfx1200", GFX1200), ("gfx1201", GFX1201)] {
        tree.file(format!("{LIB}/TensileLibrary_lazy_{arch}.dat"), &tensile_index(&[arch], 2));
        tree.file(
            format!("{LIB}/TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat"),
            &tensile_index(&[arch], 1),
        );
        tree.file(
            format!("{LIB}/TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_{arch}.hsaco"),
            &co(mach, 0, 2),
        );
    }
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let got = findings(&snap, "host-tensile-mismatch");
    assert_eq!(got.len(), 2, "{:#}", snap["findings"]);
    let lib = "opt/rocm/lib/librocblas.so.5.0".to_string();
    let folder = format!("{LIB}/");
    // Built for gfx942, no index for it; indexes for gfx1200/1201, no code for them.
    let by_targets: Vec<Vec<String>> = got.iter().map(|f| strings(&f["targets"])).collect();
    assert!(by_targets.contains(&vec!["gfx942".to_string()]), "{by_targets:?}");
    assert!(by_targets.contains(&vec!["gfx1200".to_string(), "gfx1201".to_string()]), "{by_targets:?}");
    for f in &got {
        assert_eq!(f["library"]["path"], lib.as_str());
        assert_eq!(paths(&f["paths"]), [lib.clone(), folder.clone()]);
    }
    assert!(got.iter().any(|f| f["why"].as_str().unwrap_or("").contains("first GEMM aborts")));
    // The table says it; --fail-on-findings turns it into exit 5.
    let table = tree.scan(&[]);
    assert!(table.stdout.contains("Findings: broken as shipped (2):"), "{}", table.stdout);
    tree.scan(&["--fail-on-findings"]).expect_code(5);
}

/// TheRock#7790: `rocm-sdk-devel` shipped fallback libraries as `…_fallback_gfx1151.dat`;
/// Tensile opens `…_fallback.dat` (PlaceholderLibrary.hpp), found none, and rocBLAS crashed.
#[test]
fn therock_7790_suffixed_fallback_libraries_are_never_opened() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/librocblas.so.5.0", &host_lib(&[("gfx1151", &co(GFX1151, 0, 3))]));
    tree.file(format!("{LIB}/TensileLibrary_lazy_gfx1151.dat"), &tensile_index(&["gfx1151"], 2));
    let prefix = "TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback";
    tree.file(format!("{LIB}/{prefix}_gfx1151.dat"), &tensile_index(&["gfx1151"], 1));
    tree.file(format!("{LIB}/{prefix}_gfx1151.hsaco"), &co(GFX1151, 0, 2));
    let (run, snap) = tree.scan_json(&["--fail-on-findings"]);
    run.expect_code(5);
    let folder = format!("{LIB}/");
    let unopened = findings(&snap, "unopened-tensile-file");
    assert_eq!(unopened.len(), 1, "{:#}", snap["findings"]);
    assert_eq!(paths(&unopened[0]["paths"]), [format!("{folder}{prefix}_gfx1151.dat")]);
    let missing = findings(&snap, "missing-tensile-file");
    assert_eq!(missing.len(), 1, "{:#}", snap["findings"]);
    assert_eq!(paths(&missing[0]["paths"]), [format!("{folder}{prefix}.dat")]);
    assert_eq!(strings(&missing[0]["targets"]), ["gfx1151"]);
    // The unsuffixed name, as rocBLAS asks for it, is whole again.
    tree.file(format!("{LIB}/{prefix}.dat"), &tensile_index(&["gfx1151"], 1));
    let (_, fixed) = tree.scan_json(&[]);
    assert!(findings(&fixed, "missing-tensile-file").is_empty(), "{:#}", fixed["findings"]);
}

/// pytorch#179865: a nightly wheel dropped gfx900 from its bundled rocBLAS while libtorch_hip
/// and MIOpen kept it.
#[test]
fn a_wheel_whose_rocblas_dropped_an_arch_its_siblings_keep() {
    let tree = Tree::new();
    let both: [(&str, &[u8]); 2] = [("gfx900", &co(GFX900, 0, 2)), ("gfx1100", &co(GFX1100, 0, 2))];
    let wheel = zip_of(
        &[
            Entry::File("torch/lib/libtorch_hip.so".into(), host_lib(&both)),
            Entry::File("torch/lib/libMIOpen.so".into(), host_lib(&both)),
            Entry::File("torch/lib/librocblas.so".into(), host_lib(&[("gfx1100", &co(GFX1100, 0, 2))])),
        ],
        true,
    );
    tree.file("torch-2.12.0.dev20251101+rocm7.2-cp312-cp312-linux_x86_64.whl", &wheel);
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let got = findings(&snap, "sibling-lacks-target");
    assert_eq!(got.len(), 1, "{:#}", snap["findings"]);
    let lib = "torch-2.12.0.dev20251101+rocm7.2-cp312-cp312-linux_x86_64.whl!/torch/lib/librocblas.so";
    assert_eq!(got[0]["library"]["path"], lib);
    assert_eq!(strings(&got[0]["targets"]), ["gfx900"]);
}

/// Builds of one library for two ROCm versions are alternatives, not siblings; and code for a
/// target's generic target counts as having it.
#[test]
fn alternatives_and_generic_code_are_not_findings() {
    let tree = Tree::new();
    tree.file("pkg/libthing_rocm64.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    tree.file(
        "pkg/libthing_rocm72.so",
        &host_lib(&[("gfx1100", &co(GFX1100, 0, 1)), ("gfx942", &co(GFX942, 0, 1))]),
    );
    let (_, snap) = tree.scan_json(&[]);
    assert!(snap.get("findings").is_none(), "{:#}", snap["findings"]);
}
