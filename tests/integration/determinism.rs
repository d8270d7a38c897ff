//! Determinism: the thread count and the run never change a byte of the output.

use gfxscan::scan::{scan, ScanConfig, Silent};
use gfxscan::testing::{ccob, firmware_blob, Codec};
use gfxscan::vocab::targets::Targets;

use crate::fixtures::{co, hip_bundle, mixed, Mixed, GFX1030, GFX1100, GFX900, GFX90A};

/// The mixed tree plus 60 more files with device code and problems spread over folders, so
/// that parallel reads finish out of order.
pub fn busy_tree() -> Mixed {
    let m = mixed();
    let objs = [co(GFX900, 0, 1), co(GFX90A, 0, 2), co(GFX1030, 0, 3), co(GFX1100, 0, 4)];
    for i in 0..60usize {
        let o = &objs[i % objs.len()];
        let rel = format!("d{}/sub{}/f{i:02}", i % 7, i % 3);
        match i % 5 {
            0 => m.tree.file(format!("{rel}.co"), o),
            1 => m.tree.file(format!("{rel}.hsaco"), &hip_bundle(&[("gfx90a", o), ("gfx1030", &objs[2])])),
            2 => m.tree.file(format!("{rel}.ccob"), &ccob(3, Codec::Zstd, &hip_bundle(&[("gfx1100", o)]))),
            3 => m.tree.file(format!("{rel}.bad"), &o[..200]),
            _ => m.tree.file(format!("{rel}.broken"), b"CCOB\x02\x00\x01\x00\xff\xff\xff\xff"),
        };
    }
    m.tree.symlink("foo.txt", "link-to-foo");
    m
}

#[test]
fn thread_count_does_not_change_json() {
    let m = busy_tree();
    let one = m.tree.scan(&["--json", "-j", "1"]);
    let eight = m.tree.scan(&["--json", "-j", "8"]);
    assert_eq!(one.code, 1, "the tree has broken files:\n{}", one.stderr);
    assert_eq!(eight.code, one.code);
    assert!(one.stdout == eight.stdout, "-j 1 and -j 8 differ");
    let snap = one.json();
    assert!(snap["summary"]["code_objects"].as_u64().expect("count") > 60);
    assert!(snap["problems"].as_array().map_or(0, Vec::len) >= 12);
}

/// `explain`'s document and table too: the same whatever the thread count (issue 27).
#[test]
fn explain_is_the_same_whatever_the_threads() {
    let m = busy_tree();
    for format in ["json", "table", "html"] {
        let run = |j: &str| {
            crate::util::gfxscan([
                "explain",
                "-q",
                "gfx1100",
                "--format",
                format,
                "-j",
                j,
                &m.tree.root_str(),
            ])
        };
        let (one, eight) = (run("1"), run("8"));
        assert_eq!(one.code, eight.code, "{}", one.stderr);
        assert!(one.stdout == eight.stdout, "explain --format {format}: -j 1 and -j 8 differ");
        assert!(!one.stdout.is_empty());
    }
}

#[test]
fn two_runs_are_identical() {
    let m = busy_tree();
    for format in ["json", "table", "csv", "markdown"] {
        let a = m.tree.scan(&["--format", format]);
        let b = m.tree.scan(&["--format", format]);
        assert_eq!(a.code, 1);
        assert!(a.stdout == b.stdout, "two --format {format} runs differ");
        assert!(!a.stdout.is_empty());
    }
}

