//! Findings: installs broken as shipped, each reproduced from the public case it comes from,
//! found with the right paths, exit 5 only under `--fail-on-findings`.

use serde_json::Value;

use gfxscan::testing::{lazy_index, tensile_index};

use crate::archives::{zip_of, Entry};
use crate::fixtures::{co, host_lib, GFX1100, GFX900, GFX942};
use crate::util::Tree;

const GFX1151: u32 = 0x04a;
const GFX90A: u32 = 0x03f;
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
    assert!(got.iter().any(|f| f["why"].as_str().unwrap_or("").contains("first GEMM fails")));
    // The table says it; --fail-on-findings turns it into exit 5.
    let table = tree.scan(&[]);
    assert!(table.stdout.contains("Findings: broken as shipped (2):"), "{}", table.stdout);
    tree.scan(&["--fail-on-findings"]).expect_code(5);
}

/// Since rocm-libraries#6840 Tensile writes per-arch fallback libraries
/// (`…_fallback_<arch>.dat`, as in rocBLAS 7.14's `library/<arch>/`): a name rule would call
/// them unopened. Names are not judged; this layout has no finding.
#[test]
fn per_arch_fallback_libraries_are_no_finding() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/librocblas.so.5.0", &host_lib(&[("gfx1151", &co(GFX1151, 0, 3))]));
    tree.file(format!("{LIB}/gfx1151/TensileLibrary_lazy_gfx1151.dat"), &tensile_index(&["gfx1151"], 2));
    let prefix = "TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback";
    tree.file(format!("{LIB}/gfx1151/{prefix}_gfx1151.dat"), &tensile_index(&["gfx1151"], 1));
    tree.file(format!("{LIB}/gfx1151/{prefix}_gfx1151.hsaco"), &co(GFX1151, 0, 2));
    let (run, snap) = tree.scan_json(&["--fail-on-findings"]);
    run.expect_code(0);
    assert!(snap.get("findings").is_none(), "{:#}", snap["findings"]);
}

/// hipBLASLt and hipSPARSELt are built for the targets they support only (pytorch#138067): a
/// ROCm wheel's `torch/lib` where they lack targets its other libraries have is whole.
#[test]
fn libraries_restricted_by_design_are_not_siblings_held_to_all_targets() {
    let tree = Tree::new();
    let all: [(&str, &[u8]); 3] =
        [("gfx900", &co(GFX900, 0, 1)), ("gfx942", &co(GFX942, 0, 1)), ("gfx1100", &co(GFX1100, 0, 1))];
    for lib in ["libtorch_hip.so", "libMIOpen.so", "librocblas.so", "librccl.so"] {
        tree.file(format!("torch/lib/{lib}"), &host_lib(&all));
    }
    tree.file("torch/lib/libhipblaslt.so", &host_lib(&[("gfx942", &co(GFX942, 0, 1))]));
    tree.file("torch/lib/libhipsparselt.so", &host_lib(&[("gfx942", &co(GFX942, 0, 1))]));
    let (run, snap) = tree.scan_json(&["--fail-on-findings"]);
    run.expect_code(0);
    assert!(snap.get("findings").is_none(), "{:#}", snap["findings"]);
}

