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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use gfxscan::model::Snapshot;
use gfxscan::scan::{scan, ScanConfig, Silent};
use gfxscan::vocab::targets::Targets;

#[path = "documents.rs"]
mod documents;
#[path = "explain_agrees.rs"]
mod explain_agrees;
#[path = "pipeline.rs"]
#[allow(dead_code)]
mod pipeline;

type Key = (String, u32, u8, u64);

/// `gfxscan ARGS ROOT` through the binary: its exit code and the JSON it printed.
fn gfxscan_json(args: &[&str], root: &Path) -> (Option<i32>, serde_json::Value) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"))
        .args(args)
        .arg(root)
        .output()
        .expect("gfxscan runs");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("gfxscan {args:?}: not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code(), doc)
}

/// How the corpus tests scan a tree: every default, links not followed.
fn whole_tree(root: &Path) -> ScanConfig {
    ScanConfig::of(vec![root.to_path_buf()])
}

/// Marks the running test skipped, with why: the harness (`harness`) reports it as
/// "skipped: corpus absent: WHY" and counts it apart from those that passed.
fn skipped(why: &str) {
    SKIPPED.with(|s| *s.borrow_mut() = Some(why.to_string()));
}

thread_local! {
    /// Why the test running on this thread skipped, when it did.
    static SKIPPED: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
}

/// The corpus folder `GFXSCAN_DEBIAN_CORPUS` names; the test says it skipped when it is unset.
fn corpus_dir() -> Option<std::ffi::OsString> {
    let dir = std::env::var_os("GFXSCAN_DEBIAN_CORPUS").filter(|d| !d.is_empty());
    if dir.is_none() {
        skipped("set GFXSCAN_DEBIAN_CORPUS to the DIR of fetch-debian.sh");
    }
    dir
}

