//! `scan --format cyclonedx`: the BOM of fixture trees holding plain files, a `.deb` and a
//! wheel. Components are keyed by path as syft keys files, members carry their package's purl,
//! `--digests` gives the SHA-256 `sha256sum` gives (of files, and of members as extracted),
//! the BOM is byte-identical at any thread count, hostile package metadata is a problem, and
//! the BOMs validate against the official CycloneDX 1.6 schema when a validator is here.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use gfxscan::testing::firmware_blob;

use crate::archives::{ar, file, gz, xz, zip_of, Entry, RawTar};
use crate::fixtures::{co, host_lib, GFX1030, GFX1100, GFX900, GFX90A};
use crate::util::{gfxscan, problems, run, Tree};

/// The `control` of the test package: mixed case and a `+` in its version, as Debian's
/// binNMUs have.
const CONTROL: &[u8] =
    b"Package: ROCm-Test\nVersion: 6.4.0-1+b1\nArchitecture: amd64\nDescription: a test\n long\n";
const DEB: &str = "pkgs/rocm-test_6.4.0-1+b1_amd64.deb";
const WHEEL: &str = "wheels/torch_rocm-2.5.1+rocm6.2-cp312-cp312-linux_x86_64.whl";
const DEB_PURL: &str = "pkg:deb/debian/rocm-test@6.4.0-1%2Bb1?arch=amd64";
const WHEEL_PURL: &str = "pkg:pypi/torch-rocm@2.5.1%2Brocm6.2";

/// A `.deb` whose `control.tar.xz` holds `control` and whose `data.tar.<codec>` holds the
/// entries under `./` names, as dpkg-deb writes them.
pub(crate) fn deb(control: &[u8], entries: &[Entry], gzip: bool) -> Vec<u8> {
    let control_tar = RawTar::new().dir("./").file("./control", control).finish();
    deb_with(&xz(&control_tar), entries, gzip)
}

/// A `.deb` with this `control.tar.xz` member, however broken.
fn deb_with(control_tar_xz: &[u8], entries: &[Entry], gzip: bool) -> Vec<u8> {
    let mut data = RawTar::new();
    data.dir("./");
    for d in crate::archives::folders(entries) {
        data.dir(&format!("./{d}/"));
    }
    for e in entries {
        if let Entry::File(p, bytes) = e {
            data.file(&format!("./{p}"), bytes);
        }
    }
    let data = data.finish();
    let (name, data) = if gzip { ("data.tar.gz", gz(&data)) } else { ("data.tar.xz", xz(&data)) };
    ar(&[("debian-binary", b"2.0\n"), ("control.tar.xz", control_tar_xz), (name, &data)])
}

/// A wheel: its `METADATA` in `<name>-<version>.dist-info/`, and a HIP library.
fn wheel(metadata: &[u8]) -> Vec<u8> {
    zip_of(
        &[
            file("Torch_ROCm-2.5.1+rocm6.2.dist-info/METADATA", metadata.to_vec()),
            file("torch/lib/libtorch_hip.so", host_lib(&[("gfx90a", &co(GFX90A, 0, 2))])),
        ],
        true,
    )
}

/// Plain files, a `.deb` and a wheel.
fn tree() -> Tree {
    let t = Tree::new();
    t.file(
        "opt/rocm/lib/libhip_test.so",
        &host_lib(&[("gfx900", &co(GFX900, 0, 1)), ("gfx1100", &co(GFX1100, 0, 3))]),
    );
    t.file("opt/rocm/lib/rocblas/library/Kernels.so-000-gfx1030.hsaco", &co(GFX1030, 0, 2));
    t.file("lib/firmware/amdgpu/gc_11_0_0_mec.bin", &firmware_blob(2, (11, 0), 4096));
    let lib = host_lib(&[("gfx1030", &co(GFX1030, 0, 1)), ("gfx900", &co(GFX900, 0, 1))]);
    t.file(DEB, &deb(CONTROL, &[file("usr/lib/x86_64-linux-gnu/librocm-test.so.1", lib)], false));
    t.file(
        WHEEL,
        &wheel(b"Metadata-Version: 2.1\nName: Torch_ROCm\nVersion: 2.5.1+rocm6.2\n\nName: not this\n"),
    );
    t
}

