//! `gfxscan targets`, `--targets FILE`, and the fatal paths of `gfxscan scan` (exit 2).

use std::path::Path;

use crate::fixtures::{co, GFX1100, GFX90A, XNACK_ON};
use crate::util::{gfxscan, Tree};

#[test]
fn targets_table() {
    // Into a pipe, 100 columns, whatever width the test runner's terminal had.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.arg("targets").env_remove("COLUMNS");
    let run = crate::util::run(cmd);
    run.expect_code(0);
    let mut lines = run.stdout.lines();
    let first = lines.next().expect("first line");
    assert!(first.ends_with("targets from built-in"), "{first}");
    let header = lines.next().expect("header");
    // At 100 columns the products and the Linux releases stay; machine values give way, and a
    // note names them.
    assert!(header.contains("NAME") && header.contains("MACH") && header.contains("PRODUCTS"), "{header}");
    assert!(header.contains("ROCM"), "{header}");
    assert!(run.stdout.contains("Not shown, to fit 100 columns: "), "{}", run.stdout);
    let row = run
        .stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some("gfx90a"))
        .unwrap_or_else(|| panic!("no gfx90a row:\n{}", run.stdout));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..3], ["gfx90a", "0x03f", "gfx9"], "{row}");
    // Each target's products as targets.toml lists them: the first, and how many more; then
    // the Linux releases that list it (compat-matrix: gfx1100 in every one of 6.0.0–7.2.0).
    let json = gfxscan(["targets", "--json"]).json();
    let gfx1100 = json["targets"].as_array().expect("targets").iter().find(|t| t["name"] == "gfx1100");
    let products = gfx1100.and_then(|t| t["products"].as_array()).expect("gfx1100 has products");
    let want = format!("{} (+{} more)", products[0].as_str().expect("a name"), products.len() - 1);
    let row = run.stdout.lines().find(|l| l.split_whitespace().next() == Some("gfx1100")).expect("gfx1100");
    assert!(row.contains(&want) && row.ends_with(" 6.0.0–7.2.0"), "{row}");
    let row = run.stdout.lines().find(|l| l.split_whitespace().next() == Some("gfx1101")).expect("gfx1101");
    assert!(row.ends_with(" 6.3.0, 6.4.1–7.2.0"), "{row}");
    // Wide enough, every column: the machine values and the Windows lists too.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.arg("targets").env("COLUMNS", "250");
    let wide = crate::util::run(cmd);
    let row = wide.stdout.lines().find(|l| l.split_whitespace().next() == Some("gfx1031")).expect("gfx1031");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..5], ["gfx1031", "0x037", "gfx10.3", "gfx10-3-generic", "100301"], "{row}");
    assert!(row.ends_with(" 6.0.0–6.2.4"), "Windows, runtime only: {row}");
    assert!(!wide.stdout.contains("Not shown"), "{}", wide.stdout);
    assert!(run.stdout.lines().all(|l| !l.ends_with(' ')), "no line ends in a space:\n{}", run.stdout);
}

#[test]
fn targets_json() {
    let run = gfxscan(["targets", "--json"]);
    run.expect_code(0);
    let v = run.json();
    assert_eq!(v["origin"], "built-in");
    let list = v["targets"].as_array().expect("targets array");
    assert!(list.len() >= 70, "{}", list.len());
    let gfx90a = list.iter().find(|t| t["name"] == "gfx90a").expect("gfx90a listed");
    assert_eq!(gfx90a["mach"], 0x3f);
    assert_eq!(gfx90a["features"], serde_json::json!(["sramecc", "xnack"]));
    // Sorted by mach, as targets.toml promises.
    let machs: Vec<u64> = list.iter().map(|t| t["mach"].as_u64().expect("mach")).collect();
    assert!(machs.windows(2).all(|w| w[0] < w[1]), "{machs:?}");
    // The first line of the table says how many.
    let table = gfxscan(["targets"]);
    assert!(table.stdout.starts_with(&format!("{} targets from built-in", list.len())));
}

const BROKEN_TARGETS: &str = r#"schema = 1

[[target]]
name = "gfx90a"
mach = 0x03f
family = "gfx9"
features = ["sramecc", "xnack"]
source = "test"

[[target]]
name = "gfx942"
mach = 0x03f
family = "gfx9.4"
features = ["bogus"]
source = "test"
"#;