/// The Debian tree named by `GFXSCAN_DEBIAN_CORPUS`, when its truth tables are here too.
fn debian_tree() -> Option<std::ffi::OsString> {
    let dir = corpus_dir();
    if dir.is_some() && !shared().join("truth").is_dir() {
        skipped(&format!("{} (the truth tables) not present", shared().join("truth").display()));
        return None;
    }
    dir
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

/// Compares the code objects found under `root` with a truth table whose paths are `prefix`
/// followed by paths relative to `root`.
fn compare(root: &Path, prefix: &str, table: &Path) -> usize {
    let config = whole_tree(root);
    let snap = scan(&config, &Targets::builtin(), &Silent).expect("scan runs");
    assert!(snap.problems.is_empty(), "problems on real files: {:#?}", snap.problems);
    let got = ours(&snap).into_iter().map(|(k, v)| (format!("{prefix}{k}"), v)).collect::<BTreeMap<_, _>>();
    // Only the truth rows under this root: a table may describe several roots.
    let want: BTreeMap<String, BTreeMap<Key, u32>> =
        truth(table).into_iter().filter(|(file, _)| file.starts_with(prefix)).collect();
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

fn corpus_files_match_truth_codeobjects() {
    let root = shared().join("files");
    if !root.is_dir() {
        skipped(&format!("{} not present", root.display()));
        return;
    }
    let n = compare(&root, "", &shared().join("truth/TRUTH_codeobjects.tsv"));
    assert_eq!(n, 419, "the truth table has 419 code objects");
}

fn debian_tree_matches_truth_codeobjects() {
    let Some(dir) = debian_tree() else { return };
    // Only the unpacked suites of fetch-debian.sh: DIR may also hold the packages themselves
    // (read as archives) and fetch-debian-rocm64.sh's `deb/sid` (checked against its own truth).
    let table = shared().join("truth/deb_codeobjects.tsv");
    let n: usize = ["bookworm", "trixie"]
        .iter()
        .map(|suite| compare(&Path::new(&dir).join("deb").join(suite), &format!("deb/{suite}/"), &table))
        .sum();
    assert!(n > 4000, "{n} code objects");
}

/// Debian unstable's ROCm 6.4 tree of `fetch-debian-rocm64.sh` (`DIR/deb/sid-root`), when it
/// and its truth tables are here.
fn rocm64_tree() -> Option<PathBuf> {
    let dir = debian_tree()?;
    let root = Path::new(&dir).join("deb/sid-root");
    if !root.is_dir() || !shared().join("truth/r64_codeobjects.tsv").is_file() {
        skipped(&format!("{} not present (run fetch-debian-rocm64.sh)", root.display()));
        return None;
    }
    Some(root)
}

/// Issue 12 point 11: every file of the ROCm 6.4 tree reads without a problem (hipBLASLt's
/// solution map and ExtOp index included), and its code objects equal the truth, file for file.
fn rocm64_tree_matches_truth_codeobjects() {
    let Some(root) = rocm64_tree() else { return };
    let n = compare(&root, "", &shared().join("truth/r64_codeobjects.tsv"));
    assert_eq!(n, 5955, "the truth table has 5,955 code objects");
}

/// Per library and target, Tensile files by the target their name claims and by what their
/// content serves (code objects' processors, index hardware rows), as `r64_tensile.tsv` counts
/// them.
fn rocm64_tensile_counts_match_truth() {
    let Some(root) = rocm64_tree() else { return };
    let snap = scan_dir(&root);
    let mut got: BTreeMap<(String, String), [u64; 5]> = BTreeMap::new();
    for f in &snap.files {
        let Some(a) = f.artifact.as_ref().filter(|a| a.family == Some(gfxscan::model::Family::Tensile))
        else {
            continue;
        };
        let lib = a.component().map_or(String::new(), |c| c.name().to_string());
        let mut content: Vec<String> = f.code_objects.iter().map(|c| c.processor.clone()).collect();
        content.extend(a.content_targets.clone().unwrap_or_default());
        content.sort();
        content.dedup();
        // The table's "(none)" row holds the files that say no target by name or content
        // (rocBLAS sub-libraries, hipBLASLt's solution map), split by suffix only when named.
        match &a.name_target {
            Some(t) => {
                let c = got.entry((lib.clone(), t.clone())).or_default();
                c[0] += 1;
                if let Some(i) = [".co", ".hsaco", ".dat"].iter().position(|e| f.path.path.ends_with(e)) {
                    c[1 + i] += 1;
                }
            }
            None if content.is_empty() => got.entry((lib.clone(), "(none)".into())).or_default()[0] += 1,
            None => {}
        }
        for t in content {
            got.entry((lib.clone(), t)).or_default()[4] += 1;
        }
    }
    let rows = tsv(&shared().join("truth/r64_tensile.tsv"));
    let mut diffs = Vec::new();
    for row in &rows {
        let key = (row["library"].clone(), row["target"].clone());
        let want: [u64; 5] =
            ["files_by_name", "by_name_.co", "by_name_.hsaco", "by_name_.dat", "files_by_content"]
                .map(|k| row[k].parse().expect("number"));
        let have = got.get(&key).copied().unwrap_or_default();
        if have != want {
            diffs.push(format!("{key:?}: truth {want:?}, ours {have:?}"));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert_eq!(rows.len(), 22);
}

fn negatives_hold_no_device_code() {
    let root = shared().join("files/whl/bitsandbytes-0.50.2/bitsandbytes");
    if !root.is_dir() {
        skipped(&format!("{} not present", shared().display()));
        return;
    }
    let config = ScanConfig::of(vec![root]).with_threads(1);
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
fn check_kernels(root: &Path, prefix: &str, table: &Path) -> usize {
    let text = std::fs::read_to_string(table).expect("truth table readable");
    let want: BTreeMap<String, u64> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let k = f.iter().find_map(|c| c.strip_prefix("kernels="))?;
            Some((f[0].to_string(), k.parse().ok()?))
        })
        .collect();
    let config = whole_tree(root);
    let snap = scan(&config, &Targets::builtin(), &Silent).expect("scan runs");
    let mut checked = 0;
    for f in &snap.files {
        if let Some(&symbols) = want.get(&format!("{prefix}{}", f.path.path)) {
            let kernels: u64 = f.code_objects.iter().map(|c| c.kernels.expect("kernel count known")).sum();
            assert_eq!(kernels * 2, symbols, "{}: {kernels} kernels vs {symbols} symbols", f.path.path);
            checked += 1;
        }
    }
    assert_eq!(checked, want.len(), "every file with a kernel count was found");
    checked
}

fn kernel_counts_match_truth() {
    let root = shared().join("files");
    if !root.is_dir() {
        skipped(&format!("{} not present", shared().display()));
        return;
    }
    assert_eq!(check_kernels(&root, "", &shared().join("truth/TRUTH_files.tsv")), 60);
    if let Some(dir) = debian_tree() {
        assert_eq!(
            check_kernels(&Path::new(&dir).join("deb"), "deb/", &shared().join("truth/deb_files.tsv")),
            20
        );
    }
}

/// The snapshot of `root`, checked against the committed snapshot schema.
fn scan_dir(root: &Path) -> Snapshot {
    let config = whole_tree(root);
    let snap = scan(&config, &Targets::builtin(), &Silent).expect("scan runs");
    let doc = serde_json::to_value(&snap).expect("a snapshot is JSON");
    documents::expect_valid("snapshot", &doc, &format!("the snapshot of {}", root.display()));
    snap
}

fn tsv(table: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(table).expect("truth table readable");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<String> = lines.next().expect("header").split('\t').map(str::to_string).collect();
    lines.map(|l| header.iter().cloned().zip(l.split('\t').map(str::to_string)).collect()).collect()
}

/// Tensile files per arch-in-name of a library dir: (files, .co, .hsaco, .dat, other, bytes).
fn tensile_counts(snap: &Snapshot, dir: &str) -> BTreeMap<String, [u64; 6]> {
    let mut out: BTreeMap<String, [u64; 6]> = BTreeMap::new();
    for f in &snap.files {
        let (Some(a), Some(name)) = (&f.artifact, f.path.path.strip_prefix(&format!("{dir}/"))) else {
            continue;
        };
        if name.contains('/') || a.family != Some(gfxscan::model::Family::Tensile) {
            continue;
        }
        let arch = a.name_target.clone().unwrap_or_else(|| "(no-arch-in-name)".into());
        let c = out.entry(arch).or_default();
        let slot = [".co", ".hsaco", ".dat"].iter().position(|e| name.ends_with(e)).map_or(4, |i| i + 1);
        c[0] += 1;
        c[slot] += 1;
        c[5] += f.size;
    }
    out
}

fn check_tensile(root: &Path, table: &Path, strip: &str) -> usize {
    let snap = scan_dir(root);
    let rows = tsv(table);
    for row in &rows {
        let dir = row["library_dir"].trim_start_matches(strip);
        let got = tensile_counts(&snap, dir);
        let want: [u64; 6] =
            ["files", ".co", ".hsaco", ".dat", "other", "bytes"].map(|k| row[k].parse().expect("number"));
        assert_eq!(got.get(&row["arch"]), Some(&want), "{dir} {}", row["arch"]);
    }
    rows.len()
}

fn tensile_counts_match_truth() {
    if !shared().join("files").is_dir() {
        skipped(&format!("{} not present", shared().display()));
        return;
    }
    assert_eq!(
        check_tensile(&shared().join("files"), &shared().join("truth/TRUTH_tensile.tsv"), "subset/"),
        2
    );
    if let Some(dir) = debian_tree() {
        assert_eq!(
            check_tensile(
                &Path::new(&dir).join("deb"),
                &shared().join("truth/deb_tensile_arch_counts.tsv"),
                "deb/"
            ),
            11
        );
    }
}

fn miopen_records_match_truth() {
    let root = shared().join("files/github/miopen");
    if !root.is_dir() {
        skipped(&format!("{} not present", shared().display()));
        return;
    }
    let snap = scan_dir(&root);
    // The truth also describes gfx942130.db, which the corpus does not ship.
    let present = |r: &BTreeMap<String, String>| {
        walkdir::WalkDir::new(root.join(&r["ref"]))
            .into_iter()
            .flatten()
            .any(|e| e.file_name() == r["file"].as_str())
    };
    let rows: Vec<_> = tsv(&shared().join("truth/TRUTH_miopen.tsv")).into_iter().filter(present).collect();
    for row in &rows {
        let file = snap
            .files
            .iter()
            .find(|f| {
                f.path.path.starts_with(&row["ref"]) && f.path.path.ends_with(&format!("/{}", row["file"]))
            })
            .unwrap_or_else(|| panic!("{} {} not found", row["ref"], row["file"]));
        let a = file.artifact.as_ref().expect("a MIOpen artifact");
        assert_eq!(a.name_target.as_deref(), Some(row["arch"].as_str()), "{}", row["file"]);
        let cu = row["num_cu"].parse::<u32>().ok();
        assert_eq!(a.miopen.as_ref().and_then(|m| m.cu_count), cu, "{}", row["file"]);
        match row["kind"].as_str() {
            "perfdb-sqlite" | "finddb-text" => {
                assert_eq!(a.records(), Some(row["count"].parse().expect("count")), "{}", row["file"])
            }
            "git-lfs-pointer" => {
                assert_eq!(a.lfs_size, Some(row["count"].parse().expect("size")), "{}", row["file"])
            }
            "bzip2" => assert_eq!(a.format.name(), "bzip2"),
            "tuna-model" => assert_eq!(a.role, gfxscan::model::Role::TuningModel),
            other => panic!("truth kind {other} not covered"),
        }
    }
    assert_eq!(rows.len(), 8);
}

/// Firmware per (folder, prefix): regular files, symlinks, bytes of the regular files.
fn firmware_counts(snap: &Snapshot) -> BTreeMap<(String, String), [u64; 3]> {
    let mut out: BTreeMap<(String, String), [u64; 3]> = BTreeMap::new();
    let key = |a: &gfxscan::model::Artifact| {
        let fw = a.firmware.clone().unwrap_or_default();
        (fw.dir.unwrap_or_default(), fw.prefix.unwrap_or_default())
    };
    for f in &snap.files {
        if let Some(a) = f.artifact.as_ref().filter(|a| a.family == Some(gfxscan::model::Family::Firmware)) {
            let c = out.entry(key(a)).or_default();
            c[0] += 1;
            c[2] += f.size;
        }
    }
    for l in &snap.links {
        if let Some(a) = l.artifact.as_ref().filter(|a| a.family == Some(gfxscan::model::Family::Firmware)) {
            out.entry(key(a)).or_default()[1] += 1;
        }
    }
    out
}

/// gfxscan handles the amdgpu and radeon folders; the truth also counts amdnpu and r128.
fn check_firmware(root: &Path, table: &Path) -> usize {
    let got = firmware_counts(&scan_dir(root));
    let rows: Vec<_> =
        tsv(table).into_iter().filter(|r| matches!(r["dir"].as_str(), "amdgpu" | "radeon")).collect();
    for row in &rows {
        let want = ["regular_files", "symlinks", "bytes"].map(|k| row[k].parse::<u64>().expect("number"));
        assert_eq!(
            got.get(&(row["dir"].clone(), row["prefix"].clone())),
            Some(&want),
            "{}/{}",
            row["dir"],
            row["prefix"]
        );
    }
    assert_eq!(got.len(), rows.len(), "gfxscan found prefixes the truth lacks");
    rows.len()
}

fn firmware_prefix_counts_match_truth() {
    const PKG: &str = "deb/trixie/firmware-amd-graphics_20250410-2/usr/lib/firmware";
    let src = shared().join("files").join(PKG);
    if !src.is_dir() {
        skipped(&format!("{} not present", shared().display()));
        return;
    }
    // The shared copy stores symlinks as small files naming their target; MANIFEST.tsv says
    // which. Rebuild the tree with real links before scanning it.
    let links: BTreeMap<String, String> = tsv(&shared().join("MANIFEST.tsv"))
        .into_iter()
        .filter_map(|r| Some((r["path"].clone(), r["sha256"].strip_prefix("symlink->")?.to_string())))
        .collect();
    let tmp = tempfile::tempdir().expect("temp dir");
    let copy = tmp.path().join("lib/firmware");
    for entry in walkdir::WalkDir::new(&src).into_iter().map(|e| e.expect("walk")) {
        let rel = entry.path().strip_prefix(&src).expect("under src");
        let dst = copy.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dst).expect("mkdir");
        } else if let Some(target) = links.get(&format!("{PKG}/{}", rel.display())) {
            std::os::unix::fs::symlink(target, &dst).expect("symlink");
        } else {
            std::fs::copy(entry.path(), &dst).expect("copy");
        }
    }
    let restored = links.keys().filter(|k| k.starts_with(PKG)).count();
    assert_eq!(restored, 12, "links in the firmware package per MANIFEST");
    assert_eq!(check_firmware(&copy, &shared().join("truth/TRUTH_firmware_prefix_counts.tsv")), 6);
    if let Some(dir) = debian_tree() {
        let fw = Path::new(&dir).join(PKG);
        assert_eq!(check_firmware(&fw, &shared().join("truth/firmware_prefix_counts.tsv")), 165);
    }
}

/// The diff of two trees, checked against the committed diff schema.
fn diff_of(old: &Path, new: &Path) -> gfxscan::diff::SnapshotDiff {
    let model = |s| gfxscan::library::Model::build(s, &Targets::builtin(), Default::default());
    let d = gfxscan::diff::diff(
        &model(scan_dir(old)),
        &model(scan_dir(new)),
        (gfxscan::diff::SideSource::Scan, gfxscan::diff::SideSource::Scan),
        &Targets::builtin(),
    );
    let doc = serde_json::to_value(&d).expect("a diff is JSON");
    documents::expect_valid("diff", &doc, &format!("diff {} {}", old.display(), new.display()));
    d
}

fn lib<'a>(d: &'a gfxscan::diff::SnapshotDiff, name: &str) -> &'a gfxscan::diff::LibraryChange {
    d.libraries
        .iter()
        .find(|l| l.library == name)
        .unwrap_or_else(|| panic!("{name} not in {:?}", d.libraries))
}