/// `gfxscan scan ROOT --format cyclonedx EXTRA...`: the run and its BOM.
fn bom(root: &Path, extra: &[&str]) -> (crate::util::Run, Value) {
    let mut args = vec!["scan".as_ref(), root.as_os_str(), "--format".as_ref(), "cyclonedx".as_ref()];
    args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    let r = gfxscan(args);
    let v =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("a BOM: {e}: {}{}", r.stdout, r.stderr));
    (r, v)
}

fn components(bom: &Value) -> &Vec<Value> {
    bom["components"].as_array().expect("components")
}

/// The component named `name`.
fn component<'a>(bom: &'a Value, name: &str) -> &'a Value {
    let all = components(bom);
    all.iter().find(|c| c["name"] == name).unwrap_or_else(|| {
        let names: Vec<&Value> = all.iter().map(|c| &c["name"]).collect();
        panic!("no component {name:?}; have {names:?}")
    })
}

/// The values of the properties named `name`, in order.
fn property(c: &Value, name: &str) -> Vec<String> {
    let props = c["properties"].as_array().map(Vec::as_slice).unwrap_or_default();
    props
        .iter()
        .filter(|p| p["name"] == name)
        .map(|p| p["value"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn files_are_components_keyed_by_path_with_their_targets_and_package() {
    let t = tree();
    let (r, b) = bom(t.root(), &[]);
    r.expect_code(0);
    assert_eq!((b["bomFormat"].as_str(), b["specVersion"].as_str()), (Some("CycloneDX"), Some("1.6")));
    assert_eq!(b["metadata"]["tools"]["components"][0]["name"], "gfxscan");
    assert_eq!(b["metadata"]["component"]["name"], t.root_str().as_str());
    assert!(b["metadata"].get("timestamp").is_none(), "no clock time without SOURCE_DATE_EPOCH");

    let lib = component(&b, "/opt/rocm/lib/libhip_test.so");
    assert_eq!(lib["type"], "library");
    assert_eq!(property(lib, "syft:location:0:path"), ["/opt/rocm/lib/libhip_test.so"]);
    assert_eq!(property(lib, "gfxscan:target"), ["gfx900", "gfx1100"], "natural order, not text order");
    assert_eq!(property(lib, "gfxscan:code-objects"), ["2"]);
    assert_eq!(property(lib, "gfxscan:kernels"), ["4"]);
    assert!(lib.get("purl").is_none() && lib.get("hashes").is_none(), "{lib}");
    let code = component(&b, "/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx1030.hsaco");
    assert_eq!(code["type"], "library", "a code-object file is a library");
    assert_eq!(component(&b, "/lib/firmware/amdgpu/gc_11_0_0_mec.bin")["type"], "firmware");

    let member = component(&b, &format!("/{DEB}!/usr/lib/x86_64-linux-gnu/librocm-test.so.1"));
    assert!(member.get("purl").is_none(), "the purl is the package's: {member}");
    assert_eq!(property(member, "gfxscan:package-purl"), [DEB_PURL]);
    assert_eq!(property(member, "gfxscan:target"), ["gfx900", "gfx1030"]);
    let package = component(&b, "ROCm-Test");
    assert_eq!(
        (package["type"].as_str(), package["version"].as_str()),
        (Some("library"), Some("6.4.0-1+b1"))
    );
    assert_eq!(package["purl"], DEB_PURL);
    assert_eq!(property(package, "syft:location:0:path"), [format!("/{DEB}")]);
    let wheel_lib = component(&b, &format!("/{WHEEL}!/torch/lib/libtorch_hip.so"));
    assert_eq!(property(wheel_lib, "gfxscan:package-purl"), [WHEEL_PURL]);
    assert_eq!(component(&b, "Torch_ROCm")["purl"], WHEEL_PURL);

    // Each package depends on its member; every reference names a component.
    let refs: Vec<&str> = components(&b).iter().filter_map(|c| c["bom-ref"].as_str()).collect();
    let mut unique = refs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), refs.len(), "bom-refs are unique");
    let deps = b["dependencies"].as_array().expect("dependencies");
    let of = |c: &Value| deps.iter().find(|d| d["ref"] == c["bom-ref"]).expect("a dependency entry").clone();
    assert_eq!(of(package)["dependsOn"], serde_json::json!([member["bom-ref"]]));
    for d in deps {
        for r in d["dependsOn"].as_array().expect("dependsOn").iter().chain([&d["ref"]]) {
            assert!(refs.contains(&r.as_str().expect("a ref")), "{r} is no component's bom-ref");
        }
    }

    // The snapshot holds the packages as their metadata states them.
    let (_, snap) = t.scan_json(&[]);
    let archives = snap["archives"].as_array().expect("archives");
    let deb = archives.iter().find(|a| a["path"] == DEB).expect("the deb's record");
    assert_eq!(
        deb["package"],
        serde_json::json!({"ecosystem": "deb", "name": "ROCm-Test", "version": "6.4.0-1+b1", "arch": "amd64"})
    );
    let whl = archives.iter().find(|a| a["path"] == WHEEL).expect("the wheel's record");
    assert_eq!(
        whl["package"],
        serde_json::json!({"ecosystem": "pypi", "name": "Torch_ROCm", "version": "2.5.1+rocm6.2"})
    );
}

/// `sha256sum` of a file.
fn sha256sum(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().expect("sha256sum runs");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().expect("a digest").to_string()
}

/// `sha256sum` of a `.deb` member as extracted: `ar p DEB DATA | tar -xO MEMBER | sha256sum`.
fn extracted_sha256(deb: &Path, data: &str, member: &str) -> String {
    // GNU tar does not guess the compression of a pipe: it is named.
    let codec = if data.ends_with(".gz") { "-z" } else { "-J" };
    let script = r#"set -o pipefail; ar p "$1" "$2" | tar -x "$3" -O -f - "$4" | sha256sum"#;
    let mut c = Command::new("bash");
    c.args(["-c", script, "bash"]).arg(deb).args([data, codec, member]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let digest = r.stdout.split_whitespace().next().expect("a digest").to_string();
    assert_eq!(digest.len(), 64, "{}", r.stdout);
    digest
}

fn sha(c: &Value) -> &str {
    assert_eq!(c["hashes"][0]["alg"], "SHA-256", "{c}");
    c["hashes"][0]["content"].as_str().expect("a digest")
}

#[test]
fn digests_are_what_sha256sum_gives_for_files_and_extracted_members() {
    let t = tree();
    let (r, b) = bom(t.root(), &["--digests"]);
    r.expect_code(0);
    for rel in ["opt/rocm/lib/libhip_test.so", "lib/firmware/amdgpu/gc_11_0_0_mec.bin"] {
        assert_eq!(sha(component(&b, &format!("/{rel}"))), sha256sum(&t.path(rel)), "{rel}");
    }
    let member = component(&b, &format!("/{DEB}!/usr/lib/x86_64-linux-gnu/librocm-test.so.1"));
    let want = extracted_sha256(&t.path(DEB), "data.tar.xz", "./usr/lib/x86_64-linux-gnu/librocm-test.so.1");
    assert_eq!(sha(member), want);
    // Every listed file has its hash; the JSON snapshot carries them too.
    for c in components(&b).iter().filter(|c| c["bom-ref"].as_str().is_some_and(|r| r.starts_with("file:"))) {
        assert_eq!(sha(c).len(), 64);
    }
    let (_, snap) = t.scan_json(&["--digests"]);
    let rec = crate::util::file_record(&snap, "opt/rocm/lib/libhip_test.so");
    assert_eq!(rec["sha256"].as_str(), Some(sha256sum(&t.path("opt/rocm/lib/libhip_test.so")).as_str()));
    // Without --digests, nothing is hashed.
    let (_, snap) = t.scan_json(&[]);
    assert!(snap["files"].as_array().expect("files").iter().all(|f| f.get("sha256").is_none()));
}

/// A member over the in-memory limit in a compressed stream is read live, its section table
/// (at its end) through a second pass: its hash is still of every byte, in one read.
#[test]
fn a_member_read_live_from_the_stream_is_hashed_whole() {
    let t = Tree::new();
    let mut big = host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]);
    let lib_len = big.len();
    big.resize(lib_len + (33 << 20), 0);
    // The ELF's section table moves to the end, so the parser reads backwards.
    let shoff = u64::from_le_bytes(big[0x28..0x30].try_into().expect("e_shoff"));
    let table: Vec<u8> = big[shoff as usize..lib_len].to_vec();
    let at = big.len() - table.len();
    big[at..].copy_from_slice(&table);
    big[0x28..0x30].copy_from_slice(&(at as u64).to_le_bytes());
    let shoff_end = shoff as usize + table.len();
    assert_eq!(shoff_end, lib_len, "the fixture's section table ends the file");
    t.file("big.deb", &deb(CONTROL, &[file("usr/lib/libbig.so", big)], true));
    let (r, b) = bom(t.root(), &["--digests"]);
    r.expect_code(0);
    let c = component(&b, "/big.deb!/usr/lib/libbig.so");
    assert_eq!(property(c, "gfxscan:target"), ["gfx1100"], "read as a library: {c}");
    assert_eq!(sha(c), extracted_sha256(&t.path("big.deb"), "data.tar.gz", "./usr/lib/libbig.so"));
}

