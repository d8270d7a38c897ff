//! `gfxscan check`: per-GPU, per-library verdicts on trees built here, with GPUs from `--gpu`
//! or from a fake KFD topology (`--sysfs-root`), and `HSA_OVERRIDE_GFX_VERSION` set (or not)
//! in the child's environment only. Every acceptance point of the check issue is one test:
//! exact exit code, exact verdict fields from `--json`, a glance at the table where it speaks.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::process::Command;

use serde_json::{json, Value};

use gfxscan::testing::{bundle, code_object, tensile_index, CodeObjectSpec};

use crate::fixtures::{
    co, hip, hip_bundle, host_lib, GENERIC_V1, GFX1030, GFX1100, GFX11_GENERIC, GFX90A, GFX9_GENERIC, HOST,
    SRAMECC_ON, XNACK_OFF, XNACK_ON,
};
use crate::util::{run, Run, Tree};

const ROCBLAS_LIB: &str = "opt/rocm/lib/rocblas/library";
const OLLAMA_ROCBLAS_LIB: &str = "usr/lib/ollama/rocm/rocblas/library";
const MIOPEN_DB: &str = "opt/rocm/share/miopen/db";

/// `EF_AMDGPU_MACH` of gfx1036 (targets.toml).
const GFX1036: u32 = 0x045;
/// V4 xnack field value 1: "any" (the object runs with xnack on or off).
const XNACK_ANY: u32 = 0x100;

/// The hang warning an override across ISAs targets.toml does not call compatible must carry.
const HANG_WARNING: &str = "HSA_OVERRIDE_GFX_VERSION=11.0.0 runs gfx1100 code on a gfx1151: targets.toml does not record these ISAs as compatible; kernels may fault, compute wrong results or hang the GPU";

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// Runs `gfxscan check --quiet ARGS...` with every `HSA_*` variable of the test process removed
/// from the child's environment and `env` set instead; fails on a hang, a signal or a panic.
fn check(args: &[OsString], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.arg("check").arg("--quiet").args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("HSA_") {
            cmd.env_remove(&k);
        }
    }
    // Named explicitly too, in case the test process holds them under a non-UTF-8 name.
    for k in ["HSA_OVERRIDE_GFX_VERSION", "HSA_XNACK"] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

/// Arguments: the scan root, then `extra`.
fn args(tree: &Tree, extra: &[&str]) -> Vec<OsString> {
    let mut all = vec![tree.root().as_os_str().to_os_string()];
    all.extend(extra.iter().map(OsString::from));
    all
}

/// `--sysfs-root DIR` of a fake KFD topology.
fn sysfs(kfd: &Tree) -> Vec<OsString> {
    vec!["--sysfs-root".into(), kfd.root().as_os_str().to_os_string()]
}

/// `gfxscan check ROOT --json EXTRA...` with `env`, expecting exit `code`; the parsed report.
#[track_caller]
fn check_json(tree: &Tree, extra: &[OsString], env: &[(&str, &str)], code: i32) -> Value {
    let mut all = args(tree, &["--json"]);
    all.extend(extra.iter().cloned());
    let run = check(&all, env);
    run.expect_code(code);
    let report = run.json();
    assert_eq!(report["schema_version"], 2, "{report:#}");
    report
}

/// `--gpu` flags for each target ID.
fn gpus_args(ids: &[&str]) -> Vec<OsString> {
    ids.iter().flat_map(|g| [OsString::from("--gpu"), OsString::from(g)]).collect()
}

/// A fake sysfs tree whose KFD topology has one node per `gfx_target_version` (0 = CPU).
fn kfd(versions: &[u32]) -> Tree {
    let t = Tree::new();
    for (n, &v) in versions.iter().enumerate() {
        let props = if v == 0 {
            "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\ngfx_target_version 0\ncapability 0\n"
                .to_string()
        } else {
            // As the kernel writes a dGPU's node: PCI bus 0x03 + n (device 0, function 0),
            // domain 0, and a unique ID.
            let location = (0x03 + n) << 8;
            let unique = 0x5ac0_0000_0000_0000_u64 + n as u64;
            format!(
                "cpu_cores_count 0\nsimd_count 96\nmem_banks_count 1\ngfx_target_version {v}\ncapability 0\n\
                 location_id {location}\ndomain 0\nunique_id {unique}\n"
            )
        };
        t.file(format!("sys/class/kfd/kfd/topology/nodes/{n}/properties"), props.as_bytes());
    }
    t
}

/// The GPU reports of a check report, install after install.
#[track_caller]
fn gpus(report: &Value) -> Vec<&Value> {
    let installs = report["installs"].as_array().expect("installs is an array");
    installs.iter().flat_map(|i| i["gpus"].as_array().expect("gpus is an array")).collect()
}

/// The one GPU report of a single-GPU check.
#[track_caller]
fn only_gpu(report: &Value) -> &Value {
    let g = gpus(report);
    assert_eq!(g.len(), 1, "expected one GPU: {report:#}");
    g[0]
}

/// The verdict of `library` (its displayed path, relative to the tree) in a GPU report.
#[track_caller]
fn verdict<'a>(gpu: &'a Value, tree: &Tree, library: &str) -> &'a Value {
    let want = format!("{}/{library}", tree.root_str());
    let verdicts = gpu["verdicts"].as_array().expect("verdicts is an array");
    verdicts.iter().find(|v| v["library"] == want.as_str()).unwrap_or_else(|| {
        let have: Vec<&Value> = verdicts.iter().map(|v| &v["library"]).collect();
        panic!("no verdict for {want:?}; have {have:?}")
    })
}

/// A verdict without its free-text detail, its gap's consequence and its component, to
/// compare with `json!`.
fn fields(v: &Value) -> Value {
    let mut v = v.clone();
    let o = v.as_object_mut().expect("verdict is an object");
    for k in ["detail", "consequence", "component"] {
        o.remove(k);
    }
    v
}

/// The verdict's detail line.
fn detail(v: &Value) -> &str {
    v["detail"].as_str().expect("detail is a string")
}

