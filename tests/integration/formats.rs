//! Output formats of `gfxscan scan`: table, Markdown, CSV, JSON, `-o FILE` and `--only`.

use serde_json::json;

use crate::fixtures::{co, hip_bundle, GFX1100, GFX900, GFX90A, XNACK_ON};
use crate::util::{gfxscan, Tree};

/// A tree with gfx1100 (2 kernels) and gfx900 (1) in a bundle and a gfx90a:xnack+ object
/// (3), named so that neither file nor alphabetical order gives the targets.toml order.
struct Small {
    tree: Tree,
    len_900: u64,
    len_90a: u64,
    len_1100: u64,
}

fn small() -> Small {
    let tree = Tree::new();
    let c1100 = co(GFX1100, 0, 2);
    let c900 = co(GFX900, 0, 1);
    let c90a = co(GFX90A, XNACK_ON, 3);
    tree.file("a.hsaco", &hip_bundle(&[("gfx1100", &c1100), ("gfx900", &c900)]));
    tree.file("b/kernel.co", &c90a);
    Small { tree, len_900: c900.len() as u64, len_90a: c90a.len() as u64, len_1100: c1100.len() as u64 }
}

/// First cells of the table rows under the header line that contains `header`.
fn first_cells<'a>(text: &'a str, header: &str) -> Vec<Vec<&'a str>> {
    let lines: Vec<&str> = text.lines().collect();
    let at =
        lines.iter().position(|l| l.contains(header)).unwrap_or_else(|| panic!("no {header:?} in\n{text}"));
    lines[at + 1..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| !l.trim_start().starts_with("|-") && !l.trim_start().starts_with("| -"))
        .map(|l| l.split(['|', ' ']).filter(|c| !c.is_empty()).collect())
        .collect()
}

#[test]
fn table_rows_follow_targets_toml_order() {
    let s = small();
    let run = s.tree.scan(&["--format", "table"]);
    run.expect_code(0);
    let first = run.stdout.lines().next().expect("headline");
    let want = format!("gfxscan {} · 1 root · 2 files (", env!("CARGO_PKG_VERSION"));
    assert!(first.starts_with(&want), "{first}");
    assert!(first.ends_with("· 2 with device code · 3 code objects · 0 problems"), "{first}");
    let header = run.stdout.lines().find(|l| l.contains("TARGET")).expect("header row");
    for col in ["TARGET", "CODE OBJECTS", "KERNELS", "DEVICE CODE", "FILES"] {
        assert!(header.contains(col), "{header}");
    }
    let rows = first_cells(&run.stdout, "TARGET");
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, ["gfx900", "gfx90a", "gfx1100"], "by mach 0x2c, 0x3f, 0x41:\n{}", run.stdout);
    // target, code objects, kernels, <size> <unit>, files
    assert_eq!([rows[0][1], rows[0][2], rows[0][5]], ["1", "1", "1"]);
    assert_eq!([rows[1][1], rows[1][2], rows[1][5]], ["1", "3", "1"]);
    assert_eq!([rows[2][1], rows[2][2], rows[2][5]], ["1", "2", "1"]);
    assert!(!run.stdout.contains("Problems"), "{}", run.stdout);
}

#[test]
fn table_is_the_default() {
    let s = small();
    let default = s.tree.scan(&[]);
    let table = s.tree.scan(&["--format", "table"]);
    default.expect_code(0);
    assert_eq!(default.stdout, table.stdout);
}

#[test]
fn empty_tree_says_nothing_found() {
    let tree = Tree::new();
    tree.file("readme.txt", b"no device code here");
    let run = tree.scan(&[]);
    run.expect_code(0);
    assert!(run.stdout.contains("No AMDGPU code objects found."), "{}", run.stdout);
    assert!(!run.stdout.contains("TARGET"), "{}", run.stdout);
}

