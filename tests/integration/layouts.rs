//! Today's and tomorrow's install layouts, each recognised by content and placed in its
//! library's family: TheRock's `rocm-sdk` wheels, PyTorch's ROCm wheel, Ollama's bundled ROCm on
//! Linux and Windows, ROCm 7.x per-arch Tensile subfolders with zlib-compressed indexes. The
//! trees are built from the layouts the projects install (TheRock `_rocm_sdk_core` /
//! `_rocm_sdk_libraries_<family>`, torch `torch/lib/rocblas/library`, Ollama `lib/ollama/rocm`).

use std::io::Write;

use serde_json::Value;

use gfxscan::parse::pe::fixture::pe_image;
use gfxscan::testing::{fatbin, tensile_index};

use crate::fixtures::{co, hip_bundle, host_lib, GFX1100, GFX942};
use crate::util::{gfxscan, Tree};

const GFX1151: u32 = 0x04a;
const GFX950: u32 = 0x04f;
const SP: &str = "venv/lib/python3.12/site-packages";

/// Every verdict of a check, as (install kind, library ending, status).
fn verdicts(report: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for i in report["installs"].as_array().expect("installs") {
        for g in i["gpus"].as_array().expect("gpus") {
            for v in g["verdicts"].as_array().expect("verdicts") {
                let lib = v["library"].as_str().unwrap_or("");
                let short = lib.rsplit(['/']).find(|p| !p.is_empty()).unwrap_or(lib).to_string();
                let kind = i["kind"].as_str().unwrap_or("").to_string();
                out.push((kind, short, v["status"].as_str().unwrap_or("").to_string()));
            }
        }
    }
    out
}

fn check(tree: &Tree, gpu: &str, code: i32) -> Value {
    let run = gfxscan(["check", "--quiet", "--json", "--gpu", gpu, &tree.root_str()]);
    run.expect_code(code);
    run.json()
}

