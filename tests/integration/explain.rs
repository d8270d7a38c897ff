//! `gfxscan explain`: the gate matrix holds scan's counts and check's verdicts (the same
//! answers, not a second judgement), reads the install's ROCm release from its own files, cites
//! a source on every vendor row, and reads as a table, Markdown, JSON and HTML.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::{gfxscan, run, Run, Tree};

/// The three targets the issue names: left the support list, never on it, on it.
const TARGETS: [&str; 3] = ["gfx900", "gfx1031", "gfx1100"];

/// Runs gfxscan with every `HSA_*` variable of the test process removed and `env` set.
fn gfxscan_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("HSA_") {
            cmd.env_remove(&k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

/// [`crate::explain_agrees::assert_explain_agrees`] through this suite's runner, which
/// validates every JSON document against its schema.
pub fn assert_explain_agrees(root: &Path, target: &str) -> Value {
    crate::explain_agrees::assert_explain_agrees(root, target, &|args, env| {
        let r = gfxscan_env(args, env);
        (r.code, r.stdout)
    })
}

#[test]
fn explain_on_the_sample_counts_as_scan_and_judges_as_check() {
    for t in TARGETS {
        let doc = assert_explain_agrees(Path::new("sample"), t);
        // Every vendor and build row cites where its fact comes from.
        for r in doc["policy"].as_array().expect("policy rows") {
            assert!(!r["source"].as_str().unwrap_or("").is_empty(), "{r}");
            assert!(["allows", "blocks", "unknown"].contains(&r["verdict"].as_str().unwrap()), "{r}");
        }
    }
}

#[test]
fn vendor_rows_say_what_the_cited_lists_say() {
    let doc = gfxscan(["explain", "-q", "gfx900", "sample", "--json"]).json();
    let policy = doc["policy"].as_array().unwrap();
    let linux = &policy[0];
    assert_eq!(linux["gate"], "ROCm 7.2.0 support list (newest known)");
    assert_eq!(linux["verdict"], "blocks");
    assert!(linux["says"].as_str().unwrap().contains("listed as unsupported in 6.0.0–6.1.2"), "{linux}");
    assert!(linux["source"].as_str().unwrap().starts_with("compat-matrix 7.2.0"));
    let therock = policy.iter().find(|r| r["gate"].as_str().unwrap().starts_with("TheRock")).unwrap();
    assert_eq!(therock["verdict"], "allows");
    let says = therock["says"].as_str().unwrap();
    assert!(says.starts_with("can build it (since therock-7.13); families dgpu-all, gfx900-dgpu"), "{says}");
    assert!(says.contains("without hipBLASLt"), "{therock}");
    // Ollama's official builds dropped gfx900 in v0.12.4 and the preset in force keeps it out.
    let official = policy.iter().find(|r| r["gate"] == "Ollama official Linux builds").unwrap();
    assert_eq!(official["verdict"], "blocks");
    assert!(official["says"].as_str().unwrap().ends_with("; kept in v0.5.8–v0.12.4"), "{official}");
    // The source builds' filter was removed in v0.30.0: what it did, and unknown now.
    let ollama = policy.iter().find(|r| r["gate"] == "Ollama source builds without AMDGPU_TARGETS").unwrap();
    assert_eq!(ollama["verdict"], "unknown");
    assert!(
        ollama["says"].as_str().unwrap().ends_with("kept in v0.5.8–v0.12.4; no filter since v0.30.0"),
        "{ollama}"
    );
    // A source build for the build machine's GPUs: unknown.
    let host = policy.iter().find(|r| r["gate"] == "llama.cpp source builds without GPU_TARGETS").unwrap();
    assert_eq!(host["verdict"], "unknown");
    // gfx1100 is on every list; gfx1031 only on Windows, runtime only.
    let doc = gfxscan(["explain", "-q", "gfx1100", "--json", "sample"]).json();
    assert_eq!(doc["policy"][0]["verdict"], "allows");
    let doc = gfxscan(["explain", "-q", "RX 6700 XT", "--json", "sample"]).json();
    assert_eq!(doc["target"]["name"], "gfx1031", "a product names its target, as --gpu takes it");
    // The newest Windows lists were read only in part and do not name it: unknown, with what
    // the complete older lists said.
    let windows = doc["policy"][1]["says"].as_str().unwrap();
    assert_eq!(doc["policy"][1]["verdict"], "unknown", "{windows}");
    assert!(windows.starts_with("unknown: the list was read only in part"), "{windows}");
    assert!(windows.contains("runtime only (no HIP SDK libraries) in 6.0.0–6.2.4"), "{windows}");
}

/// Issue 34: a list older than the newest release the table knows never blocks a target by
/// leaving it out: with only the Windows lists up to docs/6.2.4 recorded (2024-08-20), a
/// gfx1151 is unknown on Windows, not blocked, and the row says how old the list is; a target
/// that list names as unsupported is still blocked.
#[test]
fn a_list_older_than_the_newest_release_never_blocks_by_omission() {
    let table = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/targets.toml")).unwrap();
    let old_only: String = table
        .split("[[release]]")
        .filter(|b| !b.contains("windows-gpus-rendered docs-"))
        .collect::<Vec<_>>()
        .join("[[release]]");
    let t = Tree::new();
    t.file("targets.toml", old_only.as_bytes());
    let file = t.path("targets.toml").to_string_lossy().into_owned();
    let doc = gfxscan(["explain", "-q", "gfx1151", "--json", "--targets", &file, "sample"]).json();
    let windows = &doc["policy"][1];
    assert_eq!(windows["gate"], "Windows docs 6.2.0, 6.2.4 support list (newest known)", "{windows}");
    assert_eq!(windows["verdict"], "unknown", "{windows}");
    let says = windows["says"].as_str().unwrap();
    assert!(
        says.starts_with(
            "unknown: the newest recorded list is Windows docs 6.2.0, 6.2.4 (2024-08-20), older than 7.2.0"
        ),
        "{says}"
    );
    let doc = gfxscan(["explain", "-q", "gfx906", "--json", "--targets", &file, "sample"]).json();
    assert_eq!(doc["policy"][1]["verdict"], "blocks", "listed as unsupported is no omission");
}

#[test]
fn the_release_is_read_from_the_install_and_its_list_applied() {
    let tree = Tree::new();
    copy_dir(Path::new("sample/opt/rocm"), &tree.path("opt/rocm"));
    tree.file("opt/rocm/.info/version", b"6.2.4-120\n");
    for (t, verdict, says) in [
        ("gfx900", "blocks", "listed as unsupported"),
        ("gfx906", "allows", "deprecated"),
        ("gfx1100", "allows", "supported"),
        ("gfx1031", "blocks", "not listed"),
    ] {
        let doc = assert_explain_agrees(tree.root(), t);
        let i = &doc["installs"][0];
        assert_eq!(i["release"]["releases"], serde_json::json!(["6.2.4"]), "{t}");
        assert_eq!(i["release"]["source"], "info-version");
        let row = &i["rows"][0];
        assert_eq!(row["gate"], "ROCm 6.2.4 support list (this install's release)");
        assert_eq!(row["verdict"], verdict, "{t}: {row}");
        assert!(row["says"].as_str().unwrap().starts_with(says), "{t}: {row}");
        assert!(row["source"].as_str().unwrap().contains("linux-gpus docs/6.2.4"), "{row}");
        assert!(row["source"].as_str().unwrap().contains("opt/rocm/.info/version"), "{row}");
    }
    // A release the table does not hold is unknown, and says so.
    tree.file("opt/rocm/.info/version", b"5.7.1\n");
    let doc = gfxscan(["explain", "-q", "gfx1100", "--json", &tree.root_str()]).json();
    let row = &doc["installs"][0]["rows"][0];
    assert_eq!(row["verdict"], "unknown", "{row}");
    assert!(row["says"].as_str().unwrap().starts_with("5.7.1 ("), "{row}");
}

/// A layer the roots hold for other targets only gates as check judges its absence, with
/// check's words for this GPU: hipBLASLt's gap for a GPU PyTorch sends to hipBLASLt by default
/// (gfx942) is that rule's, unknown, never blocks; MIOpen's allows (issue 33).
#[test]
fn an_absent_layer_gates_and_reads_as_check_judges_it() {
    let doc = gfxscan(["explain", "-q", "gfx942", "--json", "sample"]).json();
    let row =
        |gate: &str| doc["ships"].as_array().expect("ships").iter().find(|r| r["gate"] == gate).cloned();
    let h = row("hipblaslt").expect("a hipblaslt row");
    assert_eq!(h["verdict"], "unknown", "{h}");
    assert!(
        h["says"]
            .as_str()
            .unwrap_or_default()
            .contains("PyTorch sends this GPU's GEMMs to hipBLASLt by default"),
        "{h}"
    );
    let p = row("perf-db").expect("a perf-db row");
    assert_eq!(p["verdict"], "allows", "{p}");
}

/// Issue 34: a version of a release line the table lists, but a patch or a HIP build it does
/// not (Debian's ROCm 7.2 packages: libamdhip64.so.7.2.<build>), is taken as the newest release
/// of its line, said so — not "no release in the table".
#[test]
fn a_version_the_table_lacks_is_taken_by_its_release_line() {
    let tree = Tree::new();
    copy_dir(Path::new("sample/opt/rocm"), &tree.path("opt/rocm"));
    tree.file("opt/rocm/.info/version", b"7.2.3\n");
    let doc = gfxscan(["explain", "-q", "gfx1100", "--json", &tree.root_str()]).json();
    let release = &doc["installs"][0]["release"];
    assert_eq!(release["releases"], serde_json::json!(["7.2.0"]), "{release}");
    let line = release["line"].as_str().unwrap_or_default();
    assert_eq!(line, "7.2.x: 7.2.3 is not in the table; its newest 7.2 release there is 7.2.0");
    let row = &doc["installs"][0]["rows"][0];
    assert_eq!(row["gate"], "ROCm 7.2.0 support list (this install's release)", "{row}");
    assert!(row["says"].as_str().unwrap_or_default().ends_with(line), "{row}");
    // A HIP runtime of a build the table lacks, with no rocm-core file: its line too.
    let hip = Tree::new();
    copy_dir(Path::new("sample/opt/rocm"), &hip.path("opt/rocm"));
    let elf = gfxscan::testing::dynamic_elf(&gfxscan::testing::DynamicSpec::default());
    hip.file("opt/rocm/lib/libamdhip64.so.7.2.53211", &elf);
    let doc = gfxscan(["explain", "-q", "gfx1100", "--json", &hip.root_str()]).json();
    let release = &doc["installs"][0]["release"];
    assert_eq!(
        (release["source"].as_str(), &release["releases"]),
        (Some("hip-runtime"), &serde_json::json!(["7.2.0"]))
    );
    assert_eq!(
        release["line"], "7.2.x: HIP build 53211 is not in the table; its newest 7.2 release there is 7.2.0",
        "{release}"
    );
    let says = doc["installs"][0]["rows"][0]["says"].as_str().unwrap_or_default().to_string();
    assert!(!says.contains("is no release in targets.toml's table"), "{says}");
}

#[test]
fn a_therock_install_is_judged_by_its_own_release_and_declared_targets() {
    let tree = Tree::new();
    copy_dir(Path::new("sample/opt/rocm"), &tree.path("opt/rocm"));
    tree.file("opt/rocm/.info/version", b"7.11.0\n");
    tree.file("opt/rocm/share/therock/dist_info.json", br#"{"dist_amdgpu_targets": "gfx1100;gfx1151"}"#);
    // The release can build gfx1100 (unknown: one TheRock dist holds one family), and this
    // dist declares it (allows); gfx900 neither; gfx1030 the release can, the dist does not.
    for (t, release, declared, vendor) in [
        ("gfx1100", "unknown", "allows", "unknown"),
        ("gfx900", "blocks", "blocks", "blocks"),
        ("gfx1030", "unknown", "blocks", "blocks"),
    ] {
        let doc = assert_explain_agrees(tree.root(), t);
        let rows = doc["installs"][0]["rows"].as_array().expect("rows");
        assert_eq!(rows[0]["gate"], "therock-7.11 targets (this install's release)", "{t}");
        assert_eq!(rows[0]["verdict"], release, "{t}: {}", rows[0]);
        assert_eq!(rows[1]["gate"], "this install's declared targets");
        assert_eq!(rows[1]["verdict"], declared, "{t}: {}", rows[1]);
        assert!(rows[1]["source"]
            .as_str()
            .unwrap()
            .ends_with("opt/rocm/share/therock/dist_info.json (dist_amdgpu_targets)"));
        let text = gfxscan(["explain", "-q", t, &tree.root_str()]).stdout;
        assert!(text.contains(&format!("opt/rocm: vendor {vendor};")), "{t}: {text}");
    }
}

/// An install read from an AMD `.deb` takes its release from the package's version
/// (`<module version>.<release version>-<build id>`).
#[test]
fn an_amd_package_says_its_release() {
    use crate::archives::file;
    use crate::fixtures::{co, host_lib, GFX1100};
    let tree = Tree::new();
    let control = b"Package: rocblas\nVersion: 4.4.1.60401-83~22.04\nArchitecture: amd64\n";
    let lib = host_lib(&[("gfx1100", &co(GFX1100, 0, 2))]);
    let deb = crate::cyclonedx::deb(control, &[file("opt/rocm-6.4.1/lib/librocblas.so.4", lib)], false);
    tree.file("pkgs/rocblas_4.4.1.60401-83~22.04_amd64.deb", &deb);
    for (t, verdict) in [("gfx1100", "allows"), ("gfx900", "blocks")] {
        let doc = assert_explain_agrees(tree.root(), t);
        let i = &doc["installs"][0];
        assert_eq!(i["kind"], "rocm", "AMD's own package: AMD's list applies");
        assert_eq!(i["release"]["source"], "package", "{t}: {i}");
        assert_eq!(i["release"]["releases"], serde_json::json!(["6.4.1"]));
        assert_eq!(i["rows"][0]["gate"], "ROCm 6.4.1 support list (this install's release)");
        assert_eq!(i["rows"][0]["verdict"], verdict, "{t}");
        assert!(i["rows"][0]["source"].as_str().unwrap().contains("rocblas 4.4.1.60401-83~22.04"));
    }
}

/// A Windows HIP SDK install is not judged by a Linux list: the Windows lists are by docs
/// branch, with no HIP SDK release said.
#[test]
fn a_windows_hip_sdk_install_is_not_judged_by_a_linux_list() {
    let tree = Tree::new();
    copy_dir(Path::new("sample/opt/rocm/lib/rocblas"), &tree.path("Program Files/AMD/ROCm/6.2/bin/rocblas"));
    tree.file(
        "Program Files/AMD/ROCm/6.2/include/rocm-core/rocm_version.h",
        b"#define ROCM_VERSION_MAJOR 6\n#define ROCM_VERSION_MINOR 2\n#define ROCM_VERSION_PATCH 4\n",
    );
    let doc = assert_explain_agrees(tree.root(), "gfx942");
    let i = &doc["installs"][0];
    assert_eq!(i["release"]["platform"], "windows", "{i}");
    assert_eq!(i["rows"][0]["verdict"], "unknown", "{}", i["rows"][0]);
    assert!(i["rows"][0]["says"].as_str().unwrap().starts_with("a Windows install"), "{}", i["rows"][0]);
}

#[test]
fn the_override_row_is_checks_answer_under_the_override() {
    let doc = assert_explain_agrees(Path::new("sample"), "gfx1031");
    let i = &doc["installs"][0];
    let row = i["rows"].as_array().unwrap().iter().find(|r| r["section"] == "override").unwrap();
    assert_eq!(row["gate"], "HSA_OVERRIDE_GFX_VERSION=10.3.0 (runs as gfx1030)");
    let still = i["with_override"]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["status"] == "missing")
        .count();
    assert_eq!(row["verdict"], if still == 0 { "allows" } else { "blocks" }, "{row}");
    // No ISA-compatible target recorded: unknown, with no second check.
    let doc = gfxscan(["explain", "-q", "gfx900", "sample", "--json"]).json();
    let row = doc["installs"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == "override")
        .unwrap()
        .clone();
    assert_eq!(row["verdict"], "unknown");
}

#[test]
fn explain_reads_as_a_table_markdown_and_a_page() {
    // Short by default (issue 35, item 2): the summary and the gates that block, one line each.
    let short = gfxscan(["explain", "-q", "gfx900", "sample"]);
    assert!(short.stdout.lines().count() <= 20, "{}", short.stdout);
    assert!(short.stdout.contains("\nBlocked by ("), "{}", short.stdout);
    assert!(short.stdout.contains("\n  lib/rocblas/library/: MISSING: "), "{}", short.stdout);
    assert!(!short.stdout.contains("What the roots ship"), "{}", short.stdout);
    let text = gfxscan(["explain", "-q", "-v", "gfx900", "sample"]);
    for part in [
        "gfx900 · Radeon RX Vega 64",
        "Vendor policy",
        "Default builds",
        "What the roots ship",
        "What the runtime finds",
        "Override",
    ] {
        assert!(text.stdout.contains(part), "{part}:\n{}", text.stdout);
    }
    assert!(text.stdout.lines().all(|l| l == l.trim_end()), "no line ends in a space");
    for verbose in [&[][..], &["-v"][..]] {
        let args = [&["explain", "-q", "gfx1031", "sample"][..], verbose].concat();
        let narrow = gfxscan_env(&args, &[("COLUMNS", "80")]);
        for l in narrow.stdout.lines() {
            assert!(l.chars().count() <= 80, "{} columns: {l}", l.chars().count());
        }
    }
    let md = gfxscan(["explain", "-q", "-v", "gfx900", "sample", "--format", "markdown"]);
    assert!(md.stdout.contains("\n| gate "), "{}", md.stdout);
    // A regex's `|` is escaped: every row of a section's table has its five pipes.
    for l in md.stdout.lines().filter(|l| l.starts_with('|')) {
        assert_eq!(l.matches('|').count() - l.matches("\\|").count(), 5, "{l}");
    }
    let html = gfxscan(["explain", "-q", "gfx900", "sample", "--format", "html"]);
    assert!(html.stdout.starts_with("<!DOCTYPE html>") && html.stdout.contains("<h2>Vendor policy</h2>"));
    // The scan page carries the gates of every processor its per-target table shows, and
    // each cell is the verdict explain gives.
    let page = gfxscan(["scan", "-q", "sample", "--format", "html"]).stdout;
    let (table, gates) = page.split_once("Gates per target").expect("the scan page's gate matrix");
    let heads = |html: &str| -> Vec<String> {
        html.split("<th")
            .skip(1)
            .filter_map(|h| h.split_once('>').map(|(_, r)| r.split('<').next().unwrap_or("").to_string()))
            .collect()
    };
    let per_target = table.rsplit("<h2>Per target</h2>").next().unwrap().split("</table>").next().unwrap();
    let rows: Vec<String> = per_target
        .split("<tr><td class=\"l\">")
        .skip(1)
        .map(|r| r.split('<').next().unwrap().to_string())
        .collect();
    let processors: Vec<&String> = rows.iter().filter(|t| !t.contains("generic")).collect();
    let columns: Vec<String> = heads(gates).into_iter().filter(|h| !h.is_empty() && h != "gate").collect();
    assert_eq!(
        columns.iter().collect::<Vec<_>>(),
        processors,
        "a gate column per processor row of the page's table"
    );
    for t in ["gfx900", "gfx1031", "gfx1100"] {
        let doc = gfxscan(["explain", "-q", t, "sample", "--json"]).json();
        let k = columns.iter().position(|c| c == t).expect("a column") % 7;
        let block = gates.split("<table").find(|b| heads(b).iter().any(|h| h == t)).expect("its block");
        for r in doc["policy"].as_array().unwrap() {
            let gate = r["gate"].as_str().unwrap();
            let row =
                block.split("<tr>").find(|x| x.starts_with(&format!("<td class=\"l\">{gate}<"))).expect(gate);
            let cell = row.split("<td class=\"m ").nth(k + 1).expect("the cell");
            let word = cell.split('>').nth(1).unwrap().split('<').next().unwrap();
            assert_eq!(word, r["verdict"].as_str().unwrap(), "{t}: {gate}");
        }
    }
}

#[test]
fn an_unknown_target_is_an_error_of_the_arguments() {
    let r = gfxscan(["explain", "-q", "gfx9999", "sample"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("gfx9999"), "{}", r.stderr);
}

/// Copies a folder's files and links, as `cp -a` would.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// `targets --policy-age`: every recorded list with its kind, date and age, the age counted to
/// `SOURCE_DATE_EPOCH` when set.
#[test]
fn policy_age_lists_every_list_with_its_age() {
    // 2026-01-31: ten days after the compatibility matrix's commit of 2026-01-21.
    let run = gfxscan_env(
        &["targets", "--policy-age", "--color", "never"],
        &[("SOURCE_DATE_EPOCH", "1769817600"), ("COLUMNS", "200")],
    );
    run.expect_code(0);
    let first = run.stdout.lines().find(|l| l.contains("ROCm 7.2.0 ")).expect("the 7.2.0 list");
    assert!(first.contains("compatibility matrix") && first.contains("2026-01-21"), "{first}");
    assert_eq!(first.split_whitespace().nth(5), Some("10"), "{first}");
    let partial = run.stdout.lines().find(|l| l.contains("Windows docs 6.4.2")).expect("6.4.2");
    assert!(partial.contains("page read in part"), "{partial}");
    let lists =
        run.stdout.lines().filter(|l| l.starts_with(" ROCm ") || l.starts_with(" Windows docs ")).count();
    assert_eq!(lists, 25);
    gfxscan(["targets", "--policy-age", "--json"]).expect_code(2);
}