#[test]
fn library_snapshots_are_equal_across_thread_counts() {
    let m = busy_tree();
    let run = |threads| {
        let cfg = ScanConfig::of(vec![m.tree.root().to_path_buf()]).with_threads(threads);
        scan(&cfg, &Targets::builtin(), &Silent).expect("scan runs")
    };
    let one = run(1);
    assert_eq!(one, run(8));
    assert_eq!(one, run(3));
    // Files and problems are sorted by (root, raw path bytes).
    let keys: Vec<_> = one.files.iter().map(|f| f.path.sort_key()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let pkeys: Vec<_> = one.problems.iter().map(|p| p.path.sort_key()).collect();
    let mut psorted = pkeys.clone();
    psorted.sort();
    assert_eq!(pkeys, psorted);
}

/// Each file is read once however many hard links name it, and every name is reported as a
/// copy of the file would be: its own path, and the family and mismatches its own name gives.
#[test]
fn hard_links_report_like_copies() {
    let tensile = "rocblas/library/TensileLibrary_gfx1030.co";
    let extra = [
        // Same name facts as the first name: the first name's result is taken.
        ("d0/sub0/f00.co", "again/f00.co"),
        (tensile, "other/rocblas/library/TensileLibrary_gfx1030.co"),
        // A name that claims another target (a "fix" by link): read under its own name.
        (tensile, "rocblas/library/TensileLibrary_gfx1031.co"),
        // A broken file: its problem is reported under each name.
        ("d3/sub0/f03.bad", "again/f03.bad"),
    ];
    let build = |link: bool| {
        let m = busy_tree();
        m.tree.file(tensile, &co(GFX1030, 0, 5));
        for (from, to) in extra {
            let dest = m.tree.path(to);
            std::fs::create_dir_all(dest.parent().expect("has a folder")).expect("mkdir");
            if link {
                std::fs::hard_link(m.tree.path(from), &dest).expect("hard link");
            } else {
                std::fs::copy(m.tree.path(from), &dest).expect("copy");
            }
        }
        m
    };
    let (copies, links) = (build(false), build(true));
    let snapshot = |m: &Mixed, threads: &str| {
        let mut snap = m.tree.scan(&["--json", "-j", threads]).expect_code(1).json();
        snap["roots"] = serde_json::Value::Null;
        snap
    };
    // A name that took its first name's result says which name that is; otherwise hard links
    // read like copies.
    let linked = |snap: &mut serde_json::Value| -> Vec<(String, String)> {
        let mut out = Vec::new();
        for f in snap["files"].as_array_mut().into_iter().flatten() {
            if let Some(to) = f.as_object_mut().and_then(|o| o.remove("hard_link_of")) {
                out.push((
                    f["path"].as_str().unwrap_or("").to_string(),
                    to["path"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
        out
    };
    let with_copies = snapshot(&copies, "2");
    for threads in ["1", "2", "8"] {
        let mut snap = snapshot(&links, threads);
        let pairs = linked(&mut snap);
        assert_eq!(
            pairs,
            [
                ("d0/sub0/f00.co".to_string(), "again/f00.co".to_string()),
                ("d3/sub0/f03.bad".to_string(), "again/f03.bad".to_string()),
                (tensile.to_string(), "other/rocblas/library/TensileLibrary_gfx1030.co".to_string()),
            ],
            "the first name in path order leads, at -j {threads}"
        );
        assert_eq!(snap, with_copies, "hard links differ from copies at -j {threads}");
    }
    let paths = crate::util::file_paths(&with_copies);
    for (_, to) in extra {
        assert!(paths.iter().any(|p| p == to), "{to} is reported");
    }
    let mismatches = with_copies["mismatches"].to_string();
    assert!(mismatches.contains("TensileLibrary_gfx1031.co"), "the lying name is caught: {mismatches}");
    let problems = crate::util::problems(&with_copies);
    assert!(problems.iter().any(|(p, _)| p == "again/f03.bad"), "{problems:?}");
}

/// Review finding: a hard link took its first name's result whenever both names had the same
/// family by name alone, but the file name and the folders decide more than that. Each pair is
/// one file under two names; as hard links it must scan exactly as the same two names as copies.
#[test]
fn hard_links_whose_names_or_folders_decide_are_read_again() {
    let pairs: [(&str, &str, Vec<u8>); 4] = [
        // The name says compressed firmware; the bytes are raw.
        (
            "lib/firmware/amdgpu/navi10_sos.bin",
            "lib/firmware/amdgpu/navi10_sos.bin.zst",
            firmware_blob(0x21, (11, 0), 256),
        ),
        // A text perf DB under a name that must be SQLite.
        ("share/miopen/db/gfx90a_104.udb.txt", "share/miopen/db/gfx90a_104.udb", b"k1=v1\nk2=v2\n".to_vec()),
        // The file name decides the format a Tensile file is taken for.
        (
            "lib/rocblas/library/TensileLibrary_gfx90a.co",
            "lib/rocblas/library/TensileLibrary_gfx90a.txt",
            b"text\n".to_vec(),
        ),
        // Same file name, but only one is in a `library` folder.
        ("lib/rocblas/library/gfx90a_104.fdb.txt", "other/gfx90a_104.fdb.txt", crate::util::garbage(300, 7)),
    ];
    let build = |link: bool| {
        let tree = crate::util::Tree::new();
        for (from, to, bytes) in &pairs {
            tree.file(from, bytes);
            let dest = tree.path(to);
            std::fs::create_dir_all(dest.parent().expect("has a folder")).expect("mkdir");
            if link {
                std::fs::hard_link(tree.path(from), &dest).expect("hard link");
            } else {
                std::fs::copy(tree.path(from), &dest).expect("copy");
            }
        }
        tree
    };
    let (copies, links) = (build(false), build(true));
    let snapshot = |t: &crate::util::Tree, threads: &str| {
        let mut snap = t.scan(&["--json", "-j", threads]).json();
        snap["roots"] = serde_json::Value::Null;
        snap
    };
    let with_copies = snapshot(&copies, "1");
    for threads in ["1", "2"] {
        assert_eq!(snapshot(&links, threads), with_copies, "hard links differ from copies at -j {threads}");
    }
}

/// One library whose `.hip_fatbin` holds compressed bundles of every size: they are inflated
/// in parallel, the largest first, as the memory budget lets them; the result is the same at
/// any thread count and any `--max-memory`, in region order.
#[test]
fn one_library_of_compressed_bundles_reads_the_same_whatever_the_threads_and_memory() {
    use gfxscan::testing::{host_elf, HostSection};
    let tree = crate::util::Tree::new();
    let objs = [co(GFX900, 0, 1), co(GFX90A, 0, 2), co(GFX1030, 0, 3), co(GFX1100, 0, 4)];
    let mut fatbin = Vec::new();
    for i in 0..40usize {
        // Bundles of growing size, so their windows differ.
        let big: Vec<u8> =
            objs[i % 4].iter().copied().cycle().take(objs[i % 4].len() * (1 + i % 9)).collect();
        let inner = hip_bundle(&[("gfx90a", &objs[1]), ("gfx1100", &objs[i % 4])]);
        let mut bundle = ccob(if i % 2 == 0 { 3 } else { 2 }, Codec::Zstd, &inner);
        if i % 5 == 0 {
            bundle = hip_bundle(&[("gfx1030", &big)]);
        }
        fatbin.extend_from_slice(&bundle);
        fatbin.resize(fatbin.len().div_ceil(4096) * 4096, 0);
    }
    tree.file("lib/libbig.so", &host_elf(&[HostSection::hip_fatbin(&fatbin)]));
    let runs: Vec<String> = [
        ["-j", "1", "--max-memory", "200M"],
        ["-j", "8", "--max-memory", "100M"],
        ["-j", "8", "--max-memory", "4G"],
    ]
    .iter()
    .map(|a| {
        let r = tree.scan(&["--json", a[0], a[1], a[2], a[3]]);
        r.expect_code(0);
        r.stdout
    })
    .collect();
    assert!(runs.iter().all(|r| *r == runs[0]), "thread count or memory changed the result");
    let snap: serde_json::Value = serde_json::from_str(&runs[0]).expect("json");
    let f = crate::util::file_record(&snap, "lib/libbig.so");
    assert_eq!(f["bundles"], 40);
    let offsets: Vec<u64> = f["code_objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter_map(|c| c["location"]["bundle_offset"].as_u64())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "code objects in region order: {offsets:?}");
}
