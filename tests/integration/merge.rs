//! `merge`: many snapshots into one matrix, a verdict per source with `--gpu`, unreadable
//! snapshots as rows with their error, folders read by name, every format.

use serde_json::json;

use gfxscan::testing::tensile_index;

use crate::fixtures::{co, host_lib, GFX1030, GFX1100, GFX900};
use crate::util::{gfxscan, Tree};

/// Two installs' snapshots and a broken one, in a folder.
fn fleet() -> (Tree, tempfile::TempDir) {
    let a = Tree::new();
    a.file(
        "opt/rocm/lib/libfoo.so",
        &host_lib(&[("gfx900", &co(GFX900, 0, 1)), ("gfx1100", &co(GFX1100, 0, 1))]),
    );
    a.file("opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat", &tensile_index(&["gfx1100"], 2));
    a.file("opt/rocm/lib/rocblas/library/TensileLibrary_gfx1100.co", &co(GFX1100, 0, 2));
    let b = Tree::new();
    b.file("opt/rocm/lib/libfoo.so", &host_lib(&[("gfx1030", &co(GFX1030, 0, 1))]));
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, t) in [("node-a", &a), ("node-b", &b)] {
        let out = dir.path().join(format!("{name}.json"));
        t.scan(&["--json", "-o", out.to_str().unwrap_or_default()]).expect_code(0);
    }
    std::fs::write(dir.path().join("node-c.json"), b"{\"not\": \"a snapshot\"}").expect("write");
    std::fs::write(dir.path().join("notes.txt"), b"not read: not a snapshot name").expect("write");
    (a, dir)
}

#[test]
fn merge_makes_one_matrix_with_a_row_per_snapshot() {
    let (_keep, dir) = fleet();
    let run = gfxscan(["merge", dir.path().to_str().unwrap_or_default(), "--json"]);
    run.expect_code(3);
    let m = run.json();
    let names: Vec<&str> =
        m["sources"].as_array().into_iter().flatten().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["node-a", "node-b", "node-c"]);
    assert_eq!(m["targets"], json!(["gfx900", "gfx1030", "gfx1100"]));
    let layers: Vec<&str> = m["layers"].as_array().into_iter().flatten().filter_map(|l| l.as_str()).collect();
    let at = |l: &str| layers.iter().position(|x| *x == l).expect(l);
    let a = &m["sources"][0]["counts"];
    assert_eq!(a["gfx1100"][at("library code")], 1);
    assert_eq!(a["gfx1100"][at("rocblas")], 2);
    assert_eq!(a["gfx900"][at("rocblas")], 0);
    assert!(a.get("gfx1030").is_none());
    assert_eq!(m["sources"][1]["counts"]["gfx1030"][at("library code")], 1);
    assert!(m["sources"][2]["error"].as_str().unwrap_or("").contains("not a gfxscan snapshot"));
    // The table: sources down, targets across; the unreadable row says so.
    let table = gfxscan(["merge", dir.path().to_str().unwrap_or_default(), "--layer", "rocblas"]);
    let row = table.stdout.lines().find(|l| l.trim_start().starts_with("node-a")).expect("node-a row");
    assert_eq!(row.split_whitespace().collect::<Vec<_>>(), ["node-a", "—", "—", "2"]);
    assert!(table.stdout.contains("Could not be read (1):"), "{}", table.stdout);
    // CSV: the whole matrix, long form.
    let csv =
        gfxscan(["merge", dir.path().join("node-a.json").to_str().unwrap_or_default(), "--format", "csv"]);
    csv.expect_code(0);
    assert!(csv.stdout.contains("node-a,"), "{}", csv.stdout);
    assert!(csv.stdout.lines().any(|l| l.ends_with(",gfx1100,rocblas,2,")), "{}", csv.stdout);
}

#[test]
fn merge_judges_each_source_for_a_gpu() {
    let (_keep, dir) = fleet();
    let a = dir.path().join("node-a.json");
    let b = dir.path().join("node-b.json");
    let run = gfxscan([
        "merge",
        "--gpu",
        "gfx1100",
        "--json",
        a.to_str().unwrap_or_default(),
        b.to_str().unwrap_or_default(),
    ]);
    // node-b has no gfx1100 code: a source lacks a required piece.
    run.expect_code(1);
    let m = run.json();
    assert_eq!(m["gpus"], json!(["gfx1100"]));
    assert_eq!(m["sources"][0]["verdict"], "ok");
    assert_eq!(m["sources"][1]["verdict"], "missing");
    let only = gfxscan(["merge", "--only", "gfx900", "--json", a.to_str().unwrap_or_default()]);
    assert_eq!(only.json()["targets"], json!(["gfx900"]));
    assert!(only.json()["sources"][0]["counts"].get("gfx1100").is_none());
}

