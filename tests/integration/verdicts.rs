//! Verdicts you can gate on (issue 12): each numbered point of the issue is a test here that
//! fails on the build before it. `check` and `diff` through the real binary, with exact exit
//! codes and the `outcome` field of their JSON.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Command;

use serde_json::{json, Value};

use gfxscan::testing::{code_object, msgpack_of, tensile_index, tensile_index_of_rows, CodeObjectSpec};

use crate::fixtures::{
    co, host_lib, GENERIC_V1, GFX1010, GFX1030, GFX1100, GFX11_GENERIC, GFX90A, GFX942, GFX9_4_GENERIC,
};
use crate::util::{gfxscan, run, Run, Tree};

const BIN: &str = env!("CARGO_BIN_EXE_gfxscan");
const ROCBLAS_LIB: &str = "opt/rocm/lib/rocblas/library";
const HIPBLASLT_LIB: &str = "opt/rocm/lib/hipblaslt/library";
const MIOPEN_DB: &str = "opt/rocm/share/miopen/db";

/// `gfxscan check --quiet ARGS` with the runtime's variables removed and `env` set instead.
fn check(args: &[OsString], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.arg("check").arg("--quiet").args(args);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("HSA_") || k.ends_with("_VISIBLE_DEVICES") || k.ends_with("_TENSILE_LIBPATH") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn root_and(tree: &Tree, extra: &[&str]) -> Vec<OsString> {
    let mut a = vec![tree.root().as_os_str().to_os_string()];
    a.extend(os(extra));
    a
}

/// The verdicts of every install for every GPU, as (library relative to the tree, status).
fn statuses(report: &Value, tree: &Tree) -> Vec<(String, String)> {
    let prefix = format!("{}/", tree.root_str());
    report["installs"]
        .as_array()
        .expect("installs")
        .iter()
        .flat_map(|i| i["gpus"].as_array().expect("gpus"))
        .flat_map(|g| g["verdicts"].as_array().expect("verdicts"))
        .map(|v| {
            let lib = v["library"].as_str().expect("library");
            (
                lib.strip_prefix(&prefix).unwrap_or(lib).to_string(),
                v["status"].as_str().expect("status").to_string(),
            )
        })
        .collect()
}

/// The one verdict whose library ends with `suffix`.
#[track_caller]
fn verdict<'a>(report: &'a Value, suffix: &str) -> &'a Value {
    let all: Vec<&Value> = report["installs"]
        .as_array()
        .expect("installs")
        .iter()
        .flat_map(|i| i["gpus"].as_array().expect("gpus"))
        .flat_map(|g| g["verdicts"].as_array().expect("verdicts"))
        .filter(|v| v["library"].as_str().is_some_and(|l| l.ends_with(suffix)))
        .collect();
    assert_eq!(all.len(), 1, "one verdict for {suffix}: {report:#}");
    all[0]
}

fn generic_co(mach: u32) -> Vec<u8> {
    code_object(&CodeObjectSpec::new(4, mach | GENERIC_V1, &["k0"]))
}

// 1. Nothing found, or files unread, is never OK.

