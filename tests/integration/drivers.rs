//! The kernel's side (issue 37): the amdgpu driver a root's kernel loads, found as modprobe
//! finds it, and the firmware it asks for each GPU, judged by `check` (per driver, or `unknown`
//! with why), `check --gpu all`, `explain` and `diff`, in roots and on a running system.

use serde_json::{json, Value};

use gfxscan::testing::{host_elf, HostSection};

use crate::fixtures::{co, hip_bundle, GFX1100};
use crate::util::{problems, Tree};

/// A kernel module whose `.modinfo` holds `info`.
fn module(info: &[u8]) -> Vec<u8> {
    host_elf(&[HostSection::rodata(".modinfo", info)])
}

/// `gfxscan ARGS` run to its end.
fn gfxscan(args: &[&str]) -> crate::util::Run {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    c.args(args);
    crate::util::run(c)
}

/// The firmware of GC 11.0.0 (gfx1100) a driver declares, as `firmware=` strings.
const GC_11_0_0: &[u8] = b"firmware=amdgpu/gc_11_0_0_pfp.bin\0firmware=amdgpu/gc_11_0_0_me.bin\0firmware=amdgpu/gc_11_0_0_mec.bin\0";

/// The root `t` with every file of GC 11.0.0 under `lib/firmware`.
fn with_gc_11_0_0_firmware(t: &Tree) {
    for f in ["pfp", "me", "mec"] {
        t.file(format!("lib/firmware/amdgpu/gc_11_0_0_{f}.bin"), b"x");
    }
}

/// A root holding a kernel: its amdgpu module is recorded with the firmware it declares and
/// which of those the root holds, found as the kernel's loader finds them (`.xz` only when the
/// kernel's configuration takes it, links inside the root); a module that cannot be read is a
/// problem at its path, and the scan goes on.
#[test]
fn a_roots_kernel_driver_and_its_firmware_are_recorded() {
    let info = b"firmware=amdgpu/gc_11_5_1_pfp.bin\0firmware=amdgpu/gc_11_5_1_me.bin\0firmware=amdgpu/gc_11_5_1_mec.bin\0firmware=amdgpu/gc_11_5_1_rlc.bin\0vermagic=6.1.0-9-amd64 SMP\0";
    let module = host_elf(&[HostSection::rodata(".modinfo", info)]);
    let t = Tree::new();
    t.file("lib/modules/6.1.0-9-amd64/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko", &module);
    t.file(
        "boot/config-6.1.0-9-amd64",
        b"CONFIG_FW_LOADER_COMPRESS_XZ=y\n# CONFIG_FW_LOADER_COMPRESS_ZSTD is not set\n",
    );
    t.file("lib/firmware/amdgpu/gc_11_5_1_pfp.bin", b"x");
    t.file("lib/firmware/amdgpu/gc_11_5_1_me.bin.xz", b"x");
    t.file("lib/firmware/amdgpu/gc_11_5_1_mec.bin.zst", b"x");
    t.symlink("gc_11_5_1_pfp.bin", "lib/firmware/amdgpu/gc_11_5_1_rlc.bin");
    t.file("lib/modules/6.2.0/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko", b"not a module");
    // Compressed modules, as Debian (xz) and others (zstd) ship them: read the same.
    let zst_info = b"firmware=amdgpu/vega10_me.bin\0vermagic=6.8.0-zst SMP\0";
    let zst =
        zstd::encode_all(host_elf(&[HostSection::rodata(".modinfo", zst_info)]).as_slice(), 3).expect("zstd");
    t.file("usr/lib/modules/6.8.0-zst/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst", &zst);
    let xz_info = b"firmware=amdgpu/navi10_me.bin\0vermagic=6.12.0-xz SMP\0";
    let mut xz = Vec::new();
    {
        use std::io::Write;
        let mut e = liblzma::write::XzEncoder::new(&mut xz, 6);
        e.write_all(&host_elf(&[HostSection::rodata(".modinfo", xz_info)])).expect("xz");
        e.finish().expect("xz");
    }
    t.file("usr/lib/modules/6.12.0-xz/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.xz", &xz);
    let (run, snap) = t.scan_json(&[]);
    run.expect_code(1);
    let all = snap["drivers"].as_array().cloned().unwrap_or_default();
    let releases: Vec<&str> = all.iter().filter_map(|d| d["release"].as_str()).collect();
    assert_eq!(releases, ["6.1.0-9-amd64", "6.2.0", "6.12.0-xz", "6.8.0-zst"], "{snap:#}");
    assert_eq!(all[3]["firmware"], json!(["amdgpu/vega10_me.bin"]));
    assert_eq!(all[2]["firmware"], json!(["amdgpu/navi10_me.bin"]));
    assert!(all[1]["unreadable"].is_string(), "the module that does not read: {:#}", all[1]);
    let d = &snap["drivers"];
    assert_eq!(d[0]["release"], "6.1.0-9-amd64");
    assert_eq!(d[0]["firmware_xz"], true);
    assert_eq!(d[0]["firmware_zstd"], false);
    assert_eq!(
        d[0]["present"],
        json!(["amdgpu/gc_11_5_1_pfp.bin", "amdgpu/gc_11_5_1_me.bin", "amdgpu/gc_11_5_1_rlc.bin"]),
        "the .zst is not taken by a kernel without zstd firmware"
    );
    assert!(
        problems(&snap).iter().any(|(p, m)| p.contains("6.2.0") && m.starts_with("kernel module:")),
        "{snap:#}"
    );
}

