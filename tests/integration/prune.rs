//! The prune report (`scan --keep`): exact bytes per library for what could go and what stays,
//! generic code kept for the targets it serves, compressed bundles counted stored and inflated,
//! and nothing written.

use gfxscan::testing::tensile_index;
use gfxscan::testing::{ccob, code_object, fatbin, host_elf, CodeObjectSpec, Codec, HostSection};
use serde_json::Value;

use crate::fixtures::{co, hip_bundle, host_lib, GENERIC_V1, GFX1100, GFX11_GENERIC, GFX900};
use crate::util::Tree;

fn row<'a>(report: &'a Value, library: &str) -> &'a Value {
    report["libraries"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["library"]["path"] == library)
        .unwrap_or_else(|| panic!("{library}: {report:#}"))
}

#[test]
fn keep_counts_what_could_go_and_what_stays() {
    let tree = Tree::new();
    let (a, b) = (co(GFX900, 0, 3), co(GFX1100, 0, 2));
    let g = code_object(&CodeObjectSpec::new(4, GFX11_GENERIC | GENERIC_V1, &["k0"]));
    let lib = host_lib(&[("gfx900", &a), ("gfx1100", &b), ("gfx11-generic", &g)]);
    tree.file("opt/rocm/lib/libplain.so", &lib);
    // A compressed bundle: its entries cost their share of it on disk.
    let inner = hip_bundle(&[("gfx900", &a), ("gfx1100", &b)]);
    let packed = ccob(3, Codec::Zstd, &inner);
    tree.file(
        "opt/rocm/lib/libpacked.so",
        &host_elf(&[HostSection::hip_fatbin(&fatbin(std::slice::from_ref(&packed)))]),
    );
    let index = tensile_index(&["gfx900"], 2);
    tree.file("opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx900.dat", &index);
    let before = std::fs::read_dir(tree.root()).expect("root").count();

    let run = tree.scan(&["--keep", "gfx1151", "--json"]);
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["keep"], serde_json::json!(["gfx1151"]));
    // gfx1151 runs gfx11-generic code: that stays; gfx900 and gfx1100 code could go.
    let plain = row(&report, "opt/rocm/lib/libplain.so");
    let (a_n, b_n, g_n) = (a.len() as u64, b.len() as u64, g.len() as u64);
    assert_eq!(plain["drop"]["stored"], a_n + b_n);
    assert_eq!(plain["keep"]["stored"], g_n);
    assert_eq!(plain["generic"]["stored"], g_n);
    assert_eq!(plain["stays"], lib.len() as u64 - a_n - b_n - g_n, "host code stays");
    // Compressed: inflated is the entries' own sizes; stored their share of the bundle.
    let packed_row = row(&report, "opt/rocm/lib/libpacked.so");
    assert_eq!(packed_row["drop"]["inflated"], a_n + b_n);
    let stored = packed_row["drop"]["stored"].as_u64().expect("stored");
    assert!(stored < a_n + b_n && stored > 0, "{stored}");
    let share = |n: u64| (n as u128 * packed.len() as u128 / inner.len() as u128) as u64;
    assert_eq!(stored, share(a_n) + share(b_n));
    // Every byte of every file is counted once: could go, stays for the kept, or stays.
    let total = &report["total"];
    let sizes: u64 = ["opt/rocm/lib/libplain.so", "opt/rocm/lib/libpacked.so"]
        .iter()
        .map(|p| std::fs::metadata(tree.path(p)).expect("file").len())
        .sum::<u64>()
        + index.len() as u64;
    let counted = total["drop"]["stored"].as_u64().unwrap_or(0)
        + total["keep"]["stored"].as_u64().unwrap_or(0)
        + total["stays"].as_u64().unwrap_or(0);
    assert_eq!(counted, sizes, "{report:#}");
    // A gfx900-only Tensile folder goes whole.
    assert_eq!(row(&report, "opt/rocm/lib/rocblas/library/")["drop"]["stored"], index.len() as u64);
    // Keeping gfx900 instead: the Tensile folder stays, generic code goes.
    let run = tree.scan(&["--keep", "gfx900", "--json"]);
    let report = run.json();
    assert_eq!(row(&report, "opt/rocm/lib/rocblas/library/")["keep"]["stored"], index.len() as u64);
    assert_eq!(row(&report, "opt/rocm/lib/libplain.so")["drop"]["stored"], b_n + g_n);
    // Nothing written or deleted.
    assert_eq!(std::fs::read_dir(tree.root()).expect("root").count(), before);
    // The table: a headline and a total row.
    let table = tree.scan(&["--keep", "gfx900"]);
    assert!(table.stdout.starts_with("Keeping gfx900: "), "{}", table.stdout);
    assert!(table.stdout.lines().any(|l| l.trim_start().starts_with("total")), "{}", table.stdout);
}