#[test]
fn broken_targets_file_lists_every_error() {
    let tree = Tree::new();
    tree.file("targets.toml", BROKEN_TARGETS.as_bytes());
    let file = tree.path("targets.toml");
    let file_str = file.to_str().expect("UTF-8 temp path");
    for args in [vec!["targets", "--targets", file_str], vec!["scan", "--targets", file_str, file_str]] {
        let run = gfxscan(&args);
        run.expect_code(2);
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(run.stderr.contains("invalid targets file"), "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains(&format!(r#"{file_str}: target "gfx942": mach 0x3f already used by "gfx90a""#)),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&format!(r#"{file_str}: target "gfx942": unknown feature "bogus""#)),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn missing_targets_file_is_fatal() {
    let run = gfxscan(["targets", "--targets", "/nonexistent/gfxscan-targets.toml"]);
    run.expect_code(2);
    assert!(run.stderr.contains("/nonexistent/gfxscan-targets.toml"), "{}", run.stderr);
}

/// A custom table replaces the built-in one: processors it lacks stay visible as unknown.
#[test]
fn custom_targets_file_drives_resolution() {
    let tree = Tree::new();
    tree.file(
        "t/targets.toml",
        b"schema = 1\n[[target]]\nname = \"gfx1100\"\nmach = 0x041\nfamily = \"gfx11\"\nfeatures = []\nsource = \"test\"\n",
    );
    tree.file("scan/a.co", &co(GFX1100, 0, 1));
    tree.file("scan/b.co", &co(GFX90A, XNACK_ON, 1));
    let run = gfxscan([
        "scan",
        tree.path("scan").to_str().expect("UTF-8"),
        "--json",
        "--targets",
        tree.path("t/targets.toml").to_str().expect("UTF-8"),
    ]);
    run.expect_code(0);
    let snap = run.json();
    let keys: Vec<&String> = snap["targets"].as_object().expect("targets").keys().collect();
    assert_eq!(keys, ["gfx1100", "unknown-0x3f"]);
    assert_eq!(snap["files"][1]["code_objects"][0]["target_id"], "unknown-0x3f:xnack+");
}

/// With no ROOT and none of the default places present, the scan refuses to run.
#[test]
fn no_default_root_is_fatal() {
    let fixed = ["/opt/rocm", "/usr/lib/ollama", "/usr/local/lib/ollama", "/lib/firmware/amdgpu"];
    let present: Vec<&str> = fixed.iter().copied().filter(|p| Path::new(p).exists()).collect();
    if !present.is_empty() || !gfxscan::source::walk::default_roots().is_empty() {
        crate::util::skipped(&format!("default roots exist on this machine ({present:?})"));
        return;
    }
    let run = gfxscan(["scan"]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("none of the default roots exists"), "{}", run.stderr);
    assert!(run.stderr.contains("/opt/rocm"), "{}", run.stderr);
}

#[test]
fn missing_root_is_fatal() {
    let tree = Tree::new();
    let missing = tree.path("no/such/dir");
    let run = gfxscan(["scan", missing.to_str().expect("UTF-8"), "--json"]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains(missing.to_str().expect("UTF-8")), "{}", run.stderr);
    assert!(run.stderr.contains("No such file or directory"), "{}", run.stderr);
}

/// One missing root among good ones still stops the run before any output.
#[test]
fn one_missing_root_among_several_is_fatal() {
    let tree = Tree::new();
    tree.file("ok/a.co", &co(GFX1100, 0, 1));
    let ok = tree.path("ok");
    let missing = tree.path("gone");
    let run = gfxscan(["scan", ok.to_str().expect("UTF-8"), missing.to_str().expect("UTF-8")]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains(missing.to_str().expect("UTF-8")), "{}", run.stderr);
}

/// Two roots, one reached twice: the duplicate is dropped, `root` indexes the kept ones.
#[test]
fn duplicate_roots_are_scanned_once() {
    let tree = Tree::new();
    tree.file("x/a.co", &co(GFX1100, 0, 1));
    tree.file("y/b.co", &co(GFX90A, 0, 1));
    tree.symlink("x", "x-again");
    let (x, y, x2) = (tree.path("x"), tree.path("y"), tree.path("x-again"));
    let run = gfxscan([
        "scan",
        "--json",
        x.to_str().expect("UTF-8"),
        x2.to_str().expect("UTF-8"),
        y.to_str().expect("UTF-8"),
    ]);
    run.expect_code(0);
    let snap = run.json();
    assert_eq!(snap["summary"]["code_objects"], 2, "x scanned once");
    let roots: Vec<&str> =
        snap["files"].as_array().expect("files").iter().map(|f| f["path"].as_str().expect("path")).collect();
    assert_eq!(roots, ["a.co", "b.co"]);
    // Each file's root index must name the root it was found under.
    for f in snap["files"].as_array().expect("files") {
        let root = snap["roots"][f["root"].as_u64().expect("root") as usize].as_str().expect("root str");
        let name = f["path"].as_str().expect("path");
        assert!(Path::new(root).join(name).exists(), "{root} + {name}");
    }
}

/// Shell completions and the man page come from the command line's own definition
/// (clap_complete, clap_mangen), so they cannot drift from it.
#[test]
fn completions_and_man_page_are_generated() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = crate::util::gfxscan(["completions", shell]);
        run.expect_code(0);
        for sub in ["scan", "check", "diff", "targets", "schema"] {
            assert!(run.stdout.contains(sub), "{shell}: no {sub}");
        }
    }
    // The bash script parses.
    let script = crate::util::gfxscan(["completions", "bash"]).stdout;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gfxscan.bash");
    std::fs::write(&path, script).expect("write");
    let bash = std::process::Command::new("bash").arg("-n").arg(&path).status().expect("bash");
    assert!(bash.success());
    let man = crate::util::gfxscan(["man"]);
    man.expect_code(0);
    assert!(man.stdout.contains(".TH gfxscan 1") && man.stdout.contains("check"), "{}", man.stdout);
    // gfxscan(1) refers to gfxscan-scan(1) and the others: each has its page.
    for sub in ["scan", "check", "explain", "diff", "merge", "schema"] {
        let page = crate::util::gfxscan(["man", sub]);
        page.expect_code(0);
        assert!(page.stdout.contains(&format!(".TH gfxscan-{sub} 1")), "{}", page.stdout);
        assert!(page.stdout.contains(&format!("gfxscan {sub}")), "{}", page.stdout);
    }
    let none = crate::util::gfxscan(["man", "nope"]);
    none.expect_code(2);
    assert!(none.stderr.contains("no subcommand \"nope\""), "{}", none.stderr);
    crate::util::gfxscan(["completions", "tcsh"]).expect_code(2);
}