/// Two sources named alike are told apart by their paths; an input that cannot be read is a
/// row with its error, and the others are still merged (exit 3: incomplete).
#[test]
fn alike_names_are_told_apart_and_an_unreadable_folder_is_one_row() {
    let (_keep, dir) = fleet();
    let other = tempfile::tempdir().expect("tempdir");
    std::fs::copy(dir.path().join("node-a.json"), other.path().join("node-a.json")).expect("copy");
    let (a, b) = (dir.path().join("node-a.json"), other.path().join("node-a.json"));
    let run = gfxscan(["merge", a.to_str().unwrap_or_default(), b.to_str().unwrap_or_default(), "--json"]);
    run.expect_code(0);
    let m = run.json();
    let names: Vec<&str> =
        m["sources"].as_array().into_iter().flatten().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, [a.to_str().unwrap_or_default(), b.to_str().unwrap_or_default()]);
    // A file named as a folder cannot be opened.
    let not_listable = other.path().join("node-a.json/");
    let run = gfxscan([
        "merge",
        a.to_str().unwrap_or_default(),
        not_listable.to_str().unwrap_or_default(),
        "--json",
    ]);
    run.expect_code(3);
    let m = run.json();
    assert_eq!(m["sources"].as_array().map_or(0, Vec::len), 2, "{m:#}");
    assert!(m["sources"][1]["error"].as_str().is_some_and(|e| !e.is_empty()), "{m:#}");
    // CSV says what JSON says when nothing could be checked.
    let empty = Tree::new();
    empty.file("notes.txt", b"no device code");
    let snap = other.path().join("empty.json");
    empty.scan(&["--json", "-o", snap.to_str().unwrap_or_default()]).expect_code(0);
    let csv = gfxscan(["merge", snap.to_str().unwrap_or_default(), "--gpu", "gfx1100", "--format", "csv"]);
    assert!(csv.stdout.contains(",nothing-to-check,"), "{}", csv.stdout);
}

/// Issue 22: `merge --gpu A,B` gives a verdict per source per GPU in every format: node-b has
/// code for gfx1030 only, so it is OK for gfx1030 and MISSING for gfx1100, never one word for
/// both; node-a the other way round (its rocBLAS has no gfx1030 index).
#[test]
fn merge_gives_a_verdict_per_source_per_gpu() {
    let (_keep, dir) = fleet();
    let a = dir.path().join("node-a.json");
    let b = dir.path().join("node-b.json");
    let (a, b) = (a.to_str().unwrap_or_default(), b.to_str().unwrap_or_default());
    let run = gfxscan(["merge", "--gpu", "gfx1030,gfx1100", "--json", a, b]);
    run.expect_code(1);
    let m = run.json();
    assert_eq!(m["sources"][0]["gpu_verdicts"], json!({"gfx1030": "missing", "gfx1100": "ok"}), "{m:#}");
    assert_eq!(m["sources"][1]["gpu_verdicts"], json!({"gfx1030": "ok", "gfx1100": "missing"}), "{m:#}");
    // The source's one verdict is the check of both GPUs at once.
    for s in m["sources"].as_array().into_iter().flatten().take(2) {
        assert_eq!(s["verdict"], "missing", "{s:#}");
    }
    let table = gfxscan(["merge", "--gpu", "gfx1030,gfx1100", a, b]);
    assert!(table.stdout.contains("node-b gfx1030 OK · gfx1100 MISSING"), "{}", table.stdout);
    assert!(table.stdout.contains("gfx1100: 1 of 2 sources lack a required piece"), "{}", table.stdout);
    let csv = gfxscan(["merge", "--gpu", "gfx1030,gfx1100", "--format", "csv", a, b]);
    assert!(csv.stdout.contains(",missing,gfx1030=ok;gfx1100=missing,"), "{}", csv.stdout);
    let html = gfxscan(["merge", "--gpu", "gfx1030,gfx1100", "--format", "html", a, b]);
    assert!(html.stdout.contains("<th>gfx1030</th>") || html.stdout.contains(">gfx1030<"), "{}", html.stdout);
}

/// A mistyped input names nothing: a usage error (exit 2) before any work, not an empty table
/// with exit 3; and merge takes -q as every command does.
#[test]
fn a_missing_input_is_a_usage_error_and_q_is_taken() {
    let run = gfxscan(["merge", "/no/such/path"]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("/no/such/path: no such file or folder"), "{}", run.stderr);
    let snap = gfxscan(["scan", "-q", "--json", concat!(env!("CARGO_MANIFEST_DIR"), "/sample")]);
    let t = Tree::new();
    t.file("a.json", snap.stdout.as_bytes());
    gfxscan(["merge", "-q", &t.path("a.json").to_string_lossy()]).expect_code(0);
    // A layer by its table words or its hyphenated id alike.
    for layer in ["library code", "library-code", "TN_MODELS", "perf-db"] {
        gfxscan(["merge", "--layer", layer, &t.path("a.json").to_string_lossy()]).expect_code(0);
    }
}