/// Every `library` → `status` of a GPU report.
fn statuses(gpu: &Value) -> Vec<(String, String)> {
    gpu["verdicts"]
        .as_array()
        .expect("verdicts is an array")
        .iter()
        .map(|v| {
            (v["library"].as_str().unwrap_or("").to_string(), v["status"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

/// `{processor, target_id}` of a device target.
fn target(processor: &str, target_id: &str) -> Value {
    json!({"processor": processor, "target_id": target_id})
}

/// The strings of a JSON array field.
#[track_caller]
fn strings(v: &Value) -> Vec<String> {
    v.as_array().expect("an array").iter().map(|s| s.as_str().expect("a string").to_string()).collect()
}

/// A rocBLAS library folder holding only gfx1030: lazy index and code file.
fn rocblas_gfx1030(tree: &Tree) {
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat"), &tensile_index(&["gfx1030"], 3));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_gfx1030.co"), &co(GFX1030, 0, 4));
}

// ---------------------------------------------------------------------------------------------
// 1. gfx1031 against a gfx1030-only rocBLAS: MISSING, and the 10.3.0 override as a hint
// ---------------------------------------------------------------------------------------------

#[track_caller]
fn assert_gfx1031_rocblas_missing(tree: &Tree, gpu: &Value) {
    let v = verdict(gpu, tree, &format!("{ROCBLAS_LIB}/"));
    assert_eq!(
        fields(v),
        json!({"library": format!("{}/{ROCBLAS_LIB}/", tree.root_str()), "kind": "tensile",
               "status": "missing", "cost": "fails", "loads": null, "available": ["gfx1030"]})
    );
    assert!(detail(v).contains("no Tensile index serves gfx1031"), "{v:#}");
    assert_eq!(gpu["device"]["native"], target("gfx1031", "gfx1031"));
    assert_eq!(gpu["device"]["effective"], target("gfx1031", "gfx1031"));
    assert_eq!(gpu["device"]["override"], Value::Null);
    let hints = strings(&gpu["hints"]);
    assert_eq!(hints.len(), 1, "{hints:#?}");
    assert!(hints[0].starts_with("HSA_OVERRIDE_GFX_VERSION=10.3.0 "), "{hints:#?}");
    assert!(hints[0].contains("gfx1031 as gfx1030"), "{hints:#?}");
    assert!(hints[0].contains("HSA_OVERRIDE_GFX_VERSION_<node>"), "{hints:#?}");
    assert_eq!(strings(&gpu["warnings"]), Vec::<String>::new());
}

/// A gfx1031 (KFD node, `gfx_target_version 100301`) with a rocBLAS library that only holds
/// gfx1030 (lazy index and code): rocBLAS is MISSING, exit 1, and the hint names
/// `HSA_OVERRIDE_GFX_VERSION=10.3.0` (targets.toml: gfx1031 is ISA-compatible with gfx1030).
#[test]
fn gfx1031_without_rocblas_code_is_missing_with_override_hint() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    let sys = kfd(&[0, 100301]);

    let report = check_json(&tree, &sysfs(&sys), &[], 1);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["node"], 1);
    assert_eq!(gpu["device"]["source"], "kfd");
    assert_gfx1031_rocblas_missing(&tree, gpu);

    let report = check_json(&tree, &gpus_args(&["gfx1031"]), &[], 1);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["node"], Value::Null);
    assert_eq!(gpu["device"]["source"], "--gpu");
    assert_gfx1031_rocblas_missing(&tree, gpu);

    // The table says the same.
    let mut a = args(&tree, &["--gpu", "gfx1031"]);
    a.extend(sysfs(&sys));
    let run = check(&a, &[]);
    run.expect_code(1);
    let row = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("lib/rocblas/library"))
        .expect("a rocBLAS row");
    assert!(row.contains("MISSING"), "{}", run.stdout);
    assert!(run.stdout.contains("hint: HSA_OVERRIDE_GFX_VERSION=10.3.0"), "{}", run.stdout);
    assert!(run.stdout.contains("MISSING: code for gfx1031 in "), "{}", run.stdout);
    // The answer first (issue 23): the hint comes before the table, and the last line says so.
    let at = |s: &str| run.stdout.find(s).unwrap_or(usize::MAX);
    assert!(at("hint: HSA_OVERRIDE") < at("LIBRARY"), "{}", run.stdout);
    assert!(at("an override would help") > at("LIBRARY"), "{}", run.stdout);

    // The same install checked as the gfx1030 it holds is fine, and needs no hint.
    let report = check_json(&tree, &gpus_args(&["gfx1030"]), &[], 0);
    let gpu = only_gpu(&report);
    let v = verdict(gpu, &tree, &format!("{ROCBLAS_LIB}/"));
    assert_eq!(v["status"], "ok", "{v:#}");
    assert_eq!(v["loads"], format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat"));
    assert_eq!(gpu["hints"], json!([]));
}

// ---------------------------------------------------------------------------------------------
// 2. xnack: a stated xnack- entry does not load on xnack+, an xnack-any entry does
// ---------------------------------------------------------------------------------------------

/// `--gpu gfx90a:xnack+` with a host library whose only device entry is `gfx90a:xnack-`:
/// MISSING, exit 1; with a `gfx90a` (xnack any) entry instead: OK, exit 0, loads that entry.
#[test]
fn xnack_plus_needs_xnack_plus_or_any_code() {
    let tree = Tree::new();
    let off = co(GFX90A, XNACK_OFF, 2);
    tree.file("lib/libfoo.so", &host_lib(&[("gfx90a:xnack-", &off)]));
    let lib = format!("{}/lib/libfoo.so", tree.root_str());

    let report = check_json(&tree, &gpus_args(&["gfx90a:xnack+"]), &[], 1);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["native"], target("gfx90a", "gfx90a:xnack+"));
    assert_eq!(gpu["device"]["effective"], target("gfx90a", "gfx90a:xnack+"));
    let v = verdict(gpu, &tree, "lib/libfoo.so");
    assert_eq!(
        fields(v),
        json!({"library": lib, "kind": "host-library", "status": "missing", "cost": "fails", "loads": null,
               "available": ["gfx90a:xnack-"]})
    );
    assert_eq!(detail(v), "no code object for gfx90a:xnack+");
    assert_eq!(gpu["hints"], json!([]));
    assert_eq!(gpu["warnings"], json!([]));

    // The same library served xnack-: it loads.
    let report = check_json(&tree, &gpus_args(&["gfx90a:xnack-"]), &[], 0);
    assert_eq!(verdict(only_gpu(&report), &tree, "lib/libfoo.so")["loads"], hip("gfx90a:xnack-"));

    // xnack any (V4 field value 1): one object for both modes.
    let any = co(GFX90A, XNACK_ANY, 2);
    tree.file("lib/libfoo.so", &host_lib(&[("gfx90a", &any)]));
    let report = check_json(&tree, &gpus_args(&["gfx90a:xnack+"]), &[], 0);
    let gpu = only_gpu(&report);
    assert_eq!(
        fields(verdict(gpu, &tree, "lib/libfoo.so")),
        json!({"library": lib, "kind": "host-library", "status": "ok",
               "loads": "hipv4-amdgcn-amd-amdhsa--gfx90a", "available": []})
    );
}

/// A KFD gfx90a states SRAM ECC through its capability bit and XNACK through `HSA_XNACK`: with
/// `HSA_XNACK=1` and SRAM ECC on, an `xnack-` entry does not load and a `sramecc+:xnack+` one
/// does; without `HSA_XNACK` the mode is unknown and either xnack entry is taken.
#[test]
fn kfd_gpu_features_come_from_capability_and_hsa_xnack() {
    let tree = Tree::new();
    let off = co(GFX90A, SRAMECC_ON | XNACK_OFF, 2);
    tree.file("lib/libfoo.so", &host_lib(&[("gfx90a:sramecc+:xnack-", &off)]));
    let sys = Tree::new();
    sys.file(
        "sys/class/kfd/kfd/topology/nodes/0/properties",
        b"cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n",
    );
    let sram = 0x0400_0000u64;
    sys.file(
        "sys/class/kfd/kfd/topology/nodes/1/properties",
        format!("cpu_cores_count 0\nsimd_count 416\ngfx_target_version 90010\ncapability {sram}\n")
            .as_bytes(),
    );

    let report = check_json(&tree, &sysfs(&sys), &[("HSA_XNACK", "1")], 1);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["native"], target("gfx90a", "gfx90a:sramecc+:xnack+"));
    assert_eq!(
        fields(verdict(gpu, &tree, "lib/libfoo.so")),
        json!({"library": format!("{}/lib/libfoo.so", tree.root_str()), "kind": "host-library",
               "status": "missing", "cost": "fails", "loads": null, "available": ["gfx90a:sramecc+:xnack-"]})
    );

    let report = check_json(&tree, &sysfs(&sys), &[], 0);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["native"], target("gfx90a", "gfx90a:sramecc+"));
    assert_eq!(verdict(gpu, &tree, "lib/libfoo.so")["loads"], hip("gfx90a:sramecc+:xnack-"));

    let on = co(GFX90A, SRAMECC_ON | XNACK_ON, 2);
    tree.file(
        "lib/libfoo.so",
        &host_lib(&[("gfx90a:sramecc+:xnack-", &off), ("gfx90a:sramecc+:xnack+", &on)]),
    );
    let report = check_json(&tree, &sysfs(&sys), &[("HSA_XNACK", "1")], 0);
    assert_eq!(verdict(only_gpu(&report), &tree, "lib/libfoo.so")["loads"], hip("gfx90a:sramecc+:xnack+"));
}

// ---------------------------------------------------------------------------------------------
// 3. Generic targets
// ---------------------------------------------------------------------------------------------

