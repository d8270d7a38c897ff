//! One question, one answer (issue 22): the runtime's matching rules through the real binary,
//! and every view that answers "does this library serve this GPU" held equal to `check`.

use std::collections::BTreeMap;
use std::ffi::OsString;

use serde_json::Value;

use gfxscan::parse::pe::fixture::pe_image;
use gfxscan::testing::{bundle, code_object, fatbin, host_elf, CodeObjectSpec, HostSection};

use crate::fixtures::{co, hip, hip_bundle, GENERIC_V1, GFX1030, GFX1100, GFX11_GENERIC, GFX900, HOST};
use crate::util::{gfxscan, Tree};

/// `EF_AMDGPU_MACH` of gfx9-generic (targets.toml).
const GFX9_GENERIC: u32 = 0x051;

/// A generic code object (V6) for `mach`, generic version 1.
fn generic_co(mach: u32) -> Vec<u8> {
    code_object(&CodeObjectSpec::new(4, mach | GENERIC_V1, &["k0"]))
}

/// A host library with one fat binary holding `bundles`.
fn host_with(bundles: &[Vec<u8>]) -> Vec<u8> {
    host_elf(&[HostSection::rodata(".rodata", b"lib\0"), HostSection::hip_fatbin(&fatbin(bundles))])
}

/// `check --json` of `root` for `gpus`: every verdict as (library, GPU) → status.
fn check_statuses(root: &str, gpus: &[&str]) -> BTreeMap<(String, String), String> {
    let mut args: Vec<OsString> = vec!["check".into(), "-q".into(), "--json".into(), root.into()];
    for g in gpus {
        args.extend(["--gpu".into(), OsString::from(g)]);
    }
    let run = gfxscan(args);
    let report = run.json();
    let mut out = BTreeMap::new();
    for install in report["installs"].as_array().expect("installs") {
        for gpu in install["gpus"].as_array().expect("gpus") {
            let name = gpu["device"]["effective"]["target_id"].as_str().expect("target").to_string();
            for v in gpu["verdicts"].as_array().expect("verdicts") {
                let lib = v["library"].as_str().expect("library");
                let lib = lib.strip_prefix(root).unwrap_or(lib).to_string();
                out.insert((lib, name.clone()), v["status"].as_str().expect("status").to_string());
            }
        }
    }
    out
}

fn rank(status: Option<&String>) -> u8 {
    match status.map(String::as_str) {
        Some("ok") => 0,
        Some("warn") => 1,
        _ => 2,
    }
}

