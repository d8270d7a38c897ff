//! Hostile and odd input: each scan finishes, never panics (checked in `util::gfxscan`), names
//! the broken file in a problem and exits 1; special files are never opened; links are
//! counted, not followed, unless asked.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use serde_json::{json, Value};

use gfxscan::scan::{scan, ScanConfig, Silent};
use gfxscan::testing::{bundle, ccob, fatbin, host_elf, Codec, HostSection};
use gfxscan::vocab::targets::Targets;

use crate::fixtures::{co, hip, hip_bundle, GFX1100, GFX900, GFX90A, GFX942};
use crate::util::{file_paths, garbage, offset_of, problems, Tree};

/// Scans a tree holding only `name` = `bytes`; expects exit 1 and only problems naming `name`.
/// Returns the snapshot and the problem messages.
#[track_caller]
fn scan_broken(name: &str, bytes: &[u8]) -> (Value, Vec<String>) {
    let tree = Tree::new();
    tree.file(name, bytes);
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(1);
    let p = problems(&snap);
    assert!(!p.is_empty(), "no problem reported for {name}: {snap:#}");
    for (path, _) in &p {
        assert_eq!(path, name, "{p:?}");
    }
    assert_eq!(snap["summary"]["files"], 1);
    (snap, p.into_iter().map(|(_, m)| m).collect())
}

/// The first 100 bytes of a code object: header and part of the program header table.
#[test]
fn truncated_code_object() {
    let whole = co(GFX90A, 0, 2);
    let (_, msgs) = scan_broken("k.hsaco", &whole[..100]);
    assert!(msgs.iter().any(|m| m.contains("truncated")), "{msgs:?}");
}

/// A bundle entry that holds only the first 100 bytes of a code object (the table is
/// consistent; the ELF inside is cut short).
#[test]
fn bundle_entry_with_truncated_code_object() {
    let whole = co(GFX90A, 0, 2);
    let b = hip_bundle(&[("gfx90a", &whole[..100])]);
    let (_, msgs) = scan_broken("cut.hsaco", &b);
    assert!(msgs.iter().any(|m| m.contains("truncated")), "{msgs:?}");
}

/// A plain bundle whose only device entry points past the end of the file.
#[test]
fn bundle_entry_past_the_end() {
    let mut b = bundle(&[(&hip("gfx900"), &co(GFX900, 0, 1))], 4096);
    let past = (b.len() as u64 + 16).to_le_bytes();
    b[32..40].copy_from_slice(&past);
    let (snap, msgs) = scan_broken("bad.hsaco", &b);
    assert_eq!(msgs, ["bundle at 0x0: bundle entry extends past the bundle at offset 0x20"]);
    assert_eq!(snap["summary"]["code_objects"], 0);
}

/// A CCOB v3 whose header claims 2^40 uncompressed bytes: refused up front, nothing allocated.
#[test]
fn ccob_claiming_a_terabyte() {
    let mut c = ccob(3, Codec::Zstd, &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]));
    c[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let (_, msgs) = scan_broken("huge.co", &c);
    assert_eq!(msgs, ["CCOB uncompressed size claims 1099511627776 bytes, over the limit of 8589934592"]);
}

/// CCOBs whose compressed data is garbage, for both methods and versions 1..3.
#[test]
fn ccob_with_garbage_payload() {
    for (version, method, codec) in [
        (1u16, Codec::Zlib, "zlib"),
        (2, Codec::Zstd, "zstd"),
        (3, Codec::Zstd, "zstd"),
        (3, Codec::Zlib, "zlib"),
    ] {
        let mut c = ccob(version, method, &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]));
        let header = match version {
            1 => 20,
            2 => 24,
            _ => 32,
        };
        let noise = garbage(c.len() - header, u64::from(version));
        c[header..].copy_from_slice(&noise);
        let (snap, msgs) = scan_broken("bad.co", &c);
        assert_eq!(msgs.len(), 1, "v{version} {codec}: {msgs:?}");
        assert!(msgs[0].contains(&format!("{codec} payload")), "v{version} {codec}: {msgs:?}");
        assert_eq!(snap["summary"]["code_objects"], 0);
    }
}

/// A host ELF whose section table offset lies past the end of the file.
#[test]
fn host_elf_section_table_past_the_end() {
    let fat = fatbin(&[hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))])]);
    let mut h = host_elf(&[HostSection::hip_fatbin(&fat)]);
    let past = (h.len() as u64 + 4096).to_le_bytes();
    h[0x28..0x30].copy_from_slice(&past); // e_shoff
    let (snap, msgs) = scan_broken("libbad.so", &h);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(msgs[0].contains("truncated"), "{msgs:?}");
    assert_eq!(snap["files"], json!([]));
}

