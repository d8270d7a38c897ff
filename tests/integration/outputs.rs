//! Several outputs from one run (`-o FORMAT=FILE`), and the formats for other tools: the
//! Prometheus text (linted by `promtool check metrics`), JSON Lines and code object URIs. Each
//! view is held equal to the JSON document it is made from.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::fixtures::{co, host_lib, mixed, GFX1100};
use crate::util::{gfxscan, run, skipped, Tree};

/// `-o json=A -o html=B -o C.prom -o jsonl=D -o uris=E`: each file holds what a run with only
/// that format writes, byte for byte; the exit code is the run's.
#[test]
fn one_run_writes_each_output_in_its_format() {
    let m = mixed();
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| dir.path().join(name).display().to_string();
    let root = m.tree.root_str();
    let (j, h, p, l, u) = (at("snap"), at("page.html"), at("metrics.prom"), at("lines"), at("uris.txt"));
    let outs =
        [format!("json={j}"), format!("html={h}"), p.clone(), format!("jsonl={l}"), format!("uris={u}")];
    let mut args = vec!["scan".to_string(), "-q".into(), root.clone()];
    for o in &outs {
        args.extend(["-o".to_string(), o.clone()]);
    }
    let both = gfxscan(&args);
    both.expect_code(0);
    assert!(both.stdout.is_empty(), "every output went to a file: {}", both.stdout);
    for (file, format) in [(&j, "json"), (&h, "html"), (&p, "prometheus"), (&l, "jsonl"), (&u, "uris")] {
        let alone = gfxscan(["scan", "-q", &root, "--format", format]);
        alone.expect_code(0);
        let written = std::fs::read_to_string(file).expect("written");
        assert_eq!(
            written, alone.stdout,
            "{format}: one run of several outputs writes what a run of one does"
        );
    }
}

/// Refused before any scanning: a format the command does not write, two outputs to one place,
/// `FORMAT=` without a file. A name whose part before `=` is no format is a file.
#[test]
fn outputs_are_checked_before_the_scan() {
    let m = mixed();
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| dir.path().join(name).display().to_string();
    let root = m.tree.root_str();
    let twice = gfxscan(["scan", "-q", &root, "-o", &at("a.json"), "-o", &format!("html={}", at("a.json"))]);
    twice.expect_code(2);
    assert!(twice.stderr.contains("two outputs go to"), "{}", twice.stderr);
    assert!(!std::path::Path::new(&at("a.json")).exists());
    let stdout_twice = gfxscan(["scan", "-q", &root, "-o", "json=-", "-o", "-"]);
    stdout_twice.expect_code(2);
    assert!(stdout_twice.stderr.contains("standard output"), "{}", stdout_twice.stderr);
    let uris = gfxscan(["check", "-q", &root, "--gpu", "gfx900", "-o", &format!("uris={}", at("v"))]);
    uris.expect_code(2);
    assert!(uris.stderr.contains("no uris output"), "{}", uris.stderr);
    let uris = gfxscan(["diff", &root, &root, "--format", "uris"]);
    uris.expect_code(2);
    assert!(uris.stderr.contains("possible values"), "clap lists what diff writes: {}", uris.stderr);
    let empty = gfxscan(["scan", "-q", &root, "-o", "json="]);
    empty.expect_code(2);
    assert!(empty.stderr.contains("give a file"), "{}", empty.stderr);
    let odd = at("notaformat=x.json");
    gfxscan(["scan", "-q", &root, "-o", &odd]).expect_code(0);
    let text = std::fs::read_to_string(&odd).expect("a file named with '='");
    assert!(text.starts_with('{'), "its extension chose JSON: {text}");
}