/// `check` judges each GPU against the root's kernel: a driver that asks for no firmware of the
/// GPU does not know it, a required file absent leaves it down with the line `dmesg` shows;
/// either is MISSING (exit 1), whatever the libraries hold. No kernel in the roots: unknown, and
/// the exit code is the libraries'.
#[test]
fn check_says_when_the_kernel_leaves_the_gpu_down() {
    let info = b"firmware=amdgpu/gc_11_0_0_pfp.bin\0firmware=amdgpu/gc_11_0_0_me.bin\0firmware=amdgpu/gc_11_0_0_toc.bin\0vermagic=6.1.0-9-amd64 SMP\0";
    let t = Tree::new();
    t.file(
        "lib/modules/6.1.0-9-amd64/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko",
        &host_elf(&[HostSection::rodata(".modinfo", info)]),
    );
    t.file("lib/firmware/amdgpu/gc_11_0_0_pfp.bin", b"x");
    t.file("opt/rocm/lib/k.hipfb", &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let check = |gpu: &str| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        c.args(["check", "--json", "-q", "--gpu", gpu]).arg(t.root());
        crate::util::run(c)
    };
    let r = check("gfx1100");
    r.expect_code(1);
    let d = &r.json()["drivers"][0];
    assert_eq!((d["gpu"].as_str(), d["outcome"].as_str()), (Some("gfx1100"), Some("missing")));
    assert_eq!(d["missing"], json!(["amdgpu/gc_11_0_0_me.bin"]));
    assert_eq!(d["optional_absent"][0][0], "amdgpu/gc_11_0_0_toc.bin");
    assert!(
        d["dmesg"].as_str().is_some_and(
            |l| l.contains("Direct firmware load for amdgpu/gc_11_0_0_me.bin failed with error -2")
        )
    );
    let r = check("gfx1151");
    r.expect_code(1);
    assert_eq!(r.json()["drivers"][0]["outcome"], "not-known");
    // The same row in every format: a JSON Lines record, a Prometheus series.
    let lines =
        gfxscan(&["check", "--gpu", "gfx1100", "--format", "jsonl", "-q", t.root().to_str().unwrap()]);
    let driver: Vec<Value> = lines
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "driver")
        .collect();
    assert_eq!(driver.len(), 1, "{}", lines.stdout);
    assert_eq!(driver[0]["data"]["outcome"], "missing");
    let metrics =
        gfxscan(&["check", "--gpu", "gfx1100", "--format", "prometheus", "-q", t.root().to_str().unwrap()]);
    let series: Vec<&str> =
        metrics.stdout.lines().filter(|l| l.starts_with("gfxscan_check_driver_outcome{")).collect();
    assert_eq!(series.len(), 5, "one per outcome: {}", metrics.stdout);
    let page = gfxscan(&["check", "--gpu", "gfx1100", "--format", "html", "-q", t.root().to_str().unwrap()]);
    assert!(page.stdout.contains("<h2>Driver and firmware (1)</h2>"), "{}", page.stdout);
    assert!(page.stdout.contains("MISSING: 1 of the 3 files it asks for are absent"), "{}", page.stdout);
    assert!(
        series.iter().any(|l| l.contains("target=\"gfx1100\"")
            && l.contains("outcome=\"missing\"")
            && l.ends_with(" 1")),
        "{}",
        metrics.stdout
    );
    // explain's kernel gate reads check's judgement: it blocks, and explain exits as check.
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    c.args(["explain", "gfx1151", "--json", "-q"]).arg(t.root());
    let e = crate::util::run(c);
    e.expect_code(1);
    let doc = e.json();
    let row = doc["ships"].as_array().and_then(|r| {
        r.iter().find(|r| r["gate"].as_str().is_some_and(|g| g.starts_with("amdgpu driver"))).cloned()
    });
    assert_eq!(row.map(|r| r["verdict"].clone()), Some(json!("blocks")), "{doc:#}");
    t.file("lib/firmware/amdgpu/gc_11_0_0_me.bin.xz", b"x");
    let r = check("gfx1100");
    assert_eq!(
        r.json()["drivers"][0]["outcome"],
        "ok",
        "xz firmware, taken by a 6.1 kernel without its config"
    );
    std::fs::remove_dir_all(t.path("lib/modules")).expect("no kernel");
    let r = check("gfx1100");
    r.expect_code(0);
    assert_eq!(r.json()["drivers"][0]["outcome"], "unknown");
    assert_eq!(r.json()["drivers"][0]["unjudged"], "no-module-in-roots");
}