fn versions(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn diff_pairs_from_the_corpus() {
    let deb = shared().join("files/deb");
    if !deb.is_dir() {
        skipped(&format!("{} not present", shared().display()));
        return;
    }
    // libspfft 1.0.6 -> 1.1.1: 0 -> 5 bundles, +10 targets, +50 code objects.
    let d = diff_of(&deb.join("bookworm/libspfft1_1.0.6-1"), &deb.join("trixie/libspfft1_1.1.1-3"));
    let l = lib(&d, "libspfft.so");
    assert_eq!((l.old_bundles, l.new_bundles), (0, 5));
    assert_eq!(l.new_code_objects, versions(&[("v4", 50)]));
    let gained = &d.gains.iter().find(|g| g.library == "libspfft.so").expect("gains").targets;
    assert_eq!(gained.len(), 10, "{gained:?}");
    assert!(d.losses.is_empty());

    // libhsa-runtime64 5.2.3 -> 6.1.2: 26 -> 36 V4 code objects, the 3 V2 trap handlers unchanged.
    let d = diff_of(
        &deb.join("bookworm/libhsa-runtime64-1_5.2.3-3"),
        &deb.join("trixie/libhsa-runtime64-1_6.1.2-3"),
    );
    let l = lib(&d, "libhsa-runtime64.so");
    assert_eq!(
        (l.old_code_objects.clone(), l.new_code_objects.clone()),
        (versions(&[("v2", 3), ("v4", 26)]), versions(&[("v2", 3), ("v4", 36)]))
    );
    // In the natural order: generation, then number.
    let gained: Vec<&str> = d.gains[0].targets.iter().map(String::as_str).collect();
    assert_eq!(
        gained,
        [
            "gfx940", "gfx941", "gfx942", "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150",
            "gfx1151"
        ]
    );
    assert!(d.losses.is_empty());

    // device-libs 5.2.3 -> 6.0: +8 ISAs, nothing lost.
    let d = diff_of(
        &deb.join("bookworm/rocm-device-libs_5.2.3-2"),
        &deb.join("trixie/rocm-device-libs-17_6.0+git20231212.5a852ed-2"),
    );
    let gained: Vec<&str> = d
        .gains
        .iter()
        .find(|g| g.library == "bitcode")
        .expect("bitcode")
        .targets
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(
        gained,
        ["gfx941", "gfx942", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151"]
    );
    assert!(d.losses.is_empty(), "{:?}", d.losses);

    // MIOpen gfx1030_36.db rocm-5.4.3 -> develop: 9,934 -> 9,872 perf rows.
    let m = shared().join("files/github/miopen");
    let d = diff_of(&m.join("rocm-5.4.3/share"), &m.join("develop-2024-10-24/share"));
    let f = d.files_changed.iter().find(|f| f.new_path.ends_with("gfx1030_36.db")).expect("perf DB changed");
    assert_eq!(f.records, Some((9934, 9872)));

    // A tree against itself: nothing.
    let same = diff_of(&deb, &deb);
    assert!(same.is_empty(), "{same:?}");
}

fn debian_suites_diff_both_ways() {
    let Some(dir) = debian_tree() else { return };
    let deb = Path::new(&dir).join("deb");
    let forward = diff_of(&deb.join("bookworm-root"), &deb.join("trixie-root"));
    assert!(forward.losses.is_empty(), "bookworm -> trixie loses nothing: {:?}", forward.losses);
    let rocsparse: Vec<_> =
        forward.target_id_changes.iter().filter(|c| c.library == "librocsparse.so").collect();
    let change = rocsparse.iter().find(|c| c.processor == "gfx90a").expect("gfx90a respelled");
    assert_eq!(
        (change.old.clone(), change.new.clone()),
        (vec!["gfx90a:xnack+".into(), "gfx90a:xnack-".into()], vec!["gfx90a".to_string()])
    );
    assert!(rocsparse.iter().any(|c| c.old == ["gfx900:xnack-"] && c.new == ["gfx900"]));

    let back = diff_of(&deb.join("trixie-root"), &deb.join("bookworm-root"));
    let lost = |lib: &str| {
        back.losses.iter().find(|l| l.library == lib).map(|l| l.targets.clone()).unwrap_or_default()
    };
    for whole in ["librocblas.so", "librocsolver.so", "tensile:rocblas", "firmware:amdgpu"] {
        assert!(
            back.losses.iter().any(|l| l.library == whole && l.how == gfxscan::diff::UnitChange::Gone),
            "{whole} lost whole"
        );
    }
    for t in ["gfx1010", "gfx1100", "gfx1101", "gfx1102"] {
        assert!(lost("librocsparse.so").contains(&t.to_string()), "rocSPARSE loses {t}");
    }
}

/// A snapshot without what names its roots: what must agree between a package and its tree.
fn content(mut s: Snapshot) -> Snapshot {
    s.roots.clear();
    s.archives.clear();
    s
}

fn debian_packages_scan_like_their_unpacked_trees() {
    // Every package fetch-debian.sh downloaded (debs/<suite>/*.deb) against the folder it
    // unpacked with dpkg -x (deb/<suite>/<package>_<version>); the four largest (rocBLAS,
    // rocSOLVER, rocSPARSE, RCCL: 80 s together) only with GFXSCAN_CORPUS_ALL set.
    let Some(dir) = debian_tree() else { return };
    let all = std::env::var_os("GFXSCAN_CORPUS_ALL").is_some();
    let mut compared = 0;
    for suite in ["bookworm", "trixie"] {
        let debs = Path::new(&dir).join("debs").join(suite);
        let Ok(entries) = std::fs::read_dir(&debs) else { continue };
        let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        names.sort();
        for deb in names {
            let size = std::fs::metadata(&deb).map(|m| m.len()).unwrap_or(0);
            if size > 100 << 20 && !all {
                continue;
            }
            // <package>_<version>_<arch>.deb unpacks to <package>_<version with ':' as '_'>.
            let stem = deb.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            let tree_name = stem.rsplit_once('_').map_or(stem, |(pv, _)| pv).replace("%3a", "_");
            let tree = Path::new(&dir).join("deb").join(suite).join(&tree_name);
            assert!(tree.is_dir(), "{} has no unpacked tree at {}", deb.display(), tree.display());
            let packed = scan_dir(&deb);
            assert_eq!(packed.archives.len(), 1, "{}", deb.display());
            assert!(packed.archives[0].format.starts_with("deb:data.tar"), "{}", deb.display());
            assert_eq!(content(packed), content(scan_dir(&tree)), "{} differs from its tree", deb.display());
            compared += 1;
        }
    }
    assert!(compared >= 28, "only {compared} packages compared");
}

fn wheels_scan_like_their_files_in_the_corpus() {
    // Wheels from scripts/fetch-wheels.sh (DIR/wheels) against the files the corpus keeps from
    // the same releases (files/whl/<name>-<version>/): every corpus file is a member of its wheel,
    // and gfxscan reads the same code objects from it in place as from the copy on disk.
    let Some(dir) = debian_tree() else { return };
    let wheels = Path::new(&dir).join("wheels");
    let Ok(entries) = std::fs::read_dir(&wheels) else {
        skipped(&format!("no {} (scripts/fetch-wheels.sh)", wheels.display()));
        return;
    };
    let mut checked = 0;
    for whl in entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "whl")) {
        let name = whl.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let release: String = name.split('-').take(2).collect::<Vec<_>>().join("-");
        let copies = shared().join("files/whl").join(&release);
        if !copies.is_dir() {
            continue;
        }
        let packed = scan_dir(&whl);
        assert_eq!(packed.archives.first().map(|a| a.format.as_str()), Some("zip"), "{name}");
        let on_disk = scan_dir(&copies);
        assert!(!on_disk.files.is_empty(), "{release}: the corpus copies hold device code");
        for f in &on_disk.files {
            let member = packed.files.iter().find(|m| m.path.path == f.path.path);
            let member = member.unwrap_or_else(|| panic!("{name} has no {}", f.path.path));
            assert_eq!(member.code_objects, f.code_objects, "{name}!/{}", f.path.path);
            assert_eq!((member.kind, member.size, member.bundles), (f.kind, f.size, f.bundles));
            checked += 1;
        }
    }
    if checked == 0 {
        skipped(&format!("no wheel in {} matches files/whl/", wheels.display()));
    }
}

/// The files each lazy index names, held against the folder (TheRock#7790's rule): whole in
/// Debian's ROCm 6.4 rocBLAS 4.4 and hipBLASLt 7.1 and in the complete upstream gfx1032 rocBLAS
/// folder (one of whose sub-libraries holds no solutions and has no code file, rightly);
/// absent in the hipBLASLt excerpt, which keeps only the package's two lazy indexes.
fn lazy_indexes_name_only_files_that_are_there() {
    use gfxscan::library::placeholders::placeholder_findings;
    use gfxscan::model::{FindingKind, Role};
    let named = |snap: &Snapshot| -> usize {
        let arts = snap.files.iter().filter_map(|f| f.artifact.as_ref());
        arts.filter(|a| a.role == Role::LazyIndex).map(|a| a.placeholders().len()).sum()
    };
    let files = shared().join("files/github/rocmlibs");
    if files.is_dir() {
        let snap = scan_dir(&files);
        let found = placeholder_findings(&snap);
        let got: Vec<(FindingKind, &str, usize)> =
            found.iter().map(|f| (f.kind, f.library.file_name(), f.paths.len())).collect();
        assert_eq!(
            got,
            [
                (FindingKind::IndexNamesMissing, "TensileLibrary_lazy_gfx1100.dat", 46),
                (FindingKind::IndexNamesMissing, "TensileLibrary_lazy_gfx1101.dat", 54),
            ],
            "{found:#?}"
        );
        assert!(found.iter().all(|f| f.library.path.contains("hipblaslt-gfx110x")));
        assert_eq!(named(&snap), 46 + 54 + 60, "the gfx1032 index names 60");
    }
    let Some(root) = rocm64_tree() else { return };
    let snap = scan_dir(&root);
    assert_eq!(placeholder_findings(&snap), [], "Debian ROCm 6.4");
    assert_eq!(named(&snap), 819 + 717, "rocBLAS 4.4 and hipBLASLt 7.1 lazy indexes");
}