/// Two outputs to one file by any spelling — `./`, absolute, `..`, a symbolic or a hard link —
/// and standard output named twice (`-`, `/dev/stdout`) are refused before the scan, exit 2,
/// and nothing is written; `-o LINK` writes the file the link leads to and leaves the link.
#[test]
fn one_file_by_any_name_is_one_output() {
    let m = mixed();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = m.tree.root_str();
    let at = |name: &str| dir.path().join(name);
    std::fs::create_dir(at("sub")).expect("sub");
    std::fs::write(at("kept"), "before").expect("kept");
    std::fs::hard_link(at("kept"), at("hard")).expect("hard link");
    std::os::unix::fs::symlink("kept", at("soft")).expect("symlink");
    let run_in = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        cmd.current_dir(dir.path()).args(["scan", "-q", &root]).args(args);
        run(cmd)
    };
    let abs = at("a.json").display().to_string();
    let spellings: [(&str, String); 6] = [
        ("a.json", "./a.json".into()),
        ("a.json", abs.clone()),
        ("a.json", "sub/../a.json".into()),
        ("kept", "hard".into()),
        ("kept", "soft".into()),
        ("soft", abs.replace("a.json", "kept")),
    ];
    for (a, b) in &spellings {
        let r = run_in(&["-o", &format!("json={a}"), "-o", &format!("html={b}")]);
        r.expect_code(2);
        assert!(r.stderr.contains("two outputs go to one file"), "{a} and {b}: {}", r.stderr);
        assert!(!at("a.json").exists(), "{a} and {b}: nothing written");
        assert_eq!(std::fs::read_to_string(at("kept")).expect("kept"), "before", "{a} and {b}");
    }
    for (a, b) in [("-", "json=/dev/stdout"), ("json=/dev/stdout", "html=/dev/stdout")] {
        let r = run_in(&["-o", a, "-o", b]);
        r.expect_code(2);
        assert!(r.stderr.contains("two outputs go to standard output"), "{a} and {b}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{a} and {b}: nothing written");
    }
    // Written through the link, as `> soft` would: the link stays, the file it names changes.
    run_in(&["-o", "json=soft"]).expect_code(0);
    assert!(std::fs::symlink_metadata(at("soft")).expect("soft").file_type().is_symlink());
    let kept = std::fs::read_to_string(at("kept")).expect("kept");
    assert!(kept.starts_with('{'), "the link's target holds the document: {kept}");
    assert_eq!(
        std::fs::read_to_string(at("hard")).expect("hard"),
        "before",
        "a hard link to the old file keeps it"
    );
    // A link to a file not there yet makes that file.
    std::os::unix::fs::symlink("sub/new.json", at("ahead")).expect("symlink");
    run_in(&["-o", "json=ahead"]).expect_code(0);
    assert!(std::fs::read_to_string(at("sub/new.json")).expect("made").starts_with('{'));
    let missing = run_in(&["-o", "json=nodir/x.json"]);
    missing.expect_code(2);
    assert!(missing.stderr.contains("folder nodir does not exist"), "{}", missing.stderr);
}

/// `-o json=/dev/stdout` with standard output redirected to a file (`>> log`) writes through
/// the shell's descriptor: appended, the file's earlier lines kept, never replaced by a rename;
/// `/dev/null` takes any number of outputs (review of issue 33).
#[test]
fn dev_stdout_into_a_file_is_appended_and_dev_null_takes_any_number() {
    let m = mixed();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    std::fs::write(&log, "earlier line\n").expect("log");
    let out = std::fs::OpenOptions::new().append(true).open(&log).expect("append");
    let status = Command::new(env!("CARGO_BIN_EXE_gfxscan"))
        .args(["scan", "-q", &m.tree.root_str(), "-o", "json=/dev/stdout"])
        .stdout(out)
        .status()
        .expect("runs");
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text.starts_with("earlier line\n{"), "{}", &text[..text.len().min(200)]);
    let null = gfxscan(["scan", "-q", &m.tree.root_str(), "-o", "json=/dev/null", "-o", "html=/dev/null"]);
    null.expect_code(0);
}

/// The promtool `.ci/run` installs (`GFXSCAN_PROMTOOL`), else one on `PATH`.
pub fn promtool() -> Option<String> {
    let hint = ".ci/run installs it from Debian's prometheus package";
    crate::util::tool_or_skip("GFXSCAN_PROMTOOL", "promtool", "--version", hint)
}