#[test]
fn check_of_nothing_is_nothing_to_check_not_ok() {
    let empty = Tree::new();
    empty.file("README", b"no device code here\n");
    let run = check(&root_and(&empty, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(4);
    assert_eq!(run.json()["outcome"], "nothing-to-check");
    let run = check(&root_and(&empty, &["--gpu", "gfx1100"]), &[]);
    run.expect_code(4);
    assert!(run.stdout.contains("NOTHING TO CHECK: no library with device code under"), "{}", run.stdout);
    assert!(!run.stdout.contains("OK"), "{}", run.stdout);

    // Firmware alone holds no library to check.
    let fw = Tree::new();
    fw.file("lib/firmware/amdgpu/gc_11_0_0_mec.bin", &gfxscan::testing::firmware_blob(1, (11, 0), 4096));
    check(&root_and(&fw, &["--gpu", "gfx1100", "--json"]), &[]).expect_code(4);
}

#[test]
fn files_that_could_not_be_read_make_the_check_incomplete() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    tree.file("lib/libbad.so.co", b"CCOB\x03\x00\x01\x00 cut short");
    let run = check(&root_and(&tree, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(3);
    let report = run.json();
    assert_eq!(report["outcome"], "incomplete");
    assert_eq!(report["problems"].as_array().map(Vec::len), Some(1), "{report:#}");
    // The table lists the file, and says no OK.
    let run = check(&root_and(&tree, &["--gpu", "gfx1100"]), &[]);
    run.expect_code(3);
    assert!(run.stdout.contains("libbad.so.co: "), "{}", run.stdout);
    assert!(run.stdout.contains("INCOMPLETE"), "{}", run.stdout);
    assert!(!run.stdout.contains("scan` lists them"), "{}", run.stdout);

    // A package format gfxscan does not read is a problem, not silence.
    let bz = Tree::new();
    bz.file("rocm.tar.bz2", b"BZh91AY&SY\x00\x00\x00\x00 not read");
    let run = check(&root_and(&bz, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(3);
    let msg = run.json()["problems"][0]["message"].as_str().unwrap_or("").to_string();
    assert!(msg.starts_with("not read: bzip2"), "{msg}");
    for (name, bytes) in
        [("a.7z", &b"7z\xbc\xaf\x27\x1c\x00\x04"[..]), ("a.rpm", b"\xed\xab\xee\xdb\x03\x00")]
    {
        let t = Tree::new();
        t.file(name, bytes);
        let (r, snap) = t.scan_json(&[]);
        r.expect_code(1);
        assert!(snap["problems"][0]["message"].as_str().unwrap_or("").starts_with("not read: "), "{snap:#}");
    }
}

/// A folder that cannot be read (as nobody, since root reads everything): incomplete, exit 3.
#[test]
fn an_unreadable_folder_is_incomplete_not_ok() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::util::skipped("needs root to run the child as nobody");
        return;
    }
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    std::fs::create_dir_all(tree.path("secret")).expect("mkdir");
    std::fs::write(tree.path("secret/libbar.so"), host_lib(&[("gfx1030", &co(GFX1030, 0, 1))]))
        .expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tree.path("secret"), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    for dir in [tree.root().to_path_buf(), tree.path("lib")] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let mut cmd = Command::new(BIN);
    cmd.args(["check", "--quiet", "--json", "--gpu", "gfx1100"]).arg(tree.root()).uid(65534).gid(65534);
    let run = run(cmd);
    run.expect_code(3);
    let report = run.json();
    assert_eq!(report["outcome"], "incomplete");
    assert!(report["problems"][0]["path"].as_str().unwrap_or("").contains("secret"), "{report:#}");
}

// 2. Required vs optional, as each library's source decides.

#[test]
fn hipblaslt_without_the_gpu_is_a_warning_rocblas_is_missing() {
    let tree = Tree::new();
    tree.file(format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat"), &tensile_index(&["gfx1100"], 2));
    tree.file(format!("{HIPBLASLT_LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 2));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat"), &tensile_index(&["gfx1030"], 2));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_gfx1030.co"), &co(GFX1030, 0, 2));
    let run = check(&root_and(&tree, &["--gpu", "gfx1030", "--json"]), &[]);
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["outcome"], "ok");
    let h = verdict(&report, "hipblaslt/library/");
    assert_eq!((h["status"].as_str(), h["component"].as_str()), (Some("warn"), Some("hipblaslt")));
    let c = h["consequence"].as_str().unwrap_or("");
    assert!(c.contains("does not abort") && c.contains("rocblaslt error: Cannot read"), "{c}");

    // The other way round: rocBLAS without gfx1100 in its lazy layout aborts.
    let run = check(&root_and(&tree, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(1);
    let r = verdict(&run.json(), "rocblas/library/").clone();
    assert_eq!(r["status"], "missing");
    let c = r["consequence"].as_str().unwrap_or("");
    assert!(c.contains("Cannot read") && c.contains("for GPU arch : gfx1100") && c.contains("aborts"), "{c}");
}

/// PyTorch (aten CUDAHooks.cpp `getHipblasltPreferredArchs`, targets.toml `pytorch_hipblaslt`)
/// sends gfx90a/gfx942/gfx950/gfx1200/gfx1201 GEMMs to hipBLASLt by default and does not fall
/// back when the library lacks the arch; hipBLASLt itself does not abort. A WARN either way,
/// whose consequence names the PyTorch path that fails (review: MISSING overstated it, and a
/// mixed system uses rocBLAS).
#[test]
fn hipblaslt_gap_names_pytorchs_default_where_it_applies() {
    let tree = Tree::new();
    tree.file(format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat"), &tensile_index(&["gfx1100"], 2));
    tree.file(format!("{HIPBLASLT_LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 2));
    let run = check(&root_and(&tree, &["--gpu", "gfx90a", "--json"]), &[]);
    run.expect_code(0);
    let h = verdict(&run.json(), "hipblaslt/library/").clone();
    assert_eq!(h["status"], "warn");
    let c = h["consequence"].as_str().unwrap_or("");
    assert!(c.contains("PyTorch sends this GPU's GEMMs to hipBLASLt by default"), "{c}");
    let run = check(&root_and(&tree, &["--gpu", "gfx1030", "--json"]), &[]);
    run.expect_code(0);
    let h = verdict(&run.json(), "hipblaslt/library/").clone();
    assert_eq!(h["status"], "warn");
    assert!(h["consequence"].as_str().unwrap_or("").contains("PyTorch uses rocBLAS unless"), "{h:#}");
}

/// Review finding: an ExtOp index without the GPU's kernels was reported inside an OK verdict
/// ("… its extension operations fail"): a failing path is a WARN (hipBLASLt does not abort).
#[test]
fn hipblaslt_extop_index_without_the_gpu_is_a_warning_not_ok() {
    let tree = Tree::new();
    tree.file(format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat"), &tensile_index(&["gfx1100"], 2));
    tree.file(format!("{HIPBLASLT_LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 2));
    let mut e = Vec::new();
    rmp::encode::write_map_len(&mut e, 1).expect("map");
    rmp::encode::write_str(&mut e, "gfx90a").expect("arch");
    rmp::encode::write_map_len(&mut e, 0).expect("ops");
    tree.file(format!("{HIPBLASLT_LIB}/hipblasltExtOpLibrary.dat"), &e);
    let run = check(&root_and(&tree, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(0);
    let h = verdict(&run.json(), "hipblaslt/library/").clone();
    assert_eq!(h["status"], "warn", "{h:#}");
    assert!(h["detail"].as_str().unwrap_or("").contains("extension operations"), "{h:#}");
}

/// rocBLAS with a merged `TensileLibrary.dat` does not abort when the device has no row: each
/// GEMM fails with "No Tensile solution found" (tensile_host.cpp `runContractionProblem`).
#[test]
fn merged_rocblas_index_without_the_gpu_fails_gemms_without_aborting() {
    let tree = Tree::new();
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary.dat"), &tensile_index(&["gfx90a"], 2));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_gfx90a.co"), &co(GFX90A, 0, 2));
    let run = check(&root_and(&tree, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(1);
    let r = verdict(&run.json(), "rocblas/library/").clone();
    assert_eq!(r["status"], "missing");
    let c = r["consequence"].as_str().unwrap_or("");
    assert!(c.contains("does not abort") && c.contains("No Tensile solution found"), "{c}");
    assert!(!c.contains("aborts the process"), "{c}");
}

/// An index that cannot be read is not an index that loads (issue 33, item 3): rocBLAS opens the
/// first index in its lookup order that exists, and Tensile MessagePack.cpp `LoadLibraryFile`
/// returns no library for a truncated one, so rocBLAS tensile_host.cpp `initialize` prints
/// "Could not load" and aborts. scan counts it for no target; check says it could not be read;
/// the two agree, and the file is a problem (exit 1 for scan).
#[test]
fn a_truncated_index_serves_nothing_in_scan_and_check_alike() {
    let tree = Tree::new();
    let whole = tensile_index(&["gfx1100"], 2);
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1100.dat"), &whole[..whole.len() / 2]);
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary.dat"), &tensile_index(&["gfx1100"], 2));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 2));
    let run = check(&root_and(&tree, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(1);
    let r = verdict(&run.json(), "rocblas/library/").clone();
    assert_eq!(r["status"], "missing", "{r:#}");
    let d = r["detail"].as_str().unwrap_or("");
    assert!(d.contains("TensileLibrary_lazy_gfx1100.dat could not be read"), "{d}");
    assert!(!d.contains("the index loads"), "{d}");
    let c = r["consequence"].as_str().unwrap_or("");
    assert!(c.contains("Could not load") && c.contains("aborts the process"), "{c}");
    assert!(r["loads"].is_null(), "nothing loads: {r:#}");
    let (scan, snap) = tree.scan_json(&[]);
    scan.expect_code(1);
    let counts = &snap["families"]["rocblas-files"]["gfx1100"];
    // The merged index and the code file count; the truncated index does not.
    assert_eq!(counts, 2, "{:#}", snap["families"]);
    let index = snap["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["path"].as_str().is_some_and(|p| p.ends_with("lazy_gfx1100.dat")))
        .expect("the index is listed");
    assert_eq!(index["artifact"]["tensile"]["unreadable"], true, "{index:#}");
    assert_eq!(index["artifact"]["content_targets"], json!([]), "{index:#}");
}

// 3. One install at a time.

#[test]
fn each_install_gets_its_own_verdict() {
    let tree = Tree::new();
    tree.file("opt/rocm-6.2.0/lib/libold.so", &host_lib(&[("gfx1030", &co(GFX1030, 0, 1))]));
    tree.file("opt/rocm-7.2.0/lib/libnew.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    tree.file(
        "venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so",
        &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]),
    );
    let run = check(&root_and(&tree, &["--gpu", "gfx1100", "--json"]), &[]);
    run.expect_code(1);
    let report = run.json();
    let installs: Vec<(String, String, String)> = report["installs"]
        .as_array()
        .expect("installs")
        .iter()
        .map(|i| {
            let p = i["path"].as_str().unwrap_or("");
            let p = p.strip_prefix(&format!("{}/", tree.root_str())).unwrap_or(p).to_string();
            (p, i["kind"].as_str().unwrap_or("").to_string(), i["status"].as_str().unwrap_or("").to_string())
        })
        .collect();
    assert_eq!(
        installs,
        [
            ("opt/rocm-6.2.0".to_string(), "rocm".to_string(), "missing".to_string()),
            ("opt/rocm-7.2.0".to_string(), "rocm".to_string(), "ok".to_string()),
            ("venv/lib/python3.12/site-packages/torch".to_string(), "python".to_string(), "ok".to_string()),
        ]
    );
    // The new install, named alone, passes: the old one no longer fails it.
    let new_only = vec![tree.path("opt/rocm-7.2.0").into_os_string(), "--gpu".into(), "gfx1100".into()];
    check(&new_only, &[]).expect_code(0);
}

// 4. Generic targets: devices, not generic names.

#[test]
fn diff_reports_the_devices_a_generic_object_served() {
    let old = Tree::new();
    old.file("lib/libsolver.so", &host_lib(&[("gfx9-4-generic", &generic_co(GFX9_4_GENERIC))]));
    let new = Tree::new();
    new.file("lib/libsolver.so", &host_lib(&[("gfx942", &co(GFX942, 0, 1))]));
    let run = gfxscan(os(&["diff", "--quiet", "--fail-on-loss", &old.root_str(), &new.root_str(), "--json"]));
    run.expect_code(1);
    let d = run.json();
    assert_eq!(d["outcome"], "loss");
    let lost = &d["losses"][0];
    let targets: Vec<&str> =
        lost["targets"].as_array().expect("targets").iter().filter_map(Value::as_str).collect();
    assert!(targets.iter().all(|t| !t.contains("generic")), "{d:#}");
    // clr `TargetGenericMap` maps gfx942 and gfx950 to gfx9-4-generic, not gfx940/gfx941:
    // only gfx950 loaded the generic code and lost it.
    assert_eq!(targets, ["gfx950"], "{d:#}");
    assert_eq!(lost["via_generic"]["gfx950"], "gfx9-4-generic");
    let table = gfxscan(os(&["diff", "--quiet", &old.root_str(), &new.root_str()]));
    table.expect_code(0);
    assert!(table.stdout.contains("gfx950 (was served by gfx9-4-generic)"), "{}", table.stdout);
}

#[test]
fn scan_only_shows_what_serves_a_target_through_its_generic() {
    let tree = Tree::new();
    tree.file("lib/libsolver.so", &host_lib(&[("gfx11-generic", &generic_co(GFX11_GENERIC))]));
    // The generic row follows the target it serves, says so, and holds the code; the
    // target's own row has none.
    let run = tree.scan(&["--only", "gfx1151"]);
    run.expect_code(0);
    let rows: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("TARGET"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.contains("gfx"))
        .map(|l| l.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect())
        .collect();
    assert_eq!(
        rows,
        [vec!["gfx1151", "Radeon 8060S", "—"], vec!["gfx11-generic (serves gfx1151)", "1"]],
        "{}",
        run.stdout
    );
    // In the per-library view the library is marked as serving gfx1151 through its generic code.
    let library = tree.scan(&["--by", "library", "--only", "gfx1151"]);
    library.expect_code(0);
    let line = library.stdout.lines().find(|l| l.contains("lib/libsolver.so")).expect("library row");
    assert_eq!(line.split_whitespace().collect::<Vec<_>>(), ["lib/libsolver.so", "○"], "{}", library.stdout);
    let (run, snap) = tree.scan_json(&["--only", "gfx1151"]);
    run.expect_code(0);
    assert_eq!(snap["via_generic"], json!({"gfx1151": "gfx11-generic"}));
    assert_eq!(snap["targets"]["gfx11-generic"]["code_objects"], 1);
    assert_eq!(snap["targets"]["gfx1151"]["code_objects"], 0);
    // --compare puts the generic target's column right after the target it serves.
    // --wide keeps one block, whatever the width.
    let compare = tree.scan(&["--compare", "gfx1151", "--wide"]);
    compare.expect_code(0);
    let head = compare.stdout.lines().find(|l| l.contains("LAYER")).expect("header row");
    assert_eq!(
        head.split_whitespace().collect::<Vec<_>>(),
        ["LAYER", "gfx1151", "gfx11-generic", "(serves", "gfx1151)"]
    );
    let row = compare.stdout.lines().find(|l| l.contains("device code in host libraries")).expect("row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 2..], ["—", "1"], "{}", compare.stdout);
    // At 60 columns the labels are cut to leave room: the generic column still comes right
    // after the target it serves, and no line passes the width.
    let narrow = {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        c.args(["scan", "--compare", "gfx1151"]).arg(tree.root()).env("COLUMNS", "60");
        crate::util::run(c)
    };
    let head = narrow.stdout.lines().find(|l| l.trim_start().starts_with("LAYER")).expect("header");
    assert_eq!(
        head.split_whitespace().collect::<Vec<_>>(),
        ["LAYER", "gfx1151", "gfx11-generic", "(serves", "gfx1151)"]
    );
    assert!(narrow.stdout.lines().all(|l| l.chars().count() <= 60), "{}", narrow.stdout);
    assert!(narrow.stdout.contains('…'), "{}", narrow.stdout);
}

// 5. `diff` never misreads.

/// What a scan really writes reads back (review of issue 33): two names that are not UTF-8 and
/// show alike, a code object V2 of an ISA the table lacks (named by its ISA, `gfx999`), and an
/// object an older table left `unknown-0x41` that today's names gfx1100 — none is tampering.
#[test]
fn every_snapshot_a_scan_writes_reads_back() {
    use std::os::unix::ffi::OsStrExt;
    let tree = Tree::new();
    let one = co(GFX1100, 0, 1);
    for name in [b"a\xff.hsaco".as_slice(), b"a\xfe.hsaco".as_slice()] {
        std::fs::write(tree.root().join(std::ffi::OsStr::from_bytes(name)), &one).expect("write");
    }
    tree.file("lib/old.hsaco", &code_object(&CodeObjectSpec::v2((9, 9, 9), &["k"])));
    let (run, mut snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("snap.json");
    std::fs::write(&path, serde_json::to_vec(&snap).expect("json")).expect("write");
    let p = path.display().to_string();
    let d = gfxscan(["diff", &p, &p]);
    d.expect_code(0);
    // As an older table wrote it.
    let files = snap["files"].as_array_mut().expect("files");
    let c = files
        .iter_mut()
        .flat_map(|f| f["code_objects"].as_array_mut().expect("objects").iter_mut())
        .find(|c| c["processor"] == "gfx1100")
        .expect("a gfx1100 object");
    c["processor"] = json!("unknown-0x41");
    c["target_id"] = json!("unknown-0x41");
    std::fs::write(&path, serde_json::to_vec(&snap).expect("json")).expect("write");
    gfxscan(["diff", &p, &p]).expect_code(0);
}

/// Nothing trusted as written (issue 33, item 4): a snapshot read back whose files are listed
/// twice, whose summary disagrees with its files, whose code object's target ID names another
/// processor (or whose `e_flags` state another target), or whose object runs past its file's
/// end is refused — `diff` exits 2 naming the first problem and how many more, `merge` refuses
/// that source — where before `diff` reported targets "gained" and `merge` doubled its cells.
#[test]
fn a_snapshot_changed_after_the_scan_is_refused() {
    let m = crate::fixtures::mixed();
    let (run, snap) = m.tree.scan_json(&[]);
    run.expect_code(0);
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, v: &Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec(v).expect("json")).expect("write");
        p.display().to_string()
    };
    let good = write("good.json", &snap);
    gfxscan(["diff", &good, &good]).expect_code(0);
    let with_code = |s: &mut Value| -> usize {
        let files = s["files"].as_array().expect("files");
        files.iter().position(|f| !f["code_objects"].as_array().expect("objects").is_empty()).expect("code")
    };
    type Tamper = fn(&mut Value, usize);
    let cases: [(&str, Tamper, &str); 6] = [
        (
            "twice",
            |s, i| {
                let f = s["files"][i].clone();
                s["files"].as_array_mut().expect("files").push(f);
            },
            "listed twice",
        ),
        ("summary", |s, _| s["summary"]["code_objects"] = json!(999_999), "summary.code_objects is 999999"),
        (
            "target-id",
            |s, i| s["files"][i]["code_objects"][0]["target_id"] = json!("gfx1201"),
            "is not processor",
        ),
        (
            "processor",
            |s, i| {
                let c = &mut s["files"][i]["code_objects"][0];
                let other = if c["processor"] == "gfx1201" { "gfx1200" } else { "gfx1201" };
                c["processor"] = json!(other);
                c["target_id"] = json!(other);
            },
            "its e_flags",
        ),
        (
            "offset",
            |s, i| {
                let size = s["files"][i]["size"].as_u64().expect("size");
                let c = &mut s["files"][i]["code_objects"][0];
                c["offset"] = json!(size);
                // Past any inflated bundle too.
                if let Some(b) = c["location"].get_mut("bundle_sizes") {
                    *b = json!([1, 1]);
                }
            },
            "run past the end of",
        ),
        (
            "all",
            |s, i| {
                s["summary"]["code_objects"] = json!(1);
                s["summary"]["files_with_device_code"] = json!(1);
                s["files"][i]["code_objects"][0]["target_id"] = json!("gfx1201");
            },
            "(and 2 more problems)",
        ),
    ];
    for (name, tamper, says) in cases {
        let mut changed = snap.clone();
        let i = with_code(&mut changed);
        tamper(&mut changed, i);
        let path = write(&format!("{name}.json"), &changed);
        let d = gfxscan(["diff", &good, &path]);
        d.expect_code(2);
        assert!(d.stderr.contains(says) && d.stderr.contains("rescan"), "{name}: {}", d.stderr);
        assert!(d.stdout.is_empty(), "{name}: nothing judged from it: {}", d.stdout);
        let fleet = tempfile::tempdir().expect("fleet");
        std::fs::copy(&path, fleet.path().join("node.json")).expect("copy");
        let merged = gfxscan(["merge", &fleet.path().display().to_string(), "--json"]);
        merged.expect_code(3);
        let sources = merged.json()["sources"].clone();
        assert!(sources[0]["error"].as_str().is_some_and(|e| e.contains(says)), "{name}: {sources:#}");
    }
}

#[test]
fn diff_refuses_what_is_not_a_snapshot() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let (_, snap) = tree.scan_json(&[]);
    let good = serde_json::to_vec(&snap).expect("json");
    let files = Tree::new();
    for (name, bytes) in
        [("empty.json", &b""[..]), ("array.json", b"[]"), ("null.json", b"null\n"), ("num.json", b"42")]
    {
        files.file(name, bytes);
        let run = gfxscan(os(&["diff", "--quiet", &files.path(name).to_string_lossy(), &tree.root_str()]));
        run.expect_code(2);
        assert!(run.stderr.contains(name) && run.stderr.contains("not"), "{name}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{name}");
    }
    // A byte-order mark before a valid snapshot, and a gzipped snapshot, are read.
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(&good);
    files.file("bom.json", &bom);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&good).expect("gzip");
    files.file("snap.json.gz", &gz.finish().expect("gzip"));
    for name in ["bom.json", "snap.json.gz"] {
        let run = gfxscan(os(&[
            "diff",
            "--quiet",
            "--json",
            &files.path(name).to_string_lossy(),
            &tree.root_str(),
        ]));
        run.expect_code(0);
        assert_eq!(run.json()["outcome"], "same", "{name}");
    }
}

/// Review finding: a `scan` table saved as `.json`, a snapshot PowerShell re-encoded as UTF-16,
/// and one compressed with xz or zstd were each scanned as a one-file install with nothing in
/// it, and the diff claimed every target lost (exit 1 with --fail-on-loss).
#[test]
fn diff_reads_utf16_and_compressed_snapshots_and_refuses_text() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let (_, snap) = tree.scan_json(&[]);
    let good = serde_json::to_string(&snap).expect("json");
    let files = Tree::new();
    let table = gfxscan(os(&["scan", "--quiet", &tree.root_str()]));
    files.file("table.json", table.stdout.as_bytes());
    files.file("random.bin", &[0x9c, 0x01, 0xfe, 0x77, 0x00, 0x13, 0x37, 0x42, 0x00, 0x01]);
    for name in ["table.json", "random.bin"] {
        let run = gfxscan(os(&[
            "diff",
            "--quiet",
            "--fail-on-loss",
            &tree.root_str(),
            &files.path(name).to_string_lossy(),
        ]));
        run.expect_code(2);
        assert!(run.stderr.contains(name) && run.stderr.contains("snapshot"), "{name}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{name}");
    }
    let mut le = vec![0xff, 0xfe];
    le.extend(good.encode_utf16().flat_map(u16::to_le_bytes));
    let mut be = vec![0xfe, 0xff];
    be.extend(good.encode_utf16().flat_map(u16::to_be_bytes));
    files.file("utf16le.json", &le);
    files.file("utf16be.json", &be);
    files.file("snap.json.zst", &zstd::bulk::compress(good.as_bytes(), 3).expect("zstd"));
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(good.as_bytes()).expect("xz");
    files.file("snap.json.xz", &xz.finish().expect("xz"));
    for name in ["utf16le.json", "utf16be.json", "snap.json.zst", "snap.json.xz"] {
        let side = files.path(name).to_string_lossy().into_owned();
        let run = gfxscan(os(&["diff", "--quiet", "--json", "--fail-on-loss", &side, &tree.root_str()]));
        run.expect_code(0);
        assert_eq!(run.json()["outcome"], "same", "{name}");
    }
}

#[test]
fn a_filtered_snapshot_is_compared_on_its_targets_only() {
    let tree = Tree::new();
    tree.file(
        "lib/libfoo.so",
        &host_lib(&[("gfx1100", &co(GFX1100, 0, 1)), ("gfx1030", &co(GFX1030, 0, 1))]),
    );
    let (_, only) = tree.scan_json(&["--only", "gfx1100"]);
    assert_eq!(only["filtered_to"], json!(["gfx1100"]));
    let snaps = Tree::new();
    snaps.file("only.json", &serde_json::to_vec(&only).expect("json"));
    let run = gfxscan(os(&[
        "diff",
        "--quiet",
        "--json",
        &snaps.path("only.json").to_string_lossy(),
        &tree.root_str(),
    ]));
    run.expect_code(0);
    let d = run.json();
    assert_eq!(d["compared_targets"], json!(["gfx1100"]));
    assert_eq!(d["gains"], json!([]), "gfx1030 was filtered out, not gained: {d:#}");
    assert_eq!(d["counts"], json!([]), "{d:#}");
    let table =
        gfxscan(os(&["diff", "--quiet", &snaps.path("only.json").to_string_lossy(), &tree.root_str()]));
    assert!(table.stdout.contains("written with --only gfx1100"), "{}", table.stdout);
}

// 6. Problems are not losses.

#[test]
fn an_unreadable_side_makes_the_diff_incomplete() {
    let ok = Tree::new();
    ok.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let bad = Tree::new();
    bad.file("lib/libfoo.so", b"\x7fELF\x02\x01\x01\x00 cut");
    bad.fifo("lib/pipe");
    let run = gfxscan(os(&["diff", "--quiet", "--fail-on-loss", "--json", &ok.root_str(), &bad.root_str()]));
    run.expect_code(3);
    let d = run.json();
    assert_eq!(d["outcome"], "incomplete");
    assert!(!d["new"]["problems"].as_array().expect("problems").is_empty(), "{d:#}");
    let table = gfxscan(os(&["diff", "--quiet", &ok.root_str(), &bad.root_str()]));
    table.expect_code(3);
    assert!(table.stdout.contains("The new side could not be read in full"), "{}", table.stdout);
    assert!(table.stdout.contains("INCOMPLETE"), "{}", table.stdout);
}

// 7. Exit codes survive a closed pipe.

#[test]
fn exit_codes_survive_a_closed_pipe() {
    let old = Tree::new();
    let new = Tree::new();
    for i in 0..400 {
        old.file(format!("lib/lib{i:03}.so"), &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    }
    new.file("lib/lib000.so", &host_lib(&[("gfx1030", &co(GFX1030, 0, 1))]));
    for (args, want) in [
        (format!("diff --quiet --fail-on-loss '{}' '{}'", old.root_str(), new.root_str()), 1),
        (format!("diff --quiet --fail-on-loss --json '{}' '{}'", old.root_str(), new.root_str()), 1),
        (format!("check --quiet '{}' --gpu gfx1030 --json", old.root_str()), 1),
    ] {
        let script = format!("set -o pipefail; '{BIN}' {args} | head -c 1 >/dev/null");
        let out = Command::new("bash").args(["-c", &script]).output().expect("bash");
        assert_eq!(out.status.code(), Some(want), "{args}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{args}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

// 8. Arguments and output.

#[test]
fn thread_counts_are_capped() {
    let tree = Tree::new();
    for j in ["20000", "0", "x"] {
        let run = gfxscan(os(&["scan", "-q", "-j", j, &tree.root_str()]));
        run.expect_code(2);
        assert!(run.stderr.contains("--threads"), "{j}: {}", run.stderr);
    }
    gfxscan(os(&["scan", "-q", "-j", "256", &tree.root_str()])).expect_code(0);
    let help = gfxscan(os(&["scan", "--help"]));
    assert!(help.stdout.contains("1 to 256"), "{}", help.stdout);
}

#[test]
fn outputs_are_checked_first_and_written_whole() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let run = gfxscan(os(&["scan", "-q", &tree.root_str(), "-o", "/nonexistent/x.json"]));
    run.expect_code(2);
    assert!(run.stderr.contains("/nonexistent/x.json"), "{}", run.stderr);
    // Checked before the scan: a root that does not exist is not reached.
    let run = gfxscan(os(&["scan", "-q", "/no/such/root", "-o", "/nonexistent/x.json"]));
    assert!(run.stderr.contains("/nonexistent/x.json"), "{}", run.stderr);
    if std::path::Path::new("/dev/full").exists() {
        let run = gfxscan(os(&["scan", "-q", &tree.root_str(), "--json", "-o", "/dev/full"]));
        run.expect_code(2);
        assert!(run.stderr.contains("/dev/full"), "{}", run.stderr);
    }
    // A failed run leaves no file; a good one leaves the whole document and no temporary file.
    let out = Tree::new();
    let target = out.path("snap.json");
    let run = gfxscan(os(&["scan", "-q", "/no/such/root", "--json", "-o", &target.to_string_lossy()]));
    run.expect_code(2);
    assert!(!target.exists());
    gfxscan(os(&["scan", "-q", &tree.root_str(), "--json", "-o", &target.to_string_lossy()])).expect_code(0);
    let text = std::fs::read_to_string(&target).expect("written");
    assert!(serde_json::from_str::<Value>(&text).is_ok());
    let left: Vec<_> =
        std::fs::read_dir(out.root()).expect("list").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("snap.json")]);
}

#[test]
fn nested_roots_are_refused() {
    let tree = Tree::new();
    tree.file("opt/rocm/lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let run = gfxscan(os(&["scan", "-q", &tree.root_str(), &tree.path("opt").to_string_lossy()]));
    run.expect_code(2);
    assert!(run.stderr.contains("lies inside"), "{}", run.stderr);
}

// 9. Runtime semantics.

fn kfd(nodes: &[(u32, u64)]) -> Tree {
    let t = Tree::new();
    for (n, (v, uid)) in nodes.iter().enumerate() {
        let simd = if *v == 0 { 0 } else { 96 };
        let props = format!("simd_count {simd}\ngfx_target_version {v}\ncapability 0\nunique_id {uid}\n");
        t.file(format!("sys/class/kfd/kfd/topology/nodes/{n}/properties"), props.as_bytes());
    }
    t
}

fn checked_gpus(report: &Value) -> Vec<String> {
    report["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["effective"]["target_id"].as_str().unwrap_or("").to_string())
        // KFD GPUs without the SRAM ECC capability bit are named `:sramecc-` where they have it.
        .map(|t| t.trim_end_matches(":sramecc-").to_string())
        .collect()
}

#[test]
fn visible_devices_pick_the_gpus_checked() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let sys = kfd(&[(0, 0), (110000, 0x11), (100300, 0x22), (90010, 0x33)]);
    let mut a = root_and(&tree, &["--json", "--sysfs-root"]);
    a.push(sys.root().as_os_str().to_os_string());
    let all = check(&a, &[]);
    assert_eq!(checked_gpus(&all.json()), ["gfx1100", "gfx1030", "gfx90a"]);
    for (env, want) in [
        (vec![("ROCR_VISIBLE_DEVICES", "0")], vec!["gfx1100"]),
        (vec![("ROCR_VISIBLE_DEVICES", "2,0")], vec!["gfx90a", "gfx1100"]),
        // ROCr amd_filter_device.cpp `ProcessUuidToken`: a prefix of `GPU-%016lX`, upper-cased.
        (vec![("ROCR_VISIBLE_DEVICES", "gpu-00000000000000")], vec![]),
        (vec![("ROCR_VISIBLE_DEVICES", "GPU-0000000000000022")], vec!["gfx1030"]),
        (vec![("ROCR_VISIBLE_DEVICES", "gpu-000000000000003")], vec!["gfx90a"]),
        // An invalid entry ends the list; so does an index already named (`BuildUsrDeviceList`).
        (vec![("ROCR_VISIBLE_DEVICES", "1,7,0")], vec!["gfx1030"]),
        (vec![("ROCR_VISIBLE_DEVICES", "0,0,1")], vec!["gfx1100"]),
        // Indexes are read by `strtol(…, 0)`: hex and octal count, trailing bytes end the list.
        (vec![("ROCR_VISIBLE_DEVICES", "0x1, 02")], vec!["gfx1030", "gfx90a"]),
        (vec![("ROCR_VISIBLE_DEVICES", "2,1x")], vec!["gfx90a"]),
        // ROCr keeps `strtol`'s result in an int32_t: 2^32 wraps to index 0.
        (vec![("ROCR_VISIBLE_DEVICES", "4294967296")], vec!["gfx1100"]),
        (vec![("HIP_VISIBLE_DEVICES", "1")], vec!["gfx1030"]),
        (vec![("ROCR_VISIBLE_DEVICES", "1,2"), ("HIP_VISIBLE_DEVICES", "1")], vec!["gfx90a"]),
    ] {
        let run = check(&a, &env);
        if want.is_empty() {
            run.expect_code(2);
            assert!(run.stderr.contains("leaves no GPU"), "{env:?}: {}", run.stderr);
            continue;
        }
        let got = checked_gpus(&run.json());
        assert_eq!(got, want, "{env:?}");
        let only_1100 = want == ["gfx1100"];
        run.expect_code(if only_1100 { 0 } else { 1 });
    }
    // An empty ROCR_VISIBLE_DEVICES hides every GPU (`RvdFilter::SelectZeroDevices`); an empty
    // entry makes ROCr's `token.at(0)` throw inside hsa_init: no GPU either.
    for value in ["", "0,,1", "0, ,1"] {
        let run = check(&a, &[("ROCR_VISIBLE_DEVICES", value)]);
        run.expect_code(2);
        assert!(run.stderr.contains("leaves no GPU"), "{value:?}: {}", run.stderr);
    }
}

/// libhsakmt applies HSA_OVERRIDE_GFX_VERSION to every GPU node, so a GPU the target table
/// does not know is checked as the target the override names, not set aside as unknown.
#[test]
fn an_override_applies_to_a_gpu_the_table_does_not_know() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let sys = kfd(&[(0, 0), (110900, 0)]);
    let mut a = root_and(&tree, &["--json", "--sysfs-root"]);
    a.push(sys.root().as_os_str().to_os_string());
    let run = check(&a, &[("HSA_OVERRIDE_GFX_VERSION", "11.0.0")]);
    run.expect_code(0);
    let report = run.json();
    assert_eq!(checked_gpus(&report), ["gfx1100"]);
    assert_eq!(report["devices"][0]["native"]["processor"], "gfx1190");
    assert!(report["unknown_gpus"].as_array().is_some_and(Vec::is_empty), "{report:#}");
    assert!(run.stdout.contains("an ISA targets.toml does not know"), "{}", run.stdout);
}

/// Review finding: an overridden GPU kept the native target's features (none, for a GPU the
/// table lacks), so `HSA_XNACK=0` with only `xnack+` code read as OK. The effective target's
/// modes are its own: xnack from HSA_XNACK, sramecc from the node's capability bit.
#[test]
fn an_overridden_gpu_takes_the_modes_of_its_effective_target() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx90a:xnack+", &co(GFX90A, 0x300, 1))]));
    for native in [110900, 100300] {
        let sys = kfd(&[(0, 0), (native, 0)]);
        let mut a = root_and(&tree, &["--json", "--sysfs-root"]);
        a.push(sys.root().as_os_str().to_os_string());
        let run = check(&a, &[("HSA_XNACK", "0"), ("HSA_OVERRIDE_GFX_VERSION", "9.0.10")]);
        run.expect_code(1);
        assert_eq!(run.json()["devices"][0]["effective"]["target_id"], "gfx90a:sramecc-:xnack-", "{native}");
        let run = check(&a, &[("HSA_XNACK", "1"), ("HSA_OVERRIDE_GFX_VERSION", "9.0.10")]);
        run.expect_code(0);
    }
}

#[test]
fn an_unknown_kfd_gpu_is_reported_while_the_others_are_checked() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let sys = kfd(&[(0, 0), (110000, 0), (990909, 0)]);
    let mut a = root_and(&tree, &["--json", "--sysfs-root"]);
    a.push(sys.root().as_os_str().to_os_string());
    let run = check(&a, &[]);
    run.expect_code(3);
    let report = run.json();
    assert_eq!(checked_gpus(&report), ["gfx1100"]);
    assert_eq!(report["unknown_gpus"][0]["node"], 2);
    assert_eq!(report["unknown_gpus"][0]["name"], "gfx9999");
    assert_eq!(report["outcome"], "incomplete");
}

#[test]
fn gpu_flags_read_as_users_write_them() {
    let tree = Tree::new();
    tree.file(
        "lib/libfoo.so",
        &host_lib(&[("gfx1100", &co(GFX1100, 0, 1)), ("gfx90a:xnack+", &co(GFX90A, 0x300, 1))]),
    );
    let run = check(&root_and(&tree, &["--json", "--gpu", "GFX1100,gfx90a"]), &[("HSA_XNACK", "1")]);
    run.expect_code(0);
    assert_eq!(checked_gpus(&run.json()), ["gfx1100", "gfx90a:xnack+"]);
    // HSA_XNACK applies to a --gpu that does not state its mode: xnack- code does not serve it.
    let run = check(&root_and(&tree, &["--json", "--gpu", "gfx90a"]), &[("HSA_XNACK", "0")]);
    run.expect_code(1);
    let run = check(&root_and(&tree, &["--gpu", "gfx11-generic"]), &[]);
    run.expect_code(2);
    assert!(run.stderr.contains("not a GPU; did you mean gfx1100"), "{}", run.stderr);
    // libhsakmt's sscanf takes leading white space.
    let run =
        check(&root_and(&tree, &["--json", "--gpu", "gfx1101"]), &[("HSA_OVERRIDE_GFX_VERSION", " 11.0.0")]);
    run.expect_code(0);
}

/// `ROCBLAS_TENSILE_LIBPATH` names the folder rocBLAS loads instead of the one beside it
/// (rocBLAS tensile_host.cpp `determine_tensile_base_path`).
#[test]
fn tensile_libpath_replaces_the_install_folder() {
    let tree = Tree::new();
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat"), &tensile_index(&["gfx1030"], 1));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_gfx1030.co"), &co(GFX1030, 0, 1));
    let custom = Tree::new();
    custom.file("library/TensileLibrary_lazy_gfx1100.dat", &tensile_index(&["gfx1100"], 1));
    custom.file("library/TensileLibrary_gfx1100.co", &co(GFX1100, 0, 1));
    let libpath = custom.path("library");
    let a = root_and(&tree, &["--json", "--gpu", "gfx1100"]);
    check(&a, &[]).expect_code(1);
    let run = check(&a, &[("ROCBLAS_TENSILE_LIBPATH", &libpath.to_string_lossy())]);
    run.expect_code(0);
    let report = run.json();
    let v = verdict(&report, "library/");
    assert!(v["detail"].as_str().unwrap_or("").contains("set by ROCBLAS_TENSILE_LIBPATH"), "{v:#}");
    let run = check(&a, &[("ROCBLAS_TENSILE_LIBPATH", "/no/such/library")]);
    run.expect_code(1);

    // A hipBLASLt folder named by the environment is judged as hipBLASLt, whatever its path:
    // a gap there is a warning, not a failed start.
    let hip = Tree::new();
    hip.file(format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat"), &tensile_index(&["gfx1100"], 1));
    hip.file(format!("{HIPBLASLT_LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 1));
    let a = root_and(&hip, &["--json", "--gpu", "gfx1100"]);
    check(&a, &[]).expect_code(0);
    let run = check(&a, &[("HIPBLASLT_TENSILE_LIBPATH", &tree.path(ROCBLAS_LIB).to_string_lossy())]);
    run.expect_code(0);
    let report = run.json();
    let v = verdict(&report, "rocblas/library/");
    assert_eq!((v["status"].as_str(), v["component"].as_str()), (Some("warn"), Some("hipblaslt")), "{v:#}");
}

// 10. Every claim matches its evidence.

#[test]
fn miopen_stand_ins_are_not_databases() {
    let tree = Tree::new();
    tree.file(
        "opt/rocm/share/miopen/db/gfx942.kdb",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 123456789\n",
    );
    tree.file("opt/rocm/share/miopen/db/gfx942_metadata.tn.model", b"{\"model\": 1}\n");
    tree.file("opt/rocm/lib/libMIOpen.so", &host_lib(&[("gfx942", &co(GFX942, 0, 1))]));
    let run = check(&root_and(&tree, &["--json", "--gpu", "gfx942"]), &[]);
    run.expect_code(0);
    let report = run.json();
    let v = verdict(&report, "miopen/db/");
    assert_eq!(v["status"], "warn");
    let d = v["detail"].as_str().unwrap_or("");
    assert!(d.contains("gfx942.kdb is a git-lfs pointer") && d.contains("not a database"), "{d}");
    assert!(d.contains("tuning model, not a perf DB"), "{d}");
}

/// Review findings: MIOpen's HIP build reads `<arch>_<cu>.HIP.fdb.txt` (find_db.cpp
/// `GetInstalledPath` with `GetSystemFindDbSuffix()`), so an OpenCL find-DB alone is no
/// database for it; and a target offered as "has" must have a real database, not a tuning
/// model or a stand-in of that name. A folder of databases alone is nothing to check.
#[test]
fn miopen_verdicts_count_only_databases_miopen_reads() {
    let tree = Tree::new();
    tree.file(
        "opt/rocm/lib/libMIOpen.so.1",
        &host_lib(&[("gfx900", &co(0x2c, 0, 1)), ("gfx942", &co(0x4c, 0, 1))]),
    );
    tree.file(format!("{MIOPEN_DB}/gfx900_56.OpenCL.fdb.txt"), b"k=ConvOclDirectFwd:1,2,3\n");
    tree.file(format!("{MIOPEN_DB}/gfx942_metadata.tn.model"), b"model bytes\n");
    tree.file(format!("{MIOPEN_DB}/gfx1030_36.db.txt"), b"k=ConvOclDirectFwd:1,8,1,16\n");
    for (gpu, stand_in) in [("gfx900", "OpenCL backend"), ("gfx942", "tuning model")] {
        let run = check(&root_and(&tree, &["--gpu", gpu, "--json"]), &[]);
        run.expect_code(0);
        let m = verdict(&run.json(), "miopen/db/").clone();
        assert_eq!(m["status"], "warn", "{gpu}: {m:#}");
        assert!(m["detail"].as_str().unwrap_or("").contains(stand_in), "{gpu}: {m:#}");
        assert_eq!(m["available"], serde_json::json!(["gfx1030"]), "{gpu}");
    }
    let dbs = Tree::new();
    dbs.file(format!("{MIOPEN_DB}/gfx1030_36.db.txt"), b"k=ConvOclDirectFwd:1,8,1,16\n");
    let run = check(&root_and(&dbs, &["--gpu", "gfx1030", "--json"]), &[]);
    run.expect_code(4);
    assert_eq!(run.json()["outcome"], "nothing-to-check");
}

#[test]
fn tensile_detail_never_contradicts_itself() {
    let tree = Tree::new();
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1100.dat"), &tensile_index(&["gfx1100"], 1));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 1));
    tree.file(
        format!("{ROCBLAS_LIB}/TensileLibrary_gfx1101.co"),
        &code_object(&CodeObjectSpec::v4(0x046, 0, &["k"])),
    );
    let run = check(&root_and(&tree, &["--json", "--gpu", "gfx1101"]), &[]);
    run.expect_code(1);
    let d = verdict(&run.json(), "rocblas/library/")["detail"].as_str().unwrap_or("").to_string();
    assert!(d.starts_with("no Tensile index serves gfx1101: indexes serve gfx1100;"), "{d}");
    assert!(d.contains("code-object files hold gfx1101 code (1), but no index leads to it"), "{d}");
}

#[test]
fn a_v2_object_keeps_its_isa_version_beside_its_name() {
    let tree = Tree::new();
    tree.file("blit.co", &code_object(&CodeObjectSpec::v2((8, 0, 0), &["k"])));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let c = &snap["files"][0]["code_objects"][0];
    assert_eq!(
        (c["processor"].as_str(), c["isa_version"].as_str()),
        (Some("gfx802"), Some("8.0.0")),
        "{snap:#}"
    );
}

// 11. Today's hipBLASLt.

fn solution_map(entries: &[(u64, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    rmp::encode::write_map_len(&mut b, entries.len() as u32).expect("map");
    for (i, name) in entries {
        rmp::encode::write_uint(&mut b, *i).expect("key");
        rmp::encode::write_str(&mut b, name).expect("value");
    }
    b
}

#[test]
fn hipblaslt_7_library_reads_without_problems_and_decides_coverage() {
    let tree = Tree::new();
    let lib = |n: &str| format!("{HIPBLASLT_LIB}/{n}");
    tree.file(lib("TensileLibrary_lazy_gfx1100.dat"), &tensile_index(&["gfx1100"], 1));
    tree.file(lib("TensileLibrary_lazy_gfx90a.dat"), &tensile_index(&["gfx90a"], 1));
    tree.file(lib("TensileLibrary_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100.co"), &co(GFX1100, 0, 1));
    tree.file(lib("TensileLibrary_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx90a.co"), &co(GFX90A, 0, 1));
    // The map names gfx1100's library only: gfx90a's solutions have no code library.
    tree.file(
        lib("TensileLiteLibrary_lazy_Mapping.dat"),
        &solution_map(&[(0, "TensileLibrary_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100")]),
    );
    tree.file(lib("hipblasltExtOpLibrary.dat"), &msgpack_of(&json!({"gfx1100": {"AMax": {"S": []}}})));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(snap["problems"], json!([]));
    let roles: Vec<(String, String)> = snap["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| {
            let a = f.get("artifact")?;
            Some((f["path"].as_str()?.rsplit('/').next()?.to_string(), a["role"].as_str()?.to_string()))
        })
        .filter(|(n, _)| n.ends_with("Mapping.dat") || n.starts_with("hipblasltExtOp"))
        .collect();
    assert_eq!(
        roles,
        [
            ("TensileLiteLibrary_lazy_Mapping.dat".into(), "solution-map".into()),
            ("hipblasltExtOpLibrary.dat".into(), "extop-index".into())
        ]
    );
    let ok = check(&root_and(&tree, &["--json", "--gpu", "gfx1100"]), &[]);
    ok.expect_code(0);
    assert_eq!(verdict(&ok.json(), "hipblaslt/library/")["status"], "ok");
    let unmapped = check(&root_and(&tree, &["--json", "--gpu", "gfx90a"]), &[]);
    unmapped.expect_code(0);
    let v = verdict(&unmapped.json(), "hipblaslt/library/").clone();
    assert_eq!(v["status"], "warn");
    let d = v["detail"].as_str().unwrap_or("");
    assert!(d.contains("names no code-object library for it") && d.contains("no gfx90a kernels"), "{d}");
}

// 12. An index that serves by its name.

/// Debian's ROCm 6.4 rocBLAS ships `TensileLibrary_lazy_gfx1010.dat` whose one hardware row is
/// `TruePred`; Tensile's `Predicates::True` holds on any device, and rocBLAS opened the file by
/// the device's name, so it serves gfx1010; the fallback code files decide.
#[test]
fn a_truepred_lazy_index_serves_the_device_it_is_named_for() {
    let tree = Tree::new();
    tree.file(
        format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat"),
        &tensile_index_of_rows(&[json!({"type": "TruePred"})]),
    );
    tree.file(
        format!(
            "{ROCBLAS_LIB}/TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1010.hsaco"
        ),
        &co(GFX1010, 0, 2),
    );
    let run = check(&root_and(&tree, &["--json", "--gpu", "gfx1010"]), &[]);
    run.expect_code(0);
    let report = run.json();
    let v = verdict(&report, "rocblas/library/");
    assert_eq!(v["status"], "ok", "{v:#}");
    assert!(v["detail"].as_str().unwrap_or("").contains("TruePred"), "{v:#}");
    assert!(statuses(&report, &tree).iter().all(|(_, s)| s == "ok"));
    let (_, snap) = tree.scan_json(&[]);
    assert_eq!(snap["mismatches"], json!([]), "a TruePred index does not lie about its name");
    // Without the code, the index alone does not make it OK.
    let bare = Tree::new();
    bare.file(
        format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat"),
        &tensile_index_of_rows(&[json!({"type": "TruePred"})]),
    );
    check(&root_and(&bare, &["--json", "--gpu", "gfx1010"]), &[]).expect_code(1);
}

/// Review finding: only the MIOpen-only case was tested. Device-library bitcode alone is no
/// library with device code either.
#[test]
fn bitcode_alone_is_nothing_to_check() {
    let tree = Tree::new();
    tree.file("opt/rocm/amdgcn/bitcode/oclc_isa_version_1030.bc", b"BC\xc0\xde\x35\x14\x00\x00");
    let run = check(&root_and(&tree, &["--gpu", "gfx1030", "--json"]), &[]);
    run.expect_code(4);
    assert_eq!(run.json()["outcome"], "nothing-to-check");
}