/// For each GPU, how many libraries `check` judges worse on `new` than on `old`, and how
/// many losses `diff` reports for it: the two must be equal for every GPU.
fn assert_diff_agrees_with_check(old: &str, new: &str, gpus: &[&str]) -> BTreeMap<String, usize> {
    let (a, b) = (check_statuses(old, gpus), check_statuses(new, gpus));
    // Only libraries on both sides are compared here: one gone costs what its loader does
    // without it (`judge_absent`), which `check` cannot say (see the test after these).
    let libs = |m: &BTreeMap<(String, String), String>| {
        m.keys().map(|k| k.0.clone()).collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(libs(&a), libs(&b), "the same libraries on both sides");
    let mut worse: BTreeMap<String, usize> = gpus.iter().map(|g| (g.to_string(), 0)).collect();
    for key in a.keys().chain(b.keys()).collect::<std::collections::BTreeSet<_>>() {
        if rank(b.get(key)) > rank(a.get(key)) {
            *worse.entry(key.1.clone()).or_default() += 1;
        }
    }
    let mut args: Vec<OsString> = vec!["diff".into(), "-q".into(), "--json".into(), old.into(), new.into()];
    args.push("--fail-on-loss".into());
    let run = gfxscan(args);
    let d = run.json();
    let mut lost: BTreeMap<String, usize> = gpus.iter().map(|g| (g.to_string(), 0)).collect();
    for l in d["losses"].as_array().expect("losses") {
        for t in l["targets"].as_array().expect("targets").iter().filter_map(Value::as_str) {
            if let Some(n) = lost.get_mut(t) {
                *n += 1;
            }
        }
    }
    assert_eq!(worse, lost, "check (libraries worse per GPU) vs diff (losses per GPU): {d:#}");
    let any = worse.values().any(|n| *n > 0);
    run.expect_code(if any { 1 } else { 0 });
    worse
}

/// A library whose second bundle drops gfx1100 is MISSING under `check --gpu gfx1100`; `diff
/// --fail-on-loss` says so too (exit 1), and says nothing for gfx900, which both keep.
#[test]
fn diff_loses_what_check_misses_when_one_bundle_drops_a_target() {
    let (a9, a11) = (co(GFX900, 0, 1), co(GFX1100, 0, 1));
    let both = hip_bundle(&[("gfx900", &a9), ("gfx1100", &a11)]);
    let only900 = hip_bundle(&[("gfx900", &a9)]);
    let t = Tree::new();
    t.file("old/lib/librocsparse.so.1", &host_with(&[both.clone(), both.clone()]));
    t.file("new/lib/librocsparse.so.1", &host_with(&[both, only900]));
    let (old, new) = (t.path("old").display().to_string(), t.path("new").display().to_string());
    let worse = assert_diff_agrees_with_check(&old, &new, &["gfx900", "gfx1100", "gfx1030"]);
    assert_eq!(worse.get("gfx1100"), Some(&1));
    assert_eq!(worse.get("gfx900"), Some(&0));
}

/// A copy of the real sample in `t`, to take files out of.
fn sample_copy(t: &Tree) -> std::path::PathBuf {
    let copy = t.path("sample");
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let status = std::process::Command::new("cp").arg("-a").arg(sample).arg(&copy).status().expect("cp");
    assert!(status.success());
    copy
}

/// The same equality on the real sample, against a copy that lost gfx1030's MIOpen database
/// and device-library bitcode and rocBLAS's gfx900 lazy index (both ways round).
#[test]
fn diff_agrees_with_check_on_the_sample() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let t = Tree::new();
    let copy = sample_copy(&t);
    for gone in [
        "opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx900.dat",
        "opt/rocm/share/miopen/db/gfx1030_36.db",
        "opt/rocm/amdgcn/bitcode/oclc_isa_version_1030.bc",
    ] {
        std::fs::remove_file(copy.join(gone)).expect("remove");
    }
    let gpus = ["gfx900", "gfx1030", "gfx1100", "gfx906:sramecc+:xnack-"];
    let worse = assert_diff_agrees_with_check(sample, &copy.display().to_string(), &gpus);
    assert!(worse.get("gfx1030").is_some_and(|n| *n >= 2), "{worse:?}");
    let better = assert_diff_agrees_with_check(&copy.display().to_string(), sample, &gpus);
    assert!(better.values().all(|n| *n == 0), "{better:?}");
}

/// comgr needs five parts after the offload kind: a pre-ROCm-4.1 entry
/// (`hip-amdgcn-amd-amdhsa-gfx900`) never matches, whatever its ELF says, and check says why.
#[test]
fn pre_4_1_bundle_ids_never_match() {
    let t = Tree::new();
    let old = bundle(&[(HOST, &[]), ("hip-amdgcn-amd-amdhsa-gfx900", &co(GFX900, 0, 1))], 4096);
    t.file("lib/libold.so", &host_with(&[old]));
    let run = gfxscan(["check", "-q", "--json", &t.root_str(), "--gpu", "gfx900"]);
    run.expect_code(1);
    let v = &run.json()["installs"][0]["gpus"][0]["verdicts"][0];
    assert_eq!(v["status"], "missing", "{v:#}");
    assert!(v["detail"].as_str().is_some_and(|d| d.contains("pre-ROCm-4.1")), "{v:#}");
}

/// clr `ExtractFatBinaryUsingCOMGR` prefers native code to generic code, whatever the order in
/// the bundle.
#[test]
fn native_code_loads_before_generic_code_listed_first() {
    let t = Tree::new();
    let b = hip_bundle(&[("gfx11-generic", &generic_co(GFX11_GENERIC)), ("gfx1100", &co(GFX1100, 0, 1))]);
    t.file("lib/libk.so", &host_with(&[b]));
    let run = gfxscan(["check", "-q", "--json", &t.root_str(), "--gpu", "gfx1100", "--gpu", "gfx1101"]);
    run.expect_code(0);
    let r = run.json();
    let gpus = r["installs"][0]["gpus"].as_array().expect("gpus");
    assert_eq!(gpus[0]["verdicts"][0]["loads"], hip("gfx1100"));
    assert!(gpus[0]["verdicts"][0].get("via_generic").is_none());
    assert_eq!(gpus[1]["verdicts"][0]["loads"], hip("gfx11-generic"));
    assert_eq!(gpus[1]["verdicts"][0]["via_generic"], "gfx11-generic");
}