#[test]
fn the_bom_is_byte_identical_whatever_the_threads_and_dated_only_by_source_date_epoch() {
    let t = tree();
    let (one, _) = bom(t.root(), &["--digests", "-j1"]);
    let (eight, b) = bom(t.root(), &["--digests", "-j8"]);
    assert_eq!(one.stdout, eight.stdout);
    assert!(b.get("serialNumber").is_none(), "no serial number: it would have to be unique");
    let mut c = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    c.args(["scan", "--format", "cyclonedx"]).arg(t.root()).env("SOURCE_DATE_EPOCH", "1700000000");
    let dated: Value = serde_json::from_str(&run(c).stdout).expect("a BOM");
    assert_eq!(dated["metadata"]["timestamp"], "2023-11-14T22:13:20Z");
    // Not a time, or past what RFC 3339 writes: refused.
    for bad in ["yesterday", "253402300800"] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        c.args(["scan", "--format", "cyclonedx"]).arg(t.root()).env("SOURCE_DATE_EPOCH", bad);
        let r = run(c);
        assert_eq!(r.code, 2, "SOURCE_DATE_EPOCH={bad} is refused: {}", r.stderr);
        assert!(r.stderr.contains("SOURCE_DATE_EPOCH"), "{}", r.stderr);
    }
}