/// `.hip_fatbin` with garbage from the end of its first bundle through the next aligned slot:
/// the first bundle's code object is kept, the garbage is a problem at its file offset.
#[test]
fn fatbin_with_garbage_after_the_first_bundle() {
    let first = co(GFX942, 0, 2);
    let mut fat = hip_bundle(&[("gfx942", &first)]);
    let slot = fat.len().div_ceil(4096) * 4096;
    let tail = garbage(slot - fat.len() + 700, 7);
    fat.extend_from_slice(&tail);
    let h = host_elf(&[HostSection::hip_fatbin(&fat)]);
    let sec = offset_of(&h, &fat);
    let (snap, msgs) = scan_broken("libhalf.so", &h);
    assert_eq!(
        msgs,
        [format!(".hip_fatbin: data that is not an offload bundle at offset {:#x}", sec + slot as u64)]
    );
    assert_eq!(file_paths(&snap), ["libhalf.so"]);
    let cos = &snap["files"][0]["code_objects"];
    assert_eq!(cos.as_array().map(Vec::len), Some(1));
    assert_eq!(cos[0]["target_id"], "gfx942");
    assert_eq!(cos[0]["offset"], offset_of(&h, &first));
    assert_eq!(snap["files"][0]["bundles"], 1);
}

/// A FIFO is never opened (opening one for reading would block forever): inside a tree it is
/// counted and skipped, no problem (issue 23: a socket in a tree made `check` exit 3), and the
/// rest of the tree is scanned; `check` of such a tree is OK.
#[test]
fn fifo_is_not_opened() {
    let tree = Tree::new();
    tree.fifo("pipe");
    let _sock = std::os::unix::net::UnixListener::bind(tree.path("sock")).expect("bind");
    tree.file("k.co", &co(GFX900, 0, 1));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert!(run.elapsed < Duration::from_secs(10), "took {:?}", run.elapsed);
    assert_eq!(problems(&snap), Vec::<(String, String)>::new());
    assert_eq!(snap["summary"]["files"], 1);
    assert_eq!(snap["summary"]["special_files"], 2);
    assert_eq!(snap["summary"]["code_objects"], 1);
    tree.file("lib/libk.so", &crate::fixtures::host_lib(&[("gfx900", &co(GFX900, 0, 1))]));
    let check = crate::util::gfxscan([
        OsStr::new("check"),
        OsStr::new("-q"),
        tree.root().as_os_str(),
        OsStr::new("--gpu"),
        OsStr::new("gfx900"),
    ]);
    check.expect_code(0);
}

/// A FIFO named as the root itself.
#[test]
fn fifo_as_root_does_not_block() {
    let tree = Tree::new();
    tree.fifo("pipe");
    let run = crate::util::gfxscan([OsStr::new("scan"), tree.path("pipe").as_os_str(), OsStr::new("--json")]);
    run.expect_code(1);
    assert!(run.elapsed < Duration::from_secs(10), "took {:?}", run.elapsed);
    let snap = run.json();
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].1.contains("not a regular file (fifo)"), "{p:?}");
}

/// A dangling symlink is counted, not a problem.
#[test]
fn dangling_symlink_is_counted() {
    let tree = Tree::new();
    tree.file("k.co", &co(GFX900, 0, 1));
    tree.symlink("does-not-exist.so", "dangling.so");
    tree.symlink("k.co", "alias.co");
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(snap["summary"]["symlinks"], 2);
    assert_eq!(snap["summary"]["files"], 1);
    assert_eq!(snap["summary"]["code_objects"], 1, "links are not followed by default");
    assert_eq!(snap["problems"], json!([]));
}

/// With --follow-links a loop is reported as a problem at the link, and the walk ends.
#[test]
fn symlink_loop_with_follow_links() {
    let tree = Tree::new();
    tree.file("a/k.co", &co(GFX900, 0, 1));
    tree.symlink("..", "a/up");
    let (run, snap) = tree.scan_json(&["--follow-links"]);
    run.expect_code(1);
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "a/up");
    assert!(p[0].1.contains("loop"), "{p:?}");
    assert_eq!(snap["summary"]["code_objects"], 1);
    assert_eq!(file_paths(&snap), ["a/k.co"]);

    // Without --follow-links the same tree is clean.
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    assert_eq!(snap["summary"]["symlinks"], 1);
}