/// rocBLAS loads the Tensile library below its own folder: an ASAN build in `lib/asan/`,
/// built for fewer targets, is not held to `lib/rocblas/library`.
#[test]
fn a_library_is_paired_only_with_the_tensile_folder_it_loads() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/librocblas.so.5.0", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    tree.file("opt/rocm/lib/asan/librocblas.so.5.0", &host_lib(&[("gfx942", &co(GFX942, 0, 1))]));
    tree.file(format!("{LIB}/TensileLibrary_lazy_gfx1100.dat"), &tensile_index(&["gfx1100"], 2));
    tree.file(format!("{LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 2));
    let (_, snap) = tree.scan_json(&[]);
    assert!(snap.get("findings").is_none(), "{:#}", snap["findings"]);
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

/// Two sonames of one library side by side (rocBLAS 4 and 5, as distributions keep them) are
/// alternatives, not siblings; and code for a target's generic target counts as having it.
/// The same shapes under a sibling's name are findings, so the test holds the rule, not silence.
#[test]
fn alternatives_and_generic_code_are_not_findings() {
    let generic = gfxscan::testing::code_object(&gfxscan::testing::CodeObjectSpec::new(
        4,
        crate::fixtures::GFX11_GENERIC | crate::fixtures::GENERIC_V1,
        &["k0"],
    ));
    let build = |second: &str, sparse: bool| {
        let tree = Tree::new();
        tree.file("lib/librocblas.so.4", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
        tree.file(
            format!("lib/{second}"),
            &host_lib(&[("gfx1100", &co(GFX1100, 0, 1)), ("gfx942", &co(GFX942, 0, 1))]),
        );
        if sparse {
            // gfx942 code, and gfx11-generic code that serves gfx1100.
            tree.file(
                "lib/librocsparse.so.1",
                &host_lib(&[("gfx942", &co(GFX942, 0, 1)), ("gfx11-generic", &generic)]),
            );
        }
        tree
    };
    let (_, snap) = build("librocblas.so.5", false).scan_json(&[]);
    assert!(snap.get("findings").is_none(), "{:#}", snap["findings"]);
    // A real sibling with gfx942: rocBLAS 4 lacks it; rocSPARSE's generic code serves gfx1100.
    let (_, snap) = build("librocsolver.so.0", true).scan_json(&[]);
    let lacking: Vec<(String, Vec<String>)> = findings(&snap, "sibling-lacks-target")
        .iter()
        .map(|f| (f["library"]["path"].as_str().unwrap_or("").to_string(), strings(&f["targets"])))
        .collect();
    assert_eq!(
        lacking,
        [("lib/librocblas.so.4".to_string(), vec!["gfx942".to_string()])],
        "{:#}",
        snap["findings"]
    );
}

/// `gfxscan check ROOT --gpu GPU --json`: the verdict of the Tensile folder `folder`.
fn tensile_verdict(tree: &Tree, gpu: &str, folder: &str) -> Value {
    let run = crate::util::gfxscan(["check", "--quiet", "--json", "--gpu", gpu, &tree.root_str()]);
    let report = run.json();
    let mut verdicts = report["installs"].as_array().into_iter().flatten().flat_map(|i| {
        i["gpus"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["verdicts"].as_array().into_iter().flatten())
    });
    let found = verdicts.find(|v| v["library"].as_str().is_some_and(|l| l.ends_with(folder))).cloned();
    found.unwrap_or_else(|| panic!("no verdict for {folder}: {report:#}"))
}

const SS: &str = "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk";

/// TheRock#7790: rocm-sdk-devel's lazy index named `…_fallback` (one shared fallback library,
/// the older naming) while its folder held `…_fallback_gfx1151.dat` (rocm-libraries#6840's
/// per-arch naming). rocBLAS opens `<placeholder>.dat` (Tensile `PlaceholderLibrary.hpp`
/// `loadPlaceholderLibrary`) and dereferences the null it gets: a segmentation fault.
#[test]
fn therock_7790_index_names_a_fallback_library_the_folder_holds_under_another_name() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/librocblas.so.5.0", &host_lib(&[("gfx1151", &co(GFX1151, 0, 3))]));
    let placeholders = [format!("{SS}_fallback"), format!("{SS}_gfx1151")];
    let names: Vec<&str> = placeholders.iter().map(String::as_str).collect();
    tree.file(format!("{LIB}/TensileLibrary_lazy_gfx1151.dat"), &lazy_index("gfx1151", &names));
    tree.file(format!("{LIB}/{SS}_gfx1151.dat"), &tensile_index(&["gfx1151"], 1));
    tree.file(format!("{LIB}/{SS}_gfx1151.co"), &co(GFX1151, 0, 2));
    tree.file(format!("{LIB}/{SS}_fallback_gfx1151.dat"), &tensile_index(&["gfx1151"], 1));
    tree.file(format!("{LIB}/{SS}_fallback_gfx1151.hsaco"), &co(GFX1151, 0, 2));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let missing = findings(&snap, "index-names-missing");
    assert_eq!(missing.len(), 1, "{:#}", snap["findings"]);
    assert_eq!(missing[0]["library"]["path"], format!("{LIB}/TensileLibrary_lazy_gfx1151.dat").as_str());
    assert_eq!(paths(&missing[0]["paths"]), [format!("{LIB}/{SS}_fallback.dat")]);
    assert_eq!(strings(&missing[0]["targets"]), ["gfx1151"]);
    assert!(missing[0]["why"].as_str().unwrap_or("").contains("segmentation fault"), "{:#}", missing[0]);
    let unopened = findings(&snap, "never-opened");
    assert_eq!(unopened.len(), 1, "{:#}", snap["findings"]);
    assert_eq!(unopened[0]["library"]["path"], format!("{LIB}/").as_str());
    assert_eq!(paths(&unopened[0]["paths"]), [format!("{LIB}/{SS}_fallback_gfx1151.dat")]);
    // check gives no OK: the GPU's index loads, then the first SGEMM crashes.
    let v = tensile_verdict(&tree, "gfx1151", "lib/rocblas/library/");
    assert_eq!(v["status"], "missing", "{v:#}");
    assert!(v["consequence"].as_str().unwrap_or("").contains("loadPlaceholderLibrary"), "{v:#}");
    tree.scan(&["--fail-on-findings"]).expect_code(5);
}

/// Both generations are whole when index and files agree: the shared `…_fallback.dat` with
/// `…_fallback_<arch>.hsaco` (and gfx90a's `-xnack±` code files, as Debian's rocBLAS 4.4 ships
/// them), and rocm-libraries#6840's per-arch `…_fallback_<arch>.dat` in `library/<arch>/`.
#[test]
fn both_fallback_generations_are_whole_when_index_and_files_agree() {
    let tree = Tree::new();
    tree.file(
        "opt/rocm/lib/librocblas.so.5.0",
        &host_lib(&[
            ("gfx1100", &co(GFX1100, 0, 1)),
            ("gfx90a", &co(GFX90A, 0, 1)),
            ("gfx1151", &co(GFX1151, 0, 1)),
        ]),
    );
    let old = format!("{SS}_fallback");
    tree.file(format!("{LIB}/TensileLibrary_lazy_gfx1100.dat"), &lazy_index("gfx1100", &[&old]));
    tree.file(format!("{LIB}/{old}.dat"), &tensile_index(&["gfx1100"], 1));
    tree.file(format!("{LIB}/{old}_gfx1100.hsaco"), &co(GFX1100, 0, 2));
    for variant in ["xnack+", "xnack-"] {
        tree.file(format!("{LIB}/{old}_gfx90a-{variant}.hsaco"), &co(GFX90A, 0, 2));
    }
    // A source-kernel sub-library whose code is only in `-xnack±` files (Debian's rocBLAS 4.4
    // ships 26 gfx90a sub-libraries with such files, there beside a `.co`).
    let sub90a = format!("{SS}_CU104_gfx90a");
    tree.file(format!("{LIB}/{sub90a}.dat"), &tensile_index(&["gfx90a"], 2));
    for variant in ["xnack+", "xnack-"] {
        tree.file(format!("{LIB}/{sub90a}-{variant}.hsaco"), &co(GFX90A, 0, 2));
    }
    tree.file(format!("{LIB}/TensileLibrary_lazy_gfx90a.dat"), &lazy_index("gfx90a", &[&old, &sub90a]));
    let new = format!("{SS}_fallback_gfx1151");
    let per_arch = format!("{LIB}/gfx1151");
    tree.file(format!("{per_arch}/TensileLibrary_lazy_gfx1151.dat"), &lazy_index("gfx1151", &[&new]));
    tree.file(format!("{per_arch}/{new}.dat"), &tensile_index(&["gfx1151"], 1));
    tree.file(format!("{per_arch}/{new}.hsaco"), &co(GFX1151, 0, 2));
    let (run, snap) = tree.scan_json(&["--fail-on-findings"]);
    run.expect_code(0);
    assert!(snap.get("findings").is_none(), "{:#}", snap["findings"]);
    assert_eq!(tensile_verdict(&tree, "gfx1100", "lib/rocblas/library/")["status"], "ok");
}

/// A sub-library whose code-object file is absent: the index loads, the kernels it selects
/// do not (`getCodeObjectFileName`: `<placeholder>.co` for assembly kernels). One without
/// solutions needs none (the upstream gfx1032 library in ../shared/corpus has one, 196 bytes).
#[test]
fn a_sub_library_without_its_code_object_file() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/librocblas.so.5.0", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let sub = format!("{SS}_gfx1100");
    let empty = "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100";
    tree.file(format!("{LIB}/TensileLibrary_lazy_gfx1100.dat"), &lazy_index("gfx1100", &[&sub, empty]));
    tree.file(format!("{LIB}/{sub}.dat"), &tensile_index(&["gfx1100"], 1));
    tree.file(format!("{LIB}/{empty}.dat"), &tensile_index(&[], 0));
    let (_, snap) = tree.scan_json(&[]);
    let got = findings(&snap, "index-names-missing");
    assert_eq!(got.len(), 1, "{:#}", snap["findings"]);
    assert_eq!(paths(&got[0]["paths"]), [format!("{LIB}/{sub}.co")]);
    let v = tensile_verdict(&tree, "gfx1100", "lib/rocblas/library/");
    assert_eq!(v["status"], "missing", "{v:#}");
    assert!(v["consequence"].as_str().unwrap_or("").contains("fail to load"), "{v:#}");
}

/// An index read through a link names its sub-libraries too: with a lazy index that is a link
/// (its names were not read here), no sub-library of the folder is called unopened.
#[test]
fn a_linked_index_leaves_no_sub_library_called_unopened() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/librocblas.so.5.0", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let (a, b) =
        (format!("{SS}_gfx1100"), "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100");
    tree.file(format!("{LIB}/TensileLibrary_lazy_gfx1100.dat"), &lazy_index("gfx1100", &[&a]));
    tree.file("opt/rocm/share/idx/TensileLibrary_lazy_gfx1101.dat", &lazy_index("gfx1101", &[b]));
    tree.symlink(
        "../../../share/idx/TensileLibrary_lazy_gfx1101.dat",
        format!("{LIB}/TensileLibrary_lazy_gfx1101.dat"),
    );
    for sub in [a.as_str(), b] {
        tree.file(format!("{LIB}/{sub}.dat"), &tensile_index(&["gfx1100"], 1));
        tree.file(format!("{LIB}/{sub}.co"), &co(GFX1100, 0, 1));
    }
    let (_, snap) = tree.scan_json(&[]);
    assert!(findings(&snap, "never-opened").is_empty(), "{:#}", snap["findings"]);
    // Without the link, the sub-library only it names is unopened.
    std::fs::remove_file(tree.path(format!("{LIB}/TensileLibrary_lazy_gfx1101.dat"))).expect("unlink");
    let (_, snap) = tree.scan_json(&[]);
    let got = findings(&snap, "never-opened");
    assert_eq!(got.len(), 1, "{:#}", snap["findings"]);
    assert_eq!(paths(&got[0]["paths"]), [format!("{LIB}/{b}.dat")]);
}