/// Without a kernel in the roots, `check` says so in one line for every GPU, and its exit code
/// is its libraries'; `explain` shows the gate as unknown, with the same reason.
#[test]
fn no_kernel_in_the_roots_is_unknown_and_said_once() {
    let t = Tree::new();
    t.file("opt/rocm/lib/k.hipfb", &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let r = gfxscan(&["check", "--gpu", "gfx1100,gfx900", "-q", t.root().to_str().unwrap()]);
    let words = r.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("gfx1100, gfx900 · unknown: no amdgpu kernel module in the roots"),
        "{}",
        r.stdout
    );
    assert_eq!(words.matches("no amdgpu kernel module").count(), 1, "said once: {}", r.stdout);
    let e = gfxscan(&["explain", "gfx1100", "--json", "-q", t.root().to_str().unwrap()]);
    e.expect_code(0);
    let doc = e.json();
    let gate = doc["ships"].as_array().and_then(|r| r.iter().find(|r| r["gate"] == "amdgpu driver").cloned());
    let gate = gate.unwrap_or_else(|| panic!("no driver gate: {doc:#}"));
    assert_eq!(gate["verdict"], "unknown");
    assert!(
        gate["says"].as_str().is_some_and(|s| s.contains("no amdgpu kernel module in the roots")),
        "{gate}"
    );
}

/// modprobe loads the module `modules.dep` names — AMD's amdgpu-dkms under `updates/dkms`
/// before the kernel's own (kmod tools/depmod.c `cfg_load` puts `updates` first); in a folder
/// depmod never ran in, `updates/` is looked in first all the same. A `modules.dep` naming a
/// path out of the root is not followed.
#[test]
fn the_module_judged_is_the_one_modprobe_loads() {
    let t = Tree::new();
    let rel = "lib/modules/6.8.0-40-generic";
    t.file(
        format!("{rel}/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst"),
        &zstd_of(&module(b"firmware=amdgpu/gc_11_0_0_pfp.bin\0vermagic=6.8.0-40-generic SMP\0")),
    );
    let dkms = [GC_11_0_0, b"vermagic=6.8.0-40-generic SMP\0"].concat();
    t.file(format!("{rel}/updates/dkms/amdgpu.ko.zst"), &zstd_of(&module(&dkms)));
    with_gc_11_0_0_firmware(&t);
    let drivers = |t: &Tree| -> Vec<Value> {
        let (_, snap) = t.scan_json(&[]);
        snap["drivers"].as_array().cloned().unwrap_or_default()
    };
    let d = drivers(&t);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["path"], format!("{rel}/updates/dkms/amdgpu.ko.zst"), "no modules.dep: updates/ first");
    assert_eq!(d[0]["firmware"].as_array().map(Vec::len), Some(3));
    t.file(
        format!("{rel}/modules.dep"),
        b"kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst: kernel/drivers/gpu/drm/drm.ko.zst\nkernel/drivers/gpu/drm/drm.ko.zst:\n",
    );
    let d = drivers(&t);
    assert_eq!(
        d[0]["path"],
        format!("{rel}/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst"),
        "as modules.dep says"
    );
    // A module outside the root, named by modules.dep through `..` and absolutely: looked up
    // inside the root (`..` stops at it), where there is none: this kernel has no amdgpu.
    let outside = tempfile::tempdir().expect("tempdir");
    let module_out = outside.path().join("amdgpu.ko");
    std::fs::write(&module_out, module(&dkms)).expect("write");
    for named in [format!("../../../../../../..{}", module_out.display()), module_out.display().to_string()] {
        t.file(format!("{rel}/modules.dep"), format!("{named}:\n").as_bytes());
        let d = drivers(&t);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            (d[0]["absent"].as_bool(), d[0]["firmware"].as_array().map(Vec::len)),
            (Some(true), Some(0)),
            "{named}: {:?}",
            d[0]
        );
    }
}