/// A file name that is not UTF-8 keeps its exact bytes in `path_hex`.
#[test]
fn non_utf8_file_name() {
    let tree = Tree::new();
    let name: &[u8] = b"co-\xff\xfe.bin";
    tree.file(OsStr::from_bytes(name), &co(GFX1100, 0, 1));
    tree.file("plain.co", &co(GFX900, 0, 1));
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(0);
    let files = snap["files"].as_array().expect("files");
    assert_eq!(files.len(), 2);
    // Sorted by raw bytes: "co-\xff..." < "plain.co".
    let odd = &files[0];
    assert_eq!(odd["path_hex"], "636f2dfffe2e62696e");
    assert_eq!(odd["path"], "co-\u{fffd}\u{fffd}.bin");
    assert_eq!(odd["code_objects"][0]["processor"], "gfx1100");
    assert_eq!(files[1]["path"], "plain.co");
    assert!(files[1].get("path_hex").is_none(), "UTF-8 paths carry no path_hex: {}", files[1]);

    let cfg = ScanConfig::of(vec![tree.root().to_path_buf()]).with_threads(1);
    let lib = scan(&cfg, &Targets::builtin(), &Silent).expect("scan runs");
    assert_eq!(lib.files[0].path.bytes(), name);
}

/// Every prefix of every container is read without panic and, once its magic is whole,
/// reported as a problem (each of these formats ends in data its headers promise).
#[test]
fn every_truncation_is_a_problem() {
    let c = co(GFX90A, 0, 2);
    let b = hip_bundle(&[("gfx90a", &c), ("gfx1100", &co(GFX1100, 0, 1))]);
    let fixtures: [(&str, Vec<u8>, usize); 5] = [
        ("bundle", b.clone(), 24),
        ("ccob1", ccob(1, Codec::Zlib, &b), 4),
        ("ccob2", ccob(2, Codec::Zstd, &b), 4),
        ("ccob3", ccob(3, Codec::Zlib, &b), 4),
        ("host", host_elf(&[HostSection::hip_fatbin(&fatbin(std::slice::from_ref(&b)))]), 4),
    ];
    let tree = Tree::new();
    let mut expected = Vec::new();
    for (name, bytes, magic) in &fixtures {
        let step = (bytes.len() / 97).max(1);
        for n in (*magic..bytes.len()).step_by(step).chain([bytes.len() - 1]) {
            let rel = format!("{name}/{n:06}");
            tree.file(&rel, &bytes[..n]);
            expected.push(rel);
        }
    }
    expected.sort();
    expected.dedup();
    let cfg = ScanConfig::of(vec![tree.root().to_path_buf()]).with_threads(4);
    let snap = scan(&cfg, &Targets::builtin(), &Silent).expect("scan runs");
    assert_eq!(snap.summary.files, expected.len() as u64);
    let mut with_problem: Vec<String> = snap.problems.iter().map(|p| p.path.path.clone()).collect();
    with_problem.dedup();
    let missing: Vec<&String> = expected.iter().filter(|e| !with_problem.contains(e)).collect();
    assert!(missing.is_empty(), "truncated files without a problem: {missing:?}");
}

/// Every prefix of a code object at least a header long: never a panic; a prefix that cuts
/// the object's own tables is a problem.
#[test]
fn every_truncated_code_object_is_a_problem() {
    let c = co(GFX90A, 0, 2);
    let tree = Tree::new();
    let mut expected = Vec::new();
    for n in (64..c.len()).step_by(13).chain([c.len() - 1]) {
        let rel = format!("{n:06}");
        tree.file(&rel, &c[..n]);
        expected.push(rel);
    }
    let cfg = ScanConfig::of(vec![tree.root().to_path_buf()]).with_threads(4);
    let snap = scan(&cfg, &Targets::builtin(), &Silent).expect("scan runs");
    assert_eq!(snap.summary.files, expected.len() as u64);
    let with_problem: Vec<&str> = snap.problems.iter().map(|p| p.path.path.as_str()).collect();
    let missing: Vec<&String> = expected.iter().filter(|e| !with_problem.contains(&e.as_str())).collect();
    assert!(
        missing.is_empty(),
        "{} of {} truncated code objects without a problem: {missing:?}",
        missing.len(),
        expected.len()
    );
}

/// Fixed-seed byte flips in every container: the scan finishes and covers every file.
#[test]
fn byte_flips_never_panic() {
    let b = hip_bundle(&[("gfx90a", &co(GFX90A, 0, 2)), ("gfx1100", &co(GFX1100, 0, 1))]);
    let fixtures = [
        co(GFX942, 0, 3),
        b.clone(),
        ccob(1, Codec::Zlib, &b),
        ccob(2, Codec::Zstd, &b),
        ccob(3, Codec::Zstd, &b),
        host_elf(&[HostSection::hip_fatbin(&fatbin(&[b.clone(), ccob(3, Codec::Zlib, &b)]))]),
    ];
    let tree = Tree::new();
    let mut n = 0u64;
    for (i, f) in fixtures.iter().enumerate() {
        let noise = garbage(400, i as u64 + 100);
        for k in 0..100 {
            let mut bytes = f.clone();
            // Flip bytes mostly in the headers, where lengths and offsets live.
            for j in 0..4 {
                let r = usize::from(noise[4 * k + j]);
                let at = if j % 2 == 0 { r % bytes.len().min(128) } else { (r * 131 + k * 17) % bytes.len() };
                bytes[at] ^= noise[(4 * k + j + 1) % noise.len()] | 1;
            }
            tree.file(format!("{i}/{k:03}"), &bytes);
            n += 1;
        }
    }
    let cfg = ScanConfig::of(vec![tree.root().to_path_buf()]).with_threads(4);
    let snap = scan(&cfg, &Targets::builtin(), &Silent).expect("scan runs");
    assert_eq!(snap.summary.files, n);
}