/// Manual pages say what each exit status means and show examples (issue 23), for gfxscan(1)
/// and every subcommand's page.
#[test]
fn man_pages_have_exit_status_and_examples() {
    for sub in
        [None, Some("scan"), Some("check"), Some("diff"), Some("merge"), Some("targets"), Some("schema")]
    {
        let mut args = vec!["man"];
        args.extend(sub);
        let run = crate::util::gfxscan(&args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        for section in [".SH \"EXIT STATUS\"", ".SH EXAMPLES"] {
            assert!(run.stdout.contains(section), "{args:?} lacks {section}");
        }
        for code in 0..=5 {
            assert!(run.stdout.contains(&format!(".TP\n\\fB{code}\\fR\n")), "{args:?}: exit {code}");
        }
        let examples = run.stdout.split(".SH EXAMPLES").nth(1).unwrap_or_default();
        assert!(examples.contains("\\fBgfxscan "), "{args:?}: no example");
    }
}

/// `-q` is accepted by every command, as scripts pass it to all (issue 35, item 4), and changes
/// nothing on standard output.
#[test]
fn every_command_takes_quiet() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/sample");
    let before = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/sample-before.json");
    let commands: [&[&str]; 9] = [
        &["scan", sample, "--json"],
        &["check", sample, "--gpu", "gfx1100", "--json"],
        &["diff", before, before, "--json"],
        &["merge", before, "--json"],
        &["explain", "gfx1100", sample, "--json"],
        &["targets"],
        &["schema", "check"],
        &["man", "scan"],
        &["completions", "bash"],
    ];
    for args in commands {
        let plain = gfxscan(args);
        let quiet = gfxscan([&args[..1], &["-q"][..], &args[1..]].concat());
        assert_ne!(quiet.code, 2, "{args:?}: {}", quiet.stderr);
        assert_eq!((quiet.code, quiet.stdout.len()), (plain.code, plain.stdout.len()), "{args:?}");
    }
}