/// `gfxscan check --json ARGS` through the binary: (status of each verdict's library, detail).
fn check_verdicts(args: &[&str]) -> Vec<(String, String, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"))
        .args(["check", "-q", "--json"])
        .args(args)
        .output()
        .expect("gfxscan runs");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("check JSON");
    documents::expect_valid("check", &report, &format!("check --json {}", args.join(" ")));
    let mut got = Vec::new();
    for gpu in report["installs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| i["gpus"].as_array().into_iter().flatten())
    {
        let device = gpu["device"]["effective"]["target_id"].as_str().unwrap_or_default().to_string();
        for v in gpu["verdicts"].as_array().into_iter().flatten() {
            let status = v["status"].as_str().unwrap_or_default().to_string();
            got.push((device.clone(), status, v["detail"].as_str().unwrap_or_default().to_string()));
        }
    }
    got
}

/// Issue 22: Debian's ROCm 6.4 rocSOLVER (235 bundles) holds only gfx9-generic code for gfx9
/// GPUs but gfx908/gfx90a. Checked alone (no HIP runtime beside it: ROCm 7.x's rules), clr
/// `TargetToGeneric` asks for `gfx9-generic:sramecc+:xnack-` for an MI50, which comgr refuses:
/// MISSING; a gfx900 (`gfx9-generic:xnack-`) loads it: OK. Under the tree's own HIP 6.4 see
/// `rocm64_rocsolver_under_hip_6_4_serves_gfx906`.
fn rocm64_rocsolver_serves_gfx900_not_gfx906() {
    let Some(root) = rocm64_tree() else { return };
    let lib = root.join("usr/lib/x86_64-linux-gnu/librocsolver.so.0.4");
    let lib = lib.to_str().expect("UTF-8 path");
    let got = check_verdicts(&[lib, "--gpu", "gfx906:sramecc+:xnack-", "--gpu", "gfx900:xnack-"]);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].1.as_str()), ("gfx906:sramecc+:xnack-", "missing"), "{got:?}");
    assert!(got[0].2.contains("gfx9-generic has no sramecc"), "{got:?}");
    assert_eq!((got[1].0.as_str(), got[1].1.as_str()), ("gfx900:xnack-", "ok"), "{got:?}");
}

/// Issue 22: cupy-rocm-4-0 10.6.0 (PyPI, built with ROCm 4.0) bundles its code under pre-4.1
/// entry IDs (`hip-amdgcn-amd-amdhsa-gfx900`): a ROCm 6.0+ runtime never matches them, so every
/// library with device code is MISSING for gfx900, saying why. The wheel comes from
/// scripts/fetch-wheels.sh (DIR/wheels).
fn cupy_rocm_4_0_pre_4_1_ids_never_load() {
    let Some(dir) = debian_tree() else { return };
    let wheel = Path::new(&dir).join("wheels/cupy_rocm_4_0-10.6.0-cp39-cp39-manylinux1_x86_64.whl");
    if !wheel.is_file() {
        skipped(&format!("no {} (scripts/fetch-wheels.sh)", wheel.display()));
        return;
    }
    let got = check_verdicts(&[wheel.to_str().expect("UTF-8 path"), "--gpu", "gfx900"]);
    assert!(!got.is_empty());
    for (_, status, detail) in &got {
        assert_eq!(status, "missing", "{got:?}");
        assert!(detail.contains("pre-ROCm-4.1 IDs (hip-amdgcn-amd-amdhsa-gfx900)"), "{detail}");
    }
}

/// With the corpus absent, a corpus test says "skipped: corpus absent", not a bare "ok" (issue
/// 23), and the summary counts it as skipped (issue 35): this runs one of them again in a child
/// of this test binary with the corpus unset.
fn absent_corpus_says_skipped_past_the_capture() {
    let me = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(me)
        .args(["--exact", "debian_tree_matches_truth_codeobjects", "--test-threads", "1"])
        .env_remove("GFXSCAN_DEBIAN_CORPUS")
        .output()
        .expect("run the test binary");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("test debian_tree_matches_truth_codeobjects ... skipped: corpus absent: set GFXSCAN_DEBIAN_CORPUS"),
        "{said}"
    );
    // Counted as skipped, not passed (issue 35, item 8).
    assert!(said.contains("test result: ok. 0 passed; 1 skipped; 0 failed; "), "{said}");
}

/// `check` reads compressed bundles to their tables and plain code objects to their ELF
/// headers; on every real tree here its verdicts equal a full scan's, for the GPUs people ask
/// about, feature-stating ones included.
/// `diff --only` reads a scanned side as `check` does for those targets: the same diff as two
/// full scans give, on Debian's ROCm 5.x → 6.x → 6.4 upgrades.
fn diff_only_reading_tables_gives_a_full_scans_diff_on_real_trees() {
    use crate::pipeline::diff_at;
    let Some(dir) = corpus_dir() else { return };
    let deb = Path::new(&dir).join("deb");
    let pairs = [("bookworm-root", "trixie-root"), ("trixie-root", "sid-root")];
    let mut compared = 0;
    for (old, new) in
        pairs.map(|(o, n)| (deb.join(o), deb.join(n))).iter().filter(|(o, n)| o.exists() && n.exists())
    {
        for only in [&["gfx900"][..], &["gfx906"], &["gfx1030"], &["gfx1100", "gfx1151"]] {
            let full = diff_at(old, new, only, false);
            assert!(
                full == diff_at(old, new, only, true),
                "{} → {}, {only:?}: the diffs differ",
                old.display(),
                new.display()
            );
            compared += 1;
        }
    }
    if compared == 0 {
        skipped("Debian trees not present");
    }
}

fn check_reading_tables_gives_a_full_scans_verdicts_on_real_trees() {
    use crate::pipeline::verdicts_at;
    let mut trees = vec![shared().join("files"), Path::new(env!("CARGO_MANIFEST_DIR")).join("sample")];
    if let Some(dir) = std::env::var_os("GFXSCAN_DEBIAN_CORPUS").filter(|d| !d.is_empty()) {
        let dir = Path::new(&dir);
        trees.extend(["deb/sid-root", "deb/trixie-root", "deb/bookworm-root", "wheels"].map(|t| dir.join(t)));
    }
    let gpus = [
        "gfx803",
        "gfx900",
        "gfx906:sramecc+:xnack-",
        "gfx908",
        "gfx90a:xnack-",
        "gfx942",
        "gfx1010",
        "gfx1030",
        "gfx1031",
        "gfx1100",
        "gfx1101",
        "gfx1151",
        "gfx1200",
        "gfx1201",
    ];
    let mut compared = 0;
    for tree in trees.iter().filter(|t| t.exists()) {
        let full = verdicts_at(tree, false, &gpus);
        assert!(full == verdicts_at(tree, true, &gpus), "{}: verdicts differ", tree.display());
        // One GPU at a time, as `check --gpu G` reads: entries of the others come from tables.
        for gpu in ["gfx900", "gfx906:sramecc+:xnack-", "gfx1030", "gfx1100", "gfx1151", "gfx1201"] {
            let full = verdicts_at(tree, false, &[gpu]);
            assert!(full == verdicts_at(tree, true, &[gpu]), "{}: verdicts for {gpu} differ", tree.display());
        }
        compared += 1;
    }
    if compared < trees.len() {
        skipped(&format!("{} of {} trees not present", trees.len() - compared, trees.len()));
    }
}

/// `check --exe` on Debian's own llama.cpp over its ROCm 6.4 (`scripts/fetch-debian-llama.sh`):
/// the chain from `llama-cli` to the HIP backend ggml loads at run time, rocBLAS, the HIP runtime
/// and rocBLAS's Tensile folder, each library judged as `check` judges it in the whole tree; a
/// library of the chain removed is named with what needs it, exit 1.
fn check_exe_follows_llama_cli_to_its_gpu_code() {
    let Some(dir) = corpus_dir() else { return };
    let deb = Path::new(&dir).join("deb");
    let root = deb.join("sid-llama-root");
    if !root.join("usr/bin/llama-cli").exists() {
        skipped(&format!("{} not present (run scripts/fetch-debian-llama.sh)", root.display()));
        return;
    }
    // Every run here writes check JSON: each is checked against its schema.
    let run = |args: &[&str]| {
        let out =
            std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan")).args(args).output().expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        documents::expect_valid_text("check", &stdout, &args.join(" "));
        (out.status.code(), stdout)
    };
    let r = root.to_str().expect("UTF-8");
    let verdicts = |json: &str| -> BTreeMap<String, serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(json).expect("JSON");
        let mut out = BTreeMap::new();
        for i in v["installs"].as_array().into_iter().flatten() {
            for g in i["gpus"].as_array().into_iter().flatten() {
                for x in g["verdicts"].as_array().into_iter().flatten() {
                    out.insert(x["library"].as_str().unwrap_or_default().to_string(), x.clone());
                }
            }
        }
        out
    };
    for gpu in ["gfx900", "gfx906", "gfx1030", "gfx1100"] {
        let (code, json) =
            run(&["check", "-q", "--json", "--gpu", gpu, "--exe", "/usr/bin/llama-cli", "--root", r]);
        let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        let p = &v["program"];
        assert_eq!(p["starts"], true, "{p}");
        let chain = |name: &str| {
            let l = p["loads"]
                .as_array()
                .and_then(|l| l.iter().find(|l| l["name"].as_str().is_some_and(|n| n.ends_with(name))));
            l.map(|l| l["chain"].clone()).unwrap_or_else(|| panic!("{name} not loaded: {p}"))
        };
        assert_eq!(
            chain("libggml-hip.so"),
            serde_json::json!([
                "libggml-hip.so (dlopen)",
                "libggml.so.0",
                "libllama-server-impl.so",
                "libllama-cli-impl.so",
                "llama-cli"
            ])
        );
        assert_eq!(chain("librocblas.so.4")[1], "libggml-hip.so (dlopen)");
        assert_eq!(chain("libamdhip64.so.6")[1], "libggml-hip.so (dlopen)");
        assert!(p["data"][0]["folder"].as_str().is_some_and(|f| f.ends_with("rocblas/4.4.1/library")), "{p}");
        // Each library the program loads has the verdict `check` gives it in the whole tree.
        let (_, whole) = run(&["check", "-q", "--json", "--gpu", gpu, r]);
        let (mine, whole) = (verdicts(&json), verdicts(&whole));
        assert!(mine.len() >= 4, "{gpu}: {mine:?}");
        for (library, verdict) in &mine {
            assert_eq!(whole.get(library), Some(verdict), "{gpu}: {library}");
        }
        assert_eq!(code, Some(if mine.values().all(|v| v["status"] == "ok") { 0 } else { 1 }), "{gpu}: {p}");
    }
    // A hard-linked copy without rocBLAS: the HIP backend does not load (its DT_NEEDED is
    // nowhere); without libllama.so.0, llama-cli does not start.
    let copy = tempfile::tempdir_in(&deb).expect("temp dir beside the tree");
    let tree = copy.path().join("root");
    let cp = std::process::Command::new("cp").arg("-al").arg(&root).arg(&tree).status().expect("cp");
    assert!(cp.success());
    let lib = tree.join("usr/lib/x86_64-linux-gnu");
    for f in ["librocblas.so.4", "librocblas.so.4.4"] {
        std::fs::remove_file(lib.join(f)).expect("remove");
    }
    let t = tree.to_str().expect("UTF-8");
    let program = |code: Option<i32>, json: String| -> serde_json::Value {
        assert_eq!(code, Some(1), "{json}");
        serde_json::from_str::<serde_json::Value>(&json).expect("JSON")["program"].clone()
    };
    let (code, json) =
        run(&["check", "-q", "--json", "--gpu", "gfx1100", "--exe", "/usr/bin/llama-cli", "--root", t]);
    let p = program(code, json);
    let hip = p["runtime"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["what"].as_str().is_some_and(|w| w.contains("\"hip\""))));
    let failed = hip.and_then(|h| h["failed"].as_str()).unwrap_or_default();
    assert!(failed.contains("librocblas.so.4 (needed by libggml-hip.so) is nowhere"), "{p}");
    assert_eq!(p["starts"], true);
    std::fs::remove_file(lib.join("libllama.so.0")).expect("remove");
    let (code, json) =
        run(&["check", "-q", "--json", "--gpu", "gfx1100", "--exe", "/usr/bin/llama-cli", "--root", t]);
    let p = program(code, json);
    assert_eq!(p["starts"], false, "{p}");
    assert_eq!(p["missing"][0]["name"], "libllama.so.0");
    assert_eq!(p["missing"][0]["needed_by"], serde_json::json!(["libllama-cli-impl.so", "llama-cli"]));
}