/// `promtool check metrics` on `text`: its lint finds no problem.
pub fn promtool_accepts(tool: &str, text: &str) {
    use std::io::Write;
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(text.as_bytes()).expect("write");
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("\"$0\" check metrics < \"$1\"").arg(tool).arg(file.path());
    let r = run(cmd);
    assert_eq!(r.code, 0, "promtool: {}{}\n{text}", r.stdout, r.stderr);
}

/// The samples of a metric: labels → value.
fn samples(text: &str, metric: &str) -> Vec<(BTreeMap<String, String>, u64)> {
    let prefix = format!("{metric}{{");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let (labels, value) = rest.rsplit_once("} ").expect("labels then a value");
            let labels = labels
                .split("\",")
                .map(|kv| {
                    let (k, v) = kv.split_once("=\"").expect("name=\"value\"");
                    (k.to_string(), v.trim_end_matches('"').to_string())
                })
                .collect();
            (labels, value.parse().expect("a whole number"))
        })
        .collect()
}

/// `check --format prometheus` says what `check --json` says: the outcome, and for every GPU
/// and library one status in force (1) and the others 0; promtool finds nothing to lint.
#[test]
fn check_metrics_agree_with_the_check_document() {
    let m = mixed();
    let root = m.tree.root_str();
    let args = ["check", "-q", root.as_str(), "--gpu", "gfx1100,gfx906,gfx1030"];
    let json = gfxscan(args.iter().copied().chain(["--json"]));
    let metrics = gfxscan(args.iter().copied().chain(["--format", "prometheus"]));
    assert_eq!(json.code, metrics.code, "one outcome, one exit code");
    let report = json.json();
    let text = metrics.stdout;
    let outcome = samples(&text, "gfxscan_check_outcome");
    let on: Vec<&str> = outcome.iter().filter(|(_, v)| *v == 1).map(|(l, _)| l["outcome"].as_str()).collect();
    assert_eq!(on, vec![report["outcome"].as_str().expect("outcome")]);
    assert_eq!(outcome.len(), 4, "every outcome is a sample");
    let mut from_json = Vec::new();
    for install in report["installs"].as_array().expect("installs") {
        for g in install["gpus"].as_array().expect("gpus") {
            for v in g["verdicts"].as_array().expect("verdicts") {
                let key = (
                    install["path"].as_str().expect("path").to_string(),
                    g["device"]["index"].to_string(),
                    v["library"].as_str().expect("library").to_string(),
                );
                from_json.push((key, v["status"].as_str().expect("status").to_string()));
            }
        }
    }
    let lib = samples(&text, "gfxscan_check_library_status");
    let mut from_metrics: Vec<_> = lib
        .iter()
        .filter(|(_, v)| *v == 1)
        .map(|(l, _)| ((l["install"].clone(), l["gpu"].clone(), l["library"].clone()), l["status"].clone()))
        .collect();
    from_json.sort();
    from_metrics.sort();
    assert!(!from_json.is_empty());
    assert_eq!(from_metrics, from_json, "one status in force per GPU and library, the JSON's");
    assert_eq!(lib.len(), 3 * from_json.len(), "each status is a sample");
    if let Some(tool) = promtool() {
        promtool_accepts(&tool, &text);
    }
}

