//! Archives as trees: `.deb`, zip/wheel, tar (plain, gzip, zstd, xz), `docker save` archives and
//! OCI layouts, as roots and nested in folders and in one another. The same tree gives the same
//! snapshot whether it is a folder or any of its archives; hostile members are problems and the
//! scan goes on. Every archive here is written by hand or with `tar::Builder`, in memory.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use gfxscan::testing::{ccob, fatbin, firmware_blob, host_elf, Codec, HostSection};

use crate::fixtures::{co, hip_bundle, GFX1030, GFX1100, GFX900, GFX906, GFX90A, GFX942};
use crate::util::{file_paths, file_record, garbage, gfxscan, problems, run, Run, Tree};

// ---------------------------------------------------------------------------------------------
// Trees as lists of entries
// ---------------------------------------------------------------------------------------------

/// One entry of a tree: a regular file or a symbolic link (folders follow from the paths).
#[derive(Clone)]
pub(crate) enum Entry {
    File(String, Vec<u8>),
    Link(String, String),
}

pub(crate) fn file(path: &str, data: Vec<u8>) -> Entry {
    Entry::File(path.to_string(), data)
}

fn link(path: &str, target: &str) -> Entry {
    Entry::Link(path.to_string(), target.to_string())
}

impl Entry {
    fn path(&self) -> &str {
        match self {
            Entry::File(p, _) | Entry::Link(p, _) => p,
        }
    }
}

/// Every folder above the entries, parents first.
pub(crate) fn folders(entries: &[Entry]) -> Vec<String> {
    let mut out = BTreeSet::new();
    for e in entries {
        let mut p = Path::new(e.path());
        while let Some(parent) = p.parent().filter(|q| !q.as_os_str().is_empty()) {
            out.insert(parent.to_string_lossy().into_owned());
            p = parent;
        }
    }
    out.into_iter().collect()
}

/// Writes the entries under `tree/base`.
pub(crate) fn write_dir(tree: &Tree, base: &str, entries: &[Entry]) {
    std::fs::create_dir_all(tree.path(base)).expect("base folder");
    for e in entries {
        let rel = Path::new(base).join(e.path());
        match e {
            Entry::File(_, data) => {
                tree.file(&rel, data);
            }
            Entry::Link(_, target) => {
                std::fs::create_dir_all(tree.path(&rel).parent().expect("parent")).expect("parent folders");
                tree.symlink(target, &rel);
            }
        }
    }
}

/// A GNU tar of the entries (folders first), written by `tar::Builder`.
pub(crate) fn tar_of(entries: &[Entry]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for d in folders(entries) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        b.append_data(&mut h, format!("{d}/"), std::io::empty()).expect("tar folder");
    }
    for e in entries {
        let mut h = tar::Header::new_gnu();
        match e {
            Entry::File(p, data) => {
                h.set_mode(0o644);
                h.set_size(data.len() as u64);
                b.append_data(&mut h, p, data.as_slice()).expect("tar file");
            }
            Entry::Link(p, target) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                b.append_link(&mut h, p, target).expect("tar link");
            }
        }
    }
    b.into_inner().expect("tar finished")
}

/// A tar written header by header, for names `tar::Builder` refuses (`..`, absolute, `./`).
pub(crate) struct RawTar(Vec<u8>);

impl RawTar {
    pub(crate) fn new() -> Self {
        RawTar(Vec::new())
    }

    /// One ustar header (`typeflag`, name and link up to 100 bytes) and its data.
    fn entry(&mut self, name: &[u8], typeflag: u8, link: &[u8], data: &[u8]) -> &mut Self {
        let size = format!("{:011o}\0", data.len());
        self.raw(&tar_header(name, typeflag, link, size.as_bytes(), &[]), data)
    }

    /// A header block as given, then `data` padded to a whole block.
    fn raw(&mut self, header: &[u8; 512], data: &[u8]) -> &mut Self {
        self.0.extend_from_slice(header);
        self.0.extend_from_slice(data);
        self.0.resize(self.0.len().div_ceil(512) * 512, 0);
        self
    }

    /// A PAX extended header holding `records` (key, value), for the member after it.
    fn pax(&mut self, records: &[(&str, &str)]) -> &mut Self {
        let mut body = Vec::new();
        for (key, value) in records {
            let rest = format!(" {key}={value}\n");
            let mut len = rest.len() + 1;
            while len != rest.len() + len.to_string().len() {
                len = rest.len() + len.to_string().len();
            }
            body.extend_from_slice(format!("{len}{rest}").as_bytes());
        }
        self.entry(b"PaxHeader", b'x', b"", &body)
    }

    pub(crate) fn file(&mut self, name: &str, data: &[u8]) -> &mut Self {
        self.entry(name.as_bytes(), b'0', b"", data)
    }

    pub(crate) fn symlink(&mut self, name: &str, target: &str) -> &mut Self {
        self.entry(name.as_bytes(), b'2', target.as_bytes(), b"")
    }

    pub(crate) fn dir(&mut self, name: &str) -> &mut Self {
        self.entry(name.as_bytes(), b'5', b"", b"")
    }

    /// The archive with its end marker (two zero blocks).
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.0);
        out.extend_from_slice(&[0u8; 1024]);
        out
    }
}

/// One ustar header block: `name` and `link` (up to 100 bytes), the 12-byte `size` field as
/// given (octal text or GNU base-256), then the `patch` byte runs, then the checksum.
fn tar_header(name: &[u8], typeflag: u8, link: &[u8], size: &[u8], patch: &[(usize, &[u8])]) -> [u8; 512] {
    assert!(name.len() <= 100 && link.len() <= 100 && size.len() == 12, "raw tar fields fit the header");
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    let mode: &[u8] = if typeflag == b'5' { b"0000755\0" } else { b"0000644\0" };
    h[100..108].copy_from_slice(mode);
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(size);
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = typeflag;
    h[157..157 + link.len()].copy_from_slice(link);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    for (at, bytes) in patch {
        h[*at..*at + bytes.len()].copy_from_slice(bytes);
    }
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

pub(crate) fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip")
}

fn zst(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).expect("zstd")
}

pub(crate) fn xz(data: &[u8]) -> Vec<u8> {
    liblzma::encode_all(data, 6).expect("xz")
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("deflate");
    e.finish().expect("deflate")
}

fn crc32(data: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(data);
    c.sum()
}

/// One member of a hand-written zip.
struct ZipMember {
    name: Vec<u8>,
    data: Vec<u8>,
    deflated: bool,
    /// Unix mode (file type and permissions), stored with "made by" Unix.
    mode: u32,
    /// The uncompressed size the headers claim, when not the true one.
    declared_size: Option<u32>,
}

impl ZipMember {
    fn file(name: &str, data: &[u8], deflated: bool) -> Self {
        ZipMember { name: name.into(), data: data.to_vec(), deflated, mode: 0o100644, declared_size: None }
    }
}