/// clr `TargetToGeneric` puts the device's features back on the generic name, and comgr
/// refuses `gfx9-generic:sramecc±`: a gfx906 never loads gfx9-generic code; a gfx900 does.
#[test]
fn gfx906_never_loads_gfx9_generic_code() {
    let t = Tree::new();
    t.file("lib/libsolver.so", &host_with(&[hip_bundle(&[("gfx9-generic", &generic_co(GFX9_GENERIC))])]));
    let run = gfxscan([
        "check",
        "-q",
        "--json",
        &t.root_str(),
        "--gpu",
        "gfx906:sramecc+:xnack-",
        "--gpu",
        "gfx900",
    ]);
    run.expect_code(1);
    let r = run.json();
    let gpus = r["installs"][0]["gpus"].as_array().expect("gpus");
    let v906 = &gpus[0]["verdicts"][0];
    assert_eq!(v906["status"], "missing", "{v906:#}");
    assert!(v906["detail"].as_str().is_some_and(|d| d.contains("has no sramecc")), "{v906:#}");
    assert_eq!(gpus[1]["verdicts"][0]["status"], "ok");
    // The library matrix marks gfx900 as served through its generic target, not gfx906.
    let scan = gfxscan([
        "scan",
        "-q",
        &t.root_str(),
        "--by",
        "library",
        "--only",
        "gfx900,gfx906",
        "--format",
        "csv",
    ]);
    scan.expect_code(0);
    let row = scan.stdout.lines().find(|l| l.contains("libsolver.so")).expect("a row");
    assert!(row.ends_with(",generic,"), "{}", scan.stdout);
}

/// A Windows `.dll` (or `.pyd`) with device code is a host library in every view: `check`'s
/// kind, and its code counted as host-library code, not as standalone code objects.
#[test]
fn a_dll_with_device_code_is_a_host_library_everywhere() {
    let t = Tree::new();
    let fat = fatbin(&[hip_bundle(&[("gfx1030", &co(GFX1030, 0, 2))])]);
    t.file("bin/rocsparse.dll", &pe_image(&[(".text", &[0xc3; 16]), (".hip_fat", &fat)]));
    t.file("ext/_kernels.pyd", &pe_image(&[(".hip_fat", &fat)]));
    let run = gfxscan(["check", "-q", "--json", &t.root_str(), "--gpu", "gfx1030"]);
    run.expect_code(0);
    let r = run.json();
    let kinds: Vec<&str> = r["installs"][0]["gpus"][0]["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .filter_map(|v| v["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["host-library", "host-library"]);
    let (_, snap) = t.scan_json(&[]);
    let fam = &snap["families"];
    assert_eq!(fam["host-library-code-objects"]["gfx1030"], 2, "{fam:#}");
    assert!(fam.get("standalone-code-objects").is_none_or(|m| m.get("gfx1030").is_none()), "{fam:#}");
}

/// Headers never contradict what is below them: the scan header names findings beside the files
/// it could not read (no "0 problems" above "broken as shipped (4)"), and an install whose
/// verdicts are OK over files not read in full is "OK as far as read", above INCOMPLETE.
#[test]
fn headers_agree_with_what_follows() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let scan = gfxscan(["scan", "-q", sample]);
    let head: Vec<&str> = scan.stdout.lines().take_while(|l| !l.is_empty()).map(str::trim).collect();
    let head = head.join(" ");
    assert!(head.contains("· all read · 4 findings Served: none of "), "{head}");
    assert!(scan.stdout.contains("Findings: broken as shipped (4)"), "{}", scan.stdout);

    let t = Tree::new();
    t.file("opt/rocm/lib/libok.so", &host_with(&[hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))])]));
    let mut cut = hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]);
    cut.truncate(cut.len() / 2);
    t.file("opt/rocm/lib/kernels.hsaco", &cut);
    let run = gfxscan(["check", "-q", &t.root_str(), "--gpu", "gfx1100"]);
    run.expect_code(3);
    let lines: Vec<&str> =
        run.stdout.lines().filter(|l| l.starts_with("Install") || l.starts_with("GPU")).collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    for l in lines {
        assert!(l.ends_with("OK as far as read (1 file not read in full)"), "{l}\n{}", run.stdout);
    }
    assert!(run.stdout.contains("INCOMPLETE"), "{}", run.stdout);
    let json = gfxscan(["check", "-q", "--json", &t.root_str(), "--gpu", "gfx1100"]).json();
    assert_eq!(json["installs"][0]["unread"], 1, "{json:#}");
}