/// The real `.deb` files of the Debian corpus (`<GFXSCAN_DEBIAN_CORPUS>/debs/<suite>/`).
fn corpus_debs() -> Option<(PathBuf, Vec<PathBuf>)> {
    let dir = corpus_dir()?;
    let debs = PathBuf::from(dir).join("debs");
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(&debs)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    found.sort();
    if found.is_empty() {
        skipped(&format!("no .deb under {}", debs.display()));
        return None;
    }
    Some((debs, found))
}

/// The package a member component came from (`gfxscan:package-purl`).
fn package_purl(c: &serde_json::Value) -> &str {
    let props = c["properties"].as_array().map(Vec::as_slice).unwrap_or_default();
    let p = props.iter().find(|p| p["name"] == "gfxscan:package-purl");
    p.and_then(|p| p["value"].as_str()).unwrap_or_default()
}

/// `dpkg-deb -f FILE Package Version Architecture`, the purl it stands for (purl spec,
/// types/deb-definition.json: name lowercased, the version's `+` percent-encoded).
fn dpkg_purl(deb: &Path) -> String {
    let out = std::process::Command::new("dpkg-deb")
        .arg("-f")
        .arg(deb)
        .args(["Package", "Version", "Architecture"])
        .output()
        .expect("dpkg-deb runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| {
        let line = text.lines().find_map(|l| l.strip_prefix(&format!("{name}: "))).expect("the field");
        line.trim().to_string()
    };
    let encode = |s: String| s.replace('+', "%2B");
    format!(
        "pkg:deb/debian/{}@{}?arch={}",
        field("Package").to_lowercase(),
        encode(field("Version")),
        encode(field("Architecture"))
    )
}

/// Every real `.deb` of the corpus is a component with the purl `dpkg-deb` reads from it, and
/// each file read from it carries that purl; a member's digest is what `sha256sum` gives of it
/// as `dpkg-deb` extracts it.
fn real_debs_carry_the_purl_dpkg_deb_reads() {
    let Some((debs, files)) = corpus_debs() else { return };
    if std::process::Command::new("dpkg-deb").arg("--version").output().is_err() {
        skipped("no dpkg-deb");
        return;
    }
    let (_, bom) = gfxscan_json(&["scan", "-q", "--format", "cyclonedx"], &debs);
    let components = bom["components"].as_array().expect("components");
    let location = |c: &serde_json::Value| {
        let props = c["properties"].as_array().expect("properties");
        let p = props.iter().find(|p| p["name"] == "syft:location:0:path").expect("a location");
        p["value"].as_str().expect("text").to_string()
    };
    let mut members = 0;
    let mut with_members = Vec::new();
    for deb in &files {
        let at = format!("/{}", deb.strip_prefix(&debs).expect("under debs").display());
        let want = dpkg_purl(deb);
        let package = components.iter().find(|c| location(c) == at).expect("a component per .deb");
        assert_eq!(package["purl"], want.as_str(), "{at}");
        for c in components.iter().filter(|c| location(c).starts_with(&format!("{at}!/"))) {
            assert_eq!(package_purl(c), want.as_str(), "{}", location(c));
            members += 1;
            with_members.push(deb);
        }
    }
    assert!(members > 0, "the corpus .deb files hold listed files");

    // The smallest .deb with a listed member, with digests: its members as dpkg-deb extracts them.
    let deb = with_members
        .into_iter()
        .min_by_key(|d| std::fs::metadata(d).map(|m| m.len()).unwrap_or(u64::MAX))
        .expect("one");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"))
        .args(["scan", "-q", "--digests", "--format", "cyclonedx"])
        .arg(deb)
        .output()
        .expect("runs");
    let bom: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a BOM");
    let listed: Vec<&serde_json::Value> =
        bom["components"].as_array().expect("components").iter().filter(|c| c["hashes"].is_array()).collect();
    assert!(!listed.is_empty(), "{} has hashed members", deb.display());
    for c in listed {
        let member = c["name"].as_str().expect("a name").trim_start_matches('/');
        let script = r#"set -o pipefail; dpkg-deb --fsys-tarfile "$1" | tar -xO -f - "./$2" | sha256sum"#;
        let r = std::process::Command::new("bash")
            .args(["-c", script, "bash"])
            .arg(deb)
            .arg(member)
            .output()
            .expect("bash runs");
        let want = String::from_utf8_lossy(&r.stdout).split_whitespace().next().unwrap_or("").to_string();
        assert_eq!(c["hashes"][0]["content"], want.as_str(), "{member} of {}", deb.display());
    }
}

/// Every real wheel of the corpus (`<GFXSCAN_DEBIAN_CORPUS>/wheels/`) is a component with the
/// purl its file name states (`{distribution}-{version}-…whl`, the binary distribution format;
/// purl spec, types/pypi-definition.json: the name normalised), read from its METADATA; each
/// file read from it carries that purl.
fn real_wheels_carry_the_purl_their_names_state() {
    let Some(dir) = corpus_dir() else { return };
    let wheels = PathBuf::from(dir).join("wheels");
    let Ok(entries) = std::fs::read_dir(&wheels) else {
        skipped(&format!("no {}", wheels.display()));
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok().and_then(|e| e.file_name().into_string().ok()))
        .filter(|n| n.ends_with(".whl"))
        .collect();
    names.sort();
    let (_, bom) = gfxscan_json(&["scan", "-q", "--format", "cyclonedx"], &wheels);
    let components = bom["components"].as_array().expect("components");
    let at = |c: &serde_json::Value| {
        let props = c["properties"].as_array().expect("properties");
        let p = props.iter().find(|p| p["name"] == "syft:location:0:path").expect("a location");
        p["value"].as_str().expect("text").to_string()
    };
    assert!(!names.is_empty(), "wheels in {}", wheels.display());
    for name in &names {
        let mut parts = name.splitn(3, '-');
        let (dist, version) = (parts.next().expect("a name"), parts.next().expect("a version"));
        let want = format!(
            "pkg:pypi/{}@{}",
            dist.to_lowercase().replace(['_', '.'], "-"),
            version.replace('+', "%2B")
        );
        let package = components.iter().find(|c| at(c) == format!("/{name}")).expect("a component per wheel");
        assert_eq!(package["purl"], want.as_str(), "{name}");
        for c in components.iter().filter(|c| at(c).starts_with(&format!("/{name}!/"))) {
            assert_eq!(package_purl(c), want.as_str(), "{}", at(c));
        }
    }
}