#[test]
fn hostile_package_metadata_is_a_problem_and_the_members_are_still_read() {
    let t = Tree::new();
    let lib = || vec![file("usr/lib/libx.so", host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]))];
    let control_tar = |c: &[u8]| xz(&RawTar::new().dir("./").file("./control", c).finish());
    t.file("no-version.deb", &deb(b"Package: x\nArchitecture: amd64\n", &lib(), false));
    t.file("garbage-control.deb", &deb_with(b"\xfd7zXZ\0 not xz at all", &lib(), false));
    t.file(
        "nul.deb",
        &deb_with(&control_tar(b"Package: a\0b\nVersion: 1\nArchitecture: all\n"), &lib(), false),
    );
    let bad_meta = zip_of(
        &[
            file("x-1.dist-info/METADATA", b"Name: \xff\xfe\nVersion: 1\n".to_vec()),
            file("x/libx.so", host_lib(&[("gfx1100", &co(GFX1100, 0, 1))])),
        ],
        false,
    );
    t.file("bad.whl", &bad_meta);
    let (r, snap) = t.scan_json(&[]);
    r.expect_code(1);
    let probs = problems(&snap);
    for at in [
        "no-version.deb!/control.tar.xz!/control",
        "garbage-control.deb!/control.tar.xz!/control",
        "nul.deb!/control.tar.xz!/control",
        "bad.whl!/x-1.dist-info/METADATA",
    ] {
        assert!(
            probs.iter().any(|(p, m)| p == at && m.starts_with("no package identity")),
            "{at}: {probs:?}"
        );
    }
    assert!(snap["archives"].as_array().expect("archives").iter().all(|a| a.get("package").is_none()));
    assert_eq!(snap["files"].as_array().expect("files").len(), 4, "every member read all the same");
    let (r, b) = bom(t.root(), &[]);
    r.expect_code(1);
    assert!(components(&b).iter().all(|c| c.get("purl").is_none()));
    assert_eq!(property(&b["metadata"], "gfxscan:problems"), ["4"]);
}