/// A count and a verdict read the same databases: the sample's OpenCL find-DB for gfx900
/// (MIOpen's HIP build never opens it; MIOpen find_db.cpp `GetInstalledPath`) counts in its own
/// column, not as FIND-DB; the library view gives MIOpen's folder no mark for gfx900; and
/// `check --gpu gfx900` finds no MIOpen database.
#[test]
fn opencl_find_dbs_are_counted_apart_from_what_a_gpu_uses() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let (_, snap) = {
        let run = gfxscan(["scan", "-q", "--json", sample]);
        let v = run.json();
        (run, v)
    };
    let fam = &snap["families"];
    assert!(fam.get("miopen-find-db-records").is_none_or(|m| m.get("gfx900").is_none()), "{fam:#}");
    assert_eq!(fam["miopen-unread-find-db-records"]["gfx900"], 1711, "{fam:#}");
    let lib =
        gfxscan(["scan", "-q", sample, "--by", "library", "--only", "gfx900,gfx1030", "--format", "csv"]);
    let row = lib.stdout.lines().find(|l| l.contains("share/miopen/db/")).expect("MIOpen's folder");
    assert!(row.ends_with(",,own") || row.ends_with(",none,own"), "{}", lib.stdout);
    let check = gfxscan(["check", "-q", "--json", sample, "--gpu", "gfx900"]).json();
    let miopen: Vec<&Value> = check["installs"]
        .as_array()
        .expect("installs")
        .iter()
        .flat_map(|i| i["gpus"][0]["verdicts"].as_array().expect("verdicts"))
        .filter(|v| v["kind"] == "miopen")
        .collect();
    assert_eq!(miopen.len(), 1);
    assert_eq!(miopen[0]["status"], "warn", "{:#}", miopen[0]);
}

/// One name, one number: "code objects" is every code object of a target in every view and
/// format (the table's --wide column, CSV's `code_objects`, JSON's `targets`), and the table's
/// own column, which leaves out Tensile code and the runtime's, has its own name ("library
/// code"), the same in the scan table, the diff pivot and the diff's HTML charts.
#[test]
fn code_objects_count_the_same_thing_in_every_view() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let snap = gfxscan(["scan", "-q", "--json", sample]).json();
    let md = gfxscan(["scan", "-q", sample, "--wide", "--format", "markdown"]);
    let rows: Vec<Vec<String>> = md
        .stdout
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|-"))
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().replace(',', "")).collect())
        .collect();
    let head = &rows[0];
    let col = |name: &str| head.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name}: {head:?}"));
    assert_eq!(head.iter().filter(|h| h.contains("code objects")).count(), 1, "{head:?}");
    let csv = gfxscan(["scan", "-q", sample, "--format", "csv"]);
    let csv_rows: Vec<Vec<&str>> = csv.stdout.lines().map(|l| l.split(',').collect()).collect();
    let csv_col = csv_rows[0].iter().position(|h| *h == "code_objects").expect("code_objects");
    let fam = |row: &str, t: &str| snap["families"][row][t].as_u64().unwrap_or(0);
    for r in &rows[1..] {
        let t = r[0].as_str();
        let all = snap["targets"][t]["code_objects"].as_u64().unwrap_or(0);
        let cell = |i: usize| r[i].parse::<u64>().unwrap_or(0);
        assert_eq!(cell(col("code objects")), all, "{t}: --wide");
        let csv_row = csv_rows.iter().find(|c| c[0] == t).expect("CSV row");
        assert_eq!(csv_row[csv_col].parse::<u64>().ok(), Some(all), "{t}: CSV");
        let library = fam("host-library-code-objects", t) + fam("standalone-code-objects", t)
            - fam("runtime-internal-code-objects", t);
        assert_eq!(cell(col("library code")), library, "{t}: library code");
    }
    let before = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/sample-before.json");
    let text = gfxscan(["diff", "-q", "-v", before, sample]);
    assert!(text.stdout.contains("LIBRARY"), "{}", text.stdout);
    let html = gfxscan(["diff", "-q", before, sample, "--format", "html"]);
    let captions: Vec<&str> =
        html.stdout.split("<figcaption>").skip(1).filter_map(|s| s.split('<').next()).collect();
    assert!(!captions.is_empty(), "{}", html.stdout);
    let layers: Vec<String> = gfxscan::aggregate::layers().iter().map(|l| l.header.to_string()).collect();
    for c in captions {
        assert!(layers.iter().any(|l| l == c), "chart {c:?} is no layer of the text pivot");
    }
}

