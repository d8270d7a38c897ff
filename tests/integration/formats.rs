//! Output formats of `gfxscan scan`: table, Markdown, CSV, JSON, `-o FILE` and `--only`.

use serde_json::json;

use crate::fixtures::{co, hip_bundle, GFX1100, GFX900, GFX90A, XNACK_ON};
use crate::util::{gfxscan, Tree};

/// A tree with gfx1100 (2 kernels) and gfx900 (1) in a bundle and a gfx90a:xnack+ object
/// (3), named so that neither file nor alphabetical order gives the natural order.
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

/// The CSV header of the per-target view: totals, then every `FAMILY_ROWS` key.
const CSV_HEADER: &str = "target,product,code_objects,kernels,bytes,files,host-library-code-objects,\
                          standalone-code-objects,runtime-internal-code-objects,rocblas-files,\
                          hipblaslt-files,miopen-perf-db-records,miopen-find-db-records,\
                          miopen-kernel-db-entries,miopen-tuning-models,miopen-unread-find-db-records,firmware-blobs,\
                          device-lib-bitcode,aotriton-kernel-archives\n";

/// The cells of the table rows under the header line that contains `header`. Header words
/// stacked on further lines (upper case, no row name) and Markdown's `|---|` line are skipped;
/// cells are split at Markdown pipes or at the two or more spaces between table columns, so
/// `RX 7900 XTX` and `1.2 KiB` stay one cell.
fn first_cells<'a>(text: &'a str, header: &str) -> Vec<Vec<&'a str>> {
    let lines: Vec<&str> = text.lines().collect();
    let at =
        lines.iter().position(|l| l.contains(header)).unwrap_or_else(|| panic!("no {header:?} in\n{text}"));
    lines[at + 1..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .skip_while(|l| !l.chars().any(|c| c.is_ascii_lowercase()))
        .map(|l| {
            let cells: Vec<&str> =
                if l.starts_with('|') { l.split('|').collect() } else { l.split("  ").collect() };
            cells.into_iter().map(str::trim).filter(|c| !c.is_empty()).collect()
        })
        .collect()
}

#[test]
fn table_rows_follow_the_natural_order() {
    let s = small();
    let run = s.tree.scan(&["--format", "table"]);
    run.expect_code(0);
    let first = run.stdout.lines().next().expect("headline");
    let want = format!("gfxscan {} · 1 root · 2 files (", env!("CARGO_PKG_VERSION"));
    assert!(first.starts_with(&want), "{first}");
    assert!(first.ends_with("· 2 with device code · 3 code objects · all read"), "{first}");
    // Targets down (generation, then number), their first product, then one column per layer
    // present: here only library code. Header words stack; no line ends in spaces.
    let lines: Vec<&str> = run.stdout.lines().collect();
    // Then the targets `check --gpu all` finds served (gfx90a's only code is xnack+, which a
    // gfx90a in its default mode does not load).
    assert_eq!(lines[1], "Served, every required piece present: 2 of 3 GPU targets: gfx900, gfx1100");
    assert_eq!(
        lines[2..9],
        [
            "",
            " TARGET   PRODUCT          LIBRARY",
            "                              CODE",
            " gfx900   RX Vega 64             1",
            " gfx90a   Instinct MI250X        1",
            " gfx1100  RX 7900 XTX            1",
            "",
        ],
        "{}",
        run.stdout
    );
    // Then what each column counts, and the layers this tree has none of: one note each,
    // wrapped at 100 columns under a 2-space indent.
    let notes: Vec<String> =
        lines[9..].join("\n").split("\n  ").collect::<Vec<_>>().join(" ").lines().map(String::from).collect();
    assert_eq!(
        notes,
        [
            "Columns: LIBRARY CODE: device code in host libraries (code objects; the runtime's own included) \
             + standalone code objects (outside Tensile folders).",
            "None in this tree: runtime, rocblas, hipblaslt, perf-db, find-db, kernel-db, tn models, unread fdb, firmware, \
             bitcode, aotriton.",
        ],
        "{}",
        run.stdout
    );
    assert!(run.stdout.lines().all(|l| l == l.trim_end() && l.chars().count() <= 100), "{}", run.stdout);
    assert!(!run.stdout.contains("Problems"), "{}", run.stdout);

    // --wide adds the totals: code objects (all of them), kernels, device code, files.
    let wide = s.tree.scan(&["--wide"]);
    wide.expect_code(0);
    let rows = first_cells(&wide.stdout, "TARGET");
    assert_eq!(
        rows,
        [
            ["gfx900", "RX Vega 64", "1", "1", "1", "1.1 KiB", "1"],
            ["gfx90a", "Instinct MI250X", "1", "1", "3", "1.5 KiB", "1"],
            ["gfx1100", "RX 7900 XTX", "1", "1", "2", "1.2 KiB", "1"],
        ],
        "{}",
        wide.stdout
    );
    let header: Vec<&str> = wide.stdout.lines().skip_while(|l| !l.contains("TARGET")).take(2).collect();
    assert_eq!(
        header.iter().map(|l| l.split_whitespace().collect::<Vec<_>>()).collect::<Vec<_>>(),
        [
            vec!["TARGET", "PRODUCT", "LIBRARY", "CODE", "KERNELS", "DEVICE", "FILES"],
            vec!["CODE", "OBJECTS", "CODE"],
        ],
        "{}",
        wide.stdout
    );
    assert!(wide.stdout.lines().all(|l| l == l.trim_end()), "{}", wide.stdout);
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
    assert!(
        run.stdout.contains("No AMDGPU code objects, Tensile libraries, MIOpen databases or firmware found."),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("TARGET"), "{}", run.stdout);
    assert!(!run.stdout.contains("Columns:"), "{}", run.stdout);
    // CSV: the header alone.
    let csv = tree.scan(&["--format", "csv"]);
    csv.expect_code(0);
    assert_eq!(csv.stdout, CSV_HEADER);
}