/// Nothing of a root is read outside it: a release folder, `updates/` or the kernel's module
/// folder that is a link out of the root is looked up inside it (an absolute target starts
/// again at the root), and the module out there is never read.
#[test]
fn links_out_of_the_root_lead_back_into_it() {
    let outside = tempfile::tempdir().expect("tempdir");
    let out = outside.path();
    let info = [GC_11_0_0, b"vermagic=6.8.0-out SMP\0"].concat();
    std::fs::create_dir_all(out.join("6.8.0-out/kernel/drivers/gpu/drm/amd/amdgpu")).expect("mkdir");
    std::fs::write(out.join("6.8.0-out/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko"), module(&info))
        .expect("write");
    std::fs::write(out.join("6.8.0-out/modules.builtin"), b"kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko\n")
        .expect("write");
    let t = Tree::new();
    t.symlink(out.join("6.8.0-out"), "lib/modules/6.8.0-out");
    t.symlink(out.join("6.8.0-out"), "lib/modules/6.8.1/updates");
    t.symlink("/", "lib/modules/6.8.2/updates");
    t.symlink(out.join("6.8.0-out/kernel"), "lib/modules/6.8.3/kernel");
    with_gc_11_0_0_firmware(&t);
    let (_, snap) = t.scan_json(&[]);
    assert_eq!(snap["drivers"], Value::Null, "nothing read from outside: {:#}", snap["drivers"]);
}

/// A FIFO where `modules.dep`, `modules.builtin`, the kernel's configuration or the running
/// kernel's release is looked for is never opened for reading: `check` finishes.
#[test]
fn fifos_in_a_kernels_place_are_not_read() {
    let t = Tree::new();
    let rel = "lib/modules/6.12.0-fifo";
    let info = [GC_11_0_0, b"vermagic=6.12.0-fifo SMP\0"].concat();
    t.file(format!("{rel}/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko"), &module(&info));
    t.fifo(format!("{rel}/modules.dep"));
    t.fifo(format!("{rel}/modules.builtin"));
    t.fifo("boot/config-6.12.0-fifo");
    with_gc_11_0_0_firmware(&t);
    let spec = gfxscan::testing::DynamicSpec { e_type: 2, ..Default::default() };
    t.file("usr/bin/prog", &gfxscan::testing::dynamic_elf(&spec));
    let root = t.root().to_str().unwrap().to_string();
    let r = gfxscan(&["check", "--gpu", "gfx1100", "--json", "-q", &root]);
    assert_eq!(r.json()["drivers"][0]["outcome"], "ok", "{}", r.stdout);
    t.fifo("proc/sys/kernel/osrelease");
    let r =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", &root, "--json", "-q"]);
    assert_eq!(r.json()["drivers"][0]["outcome"], "ok", "no release: each kernel of the image: {}", r.stdout);
}