#[test]
fn markdown_rows() {
    let s = small();
    let run = s.tree.scan(&["--format", "markdown"]);
    run.expect_code(0);
    let pipe_rows: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(pipe_rows.len(), 5, "header, separator, 3 targets:\n{}", run.stdout);
    assert!(pipe_rows[0].contains("| target") && pipe_rows[0].contains("code objects"), "{}", pipe_rows[0]);
    assert!(pipe_rows[1].contains("---"), "{}", pipe_rows[1]);
    let names: Vec<&str> = first_cells(&run.stdout, "| target").iter().map(|r| r[0]).collect();
    assert_eq!(names, ["gfx900", "gfx90a", "gfx1100"]);
}

#[test]
fn csv_exact() {
    let s = small();
    let run = s.tree.scan(&["--format", "csv"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        format!(
            "target,code_objects,kernels,bytes,files\ngfx900,1,1,{},1\ngfx90a,1,3,{},1\ngfx1100,1,2,{},1\n",
            s.len_900, s.len_90a, s.len_1100
        )
    );
}

#[test]
fn json_flag_equals_format_json() {
    let s = small();
    let a = s.tree.scan(&["--json"]);
    let b = s.tree.scan(&["--format", "json"]);
    a.expect_code(0);
    b.expect_code(0);
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.json()["summary"]["code_objects"], 3);
}

#[test]
fn json_and_format_conflict() {
    let s = small();
    let run = s.tree.scan(&["--json", "--format", "csv"]);
    run.expect_code(2);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}

#[test]
fn output_file_gets_everything_stdout_nothing() {
    let s = small();
    let out_dir = Tree::new();
    let out = out_dir.path("report.csv");
    let to_stdout = s.tree.scan(&["--format", "csv"]);
    let run = s.tree.scan(&["--format", "csv", "-o", out.to_str().expect("UTF-8 temp path")]);
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    let written = std::fs::read_to_string(&out).expect("report written");
    assert_eq!(written, to_stdout.stdout);
    assert!(written.starts_with("target,code_objects,kernels,bytes,files\n"));

    let json_out = out_dir.path("snap.json");
    let run = s.tree.scan(&["--json", "--output", json_out.to_str().expect("UTF-8")]);
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    let snap: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_out).expect("written")).expect("JSON");
    assert_eq!(snap["summary"]["code_objects"], 3);
}

#[test]
fn output_dash_is_stdout() {
    let s = small();
    let run = s.tree.scan(&["--format", "csv", "-o", "-"]);
    run.expect_code(0);
    assert!(run.stdout.starts_with("target,code_objects"), "{}", run.stdout);
}

#[test]
fn output_to_unwritable_path_is_fatal() {
    let s = small();
    let run = s.tree.scan(&["-o", "/nonexistent-dir/for/gfxscan/out.txt"]);
    run.expect_code(2);
    assert!(run.stderr.contains("/nonexistent-dir/for/gfxscan/out.txt"), "{}", run.stderr);
}

/// `--only` shows exactly the named targets in table order, zeros for absent ones.
#[test]
fn only_selects_rows_with_zeros() {
    let s = small();
    let run = s.tree.scan(&["--format", "csv", "--only", "gfx942,gfx1100,gfx900"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        format!(
            "target,code_objects,kernels,bytes,files\ngfx900,1,1,{},1\ngfx1100,1,2,{},1\ngfx942,0,0,0,0\n",
            s.len_900, s.len_1100
        )
    );

    let run = s.tree.scan(&["--only", "gfx900,gfx1100,gfx942"]);
    run.expect_code(0);
    let rows = first_cells(&run.stdout, "TARGET");
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, ["gfx900", "gfx1100", "gfx942"], "{}", run.stdout);
    assert_eq!(rows[2], ["gfx942", "0", "0", "0", "B", "0"]);

    let run = s.tree.scan(&["--json", "--only", "gfx900,gfx942"]);
    run.expect_code(0);
    let snap = run.json();
    assert_eq!(
        snap["targets"],
        json!({
            "gfx900": {"code_objects": 1, "kernels": 1, "bytes": s.len_900, "files": 1,
                       "target_ids": {"gfx900": 1}},
            "gfx942": {"code_objects": 0, "kernels": 0, "bytes": 0, "files": 0, "target_ids": {}},
        })
    );
    // --only narrows the totals, not the files.
    assert_eq!(snap["files"].as_array().map(Vec::len), Some(2));
}