/// A typed snapshot (schema version 2): a code object's place is one tagged `location`, and a
/// version 1 snapshot (`docs/examples/sample-before.json`, written by an earlier gfxscan) is
/// still read, its `container` and bundle fields turned into the same locations.
#[test]
fn version_1_snapshots_read_into_typed_locations() {
    let before = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/sample-before.json");
    let text = std::fs::read_to_string(before).expect("sample-before.json");
    let v1: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v1["schema_version"], 1);
    let snap =
        gfxscan::source::snapshot::parse_snapshot(text.as_bytes()).expect("a version 1 snapshot reads");
    let old_files = v1["files"].as_array().expect("files");
    assert_eq!(snap.files.len(), old_files.len());
    for (f, old) in snap.files.iter().zip(old_files) {
        for (c, o) in f.code_objects.iter().zip(old["code_objects"].as_array().expect("code objects")) {
            let loc = serde_json::to_value(&c.location).expect("location");
            let container = o["container"].as_str().expect("container");
            let want = match container {
                "file" => "file",
                "bundle" => "bundle-entry",
                "embedded" => "embedded",
                "offload-binary" => "offload-image",
                _ => "kpack-kernel",
            };
            assert_eq!(loc["in"], want, "{}", f.path.path);
            if container == "bundle" {
                assert_eq!(loc["entry_id"], o["bundle_entry_id"]);
                assert_eq!(loc["bundle_offset"], o["bundle_offset"]);
                assert_eq!(loc["format"], o["bundle_format"]);
            }
        }
    }
    // Each family's facts moved into its own object.
    for (f, old) in snap.files.iter().zip(old_files) {
        let (Some(a), o) = (&f.artifact, &old["artifact"]) else { continue };
        if let Some(prefix) = o["prefix"].as_str() {
            assert_eq!(
                a.firmware.as_ref().and_then(|x| x.prefix.as_deref()),
                Some(prefix),
                "{}",
                f.path.path
            );
        }
        if let Some(n) = o["records"].as_u64() {
            assert_eq!(a.records(), Some(n), "{}", f.path.path);
        }
        if let Some(lib) = o["library"].as_str() {
            assert_eq!(a.component().map(|c| c.name()), Some(lib), "{}", f.path.path);
        }
        assert_eq!(
            a.placeholders().len(),
            o["placeholders"].as_array().map_or(0, Vec::len),
            "{}",
            f.path.path
        );
    }
    let now = gfxscan(["scan", "-q", "--json", concat!(env!("CARGO_MANIFEST_DIR"), "/sample")]).json();
    assert_eq!(now["schema_version"], 2);
    let any = now["files"]
        .as_array()
        .expect("files")
        .iter()
        .find_map(|f| f["code_objects"].as_array().and_then(|c| c.first()))
        .expect("a code object");
    assert!(any.get("location").is_some() && any.get("container").is_none(), "{any:#}");
}

/// An install's own HIP runtime decides how its libraries match (its `libamdhip64` version):
/// HIP 6.0-6.3 ask for no generic target, HIP 5.x's legacy unbundler reads pre-4.1 entries by
/// their ELF, ROCm 7.x does neither the one nor the other; the install says which runtime it
/// ships and whose rules its verdicts follow.
#[test]
fn an_installs_own_hip_runtime_decides_how_it_matches() {
    let generic = hip_bundle(&[("gfx11-generic", &generic_co(GFX11_GENERIC))]);
    let old_id = bundle(&[(HOST, &[]), ("hip-amdgcn-amd-amdhsa-gfx900", &co(GFX900, 0, 1))], 4096);
    let runtime = host_elf(&[HostSection::rodata(".rodata", b"hip\0")]);
    let verdict = |hip: &str, lib: &[u8], gpu: &str| -> (i32, Value) {
        let t = Tree::new();
        t.file("opt/rocm/lib/libk.so", &host_with(&[lib.to_vec()]));
        if !hip.is_empty() {
            t.file(format!("opt/rocm/lib/{hip}"), &runtime);
        }
        let run = gfxscan(["check", "-q", "--json", &t.root_str(), "--gpu", gpu]);
        let r = run.json();
        let inst = r["installs"].as_array().expect("installs").iter().find(|i| i["kind"] == "rocm").cloned();
        (run.code, inst.unwrap_or(Value::Null))
    };
    let (code, i) = verdict("libamdhip64.so.6.2.41133", &generic, "gfx1100");
    assert_eq!(code, 1, "{i:#}");
    assert_eq!(i["runtime"]["version"], "6.2.41133");
    let detail = i["gpus"][0]["verdicts"][0]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("asks for no generic target"), "{detail}");
    assert_eq!(verdict("libamdhip64.so.7.2.0", &generic, "gfx1100").0, 0);
    assert_eq!(verdict("", &generic, "gfx1100").0, 0);
    assert_eq!(verdict("libamdhip64.so.5.7.31921", &old_id, "gfx900").0, 0);
    assert_eq!(verdict("libamdhip64.so.6.4.43484", &old_id, "gfx900").0, 1);
}