/// A kernel whose `modules.dep` names no amdgpu (Ubuntu without linux-modules-extra) leaves every
/// GPU down: MISSING, in every view. A module that cannot be read is unknown with its reason,
/// and the check is incomplete, never OK.
#[test]
fn a_kernel_without_amdgpu_is_missing_an_unreadable_one_unknown() {
    let t = Tree::new();
    let rel = "lib/modules/6.8.0-31-generic";
    t.file(format!("{rel}/modules.dep"), b"kernel/drivers/gpu/drm/drm.ko.zst:\n");
    t.file(format!("{rel}/kernel/drivers/gpu/drm/drm.ko.zst"), b"x");
    t.file("opt/rocm/lib/k.hipfb", &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let root = t.root().to_str().unwrap().to_string();
    let r = gfxscan(&["check", "--gpu", "gfx1100", "--json", "-q", &root]);
    r.expect_code(1);
    let d = &r.json()["drivers"][0];
    assert_eq!(
        (d["outcome"].as_str(), d["release"].as_str()),
        (Some("no-driver"), Some("6.8.0-31-generic")),
        "{d}"
    );
    let text = gfxscan(&["check", "--gpu", "gfx1100", &root]);
    let words = text.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("MISSING: this kernel has no amdgpu driver"), "{}", text.stdout);
    let all = gfxscan(&["check", "--gpu", "all", "--json", "-q", &root]);
    assert_eq!(all.json()["summary"][0]["driver"], "no-driver");
    assert_eq!(all.json()["summary"][0]["status"], "missing");
    let e = gfxscan(&["explain", "gfx1100", "--json", "-q", &root]);
    e.expect_code(1);
    // The module there, cut short: unknown, why, and exit 3.
    t.file(format!("{rel}/modules.dep"), b"kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko:\n");
    t.file(format!("{rel}/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko"), &module(GC_11_0_0)[..40]);
    let r = gfxscan(&["check", "--gpu", "gfx1100", "--json", "-q", &root]);
    r.expect_code(3);
    let d = &r.json()["drivers"][0];
    assert_eq!(
        (d["outcome"].as_str(), d["unjudged"].as_str()),
        (Some("unknown"), Some("module-unreadable")),
        "{d}"
    );
    assert!(d["problem"].as_str().is_some_and(|p| !p.is_empty()), "{d}");
}

/// An amdgpu built into the kernel (`modules.builtin`) is judged from the release's
/// `modules.builtin.modinfo`, its strings prefixed `amdgpu.`.
#[test]
fn a_built_in_amdgpu_is_judged_from_modules_builtin_modinfo() {
    let t = Tree::new();
    let rel = "usr/lib/modules/6.12.9-custom";
    t.file(
        format!("{rel}/modules.builtin"),
        b"kernel/drivers/gpu/drm/drm.ko\nkernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko\n",
    );
    t.file(
        format!("{rel}/modules.builtin.modinfo"),
        b"drm.firmware=other.bin\0amdgpu.firmware=amdgpu/gc_11_0_0_pfp.bin\0amdgpu.firmware=amdgpu/gc_11_0_0_me.bin\0amdgpu.license=GPL\0",
    );
    t.file("usr/lib/firmware/amdgpu/gc_11_0_0_pfp.bin", b"x");
    t.file("opt/rocm/lib/k.hipfb", &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]));
    let check = || gfxscan(&["check", "--gpu", "gfx1100", "--json", "-q", t.root().to_str().unwrap()]);
    let r = check();
    r.expect_code(1);
    let d = &r.json()["drivers"][0];
    assert_eq!(d["built_in"], true, "{d}");
    assert_eq!(d["release"], "6.12.9-custom");
    assert_eq!(d["missing"], json!(["amdgpu/gc_11_0_0_me.bin"]));
    // Every file in the root: it loads them before the root is mounted, from the initramfs,
    // not read here: unknown. Built into the kernel image: OK.
    t.file("usr/lib/firmware/amdgpu/gc_11_0_0_me.bin", b"x");
    let d = check().json()["drivers"][0].clone();
    assert_eq!(
        (d["outcome"].as_str(), d["unjudged"].as_str()),
        (Some("unknown"), Some("built-in-needs-initramfs")),
        "{d}"
    );
    t.file(
        "boot/config-6.12.9-custom",
        b"CONFIG_EXTRA_FIRMWARE=\"amdgpu/gc_11_0_0_pfp.bin amdgpu/gc_11_0_0_me.bin\"\n",
    );
    std::fs::remove_dir_all(t.path("usr/lib/firmware")).expect("remove");
    assert_eq!(check().json()["drivers"][0]["outcome"], "ok");
}

