//! Real-corpus acceptance: gfxscan against ground truth made with LLVM's own tools.
//!
//! `../shared/corpus/files` is checked against `truth/TRUTH_codeobjects.tsv` whenever it
//! exists; the large Debian tree of `fetch-debian.sh` against `truth/deb_codeobjects.tsv` when
//! `GFXSCAN_DEBIAN_CORPUS` names it. For every file, the code objects gfxscan finds must be
//! exactly the truth's: same processor, raw `e_flags`, code object version and size, same count
//! of each (the truth's `target_id` column mixes bundle-ID and ELF spellings, so the raw flags
//! are compared instead). The V2 trap handlers' processor is unknown to LLVM 19 (it lives in a
//! note LLVM calls invalid), so V2 rows match on flags, version and size, and gfxscan's
//! processor must be a known one. The Debian `*-root` trees are hard-linked merges of the
//! per-package trees, which the truth does not list again; they are left out of the comparison.
//! Files the truth lists without device code (NVIDIA, Intel SYCL) must yield none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gfxscan::model::Snapshot;
use gfxscan::scan::{scan, ScanConfig, Silent};
use gfxscan::targets::Targets;

type Key = (String, u32, u8, u64);

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
}

/// Per-file multiset of (target ID or "*" for V2, version, size) from a truth table.
fn truth(table: &Path) -> BTreeMap<String, BTreeMap<Key, u32>> {
    let text = std::fs::read_to_string(table).expect("truth table readable");
    let mut out: BTreeMap<String, BTreeMap<Key, u32>> = BTreeMap::new();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect("column present");
    let (file, mach, flags) = (col("file"), col("elf_mach"), col("elf_flags"));
    let (version, size) = (col("code_object_version"), col("size"));
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        let v: u8 = f[version].trim_start_matches('v').parse().expect("version");
        let t = f[mach].split('(').next().unwrap_or("").to_string();
        let t = if v == 2 { "*".to_string() } else { t };
        let e_flags = u32::from_str_radix(f[flags].trim_start_matches("0x"), 16).expect("flags");
        let key = (t, e_flags, v, f[size].parse().expect("size"));
        *out.entry(f[file].to_string()).or_default().entry(key).or_default() += 1;
    }
    out
}

fn ours(snap: &Snapshot) -> BTreeMap<String, BTreeMap<Key, u32>> {
    let targets = Targets::builtin();
    let mut out: BTreeMap<String, BTreeMap<Key, u32>> = BTreeMap::new();
    for f in snap.files.iter().filter(|f| !f.path.path.contains("-root/")) {
        for c in &f.code_objects {
            let v = c.code_object_version.expect("HSA code object");
            let t = if v == 2 {
                assert!(
                    targets.by_name(&c.processor).is_some(),
                    "{}: V2 processor {} unknown",
                    f.path.path,
                    c.processor
                );
                "*".to_string()
            } else {
                c.processor.clone()
            };
            let key = (t, c.e_flags, v, c.size);
            *out.entry(f.path.path.clone()).or_default().entry(key).or_default() += 1;
        }
    }
    out
}

fn compare(root: &Path, table: &Path) -> usize {
    let config = ScanConfig { roots: vec![root.to_path_buf()], threads: None, follow_links: false };
    let snap = scan(&config, &Targets::builtin(), &Silent).expect("scan runs");
    assert!(snap.problems.is_empty(), "problems on real files: {:#?}", snap.problems);
    let (want, got) = (truth(table), ours(&snap));
    let mut diffs = Vec::new();
    for file in want.keys().chain(got.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (w, g) = (want.get(file), got.get(file));
        if w != g {
            diffs.push(format!("{file}:\n  truth {w:?}\n  ours  {g:?}"));
        }
    }
    assert!(diffs.is_empty(), "{} files differ from {}:\n{}", diffs.len(), table.display(), diffs.join("\n"));
    want.values().flat_map(|m| m.values()).map(|&n| n as usize).sum()
}

#[test]
fn corpus_files_match_truth_codeobjects() {
    let root = shared().join("files");
    if !root.is_dir() {
        eprintln!("skipped: {} not present", root.display());
        return;
    }
    let n = compare(&root, &shared().join("truth/TRUTH_codeobjects.tsv"));
    assert_eq!(n, 419, "the truth table has 419 code objects");
}

#[test]
fn debian_tree_matches_truth_codeobjects() {
    let Some(dir) = std::env::var_os("GFXSCAN_DEBIAN_CORPUS") else {
        eprintln!("skipped: set GFXSCAN_DEBIAN_CORPUS to the DIR of fetch-debian.sh");
        return;
    };
    let n = compare(Path::new(&dir), &shared().join("truth/deb_codeobjects.tsv"));
    assert!(n > 4000, "{n} code objects");
}

#[test]
fn negatives_hold_no_device_code() {
    let root = shared().join("files/whl/bitsandbytes-0.50.2/bitsandbytes");
    if !root.is_dir() {
        eprintln!("skipped: corpus not present");
        return;
    }
    let config = ScanConfig { roots: vec![root], threads: Some(1), follow_links: false };
    let snap = scan(&config, &Targets::builtin(), &Silent).expect("scan runs");
    for neg in ["libbitsandbytes_cuda130.so", "libbitsandbytes_xpu2025.so"] {
        assert!(!snap.files.iter().any(|f| f.path.path == neg), "{neg} reported as device code");
    }
    assert_eq!(snap.files.len(), 2, "only the two ROCm libraries hold device code");
}

/// `*_files.tsv` gives `kernels=N` for standalone code objects, counted as dynamic symbols: a
/// kernel has two, its function and its `.kd` descriptor (checked by hand on
/// `Kernels.so-000-gfx1010.hsaco`: 1,542 metadata entries, 1,542 `.kd` objects, 1,542
/// functions, `kernels=3084`). gfxscan counts kernels, so each must be exactly half.
fn check_kernels(root: &Path, table: &Path) -> usize {
    let text = std::fs::read_to_string(table).expect("truth table readable");
    let want: BTreeMap<String, u64> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let k = f.iter().find_map(|c| c.strip_prefix("kernels="))?;
            Some((f[0].to_string(), k.parse().ok()?))
        })
        .collect();
    let config = ScanConfig { roots: vec![root.to_path_buf()], threads: None, follow_links: false };
    let snap = scan(&config, &Targets::builtin(), &Silent).expect("scan runs");
    let mut checked = 0;
    for f in &snap.files {
        if let Some(&symbols) = want.get(&f.path.path) {
            let kernels: u64 = f.code_objects.iter().map(|c| c.kernels.expect("kernel count known")).sum();
            assert_eq!(kernels * 2, symbols, "{}: {kernels} kernels vs {symbols} symbols", f.path.path);
            checked += 1;
        }
    }
    assert_eq!(checked, want.len(), "every file with a kernel count was found");
    checked
}

#[test]
fn kernel_counts_match_truth() {
    let root = shared().join("files");
    if !root.is_dir() {
        eprintln!("skipped: corpus not present");
        return;
    }
    assert_eq!(check_kernels(&root, &shared().join("truth/TRUTH_files.tsv")), 60);
    if let Some(dir) = std::env::var_os("GFXSCAN_DEBIAN_CORPUS") {
        assert_eq!(check_kernels(Path::new(&dir), &shared().join("truth/deb_files.tsv")), 20);
    }
}
