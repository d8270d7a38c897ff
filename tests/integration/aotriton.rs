//! AOTriton kernel images (`aotriton.images/amd-<pack>/`) as PyTorch ROCm wheels install them
//! under `torch/lib/`. No wheel is downloaded (they are gigabytes): the archives are built by
//! `gfxscan::parse::aotriton::testing::aks2`, which writes what ROCm/aotriton
//! `python/aks2.py` `AKS2.write` writes, into the folders `python/gpu_targets.py`
//! `AOTRITON_ARCH_TO_DIRECTORY` and `v3src/CMakeLists.txt` name.

use std::ffi::OsString;
use std::process::Command;

use serde_json::{json, Value};

use gfxscan::parse::aotriton::testing::aks2;

use crate::util::{file_record, run, Run, Tree};

const IMAGES: &str = "venv/lib/python3.12/site-packages/torch/lib/aotriton.images";

/// `attn_fwd` and `bwd_kernel_dk_dv` archives for gfx942 (3 + 2 kernels, one failed to
/// compile), the gfx942 `__signature__`, and one `attn_fwd` archive of the gfx110x pack.
fn torch_tree(with_gfx942: bool) -> Tree {
    let t = Tree::new();
    if with_gfx942 {
        t.file(
            format!("{IMAGES}/amd-gfx942/flash/attn_fwd/FONLY__^fp16@16,128,False,False,0,0___gfx942.aks2"),
            &aks2(&[
                ("attn_fwd-a--Arch_gfx942", b"\x7fELF-a"),
                ("attn_fwd-b--Arch_gfx942", b"\x7fELF-b"),
                ("attn_fwd-c--Arch_gfx942", b""),
            ]),
        );
        t.file(
            format!("{IMAGES}/amd-gfx942/flash/bwd_kernel_dk_dv/FONLY__^fp16@16,128,False,False,0,0___gfx942.aks2"),
            &aks2(&[("bwd-a--Arch_gfx942", b"\x7fELF-d"), ("bwd-b--Arch_gfx942", b"\x7fELF-e")]),
        );
        t.file(format!("{IMAGES}/amd-gfx942/__signature__"), b"{\n  \"AOTRITON_GIT_SHA1\": \"0\"\n}\n");
    }
    t.file(
        format!("{IMAGES}/amd-gfx110x/flash/attn_fwd/FONLY__^fp16@16,128,False,False,0,0___gfx110x.aks2"),
        &aks2(&[("attn_fwd-a--Arch_gfx1100", b"\x7fELF-f"), ("attn_fwd-a--Arch_gfx1101", b"\x7fELF-g")]),
    );
    t
}

fn scan_json(tree: &Tree, extra: &[&str]) -> Value {
    let (run, snap) = tree.scan_json(extra);
    run.expect_code(0);
    snap
}

fn check(tree: &Tree, gpu: &str) -> (Run, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args(["check", "--quiet", "--json", "--gpu", gpu]).arg(tree.root());
    for k in ["HSA_OVERRIDE_GFX_VERSION", "HSA_XNACK"] {
        cmd.env_remove(k);
    }
    let r = run(cmd);
    let report = r.json();
    (r, report)
}

/// The one verdict for the `aotriton.images` folder.
fn images_verdict<'a>(report: &'a Value, tree: &Tree) -> &'a Value {
    let want = format!("{}/{IMAGES}/", tree.root_str());
    let gpus = report["installs"][0]["gpus"].as_array().expect("gpus");
    let verdicts = gpus[0]["verdicts"].as_array().expect("verdicts");
    verdicts.iter().find(|v| v["library"] == want.as_str()).unwrap_or_else(|| panic!("no {want}: {report:#}"))
}

/// aks2.py layout: roles, storage, kernel counts from the inflated directory, the pack's
/// processors, and one families row counting archives per target.
#[test]
fn aks2_py_archives_in_the_scan() {
    let tree = torch_tree(true);
    let snap = scan_json(&tree, &[]);
    let fwd = file_record(
        &snap,
        &format!("{IMAGES}/amd-gfx942/flash/attn_fwd/FONLY__^fp16@16,128,False,False,0,0___gfx942.aks2"),
    );
    assert_eq!(
        fwd["artifact"],
        json!({"family": "aotriton", "role": "kernel-archive", "format": "aks2", "name_target": "gfx942", "aotriton": {"kernels": 3}})
    );
    let sig = file_record(&snap, &format!("{IMAGES}/amd-gfx942/__signature__"));
    assert_eq!(sig["artifact"]["role"], "image-signature");
    assert_eq!(sig["artifact"]["format"], "text");
    let pack = file_record(
        &snap,
        &format!("{IMAGES}/amd-gfx110x/flash/attn_fwd/FONLY__^fp16@16,128,False,False,0,0___gfx110x.aks2"),
    );
    assert_eq!(
        pack["artifact"]["aotriton"]["pack_targets"],
        json!(["gfx1100", "gfx1101", "gfx1102", "gfx1103"])
    );
    assert_eq!(pack["artifact"]["aotriton"]["kernels"], 2);
    assert_eq!(
        snap["families"]["aotriton-kernel-archives"],
        json!({"gfx942": 2, "gfx1100": 1, "gfx1101": 1, "gfx1102": 1, "gfx1103": 1})
    );
    assert_eq!(snap["problems"], json!([]), "{:#}", snap["problems"]);
}