/// Issue 27: on Debian's ROCm 6.4 tree, `explain` for gfx900, gfx1031, gfx1032, gfx1100 and gfx1103 holds
/// scan's counts and check's verdicts (with and without the override), reads the release from
/// the HIP runtime's name (6.4.43484: ROCm 6.4.3 or 6.4.2, compat-matrix's HIP row) and gives
/// those releases' support list, cited.
fn rocm64_explain_agrees_with_scan_and_check() {
    let Some(root) = rocm64_tree() else { return };
    let runner = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        cmd.args(args);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("HSA_") {
                cmd.env_remove(&k);
            }
        }
        cmd.envs(env.iter().copied());
        let out = cmd.output().expect("gfxscan runs");
        let stdout = String::from_utf8(out.stdout).expect("UTF-8");
        if args.first() == Some(&"explain") {
            documents::expect_valid_text("explain", &stdout, &args.join(" "));
        }
        (out.status.code().expect("an exit code"), stdout)
    };
    // gfx900: not in the 6.4 matrix and unsupported on the last per-GPU page: blocks. gfx1031:
    // the matrix does not say (unknown). gfx1100: AMD lists it, but for AMD's packages, and this
    // is Debian's build: unknown, the runtime's verdicts decide.
    // gfx1032 and gfx1103 (issue 33): their override rows are check's verdicts under the
    // override, held by assert_explain_agrees.
    let all = [
        ("gfx900", "blocks"),
        ("gfx1031", "unknown"),
        ("gfx1032", "unknown"),
        ("gfx1100", "unknown"),
        ("gfx1103", "unknown"),
    ];
    for (target, listed) in all {
        let doc = explain_agrees::assert_explain_agrees(&root, target, &runner);
        let install = &doc["installs"][0];
        assert_eq!(install["release"]["releases"], serde_json::json!(["6.4.3", "6.4.2"]), "{target}");
        assert_eq!(install["release"]["source"], "hip-runtime");
        let row = &install["rows"][0];
        assert_eq!(row["gate"], "ROCm 6.4.3 or 6.4.2 support list (this install's release)");
        assert_eq!(row["verdict"], listed, "{target}: {row}");
        let source = row["source"].as_str().expect("a source");
        assert!(
            source.contains("compat-matrix 6.4.3") && source.contains("libamdhip64.so.6.4.43484"),
            "{source}"
        );
        for r in doc["policy"].as_array().expect("policy rows") {
            assert!(!r["source"].as_str().unwrap_or("").is_empty(), "{r}");
        }
    }
}

/// Issue 34: Debian's MIGraphX 7.1.1 (`scripts/fetch-debian-migraphx.sh`): libmigraphx.so.2014000.0
/// has a 21,305,915-byte dynamic string table, which `check --exe` once refused, calling every
/// MIGraphX program "does not start". Now each program and library starts, and what it loads at
/// start is what the tree's own glibc loader lists (`ld.so --list` in a chroot, when this
/// process may chroot); its libraries with GPU code are judged.
fn every_migraphx_program_starts_as_glibc_loads_it() {
    let Some(dir) = corpus_dir() else { return };
    let root = Path::new(&dir).join("deb/sid-migraphx-root");
    if !root.join("usr/bin/migraphx-driver").exists() {
        skipped(&format!("{} not present (run scripts/fetch-debian-migraphx.sh)", root.display()));
        return;
    }
    let r = root.to_str().expect("UTF-8");
    let lib = "/usr/lib/x86_64-linux-gnu/migraphx/lib";
    let mut objects: Vec<String> = [
        "/usr/bin/migraphx-driver",
        "/usr/bin/migraphx-hiprtc-driver",
        "/usr/lib/x86_64-linux-gnu/libmigraphx_c.so.3",
    ]
    .map(String::from)
    .to_vec();
    for name in [
        "libmigraphx",
        "libmigraphx_device",
        "libmigraphx_gpu",
        "libmigraphx_onnx",
        "libmigraphx_ref",
        "libmigraphx_tf",
    ] {
        objects.push(format!("{lib}/{name}.so.2014000"));
    }
    for exe in &objects {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"))
            .args(["check", "-q", "--json", "--gpu", "gfx1100", "--exe", exe, "--root", r])
            .output()
            .expect("runs");
        let json = String::from_utf8_lossy(&out.stdout).into_owned();
        documents::expect_valid_text("check", &json, exe);
        let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        let p = &v["program"];
        assert_eq!(p["starts"], true, "{exe}: {}", p["missing"]);
        assert_ne!(out.status.code(), Some(2), "{exe}");
        let loads = p["loads"].as_array().expect("loads");
        let ours: BTreeSet<String> = loads
            .iter()
            // At start: not what a dlopen() call brings in (comgr and its closure), which glibc
            // does not list.
            .filter(|l| {
                let chain = l["chain"].as_array().into_iter().flatten();
                !chain.filter_map(|c| c.as_str()).any(|c| c.ends_with("(dlopen)"))
            })
            .filter_map(|l| l["name"].as_str().map(|n| n.rsplit('/').next().unwrap_or(n).to_string()))
            .collect();
        if exe.contains("/bin/") {
            // The drivers reach MIOpen and rocBLAS: judged, with their verdicts.
            let judged: usize = v["installs"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|i| i["gpus"][0]["verdicts"].as_array())
                .map(Vec::len)
                .sum();
            assert!(judged >= 3, "{exe}: {judged} verdicts");
        }
        let listed = std::process::Command::new("chroot")
            .args([r, "/lib64/ld-linux-x86-64.so.2", "--list", exe])
            .output();
        let Some(listed) = listed.ok().filter(|o| o.status.success()) else {
            skipped("chroot: not permitted here (glibc's own list not compared)");
            continue;
        };
        let glibc: BTreeSet<String> = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| !n.starts_with("linux-vdso"))
            .map(|n| n.rsplit('/').next().unwrap_or(n).to_string())
            .collect();
        assert_eq!(ours, glibc, "{exe}: what check --exe loads at start, and what glibc lists");
    }
}

/// Issue 34: PyPI's tensorflow-rocm 2.14.0.600 (`scripts/fetch-pypi-tensorflow-rocm.sh`) keeps
/// 1,149 whole offload bundles in `.rodata` (its generated kernels, each a `*_kernel_blob` it
/// hands to `hipModuleLoadData`) beside 241 in `.hip_fatbin`. Every bundle is read as a bundle,
/// at the offset and with the entry IDs Debian's clang-offload-bundler lists
/// (`tests/data/truth/tensorflow-rocm-2.14.0.600-bundles.tsv.gz`), none of its code objects
/// loose; and check judges each bundle by the comgr lookup: gfx1100 OK, gfx1151 MISSING.
fn tensorflow_rodata_bundles_match_the_bundler() {
    use gfxscan::model::Location;
    use std::io::Read;
    let Some(dir) = debian_tree() else { return };
    let root = Path::new(&dir).join("pypi/tensorflow-rocm-2.14.0.600");
    if !root.join("tensorflow/libtensorflow_cc.so.2").is_file() {
        skipped(&format!("{} not present (run scripts/fetch-pypi-tensorflow-rocm.sh)", root.display()));
        return;
    }
    let gz = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/truth/tensorflow-rocm-2.14.0.600-bundles.tsv.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(gz).expect("truth"))
        .read_to_string(&mut text)
        .expect("gzip");
    let mut truth: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let offset = u64::from_str_radix(cols[1].trim_start_matches("0x"), 16).expect("offset");
        let ids = cols[3].split(',').filter(|id| !id.starts_with("host-")).map(str::to_string).collect();
        truth.insert(offset, ids);
    }
    assert_eq!(truth.len(), 1149 + 241);
    let snap = scan_dir(&root);
    let [f] = snap.files.as_slice() else { panic!("one file with device code: {:?}", snap.files.len()) };
    assert_eq!(f.bundles, 1390);
    let mut ours: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for c in &f.code_objects {
        let Location::BundleEntry { entry_id, bundle_offset, .. } = &c.location else {
            panic!("a code object outside a bundle: {c:?}")
        };
        ours.entry(*bundle_offset).or_default().push(entry_id.clone());
    }
    ours.values_mut().for_each(|ids| ids.sort());
    assert_eq!(ours, truth);
    let lib = root.to_str().expect("UTF-8 path");
    let ok = check_verdicts(&[lib, "--gpu", "gfx1100"]);
    assert!(!ok.is_empty() && ok.iter().all(|(_, s, _)| s == "ok"), "{ok:?}");
    let missing = check_verdicts(&[lib, "--gpu", "gfx1151"]);
    assert!(
        missing.iter().any(|(_, s, d)| s == "missing" && d.contains("no code object for gfx1151")),
        "{missing:?}"
    );
}