/// A library under two names (a hard link, as a package's `lib/` and a wheel's copy made with
/// `cp -l` share one file) is on disk once: prune counts its bytes once, under the first name
/// in path order, and the snapshot says which name the other is.
#[test]
fn a_hard_linked_library_is_counted_once() {
    let tree = Tree::new();
    let lib = host_lib(&[("gfx900", &co(GFX900, 0, 3)), ("gfx1100", &co(GFX1100, 0, 2))]);
    tree.file("opt/rocm/lib/libfoo.so", &lib);
    std::fs::create_dir_all(tree.path("b")).expect("mkdir");
    std::fs::hard_link(tree.path("opt/rocm/lib/libfoo.so"), tree.path("b/libfoo.so")).expect("link");
    tree.file("opt/rocm/lib/libamdhip64.so", b"host code only: no device code, no GPU data");
    let (_, snap) = tree.scan_json(&[]);
    let rec = crate::util::file_record(&snap, "opt/rocm/lib/libfoo.so");
    assert_eq!(rec["hard_link_of"]["path"], "b/libfoo.so", "{rec:#}");
    assert!(crate::util::file_record(&snap, "b/libfoo.so").get("hard_link_of").is_none());
    let report = tree.scan(&["--keep", "gfx1100", "--json"]).json();
    let total = &report["total"];
    let counted = total["drop"]["stored"].as_u64().unwrap_or(0)
        + total["keep"]["stored"].as_u64().unwrap_or(0)
        + total["stays"].as_u64().unwrap_or(0);
    assert_eq!(counted, lib.len() as u64, "one file's bytes, once: {report:#}");
    // The library without device code is in no row, and is said to stay.
    assert_eq!(report["untied"], serde_json::json!({"files": 1, "bytes": 43}), "{report:#}");
}

/// `--keep` you can act on (issue 23): what could go is split into whole files, listed, which
/// deleting removes, and code inside libraries that also keep code (fat binaries), which only a
/// rebuild could drop; a column left out for the width is said.
#[test]
fn keep_lists_whole_files_apart_from_code_inside_libraries() {
    let tree = Tree::new();
    let (a, b) = (co(GFX900, 0, 3), co(GFX1100, 0, 2));
    tree.file("opt/rocm/lib/libmixed.so", &host_lib(&[("gfx900", &a), ("gfx1100", &b)]));
    let index = tensile_index(&["gfx900"], 2);
    tree.file("opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx900.dat", &index);
    tree.file("opt/rocm/lib/rocblas/library/TensileLibrary_gfx900.co", &a);
    let report = tree.scan(&["--keep", "gfx1100", "--json"]).json();
    let tensile = row(&report, "opt/rocm/lib/rocblas/library/");
    let whole: Vec<&str> = tensile["files_to_drop"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(
        whole,
        [
            "opt/rocm/lib/rocblas/library/TensileLibrary_gfx900.co",
            "opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx900.dat"
        ]
    );
    assert_eq!(tensile["drop_whole"]["stored"], tensile["drop"]["stored"]);
    let mixed = row(&report, "opt/rocm/lib/libmixed.so");
    assert_eq!(mixed["drop"]["stored"], a.len() as u64);
    assert_eq!(mixed["drop_whole"]["stored"], 0);
    assert!(mixed.get("files_to_drop").is_none(), "{mixed:#}");
    let narrow = tree.scan(&["--keep", "gfx1100"]);
    assert!(narrow.stdout.contains("is whole files (2 files"), "{}", narrow.stdout);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args(["scan", "-q", "--keep", "gfx1100", &tree.root_str()]).env("COLUMNS", "40");
    let tiny = crate::util::run(cmd);
    assert!(tiny.stdout.contains("Left out for the width:"), "{}", tiny.stdout);
    // With --verbose the text lists the same files as the JSON, whole and under the root as
    // given, at any width; the library whose code sits inside a fat binary lists none.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args(["scan", "-q", "--keep", "gfx1100", "--verbose", &tree.root_str()]).env("COLUMNS", "40");
    let listed = crate::util::run(cmd);
    let lines: Vec<&str> =
        listed.stdout.lines().skip_while(|l| !l.starts_with("Whole files that could go")).collect();
    let root = tree.root_str();
    let want = [
        "Whole files that could go (2):".to_string(),
        "  opt/rocm/lib/rocblas/library/ (2):".to_string(),
        format!("    {root}/{}", whole[0]),
        format!("    {root}/{}", whole[1]),
    ];
    assert_eq!(lines, want, "{}", listed.stdout);
}
