//! `gfxscan diff`: folders and snapshots in any mix, pairing by identity, losses and exit codes.

use serde_json::Value;

use gfxscan::testing::{bundle, code_object, fatbin, firmware_blob, host_elf, CodeObjectSpec, HostSection};

use crate::util::Tree;

fn lib_with(targets: &[(u32, &str)]) -> Vec<u8> {
    let objects: Vec<(String, Vec<u8>)> = targets
        .iter()
        .map(|(mach, id)| {
            (format!("hipv4-amdgcn-amd-amdhsa--{id}"), code_object(&CodeObjectSpec::v4(*mach, 0, &["k"])))
        })
        .collect();
    let entries: Vec<(&str, &[u8])> = objects.iter().map(|(id, b)| (id.as_str(), b.as_slice())).collect();
    let fat = fatbin(&[bundle(&entries, 4096)]);
    host_elf(&[HostSection::hip_fatbin(&fat)])
}

fn gfxscan(args: &[&str]) -> (i32, String, String) {
    let r = crate::util::gfxscan(args);
    (r.code, r.stdout, r.stderr)
}

fn json_diff(old: &str, new: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["diff", "-q", "--json", old, new];
    args.extend_from_slice(extra);
    let (code, out, err) = gfxscan(&args);
    (code, serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}")))
}

/// Two installs whose libraries differ in soversion and prefix pair up; losses come with
/// --fail-on-loss exit 1, gains alone exit 0.
#[test]
fn libraries_pair_across_versions_and_losses_fail() {
    let t = Tree::new();
    t.file("old/opt/rocm-6.3.0/lib/librocblas.so.4", &lib_with(&[(0x2f, "gfx906"), (0x41, "gfx1100")]));
    t.file("new/opt/rocm-7.2.0/lib/librocblas.so.5", &lib_with(&[(0x41, "gfx1100"), (0x4a, "gfx1151")]));
    let (old, new) = (t.path("old").display().to_string(), t.path("new").display().to_string());
    let (code, d) = json_diff(&old, &new, &[]);
    assert_eq!(code, 0);
    assert_eq!(
        d["losses"],
        serde_json::json!([{"library": "librocblas.so", "how": "changed", "targets": ["gfx906"]}])
    );
    assert_eq!(
        d["gains"],
        serde_json::json!([{"library": "librocblas.so", "how": "changed", "targets": ["gfx1151"]}])
    );
    assert_eq!(json_diff(&old, &new, &["--fail-on-loss"]).0, 1);
    assert_eq!(json_diff(&new, &new, &["--fail-on-loss"]).0, 0);
    // Short by default (issue 35, item 2): the verdict, then each library's losses on a line.
    let (code, short, _) = gfxscan(&["diff", "-q", &old, &new]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = short.lines().collect();
    assert_eq!(
        lines[3], "LOSS: 1 target lost code in 1 library; 1 target gained code in 1 library",
        "{short}"
    );
    assert_eq!(lines[5..7], ["Lost, per library (1):", "  librocblas.so: gfx906"], "{short}");
    assert!(short.contains("\nGained, per library (targets): librocblas.so (1)\n"), "{short}");
    assert!(!short.contains("Per target"), "{short}");
    // --verbose: everything, losses first.
    let (code, table, _) = gfxscan(&["diff", "-q", "-v", &old, &new]);
    assert_eq!(code, 0);
    let lost = table.find("Targets lost").expect("losses listed");
    let gained = table.find("Targets gained").expect("gains listed");
    assert!(lost < gained, "losses come first:\n{table}");
}

/// A tree against itself, and against its own snapshot, in any mix: no differences, exit 0.
#[test]
fn self_diff_is_empty_across_snapshots_and_folders() {
    let t = Tree::new();
    t.file("lib/libx.so.1", &lib_with(&[(0x3f, "gfx90a")]));
    t.file("lib/firmware/amdgpu/vega10_me.bin", &firmware_blob(167, (9, 0), 2048));
    let root = t.path("lib").display().to_string();
    let snap = t.path("snap.json").display().to_string();
    let (code, _, err) = gfxscan(&["scan", "-q", "--json", "-o", &snap, &root]);
    assert_eq!(code, 0, "{err}");
    for (a, b) in [(&root, &root), (&snap, &root), (&root, &snap), (&snap, &snap)] {
        let (code, d) = json_diff(a, b, &["--fail-on-loss"]);
        assert_eq!(code, 0);
        for key in [
            "losses",
            "gains",
            "target_id_changes",
            "libraries",
            "files_added",
            "files_removed",
            "files_changed",
        ] {
            assert_eq!(d[key], serde_json::json!([]), "{key} for {a} vs {b}");
        }
        let kinds: Vec<&str> =
            [&d["old"]["source"], &d["new"]["source"]].iter().map(|v| v.as_str().unwrap_or("")).collect();
        assert_eq!(
            kinds,
            [if a == &snap { "snapshot" } else { "scan" }, if b == &snap { "snapshot" } else { "scan" }]
        );
    }
    let (code, table, _) = gfxscan(&["diff", "-q", &root, &snap]);
    assert_eq!(code, 0);
    assert!(table.contains("No differences."), "{table}");
}

/// Snapshots of another schema version, or JSON that is no snapshot, are refused plainly.
#[test]
fn foreign_snapshots_are_refused() {
    let t = Tree::new();
    t.file(
        "future.json",
        br#"{"schema_version": 99, "tool": {"name": "gfxscan", "version": "9.0.0"}, "summary": {}, "files": []}"#,
    );
    // A check document (its own schema_version 2) is named for what it is.
    t.file(
        "check.json",
        br#"{"schema_version": 2, "tool": {"name": "gfxscan", "version": "0.1.0"}, "outcome": "ok"}"#,
    );
    t.file("other.json", br#"{"name": "not a snapshot"}"#);
    t.file("broken.json", b"{ not json");
    let dir = t.path("").display().to_string();
    for (file, says) in [
        ("future.json", "schema_version 99"),
        ("check.json", "not a scan snapshot: diff and merge take scan snapshots"),
        ("other.json", "not a gfxscan snapshot"),
        ("broken.json", "not a JSON snapshot"),
    ] {
        let f = t.path(file).display().to_string();
        let (code, out, err) = gfxscan(&["diff", "-q", &f, &dir]);
        assert_eq!(code, 2, "{file}: {out}");
        assert!(err.contains(says), "{file}: {err}");
    }
}

/// Firmware blobs whose ucode version changed are listed with both versions.
#[test]
fn firmware_ucode_changes_are_listed() {
    let t = Tree::new();
    t.file("a/lib/firmware/amdgpu/vega10_me.bin", &firmware_blob(160, (9, 0), 2048));
    t.file("b/lib/firmware/amdgpu/vega10_me.bin", &firmware_blob(167, (9, 0), 2048));
    let (code, d) = json_diff(
        &t.path("a").display().to_string(),
        &t.path("b").display().to_string(),
        &["--fail-on-loss"],
    );
    assert_eq!(code, 0);
    let changed = d["files_changed"].as_array().expect("array");
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0]["ucode"], serde_json::json!([160, 167]));
    assert_eq!(changed[0]["identity"], "firmware:amdgpu");
}

