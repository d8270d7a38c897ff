//! The JSON Schemas of gfxscan's documents: the committed ones (`docs/schema/`) are what
//! `gfxscan schema KIND` prints, they fail wrong documents, and an independent validator
//! (`check-jsonschema`, the Python `jsonschema` library's) accepts them and real documents.
//! Every document the other tests produce is validated by `util::run`.

use std::path::{Path, PathBuf};
use std::process::Command;

use gfxscan::schema::Document;
use serde_json::{json, Value};

use crate::documents::{errors, schema_path};
use crate::util::{gfxscan, run, Run};

/// The command that rewrites the committed schemas from the binary.
const BLESS: &str = "GFXSCAN_BLESS=1 cargo test --test integration schema";

/// Each committed schema is byte for byte what `gfxscan schema KIND` prints, and there is one
/// per kind; with `GFXSCAN_BLESS=1` they are written instead (review with `git diff`).
#[test]
fn every_committed_schema_is_what_the_binary_prints() {
    let bless = std::env::var_os("GFXSCAN_BLESS").is_some_and(|v| v == "1");
    for &kind in Document::all() {
        let name = kind.name();
        let r = gfxscan(["schema", name.as_str()]);
        r.expect_code(0);
        let path = schema_path(&name);
        if bless {
            std::fs::write(&path, &r.stdout).expect("write the schema");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == r.stdout,
            "{} is not what `gfxscan schema {name}` prints: run `{BLESS}` to rewrite them",
            path.display()
        );
    }
    let dir = schema_path("x").parent().map(Path::to_path_buf).expect("docs/schema");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("docs/schema/")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut kinds: Vec<String> =
        Document::all().iter().map(|k| format!("{}.schema.json", k.name())).collect();
    kinds.sort();
    assert_eq!(files, kinds, "docs/schema/ holds one schema per kind, nothing else");
}

/// The snapshot of the sample's one hipBLASLt code file, as `scan --json` writes it.
fn sample_snapshot() -> Value {
    gfxscan(["scan", "-q", "--json", "sample/opt/rocm/lib/hipblaslt/library/hipblasltTransform.hsaco"]).json()
}

/// Fails unless `doc` breaks the schema of `kind` at `at` (an instance path).
#[track_caller]
fn fails_at(kind: &str, doc: &Value, at: &str) {
    let errs = errors(kind, doc);
    let here = format!("at {at:?}:");
    assert!(errs.iter().any(|e| e.starts_with(&here)), "expected an error {here} got {errs:#?}");
}

/// The schemas are strict where the types are: a missing required field, a version this build
/// does not write, a place or status word that does not exist, a `null` where the field is
/// left out instead, a count of the wrong type or sign, a path's bytes not in hex, a count of
/// files of a kind that does not exist: each fails, at its place.
#[test]
fn a_wrong_document_fails_its_schema() {
    let good = sample_snapshot();
    assert_eq!(errors("snapshot", &good), Vec::<String>::new());
    let changed = |f: &dyn Fn(&mut Value)| {
        let mut d = good.clone();
        f(&mut d);
        d
    };
    let no_version = changed(&|d| drop(d.as_object_mut().map(|o| o.remove("schema_version"))));
    fails_at("snapshot", &no_version, "");
    fails_at("snapshot", &changed(&|d| d["schema_version"] = json!(1)), "/schema_version");
    let nowhere = changed(&|d| d["files"][0]["code_objects"][0]["location"]["in"] = json!("nowhere"));
    fails_at("snapshot", &nowhere, "/files/0/code_objects/0/location");
    let null = changed(&|d| d["files"][0]["code_objects"][0]["generic_version"] = Value::Null);
    fails_at("snapshot", &null, "/files/0/code_objects/0/generic_version");
    fails_at("snapshot", &changed(&|d| d["summary"]["files"] = json!("1")), "/summary/files");
    fails_at("snapshot", &changed(&|d| d["files"][0]["size"] = json!(-1)), "/files/0/size");
    fails_at("snapshot", &changed(&|d| d["files"][0]["path_hex"] = json!("zz")), "/files/0/path_hex");
    fails_at("snapshot", &changed(&|d| d["summary"]["kinds"]["elf-ish"] = json!(1)), "/summary/kinds");
    let format = changed(&|d| d["files"][0]["code_objects"][0]["location"]["format"] = json!("ccob"));
    fails_at("snapshot", &format, "/files/0/code_objects/0/location");

    let check = gfxscan(["check", "-q", "--json", "--gpu", "gfx908", "sample/opt/rocm/lib/hipblaslt"]);
    let mut check = check.json();
    assert_eq!(errors("check", &check), Vec::<String>::new());
    check["installs"][0]["gpus"][0]["verdicts"][0]["status"] = json!("great");
    fails_at("check", &check, "/installs/0/gpus/0/verdicts/0/status");
}