/// A detected GPU's metrics carry its PCI address and UUID (to join with amd-smi); hostile
/// label values (quotes, backslashes, line feeds in a path) are escaped and promtool reads them.
#[test]
fn metrics_name_gpus_by_pci_address_and_escape_labels() {
    let tree = Tree::new();
    let c1100 = co(GFX1100, 0, 1);
    tree.file("lib/we\"ird\\na\nme/libfoo.so", &host_lib(&[("gfx1100", &c1100)]));
    let sys = Tree::new();
    let props = format!(
        "simd_count 96\ngfx_target_version 110000\ncapability 0\nlocation_id {}\ndomain 0\nunique_id 255\n",
        0x2d << 8
    );
    sys.file("sys/class/kfd/kfd/topology/nodes/1/properties", props.as_bytes());
    let root = tree.root_str();
    let r = gfxscan(["check", "-q", &root, "--sysfs-root", &sys.root_str(), "--format", "prometheus"]);
    r.expect_code(0);
    let gpu = samples(&r.stdout, "gfxscan_check_gpu_status");
    let (labels, _) = gpu.iter().find(|(l, v)| *v == 1 && l["status"] == "ok").expect("the GPU is OK");
    assert_eq!(labels["pci_address"], "0000:2d:00.0");
    assert_eq!(labels["uuid"], "GPU-00000000000000ff");
    assert_eq!(labels["node"], "1");
    assert!(r.stdout.contains("we\\\"ird\\\\na\\nme/libfoo.so"), "{}", r.stdout);
    if let Some(tool) = promtool() {
        promtool_accepts(&tool, &r.stdout);
    }
}

/// `scan --format prometheus` counts per target and layer what the CSV's per-target rows count
/// (one table, two formats), and promtool lints it clean.
#[test]
fn scan_metrics_agree_with_the_per_target_rows() {
    let m = mixed();
    let root = m.tree.root_str();
    let text = gfxscan(["scan", "-q", &root, "--format", "prometheus"]).stdout;
    let json = gfxscan(["scan", "-q", &root, "--json"]).json();
    let objects = samples(&text, "gfxscan_scan_code_objects");
    for (target, counts) in json["targets"].as_object().expect("targets") {
        let metric = objects.iter().find(|(l, _)| &l["target"] == target).expect("each target a sample");
        assert_eq!(Some(metric.1), counts["code_objects"].as_u64(), "{target}");
    }
    let items = samples(&text, "gfxscan_scan_layer_items");
    let code = |t: &str| {
        items.iter().find(|(l, _)| l["target"] == t && l["layer"] == "library code").map(|(_, v)| *v)
    };
    let families = &json["families"];
    let lib = |t: &str| families["host-library-code-objects"][t].as_u64().unwrap_or(0);
    let standalone = |t: &str| families["standalone-code-objects"][t].as_u64().unwrap_or(0);
    for t in ["gfx900", "gfx1100", "gfx942"] {
        assert_eq!(code(t), Some(lib(t) + standalone(t)), "{t}: the table's library-code column");
    }
    if let Some(tool) = promtool() {
        promtool_accepts(&tool, &text);
    }
}

/// The lines of a JSON Lines stream, each parsed.
fn lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// `scan --format jsonl`: `begin` first, `end` last, a record per file and per code object,
/// each code object the snapshot's own (with its file's path), the same bytes at any `-j`.
#[test]
fn scan_lines_hold_the_snapshot_record_by_record() {
    let m = mixed();
    let root = m.tree.root_str();
    let text = gfxscan(["scan", "-q", &root, "--format", "jsonl", "-j", "1"]).stdout;
    assert_eq!(text, gfxscan(["scan", "-q", &root, "--format", "jsonl", "-j", "8"]).stdout);
    let snap = gfxscan(["scan", "-q", &root, "--json"]).json();
    let recs = lines(&text);
    assert_eq!(recs.first().expect("begin")["type"], "begin");
    assert_eq!(recs.last().expect("end")["type"], "end");
    assert_eq!(recs.last().expect("end")["data"]["summary"], snap["summary"]);
    let of = |kind: &'static str| recs.iter().filter(move |r| r["type"] == kind).map(|r| &r["data"]);
    let files = snap["files"].as_array().expect("files");
    assert_eq!(of("file").count(), files.len());
    let mut from_lines = Vec::new();
    for line in of("code_object") {
        let mut o = line.clone();
        let obj = o.as_object_mut().expect("object");
        let file = obj.remove("file").expect("its file");
        obj.remove("uri").expect("a uri field, null when none");
        from_lines.push((file["path"].as_str().expect("path").to_string(), o));
    }
    let from_snap: Vec<(String, Value)> = files
        .iter()
        .flat_map(|f| {
            let path = f["path"].as_str().expect("path").to_string();
            f["code_objects"].as_array().expect("objects").iter().map(move |o| (path.clone(), o.clone()))
        })
        .collect();
    assert_eq!(from_lines, from_snap);
    assert_eq!(of("finding").count(), snap["findings"].as_array().map_or(0, Vec::len));
}