/// A zip: local headers and data, central directory, end record (no data descriptors, no zip64).
fn zip_bytes(members: &[ZipMember]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for m in members {
        let stored = if m.deflated { deflate(&m.data) } else { m.data.clone() };
        let method: u16 = if m.deflated { 8 } else { 0 };
        let crc = crc32(&m.data);
        let size = m.declared_size.unwrap_or(m.data.len() as u32);
        let offset = out.len() as u32;
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes()); // version needed
        out.extend_from_slice(&0u16.to_le_bytes()); // flags
        out.extend_from_slice(&method.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // time
        out.extend_from_slice(&0x21u16.to_le_bytes()); // date: 1980-01-01
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&(m.name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // extra
        out.extend_from_slice(&m.name);
        out.extend_from_slice(&stored);

        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&0x031eu16.to_le_bytes()); // made by: Unix, 3.0
        central.extend_from_slice(&20u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&method.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&0x21u16.to_le_bytes());
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&(m.name.len() as u16).to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes()); // extra
        central.extend_from_slice(&0u16.to_le_bytes()); // comment
        central.extend_from_slice(&0u16.to_le_bytes()); // disk
        central.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        central.extend_from_slice(&(m.mode << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(&m.name);
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(members.len() as u16).to_le_bytes());
    out.extend_from_slice(&(members.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A zip of the entries: folders as `name/`, files deflated or stored, links as Unix symlinks.
pub(crate) fn zip_of(entries: &[Entry], deflated: bool) -> Vec<u8> {
    let mut members: Vec<ZipMember> = folders(entries)
        .into_iter()
        .map(|d| ZipMember {
            name: format!("{d}/").into_bytes(),
            data: Vec::new(),
            deflated: false,
            mode: 0o40755,
            declared_size: None,
        })
        .collect();
    for e in entries {
        members.push(match e {
            Entry::File(p, data) => ZipMember::file(p, data, deflated),
            Entry::Link(p, target) => ZipMember {
                name: p.clone().into_bytes(),
                data: target.clone().into_bytes(),
                deflated: false,
                mode: 0o120777,
                declared_size: None,
            },
        });
    }
    zip_bytes(&members)
}

/// A common-format `ar` archive (as dpkg writes `.deb` files).
pub(crate) fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let header = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", 0, 0, 0, 100644, data.len());
        assert_eq!(header.len(), 60);
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        if data.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// A `.deb` whose `data.tar.xz` holds the entries under `./` names, as dpkg-deb writes them.
pub(crate) fn deb_of(entries: &[Entry]) -> Vec<u8> {
    let mut data = RawTar::new();
    data.dir("./");
    for d in folders(entries) {
        data.dir(&format!("./{d}/"));
    }
    for e in entries {
        match e {
            Entry::File(p, bytes) => data.file(&format!("./{p}"), bytes),
            Entry::Link(p, target) => data.symlink(&format!("./{p}"), target),
        };
    }
    let control = RawTar::new()
        .dir("./")
        .file("./control", b"Package: gfxscan-test\nVersion: 1.0\nArchitecture: amd64\n")
        .finish();
    ar(&[
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", &xz(&control)),
        ("data.tar.xz", &xz(&data.finish())),
    ])
}

/// SHA-256, hex (OCI blobs are named by it), as `scan --digests` takes it.
pub(crate) fn sha256(data: &[u8]) -> String {
    gfxscan::source::digest::sha256_of(&data.to_vec()).expect("bytes in memory hash")
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// `gfxscan scan --json ROOT EXTRA...`: the run and its snapshot.
fn scan_json(root: &Path, extra: &[&str]) -> (Run, Value) {
    let mut args: Vec<&OsStr> = vec![OsStr::new("scan"), OsStr::new("--json"), root.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    let run = gfxscan(args);
    let json = run.json();
    (run, json)
}

/// A snapshot without what names the input rather than describes the tree.
fn tree_part(snap: &Value) -> Value {
    let mut v = snap.clone();
    let obj = v.as_object_mut().expect("snapshot is an object");
    for key in ["roots", "archives", "tool"] {
        obj.remove(key);
    }
    v
}

/// The snapshot's `archives`, or an empty list when absent.
fn archives(snap: &Value) -> Vec<Value> {
    snap.get("archives").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// The target IDs of one file record's code objects, in file order.
fn target_ids(record: &Value) -> Vec<String> {
    record["code_objects"]
        .as_array()
        .expect("code_objects")
        .iter()
        .map(|c| c["target_id"].as_str().expect("target_id").to_string())
        .collect()
}

/// `gfxscan diff -q --json OLD NEW`: exit code and report.
fn diff_json(old: &Path, new: &Path) -> (i32, Value) {
    let run = gfxscan([
        OsStr::new("diff"),
        OsStr::new("-q"),
        OsStr::new("--json"),
        old.as_os_str(),
        new.as_os_str(),
    ]);
    let report = run.json();
    (run.code, report)
}

/// Fails unless a diff report says nothing changed.
#[track_caller]
fn assert_empty_diff(report: &Value, what: &str) {
    for key in
        ["losses", "gains", "target_id_changes", "libraries", "files_added", "files_removed", "files_changed"]
    {
        assert_eq!(report[key], json!([]), "{what}: {key} in {report:#}");
    }
    for c in report["counts"].as_array().expect("counts") {
        assert_eq!(c["old"], c["new"], "{what}: {c}");
    }
    for key in ["files", "code_objects", "problems"] {
        assert_eq!(report["old"][key], report["new"][key], "{what}: {key} in {report:#}");
    }
}

// ---------------------------------------------------------------------------------------------
// 1. A folder and its archives give the same snapshot
// ---------------------------------------------------------------------------------------------

/// A small install with every kind of device code a package carries: a host library with a
/// `.hip_fatbin` (gfx90a, gfx1100) and a link to it, a bare code object (gfx906), a CCOB
/// (gfx1030), a firmware blob with a link to it, and a text file.
fn install() -> Vec<Entry> {
    let fat = fatbin(&[hip_bundle(&[("gfx90a", &co(GFX90A, 0, 2)), ("gfx1100", &co(GFX1100, 0, 3))])]);
    vec![
        file("opt/rocm/lib/libamdhip-test.so.6.3", host_elf(&[HostSection::hip_fatbin(&fat)])),
        link("opt/rocm/lib/libamdhip-test.so", "libamdhip-test.so.6.3"),
        file("opt/rocm/lib/kernels/k.co", co(GFX906, 0, 4)),
        file("opt/rocm/lib/b.co", ccob(3, Codec::Zstd, &hip_bundle(&[("gfx1030", &co(GFX1030, 0, 5))]))),
        file("lib/firmware/amdgpu/vega10_me.bin", firmware_blob(167, (9, 0), 2048)),
        link("lib/firmware/amdgpu/vega12_me.bin", "vega10_me.bin"),
        file("usr/share/doc/gfxscan-test/README", b"nothing to see\n".to_vec()),
    ]
}

#[test]
fn every_archive_of_a_tree_scans_like_the_tree() {
    let entries = install();
    let t = Tree::new();
    write_dir(&t, "dir", &entries);
    let dir = t.path("dir");
    let (run, base) = scan_json(&dir, &[]);
    run.expect_code(0);
    // The folder's own snapshot is what we expect it to be, so equality below means something.
    assert_eq!(base["summary"]["files"], 5, "{base:#}");
    assert_eq!(base["summary"]["code_objects"], 4, "{base:#}");
    assert_eq!(base["summary"]["symlinks"], 2, "{base:#}");
    assert_eq!(target_ids(file_record(&base, "opt/rocm/lib/libamdhip-test.so.6.3")), ["gfx90a", "gfx1100"]);
    assert_eq!(base["links"].as_array().map(Vec::len), Some(1), "{base:#}");
    assert_eq!(archives(&base), Vec::<Value>::new());

    let tar = tar_of(&entries);
    let cases: Vec<(&str, Vec<u8>, &str, u64)> = vec![
        ("a.tar", tar.clone(), "tar", 5),
        ("a.tar.gz", gz(&tar), "tar+gzip", 5),
        ("a.tar.zst", zst(&tar), "tar+zstd", 5),
        ("a.tar.xz", xz(&tar), "tar+xz", 5),
        ("a.deb", deb_of(&entries), "deb:data.tar.xz", 5),
        ("deflated.zip", zip_of(&entries, true), "zip", 5),
        ("stored.whl", zip_of(&entries, false), "zip", 5),
    ];
    let mut failures = Vec::new();
    for (name, bytes, format, members) in cases {
        t.file(name, &bytes);
        let path = t.path(name);
        let (run, snap) = scan_json(&path, &[]);
        if run.code != 0 {
            failures.push(format!("{name}: exit {} (problems {:?})", run.code, problems(&snap)));
        }
        if tree_part(&snap) != tree_part(&base) {
            failures.push(format!(
                "{name}: snapshot differs from the folder's\n--- folder\n{:#}\n--- {name}\n{:#}",
                tree_part(&base),
                tree_part(&snap)
            ));
        }
        let mut want = json!({"root": 0, "path": "", "format": format, "members": members});
        if name == "a.deb" {
            // The package its `control` names.
            want["package"] =
                json!({"ecosystem": "deb", "name": "gfxscan-test", "version": "1.0", "arch": "amd64"});
        }
        let want = json!([want]);
        if Value::Array(archives(&snap)) != want {
            failures.push(format!("{name}: archives {:#}, want {want:#}", snap["archives"]));
        }
        let (code, report) = diff_json(&dir, &path);
        if code != 0 {
            failures.push(format!("{name}: diff exit {code}"));
        }
        if let Err(e) = std::panic::catch_unwind(|| assert_empty_diff(&report, name)) {
            let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
            failures.push(format!("{name}: diff not empty: {msg}"));
        }
    }
    assert!(failures.is_empty(), "{} of 7 archives differ:\n{}", failures.len(), failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// 2. Archives in folders and in archives
// ---------------------------------------------------------------------------------------------

#[test]
fn a_wheel_in_a_tarball_in_a_folder() {
    let lib = host_elf(&[HostSection::hip_fatbin(&fatbin(&[hip_bundle(&[("gfx942", &co(GFX942, 0, 2))])]))]);
    let wheel = zip_bytes(&[
        ZipMember::file("pkg/__init__.py", b"", true),
        ZipMember::file("pkg/lib.so", &lib, true),
    ]);
    let tarball = gz(&RawTar::new()
        .dir("wheels/")
        .file("wheels/a.whl", &wheel)
        .file("wheels/k.co", &co(GFX900, 0, 1))
        .finish());
    let t = Tree::new();
    t.file("x.tar.gz", &tarball);
    t.file("plain.co", &co(GFX90A, 0, 1));
    let (run, snap) = t.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(
        file_paths(&snap),
        ["plain.co", "x.tar.gz!/wheels/a.whl!/pkg/lib.so", "x.tar.gz!/wheels/k.co"]
    );
    assert_eq!(target_ids(file_record(&snap, "x.tar.gz!/wheels/a.whl!/pkg/lib.so")), ["gfx942"]);
    assert_eq!(target_ids(file_record(&snap, "x.tar.gz!/wheels/k.co")), ["gfx900"]);
    assert_eq!(
        snap["archives"],
        json!([
            {"root": 0, "path": "x.tar.gz", "format": "tar+gzip", "members": 2},
            {"root": 0, "path": "x.tar.gz!/wheels/a.whl", "format": "zip", "members": 2},
        ])
    );
    // Files: plain.co, k.co, __init__.py, lib.so (the archives themselves are not files).
    assert_eq!(snap["summary"]["files"], 4, "{snap:#}");
    assert_eq!(snap["summary"]["code_objects"], 3);
}

// ---------------------------------------------------------------------------------------------
// 3. Container images
// ---------------------------------------------------------------------------------------------

/// Three layers: 1 adds A (gfx906), B (gfx900), C (gfx90a) and d/x (gfx1030); 2 replaces A
/// (gfx1100) and deletes B; 3 makes d/ opaque and adds d/y (gfx942).
pub(crate) fn layers() -> [Vec<u8>; 3] {
    let one = tar_of(&[
        file("A", co(GFX906, 0, 1)),
        file("B", co(GFX900, 0, 1)),
        file("C", co(GFX90A, 0, 2)),
        file("d/x", co(GFX1030, 0, 1)),
    ]);
    let two = tar_of(&[file("A", co(GFX1100, 0, 3)), file(".wh.B", Vec::new())]);
    let three = tar_of(&[file("d/.wh..wh..opq", Vec::new()), file("d/y", co(GFX942, 0, 1))]);
    [one, two, three]
}

/// The image's final file system.
pub(crate) fn final_fs() -> Vec<Entry> {
    vec![file("A", co(GFX1100, 0, 3)), file("C", co(GFX90A, 0, 2)), file("d/y", co(GFX942, 0, 1))]
}

/// A `docker save` archive of the three layers.
fn docker_save() -> Vec<u8> {
    let [one, two, three] = layers();
    let manifest = json!([{
        "Config": "cfg.json",
        "RepoTags": ["gfxscan/test:latest"],
        "Layers": ["l1/layer.tar", "l2/layer.tar", "l3/layer.tar"],
    }]);
    tar_of(&[
        file("cfg.json", br#"{"architecture":"amd64","os":"linux"}"#.to_vec()),
        file("l1/layer.tar", one),
        file("l2/layer.tar", two),
        file("l3/layer.tar", three),
        file("manifest.json", manifest.to_string().into_bytes()),
        file("repositories", br#"{"gfxscan/test":{"latest":"l3"}}"#.to_vec()),
    ])
}

/// An OCI image layout of the three layers, the second gzip-compressed: its entries.
pub(crate) fn oci_layout() -> Vec<Entry> {
    let [one, two, three] = layers();
    let two = gz(&two);
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let desc = |media: &str, blob: &[u8]| json!({"mediaType": media, "digest": format!("sha256:{}", sha256(blob)), "size": blob.len()});
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": desc("application/vnd.oci.image.config.v1+json", &config),
        "layers": [
            desc("application/vnd.oci.image.layer.v1.tar", &one),
            desc("application/vnd.oci.image.layer.v1.tar+gzip", &two),
            desc("application/vnd.oci.image.layer.v1.tar", &three),
        ],
    })
    .to_string()
    .into_bytes();
    let index = json!({
        "schemaVersion": 2,
        "manifests": [desc("application/vnd.oci.image.manifest.v1+json", &manifest)],
    });
    let mut out = vec![
        file("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()),
        file("index.json", index.to_string().into_bytes()),
    ];
    for blob in [config, manifest, one, two, three] {
        out.push(file(&format!("blobs/sha256/{}", sha256(&blob)), blob));
    }
    out
}

#[test]
fn docker_save_archive_is_its_final_file_system() {
    let t = Tree::new();
    write_dir(&t, "final", &final_fs());
    let (run, want) = scan_json(&t.path("final"), &[]);
    run.expect_code(0);
    assert_eq!(file_paths(&want), ["A", "C", "d/y"]);

    t.file("image.tar", &docker_save());
    let (run, snap) = scan_json(&t.path("image.tar"), &[]);
    run.expect_code(0);
    assert_final_fs(&snap, &want, "docker-image");
}

/// `snap`, the scan of the test image as `format`, is its final file system `want`: A from
/// layer 2, C, d/y, in one archive record of 3 members and 3 layers.
#[track_caller]
fn assert_final_fs(snap: &Value, want: &Value, format: &str) {
    assert_eq!(file_paths(snap), ["A", "C", "d/y"], "{snap:#}");
    assert_eq!(target_ids(file_record(snap, "A")), ["gfx1100"], "A comes from layer 2");
    assert_eq!(
        snap["archives"],
        json!([{"root": 0, "path": "", "format": format, "members": 3, "layers": 3}])
    );
    assert_eq!(tree_part(snap), tree_part(want));
}

#[test]
fn oci_layout_folder_and_tarball_are_their_final_file_system() {
    assert_eq!(sha256(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    let t = Tree::new();
    write_dir(&t, "final", &final_fs());
    let (run, want) = scan_json(&t.path("final"), &[]);
    run.expect_code(0);

    let layout = oci_layout();
    write_dir(&t, "layout", &layout);
    let (run, snap) = scan_json(&t.path("layout"), &[]);
    run.expect_code(0);
    assert_final_fs(&snap, &want, "oci-image");

    t.file("layout.tar", &tar_of(&layout));
    let (run, snap) = scan_json(&t.path("layout.tar"), &[]);
    run.expect_code(0);
    assert_final_fs(&snap, &want, "oci-image");
}

// ---------------------------------------------------------------------------------------------
// 4. Hostile archives
// ---------------------------------------------------------------------------------------------

/// Scans the archive `name` = `bytes` as the root; expects exit 1.
#[track_caller]
fn scan_hostile(name: &str, bytes: &[u8]) -> (Tree, Value) {
    let t = Tree::new();
    t.file(name, bytes);
    let (run, snap) = scan_json(&t.path(name), &[]);
    run.expect_code(1);
    (t, snap)
}

#[test]
fn tar_members_outside_the_tree_are_not_read() {
    let tar = RawTar::new()
        .file("ok/k.co", &co(GFX90A, 0, 1))
        .file("../evil", &co(GFX900, 0, 1))
        .file("/abs", &co(GFX1030, 0, 1))
        .file("a/../../b", &co(GFX942, 0, 1))
        .file("ok/after.co", &co(GFX1100, 0, 1))
        .finish();
    let (_, snap) = scan_hostile("bad.tar", &tar);
    assert_eq!(file_paths(&snap), ["ok/after.co", "ok/k.co"], "{snap:#}");
    assert_eq!(
        snap["targets"].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["gfx1100".to_string(), "gfx90a".to_string()])
    );
    let p = problems(&snap);
    assert_eq!(p.len(), 3, "{p:?}");
    for name in ["../evil", "/abs", "a/../../b"] {
        let hit = p.iter().find(|(path, msg)| path == name || msg.contains(name));
        let (_, msg) = hit.unwrap_or_else(|| panic!("no problem names {name}: {p:?}"));
        let why = if name.starts_with('/') { "absolute" } else { "`..`" };
        assert!(msg.contains(why) && msg.contains("not read"), "{name}: {msg}");
    }
}

#[test]
fn symlinks_leaving_the_tree_are_problems() {
    let tar = RawTar::new()
        .file("lib/k.co", &co(GFX90A, 0, 1))
        .symlink("a", "../../etc")
        .symlink("lib/deep/up", "../../../x")
        .symlink("lib/fine", "../lib/k.co")
        .symlink("lib/abs", "/usr/lib/x")
        .finish();
    let (_, snap) = scan_hostile("links.tar", &tar);
    assert_eq!(file_paths(&snap), ["lib/k.co"]);
    assert_eq!(snap["summary"]["symlinks"], 4);
    let p = problems(&snap);
    let paths: Vec<&str> = p.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(paths, ["a", "lib/deep/up"], "{p:?}");
    assert!(p[0].1.contains("../../etc") && p[0].1.contains("leaves"), "{p:?}");
    assert!(p[1].1.contains("../../../x"), "{p:?}");
}

#[test]
fn duplicate_members_keep_the_last() {
    let tar = RawTar::new()
        .file("lib/k.co", &co(GFX900, 0, 1))
        .file("lib/other.co", &co(GFX90A, 0, 1))
        .file("lib/k.co", &co(GFX1100, 0, 2))
        .finish();
    for (name, bytes) in [("dup.tar", tar.clone()), ("dup.tar.gz", gz(&tar))] {
        let (_, snap) = scan_hostile(name, &bytes);
        assert_eq!(file_paths(&snap), ["lib/k.co", "lib/other.co"], "{name}");
        assert_eq!(target_ids(file_record(&snap, "lib/k.co")), ["gfx1100"], "{name}: the last one counts");
        assert_eq!(file_record(&snap, "lib/k.co")["code_objects"][0]["kernels"], 2, "{name}");
        assert_eq!(snap["summary"]["files"], 2, "{name}");
        assert_eq!(snap["summary"]["code_objects"], 2, "{name}");
        assert!(snap["targets"].get("gfx900").is_none(), "{name}: {:#}", snap["targets"]);
        let p = problems(&snap);
        assert_eq!(p.len(), 1, "{name}: {p:?}");
        assert_eq!(p[0].0, "lib/k.co", "{name}");
        assert!(p[0].1.contains("duplicate"), "{name}: {p:?}");
        assert_eq!(archives(&snap)[0]["members"], 2, "{name}");
    }
}

#[test]
fn truncated_archives_keep_what_came_before_the_cut() {
    let tar = RawTar::new()
        .file("first.co", &co(GFX90A, 0, 2))
        .file("second.co", &co(GFX1100, 0, 1))
        .file("filler.bin", &garbage(256 << 10, 7))
        .file("last.co", &co(GFX900, 0, 1))
        .finish();
    let compressed = gz(&tar);
    // Cut inside the incompressible filler: the code objects before it inflate whole.
    let cut_gz = compressed[..compressed.len() - (100 << 10)].to_vec();
    let filler_at = crate::util::offset_of(&tar, b"filler.bin") as usize + 512;
    let cut_tar = tar[..filler_at + (100 << 10)].to_vec();
    for (name, bytes) in [("cut.tar", cut_tar), ("cut.tar.gz", cut_gz)] {
        let t = Tree::new();
        t.file(name, &bytes);
        t.file("after.co", &co(GFX942, 0, 1));
        let (run, snap) = t.scan_json(&[]);
        run.expect_code(1);
        let paths = file_paths(&snap);
        assert_eq!(
            paths,
            ["after.co".to_string(), format!("{name}!/first.co"), format!("{name}!/second.co")],
            "{name}: {snap:#}"
        );
        let p = problems(&snap);
        assert!(!p.is_empty(), "{name}: no problem");
        // The archive is what is broken: the problem names it, not a member and not `NAME!/`.
        let paths: Vec<&str> = p.iter().map(|(path, _)| path.as_str()).collect();
        assert!(paths.contains(&name), "{name}: {p:?}");
        assert!(
            paths.iter().all(|path| *path == name || path.starts_with(&format!("{name}!/filler"))),
            "{name}: {p:?}"
        );
        assert!(
            p.iter().any(|(_, m)| ["truncated", "incomplete", "end of file"].iter().any(|w| m.contains(w))),
            "{name}: {p:?}"
        );
    }
}

#[test]
fn zip_member_inflating_past_its_declared_size() {
    let obj = co(GFX90A, 0, 4);
    let zip = zip_bytes(&[
        ZipMember::file("ok.co", &co(GFX1100, 0, 1), true),
        ZipMember { declared_size: Some(200), ..ZipMember::file("bomb.co", &obj, true) },
    ]);
    let (_, snap) = scan_hostile("bomb.zip", &zip);
    assert_eq!(file_paths(&snap), ["ok.co"], "{snap:#}");
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "bomb.co");
    assert!(p[0].1.contains("inflates past its declared size"), "{p:?}");
}

#[test]
fn archives_nested_five_deep_stop_at_four() {
    let a4 = zip_bytes(&[ZipMember::file("deep.co", &co(GFX942, 0, 1), true)]);
    let a3 = gz(&RawTar::new().file("a4.zip", &a4).file("lvl3.co", &co(GFX90A, 0, 1)).finish());
    let a2 = RawTar::new().file("a3.tar.gz", &a3).finish();
    let a1 = zip_bytes(&[ZipMember::file("a2.tar", &a2, true)]);
    let a0 = zst(&RawTar::new().file("a1.zip", &a1).finish());
    let t = Tree::new();
    t.file("a0.tar.zst", &a0);
    let (run, snap) = t.scan_json(&[]);
    run.expect_code(1);
    let chain = "a0.tar.zst!/a1.zip!/a2.tar!/a3.tar.gz";
    assert_eq!(file_paths(&snap), [format!("{chain}!/lvl3.co")], "{snap:#}");
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, format!("{chain}!/a4.zip"));
    assert!(p[0].1.contains("nested"), "{p:?}");
    let paths: Vec<Value> = archives(&snap).iter().map(|a| a["path"].clone()).collect();
    assert_eq!(
        paths,
        [json!("a0.tar.zst"), json!("a0.tar.zst!/a1.zip"), json!("a0.tar.zst!/a1.zip!/a2.tar"), json!(chain)]
    );
}

#[test]
fn gnu_long_name_over_a_mebibyte() {
    let mut tar = RawTar::new();
    tar.file("before.co", &co(GFX90A, 0, 1));
    let name = vec![b'n'; (1 << 20) + 10];
    tar.entry(b"././@LongLink", b'L', b"", &name);
    tar.file("placeholder", &co(GFX900, 0, 1));
    let (_, snap) = scan_hostile("long.tar", &tar.finish());
    assert_eq!(file_paths(&snap), ["before.co"], "{snap:#}");
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].1.contains("1048586"), "the problem says how long: {p:?}");
}

#[test]
fn garbage_after_zip_magic() {
    let t = Tree::new();
    let mut junk = b"PK\x03\x04".to_vec();
    junk.extend(garbage(4000, 3));
    t.file("junk.whl", &junk);
    t.file("good.co", &co(GFX1030, 0, 1));
    let (run, snap) = t.scan_json(&[]);
    run.expect_code(1);
    assert_eq!(file_paths(&snap), ["good.co"]);
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "junk.whl");
    assert!(p[0].1.contains("zip"), "{p:?}");
    // Only the magic, nothing else.
    let (_, snap) = scan_hostile("magic.zip", b"PK\x03\x04");
    assert_eq!(snap["files"], json!([]));
    assert_eq!(problems(&snap).len(), 1, "{snap:#}");
}

#[test]
fn zip_member_with_parent_name() {
    let zip = zip_bytes(&[
        ZipMember::file("../x", &co(GFX900, 0, 1), true),
        ZipMember::file("/etc/y", &co(GFX906, 0, 1), false),
        ZipMember::file("pkg/ok.co", &co(GFX1100, 0, 1), true),
    ]);
    let (_, snap) = scan_hostile("evil.zip", &zip);
    assert_eq!(file_paths(&snap), ["pkg/ok.co"]);
    let p = problems(&snap);
    assert_eq!(p.len(), 2, "{p:?}");
    let find = |name: &str| {
        p.iter()
            .find(|(path, msg)| path == name || msg.contains(name))
            .unwrap_or_else(|| panic!("no problem names {name}: {p:?}"))
            .1
            .clone()
    };
    assert!(find("../x").contains("`..`"), "{p:?}");
    assert!(find("/etc/y").contains("absolute"), "{p:?}");
}

// ---------------------------------------------------------------------------------------------
// 5. check on a package
// ---------------------------------------------------------------------------------------------

/// `gfxscan check --quiet --json ROOT --gpu gfx90a`, without the test process's HSA_* variables.
fn check_gfx90a(root: &Path) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.arg("check").arg("--quiet").arg("--json").arg(root).args(["--gpu", "gfx90a"]);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("HSA_") {
            cmd.env_remove(&k);
        }
    }
    cmd.env_remove("HSA_OVERRIDE_GFX_VERSION").env_remove("HSA_XNACK");
    run(cmd)
}

/// The verdicts of a check report, with the root prefix taken off library paths.
fn verdicts(report: &Value, root: &Path) -> Vec<Value> {
    let prefix = format!("{}/", root.display());
    let installs = report["installs"].as_array().expect("installs");
    installs
        .iter()
        .flat_map(|i| i["gpus"].as_array().expect("gpus"))
        .flat_map(|g| g["verdicts"].as_array().expect("verdicts"))
        .map(|v| {
            let mut v = v.clone();
            let lib = v["library"].as_str().expect("library").to_string();
            v["library"] = json!(lib.strip_prefix(&prefix).unwrap_or(&lib));
            v
        })
        .collect()
}

#[test]
fn check_on_a_deb_judges_like_the_unpacked_tree() {
    let good = fatbin(&[hip_bundle(&[("gfx90a", &co(GFX90A, 0, 1)), ("gfx1100", &co(GFX1100, 0, 1))])]);
    let bad = fatbin(&[hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1)), ("gfx1030", &co(GFX1030, 0, 1))])]);
    let entries = vec![
        file("opt/rocm/lib/libgood.so.1", host_elf(&[HostSection::hip_fatbin(&good)])),
        file("opt/rocm/lib/libbad.so.1", host_elf(&[HostSection::hip_fatbin(&bad)])),
        link("opt/rocm/lib/libgood.so", "libgood.so.1"),
        file("opt/rocm/lib/kernels.hsaco", hip_bundle(&[("gfx90a:xnack-", &co(GFX90A, 0x200, 1))])),
    ];
    let t = Tree::new();
    write_dir(&t, "dir", &entries);
    t.file("pkg.deb", &deb_of(&entries));
    let on_dir = check_gfx90a(&t.path("dir"));
    on_dir.expect_code(1);
    let on_deb = check_gfx90a(&t.path("pkg.deb"));
    let (dir_report, deb_report) = (on_dir.json(), on_deb.json());
    let (want, got) = (verdicts(&dir_report, &t.path("dir")), verdicts(&deb_report, &t.path("pkg.deb")));
    let status: Vec<(String, String)> = want
        .iter()
        .map(|v| {
            (v["library"].as_str().unwrap_or("").to_string(), v["status"].as_str().unwrap_or("").to_string())
        })
        .collect();
    assert!(status.contains(&("opt/rocm/lib/libbad.so.1".into(), "missing".into())), "{status:?}");
    assert!(status.contains(&("opt/rocm/lib/libgood.so.1".into(), "ok".into())), "{status:?}");
    assert_eq!(got, want, "deb verdicts:\n{deb_report:#}\nfolder verdicts:\n{dir_report:#}");
    assert_eq!(on_deb.code, on_dir.code);
    assert_eq!(deb_report["gpus"][0]["device"], dir_report["gpus"][0]["device"]);
    assert_eq!(deb_report["problems"], json!([]));
}