/// Snapshots are checked for sense (issue 23): a hand-edited one with a root index out of
/// range, no root, or a processor no scan writes is refused (exit 2) by `diff` and `merge`, and a
/// `check` result is named for what it is.
#[test]
fn snapshots_that_make_no_sense_are_refused() {
    let t = Tree::new();
    t.file("lib/libx.so", &lib_with(&[(0x41, "gfx1100")]));
    let root = t.root_str();
    let good = t.path("good.json");
    let (code, _, err) = gfxscan(&["scan", "-q", "--json", &root, "-o", good.to_str().unwrap_or("")]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&good).expect("snapshot");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    let edited = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut v = v.clone();
        edit(&mut v);
        let p = t.path(name);
        std::fs::write(&p, serde_json::to_vec(&v).expect("JSON")).expect("write");
        p.display().to_string()
    };
    let bad_root = edited("bad-root.json", &|v| v["files"][0]["root"] = 7.into());
    let no_roots = edited("no-roots.json", &|v| v["roots"] = serde_json::json!([]));
    let gfx9999 =
        edited("gfx9999.json", &|v| v["files"][0]["code_objects"][0]["processor"] = "gfx9999".into());
    for (file, says) in
        [(&bad_root, "names root 7 of 1"), (&no_roots, "names no root"), (&gfx9999, "\"gfx9999\"")]
    {
        let (code, _, err) = gfxscan(&["diff", "-q", file, good.to_str().unwrap_or("")]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(err.contains(says), "{file}: {err}");
        let (code, _, err) = gfxscan(&["merge", file]);
        assert_eq!(code, 3, "{file}: {err}");
    }
    let check = t.path("check.json");
    let (_, out, _) = gfxscan(&["check", "-q", "--json", &root, "--gpu", "gfx1100"]);
    std::fs::write(&check, out).expect("write");
    let (code, _, err) = gfxscan(&["diff", "-q", check.to_str().unwrap_or(""), good.to_str().unwrap_or("")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a `check` result: diff and merge take scan snapshots"), "{err}");
}

/// `diff --only` reads scanned folders as `check` reads them for those targets (other entries
/// from their bundle tables, compressed or plain): the same diff as two full scans, losses,
/// gains, counts and files alike; generic code a target falls back to is read whole.
#[test]
fn diff_only_reads_tables_and_gives_a_full_scans_diff() {
    use crate::pipeline::diff_at;
    use gfxscan::testing::{ccob, Codec};
    let t = Tree::new();
    let entries = |ids: &[(&str, u32)]| -> Vec<(String, Vec<u8>)> {
        ids.iter()
            .map(|(id, mach)| {
                (format!("hipv4-amdgcn-amd-amdhsa--{id}"), code_object(&CodeObjectSpec::v4(*mach, 0, &["k"])))
            })
            .chain([("host-x86_64-unknown-linux-gnu-".to_string(), Vec::new())])
            .collect()
    };
    let generic = code_object(&CodeObjectSpec::new(4, 0x051 | 0x0100_0000, &["k"]));
    let write = |side: &str, ids: &[(&str, u32)], with_generic: bool| {
        let mut e = entries(ids);
        if with_generic {
            e.push(("hipv4-amdgcn-amd-amdhsa--gfx9-generic".to_string(), generic.clone()));
        }
        let refs: Vec<(&str, &[u8])> = e.iter().map(|(i, d)| (i.as_str(), d.as_slice())).collect();
        t.file(format!("{side}/opt/rocm/lib/libz.co"), &ccob(3, Codec::Zstd, &bundle(&refs, 4096)));
        t.file(format!("{side}/opt/rocm/lib/libplain.co"), &bundle(&refs, 4096));
        t.file(
            format!("{side}/opt/rocm/lib/libhost.so"),
            &lib_with(&ids.iter().map(|(i, m)| (*m, *i)).collect::<Vec<_>>()),
        );
    };
    write("old", &[("gfx900", 0x2c), ("gfx1030", 0x36), ("gfx1100", 0x41)], true);
    write("new", &[("gfx1030", 0x36), ("gfx1151", 0x4a)], false);
    let (old, new) = (t.path("old"), t.path("new"));
    let onlys = [&["gfx900"][..], &["gfx1030"], &["gfx1100"], &["gfx1151"], &["gfx906", "gfx1100"]];
    for only in onlys {
        let full = diff_at(&old, &new, only, false);
        assert_eq!(diff_at(&old, &new, only, true), full, "{only:?}");
    }
    // An entry whose ELF names another processor than its ID (gfx1151 holding gfx1036 code):
    // comgr loads by the ID, so losses, gains and the outcome are the same; a file's list of
    // targets names the ID's processor for entries of targets not asked about.
    write("odd", &[("gfx1030", 0x36), ("gfx1151", 0x45)], false);
    let verdicts = |json: String| {
        let v: Value = serde_json::from_str(&json).expect("JSON");
        (v["outcome"].clone(), v["losses"].clone(), v["gains"].clone())
    };
    for only in onlys {
        let odd = t.path("odd");
        assert_eq!(
            verdicts(diff_at(&old, &odd, only, true)),
            verdicts(diff_at(&old, &odd, only, false)),
            "{only:?}"
        );
    }
    // Not a diff that cannot differ: gfx900 loses its native and its generic code.
    let gfx900: Value = serde_json::from_str(&diff_at(&old, &new, &["gfx900"], true)).expect("JSON");
    assert_eq!(gfx900["outcome"], "loss", "{gfx900}");
    assert!(gfx900["losses"].as_array().is_some_and(|l| l.len() == 3), "{gfx900}");
}