#[test]
fn only_unknown_target_is_fatal() {
    let s = small();
    let run = s.tree.scan(&["--only", "gfx900,gfx9999"]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("gfxscan: error:"), "{}", run.stderr);
    assert!(run.stderr.contains(r#"--only: unknown target "gfx9999""#), "{}", run.stderr);
}

#[test]
fn version_flag() {
    let run = gfxscan(["--version"]);
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), format!("gfxscan {}", env!("CARGO_PKG_VERSION")));
}

/// The table lists problems under "Problems (N):" with the full path of each file.
#[test]
fn table_lists_problems_with_full_paths() {
    let s = small();
    s.tree.file("sub/bad.co", b"CCOB\x03\x00\x01\x00 short");
    let run = s.tree.scan(&[]);
    run.expect_code(1);
    let want = format!("  {}/sub/bad.co: CCOB header truncated at offset 0x0", s.tree.root_str());
    let lines: Vec<&str> = run.stdout.lines().collect();
    let at = lines.iter().position(|l| *l == "Problems (1):").unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(lines.get(at + 1).copied(), Some(want.as_str()), "{}", run.stdout);
    assert!(lines[0].ends_with("· 1 problem"), "{}", lines[0]);

    let md = s.tree.scan(&["--format", "markdown"]);
    assert!(md.stdout.contains("### Problems (1):"), "{}", md.stdout);
    assert!(md.stdout.contains(&format!("- {}/sub/bad.co: ", s.tree.root_str())), "{}", md.stdout);
}

/// A problem in a root that is itself a file names that file once, not `file/file`.
#[test]
fn problem_in_a_file_root_names_the_file_once() {
    let tree = Tree::new();
    tree.file("bad.co", b"CCOB\x03\x00\x01\x00 short");
    let file = tree.path("bad.co");
    let run = gfxscan([std::ffi::OsStr::new("scan"), file.as_os_str()]);
    run.expect_code(1);
    let want = format!("  {}: CCOB header truncated at offset 0x0", file.display());
    assert!(run.stdout.lines().any(|l| l == want), "want line {want:?} in:\n{}", run.stdout);
}

/// `gfxscan scan … | head -c 10` is not an error: a closed pipe ends the run with exit 0 and
/// nothing on stderr, whatever the format (main.rs promises this).
#[test]
fn closed_pipe_is_not_an_error() {
    let tree = Tree::new();
    let obj = co(GFX900, 0, 1);
    // Enough output to fill a pipe in every format: JSON per file, tables per problem.
    for i in 0..300 {
        tree.file(format!("d{}/k{i:03}.co", i % 10), &obj);
    }
    for i in 0..1500 {
        tree.file(format!("bad/b{i:04}.co"), b"CCOB\x03\x00\x01\x00 short");
    }
    let mut failed = Vec::new();
    for format in ["json", "table", "markdown"] {
        let script = format!(
            "set -o pipefail; '{}' scan '{}' --format {format} | head -c 10 >/dev/null",
            env!("CARGO_BIN_EXE_gfxscan"),
            tree.root_str()
        );
        let out = std::process::Command::new("bash").args(["-c", &script]).output().expect("bash runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        // The tree holds unreadable files: exit 1 whether or not the reader read to the end
        // (issue 12 point 7: it was 0 once the pipe closed).
        if out.status.code() != Some(1) || !stderr.is_empty() {
            failed.push((format, out.status.code(), stderr));
        }
    }
    assert!(failed.is_empty(), "closed pipe treated as an error: {failed:?}");
}