/// `scan --compare` shows the row for the targets compared, in the order they were asked in.
#[test]
fn compare_row_counts_archives() {
    let tree = torch_tree(true);
    let run = tree.scan(&["--compare", "gfx942,gfx1151"]);
    run.expect_code(0);
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains("AOTriton kernel archives"))
        .unwrap_or_else(|| panic!("no AOTriton row:\n{}", run.stdout));
    // Targets in the order asked (gfx942, gfx1151): 2 archives, then none (a dash).
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 2..], ["2", "—"], "{}", run.stdout);
    let header = run.stdout.lines().find(|l| l.contains("LAYER")).expect("header");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["LAYER", "gfx942", "gfx1151"],
        "{}",
        run.stdout
    );
    // Asked the other way round, the columns swap.
    let swapped = tree.scan(&["--compare", "gfx1151,gfx942"]);
    swapped.expect_code(0);
    let header = swapped.stdout.lines().find(|l| l.contains("LAYER")).expect("header");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["LAYER", "gfx1151", "gfx942"],
        "{}",
        swapped.stdout
    );
    let row = swapped.stdout.lines().find(|l| l.contains("AOTriton kernel archives")).expect("AOTriton row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 2..], ["—", "2"], "{}", swapped.stdout);
}

/// gfx942 has images: OK. gfx1151 has none (its pack, gfx115x, is absent): WARN with what
/// PyTorch does (`sdp_utils.cpp` `check_flash_attention_hardware_support`,
/// `mha_all_aot.hip` `mha_fwd_aot`), exit 0.
#[test]
fn sdp_utils_check_gpu_ok_and_warn() {
    let tree = torch_tree(true);
    let (run, report) = check(&tree, "gfx942");
    run.expect_code(0);
    let v = images_verdict(&report, &tree);
    assert_eq!(v["status"], "ok", "{v:#}");
    assert_eq!(v["kind"], "aotriton");
    assert_eq!(v["detail"], "2 AKS2 archives (5 kernels) in amd-gfx942/");

    let (run, report) = check(&tree, "gfx1151");
    run.expect_code(0);
    let v = images_verdict(&report, &tree);
    assert_eq!(v["status"], "warn", "{v:#}");
    assert_eq!(v["detail"], "no AOTriton kernel images for gfx1151");
    // In the natural order: generation, then number (gfx942 before gfx1100).
    assert_eq!(v["available"], json!(["gfx942", "gfx1100", "gfx1101", "gfx1102", "gfx1103"]));
    let consequence = v["consequence"].as_str().expect("consequence");
    assert!(consequence.contains("falls back to the slower math path"), "{consequence}");
}

/// AOTriton images are device code: a tree holding only them is something to check.
#[test]
fn images_alone_are_something_to_check() {
    let tree = torch_tree(false);
    let (run, report) = check(&tree, "gfx1100");
    run.expect_code(0);
    assert_eq!(images_verdict(&report, &tree)["status"], "ok");
}

/// `diff` of an install that lost its gfx942 images lists gfx942 as lost.
#[test]
fn diff_losing_gfx942_images() {
    let old = torch_tree(true);
    let new = torch_tree(false);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args([OsString::from("diff"), "-q".into(), "--json".into()]).arg(old.root()).arg(new.root());
    let report = run(cmd).json();
    let losses = report["losses"].to_string();
    assert!(losses.contains("gfx942") && losses.contains("aotriton"), "{:#}", report["losses"]);
    assert!(!losses.contains("gfx1100"), "{:#}", report["losses"]);
}

/// AOTriton 0.13 on packs a kernel's AKS2 archives into an uncompressed
/// `amd-<pack>/<family>/<kernel>.zip` (ROCm/aotriton `python/flatzip.py` `build_zip`): its
/// members are judged as if unpacked beside it, so they count for the pack's targets.
#[test]
fn aotriton_0_13_zip_packs_count_like_their_folders() {
    use crate::archives::{zip_of, Entry};
    let t = Tree::new();
    let inner = aks2(&[("attn_fwd-a--Arch_gfx942", b"\x7fELF-a"), ("attn_fwd-b--Arch_gfx942", b"\x7fELF-b")]);
    let name = "FONLY__^fp16@16,128,False,False,0,0___gfx942.aks2".to_string();
    t.file(format!("{IMAGES}/amd-gfx942/flash/attn_fwd.zip"), &zip_of(&[Entry::File(name, inner)], false));
    let snap = scan_json(&t, &[]);
    assert_eq!(snap["families"]["aotriton-kernel-archives"], json!({"gfx942": 1}), "{:#}", snap["files"]);
    let (run, report) = check(&t, "gfx942");
    run.expect_code(0);
    assert_eq!(images_verdict(&report, &t)["status"], "ok");
}