/// TheRock: `rocm-sdk-core` and `rocm-sdk-libraries-gfx1151` are one ROCm in two packages,
/// judged as one install beside torch's own.
#[test]
fn therock_wheels_are_one_install_beside_torch() {
    let tree = Tree::new();
    let code = co(GFX1151, 0, 2);
    tree.file(format!("{SP}/_rocm_sdk_core/lib/libamdhip64.so.7"), &host_lib(&[("gfx1151", &code)]));
    let libs = format!("{SP}/_rocm_sdk_libraries_gfx1151/lib");
    tree.file(format!("{libs}/librocblas.so.5"), &host_lib(&[("gfx1151", &code)]));
    tree.file(
        format!("{libs}/rocblas/library/TensileLibrary_lazy_gfx1151.dat"),
        &tensile_index(&["gfx1151"], 2),
    );
    tree.file(format!("{libs}/rocblas/library/TensileLibrary_gfx1151.co"), &co(GFX1151, 0, 3));
    tree.file(format!("{SP}/torch/lib/libtorch_hip.so"), &host_lib(&[("gfx1151", &code)]));
    let report = check(&tree, "gfx1151", 0);
    let kinds: Vec<&str> = report["installs"]
        .as_array()
        .expect("installs")
        .iter()
        .map(|i| i["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["rocm-sdk", "python"]);
    assert!(report["installs"][0]["path"].as_str().unwrap_or("").ends_with("site-packages/_rocm_sdk_*"));
    let v = verdicts(&report);
    assert!(v.contains(&("rocm-sdk".into(), "library".into(), "ok".into())), "{v:?}");
    assert_eq!(v.len(), 4, "{v:?}");
}

/// PyTorch's ROCm wheel ships rocBLAS, hipBLASLt and MIOpen's databases under `torch/`.
#[test]
fn a_pytorch_wheel_layout_places_each_file_in_its_family() {
    let tree = Tree::new();
    let lib = format!("{SP}/torch/lib");
    tree.file(format!("{lib}/librocblas.so"), &host_lib(&[("gfx942", &co(GFX942, 0, 1))]));
    tree.file(
        format!("{lib}/rocblas/library/TensileLibrary_lazy_gfx942.dat"),
        &tensile_index(&["gfx942"], 2),
    );
    tree.file(format!("{lib}/rocblas/library/TensileLibrary_gfx942.co"), &co(GFX942, 0, 2));
    tree.file(
        format!("{lib}/hipblaslt/library/TensileLibrary_lazy_gfx942.dat"),
        &tensile_index(&["gfx942"], 2),
    );
    tree.file(format!("{lib}/hipblaslt/library/TensileLibrary_gfx942.co"), &co(GFX942, 0, 2));
    tree.file(
        format!("{SP}/torch/share/miopen/db/gfx942130.HIP.fdb.txt"),
        b"k=ConvHipImplicitGemmV4R1Fwd:1,2\n",
    );
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let fam = &snap["families"];
    assert_eq!(fam["rocblas-files"]["gfx942"], 2);
    assert_eq!(fam["hipblaslt-files"]["gfx942"], 2);
    assert_eq!(fam["miopen-find-db-records"]["gfx942"], 1);
    let v = verdicts(&check(&tree, "gfx942", 0));
    assert!(v.iter().all(|(kind, _, status)| kind == "python" && status == "ok"), "{v:?}");
}

/// Ollama bundles ROCm: `lib/ollama/rocm` on Linux; on Windows the DLLs (PE images with
/// `.hip_fat`) with `rocblas/library` beside them.
#[test]
fn ollama_linux_and_windows_layouts() {
    let tree = Tree::new();
    let code = co(GFX1100, 0, 1);
    tree.file("linux/usr/lib/ollama/rocm/librocblas.so.4", &host_lib(&[("gfx1100", &code)]));
    tree.file(
        "linux/usr/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_gfx1100.dat",
        &tensile_index(&["gfx1100"], 1),
    );
    tree.file("linux/usr/lib/ollama/rocm/rocblas/library/TensileLibrary_gfx1100.co", &co(GFX1100, 0, 2));
    let dll = pe_image(&[(".hip_fat", &fatbin(&[hip_bundle(&[("gfx1100", &code)])]))]);
    tree.file("windows/lib/ollama/rocm/rocblas.dll", &dll);
    tree.file(
        "windows/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_gfx1100.dat",
        &tensile_index(&["gfx1100"], 1),
    );
    tree.file("windows/lib/ollama/rocm/rocblas/library/TensileLibrary_gfx1100.co", &co(GFX1100, 0, 2));
    let report = check(&tree, "gfx1100", 0);
    let v = verdicts(&report);
    assert_eq!(v.iter().filter(|(kind, _, status)| kind == "ollama" && status == "ok").count(), 4, "{v:?}");
    let report = check(&tree, "gfx1030", 1);
    assert!(verdicts(&report).iter().any(|(_, lib, status)| lib == "rocblas.dll" && status == "missing"));
}

/// ROCm 7.x: Tensile files in per-arch subfolders, indexes compressed with zlib.
#[test]
fn rocm7_per_arch_subfolders_and_zlib_indexes() {
    let tree = Tree::new();
    let lib = "opt/rocm-7.2.0/lib/rocblas/library/gfx950";
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&tensile_index(&["gfx950"], 3)).expect("zlib");
    tree.file(format!("{lib}/TensileLibrary_lazy_gfx950.dat.zlib"), &z.finish().expect("zlib"));
    tree.file(format!("{lib}/TensileLibrary_gfx950.co"), &co(GFX950, 0, 2));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let index = snap["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["path"].as_str().unwrap_or("").ends_with(".dat.zlib"))
        .expect("index");
    assert_eq!(index["artifact"]["content_targets"], serde_json::json!(["gfx950"]));
    assert_eq!(index["artifact"]["format"], "zlib");
    let v = verdicts(&check(&tree, "gfx950", 0));
    assert_eq!(v, [("rocm".to_string(), "library".to_string(), "ok".to_string())]);
}

/// MIOpen's per-arch CK grouped-convolution plugins (MIOpen `ck_grouped_conv_lib_loader.cpp`
/// `LoadLibrary`): only the one named for the GPU is loaded; without it MIOpen warns and uses
/// other solvers. The plugins of other GPUs are never a gap.
#[test]
fn miopen_ck_plugins_are_judged_per_gpu() {
    use crate::fixtures::GFX90A;
    let tree = Tree::new();
    let lib = "opt/rocm/lib";
    let both = [("gfx942", &co(GFX942, 0, 1)[..]), ("gfx1100", &co(GFX1100, 0, 1)[..])];
    tree.file(format!("{lib}/libMIOpen.so.1"), &host_lib(&both));
    tree.file(format!("{lib}/libMIOpenCKGroupedConv_gfx942.so"), &host_lib(&[("gfx942", &co(GFX942, 0, 9))]));
    tree.file(format!("{lib}/libMIOpenCKGroupedConv_gfx90a.so"), &host_lib(&[("gfx90a", &co(GFX90A, 0, 9))]));
    let v = verdicts(&check(&tree, "gfx942", 0));
    assert!(v.contains(&("rocm".into(), "libMIOpenCKGroupedConv_gfx942.so".into(), "ok".into())), "{v:?}");
    assert_eq!(v.len(), 2, "{v:?}");
    let report = check(&tree, "gfx1100", 0);
    let v = verdicts(&report);
    assert!(v.contains(&("rocm".into(), "libMIOpenCKGroupedConv_gfx1100.so".into(), "warn".into())), "{v:?}");
    let plugin = &report["installs"][0]["gpus"][0]["verdicts"][1];
    assert!(plugin["detail"].as_str().unwrap_or("").contains("is not installed"), "{plugin:#}");
    assert_eq!(plugin["available"], serde_json::json!(["gfx90a", "gfx942"]));
}

/// MIOpen on Windows names its plugins without `lib` and with `.dll` (`MakeLibraryFilename`:
/// `library_prefix` is empty there); AMD's HIP SDK keeps its DLLs and `rocblas/library` in
/// `AMD/ROCm/<version>/bin`, one install per version.
#[test]
fn the_hip_sdk_for_windows_with_its_plugins() {
    let tree = Tree::new();
    let bin = "Program Files/AMD/ROCm/6.2/bin";
    let code = co(GFX1100, 0, 1);
    tree.file(
        format!("{bin}/MIOpen.dll"),
        &pe_image(&[(".hip_fat", &fatbin(&[hip_bundle(&[("gfx1100", &code)])]))]),
    );
    let plugin = pe_image(&[(".hip_fat", &fatbin(&[hip_bundle(&[("gfx942", &co(GFX942, 0, 1))])]))]);
    tree.file(format!("{bin}/MIOpenCKGroupedConv_gfx942.dll"), &plugin);
    tree.file(
        format!("{bin}/rocblas/library/TensileLibrary_lazy_gfx1100.dat"),
        &tensile_index(&["gfx1100"], 1),
    );
    tree.file(format!("{bin}/rocblas/library/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 2));
    let report = check(&tree, "gfx1100", 0);
    assert_eq!(report["installs"][0]["kind"], "rocm");
    assert!(report["installs"][0]["path"].as_str().unwrap_or("").ends_with("AMD/ROCm/6.2"));
    let v = verdicts(&report);
    assert!(v.contains(&("rocm".into(), "libMIOpenCKGroupedConv_gfx1100.so".into(), "warn".into())), "{v:?}");
    assert!(v.iter().all(|(_, lib, status)| status == "ok" || lib.starts_with("libMIOpenCK")), "{v:?}");
}