/// A library gone from the new side costs what its loader does without it (`judge_absent`):
/// MIOpen without its databases runs with default tuning, so removing the sample's MIOpen folder
/// loses gfx1030 (its perf DB: OK → WARN) and nothing for gfx900 or gfx1100, which had none.
#[test]
fn a_library_gone_costs_what_its_loader_does_without_it() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let t = Tree::new();
    let copy = sample_copy(&t);
    std::fs::remove_dir_all(copy.join("opt/rocm/share/miopen")).expect("remove MIOpen's folder");
    let copy = copy.display().to_string();
    let run = gfxscan(["diff", "-q", "--json", sample, &copy, "--only", "gfx900,gfx1030,gfx1100"]);
    let d = run.json();
    let miopen: Vec<&Value> =
        d["losses"].as_array().expect("losses").iter().filter(|l| l["library"] == "miopen").collect();
    assert_eq!(miopen.len(), 1, "{d:#}");
    assert_eq!(miopen[0]["targets"], serde_json::json!(["gfx1030"]), "{d:#}");
    assert_eq!(miopen[0]["how"], "gone");
}

/// Libraries pair across the sides by their place, not only by name: a new install added beside
/// an unchanged one (its `libx.so` without gfx1201) is new, and the unchanged one loses nothing
/// (`check` judges it OK on both sides); an upgrade that moves the one library pairs it anyway.
#[test]
fn a_new_install_beside_an_unchanged_one_is_no_loss() {
    const GFX1201: u32 = 0x04e;
    let with = host_with(&[hip_bundle(&[("gfx1201", &co(GFX1201, 0, 1)), ("gfx1100", &co(GFX1100, 0, 1))])]);
    let without = host_with(&[hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))])]);
    let t = Tree::new();
    t.file("old/opt/rocm-6.3.0/lib/libx.so", &with);
    t.file("new/opt/rocm-6.3.0/lib/libx.so", &with);
    t.file("new/opt/rocm-7.0.0/lib/libx.so", &without);
    t.file("moved/opt/rocm-7.0.0/lib/libx.so", &without);
    let (old, new, moved) = (t.path("old"), t.path("new"), t.path("moved"));
    let (old, new, moved) =
        (old.to_str().unwrap_or(""), new.to_str().unwrap_or(""), moved.to_str().unwrap_or(""));
    let run = gfxscan(["diff", "-q", "--json", "--fail-on-loss", old, new]);
    run.expect_code(0);
    assert_eq!(run.json()["losses"], serde_json::json!([]));
    let run = gfxscan(["diff", "-q", "--json", "--fail-on-loss", old, moved]);
    run.expect_code(1);
    assert_eq!(run.json()["losses"][0]["targets"], serde_json::json!(["gfx1201"]));
}