/// `check` of a system (no ROOT: here a program's `--root`) judges the kernel it runs: the
/// release `proc/sys/kernel/osrelease` names, not the system's other kernels, with the running
/// driver's parameters (`sys/module/amdgpu/parameters`) deciding what it asks for: GC 12 with
/// `amdgpu.uni_mes=0` asks for `_mes.bin` and `_mes1.bin`, not `_uni_mes.bin`.
#[test]
fn a_systems_running_kernel_is_judged_with_its_drivers_parameters() {
    let t = Tree::new();
    let spec = gfxscan::testing::DynamicSpec { e_type: 2, ..Default::default() };
    t.file("usr/bin/prog", &gfxscan::testing::dynamic_elf(&spec));
    t.file("proc/sys/kernel/osrelease", b"6.12.0-1\n");
    let gc12 = b"firmware=amdgpu/gc_12_0_1_pfp.bin\0firmware=amdgpu/gc_12_0_1_uni_mes.bin\0firmware=amdgpu/gc_12_0_1_mes.bin\0firmware=amdgpu/gc_12_0_1_mes1.bin\0vermagic=6.12.0-1 SMP\0";
    t.file("lib/modules/6.12.0-1/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko", &module(gc12));
    t.file(
        "lib/modules/6.1.0-1/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko",
        &module(b"vermagic=6.1.0-1 SMP\0"),
    );
    t.file("lib/firmware/amdgpu/gc_12_0_1_pfp.bin", b"x");
    t.file("lib/firmware/amdgpu/gc_12_0_1_uni_mes.bin", b"x");
    let root = t.root().to_str().unwrap().to_string();
    let check =
        || gfxscan(&["check", "--gpu", "gfx1201", "--exe", "/usr/bin/prog", "--root", &root, "--json", "-q"]);
    let r = check();
    let doc = r.json();
    let d = doc["drivers"].as_array().cloned().unwrap_or_default();
    assert_eq!(d.len(), 1, "only the running kernel's driver: {doc:#}");
    assert_eq!(d[0]["release"], "6.12.0-1");
    assert_eq!(d[0]["outcome"], "ok", "uni_mes by default: {:#}", d[0]);
    let absent: Vec<&str> =
        d[0]["optional_absent"].as_array().into_iter().flatten().filter_map(|p| p[0].as_str()).collect();
    assert_eq!(absent, ["amdgpu/gc_12_0_1_mes.bin", "amdgpu/gc_12_0_1_mes1.bin"]);
    assert_eq!(d[0]["running"], Value::Null, "amdgpu not loaded: the defaults");
    t.file("sys/module/amdgpu/parameters/uni_mes", b"0\n");
    t.file("sys/module/amdgpu/parameters/mes", b"garbage\n");
    let d = check().json()["drivers"][0].clone();
    assert_eq!(d["running"], true);
    assert_eq!(d["settings"], json!({"mes": 0, "mes_kiq": 0, "uni_mes": 0, "fw_load_type": -1}));
    assert_eq!(d["outcome"], "missing", "{d:#}");
    assert_eq!(d["missing"], json!(["amdgpu/gc_12_0_1_mes.bin", "amdgpu/gc_12_0_1_mes1.bin"]));
    let text = gfxscan(&["check", "--gpu", "gfx1201", "--exe", "/usr/bin/prog", "--root", &root]);
    text.expect_code(1);
    let words = text.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("as the running driver is set: amdgpu.uni_mes=0"), "{}", text.stdout);
    // The running kernel's release without its modules (a container): unknown, and why.
    std::fs::remove_dir_all(t.path("lib/modules/6.12.0-1")).expect("remove");
    let d = check().json()["drivers"][0].clone();
    assert_eq!(
        (d["outcome"].as_str(), d["unjudged"].as_str()),
        (Some("unknown"), Some("no-module-for-running-kernel"))
    );
    assert_eq!(d["release"], "6.12.0-1");
}