/// A gfx1100 against a bundle holding only a `gfx11-generic` object (V6, generic version 1):
/// OK through the generic entry. A gfx1030 is not in gfx11's family (MISSING), and a
/// gfx11-generic object without a generic version is not loaded for gfx1100 (MISSING).
#[test]
fn gfx1100_loads_gfx11_generic_code() {
    let tree = Tree::new();
    let generic = code_object(&CodeObjectSpec::new(4, GFX11_GENERIC | GENERIC_V1, &["k0", "k1"]));
    let generic_id = hip("gfx11-generic");
    tree.file("lib/kernels.hsaco", &bundle(&[(HOST, &[]), (&generic_id, &generic)], 4096));
    let lib = format!("{}/lib/kernels.hsaco", tree.root_str());

    let report = check_json(&tree, &gpus_args(&["gfx1100"]), &[], 0);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["effective"], target("gfx1100", "gfx1100"));
    assert_eq!(
        fields(verdict(gpu, &tree, "lib/kernels.hsaco")),
        json!({"library": lib, "kind": "bundle", "status": "ok",
               "loads": "hipv4-amdgcn-amd-amdhsa--gfx11-generic", "available": [],
               "via_generic": "gfx11-generic"})
    );

    // Through a KFD node as well.
    let sys = kfd(&[0, 110000]);
    let report = check_json(&tree, &sysfs(&sys), &[], 0);
    assert_eq!(verdict(only_gpu(&report), &tree, "lib/kernels.hsaco")["loads"], generic_id.as_str());

    let report = check_json(&tree, &gpus_args(&["gfx1030"]), &[], 1);
    let v = verdict(only_gpu(&report), &tree, "lib/kernels.hsaco");
    assert_eq!(
        fields(v),
        json!({"library": lib, "kind": "bundle", "status": "missing", "cost": "fails", "loads": null,
               "available": ["gfx11-generic"]})
    );

    // Generic version 0: the runtime does not take it for gfx1100.
    let unversioned = code_object(&CodeObjectSpec::new(4, GFX11_GENERIC, &["k0"]));
    tree.file("lib/kernels.hsaco", &bundle(&[(HOST, &[]), (&generic_id, &unversioned)], 4096));
    let report = check_json(&tree, &gpus_args(&["gfx1100"]), &[], 1);
    assert_eq!(verdict(only_gpu(&report), &tree, "lib/kernels.hsaco")["status"], "missing");
}

// ---------------------------------------------------------------------------------------------
// 4. Two GPUs from KFD
// ---------------------------------------------------------------------------------------------

/// KFD: node 0 a CPU, node 1 a gfx1100 dGPU, node 2 a gfx1036 iGPU. A gfx1100-only library:
/// two GPU reports (the CPU skipped), gfx1100 all OK, gfx1036 MISSING, exit 1 because of the
/// iGPU alone. A library with both: exit 0.
#[test]
fn two_gpus_from_kfd_each_judged_on_its_own() {
    let tree = Tree::new();
    let c1100 = co(GFX1100, 0, 3);
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &c1100)]));
    let lib = format!("{}/lib/libfoo.so", tree.root_str());
    let sys = kfd(&[0, 110000, 100306]);

    let report = check_json(&tree, &sysfs(&sys), &[], 1);
    let g = gpus(&report);
    assert_eq!(g.len(), 2, "{report:#}");
    assert_eq!(
        g[0]["device"],
        json!({"index": 0, "node": 1, "source": "kfd", "native": target("gfx1100", "gfx1100"), "override": null,
               "effective": target("gfx1100", "gfx1100"), "pci_address": "0000:04:00.0",
               "uuid": "GPU-5ac0000000000001"})
    );
    assert_eq!(
        g[1]["device"],
        json!({"index": 1, "node": 2, "source": "kfd", "native": target("gfx1036", "gfx1036"), "override": null,
               "effective": target("gfx1036", "gfx1036"), "pci_address": "0000:05:00.0",
               "uuid": "GPU-5ac0000000000002"})
    );
    assert_eq!(statuses(g[0]), vec![(lib.clone(), "ok".to_string())]);
    assert_eq!(verdict(g[0], &tree, "lib/libfoo.so")["loads"], hip("gfx1100"));
    assert_eq!(
        fields(verdict(g[1], &tree, "lib/libfoo.so")),
        json!({"library": lib, "kind": "host-library", "status": "missing", "cost": "fails", "loads": null,
               "available": ["gfx1100"]})
    );
    // gfx1030 code would not help the gfx1036 either: no hint.
    assert_eq!(g[1]["hints"], json!([]));

    let run = check(&args(&tree, &[]).into_iter().chain(sysfs(&sys)).collect::<Vec<_>>(), &[]);
    run.expect_code(1);
    assert!(run.stdout.contains("GPU 0 · KFD node 1 · gfx1100 · Radeon RX 7900 XTX · OK"), "{}", run.stdout);
    assert!(run.stdout.contains("GPU 1 · KFD node 2 · gfx1036 · MISSING"), "{}", run.stdout);
    assert!(
        run.stdout.contains("2 GPUs checked in 1 install · MISSING: code for gfx1036 in "),
        "{}",
        run.stdout
    );

    let c1036 = co(GFX1036, 0, 3);
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &c1100), ("gfx1036", &c1036)]));
    let report = check_json(&tree, &sysfs(&sys), &[], 0);
    let g = gpus(&report);
    assert_eq!(g.len(), 2, "{report:#}");
    assert_eq!(verdict(g[0], &tree, "lib/libfoo.so")["loads"], hip("gfx1100"));
    assert_eq!(verdict(g[1], &tree, "lib/libfoo.so")["loads"], hip("gfx1036"));
}

// ---------------------------------------------------------------------------------------------
// 5. HSA_OVERRIDE_GFX_VERSION
// ---------------------------------------------------------------------------------------------

#[track_caller]
fn assert_gfx1151_as_gfx1100(tree: &Tree, gpu: &Value, variable: &str) {
    assert_eq!(gpu["device"]["native"], target("gfx1151", "gfx1151"));
    assert_eq!(gpu["device"]["effective"], target("gfx1100", "gfx1100"));
    assert_eq!(gpu["device"]["override"], json!({"variable": variable, "value": "11.0.0"}));
    let v = verdict(gpu, tree, "lib/libfoo.so");
    assert_eq!(
        fields(v),
        json!({"library": format!("{}/lib/libfoo.so", tree.root_str()), "kind": "host-library",
               "status": "ok", "loads": hip("gfx1100"), "available": []})
    );
    let want = HANG_WARNING.replacen("HSA_OVERRIDE_GFX_VERSION", variable, 1);
    assert_eq!(strings(&gpu["warnings"]), vec![want]);
    assert_eq!(gpu["hints"], json!([]));
}

/// A gfx1151 (`--gpu`, and KFD node 110501) under `HSA_OVERRIDE_GFX_VERSION=11.0.0`: native
/// gfx1151, effective gfx1100, the override reported, verdicts for gfx1100 (a gfx1100-only
/// library is OK), and the "may fault … hang the GPU" warning, as targets.toml does not record
/// gfx1151 as ISA-compatible with gfx1100.
#[test]
fn override_checks_the_effective_target_and_warns_across_isas() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 2))]));
    let env = [("HSA_OVERRIDE_GFX_VERSION", "11.0.0")];

    let report = check_json(&tree, &gpus_args(&["gfx1151"]), &env, 0);
    assert_gfx1151_as_gfx1100(&tree, only_gpu(&report), "HSA_OVERRIDE_GFX_VERSION");

    let sys = kfd(&[0, 110501]);
    let report = check_json(&tree, &sysfs(&sys), &env, 0);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["node"], 1);
    assert_gfx1151_as_gfx1100(&tree, gpu, "HSA_OVERRIDE_GFX_VERSION");

    // Without the override the gfx1151 has nothing, and no hint: no ISA-compatible target.
    let report = check_json(&tree, &gpus_args(&["gfx1151"]), &[], 1);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["override"], Value::Null);
    assert_eq!(verdict(gpu, &tree, "lib/libfoo.so")["status"], "missing");
    assert_eq!((&gpu["hints"], &gpu["warnings"]), (&json!([]), &json!([])));

    // The table shows what it is checked as, and the warning.
    let mut a = args(&tree, &["--gpu", "gfx1151"]);
    a.extend(sysfs(&sys));
    let run = check(&a, &env);
    run.expect_code(0);
    assert!(
        run.stdout.contains("gfx1151 → checked as gfx1100 (HSA_OVERRIDE_GFX_VERSION=11.0.0) · Radeon 8060S"),
        "{}",
        run.stdout
    );
    // The warning is wrapped to the width: compare it with the line breaks undone.
    let joined = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(joined.contains(&format!("warning: {HANG_WARNING}")), "{}", run.stdout);
}