/// Names that would drive a terminal: every text output of every command shows them escaped.
/// A library named `lib\e[2J\e[31mRED.so` (erase the screen, recolour), a Tensile index whose
/// name sets the terminal's title, a folder with a C1 control (`\u{9b}`, a one-byte CSI) and a
/// bell, through scan (table, Markdown, CSV, Prometheus, URIs), check, diff, explain and merge
/// (their text forms), standard error included: no byte below 0x20 but the newline, none from
/// 0x7f to 0x9f. CSV cells that begin like formulas are plain text.
#[test]
fn hostile_names_reach_no_terminal_raw() {
    let tree = Tree::new();
    let lib = crate::fixtures::host_lib(&[("gfx1100", &co(GFX1100, 0, 1))]);
    tree.file("opt/rocm/lib/lib\x1b[2J\x1b[31mRED.so", &lib);
    tree.file("opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100\x1b]0;pwned\x07.dat", b"not msgpack");
    tree.file("opt/rocm/lib/=HYPERLINK(\"x\")\u{9b}2J/libk.so", &lib);
    let root = tree.root_str();
    let snap = tree.path("snap.json");
    crate::util::gfxscan(["scan", "-q", "--json", "-o", &snap.to_string_lossy(), &root]);
    let snap = snap.to_string_lossy().into_owned();
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for f in ["table", "markdown", "csv", "prometheus", "uris"] {
        runs.push(vec!["scan", "--format", f, &root]);
        runs.push(vec!["scan", "--format", f, "--by", "library", &root]);
    }
    for f in ["table", "markdown", "prometheus"] {
        runs.push(vec!["check", "--gpu", "gfx1100", "--format", f, &root]);
    }
    for f in ["table", "markdown"] {
        runs.push(vec!["diff", "--format", f, &snap, &root]);
        runs.push(vec!["explain", "gfx1100", "--format", f, &root]);
    }
    for f in ["table", "markdown", "csv"] {
        runs.push(vec!["merge", "--format", f, &snap]);
    }
    for args in runs {
        let r = crate::util::gfxscan(&args);
        for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            let raw = text.chars().find(|&c| (c < ' ' && c != '\n') || ('\u{7f}'..='\u{9f}').contains(&c));
            assert_eq!(raw, None, "{args:?} {stream} carries a control character raw:\n{text}");
        }
        // Still the exposition format: a name's controls are text in its label values.
        if let Some(tool) = args.contains(&"prometheus").then(crate::outputs::promtool).flatten() {
            crate::outputs::promtool_accepts(&tool, &r.stdout);
        }
        if args.contains(&"csv") {
            assert!(
                !r.stdout.lines().any(|l| l.starts_with('=') || l.contains(",=")),
                "{args:?}:\n{}",
                r.stdout
            );
        }
    }
}

/// A kernel module's `.modinfo` is read through its section table; every cut of a module and
/// garbage in it is an error or fewer names, never a panic.
#[test]
fn kernel_module_modinfo_cut_anywhere() {
    use gfxscan::parse::modinfo::parse_modinfo;
    let info = b"license=GPL\0firmware=amdgpu/gc_11_5_1_pfp.bin\0alias=pci:v00001002d0000744Csv*sd*bc*sc*i*\0vermagic=6.12.117 SMP\0";
    let module = host_elf(&[HostSection::rodata(".modinfo", info)]);
    let m = parse_modinfo(&module.as_slice()).expect("a whole module");
    assert_eq!(m.firmware, ["amdgpu/gc_11_5_1_pfp.bin"]);
    assert_eq!(m.release(), Some("6.12.117"));
    for cut in (0..module.len()).step_by(7) {
        let _ = parse_modinfo(&&module[..cut]);
    }
    for seed in 0..64 {
        let mut bad = module.clone();
        let g = garbage(16, seed);
        let at = (seed as usize * 37) % (bad.len() - 16);
        bad[at..at + 16].copy_from_slice(&g);
        let _ = parse_modinfo(&bad.as_slice());
    }
}