/// `check-jsonschema` as `.ci/run` installs it: `GFXSCAN_CHECK_JSONSCHEMA`, else the one on
/// `PATH`.
fn check_jsonschema() -> Option<String> {
    let hint = ".ci/run installs it; or set GFXSCAN_CHECK_JSONSCHEMA";
    crate::util::tool_or_skip("GFXSCAN_CHECK_JSONSCHEMA", "check-jsonschema", "--version", hint)
}

/// `tool ARGS…`, under the same watch as gfxscan's runs.
fn validator(tool: &str, args: &[&Path]) -> Run {
    let mut cmd = Command::new(tool);
    cmd.args(args);
    run(cmd)
}

/// A document of each kind from the sample, written with `-o` into `dir`: (kind, file). The
/// snapshot's format is told by its name alone.
fn sample_documents(dir: &Path) -> Vec<(String, PathBuf)> {
    let at = |kind: &str| dir.join(format!("{kind}.json"));
    let snapshot = at("snapshot").to_string_lossy().into_owned();
    let commands: [(&str, Vec<&str>); 6] = [
        ("snapshot", vec!["scan", "-q", "sample"]),
        ("check", vec!["check", "-q", "sample", "--gpu", "gfx1100,gfx90a", "--json"]),
        ("diff", vec!["diff", "-q", "sample/opt/rocm", &snapshot, "--json"]),
        ("merge", vec!["merge", &snapshot, "--gpu", "gfx1100", "--json"]),
        ("prune", vec!["scan", "-q", "sample", "--keep", "gfx1100", "--json"]),
        ("explain", vec!["explain", "-q", "gfx1031", "sample", "--json"]),
    ];
    let mut written = Vec::new();
    for (kind, args) in commands {
        let file = at(kind);
        let r =
            gfxscan(args.iter().map(|a| a.as_ref()).chain([std::ffi::OsStr::new("-o"), file.as_os_str()]));
        assert!(r.code == 0 || r.code == 1, "gfxscan {}: exit {}: {}", args.join(" "), r.code, r.stderr);
        written.push((kind.to_string(), file));
    }
    // JSON Lines: the first record of each type, from a scan and a check, each a document.
    for args in [vec!["scan", "-q", "sample"], vec!["check", "-q", "sample", "--gpu", "gfx1100,gfx90a"]] {
        let r = gfxscan(args.iter().copied().chain(["--format", "jsonl"]));
        let mut seen: Vec<String> = Vec::new();
        for line in r.stdout.lines() {
            let doc: serde_json::Value = serde_json::from_str(line).expect("a JSON record");
            let t = format!("{}-{}", args[0], doc["type"].as_str().expect("a type"));
            if !seen.contains(&t) {
                let file = dir.join(format!("record-{t}.json"));
                std::fs::write(&file, line).expect("write a record");
                written.push(("record".to_string(), file));
                seen.push(t);
            }
        }
    }
    let targets = gfxscan(["targets", "--json"]);
    std::fs::write(at("targets"), &targets.expect_code(0).stdout).expect("write targets.json");
    written.push(("targets".to_string(), at("targets")));
    written
}

/// An independent validator accepts each committed schema as a draft 2020-12 schema and a
/// real document of each kind from the sample against it, and refuses a wrong one (so the
/// validation is real). The Python `jsonschema` library under it is not this crate's.
#[test]
fn check_jsonschema_accepts_the_schemas_and_a_document_of_each_kind() {
    let Some(tool) = check_jsonschema() else { return };
    let schemas: Vec<PathBuf> = Document::all().iter().map(|k| schema_path(&k.name())).collect();
    let mut args: Vec<&Path> = vec![Path::new("--check-metaschema")];
    args.extend(schemas.iter().map(PathBuf::as_path));
    let r = validator(&tool, &args);
    assert_eq!(r.code, 0, "the schemas against their metaschema:\n{}{}", r.stdout, r.stderr);
    let dir = tempfile::tempdir().expect("tempdir");
    let documents = sample_documents(dir.path());
    let mut kinds: Vec<&str> = documents.iter().map(|(k, _)| k.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    let mut all: Vec<String> = Document::all().iter().map(|d| d.name()).collect();
    all.sort();
    assert_eq!(kinds, all, "a document of each kind");
    for (kind, file) in &documents {
        let schema = schema_path(kind);
        let r = validator(&tool, &[Path::new("--schemafile"), &schema, file]);
        assert_eq!(r.code, 0, "{kind}: {}{}", r.stdout, r.stderr);
    }
    let bad = dir.path().join("bad-snapshot.json");
    let mut snap = sample_snapshot();
    snap["files"][0]["code_objects"][0]["location"]["in"] = json!("nowhere");
    std::fs::write(&bad, snap.to_string()).expect("write the wrong snapshot");
    let r = validator(&tool, &[Path::new("--schemafile"), &schema_path("snapshot"), &bad]);
    assert_eq!(r.code, 1, "a wrong snapshot passed:\n{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("$.files[0].code_objects[0].location"), "{}", r.stdout);
}