/// `check --gpu all`: a GPU the roots' code serves but their kernel's driver does not know is
/// MISSING in its row, the driver named as what decides it, as `check --gpu` of it says.
#[test]
fn gpu_all_rows_read_the_drivers_verdict() {
    let t = Tree::new();
    let info = [GC_11_0_0, b"vermagic=6.1.0-9-amd64 SMP\0"].concat();
    t.file("lib/modules/6.1.0-9-amd64/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko", &module(&info));
    with_gc_11_0_0_firmware(&t);
    let (a, b) = (co(GFX1100, 0, 1), co(crate::fixtures::GFX90A, 0, 1));
    t.file("opt/rocm/lib/k.hipfb", &hip_bundle(&[("gfx1100", &a), ("gfx90a", &b)]));
    let root = t.root().to_str().unwrap().to_string();
    let r = gfxscan(&["check", "--gpu", "all", "--json", "-q", &root]);
    r.expect_code(1);
    let doc = r.json();
    let rows = doc["summary"].as_array().cloned().unwrap_or_default();
    let row =
        |t: &str| rows.iter().find(|r| r["target"] == t).cloned().unwrap_or_else(|| panic!("{t}: {doc:#}"));
    assert_eq!(
        (row("gfx1100")["status"].as_str(), row("gfx1100")["driver"].as_str()),
        (Some("ok"), Some("ok"))
    );
    assert_eq!(
        (row("gfx90a")["status"].as_str(), row("gfx90a")["driver"].as_str()),
        (Some("missing"), Some("not-known"))
    );
    let one = gfxscan(&["check", "--gpu", "gfx90a", "--json", "-q", &root]);
    one.expect_code(1);
    assert_eq!(one.json()["drivers"][0]["outcome"], "not-known");
    let text = gfxscan(&["check", "--gpu", "all", &root]);
    assert!(
        text.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("gfx90a") && l.contains("amdgpu driver: does not know it")),
        "{}",
        text.stdout
    );
}

/// Rules that depend on the driver's parameters and on what it declares, through `check`: a
/// target the table names no firmware for is not judged (unknown, never MISSING).
#[test]
fn a_target_without_firmware_names_is_not_judged() {
    let t = Tree::new();
    let info = [GC_11_0_0, b"vermagic=6.1.0-9-amd64 SMP\0"].concat();
    t.file("lib/modules/6.1.0-9-amd64/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko", &module(&info));
    t.file("opt/rocm/lib/k.hipfb", &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]));
    // gfx1170: no `firmware` in targets.toml.
    let r = gfxscan(&["check", "--gpu", "gfx1170", "--json", "-q", t.root().to_str().unwrap()]);
    let d = &r.json()["drivers"][0];
    assert_eq!(
        (d["outcome"].as_str(), d["unjudged"].as_str()),
        (Some("unknown"), Some("no-firmware-names")),
        "{d}"
    );
}

fn zstd_of(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 3).expect("zstd")
}

/// `scan` says under its table what each driver of the roots asks for and finds, per target, as
/// `check` judges it: the FIRMWARE column counts files by name, asked for or not.
#[test]
fn scan_says_what_the_kernel_asks_for_and_finds() {
    let t = Tree::new();
    let info = [GC_11_0_0, b"firmware=amdgpu/vega10_me.bin\0vermagic=6.1.0-9-amd64 SMP\0"].concat();
    t.file("lib/modules/6.1.0-9-amd64/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko", &module(&info));
    with_gc_11_0_0_firmware(&t);
    let r = gfxscan(&["scan", "-q", t.root().to_str().unwrap()]);
    let words = r.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("Kernel: amdgpu of Linux 6.1.0-9-amd64"), "{}", r.stdout);
    assert!(
        words.contains("declares 4 firmware files, 3 present; every file it needs is there for gfx1100; absent for gfx900"),
        "{}",
        r.stdout
    );
    let one = gfxscan(&["check", "--gpu", "gfx900", "--json", "-q", t.root().to_str().unwrap()]);
    assert_eq!(one.json()["drivers"][0]["outcome"], "missing", "the same judgement");
}