/// An override between targets targets.toml records as ISA-compatible (gfx1031 as gfx1030)
/// carries no warning.
#[test]
fn override_within_an_isa_does_not_warn() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    let report = check_json(&tree, &gpus_args(&["gfx1031"]), &[("HSA_OVERRIDE_GFX_VERSION", "10.3.0")], 0);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["native"], target("gfx1031", "gfx1031"));
    assert_eq!(gpu["device"]["effective"], target("gfx1030", "gfx1030"));
    assert_eq!(verdict(gpu, &tree, &format!("{ROCBLAS_LIB}/"))["status"], "ok");
    assert_eq!((&gpu["hints"], &gpu["warnings"]), (&json!([]), &json!([])));
}

/// `HSA_OVERRIDE_GFX_VERSION_<node>` wins over the global variable for its KFD node only; a
/// `--gpu` has no node, so only the global variable applies to it.
#[test]
fn per_node_override_wins_over_the_global_one() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 2))]));
    let sys = kfd(&[0, 110501, 110501]);
    let env = [("HSA_OVERRIDE_GFX_VERSION", "11.0.1"), ("HSA_OVERRIDE_GFX_VERSION_1", "11.0.0")];

    let report = check_json(&tree, &sysfs(&sys), &env, 1);
    let g = gpus(&report);
    assert_eq!(g.len(), 2, "{report:#}");
    assert_eq!(g[0]["device"]["node"], 1);
    assert_gfx1151_as_gfx1100(&tree, g[0], "HSA_OVERRIDE_GFX_VERSION_1");
    assert_eq!(g[1]["device"]["node"], 2);
    assert_eq!(g[1]["device"]["effective"], target("gfx1101", "gfx1101"));
    assert_eq!(
        g[1]["device"]["override"],
        json!({"variable": "HSA_OVERRIDE_GFX_VERSION", "value": "11.0.1"})
    );
    assert_eq!(verdict(g[1], &tree, "lib/libfoo.so")["status"], "missing");

    // `--gpu`: the per-node variable names a KFD node, which a `--gpu` is not (issue 12 point
    // 9; it was taken as the flag's position): only the global variable applies.
    let env = [("HSA_OVERRIDE_GFX_VERSION", "11.0.1"), ("HSA_OVERRIDE_GFX_VERSION_0", "11.0.0")];
    let report = check_json(&tree, &gpus_args(&["gfx1151"]), &env, 1);
    let gpu = only_gpu(&report);
    assert_eq!(gpu["device"]["effective"], target("gfx1101", "gfx1101"));
    assert_eq!(gpu["device"]["override"], json!({"variable": "HSA_OVERRIDE_GFX_VERSION", "value": "11.0.1"}));
}