/// `check --format jsonl`: each verdict record is the check document's verdict, with its
/// install and GPU.
#[test]
fn check_lines_hold_every_verdict() {
    let m = mixed();
    let root = m.tree.root_str();
    let args = ["check", "-q", root.as_str(), "--gpu", "gfx1100,gfx900"];
    let report = gfxscan(args.iter().copied().chain(["--json"])).json();
    let recs = lines(&gfxscan(args.iter().copied().chain(["--format", "jsonl"])).stdout);
    assert_eq!(recs.last().expect("end")["data"]["outcome"], report["outcome"]);
    let mut from_json = Vec::new();
    for install in report["installs"].as_array().expect("installs") {
        for g in install["gpus"].as_array().expect("gpus") {
            for v in g["verdicts"].as_array().expect("verdicts") {
                from_json.push((install["path"].clone(), g["device"]["index"].clone(), v.clone()));
            }
        }
    }
    let from_lines: Vec<_> = recs
        .iter()
        .filter(|r| r["type"] == "verdict")
        .map(|r| {
            let mut d = r["data"].clone();
            let o = d.as_object_mut().expect("object");
            let (install, gpu) = (o.remove("install").expect("install"), o.remove("gpu").expect("gpu"));
            o.remove("target").expect("target");
            (install, gpu, d)
        })
        .collect();
    assert!(!from_json.is_empty());
    assert_eq!(from_lines, from_json);
}

/// Decodes a URI path's percent escapes.
fn decode(p: &str) -> Vec<u8> {
    let b = p.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&p[i + 1..i + 3], 16).expect("hex"));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// `--format uris`: each URI's range of its file is the very code object (the bytes the
/// fixture put there); compressed bundles' objects have none; a root with a space and a `#`
/// is encoded so the range is still read right.
#[test]
fn each_uri_names_the_bytes_of_its_code_object() {
    let m = mixed();
    let odd = Tree::new();
    let c1100 = co(GFX1100, 0, 2);
    odd.file("rocm 6.4#x/lib/k.co", &c1100);
    for (root, wanted) in [
        (
            m.tree.root_str(),
            vec![&m.foo_txt, &m.hsaco_900, &m.hsaco_906, &m.hsaco_1100, &m.fat_90a, &m.embedded_942],
        ),
        (odd.path("rocm 6.4#x").display().to_string(), vec![&c1100]),
    ] {
        let text = gfxscan(["scan", "-q", &root, "--format", "uris"]).stdout;
        let mut found = Vec::new();
        for uri in text.lines() {
            let rest = uri.strip_prefix("file://").expect("a file URI");
            let (path, range) = rest.split_once("#offset=").expect("a range");
            let (offset, size) = range.split_once("&size=").expect("offset and size");
            let (offset, size): (usize, usize) =
                (offset.parse().expect("offset"), size.parse().expect("size"));
            use std::os::unix::ffi::OsStrExt;
            let bytes = std::fs::read(std::ffi::OsStr::from_bytes(&decode(path))).expect("the URI's file");
            found.push(bytes[offset..offset + size].to_vec());
        }
        for w in &wanted {
            assert!(found.contains(w), "a URI for each code object stored whole:\n{text}");
        }
        // The fat object's section and each whole object are there too; nothing compressed.
        assert!(found.iter().all(|f| f.starts_with(b"\x7fELF")), "{text}");
        assert!(!found.contains(&m.a_942) && !found.contains(&m.b_1030), "compressed: no range\n{text}");
    }
}