/// A TheRock install declares its targets in `share/therock/dist_info.json` (a CMake list,
/// `;`-joined, from `THEROCK_DIST_AMDGPU_TARGETS`): they are shown beside the targets found, and
/// a finding names a declared target no code serves (its own or its generic target's) and code
/// for a target it does not declare.
#[test]
fn therock_declared_targets_are_held_against_its_code() {
    use crate::fixtures::{GENERIC_V1, GFX11_GENERIC};
    let info = br#"{"dist_amdgpu_targets": "gfx1100;gfx1151"}"#;
    // gfx1100's own code, gfx1151 through gfx11-generic: as declared, no finding.
    let tree = Tree::new();
    tree.file("rocm/share/therock/dist_info.json", info);
    let generic = co(GFX11_GENERIC, GENERIC_V1, 1);
    tree.file(
        "rocm/lib/libfoo.so",
        &host_lib(&[("gfx1100", &co(GFX1100, 0, 1)), ("gfx11-generic", &generic)]),
    );
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(
        snap["declared_targets"],
        serde_json::json!([{"root": 0, "path": "rocm/share/therock/dist_info.json", "targets": ["gfx1100", "gfx1151"]}])
    );
    assert!(findings(&snap, "declared-targets-differ").is_empty(), "{:#}", snap["findings"]);
    let table = tree.scan(&[]).stdout;
    assert!(table.contains("Declared by TheRock ("), "{table}");
    // gfx1151 unserved, gfx942 undeclared: one finding about the install folder.
    let tree = Tree::new();
    tree.file("rocm/share/therock/dist_info.json", info);
    tree.file(
        "rocm/lib/libfoo.so",
        &host_lib(&[("gfx1100", &co(GFX1100, 0, 1)), ("gfx942", &co(GFX942, 0, 1))]),
    );
    let (_, snap) = tree.scan_json(&[]);
    let f = findings(&snap, "declared-targets-differ");
    assert_eq!(f.len(), 1, "{:#}", snap["findings"]);
    assert_eq!(f[0]["library"]["path"], "rocm/");
    assert_eq!(f[0]["targets"], serde_json::json!(["gfx942", "gfx1151"]));
    let why = f[0]["why"].as_str().unwrap_or_default();
    assert!(why.contains("declares gfx1151 but no library") && why.contains("code for gfx942"), "{why}");
    // Tests in bin/ built for every target, and an install with no library code: nothing said.
    let tree = Tree::new();
    tree.file("rocm/share/therock/dist_info.json", info);
    tree.file("rocm/bin/test_foo", &host_lib(&[("gfx942", &co(GFX942, 0, 1))]));
    let (_, snap) = tree.scan_json(&[]);
    assert!(findings(&snap, "declared-targets-differ").is_empty(), "{:#}", snap["findings"]);
}

/// A `dist_info.json` that is not TheRock's document is a problem with its path; the scan goes on.
#[test]
fn a_bad_dist_info_is_a_problem_not_an_abort() {
    for (bytes, says) in [
        (b"{ not json".to_vec(), "not JSON"),
        (br#"{"dist_amdgpu_targets": ["gfx1100"]}"#.to_vec(), "not a string"),
        (vec![b' '; 70_000], "not read"),
    ] {
        let tree = Tree::new();
        tree.file("share/therock/dist_info.json", &bytes);
        tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
        let (run, snap) = tree.scan_json(&[]);
        run.expect_code(1);
        let problems = crate::util::problems(&snap);
        assert!(
            problems.iter().any(|(p, m)| p == "share/therock/dist_info.json" && m.contains(says)),
            "{problems:?}"
        );
        assert_eq!(snap["summary"]["code_objects"], 1, "the rest is read");
    }
}