// ---------------------------------------------------------------------------------------------
// 6. Determinism
// ---------------------------------------------------------------------------------------------

#[test]
fn thread_count_does_not_change_archive_json() {
    let objs = [co(GFX900, 0, 1), co(GFX90A, 0, 2), co(GFX1030, 0, 3), co(GFX1100, 0, 4)];
    let mut entries = Vec::new();
    for i in 0..50usize {
        let o = &objs[i % objs.len()];
        let rel = format!("d{}/sub{}/f{i:02}", i % 7, i % 3);
        entries.push(match i % 5 {
            0 => file(&format!("{rel}.co"), o.clone()),
            1 => file(&format!("{rel}.hsaco"), hip_bundle(&[("gfx90a", o), ("gfx1030", &objs[2])])),
            2 => file(&format!("{rel}.ccob"), ccob(3, Codec::Zstd, &hip_bundle(&[("gfx1100", o)]))),
            3 => file(&format!("{rel}.bad"), o[..200].to_vec()),
            _ => file(&format!("{rel}.txt"), format!("member {i}\n").into_bytes()),
        });
    }
    let tar = tar_of(&entries);
    let t = Tree::new();
    for (name, bytes) in
        [("many.tar.gz", gz(&tar)), ("many.tar", tar.clone()), ("many.zip", zip_of(&entries, true))]
    {
        t.file(name, &bytes);
        let path = t.path(name);
        let one =
            gfxscan([OsString::from("scan"), "--json".into(), "-j".into(), "1".into(), path.clone().into()]);
        let four = gfxscan([OsString::from("scan"), "--json".into(), "-j".into(), "4".into(), path.into()]);
        one.expect_code(1);
        assert_eq!(four.code, one.code, "{name}");
        assert!(one.stdout == four.stdout, "{name}: -j 1 and -j 4 differ");
        let snap = one.json();
        assert_eq!(snap["summary"]["files"], 50, "{name}");
        // 10 bundles of 2, 20 single objects, and 10 cut-short objects listed with their problem.
        assert_eq!(snap["summary"]["code_objects"], 50, "{name}");
        assert_eq!(problems(&snap).len(), 10, "{name}");
        assert_eq!(archives(&snap)[0]["members"], 50, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Regressions from review
// ---------------------------------------------------------------------------------------------

/// Scans a folder holding the archive `name` = `bytes` and a code object `after.co` beside it.
fn scan_beside(name: &str, bytes: &[u8]) -> (Tree, Run, Value) {
    let t = Tree::new();
    t.file(name, bytes);
    t.file("after.co", &co(GFX942, 0, 1));
    let (run, snap) = t.scan_json(&[]);
    (t, run, snap)
}

/// A `docker save` archive of the given layers (bottom first).
fn image_of(layers: Vec<Vec<u8>>) -> Vec<u8> {
    let names: Vec<String> = (0..layers.len()).map(|i| format!("l{i}/layer.tar")).collect();
    let manifest = json!([{"Config": "cfg.json", "RepoTags": [], "Layers": names}]);
    let mut entries = vec![file("cfg.json", br#"{"architecture":"amd64","os":"linux"}"#.to_vec())];
    for (name, layer) in names.iter().zip(layers) {
        entries.push(file(name, layer));
    }
    entries.push(file("manifest.json", manifest.to_string().into_bytes()));
    tar_of(&entries)
}

#[test]
fn tar_member_size_near_u64_max_is_a_problem_not_a_hang() {
    // GNU base-256 size 2^64 - 512 (a whole number of blocks), then the end marker.
    let huge = u64::MAX - 511;
    let mut size = [0u8; 12];
    size[0] = 0x80;
    size[4..].copy_from_slice(&huge.to_be_bytes());
    let base256 = RawTar::new().raw(&tar_header(b"x.bin", b'0', b"", &size, &[]), b"").finish();
    assert_eq!(base256.len(), 1536);
    let pax = RawTar::new().pax(&[("size", "18446744073709551615")]).file("b.bin", b"x").finish();
    for (name, bytes, claimed) in [
        ("base256.tar", base256.clone(), huge),
        ("pax.tar", pax.clone(), u64::MAX),
        ("base256.tar.gz", gz(&base256), huge),
        ("pax.tar.gz", gz(&pax), u64::MAX),
    ] {
        let (_t, run, snap) = scan_beside(name, &bytes);
        run.expect_code(1);
        assert_eq!(file_paths(&snap), ["after.co"], "{name}: {snap:#}");
        assert_eq!(snap["summary"]["files"], 1, "{name}: {snap:#}");
        let p = problems(&snap);
        assert_eq!(p.len(), 1, "{name}: {p:?}");
        assert_eq!(p[0].0, name, "{name}: the archive is what is broken: {p:?}");
        let msg = &p[0].1;
        assert!(msg.contains("member size") || msg.contains("truncated"), "{name}: {msg}");
        assert!(msg.contains(&claimed.to_string()), "{name}: the problem says the size claimed: {msg}");
    }
}

#[test]
fn tar_cut_inside_a_big_member_is_truncated_not_a_short_file() {
    let big_name = "lib/firmware/amdgpu/vega10_me.bin";
    let first = co(GFX90A, 0, 1);
    let tar =
        RawTar::new().file("first.co", &first).file(big_name, &firmware_blob(167, (9, 0), 2 << 20)).finish();
    let data_at = crate::util::offset_of(&tar, big_name.as_bytes()) as usize + 512;
    let cut = tar[..data_at + (1 << 20)].to_vec();
    // Whole, the firmware blob is a file record (so a clipped one would be seen).
    let (_t, run, whole) = scan_beside("whole.tar", &tar);
    run.expect_code(0);
    assert_eq!(file_record(&whole, &format!("whole.tar!/{big_name}"))["size"], 2 << 20);

    let (_t, run, snap) = scan_beside("cut.tar", &cut);
    run.expect_code(1);
    assert_eq!(file_paths(&snap), ["after.co", "cut.tar!/first.co"], "{snap:#}");
    assert_eq!(snap["summary"]["files"], 2, "{snap:#}");
    let after_len = co(GFX942, 0, 1).len();
    assert_eq!(snap["summary"]["bytes"], first.len() + after_len, "no clipped member counted: {snap:#}");
    assert_eq!(archives(&snap)[0]["members"], 1, "{snap:#}");
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "cut.tar", "{p:?}");
    assert!(p[0].1.contains("truncated"), "{p:?}");
    assert!(p[0].1.contains(&(2u64 << 20).to_string()), "the problem says what the member claims: {p:?}");
}

#[test]
fn tar_hard_link_is_named_by_its_own_name() {
    let gc = "lib/firmware/amdgpu/gc_11_0_0_mes.bin";
    let navi = "lib/firmware/amdgpu/navi10_sos.bin";
    let blob = firmware_blob(530, (11, 0), 4096);
    let tar = RawTar::new()
        .dir("lib/")
        .dir("lib/firmware/")
        .dir("lib/firmware/amdgpu/")
        .file(gc, &blob)
        .entry(navi.as_bytes(), b'1', gc.as_bytes(), b"")
        .finish();
    let t = Tree::new();
    // Extracted, a hard link is one more name for the same bytes.
    write_dir(&t, "dir", &[file(gc, blob.clone()), file(navi, blob.clone())]);
    t.file("fw.tar", &tar);
    let (dir_run, want) = scan_json(&t.path("dir"), &[]);
    let (run, snap) = scan_json(&t.path("fw.tar"), &[]);
    assert_eq!(problems(&snap), Vec::<(String, String)>::new());
    assert_eq!(run.code, dir_run.code);
    assert_eq!(file_paths(&snap), [gc, navi], "{snap:#}");
    let link = file_record(&snap, navi);
    assert_eq!(link["artifact"]["firmware"]["prefix"], "navi10", "{link:#}");
    assert_eq!(link["artifact"]["name_target"], "gfx1010", "{link:#}");
    assert_eq!(link["size"], 4096, "{link:#}");
    assert_eq!(file_record(&snap, gc)["artifact"]["firmware"]["prefix"], "gc_11_0_0");
    assert_eq!(file_record(&want, navi)["artifact"]["firmware"]["prefix"], "navi10");
    assert_eq!(tree_part(&snap), tree_part(&want));
    assert_eq!(archives(&snap), [json!({"root": 0, "path": "", "format": "tar", "members": 2})]);
}

#[test]
fn image_hard_links_outlive_their_whited_out_or_replaced_target() {
    let bottom = RawTar::new().file("a.so", &co(GFX90A, 0, 2)).entry(b"b.so", b'1', b"a.so", b"").finish();
    let cases = [
        ("whiteout", RawTar::new().file(".wh.a.so", b"").finish(), vec![file("b.so", co(GFX90A, 0, 2))]),
        (
            "replaced",
            RawTar::new().file("a.so", &co(GFX1100, 0, 3)).finish(),
            vec![file("a.so", co(GFX1100, 0, 3)), file("b.so", co(GFX90A, 0, 2))],
        ),
    ];
    for (what, top, final_fs) in cases {
        let t = Tree::new();
        write_dir(&t, "final", &final_fs);
        let (run, want) = scan_json(&t.path("final"), &[]);
        run.expect_code(0);
        t.file("image.tar", &image_of(vec![bottom.clone(), top]));
        let (run, snap) = scan_json(&t.path("image.tar"), &[]);
        let p = problems(&snap);
        assert!(!p.iter().any(|(_, m)| m.contains("which no earlier member")), "{what}: {p:?}");
        assert_eq!(p, Vec::<(String, String)>::new(), "{what}");
        run.expect_code(0);
        let paths: Vec<String> = final_fs.iter().map(|e| e.path().to_string()).collect();
        assert_eq!(file_paths(&snap), paths, "{what}: {snap:#}");
        assert_eq!(
            target_ids(file_record(&snap, "b.so")),
            ["gfx90a"],
            "{what}: b.so keeps a.so's first content"
        );
        assert_eq!(file_record(&snap, "b.so")["code_objects"][0]["kernels"], 2, "{what}");
        if what == "replaced" {
            assert_eq!(target_ids(file_record(&snap, "a.so")), ["gfx1100"]);
        }
        assert_eq!(snap["archives"][0]["format"], "docker-image", "{what}");
        assert_eq!(tree_part(&snap), tree_part(&want), "{what}");
    }
}

#[test]
fn unknown_tar_entry_type_is_read_as_a_regular_file() {
    let tar = RawTar::new()
        .entry(b"lib/x.co", b'A', b"", &co(GFX1030, 0, 1))
        .file("lib/after.co", &co(GFX900, 0, 1))
        .finish();
    let (_t, snap) = scan_hostile("unk.tar", &tar);
    assert_eq!(file_paths(&snap), ["lib/after.co", "lib/x.co"], "{snap:#}");
    assert_eq!(target_ids(file_record(&snap, "lib/x.co")), ["gfx1030"]);
    assert_eq!(snap["summary"]["files"], 2, "{snap:#}");
    assert_eq!(snap["summary"]["code_objects"], 2, "{snap:#}");
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "lib/x.co", "{p:?}");
    assert!(p[0].1.contains("unknown tar entry type") && p[0].1.contains("'A'"), "{p:?}");
}

#[test]
fn old_gnu_sparse_extension_blocks_are_skipped() {
    // Old GNU magic; one map entry (0, 512) in the header, real size 1 MiB, and one extension
    // block (isextended at 482), whose own isextended byte (504) is 0.
    let number = |v: u64| format!("{v:011o}\0").into_bytes();
    let (zero, block, real) = (number(0), number(512), number(1 << 20));
    let header = tar_header(
        b"sparse.bin",
        b'S',
        b"",
        &block,
        &[(257, b"ustar  \0"), (386, &zero), (398, &block), (482, &[1]), (483, &real)],
    );
    let mut ext = [0u8; 512];
    ext[..12].copy_from_slice(&number((1 << 20) - 512));
    ext[12..24].copy_from_slice(&zero);
    let mut tar = RawTar::new();
    tar.0.extend_from_slice(&header);
    tar.0.extend_from_slice(&ext);
    tar.0.extend_from_slice(&garbage(512, 11));
    let tar = tar.file("zz.co", &co(GFX942, 0, 3)).finish();
    let (_t, snap) = scan_hostile("gsparse.tar", &tar);
    assert_eq!(file_paths(&snap), ["zz.co"], "{snap:#}");
    assert_eq!(target_ids(file_record(&snap, "zz.co")), ["gfx942"]);
    assert_eq!(file_record(&snap, "zz.co")["code_objects"][0]["kernels"], 3);
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "sparse.bin", "{p:?}");
    assert!(p[0].1.contains("sparse"), "{p:?}");
}

#[test]
fn pax_sparse_problem_names_the_real_path() {
    let mut data = b"1\n0\n512\n".to_vec();
    data.resize(512, 0);
    data.extend(garbage(512, 5));
    let tar = RawTar::new()
        .pax(&[
            ("GNU.sparse.major", "1"),
            ("GNU.sparse.minor", "0"),
            ("GNU.sparse.name", "real/name.bin"),
            ("GNU.sparse.realsize", "4096"),
            ("path", "GNUSparseFile.0/name.bin"),
        ])
        .file("GNUSparseFile.0/name.bin", &data)
        .file("zz.co", &co(GFX90A, 0, 1))
        .finish();
    let (_t, snap) = scan_hostile("psparse.tar", &tar);
    assert_eq!(file_paths(&snap), ["zz.co"], "{snap:#}");
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "real/name.bin", "{p:?}");
    assert!(p[0].1.contains("sparse"), "{p:?}");
}

#[test]
fn plain_tar_holding_a_manifest_json_is_a_plain_tar() {
    let tar = tar_of(&[file("manifest.json", br#"{"name":"x"}"#.to_vec()), file("lib.co", co(GFX90A, 0, 1))]);
    let t = Tree::new();
    t.file("mj.tar", &tar);
    let (run, snap) = scan_json(&t.path("mj.tar"), &[]);
    assert_eq!(problems(&snap), Vec::<(String, String)>::new());
    run.expect_code(0);
    assert_eq!(archives(&snap), [json!({"root": 0, "path": "", "format": "tar", "members": 2})]);
    assert_eq!(file_paths(&snap), ["lib.co"]);
    assert_eq!(target_ids(file_record(&snap, "lib.co")), ["gfx90a"]);
    assert_eq!(snap["summary"]["files"], 2, "{snap:#}");
}

#[test]
fn a_later_entry_of_another_type_replaces_a_file_and_old_folders_are_folders() {
    let tar = RawTar::new().file("x.co", &co(GFX90A, 0, 1)).symlink("x.co", "y.co").finish();
    let (_t, snap) = scan_hostile("filethenlink.tar", &tar);
    assert_eq!(snap["summary"]["symlinks"], 1, "{snap:#}");
    assert_eq!(snap["summary"]["files"], 0, "{snap:#}");
    assert_eq!(snap["summary"]["code_objects"], 0, "{snap:#}");
    assert_eq!(file_paths(&snap), Vec::<String>::new());
    assert!(snap["targets"].get("gfx90a").is_none(), "{:#}", snap["targets"]);
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "x.co", "{p:?}");
    assert!(p[0].1.contains("duplicate"), "{p:?}");

    // A pre-POSIX folder: typeflag '0', marked only by its trailing slash.
    let v7 = RawTar::new().entry(b"usr/", b'0', b"", b"").file("usr/k.co", &co(GFX906, 0, 1)).finish();
    let posix = RawTar::new().dir("usr/").file("usr/k.co", &co(GFX906, 0, 1)).finish();
    let t = Tree::new();
    t.file("v7.tar", &v7);
    t.file("posix.tar", &posix);
    let (run, snap) = scan_json(&t.path("v7.tar"), &[]);
    assert_eq!(problems(&snap), Vec::<(String, String)>::new());
    run.expect_code(0);
    assert_eq!(snap["summary"]["files"], 1, "{snap:#}");
    assert_eq!(file_paths(&snap), ["usr/k.co"]);
    assert_eq!(archives(&snap)[0]["members"], 1, "{snap:#}");
    let (_, want) = scan_json(&t.path("posix.tar"), &[]);
    assert_eq!(tree_part(&snap), tree_part(&want));
}

// ---------------------------------------------------------------------------------------------
// 8. Regressions from the second review
// ---------------------------------------------------------------------------------------------

#[test]
fn large_streamed_member_read_past_a_gap_keeps_its_code_objects() {
    // Over IN_MEMORY (32 MiB), so read live from the stream: the ELF header first, then its
    // section headers and `.hip_fatbin` near the end, far past what the window had kept.
    let zeros = vec![0u8; 40 << 20];
    let fat = fatbin(&[hip_bundle(&[("gfx90a", &co(GFX90A, 0, 2)), ("gfx1100", &co(GFX1100, 0, 1))])]);
    let lib = host_elf(&[
        HostSection::rodata(".rodata", &zeros),
        HostSection::rodata(".data.rel.ro", &zeros[..4 << 20]),
        HostSection::hip_fatbin(&fat),
    ]);
    assert!(lib.len() > 44 << 20);
    let entries = vec![file("opt/rocm/lib/libbig.so", lib), file("opt/rocm/lib/k.co", co(GFX942, 0, 1))];
    let t = Tree::new();
    write_dir(&t, "dir", &entries);
    let (run, want) = scan_json(&t.path("dir"), &[]);
    run.expect_code(0);
    assert_eq!(target_ids(file_record(&want, "opt/rocm/lib/libbig.so")), ["gfx90a", "gfx1100"]);
    assert_eq!(want["summary"]["code_objects"], 3, "{want:#}");

    let tar = tar_of(&entries);
    for (name, bytes, format) in
        [("big.tar.gz", gz(&tar), "tar+gzip"), ("big.tar.zst", zst(&tar), "tar+zstd")]
    {
        t.file(name, &bytes);
        let (run, snap) = scan_json(&t.path(name), &[]);
        assert_eq!(problems(&snap), Vec::<(String, String)>::new(), "{name}");
        run.expect_code(0);
        assert_eq!(target_ids(file_record(&snap, "opt/rocm/lib/libbig.so")), ["gfx90a", "gfx1100"], "{name}");
        assert_eq!(archives(&snap), [json!({"root": 0, "path": "", "format": format, "members": 2})]);
        assert_eq!(tree_part(&snap), tree_part(&want), "{name}");
    }
}

#[test]
fn many_nested_archives_after_big_members_do_not_overflow_the_stack() {
    const NESTED: usize = 400;
    let inner = gz(&RawTar::new().file("k.co", &co(GFX90A, 0, 1)).finish());
    // Four members of zeros held in memory (each at most IN_MEMORY, 32 MiB) that, with the
    // nested archives after them, fill the in-flight limit (128 MiB) exactly: each nested
    // archive's own member then finds no room.
    let zeros = vec![0u8; 32 << 20];
    let last = zeros.len() - NESTED * inner.len();
    let mut outer = RawTar::new();
    for (i, size) in [zeros.len(), zeros.len(), zeros.len(), last].into_iter().enumerate() {
        outer.file(&format!("zeros{i}.bin"), &zeros[..size]);
    }
    for i in 0..NESTED {
        outer.file(&format!("nested/n{i:04}.tar.gz"), &inner);
    }
    let t = Tree::new();
    t.file("outer.tar.gz", &gz(&outer.finish()));
    let run = gfxscan([
        OsString::from("scan"),
        "--json".into(),
        "-j".into(),
        "1".into(),
        t.path("outer.tar.gz").into(),
    ]);
    run.expect_code(0);
    let snap = run.json();
    assert_eq!(problems(&snap), Vec::<(String, String)>::new());
    assert_eq!(snap["summary"]["code_objects"], NESTED, "{:#}", snap["summary"]);
    assert_eq!(snap["summary"]["files"], NESTED + 4, "{:#}", snap["summary"]);
    let last = format!("nested/n{:04}.tar.gz!/k.co", NESTED - 1);
    assert_eq!(target_ids(file_record(&snap, &last)), ["gfx90a"]);
    assert_eq!(archives(&snap).len(), NESTED + 1);
}

/// The name of layer `i` in [`saved_image`]: a folder of 64 hex digits, as `docker save` writes.
fn saved_layer(i: usize) -> String {
    format!("{}/layer.tar", sha256(format!("layer {i}").as_bytes()))
}

/// A `docker save` archive named as Docker names it (so a compressed one is seen as an image by
/// its first entry): the layer tarballs `(i, tar)` in the order given, under [`saved_layer`]`(i)`,
/// a manifest listing layers `0..layers`, bottom first.
fn saved_image(members: Vec<(usize, Vec<u8>)>, layers: usize) -> Vec<u8> {
    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let config_name = format!("{}.json", sha256(&config));
    let names: Vec<String> = (0..layers).map(saved_layer).collect();
    let manifest = json!([{"Config": config_name, "RepoTags": ["gfxscan/test:latest"], "Layers": names}]);
    let mut entries = vec![file(&config_name, config)];
    for (i, layer) in members {
        entries.push(file(&saved_layer(i), layer));
    }
    entries.push(file("manifest.json", manifest.to_string().into_bytes()));
    tar_of(&entries)
}

#[test]
fn streamed_image_reads_only_the_last_member_of_a_name() {
    let stale = tar_of(&[file("stale.co", co(GFX900, 0, 1)), file("A", co(GFX906, 0, 1))]);
    let lower = tar_of(&[file("A", co(GFX90A, 0, 2)), file("B", co(GFX1030, 0, 1))]);
    let upper = tar_of(&[file("C", co(GFX942, 0, 1))]);
    let image = saved_image(vec![(0, stale), (0, lower), (1, upper)], 2);
    let t = Tree::new();
    t.file("image.tar", &image);
    t.file("image.tar.gz", &gz(&image));
    let (run, want) = scan_json(&t.path("image.tar"), &[]);
    run.expect_code(0);
    assert_eq!(file_paths(&want), ["A", "B", "C"], "{want:#}");
    assert_eq!(target_ids(file_record(&want, "A")), ["gfx90a"]);
    let (run, snap) = scan_json(&t.path("image.tar.gz"), &[]);
    assert_eq!(problems(&snap), Vec::<(String, String)>::new());
    run.expect_code(0);
    assert_eq!(file_paths(&snap), ["A", "B", "C"], "{snap:#}");
    assert_eq!(target_ids(file_record(&snap, "A")), ["gfx90a"], "A comes from the last layer of its name");
    assert!(snap["targets"].get("gfx900").is_none(), "stale layer read: {:#}", snap["targets"]);
    assert_eq!(snap["summary"]["code_objects"], 3, "{snap:#}");
    assert_eq!(
        snap["archives"],
        json!([{"root": 0, "path": "", "format": "docker-image", "members": 3, "layers": 2}])
    );
    assert_eq!(tree_part(&snap), tree_part(&want));
}

#[test]
fn go_containerregistry_tarball_compressed_whole_is_an_image() {
    let lower = gz(&tar_of(&[file("A", co(GFX906, 0, 1)), file("B", co(GFX900, 0, 1))]));
    let upper = gz(&tar_of(&[file(".wh.B", Vec::new()), file("C", co(GFX90A, 0, 2))]));
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let config_name = format!("sha256:{}", sha256(&config));
    let (lower_name, upper_name) =
        (format!("{}.tar.gz", sha256(&lower)), format!("{}.tar.gz", sha256(&upper)));
    let manifest = json!([{"Config": config_name, "RepoTags": ["gfxscan/ggcr:latest"], "Layers": [lower_name, upper_name]}]);
    // As `crane` / go-containerregistry's tarball.Write lays it out: config, layers, manifest.
    let image = RawTar::new()
        .file(&config_name, &config)
        .file(&lower_name, &lower)
        .file(&upper_name, &upper)
        .file("manifest.json", &manifest.to_string().into_bytes())
        .finish();
    let t = Tree::new();
    write_dir(&t, "final", &[file("A", co(GFX906, 0, 1)), file("C", co(GFX90A, 0, 2))]);
    let (run, want) = scan_json(&t.path("final"), &[]);
    run.expect_code(0);
    for name in ["ggcr.tar", "ggcr.tar.gz"] {
        t.file(name, &if name.ends_with(".gz") { gz(&image) } else { image.clone() });
        let (run, snap) = scan_json(&t.path(name), &[]);
        assert_eq!(problems(&snap), Vec::<(String, String)>::new(), "{name}");
        run.expect_code(0);
        assert_eq!(file_paths(&snap), ["A", "C"], "{name}: B is whited out: {snap:#}");
        assert_eq!(
            snap["archives"],
            json!([{"root": 0, "path": "", "format": "docker-image", "members": 2, "layers": 2}]),
            "{name}"
        );
        assert_eq!(tree_part(&snap), tree_part(&want), "{name}");
    }
}

#[test]
fn streamed_image_layer_cut_after_its_whiteout_still_hides_the_lower_file() {
    let lower = tar_of(&[file("A", co(GFX906, 0, 1)), file("B", co(GFX900, 0, 1))]);
    let whole = RawTar::new().file(".wh.B", b"").file("C", &co(GFX90A, 0, 2)).finish();
    // The upper layer ends 100 bytes into C's data: the whiteout entry before it is whole.
    let cut_at = crate::util::offset_of(&whole, b"C\0") as usize + 512 + 100;
    let upper = whole[..cut_at].to_vec();
    let image = saved_image(vec![(0, lower), (1, upper)], 2);
    let t = Tree::new();
    for name in ["image.tar", "image.tar.gz"] {
        t.file(name, &if name.ends_with(".gz") { gz(&image) } else { image.clone() });
        let (run, snap) = scan_json(&t.path(name), &[]);
        run.expect_code(1);
        assert_eq!(file_paths(&snap), ["A"], "{name}: B stays whited out: {snap:#}");
        assert!(snap["targets"].get("gfx900").is_none(), "{name}: {:#}", snap["targets"]);
        let p = problems(&snap);
        assert_eq!(p.len(), 1, "{name}: {p:?}");
        assert_eq!(p[0].0, saved_layer(1), "{name}: {p:?}");
        assert!(p[0].1.contains("truncated"), "{name}: {p:?}");
        assert_eq!(snap["archives"][0]["format"], "docker-image", "{name}");
    }
}

/// With `--follow-links`, a link to a file is read through the link, under the link's name, and
/// a link to an archive is opened as the archive; without it, both are links, not read.
#[test]
fn followed_links_to_files_and_archives_are_read() {
    let tree = Tree::new();
    let k = co(GFX90A, 0, 2);
    tree.file("store/k.co", &k);
    tree.file("store/pkg.tar", &tar_of(&[file("lib/in.co", co(GFX1030, 0, 1))]));
    std::fs::create_dir_all(tree.path("lib")).expect("mkdir");
    tree.symlink("../store/k.co", "lib/k-link.co");
    tree.symlink("../store/pkg.tar", "lib/pkg-link.tar");

    let (run, snap) = scan_json(tree.root(), &["--follow-links"]);
    run.expect_code(0);
    assert_eq!(problems(&snap), Vec::<(String, String)>::new());
    assert_eq!(target_ids(file_record(&snap, "lib/k-link.co")), target_ids(file_record(&snap, "store/k.co")));
    assert_eq!(file_record(&snap, "lib/k-link.co")["size"], k.len() as u64);
    assert_eq!(target_ids(file_record(&snap, "lib/pkg-link.tar!/lib/in.co")), ["gfx1030"]);

    let (run, snap) = scan_json(tree.root(), &[]);
    run.expect_code(0);
    assert_eq!(snap["summary"]["symlinks"], 2);
    let paths = file_paths(&snap);
    assert!(paths.iter().all(|p| !p.starts_with("lib/")), "{paths:?}");
}

/// Broken downloads do not pass (issue 23): a page saved as `.whl`, an empty `.deb`, garbage
/// named `.tar.gz` are problems that say what they hold, and a cut-short wheel says it looks
/// incomplete; the scan exits 1, never "nothing found" with 0.
#[test]
fn broken_downloads_are_problems_that_say_so() {
    let t = Tree::new();
    t.file("torch-2.5.whl", b"<!DOCTYPE html>\n<html><body>404 Not Found</body></html>\n");
    t.file("librocblas4.deb", b"");
    t.file("rocm.tar.gz", b"garbage");
    let whl = zip_of(&[file("pkg/libk.so", vec![0u8; 4096])], false);
    t.file("cut.whl", &whl[..whl.len() / 2]);
    for (name, says) in [
        ("torch-2.5.whl", "named as a wheel (zip), but not one: it starts with \"<!DOCTYPE html>\""),
        ("librocblas4.deb", "named as a Debian package (ar), but not one: it is empty"),
        ("rocm.tar.gz", "named as a gzip tarball, but not one: it starts with \"garbage\""),
        ("cut.whl", "the download looks incomplete"),
    ] {
        let (run, snap) = scan_json(&t.path(name), &[]);
        assert_eq!(run.code, 1, "{name}: {}", run.stderr);
        let p = problems(&snap);
        assert!(p.iter().any(|(_, m)| m.contains(says)), "{name}: {p:?}");
    }
}