/// Issue 34, item 4: in Debian's ROCm 6.4 tree rocSOLVER is judged by the tree's own HIP
/// runtime (`libamdhip64.so.6.4.43484`). Its bundles are uncompressed and hold gfx9-generic code,
/// so clr 6.4 `FatBinaryInfo::ExtractFatBinary` sends them to the legacy unbundler
/// (`containGenericTarget`), whose `isCodeObjectCompatibleWithDevice` maps gfx906 to
/// gfx9-generic with no feature check: an MI50 loads it, where ROCm 7.x's comgr query refuses.
fn rocm64_rocsolver_under_hip_6_4_serves_gfx906() {
    let Some(root) = rocm64_tree() else { return };
    let (_, report) = gfxscan_json(&["check", "-q", "--json", "--gpu", "gfx906:sramecc+:xnack-"], &root);
    let install = &report["installs"][0];
    assert_eq!(install["runtime"]["version"], "6.4.43484", "{install:#}");
    let v = install["gpus"][0]["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .find(|v| v["library"].as_str().is_some_and(|l| l.ends_with("librocsolver.so.0.4")))
        .expect("rocSOLVER judged");
    assert_eq!(
        (v["status"].as_str(), v["via_generic"].as_str()),
        (Some("ok"), Some("gfx9-generic")),
        "{v:#}"
    );
}

/// Issue 34, item 3: on Debian's ROCm 6.4 tree, every vendor support-list row `explain` gives
/// for gfx1151, gfx1201 and gfx1103 either rests on a list no older than the install's release
/// (6.4.2/6.4.3) or says unknown, and every one says its list's date.
fn rocm64_vendor_rows_cite_lists_no_older_than_the_install() {
    let Some(root) = rocm64_tree() else { return };
    for target in ["gfx1151", "gfx1201", "gfx1103"] {
        let (_, doc) = gfxscan_json(&["explain", "-q", "--json", target], &root);
        let mut rows: Vec<&serde_json::Value> = doc["policy"].as_array().expect("policy").iter().collect();
        for i in doc["installs"].as_array().expect("installs") {
            rows.extend(i["rows"].as_array().expect("rows"));
        }
        let lists: Vec<&&serde_json::Value> =
            rows.iter().filter(|r| r["gate"].as_str().is_some_and(|g| g.contains("support list"))).collect();
        assert!(lists.len() >= 3, "{target}: {lists:#?}");
        for r in lists {
            let (gate, says) = (r["gate"].as_str().unwrap_or(""), r["says"].as_str().unwrap_or(""));
            assert!(says.contains("list of 20"), "{target}: {gate} says no date: {says}");
            // The lists such a row rests on are for 6.4.2 or later, or the row is unknown.
            let newest = gate
                .split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter(|v| v.matches('.').count() == 2)
                .max_by_key(|v| v.split('.').map(|p| p.parse::<u32>().unwrap_or(0)).collect::<Vec<_>>());
            let recent = newest.is_some_and(|v| {
                v.split('.').map(|p| p.parse::<u32>().unwrap_or(0)).collect::<Vec<_>>() >= vec![6, 4, 2]
            });
            assert!(recent || r["verdict"] == "unknown", "{target}: {gate} ({}) {says}", r["verdict"]);
        }
    }
    // Review finding: HIP 6.4.43484 is 6.4.2 or 6.4.3, and neither list is older than the
    // install: gfx900, listed as unsupported on the last per-GPU page, is still blocked there.
    let (_, doc) = gfxscan_json(&["explain", "-q", "--json", "gfx900"], &root);
    let own = doc["installs"][0]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["gate"].as_str().is_some_and(|g| g.contains("this install's release")))
        .expect("the install's list");
    assert_eq!(own["verdict"], "blocks", "{own:#}");
}

/// usage.md: Debian's ROCm 6.4 tree has no findings (judged by its own HIP 6.4, rocSOLVER's
/// gfx9-generic code serves a gfx906), so `--fail-on-findings` passes.
fn rocm64_tree_has_no_findings() {
    let Some(root) = rocm64_tree() else { return };
    let (code, doc) = gfxscan_json(&["scan", "-q", "--json", "--fail-on-findings"], &root);
    assert_eq!(doc.get("findings"), None, "{:#}", doc["findings"]);
    assert_eq!(code, Some(0));
}

/// Issue 38, item 3: a rescan of Debian's ROCm 6.4 tree with `--reuse` of its own snapshot is
/// byte-identical to it, every file known (the tree is years old: nothing is racy), and `check`
/// taking those facts says what it says reading the tree itself, for one GPU and for all.
fn rocm64_rescan_is_byte_identical_and_checks_agree() {
    let Some(root) = rocm64_tree() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let (snap, again) = (dir.path().join("snap.json"), dir.path().join("again.json"));
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"))
            .args(args)
            .arg(&root)
            .output()
            .expect("runs")
    };
    let (s, a) = (snap.to_string_lossy(), again.to_string_lossy());
    run(&["scan", "-q", "--json", "--reuse", &s, "-o", &s]);
    let first = std::fs::read(&snap).expect("snapshot");
    let doc: serde_json::Value = serde_json::from_slice(&first).expect("JSON");
    let known = doc["identities"]["files"].as_array().map_or(0, Vec::len);
    assert_eq!(known as u64, doc["summary"]["files"].as_u64().expect("files"), "every file recorded");
    run(&["scan", "-q", "--json", "--reuse", &s, "-o", &a]);
    assert!(std::fs::read(&again).ok() == Some(first), "the rescan differs from the snapshot");
    for gpu in ["gfx1100", "gfx900", "all"] {
        let plain = run(&["check", "-q", "--json", "--gpu", gpu]);
        let reused = run(&["check", "-q", "--json", "--gpu", gpu, "--reuse", &s]);
        assert_eq!(plain.status.code(), reused.status.code());
        assert!(plain.stdout == reused.stdout, "check --gpu {gpu} differs with --reuse");
    }
}

/// Issue 35, item 1: `check --gpu all` on Debian's ROCm 6.4 tree fits 80 columns, and every row
/// agrees with `check --gpu TARGET` of that target: its worst status, its first library with
/// that status, how many more, and the override its hint names.
fn rocm64_check_all_agrees_with_check_of_each_gpu() {
    let Some(root) = rocm64_tree() else { return };
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"))
        .args(["check", "-q", "--gpu", "all"])
        .arg(&root)
        .env("COLUMNS", "80")
        .output()
        .expect("gfxscan runs");
    let shown = String::from_utf8_lossy(&text.stdout);
    let wide: Vec<&str> = shown.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(wide.is_empty(), "lines past 80 columns: {wide:#?}\n{shown}");
    let (code, all) = gfxscan_json(&["check", "-q", "--json", "--gpu", "all"], &root);
    assert_eq!(code, text.status.code());
    let rows = all["summary"].as_array().expect("summary rows").clone();
    assert!(rows.len() >= 30, "{rows:#?}");
    let row_facts = |r: &serde_json::Value| {
        let first = r["first"]["library"].as_str().unwrap_or("").to_string();
        let over = r["override_helps"].as_str().unwrap_or("").to_string();
        (r["status"].as_str().unwrap_or("").to_string(), first, r["more"].as_u64().unwrap_or(0), over)
    };
    let order = ["ok", "warn", "missing"];
    let check_facts = |report: &serde_json::Value| {
        let gpu = &report["installs"][0]["gpus"][0];
        let verdicts = gpu["verdicts"].as_array().expect("verdicts");
        let rank = |v: &serde_json::Value| order.iter().position(|o| v["status"] == *o).expect("a status");
        let worst = verdicts.iter().map(rank).max().unwrap_or(0);
        let same: Vec<&serde_json::Value> =
            verdicts.iter().filter(|v| worst > 0 && rank(v) == worst).collect();
        let first = same.first().and_then(|v| v["library"].as_str()).unwrap_or("").to_string();
        let hint = gpu["hints"][0].as_str().unwrap_or("");
        let over = hint.split(' ').next().filter(|w| w.contains('=')).unwrap_or("").to_string();
        (order[worst].to_string(), first, same.len().saturating_sub(1) as u64, over)
    };
    // Two at a time, as the machine has cores for.
    for pair in rows.chunks(2) {
        std::thread::scope(|s| {
            let runs: Vec<_> = pair
                .iter()
                .map(|r| {
                    let target = r["target"].as_str().expect("a target").to_string();
                    let root = &root;
                    s.spawn(move || {
                        (target.clone(), gfxscan_json(&["check", "-q", "--json", "--gpu", &target], root))
                    })
                })
                .collect();
            for (r, run) in pair.iter().zip(runs) {
                let (target, (_, one)) = run.join().expect("no panic");
                assert_eq!(row_facts(r), check_facts(&one), "{target}");
            }
        });
    }
}

/// The kernel roots of `scripts/fetch-debian-kernels.sh` (DIR/kernel), or `None` (skipped).
fn kernel_corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(corpus_dir()?).join("kernel");
    if !dir.join("truth").is_dir() {
        skipped(&format!("{} not present (run scripts/fetch-debian-kernels.sh)", dir.display()));
        return None;
    }
    Some(dir)
}

/// Each Debian amdgpu module's `.modinfo` firmware list is what Debian's own `modinfo -F
/// firmware` prints (kmod, truth independent of gfxscan): 553 names for 6.1, 646 for 6.12.
fn kernel_modinfo_matches_modinfo_truth() {
    let Some(dir) = kernel_corpus() else { return };
    let mut checked = 0;
    for (release, count) in [("6.1.0-57-amd64", 553), ("6.12.117+deb13-amd64", 646)] {
        let root = dir.join(format!("linux-{release}"));
        let modules = gfxscan::source::kernel::amdgpu_modules(&root, None);
        assert_eq!(modules.len(), 1, "{}", root.display());
        let started = std::time::Instant::now();
        let m = gfxscan::source::kernel::amdgpu_modules(&root, None).remove(0);
        let took = started.elapsed();
        let info = m.modinfo.expect("modinfo");
        let truth: Vec<String> = std::fs::read_to_string(dir.join(format!("truth/{release}.firmware")))
            .expect("truth")
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(info.firmware, truth, "{release}");
        assert_eq!(info.firmware.len(), count);
        assert_eq!(info.release(), Some(release));
        eprintln!(
            "{release}: {} firmware names, {} aliases, module read in {took:?}",
            count,
            info.aliases.len()
        );
        checked += 1;
    }
    assert_eq!(checked, 2);
}