/// The parameters a system gives amdgpu decide what it asks for, wherever they are set: a root's
/// `modprobe.d` (`options amdgpu uni_mes=0`) for `check ROOT`, `scan` and `diff` alike, and for
/// a system whose amdgpu is not loaded its kernel's command line on top (`amdgpu.uni_mes=1`).
#[test]
fn a_systems_modprobe_options_and_command_line_set_the_parameters() {
    let t = Tree::new();
    let gc12 = b"firmware=amdgpu/gc_12_0_1_pfp.bin\0firmware=amdgpu/gc_12_0_1_uni_mes.bin\0firmware=amdgpu/gc_12_0_1_mes.bin\0firmware=amdgpu/gc_12_0_1_mes1.bin\0vermagic=6.12.0-2 SMP\0";
    t.file("lib/modules/6.12.0-2/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko", &module(gc12));
    t.file("lib/firmware/amdgpu/gc_12_0_1_pfp.bin", b"x");
    t.file("lib/firmware/amdgpu/gc_12_0_1_uni_mes.bin", b"x");
    t.file(
        "etc/modprobe.d/amdgpu.conf",
        b"# a comment\noptions amdgpu  uni-mes=0 dc=1\noptions other mes=1\n",
    );
    let root = t.root().to_str().unwrap().to_string();
    let r = gfxscan(&["check", "--gpu", "gfx1201", "--json", "-q", &root]);
    r.expect_code(1);
    let d = r.json()["drivers"][0].clone();
    assert_eq!(
        (d["outcome"].as_str(), d["settings"]["uni_mes"].as_i64()),
        (Some("missing"), Some(0)),
        "{d:#}"
    );
    assert_eq!(d["running"], Value::Null, "set by the system, not read from a running driver");
    let scan = gfxscan(&["scan", "-q", &root]);
    let words = scan.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("absent for gfx1201"), "scan judges as check: {}", scan.stdout);
    // The system running that kernel, amdgpu not loaded: its command line comes last.
    let spec = gfxscan::testing::DynamicSpec { e_type: 2, ..Default::default() };
    t.file("usr/bin/prog", &gfxscan::testing::dynamic_elf(&spec));
    t.file("proc/sys/kernel/osrelease", b"6.12.0-2\n");
    t.file("proc/cmdline", b"BOOT_IMAGE=/vmlinuz root=/dev/sda1 amdgpu.uni_mes=1 quiet\n");
    let r =
        gfxscan(&["check", "--gpu", "gfx1201", "--exe", "/usr/bin/prog", "--root", &root, "--json", "-q"]);
    let d = r.json()["drivers"][0].clone();
    assert_eq!((d["outcome"].as_str(), d["settings"]["uni_mes"].as_i64()), (Some("ok"), Some(1)), "{d:#}");
}

/// A search for a DKMS module is bounded whatever the root: folders reached through many links
/// (and link loops) are looked into once, and the entries looked at in all are capped.
#[test]
fn the_search_for_a_module_is_bounded() {
    let t = Tree::new();
    let rel = "lib/modules/6.9.0-many";
    for i in 0..3000 {
        t.file(format!("{rel}/updates/big/f{i:05}"), b"");
    }
    for i in 0..300 {
        t.symlink("big", format!("{rel}/updates/link{i:03}"));
    }
    t.symlink(".", format!("{rel}/updates/big/loop"));
    let info = [GC_11_0_0, b"vermagic=6.9.0-many SMP\0"].concat();
    t.file(format!("{rel}/updates/zz/amdgpu.ko"), &module(&info));
    let started = std::time::Instant::now();
    let (_, snap) = t.scan_json(&[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(snap["drivers"][0]["path"], format!("{rel}/updates/zz/amdgpu.ko"), "{:#}", snap["drivers"]);
}

/// A release's name comes from the root (its folder, the module's `vermagic`): `scan`'s Kernel
/// line and `check`'s driver line reach the terminal through its escaping writer
/// (`report::safe::TerminalSafe`), a control character never raw.
#[test]
fn a_release_name_with_control_characters_is_shown_escaped() {
    let t = Tree::new();
    let release = "6.1.0-\u{1b}]0;pwned\u{7}";
    // The release the module names for itself, and its folder, both carry them.
    let info = [GC_11_0_0, format!("vermagic={release} SMP\0").as_bytes()].concat();
    t.file(format!("lib/modules/{release}/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko"), &module(&info));
    with_gc_11_0_0_firmware(&t);
    let root = t.root().to_str().unwrap().to_string();
    let scan = gfxscan(&["scan", "-q", &root]);
    assert!(scan.stdout.contains("Kernel: amdgpu of Linux 6.1.0-"), "{}", scan.stdout);
    let check = gfxscan(&["check", "--gpu", "gfx1100", "-q", &root]);
    for out in [&scan.stdout, &check.stdout] {
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    }
}