#[test]
fn other_commands_refuse_cyclonedx() {
    let t = tree();
    let out = t.path("out.cdx.json");
    let out = out.to_str().expect("UTF-8");
    for args in [
        vec!["check", "--gpu", "gfx1100", "-o", out, t.root().to_str().expect("UTF-8")],
        vec!["diff", t.root().to_str().expect("UTF-8"), t.root().to_str().expect("UTF-8"), "-o", out],
        vec!["merge", "-o", &format!("cyclonedx={out}"), t.root().to_str().expect("UTF-8")],
    ] {
        let r = gfxscan(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("no CycloneDX"), "{args:?}: {}", r.stderr);
    }
    // `--format` offers each command only what it writes.
    let r = gfxscan(["merge", "--format", "cyclonedx", t.root().to_str().expect("UTF-8")]);
    r.expect_code(2);
    assert!(r.stderr.contains("possible values"), "{}", r.stderr);
    // `-o FILE.cdx.json` chooses the BOM for scan.
    let r = gfxscan(["scan", t.root().to_str().expect("UTF-8"), "-o", out]);
    r.expect_code(0);
    let b: Value = serde_json::from_slice(&std::fs::read(out).expect("written")).expect("JSON");
    assert_eq!(b["bomFormat"], "CycloneDX");
}

/// The CycloneDX validator `.ci/run` installs (`.ci/cyclonedx-validate`, cyclonedx-python-lib's
/// strict JSON validator with its bundled bom-1.6.schema.json): `GFXSCAN_CYCLONEDX_VALIDATE`,
/// else `cyclonedx-validate` on `PATH`.
fn validator() -> Option<String> {
    let hint = ".ci/run installs .ci/cyclonedx-validate";
    crate::util::tool_or_skip("GFXSCAN_CYCLONEDX_VALIDATE", "cyclonedx-validate", "--help", hint)
}

#[test]
fn the_boms_validate_against_the_cyclonedx_1_6_schema() {
    let Some(tool) = validator() else { return };
    let t = tree();
    let hostile = Tree::new();
    hostile.file(
        "no-version.deb",
        &deb(
            b"Package: x\n",
            &[file("usr/lib/libx.so", host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]))],
            false,
        ),
    );
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample");
    let out = Tree::new();
    let mut files = Vec::new();
    for (i, (root, extra)) in [
        (sample.as_path(), &["--digests"][..]),
        (t.root(), &["--digests"]),
        (t.root(), &[]),
        (hostile.root(), &[]),
    ]
    .into_iter()
    .enumerate()
    {
        let (r, _) = bom(root, extra);
        let path = out.path(format!("{i}.cdx.json"));
        std::fs::write(&path, &r.stdout).expect("written");
        files.push(path);
    }
    let r = run({
        let mut c = Command::new(&tool);
        c.args(&files);
        c
    });
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The validation is real: a component type the schema does not know fails.
    let text = std::fs::read_to_string(&files[1]).expect("readable").replacen(
        r#""type": "firmware""#,
        r#""type": "blob""#,
        1,
    );
    std::fs::write(&files[1], text).expect("written");
    let r = run({
        let mut c = Command::new(&tool);
        c.arg(&files[1]);
        c
    });
    assert_ne!(r.code, 0, "an unknown component type must fail: {}", r.stderr);
}