/// The driver-and-firmware judgement on Debian's kernels and firmware: gfx1151 and gfx1201 are
/// unknown to 6.1's driver and known to 6.12's, with every required file in firmware 20250410;
/// gfx1100 is served by both; optional absences are named, never fatal.
fn debian_drivers_and_firmware_judge_each_gpu() {
    use gfxscan::check::driver::{judge, DriverOutcome, Loader};
    let Some(dir) = kernel_corpus() else { return };
    let targets = Targets::builtin();
    let judged = |root: &str, gpu: &str| {
        let root = dir.join(root);
        let m = gfxscan::source::kernel::amdgpu_modules(&root, None).remove(0);
        let info = m.modinfo.expect("modinfo");
        let release = info.release().unwrap_or_default().to_string();
        let loader = Loader::of(&release, m.config.as_deref());
        let present = |name: &str| {
            loader
                .places(name, &release)
                .iter()
                .any(|p| gfxscan::source::rooted::is_file_in_root(&root, std::path::Path::new(p)))
        };
        let t = targets.by_name(gpu).expect("target");
        judge(Some(&info), &t.firmware, &present, &Default::default())
    };
    let six1 = "linux-6.1.0-57-amd64+firmware-20230210-root";
    let six12 = "linux-6.12.117+deb13-amd64+firmware-20250410-root";
    for gpu in ["gfx1151", "gfx1201"] {
        assert_eq!(judged(six1, gpu).outcome, DriverOutcome::NotKnown, "{gpu} on 6.1");
        let j = judged(six12, gpu);
        assert_eq!(j.outcome, DriverOutcome::Ok, "{gpu} on 6.12 with 20250410: {j:?}");
        eprintln!("{gpu} on 6.12: asks {}, optional absent {:?}", j.asked.len(), j.optional_absent);
    }
    assert_eq!(judged(six12, "gfx1151").asked.len(), 7);
    // Of gfx1201's 9 declared files, `_mes.bin` and `_mes1.bin` are asked for only with
    // amdgpu.uni_mes=0 (amdgpu_mes.c amdgpu_mes_init_microcode): 7 by default.
    let j = judged(six12, "gfx1201");
    assert_eq!(j.asked.len(), 7, "{j:?}");
    assert!(j.asked.iter().any(|n| n.ends_with("gc_12_0_1_uni_mes.bin")), "{j:?}");
    // 20250410 has neither gc_11_0_3_mes.bin (asked for only without _mes_2.bin) nor
    // cyan_skillfish_gpu_info.bin (only without an IP discovery table): both GPUs are served.
    for gpu in ["gfx1101", "gfx1013"] {
        let j = judged(six12, gpu);
        assert_eq!(j.outcome, DriverOutcome::Ok, "{gpu} on 6.12 with 20250410: {j:?}");
        assert!(!j.optional_absent.is_empty(), "{gpu}: the absent fallback is named: {j:?}");
    }
    // Bookworm's own firmware (20230210) predates GC 11.0.3 (gfx1101, RX 7800 XT): down there.
    assert_eq!(judged(six1, "gfx1101").outcome, DriverOutcome::Missing);
    for root in [six1, six12] {
        let j = judged(root, "gfx1100");
        assert_eq!(j.outcome, DriverOutcome::Ok, "gfx1100 in {root}: {j:?}");
    }
    // gfx1201's gc_12_0_1_toc.bin is asked for only with amdgpu.fw_load_type=3: named if absent.
    let j = judged(six12, "gfx1201");
    assert!(
        j.optional_absent
            .iter()
            .all(|(n, _)| n.ends_with("_toc.bin") || n.contains("kicker") || n.contains("_mes")),
        "{j:?}"
    );
    // A scan's snapshot records the driver and which declared files each root holds: of 6.12's
    // 646, 21 are absent from firmware-amd-graphics 20250410 and 8 from 20260916 (the issue's
    // count, from the packages' file lists).
    for (fw, present) in [("20250410", 625), ("20260916", 638)] {
        let root = dir.join(format!("linux-6.12.117+deb13-amd64+firmware-{fw}-root"));
        let snap = scan(&whole_tree(&root), &targets, &Silent).expect("scan");
        let [d] = snap.drivers.as_slice() else { panic!("one driver: {:?}", snap.drivers) };
        assert_eq!((d.firmware.len(), d.present.len()), (646, present), "{fw}");
        assert_eq!(d.release.as_deref(), Some("6.12.117+deb13-amd64"));
        assert!(d.firmware_zstd && d.firmware_xz, "from the kernel's config");
    }
    // `check` says the same, through the snapshot: gfx1151 is down on 6.1 (exit 1), up on 6.12
    // with 20250410 (nothing else to check: exit 4).
    let (code, doc) = gfxscan_json(&["check", "--json", "-q", "--gpu", "gfx1151"], &dir.join(six1));
    assert_eq!((code, doc["drivers"][0]["outcome"].as_str()), (Some(1), Some("not-known")), "{doc:#}");
    let (code, doc) =
        gfxscan_json(&["check", "--json", "-q", "--gpu", "gfx1151,gfx1201,gfx1100"], &dir.join(six12));
    assert_eq!(code, Some(4), "{doc:#}");
    let outcomes: Vec<&str> =
        doc["drivers"].as_array().expect("drivers").iter().filter_map(|d| d["outcome"].as_str()).collect();
    assert_eq!(outcomes, ["ok", "ok", "ok"]);
    // `diff` of two roots: going back from 6.12 to 6.1 on the same firmware loses the GPUs 6.1
    // does not know (GC 9.4.3, 11.5.x, 12.0.x; gfx10's MES files are asked for only with
    // amdgpu.mes=1, so gfx1010 and gfx1030 stay).
    let (code, doc) = {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"))
            .args(["diff", "--json", "-q", "--fail-on-loss"])
            .arg(dir.join(six12))
            .arg(dir.join("linux-6.1.0-57-amd64+firmware-20250410-root"))
            .output()
            .expect("gfxscan runs");
        (out.status.code(), serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON"))
    };
    assert_eq!(code, Some(1));
    let lost: Vec<&str> = doc["losses"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["library"] == "driver:amdgpu"))
        .and_then(|c| c["targets"].as_array())
        .map(|t| t.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(lost, ["gfx942", "gfx1150", "gfx1151", "gfx1152", "gfx1200", "gfx1201"], "{doc:#}");
    // The 6.12 driver on bookworm's 2023 firmware: gfx1151's files are not there yet.
    let j = judged("linux-6.12.117+deb13-amd64+firmware-20230210-root", "gfx1151");
    assert_eq!(j.outcome, DriverOutcome::Missing, "{j:?}");
    assert!(j.dmesg().is_some_and(|l| l.contains("Direct firmware load for amdgpu/gc_11_5_1_")));
}

#[path = "corpus_harness.rs"]
mod harness;

fn main() {
    let tests: &[(&str, fn())] = &[
        ("corpus_files_match_truth_codeobjects", corpus_files_match_truth_codeobjects),
        ("debian_tree_matches_truth_codeobjects", debian_tree_matches_truth_codeobjects),
        ("rocm64_tree_matches_truth_codeobjects", rocm64_tree_matches_truth_codeobjects),
        ("rocm64_tensile_counts_match_truth", rocm64_tensile_counts_match_truth),
        ("negatives_hold_no_device_code", negatives_hold_no_device_code),
        ("kernel_counts_match_truth", kernel_counts_match_truth),
        ("tensile_counts_match_truth", tensile_counts_match_truth),
        ("miopen_records_match_truth", miopen_records_match_truth),
        ("firmware_prefix_counts_match_truth", firmware_prefix_counts_match_truth),
        ("diff_pairs_from_the_corpus", diff_pairs_from_the_corpus),
        ("debian_suites_diff_both_ways", debian_suites_diff_both_ways),
        ("debian_packages_scan_like_their_unpacked_trees", debian_packages_scan_like_their_unpacked_trees),
        ("wheels_scan_like_their_files_in_the_corpus", wheels_scan_like_their_files_in_the_corpus),
        ("lazy_indexes_name_only_files_that_are_there", lazy_indexes_name_only_files_that_are_there),
        ("rocm64_rocsolver_serves_gfx900_not_gfx906", rocm64_rocsolver_serves_gfx900_not_gfx906),
        ("cupy_rocm_4_0_pre_4_1_ids_never_load", cupy_rocm_4_0_pre_4_1_ids_never_load),
        ("absent_corpus_says_skipped_past_the_capture", absent_corpus_says_skipped_past_the_capture),
        (
            "diff_only_reading_tables_gives_a_full_scans_diff_on_real_trees",
            diff_only_reading_tables_gives_a_full_scans_diff_on_real_trees,
        ),
        (
            "check_reading_tables_gives_a_full_scans_verdicts_on_real_trees",
            check_reading_tables_gives_a_full_scans_verdicts_on_real_trees,
        ),
        ("check_exe_follows_llama_cli_to_its_gpu_code", check_exe_follows_llama_cli_to_its_gpu_code),
        ("real_debs_carry_the_purl_dpkg_deb_reads", real_debs_carry_the_purl_dpkg_deb_reads),
        ("real_wheels_carry_the_purl_their_names_state", real_wheels_carry_the_purl_their_names_state),
        ("rocm64_explain_agrees_with_scan_and_check", rocm64_explain_agrees_with_scan_and_check),
        ("every_migraphx_program_starts_as_glibc_loads_it", every_migraphx_program_starts_as_glibc_loads_it),
        ("tensorflow_rodata_bundles_match_the_bundler", tensorflow_rodata_bundles_match_the_bundler),
        ("rocm64_rocsolver_under_hip_6_4_serves_gfx906", rocm64_rocsolver_under_hip_6_4_serves_gfx906),
        (
            "rocm64_vendor_rows_cite_lists_no_older_than_the_install",
            rocm64_vendor_rows_cite_lists_no_older_than_the_install,
        ),
        ("rocm64_tree_has_no_findings", rocm64_tree_has_no_findings),
        ("rocm64_check_all_agrees_with_check_of_each_gpu", rocm64_check_all_agrees_with_check_of_each_gpu),
        (
            "rocm64_rescan_is_byte_identical_and_checks_agree",
            rocm64_rescan_is_byte_identical_and_checks_agree,
        ),
        ("kernel_modinfo_matches_modinfo_truth", kernel_modinfo_matches_modinfo_truth),
        ("debian_drivers_and_firmware_judge_each_gpu", debian_drivers_and_firmware_judge_each_gpu),
    ];
    harness::run(tests, || SKIPPED.with(|s| s.borrow_mut().take()));
}
