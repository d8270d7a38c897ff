//! `gfxscan scan --json` over the mixed tree: every container kind, the decoys, the snapshot's
//! fields and per-target totals.

use serde_json::{json, Value};

use crate::fixtures::{hip, hip_bundle, mixed, Mixed, GFX1100, GFX942, SRAMECC_ON, XNACK_OFF};
use crate::util::{file_paths, file_record, offset_of, problems};

fn len(b: &[u8]) -> u64 {
    b.len() as u64
}

/// Total size of every regular file under `dir`.
fn tree_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let e = e.expect("dir entry");
        let ft = e.file_type().expect("file type");
        if ft.is_dir() {
            total += tree_bytes(&e.path());
        } else if ft.is_file() {
            total += e.metadata().expect("metadata").len();
        }
    }
    total
}

fn scan_mixed() -> (Mixed, Value) {
    let m = mixed();
    let (run, snap) = m.tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(problems(&snap), vec![], "the mixed tree is well-formed");
    (m, snap)
}

#[test]
fn snapshot_header_roots_and_summary() {
    let (m, snap) = scan_mixed();
    assert_eq!(snap["schema_version"], 2);
    assert_eq!(snap["tool"]["name"], "gfxscan");
    assert_eq!(snap["tool"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(snap["roots"], json!([m.tree.root_str()]));
    assert_eq!(
        snap["summary"],
        json!({
            "files": 8,
            "bytes": tree_bytes(m.tree.root()),
            "files_with_device_code": 6,
            "code_objects": 11,
            "symlinks": 0,
            "kinds": {
                "amdgpu-elf": 1,
                "host-elf": 4,
                "offload-bundle": 1,
                "compressed-offload-bundle": 2,
            },
        })
    );
}

/// Files with device code only (not plain.so's string, not sycl.o's SPIR-V), sorted by path.
#[test]
fn files_are_the_device_code_holders_sorted() {
    let (_m, snap) = scan_mixed();
    let paths = file_paths(&snap);
    assert_eq!(
        paths,
        ["foo.txt", "lib/a.co", "lib/b.co", "lib/libx.so", "lib/rocblas/kernels.hsaco", "obj/fat.o"]
    );
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    let kinds: Vec<(&str, &Value, &Value)> = snap["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| (f["path"].as_str().expect("path"), &f["kind"], &f["bundles"]))
        .collect();
    assert_eq!(
        kinds,
        [
            ("foo.txt", &json!("amdgpu-elf"), &json!(0)),
            ("lib/a.co", &json!("compressed-offload-bundle"), &json!(1)),
            ("lib/b.co", &json!("compressed-offload-bundle"), &json!(1)),
            ("lib/libx.so", &json!("host-elf"), &json!(3)),
            ("lib/rocblas/kernels.hsaco", &json!("offload-bundle"), &json!(1)),
            ("obj/fat.o", &json!("host-elf"), &json!(0)),
        ]
    );
}

/// A code object named `foo.txt` is found by its magic; its record is exact.
#[test]
fn standalone_code_object_classified_by_magic() {
    let (m, snap) = scan_mixed();
    assert_eq!(
        *file_record(&snap, "foo.txt"),
        json!({
            "root": 0,
            "path": "foo.txt",
            "kind": "amdgpu-elf",
            "size": len(&m.foo_txt),
            "bundles": 0,
            "code_objects": [{
                "processor": "gfx90a",
                "target_id": "gfx90a:xnack+",
                "code_object_version": 4,
                "size": len(&m.foo_txt),
                "kernels": 2,
                "location": {"in": "file"},
                "offset": 0,
                "e_flags": 0x33f,
            }],
        })
    );
}

/// A `.hsaco` that is a plain bundle: the host entry is dropped, three device entries remain.
#[test]
fn plain_bundle_file_entries() {
    let (m, snap) = scan_mixed();
    let f = file_record(&snap, "lib/rocblas/kernels.hsaco");
    assert_eq!(f["size"], len(&m.hsaco));
    let cos = f["code_objects"].as_array().expect("code objects");
    let got: Vec<Value> = cos
        .iter()
        .map(|c| {
            json!([
                c["processor"],
                c["target_id"],
                c["kernels"],
                c["size"],
                c["offset"],
                c["location"]["entry_id"]
            ])
        })
        .collect();
    let at = |co: &[u8]| offset_of(&m.hsaco, co);
    assert_eq!(
        got,
        [
            json!(["gfx900", "gfx900", 1, len(&m.hsaco_900), at(&m.hsaco_900), hip("gfx900")]),
            json!([
                "gfx906",
                "gfx906:sramecc+:xnack-",
                2,
                len(&m.hsaco_906),
                at(&m.hsaco_906),
                hip("gfx906:sramecc+:xnack-")
            ]),
            json!(["gfx1100", "gfx1100", 3, len(&m.hsaco_1100), at(&m.hsaco_1100), hip("gfx1100")]),
        ]
    );
    for c in cos {
        assert_eq!(c["location"]["in"], "bundle-entry");
        assert_eq!(c["location"]["format"], "plain");
        assert_eq!(c["location"]["compression"], Value::Null);
        assert_eq!(c["location"]["bundle_offset"], 0);
        assert_eq!(c["code_object_version"], 4);
        assert_eq!(c["offset"].as_u64().expect("offset") % 4096, 0, "entries are 4096-aligned");
    }
}

/// CCOB v2 zstd and v3 zlib files: format, compression, and offsets inside the inflated bundle.
#[test]
fn compressed_bundle_files() {
    let (m, snap) = scan_mixed();
    let inflated_a = hip_bundle(&[("gfx942:xnack-", &m.a_942)]);
    let a_file = file_record(&snap, "lib/a.co");
    let a = &a_file["code_objects"];
    assert_eq!(
        *a,
        json!([{
            "processor": "gfx942",
            "target_id": "gfx942:xnack-",
            "code_object_version": 4,
            "size": len(&m.a_942),
            "kernels": 4,
            "location": {
                "in": "bundle-entry",
                "entry_id": hip("gfx942:xnack-"),
                "bundle_offset": 0,
                "format": "ccob-v2",
                "compression": "zstd",
                // The file is the bundle: stored as the file, inflated as the plain bundle.
                "bundle_sizes": [a_file["size"].clone(), json!(inflated_a.len())],
            },
            "offset": offset_of(&inflated_a, &m.a_942),
            "e_flags": GFX942 | XNACK_OFF,
        }])
    );
    let b = &file_record(&snap, "lib/b.co")["code_objects"];
    assert_eq!(b.as_array().map(Vec::len), Some(1));
    let b = &b[0];
    assert_eq!(
        [
            &b["processor"],
            &b["target_id"],
            &b["kernels"],
            &b["location"]["format"],
            &b["location"]["compression"]
        ],
        [&json!("gfx1030"), &json!("gfx1030"), &json!(5), &json!("ccob-v3"), &json!("zlib")]
    );
    assert_eq!(b["size"], len(&m.b_1030));
}

/// `.hip_fatbin` with plain, CCOB v1 zlib and CCOB v3 zstd bundles, plus a raw code object in
/// `.rodata`.
#[test]
fn host_library_fatbin_and_embedded() {
    let (m, snap) = scan_mixed();
    let f = file_record(&snap, "lib/libx.so");
    assert_eq!(f["size"], len(&m.libx));
    assert_eq!(f["bundles"], 3);
    let sec = offset_of(&m.libx, &m.fat);
    assert_eq!(sec % 4096, 0, ".hip_fatbin is page-aligned in the fixture");
    let [b0, b1, b2] = m.fat_bundle_offsets.map(|o| sec + o);
    assert_eq!((b1 - sec) % 4096, 0);
    assert_eq!((b2 - sec) % 4096, 0);
    let by_processor = |p: &str, format: &str| -> Value {
        f["code_objects"]
            .as_array()
            .expect("code objects")
            .iter()
            .find(|c| c["processor"] == p && c["location"]["format"] == format)
            .unwrap_or_else(|| panic!("no {p} {format} code object in {f:#}"))
            .clone()
    };
    assert_eq!(f["code_objects"].as_array().map(Vec::len), Some(4));

    let plain = by_processor("gfx90a", "plain");
    assert_eq!(plain["target_id"], "gfx90a:xnack-");
    assert_eq!(plain["location"]["in"], "bundle-entry");
    assert_eq!(plain["location"]["bundle_offset"], b0);
    assert_eq!(plain["offset"], offset_of(&m.libx, &m.fat_90a), "plain entries: file offsets");
    assert_eq!(plain["location"]["compression"], Value::Null);
    assert_eq!(plain["kernels"], 1);

    let v1 = by_processor("gfx900", "ccob-v1");
    assert_eq!(v1["location"]["compression"], "zlib");
    assert_eq!(v1["location"]["bundle_offset"], b1);
    assert_eq!(v1["kernels"], 6);
    assert_eq!(v1["size"], len(&m.fat_900));
    assert_eq!(v1["location"]["entry_id"], hip("gfx900"));
    let inflated = hip_bundle(&[("gfx900", &m.fat_900)]);
    assert_eq!(v1["offset"], offset_of(&inflated, &m.fat_900));

    let v3 = by_processor("gfx1100", "ccob-v3");
    assert_eq!(v3["location"]["compression"], "zstd");
    assert_eq!(v3["location"]["bundle_offset"], b2);
    assert_eq!(v3["kernels"], 7);
    assert_eq!(v3["e_flags"], GFX1100);

    let raw = f["code_objects"]
        .as_array()
        .expect("code objects")
        .iter()
        .find(|c| c["location"]["in"] == "embedded")
        .expect("the .rodata code object")
        .clone();
    assert_eq!(
        raw,
        json!({
            "processor": "gfx942",
            "target_id": "gfx942:sramecc+",
            "code_object_version": 4,
            "size": len(&m.embedded_942),
            "kernels": 8,
            "location": {"in": "embedded"},
            "offset": offset_of(&m.libx, &m.embedded_942),
            "e_flags": GFX942 | SRAMECC_ON,
        })
    );
}

/// model.rs: a file record's code objects are "in file order". In libx.so the `.rodata`
/// object sits before `.hip_fatbin`, so it must come first.
#[test]
fn code_objects_in_file_order() {
    let (m, snap) = scan_mixed();
    let f = file_record(&snap, "lib/libx.so");
    let where_: Vec<u64> = f["code_objects"]
        .as_array()
        .expect("code objects")
        .iter()
        .map(|c| {
            c["location"]["bundle_offset"].as_u64().unwrap_or_else(|| c["offset"].as_u64().expect("offset"))
        })
        .collect();
    let embedded = offset_of(&m.libx, &m.embedded_942);
    let sec = offset_of(&m.libx, &m.fat);
    assert!(embedded < sec, "fixture puts .rodata first");
    let mut sorted = where_.clone();
    sorted.sort_unstable();
    assert_eq!(where_, sorted, "code objects of lib/libx.so not in file order: {f:#}");
}

/// A fat-object section `__CLANG_OFFLOAD_BUNDLE__hipv4-…--gfx1100` is one embedded code object
/// with its entry ID; the host entry section next to it is not.
#[test]
fn fat_object_bundle_section() {
    let (m, snap) = scan_mixed();
    assert_eq!(
        file_record(&snap, "obj/fat.o")["code_objects"],
        json!([{
            "processor": "gfx1100",
            "target_id": "gfx1100",
            "code_object_version": 4,
            "size": len(&m.fat_o_1100),
            "kernels": 9,
            "location": {"in": "embedded", "section_entry_id": "hipv4-amdgcn-amd-amdhsa--gfx1100"},
            "offset": offset_of(&m.fat_o, &m.fat_o_1100),
            "e_flags": GFX1100,
        }])
    );
}

/// Per-processor totals over every file.
#[test]
fn target_totals() {
    let (m, snap) = scan_mixed();
    let counts = |cos: u64, kernels: u64, bytes: u64, files: u64, ids: Value| json!({"code_objects": cos, "kernels": kernels, "bytes": bytes, "files": files, "target_ids": ids});
    assert_eq!(
        snap["targets"],
        json!({
            "gfx90a": counts(2, 3, len(&m.foo_txt) + len(&m.fat_90a), 2,
                json!({"gfx90a:xnack+": 1, "gfx90a:xnack-": 1})),
            "gfx900": counts(2, 7, len(&m.hsaco_900) + len(&m.fat_900), 2, json!({"gfx900": 2})),
            "gfx906": counts(1, 2, len(&m.hsaco_906), 1, json!({"gfx906:sramecc+:xnack-": 1})),
            "gfx1030": counts(1, 5, len(&m.b_1030), 1, json!({"gfx1030": 1})),
            "gfx1100": counts(3, 19, len(&m.hsaco_1100) + len(&m.fat_1100) + len(&m.fat_o_1100), 3,
                json!({"gfx1100": 3})),
            "gfx942": counts(2, 12, len(&m.a_942) + len(&m.embedded_942), 2,
                json!({"gfx942:sramecc+": 1, "gfx942:xnack-": 1})),
        })
    );
}

/// The library entry point gives the same snapshot the binary prints.
#[test]
fn library_scan_matches_binary() {
    let m = mixed();
    let cfg = gfxscan::scan::ScanConfig::of(vec![m.tree.root().to_path_buf()]).with_threads(2);
    let snap =
        gfxscan::scan::scan(&cfg, &gfxscan::vocab::targets::Targets::builtin(), &gfxscan::scan::Silent)
            .expect("scan runs");
    assert_eq!(snap.summary.code_objects, 11);
    let (run, json) = m.tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(serde_json::to_value(&snap).expect("serializes"), json);
}

/// A root that is a file is scanned alone; its relative path is empty (the root names it).
#[test]
fn a_file_as_root() {
    let m = mixed();
    let path = m.tree.path("lib/rocblas/kernels.hsaco");
    let run = crate::util::gfxscan([std::ffi::OsStr::new("scan"), path.as_os_str(), "--json".as_ref()]);
    run.expect_code(0);
    let snap = run.json();
    assert_eq!(snap["roots"], json!([path.display().to_string()]));
    assert_eq!(file_paths(&snap), [""]);
    assert_eq!(snap["summary"]["files"], 1);
    assert_eq!(snap["summary"]["code_objects"], 3);
}

/// Problems do not suppress the report: exit 1 and a full snapshot on stdout.
#[test]
fn problems_still_print_the_report() {
    let m = mixed();
    m.tree.file("broken.co", b"CCOB\x03\x00\x01\x00 short");
    let (run, snap) = m.tree.scan_json(&[]);
    run.expect_code(1);
    assert_eq!(snap["summary"]["code_objects"], 11);
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "broken.co");
}

/// Code object versions through the CLI: V2 (processor and implied features from the ISA note
/// via targets.toml `v2_isa`), V3 (unset feature
/// bits mean off), V6 generic (generic_version present only there).
#[test]
fn code_object_versions() {
    use gfxscan::testing::{code_object, CodeObjectSpec};
    let tree = crate::util::Tree::new();
    tree.file("v2.co", &code_object(&CodeObjectSpec::v2((9, 0, 6), &["a", "b"])));
    tree.file("v3.co", &code_object(&CodeObjectSpec::new(1, 0x2f | 0x100, &["a"])));
    tree.file("v6.co", &code_object(&CodeObjectSpec::new(4, 0x54 | (1 << 24), &["a", "b", "c"])));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let got: Vec<Value> = snap["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            let c = &f["code_objects"][0];
            json!([
                f["path"],
                c["processor"],
                c["target_id"],
                c["code_object_version"],
                c["kernels"],
                c.get("generic_version")
            ])
        })
        .collect();
    assert_eq!(
        got,
        [
            json!(["v2.co", "gfx906", "gfx906:sramecc-:xnack-", 2, 2, null]),
            json!(["v3.co", "gfx906", "gfx906:sramecc-:xnack+", 3, 1, null]),
            json!(["v6.co", "gfx11-generic", "gfx11-generic", 6, 3, 1]),
        ]
    );
    let keys: Vec<&String> = snap["targets"].as_object().expect("targets").keys().collect();
    assert_eq!(keys, ["gfx11-generic", "gfx906"]);
    assert_eq!(snap["targets"]["gfx906"]["code_objects"], 2);
    assert_eq!(snap["targets"]["gfx906"]["files"], 2);
}

/// `--verbose` says on standard error how much memory the scan aims under and why: a quarter
/// of what the process may use (its cgroup's limits, else MemAvailable) by default, or what
/// `--max-memory` says; without it nothing is said. The JSON is the same either way.
#[test]
fn verbose_says_the_memory_the_scan_aims_under() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let quiet = crate::util::gfxscan(["scan", "-q", "--json", sample]);
    assert!(!quiet.stderr.contains("memory:"), "{}", quiet.stderr);
    let said = crate::util::gfxscan(["scan", "-q", "-v", "--json", sample]);
    let line =
        said.stderr.lines().find(|l| l.starts_with("memory: the scan aims under ")).unwrap_or_default();
    let known = ["MemAvailable", "memory.max", "memory.high", "memory.limit_in_bytes", "could not be read"];
    assert!(known.iter().any(|k| line.contains(k)), "{}", said.stderr);
    assert_eq!(said.stdout, quiet.stdout);
    let given = crate::util::gfxscan(["scan", "-q", "-v", "--max-memory", "300M", "--json", sample]);
    assert!(
        given.stderr.contains("memory: the scan aims under 300.0 MiB (as --max-memory says)"),
        "{}",
        given.stderr
    );
}

/// At 80 columns the scan table drops the layers no verdict rests on (the runtime's own code,
/// MIOpen records HIP never reads) before one check judges (bitcode).
#[test]
fn a_narrow_scan_keeps_the_layers_verdicts_rest_on() {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    c.args(["scan", "-q", "--color", "never", concat!(env!("CARGO_MANIFEST_DIR"), "/sample")])
        .env("COLUMNS", "80");
    let r = crate::util::run(c);
    let head: String = r.stdout.lines().skip(3).take(2).collect::<Vec<_>>().join("\n");
    assert!(head.contains("BITCODE") && head.contains("FIRMWARE"), "{head}");
    assert!(!head.contains("UNREAD") && !head.contains("RUNTIME"), "{head}");
    assert!(r.stdout.lines().all(|l| l.chars().count() <= 80), "{}", r.stdout);
}