/// Names as people type them (issue 23): products (case and spaces folded), the override and
/// KFD version spellings, target IDs with features in `--only`; an unknown name gets the
/// closest targets with their products, and no GPU found says how to name one.
#[test]
fn gpus_and_targets_named_as_people_type_them() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    for name in ["gfx1031", "GFX1031", "rx6700xt", "RX 6700 XT", "Radeon RX 6700 XT", "10.3.1", "100301"] {
        let r = gfxscan(["check", "-q", "--json", sample, "--gpu", name]).json();
        assert_eq!(r["devices"][0]["effective"]["target_id"], "gfx1031", "{name}");
    }
    let unknown = gfxscan(["check", "-q", sample, "--gpu", "gfx1035x"]);
    unknown.expect_code(2);
    assert!(unknown.stderr.contains("closest: gfx1035 (Radeon 680M)"), "{}", unknown.stderr);
    let only = gfxscan(["scan", "-q", "--json", sample, "--only", "gfx90a:xnack+,rx7900xtx"]).json();
    let keys: std::collections::BTreeSet<&String> =
        only["targets"].as_object().expect("targets").keys().collect();
    assert_eq!(
        keys,
        ["gfx1100", "gfx90a"].iter().map(|s| s.to_string()).collect::<Vec<_>>().iter().collect()
    );
    let none = gfxscan(["check", "-q", sample, "--sysfs-root", sample]);
    none.expect_code(2);
    assert!(none.stderr.contains("name the GPU to check with --gpu"), "{}", none.stderr);
}

/// Issue 34, item 4: the install's HIP 6.4 (`libamdhip64.so.6.4.*`) sends an uncompressed bundle
/// holding generic code to its legacy unbundler (clr 6.4 `hip_fatbin.cpp` `ExtractFatBinary`,
/// `containGenericTarget`), which maps gfx906 to gfx9-generic without comgr's feature check: an
/// MI50 loads it (ROCm 7.x: never). A bundle listing gfx11-generic before gfx1100 gives a
/// gfx1100 the generic entry there, the native one under 7.x. The same bundle compressed goes
/// to comgr's unbundle action: HIP 6.4.0 (build 43482, the release table's) asks it for native
/// code only, 6.4.1 on for generic code too. The text names no other install's runtime.
#[test]
fn hip_6_4_judges_each_bundle_by_the_unbundler_it_goes_to() {
    use gfxscan::vocab::codec::Codec;
    let g9 = hip_bundle(&[("gfx9-generic", &generic_co(GFX9_GENERIC))]);
    let g11_first =
        hip_bundle(&[("gfx11-generic", &generic_co(GFX11_GENERIC)), ("gfx1100", &co(GFX1100, 0, 1))]);
    let g11_ccob =
        gfxscan::testing::ccob(3, Codec::Zstd, &hip_bundle(&[("gfx11-generic", &generic_co(GFX11_GENERIC))]));
    let runtime = host_elf(&[HostSection::rodata(".rodata", b"hip\0")]);
    let check = |hip: &str, lib: &[u8], gpu: &str| -> (i32, Value, String) {
        let t = Tree::new();
        t.file("opt/rocm/lib/libk.so", &host_with(&[lib.to_vec()]));
        t.file(format!("opt/rocm/lib/{hip}"), &runtime);
        let run = gfxscan(["check", "-q", "--json", &t.root_str(), "--gpu", gpu]);
        let text = gfxscan(["check", "-q", &t.root_str(), "--gpu", gpu]).stdout;
        (run.code, run.json()["installs"][0]["gpus"][0]["verdicts"][0].clone(), text)
    };
    let (code, v, text) = check("libamdhip64.so.6.4.43484", &g9, "gfx906:sramecc+:xnack-");
    assert_eq!((code, v["via_generic"].as_str()), (0, Some("gfx9-generic")), "{v:#}");
    assert!(text.contains("HIP 6.4: comgr") && !text.contains("Verdicts follow the ROCm 7.x"), "{text}");
    assert_eq!(check("libamdhip64.so.7.2.0", &g9, "gfx906:sramecc+:xnack-").0, 1);
    let (_, v, _) = check("libamdhip64.so.6.4.43484", &g11_first, "gfx1100");
    assert_eq!(v["loads"], "hipv4-amdgcn-amd-amdhsa--gfx11-generic", "{v:#}");
    let (_, v, _) = check("libamdhip64.so.7.2.0", &g11_first, "gfx1100");
    assert_eq!(v["loads"], "hipv4-amdgcn-amd-amdhsa--gfx1100", "{v:#}");
    let (code, v, _) = check("libamdhip64.so.6.4.43482", &g11_ccob, "gfx1100");
    assert_eq!(code, 1, "{v:#}");
    assert!(
        v["detail"].as_str().unwrap_or_default().contains("HIP 6.4.0 asks for the device's own code only"),
        "{v:#}"
    );
    assert_eq!(check("libamdhip64.so.6.4.43483", &g11_ccob, "gfx1100").0, 0);
}