/// Each output gets the mode a new file gets (0666 less the umask), as `File::create` would
/// give it, though staged in a temporary file first (tempfile makes them 0600).
#[test]
fn outputs_get_the_mode_the_umask_gives() {
    use std::os::unix::fs::PermissionsExt;
    let m = mixed();
    let dir = tempfile::tempdir().expect("tempdir");
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let (json, prom) =
            (dir.path().join(format!("{umask}.json")), dir.path().join(format!("{umask}.prom")));
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" scan -q \"$1\" -o \"$2\" -o \"$3\""))
            .arg(env!("CARGO_BIN_EXE_gfxscan"))
            .arg(m.tree.root())
            .arg(&json)
            .arg(&prom);
        run(cmd).expect_code(0);
        for p in [&json, &prom] {
            let got = std::fs::metadata(p).expect("written").permissions().mode() & 0o777;
            assert_eq!(got, mode, "umask {umask}: {}", p.display());
        }
    }
}

/// Several outputs are one result: when one cannot be written (here `/dev/full`), none of the
/// others replaces what was there, and no staged file is left behind.
#[test]
fn an_output_that_fails_leaves_the_others_as_they_were() {
    if !std::path::Path::new("/dev/full").exists() {
        skipped("no /dev/full");
        return;
    }
    let m = mixed();
    let dir = tempfile::tempdir().expect("tempdir");
    let old = dir.path().join("snap.json");
    std::fs::write(&old, "the snapshot of before\n").expect("write");
    let fresh = dir.path().join("new.html");
    let root = m.tree.root_str();
    let json = format!("json={}", old.display());
    let html = format!("html={}", fresh.display());
    let r = gfxscan(["scan", "-q", &root, "-o", &json, "-o", &html, "-o", "prometheus=/dev/full"]);
    r.expect_code(2);
    assert!(r.stderr.contains("/dev/full"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&old).expect("kept"), "the snapshot of before\n");
    assert!(!fresh.exists(), "nothing new put in place");
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "no staged file left: {left:?}");
}

/// `check --format jsonl` says all that the check document says of a run: a program's loads
/// (`--exe`) and a KFD GPU the target table does not know are records too, each the
/// document's own.
#[test]
fn check_lines_hold_the_program_and_unknown_gpus() {
    let Ok(true_bin) = std::fs::read("/bin/true") else {
        skipped("no /bin/true to load");
        return;
    };
    let root = Tree::new();
    root.file("usr/bin/prog", &true_bin);
    let r = root.root_str();
    let args = ["check", "-q", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", r.as_str()];
    let report = gfxscan(args.iter().copied().chain(["--json"])).json();
    let recs = lines(&gfxscan(args.iter().copied().chain(["--format", "jsonl"])).stdout);
    let program: Vec<&Value> = recs.iter().filter(|r| r["type"] == "program").map(|r| &r["data"]).collect();
    assert_eq!(program, vec![&report["program"]], "one program record, the document's");
    assert_eq!(recs.last().expect("end")["data"]["outcome"], report["outcome"]);

    let m = mixed();
    let sys = Tree::new();
    for (node, version) in [(1, 110000), (2, 990900)] {
        let props = format!("simd_count 96\ngfx_target_version {version}\ncapability 0\n");
        sys.file(format!("sys/class/kfd/kfd/topology/nodes/{node}/properties"), props.as_bytes());
    }
    let (root, sysfs) = (m.tree.root_str(), sys.root_str());
    let args = ["check", "-q", root.as_str(), "--sysfs-root", sysfs.as_str()];
    let report = gfxscan(args.iter().copied().chain(["--json"])).json();
    let recs = lines(&gfxscan(args.iter().copied().chain(["--format", "jsonl"])).stdout);
    let unknown: Vec<Value> =
        recs.iter().filter(|r| r["type"] == "unknown_gpu").map(|r| r["data"].clone()).collect();
    assert!(!unknown.is_empty(), "{:#}", report["unknown_gpus"]);
    assert_eq!(Value::Array(unknown), report["unknown_gpus"]);
}