/// An override libhsakmt would reject (`11.0`, `gfx1100`, `64.0.0`) is an error (exit 2) that
/// says why, for `--gpu` and for KFD GPUs, global or per node.
#[test]
fn invalid_override_is_an_error() {
    let tree = Tree::new();
    tree.file("lib/libfoo.so", &host_lib(&[("gfx1100", &co(GFX1100, 0, 2))]));
    let sys = kfd(&[0, 110501]);
    let cases = [
        ("11.0", "\"11.0\" is not major.minor.stepping (three decimal numbers, nothing after)"),
        ("gfx1100", "\"gfx1100\" is not major.minor.stepping (three decimal numbers, nothing after)"),
        ("11.0.0 ", "\"11.0.0 \" is not major.minor.stepping (three decimal numbers, nothing after)"),
        ("64.0.0", "\"64.0.0\": out of range (major <= 63, minor and stepping <= 255)"),
    ];
    for (value, why) in cases {
        for (variable, devices) in [
            ("HSA_OVERRIDE_GFX_VERSION", gpus_args(&["gfx1151"])),
            ("HSA_OVERRIDE_GFX_VERSION", sysfs(&sys)),
            ("HSA_OVERRIDE_GFX_VERSION_1", sysfs(&sys)),
        ] {
            let mut a = args(&tree, &["--json"]);
            a.extend(devices);
            let run = check(&a, &[(variable, value)]);
            run.expect_code(2);
            assert_eq!(run.stdout, "", "{variable}={value}");
            assert!(run.stderr.contains(&format!("{variable}: {why}")), "{variable}={value}: {}", run.stderr);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 6. A lazy index link named for one target that leads to another's index
// ---------------------------------------------------------------------------------------------

/// `TensileLibrary_lazy_gfx1010.dat -> TensileLibrary_lazy_gfx1030.dat` next to gfx1030 code:
/// for gfx1010 rocBLAS is MISSING and the detail says the link leads to an index for another
/// target; for gfx1030 it is OK.
#[test]
fn index_link_named_for_another_target_does_not_serve_it() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    tree.symlink("TensileLibrary_lazy_gfx1030.dat", format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat"));
    let lib = format!("{}/{ROCBLAS_LIB}/", tree.root_str());

    let report = check_json(&tree, &gpus_args(&["gfx1010"]), &[], 1);
    let v = verdict(only_gpu(&report), &tree, &format!("{ROCBLAS_LIB}/"));
    assert_eq!(
        fields(v),
        json!({"library": lib, "kind": "tensile", "status": "missing", "cost": "fails", "loads": null,
               "available": ["gfx1030"]})
    );
    assert!(detail(v).starts_with("no Tensile index serves gfx1010"), "{v:#}");
    assert!(
        detail(v).contains(&format!(
            "{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat is a link to TensileLibrary_lazy_gfx1030.dat, which serves another target"
        )),
        "{v:#}"
    );

    let report = check_json(&tree, &gpus_args(&["gfx1030"]), &[], 0);
    assert_eq!(
        fields(verdict(only_gpu(&report), &tree, &format!("{ROCBLAS_LIB}/"))),
        json!({"library": lib, "kind": "tensile", "status": "ok",
               "loads": format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat"), "available": []})
    );
}

/// The same link followed (`--follow-links`): the gfx1010 index is then a file whose content
/// serves gfx1030, still MISSING for gfx1010.
#[test]
fn followed_index_link_named_for_another_target_does_not_serve_it() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    tree.symlink("TensileLibrary_lazy_gfx1030.dat", format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat"));
    let mut extra = gpus_args(&["gfx1010"]);
    extra.push("--follow-links".into());
    let report = check_json(&tree, &extra, &[], 1);
    let v = verdict(only_gpu(&report), &tree, &format!("{ROCBLAS_LIB}/"));
    assert_eq!(v["status"], "missing", "{v:#}");
    assert_eq!(v["loads"], Value::Null, "{v:#}");
}

// ---------------------------------------------------------------------------------------------
// 7. The Ollama layout: index names without code never make a target OK
// ---------------------------------------------------------------------------------------------

/// Ollama's bundled rocBLAS: lazy indexes named (and filled) for gfx1030, gfx1100 and gfx1151,
/// code files for gfx1030 and gfx1100 only, and `libggml-hip.so` with gfx1030 and gfx1100.
/// For each target, the targets gfxscan calls OK for every library must be among those with
/// real code objects; gfx1151's rocBLAS is MISSING (an index without code).
#[test]
fn ollama_layout_ok_only_where_code_exists() {
    let tree = Tree::new();
    for t in ["gfx1030", "gfx1100", "gfx1151"] {
        tree.file(format!("{OLLAMA_ROCBLAS_LIB}/TensileLibrary_lazy_{t}.dat"), &tensile_index(&[t], 3));
    }
    tree.file(format!("{OLLAMA_ROCBLAS_LIB}/TensileLibrary_gfx1030.co"), &co(GFX1030, 0, 4));
    tree.file(format!("{OLLAMA_ROCBLAS_LIB}/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 4));
    let (c1030, c1100) = (co(GFX1030, 0, 5), co(GFX1100, 0, 5));
    tree.file("usr/lib/ollama/rocm/libggml-hip.so", &host_lib(&[("gfx1030", &c1030), ("gfx1100", &c1100)]));

    // The targets real code objects exist for, from the scanner's own inventory.
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let with_code: BTreeSet<String> = snap["files"]
        .as_array()
        .expect("files")
        .iter()
        .flat_map(|f| f["code_objects"].as_array().cloned().unwrap_or_default())
        .map(|c| c["processor"].as_str().expect("processor").to_string())
        .collect();
    assert_eq!(with_code, BTreeSet::from(["gfx1030".to_string(), "gfx1100".to_string()]));

    let rocblas = format!("{OLLAMA_ROCBLAS_LIB}/");
    let ggml = "usr/lib/ollama/rocm/libggml-hip.so";
    let mut all_ok = BTreeSet::new();
    for (t, code) in [("gfx1030", 0), ("gfx1100", 0), ("gfx1151", 1)] {
        let report = check_json(&tree, &gpus_args(&[t]), &[], code);
        let gpu = only_gpu(&report);
        assert_eq!(statuses(gpu).len(), 2, "{gpu:#}");
        if statuses(gpu).iter().all(|(_, s)| s == "ok") {
            all_ok.insert(t.to_string());
        }
        if t != "gfx1151" {
            assert_eq!(
                verdict(gpu, &tree, &rocblas)["loads"],
                format!("{OLLAMA_ROCBLAS_LIB}/TensileLibrary_lazy_{t}.dat")
            );
            assert_eq!(verdict(gpu, &tree, ggml)["loads"], hip(t));
        }
    }
    assert!(all_ok.is_subset(&with_code), "OK for {all_ok:?}, code only for {with_code:?}");
    assert_eq!(all_ok, with_code);

    // gfx1151: the index names it, no code file holds it.
    let report = check_json(&tree, &gpus_args(&["gfx1151"]), &[], 1);
    let gpu = only_gpu(&report);
    let v = verdict(gpu, &tree, &rocblas);
    assert_eq!(
        fields(v),
        json!({"library": format!("{}/{rocblas}", tree.root_str()), "kind": "tensile",
               "status": "missing", "cost": "fails",
               "loads": format!("{OLLAMA_ROCBLAS_LIB}/TensileLibrary_lazy_gfx1151.dat"),
               "available": ["gfx1030", "gfx1100", "gfx1151"]})
    );
    assert_eq!(
        detail(v),
        format!("{OLLAMA_ROCBLAS_LIB}/TensileLibrary_lazy_gfx1151.dat names gfx1151, but no code-object file in the library holds code for gfx1151")
    );
    assert_eq!(
        fields(verdict(gpu, &tree, ggml)),
        json!({"library": format!("{}/{ggml}", tree.root_str()), "kind": "host-library",
               "status": "missing", "cost": "fails", "loads": null, "available": ["gfx1030", "gfx1100"]})
    );

    // All three at once: the same verdicts, one report per GPU.
    let report = check_json(&tree, &gpus_args(&["gfx1030", "gfx1100", "gfx1151"]), &[], 1);
    let g = gpus(&report);
    let ok: Vec<bool> = g.iter().map(|gpu| statuses(gpu).iter().all(|(_, s)| s == "ok")).collect();
    assert_eq!(ok, [true, true, false]);
}

// ---------------------------------------------------------------------------------------------
// 8. MIOpen, errors, Markdown
// ---------------------------------------------------------------------------------------------

/// A MIOpen text database for gfx1030 only: OK for gfx1030, WARN (not MISSING, exit 0) for
/// gfx1100. A host library with code for both is there too: MIOpen's databases alone are no
/// library with device code, and would be nothing to check.
#[test]
fn miopen_database_missing_is_only_a_warning() {
    let tree = Tree::new();
    tree.file(
        "opt/rocm/lib/libMIOpen.so.1",
        &host_lib(&[("gfx1030", &co(GFX1030, 0, 1)), ("gfx1100", &co(GFX1100, 0, 1))]),
    );
    tree.file(
        format!("{MIOPEN_DB}/gfx1030_36.db.txt"),
        b"3-32-32-5x5-0=ConvOclDirectFwd:0,8,1,16\n3-32-32-5x5-1=ConvOclDirectFwd:1,8,1,16\n3-32-32-5x5-2=ConvOclDirectFwd:2,8,1,16\n",
    );
    let lib = format!("{}/{MIOPEN_DB}/", tree.root_str());

    let report = check_json(&tree, &gpus_args(&["gfx1030"]), &[], 0);
    let v = verdict(only_gpu(&report), &tree, &format!("{MIOPEN_DB}/"));
    assert_eq!(
        fields(v),
        json!({"library": lib, "kind": "miopen", "status": "ok", "loads": null, "available": []})
    );
    assert_eq!(detail(v), "gfx1030_36.db.txt (3 records)");

    let report = check_json(&tree, &gpus_args(&["gfx1100"]), &[], 0);
    let v = verdict(only_gpu(&report), &tree, &format!("{MIOPEN_DB}/"));
    assert_eq!(
        fields(v),
        json!({"library": lib, "kind": "miopen", "status": "warn", "cost": "slower", "loads": null,
               "available": ["gfx1030"]})
    );
    assert!(detail(v).starts_with("no MIOpen database for gfx1100"), "{v:#}");

    let run = check(&args(&tree, &["--gpu", "gfx1100"]), &[]);
    run.expect_code(0);
    assert!(run.stdout.contains("GPU 0 · --gpu · gfx1100 · Radeon RX 7900 XTX · WARN"), "{}", run.stdout);
    // Issue 33: the last line never says a plain OK below a WARN.
    let last = run
        .stdout
        .rsplit_once("1 GPU checked")
        .map(|(_, l)| l.split_whitespace().collect::<Vec<_>>().join(" "));
    let last = last.unwrap_or_default();
    assert!(last.contains("OK with WARN") && last.contains("1 library WARN"), "{}", run.stdout);
    let clean = check(&args(&tree, &["--gpu", "gfx1030"]), &[]);
    clean.expect_code(0);
    assert!(clean.stdout.trim_end().ends_with("· OK: every required piece present"), "{}", clean.stdout);
}

/// A KFD topology with only a CPU node: exit 2, and the message suggests `--gpu`.
#[test]
fn kfd_without_a_gpu_is_an_error_suggesting_gpu() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    let sys = kfd(&[0]);
    let mut a = args(&tree, &["--json"]);
    a.extend(sysfs(&sys));
    let run = check(&a, &[]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("no GPU in the KFD topology"), "{}", run.stderr);
    assert!(run.stderr.contains("--gpu"), "{}", run.stderr);
}

/// A `--sysfs-root` that does not exist: exit 2.
#[test]
fn missing_sysfs_root_is_an_error() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    let gone = tree.path("no-such-sysfs");
    let mut a = args(&tree, &["--json", "--sysfs-root"]);
    a.push(gone.as_os_str().to_os_string());
    let run = check(&a, &[]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(run.stderr.contains(&gone.display().to_string()), "{}", run.stderr);

    // A sysfs root without the KFD folder is the same error.
    let empty = Tree::new();
    let mut a = args(&tree, &["--json"]);
    a.extend(sysfs(&empty));
    check(&a, &[]).expect_code(2);
}

/// `--format markdown`: a heading per GPU and a pipe table of the verdicts.
#[test]
fn markdown_format_is_a_pipe_table() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    let run = check(&args(&tree, &["--format", "markdown", "--gpu", "gfx1031"]), &[]);
    run.expect_code(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines.contains(&"#### GPU 0 · --gpu · gfx1031 · Radeon RX 6700 XT · MISSING"), "{}", run.stdout);
    assert!(
        lines.iter().any(|l| l.starts_with("### Install ") && l.ends_with("/opt/rocm (rocm) · MISSING")),
        "{}",
        run.stdout
    );
    let table: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 3, "header, separator, one row:\n{}", run.stdout);
    let cells = |l: &str| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    assert_eq!(cells(table[0]), ["library", "status", "detail"], "{}", run.stdout);
    assert!(
        cells(table[1]).iter().all(|c| !c.is_empty() && c.chars().all(|ch| ch == '-' || ch == ':')),
        "{}",
        run.stdout
    );
    let row = cells(table[2]);
    // Named inside its install (`<root>/opt/rocm`), whose path heads the section.
    assert_eq!(row[0], "lib/rocblas/library/");
    assert!(run.stdout.contains(&format!("Install {}/opt/rocm", tree.root_str())), "{}", run.stdout);
    assert_eq!(row[1], "MISSING");
    assert!(row[2].contains("no Tensile index serves gfx1031"), "{}", run.stdout);
    assert!(lines.iter().any(|l| l.starts_with("- hint: HSA_OVERRIDE_GFX_VERSION=10.3.0")), "{}", run.stdout);
}

/// An unknown `--gpu gfx9999`: exit 2 naming it.
#[test]
fn unknown_gpu_is_an_error() {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    let run = check(&args(&tree, &["--json", "--gpu", "gfx9999"]), &[]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("unknown GPU target \"gfx9999\""), "{}", run.stderr);

    // A feature the processor lacks is refused as well.
    let run = check(&args(&tree, &["--json", "--gpu", "gfx1100:xnack+"]), &[]);
    run.expect_code(2);
    assert!(run.stderr.contains("gfx1100 has no \"xnack\" feature"), "{}", run.stderr);

    // Names as people type them: a product family ("RX 7900": the XTX, XT and GRE are all
    // gfx1100), full-width forms (NFKC), a family spanning targets is an error naming them.
    for (name, want) in
        [("RX 7900", "gfx1100"), ("\u{ff27}\u{ff26}\u{ff38}\u{ff11}\u{ff11}\u{ff10}\u{ff10}", "gfx1100")]
    {
        let run = check(&args(&tree, &["--json", "--gpu", name]), &[]);
        assert_eq!(
            run.json()["installs"][0]["gpus"][0]["device"]["effective"]["target_id"],
            want,
            "{name}: {}",
            run.stderr
        );
    }

    // A feature given twice contradicts itself (it was read as its last mention).
    let run = check(&args(&tree, &["--json", "--gpu", "gfx90a:xnack+:xnack-"]), &[]);
    run.expect_code(2);
    assert!(run.stderr.contains("xnack is given twice"), "{}", run.stderr);
}

/// Wheels downloaded into one folder are an install each, as pip would install them apart
/// (issue 23: a folder of 18 unrelated wheels was judged as one install), and libraries of the
/// same name in two wheels are told apart by the wheel they are shown under.
#[test]
fn each_wheel_in_a_folder_is_its_own_install() {
    use crate::archives::{zip_of, Entry};
    let tree = Tree::new();
    let member =
        |t: &str, mach| Entry::File("pkg/cuda/cub.hsaco".into(), hip_bundle(&[(t, &co(mach, 0, 1))]));
    tree.file("dl/a_rocm-1.0-py3-none-linux_x86_64.whl", &zip_of(&[member("gfx1030", GFX1030)], true));
    tree.file("dl/b_rocm-2.0-py3-none-linux_x86_64.whl", &zip_of(&[member("gfx1100", GFX1100)], true));
    let dl = tree.path("dl");
    let r = crate::util::gfxscan(["check", "-q", dl.to_str().unwrap_or(""), "--gpu", "gfx1030"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let installs: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("Install ")).collect();
    assert_eq!(installs.len(), 2, "{}", r.stdout);
    assert!(installs[0].ends_with("a_rocm-1.0-py3-none-linux_x86_64.whl (python) · OK"), "{}", r.stdout);
    assert!(installs[1].ends_with("b_rocm-2.0-py3-none-linux_x86_64.whl (python) · MISSING"), "{}", r.stdout);
    // Inside its install a library is named from the wheel's top: never `…!/pkg`.
    assert_eq!(r.stdout.matches("\n pkg/cuda/cub.hsaco ").count(), 2, "{}", r.stdout);
    let s = crate::util::gfxscan(["scan", "-q", dl.to_str().unwrap_or(""), "--by", "library"]);
    let rows: Vec<&str> =
        s.stdout.lines().filter(|l| l.trim_start().starts_with("pkg/cuda/cub.hsaco")).collect();
    assert_eq!(rows.len(), 2, "{}", s.stdout);
    assert!(s.stdout.contains("a_rocm-1.0-py3-none-linux_x86_64.whl\n"), "{}", s.stdout);
}

/// The check table fits the width without cutting a word in two (issue 23: `libhsa-runtim` /
/// `e64…`): a long library path loses leading folders (`…/`), and a detail wraps between words.
#[test]
fn check_table_cuts_paths_at_folders_and_wraps_between_words() {
    let tree = Tree::new();
    let deep =
        "usr/lib/x86_64-linux-gnu/a-rather-long-vendor-folder/another-level/libhsa-runtime64.so.1.15.0";
    tree.file(deep, &host_lib(&[("gfx1030", &co(GFX1030, 0, 1))]));
    for columns in ["80", "100", "60"] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        c.args(["check", "-q", "--gpu", "gfx1030,gfx1100"]).arg(tree.root()).env("COLUMNS", columns);
        let r = run(c);
        assert_eq!(r.code, 1, "{}", r.stderr);
        let width: usize = columns.parse().unwrap_or_default();
        for line in r.stdout.lines() {
            assert!(line.chars().count() <= width, "{columns} columns: {line:?}\n{}", r.stdout);
        }
        if width < 80 {
            // Narrower, something must give; no line passes the width still.
            continue;
        }
        // The file name is whole on its row; nothing of it spills onto the next line.
        let rows: Vec<&str> = r.stdout.lines().filter(|l| l.contains("libhsa-runtime64")).collect();
        assert_eq!(rows.len(), 2, "{}", r.stdout);
        assert!(
            rows.iter().all(|l| l.starts_with(" …/") && l.contains("/libhsa-runtime64.so.1.15.0 ")),
            "{}",
            r.stdout
        );
        // Every detail word is whole: the entry ID that loads is on one line.
        assert!(r.stdout.contains("hipv4-amdgcn-amd-amdhsa--gfx1030"), "{}", r.stdout);
    }
}

/// `check` reads compressed bundles to their tables and plain code objects to their ELF
/// headers (runtimes pick by entry ID, HIP 5.x by the ELF's target): its verdicts equal those
/// of a full scan on every container of the mixed fixture and on compressed bundles with
/// generic, feature-stating, pre-4.1 and non-AMD entries, for every GPU here.
#[test]
fn check_reading_tables_gives_a_full_scans_verdicts() {
    use crate::pipeline::verdicts_at;
    use gfxscan::testing::{ccob, Codec};
    let m = crate::fixtures::mixed();
    let generic = code_object(&CodeObjectSpec::new(4, GFX11_GENERIC | GENERIC_V1, &["k0", "k1"]));
    let gfx1010 = co(crate::fixtures::GFX1010, XNACK_ON, 3);
    let gfx90a = co(GFX90A, XNACK_OFF, 1);
    let entries = [
        (HOST.to_string(), Vec::new()),
        (hip("gfx11-generic"), generic),
        (hip("gfx1010:xnack+"), gfx1010),
        (hip("gfx90a:xnack-"), gfx90a.clone()),
        ("hip-amdgcn-amd-amdhsa-gfx906".to_string(), co(crate::fixtures::GFX906, 0, 1)),
        ("hipv4-spirv64-amd-amdhsa--amdgcnspirv".to_string(), b"\x03\x02\x23\x07spirv".to_vec()),
        // A processor the target table does not know: named by its ELF, as a full read does.
        (hip("gfx1999"), co(0x07e, 0, 1)),
    ];
    let refs: Vec<(&str, &[u8])> = entries.iter().map(|(i, d)| (i.as_str(), d.as_slice())).collect();
    for (version, codec) in [(1, Codec::Zstd), (2, Codec::Zlib), (3, Codec::Zstd)] {
        m.tree.file(format!("opt/rocm/lib/libmany{version}.co"), &ccob(version, codec, &bundle(&refs, 4096)));
    }
    // Broken entries a checked GPU would load: garbage in a CCOB, a code object cut after its
    // ELF header in a plain bundle, a zstd frame cut short inside a CCOB whose stored size
    // was made to match. Each is a problem for `check` as for `scan`.
    let garbage = [(HOST.to_string(), Vec::new()), (hip("gfx1100"), vec![0x5a; 4096])];
    let refs: Vec<(&str, &[u8])> = garbage.iter().map(|(i, d)| (i.as_str(), d.as_slice())).collect();
    m.tree.file("opt/rocm/lib/libgarbage.co", &ccob(3, Codec::Zstd, &bundle(&refs, 4096)));
    // gfx900 falls back to gfx9-generic: its generic entries are read when gfx900 is checked
    // (a broken one is a problem, a good one serves by its generic version) and taken from the
    // table otherwise. A plain bundle's entries are taken from its table as a CCOB's are.
    let gfx9_generic = code_object(&CodeObjectSpec::new(4, GFX9_GENERIC | GENERIC_V1, &["k"]));
    let nine = [
        (HOST.to_string(), Vec::new()),
        (hip("gfx9-generic"), gfx9_generic),
        (hip("gfx1030"), co(GFX1030, 0, 1)),
    ];
    let refs: Vec<(&str, &[u8])> = nine.iter().map(|(i, d)| (i.as_str(), d.as_slice())).collect();
    m.tree.file("opt/rocm/lib/libnine.co", &ccob(3, Codec::Zstd, &bundle(&refs, 4096)));
    m.tree.file("opt/rocm/lib/libnine_plain.co", &bundle(&refs, 4096));
    let broken = [(HOST.to_string(), Vec::new()), (hip("gfx9-generic"), vec![0x5a; 4096])];
    let refs: Vec<(&str, &[u8])> = broken.iter().map(|(i, d)| (i.as_str(), d.as_slice())).collect();
    m.tree.file("opt/rocm/lib/libnine_broken.co", &ccob(3, Codec::Zstd, &bundle(&refs, 4096)));
    let whole = co(GFX1100, 0, 2);
    m.tree.file("opt/rocm/lib/libcut.so", &host_lib(&[("gfx1100", &whole[..64])]));
    let cut_id = hip("gfx1100");
    let mut cut = ccob(3, Codec::Zstd, &bundle(&[(HOST, &[][..]), (&cut_id, &co(GFX1100, 0, 40))], 4096));
    cut.truncate(cut.len() - 16);
    let len = cut.len() as u64;
    cut[8..16].copy_from_slice(&len.to_le_bytes());
    m.tree.file("opt/rocm/lib/libframe.co", &cut);
    let gpus = [
        "gfx900",
        "gfx906:sramecc+:xnack-",
        "gfx908",
        "gfx90a:xnack-",
        "gfx90a:xnack+",
        "gfx942",
        "gfx1030",
        "gfx1010:xnack+",
        "gfx1010:xnack-",
        "gfx1100",
        "gfx1101",
        "gfx1151",
        "gfx1201",
    ];
    let full = verdicts_at(m.tree.root(), false, &gpus);
    assert!(full.contains("\"status\": \"ok\"") && full.contains("\"status\": \"missing\""), "{full}");
    // The generic entry serves gfx1151 from its ELF header's generic version: read, not taken
    // from the table.
    assert!(full.contains("\"loads\": \"hipv4-amdgcn-amd-amdhsa--gfx11-generic\""), "{full}");
    for broken in ["libgarbage.co", "libcut.so", "libframe.co"] {
        let problem = format!("\"path\": \"opt/rocm/lib/{broken}\"");
        assert!(full.contains(&problem), "{broken} is a problem: {full}");
    }
    assert_eq!(verdicts_at(m.tree.root(), true, &gpus), full);
    // As `check --gpu G` runs, one GPU at a time: the same outcome and the same verdict for
    // every library a full scan reads. Entries no checked GPU loads are taken from their
    // tables, so a library whose every entry is broken is MISSING for the GPUs it has no entry
    // for, where a full scan finds it unreadable: never OK either way.
    let statuses = |json: &str| {
        let v: serde_json::Value = serde_json::from_str(json).expect("JSON");
        let mut by_library = std::collections::BTreeMap::new();
        for install in v["installs"].as_array().into_iter().flatten() {
            for gpu in install["gpus"].as_array().into_iter().flatten() {
                for verdict in gpu["verdicts"].as_array().into_iter().flatten() {
                    by_library.insert(verdict["library"].to_string(), verdict.clone());
                }
            }
        }
        (v["outcome"].clone(), by_library)
    };
    for gpu in gpus {
        let full_json = verdicts_at(m.tree.root(), false, &[gpu]);
        let ((outcome, mut tables), (full_outcome, full)) =
            (statuses(&verdicts_at(m.tree.root(), true, &[gpu])), statuses(&full_json));
        assert_eq!(outcome, full_outcome, "{gpu}");
        for (library, verdict) in &full {
            assert_eq!(tables.remove(library).as_ref(), Some(verdict), "{gpu}: {library}");
        }
        for (library, verdict) in tables {
            let path = library.trim_matches('"').rsplit("/opt/rocm/").next().unwrap_or_default().to_string();
            assert_ne!(verdict["status"], "ok", "{gpu}: {library}");
            assert!(
                full_json.contains(&format!("\"path\": \"opt/rocm/{path}\"")),
                "{gpu}: {library} unread in full"
            );
        }
    }
    let gfx900 = verdicts_at(m.tree.root(), true, &["gfx900"]);
    assert!(gfx900.contains("\"loads\": \"hipv4-amdgcn-amd-amdhsa--gfx9-generic\""), "{gfx900}");
    assert!(gfx900.contains("libnine_broken.co"), "a broken entry gfx900 would load is seen: {gfx900}");
}

// ---------------------------------------------------------------------------------------------
// `--gpu all`: every GPU the code is for and this machine's, one row each (issue 35, item 1)
// ---------------------------------------------------------------------------------------------

/// The tree of the `--gpu all` tests: rocBLAS for gfx1030 only, and a host library with gfx1030
/// and gfx1100 code.
fn all_tree() -> Tree {
    let tree = Tree::new();
    rocblas_gfx1030(&tree);
    let (a, b) = (co(GFX1030, 0, 2), co(GFX1100, 0, 2));
    tree.file("opt/rocm/lib/libfoo.so", &host_lib(&[("gfx1030", &a), ("gfx1100", &b)]));
    tree
}

/// A row's verdict, first decider (relative to the tree), count of more and override, from
/// `summary`.
fn row_of(report: &Value, tree: &Tree, gpu: &str) -> (String, String, u64, String) {
    let rows = report["summary"].as_array().expect("summary rows");
    let r =
        rows.iter().find(|r| r["target"] == gpu).unwrap_or_else(|| panic!("no row for {gpu}: {report:#}"));
    let first = r["first"]["library"].as_str().unwrap_or("");
    let first = first.strip_prefix(&format!("{}/", tree.root_str())).unwrap_or(first);
    let over = r["override_helps"].as_str().unwrap_or("").to_string();
    (
        r["status"].as_str().unwrap_or("").to_string(),
        first.to_string(),
        r["more"].as_u64().unwrap_or(99),
        over,
    )
}

/// The same facts from `check --gpu GPU` of the tree: the GPU's worst status, its first
/// library with that status, how many more, and the hint's override.
fn row_from_check(report: &Value, tree: &Tree) -> (String, String, u64, String) {
    let order = ["ok", "warn", "missing"];
    let all: Vec<(String, String)> = gpus(report).iter().flat_map(|g| statuses(g)).collect();
    let worst = all.iter().map(|(_, s)| order.iter().position(|o| o == s).unwrap()).max().unwrap_or(0);
    let same: Vec<&String> =
        all.iter().filter(|(_, s)| worst > 0 && s == order[worst]).map(|(l, _)| l).collect();
    let first = same.first().map_or("", |l| l.as_str());
    let first = first.strip_prefix(&format!("{}/", tree.root_str())).unwrap_or(first);
    let hint = gpus(report).iter().flat_map(|g| strings(&g["hints"])).next().unwrap_or_default();
    let over = hint.split(' ').next().filter(|w| w.contains('=')).unwrap_or("").to_string();
    (order[worst].to_string(), first.to_string(), same.len().saturating_sub(1) as u64, over)
}

/// `check --gpu all` lists this machine's gfx1031 (KFD node 1) first, then every target the
/// code is for; each row agrees with `check --gpu TARGET`, exit 1 as for several GPUs.
#[test]
fn gpu_all_lists_the_machine_and_every_code_target_as_check_of_each_says() {
    let tree = all_tree();
    let sys = kfd(&[0, 100301]);
    let mut extra = gpus_args(&["all"]);
    extra.extend(sysfs(&sys));
    let report = check_json(&tree, &extra, &[], 1);
    let targets: Vec<&str> =
        report["summary"].as_array().expect("rows").iter().map(|r| r["target"].as_str().unwrap()).collect();
    assert_eq!(targets, ["gfx1031", "gfx1030", "gfx1100"], "{report:#}");
    assert_eq!(report["summary"][0]["node"], 1);
    assert_eq!(
        row_of(&report, &tree, "gfx1031"),
        ("missing".into(), "opt/rocm/lib/libfoo.so".into(), 1, "HSA_OVERRIDE_GFX_VERSION=10.3.0".into())
    );
    assert_eq!(row_of(&report, &tree, "gfx1030").0, "ok");
    assert_eq!(
        row_of(&report, &tree, "gfx1100"),
        ("missing".into(), format!("{ROCBLAS_LIB}/"), 0, String::new())
    );
    for gpu in ["gfx1031", "gfx1030", "gfx1100"] {
        let code = if gpu == "gfx1030" { 0 } else { 1 };
        let one = check_json(&tree, &gpus_args(&[gpu]), &[], code);
        assert_eq!(row_of(&report, &tree, gpu), row_from_check(&one, &tree), "{gpu}");
    }
}

/// `--gpu all,gfx1151` adds a named GPU the code is not for; the table fits 80 columns, marks
/// the machine's GPU, gives the override's value, and the last line counts what is served.
#[test]
fn gpu_all_table_fits_and_names_what_is_served() {
    let tree = all_tree();
    let sys = kfd(&[0, 100301]);
    let mut a = args(&tree, &["--gpu", "all,gfx1151"]);
    a.extend(sysfs(&sys));
    let run = check(&a, &[("COLUMNS", "80")]);
    run.expect_code(1);
    let out = &run.stdout;
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    let row =
        |t: &str| out.lines().find(|l| l.trim_start().starts_with(t)).unwrap_or_else(|| panic!("{t}: {out}"));
    assert!(row("gfx1031 *").contains("MISSING") && row("gfx1031 *").ends_with("10.3.0"), "{out}");
    assert!(row("gfx1030 ").contains("OK"), "{out}");
    assert!(row("gfx1151 ").contains("MISSING"), "{out}");
    assert!(out.contains("*: this machine's GPU (KFD node 1)"), "{out}");
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("MISSING: 3 of 4 GPUs lack a required piece (rows above); 1 served"), "{out}");
    // CSV: a record a GPU, formula-safe, the same statuses.
    let mut c = args(&tree, &["--gpu", "all", "--format", "csv"]);
    c.extend(sysfs(&sys));
    let csv = check(&c, &[]);
    csv.expect_code(1);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "gpu,target,checked_as,node,status,install,first_library,first_kind,more,override,driver"
    );
    assert!(lines[1].ends_with(",unknown"), "no kernel in the roots: {}", csv.stdout);
    assert!(lines[1].starts_with("0,gfx1031,,1,missing,"), "{}", csv.stdout);
    assert!(lines[2].starts_with("1,gfx1030,,,ok,"), "{}", csv.stdout);
    assert_eq!(lines.len(), 4, "{}", csv.stdout);
}

/// `check` opens no MIOpen database of another GPU (issue 38, item 4): a database whose name
/// says a target not being checked is judged by its name (`families::miopen::judged_by_name`),
/// its records never counted; the checked GPU's own are read; a file too small to be a
/// database (a git-lfs pointer) is still read, and serves nothing. The verdicts equal a full
/// scan's.
#[test]
fn check_judges_other_targets_miopen_databases_by_name() {
    let tree = Tree::new();
    tree.file(
        "opt/rocm/lib/libMIOpen.so.1",
        &host_lib(&[("gfx1030", &co(GFX1030, 0, 1)), ("gfx1100", &co(GFX1100, 0, 1))]),
    );
    let records = |n: usize| {
        (0..n).map(|i| format!("3-32-32-5x5-{i}=ConvOclDirectFwd:{i},8,1,16\n")).collect::<String>()
    };
    tree.file(format!("{MIOPEN_DB}/gfx1030_36.HIP.fdb.txt"), records(200).as_bytes());
    tree.file(format!("{MIOPEN_DB}/gfx1100_48.HIP.fdb.txt"), records(100).as_bytes());
    let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\nsize 123456\n";
    tree.file(format!("{MIOPEN_DB}/gfx90a68.db"), pointer.as_bytes());
    let targets = gfxscan::vocab::targets::Targets::builtin();
    // Each database's path, format and records as the scan for `check_for` leaves them.
    let counted = |check_for: Option<Vec<String>>| -> Vec<(String, &str, Option<u64>)> {
        let model = crate::pipeline::model_of(tree.root(), check_for, &targets);
        let mut out: Vec<(String, &str, Option<u64>)> = model
            .snapshot()
            .files
            .iter()
            .filter_map(|f| {
                let a = f.artifact.as_ref()?;
                Some((f.path.path.clone(), a.format.name(), a.records()))
            })
            .collect();
        out.sort();
        out
    };
    let db = |name: &str| format!("{MIOPEN_DB}/{name}");
    let pointer = (db("gfx90a68.db"), "git-lfs-pointer", None);
    assert_eq!(
        counted(Some(vec!["gfx1100".into()])),
        [
            (db("gfx1030_36.HIP.fdb.txt"), "text", None),
            (db("gfx1100_48.HIP.fdb.txt"), "text", Some(100)),
            pointer.clone()
        ]
    );
    assert_eq!(
        counted(None),
        [
            (db("gfx1030_36.HIP.fdb.txt"), "text", Some(200)),
            (db("gfx1100_48.HIP.fdb.txt"), "text", Some(100)),
            pointer
        ]
    );
    for gpu in ["gfx1100", "gfx1151"] {
        let tables = crate::pipeline::verdicts_at(tree.root(), true, &[gpu]);
        assert_eq!(tables, crate::pipeline::verdicts_at(tree.root(), false, &[gpu]), "{gpu}");
    }
    let report = check_json(&tree, &gpus_args(&["gfx1151"]), &[], 1);
    let v = verdict(only_gpu(&report), &tree, &format!("{MIOPEN_DB}/"));
    assert_eq!(v["available"], json!(["gfx1030", "gfx1100"]), "the pointer serves nothing: {v:#}");
}

/// `--gpu all` over roots with no library: nothing to check (exit 4), and no row reads as OK.
#[test]
fn gpu_all_with_nothing_to_check_gives_no_rows() {
    let tree = Tree::new();
    tree.file("opt/rocm/share/doc/README", b"no code here\n");
    let sys = kfd(&[0, 110000]);
    let mut extra = gpus_args(&["all"]);
    extra.extend(sysfs(&sys));
    let report = check_json(&tree, &extra, &[], 4);
    assert_eq!(report["outcome"], "nothing-to-check", "{report:#}");
    assert_eq!(report.get("summary"), None, "{report:#}");
}