#[test]
fn markdown_rows() {
    let s = small();
    let run = s.tree.scan(&["--format", "markdown"]);
    run.expect_code(0);
    let pipe_rows: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(pipe_rows.len(), 5, "header, separator, 3 targets:\n{}", run.stdout);
    assert!(pipe_rows[0].contains("| target") && pipe_rows[0].contains("library code"), "{}", pipe_rows[0]);
    assert!(pipe_rows[1].contains("---"), "{}", pipe_rows[1]);
    let names: Vec<&str> = first_cells(&run.stdout, "| target").iter().map(|r| r[0]).collect();
    assert_eq!(names, ["gfx900", "gfx90a", "gfx1100"]);
}

#[test]
fn csv_exact() {
    let s = small();
    let run = s.tree.scan(&["--format", "csv"]);
    run.expect_code(0);
    // Every object here is standalone: 1 in standalone-code-objects, 0 in every other row.
    assert_eq!(
        run.stdout,
        format!(
            "{CSV_HEADER}\
             gfx900,Radeon RX Vega 64,1,1,{},1,0,1,0,0,0,0,0,0,0,0,0,0,0\n\
             gfx90a,Instinct MI250X,1,3,{},1,0,1,0,0,0,0,0,0,0,0,0,0,0\n\
             gfx1100,Radeon RX 7900 XTX,1,2,{},1,0,1,0,0,0,0,0,0,0,0,0,0,0\n",
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
    assert!(written.starts_with(CSV_HEADER), "{written}");

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
    assert!(run.stdout.starts_with(CSV_HEADER), "{}", run.stdout);
    assert_eq!(run.stdout.lines().count(), 4, "{}", run.stdout);
}

#[test]
fn output_to_unwritable_path_is_fatal() {
    let s = small();
    let run = s.tree.scan(&["-o", "/nonexistent-dir/for/gfxscan/out.txt"]);
    run.expect_code(2);
    assert!(run.stderr.contains("/nonexistent-dir/for/gfxscan/out.txt"), "{}", run.stderr);
}

/// `--only` shows exactly the named targets in the order given, zeros for absent ones.
#[test]
fn only_selects_rows_with_zeros() {
    let s = small();
    let run = s.tree.scan(&["--format", "csv", "--only", "gfx942,gfx1100,gfx900"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        format!(
            "{CSV_HEADER}\
             gfx942,Instinct MI300X,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n\
             gfx1100,Radeon RX 7900 XTX,1,2,{},1,0,1,0,0,0,0,0,0,0,0,0,0,0\n\
             gfx900,Radeon RX Vega 64,1,1,{},1,0,1,0,0,0,0,0,0,0,0,0,0,0\n",
            s.len_1100, s.len_900
        )
    );

    let run = s.tree.scan(&["--only", "gfx1100,gfx942,gfx900"]);
    run.expect_code(0);
    let rows = first_cells(&run.stdout, "TARGET");
    assert_eq!(
        rows,
        [["gfx1100", "RX 7900 XTX", "1"], ["gfx942", "Instinct MI300X", "—"], ["gfx900", "RX Vega 64", "1"]],
        "{}",
        run.stdout
    );
    let run = s.tree.scan(&["--only", "gfx1100,gfx942,gfx900", "--wide"]);
    run.expect_code(0);
    let rows = first_cells(&run.stdout, "TARGET");
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(names, ["gfx1100", "gfx942", "gfx900"], "{}", run.stdout);
    assert_eq!(rows[1], ["gfx942", "Instinct MI300X", "—", "—", "—", "—", "—"], "{}", run.stdout);

    let run = s.tree.scan(&["--json", "--only", "gfx942,gfx900"]);
    run.expect_code(0);
    // The targets map keeps the order asked for.
    let targets_at = run.stdout.find("\"targets\": {").unwrap_or_else(|| panic!("{}", run.stdout));
    let key =
        |t: &str| run.stdout[targets_at..].find(&format!("\"{t}\": {{")).unwrap_or_else(|| panic!("{t}"));
    assert!(key("gfx942") < key("gfx900"), "{}", run.stdout);
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
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(run.stderr.contains(r#"--only: unknown GPU target "gfx9999""#), "{}", run.stderr);
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

/// The format follows `-o FILE`'s extension unless `--format` says otherwise (issue 23: `-o
/// report.html` and `-o snap.json` wrote the text table); check and diff refuse `.csv`.
#[test]
fn the_format_follows_the_output_extension() {
    let s = small();
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| dir.path().join(name).display().to_string();
    let root = s.tree.root_str();
    s.tree.scan(&["-o", &at("snap.json")]).expect_code(0);
    let json = std::fs::read_to_string(at("snap.json")).expect("written");
    assert!(json.starts_with('{') && json.contains("\"schema_version\""), "{json}");
    s.tree.scan(&["-o", &at("report.HTML")]).expect_code(0);
    assert!(std::fs::read_to_string(at("report.HTML")).expect("written").starts_with("<!DOCTYPE html>"));
    s.tree.scan(&["-o", &at("table.md")]).expect_code(0);
    assert!(std::fs::read_to_string(at("table.md")).expect("written").contains("| target"));
    s.tree.scan(&["-o", &at("rows.csv")]).expect_code(0);
    assert!(std::fs::read_to_string(at("rows.csv")).expect("written").starts_with("target,product,"));
    // --format wins over the extension.
    s.tree.scan(&["--format", "table", "-o", &at("plain.json")]).expect_code(0);
    assert!(std::fs::read_to_string(at("plain.json")).expect("written").starts_with("gfxscan "));
    let check = crate::util::gfxscan(["check", "-q", &root, "--gpu", "gfx900", "-o", &at("verdicts.json")]);
    check.expect_code(0);
    assert!(std::fs::read_to_string(at("verdicts.json")).expect("written").contains("\"outcome\""));
    let csv = crate::util::gfxscan(["check", "-q", &root, "--gpu", "gfx900", "-o", &at("verdicts.csv")]);
    csv.expect_code(0);
    let rows = std::fs::read_to_string(at("verdicts.csv")).expect("written");
    assert!(rows.starts_with("install,gpu,target,checked_as,library,kind,status,detail\n"), "{rows}");
    let uris_to = format!("uris={}", at("verdicts.uris"));
    let uris = crate::util::gfxscan(["check", "-q", &root, "--gpu", "gfx900", "-o", &uris_to]);
    uris.expect_code(2);
    assert!(uris.stderr.contains("no uris output"), "{}", uris.stderr);
    assert!(!std::path::Path::new(&at("verdicts.uris")).exists());
}

/// One error prefix: gfxscan's own errors read as clap's do (`error: …`).
#[test]
fn errors_have_one_prefix() {
    let clap = crate::util::gfxscan(["scan", "--no-such-option"]);
    let ours =
        crate::util::gfxscan(["scan", "-q", "/nonexistent/gfxscan/root", "-o", "/nonexistent-dir/x.json"]);
    for run in [clap, ours] {
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    }
}
