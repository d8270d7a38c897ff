//! Artifact families (Tensile, MIOpen, firmware, device-lib bitcode) on trees built here, for
//! the variants no real file in the corpus has: text, SQLite and git-lfs MIOpen databases,
//! per-arch Tensile folders, `.dat.zlib` and merged indexes, compressed firmware and firmware
//! links, names that lie (copies and links), and the `--compare` view in every format.

use std::io::Write;

use serde_json::{json, Value};

use gfxscan::families::FAMILY_ROWS;
use gfxscan::testing::{firmware_blob, host_elf, tensile_index, HostSection};

use crate::fixtures::{co, hip_bundle, GFX1030, GFX1100, GFX900, GFX90A, XNACK_ON};
use crate::util::{file_paths, problems, Tree};

const MIOPEN_DB: &str = "opt/rocm/share/miopen/db";
const ROCBLAS_LIB: &str = "opt/rocm/lib/rocblas/library";
const HIPBLASLT_LIB: &str = "opt/rocm/lib/hipblaslt/library";
const FIRMWARE: &str = "lib/firmware/amdgpu";
const BITCODE: &str = "opt/rocm/amdgcn/bitcode";

/// An SQLite database at `rel` with `table(id, solver, config, params)` holding `rows` rows.
fn sqlite_db(tree: &Tree, rel: &str, table: &str, rows: usize) {
    let path = tree.path(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("create parent folders");
    let conn = rusqlite::Connection::open(&path).expect("create sqlite db");
    conn.execute_batch(&format!(
        "CREATE TABLE {table} (id INTEGER PRIMARY KEY, solver TEXT, config TEXT, params TEXT);"
    ))
    .expect("create table");
    for i in 0..rows {
        conn.execute(
            &format!("INSERT INTO {table} (solver, config, params) VALUES (?1, ?2, ?3)"),
            (format!("Solver{i}"), format!("cfg{i}"), "1:2:3"),
        )
        .expect("insert row");
    }
    conn.close().expect("close sqlite db");
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("deflate");
    e.finish().expect("deflate")
}

fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
    enc.write_all(bytes).expect("xz");
    out.extend(enc.finish().expect("xz"));
    out
}

/// A text MIOpen database with `n` record lines.
fn text_db(n: usize) -> Vec<u8> {
    (0..n).map(|i| format!("3-32-32-5x5-{i}=ConvOclDirectFwd:{i},8,1,16\n")).collect::<String>().into_bytes()
}

/// `gfxscan scan ROOT --json`, expecting exit `code`.
#[track_caller]
fn snapshot(tree: &Tree, code: i32) -> Value {
    let (run, snap) = tree.scan_json(&[]);
    run.expect_code(code);
    snap
}

/// The `artifact` of the file record at `path`.
#[track_caller]
fn artifact<'a>(snap: &'a Value, path: &str) -> &'a Value {
    let f = crate::util::file_record(snap, path);
    assert!(f["artifact"].is_object(), "{path} has no artifact: {f:#}");
    &f["artifact"]
}

/// The link record at `path`.
#[track_caller]
fn link<'a>(snap: &'a Value, path: &str) -> &'a Value {
    let links = snap["links"].as_array().expect("links is an array");
    links.iter().find(|l| l["path"] == path).unwrap_or_else(|| panic!("no link {path:?} in {links:#?}"))
}

// ---------------------------------------------------------------------------------------------
// 1. MIOpen databases
// ---------------------------------------------------------------------------------------------

/// Text perf and find DBs (records = non-empty lines), a `_nosramecc_` name, SQLite perf and
/// kernel DBs (records = rows of `perf_db` / `kern_db`) and a git-lfs pointer standing for a
/// kernel DB; then the per-target `families` rows they fill.
#[test]
fn miopen_databases_text_sqlite_and_lfs_pointers() {
    let tree = Tree::new();
    let mut perf = text_db(3);
    perf.extend_from_slice(b"\n");
    perf.extend_from_slice(&text_db(2));
    tree.file(format!("{MIOPEN_DB}/gfx90a68.db.txt"), &perf);
    tree.file(format!("{MIOPEN_DB}/gfx1030_36.HIP.fdb.txt"), &text_db(4));
    tree.file(format!("{MIOPEN_DB}/gfx906_nosramecc_60.db.txt"), &text_db(6));
    sqlite_db(&tree, &format!("{MIOPEN_DB}/gfx1100_48.db"), "perf_db", 7);
    sqlite_db(&tree, &format!("{MIOPEN_DB}/gfx1030_36.kdb"), "kern_db", 3);
    // The source form: compressed, so no record count.
    tree.file(format!("{MIOPEN_DB}/gfx908_78.fdb.txt.bz2"), b"BZh91AY&SY\x00\x01\x02\x03");
    let oid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";
    tree.file(
        format!("{MIOPEN_DB}/gfx942.kdb"),
        format!("version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 1234\n").as_bytes(),
    );

    let snap = snapshot(&tree, 0);
    assert_eq!(
        *artifact(&snap, &format!("{MIOPEN_DB}/gfx90a68.db.txt")),
        json!({"family": "miopen", "role": "perf-db", "format": "text", "name_target": "gfx90a",
               "miopen": {"cu_count": 104, "records": 5}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{MIOPEN_DB}/gfx1030_36.HIP.fdb.txt")),
        json!({"family": "miopen", "role": "find-db", "format": "text", "name_target": "gfx1030",
               "miopen": {"cu_count": 36, "records": 4}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{MIOPEN_DB}/gfx906_nosramecc_60.db.txt")),
        json!({"family": "miopen", "role": "perf-db", "format": "text", "name_target": "gfx906",
               "name_variant": "nosramecc", "miopen": {"cu_count": 60, "records": 6}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{MIOPEN_DB}/gfx1100_48.db")),
        json!({"family": "miopen", "role": "perf-db", "format": "sqlite", "name_target": "gfx1100",
               "miopen": {"cu_count": 48, "records": 7}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{MIOPEN_DB}/gfx1030_36.kdb")),
        json!({"family": "miopen", "role": "kernel-db", "format": "sqlite", "name_target": "gfx1030",
               "miopen": {"cu_count": 36, "records": 3}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{MIOPEN_DB}/gfx942.kdb")),
        json!({"family": "miopen", "role": "kernel-db", "format": "git-lfs-pointer",
               "name_target": "gfx942", "lfs_size": 1234})
    );
    assert_eq!(
        *artifact(&snap, &format!("{MIOPEN_DB}/gfx908_78.fdb.txt.bz2")),
        json!({"family": "miopen", "role": "find-db", "format": "bzip2", "name_target": "gfx908",
               "miopen": {"cu_count": 78}})
    );
    assert_eq!(snap["summary"]["kinds"]["sqlite"], 2);
    assert_eq!(snap["summary"]["kinds"]["git-lfs-pointer"], 1);

    assert_eq!(snap["families"]["miopen-perf-db-records"], json!({"gfx90a": 5, "gfx906": 6, "gfx1100": 7}));
    assert_eq!(snap["families"]["miopen-find-db-records"], json!({"gfx1030": 4}));
    // The pointer has no records: gfx942 is not in the row at all.
    assert_eq!(snap["families"]["miopen-kernel-db-entries"], json!({"gfx1030": 3}));
    assert_eq!(snap["families"].as_object().expect("families").len(), 3, "{:#}", snap["families"]);
}

/// A `.db` whose bytes are neither SQLite nor text is no MIOpen database: not listed, not
/// counted (it used to be taken for a text DB with binary "records").
#[test]
fn miopen_db_of_binary_garbage_is_not_a_database() {
    let tree = Tree::new();
    let garbage = [0xff, 0xfe, 0x00, 0x13, b'\n', 0x80, 0x81, 0x9c, b'\n', 0x01, 0x02];
    tree.file(format!("{MIOPEN_DB}/gfx900_56.db"), &garbage);
    let snap = snapshot(&tree, 0);
    assert_eq!(snap["summary"]["kinds"]["other"], 1);
    assert!(file_paths(&snap).is_empty(), "{:#}", snap["files"]);
    assert_eq!(snap["families"], json!({}));
}

/// SQLite is opened through a `file:` URI: folder names with URI syntax (` `, `#`, `?`, `%`,
/// `&`, `=`) must reach the right file.
#[test]
fn sqlite_db_under_a_path_with_uri_characters() {
    let tree = Tree::new();
    let rel = format!("{MIOPEN_DB}/we ird#?%20&=/gfx1100_48.db");
    sqlite_db(&tree, &rel, "perf_db", 5);
    let snap = snapshot(&tree, 0);
    assert_eq!(artifact(&snap, &rel)["miopen"]["records"], 5);
    assert_eq!(snap["families"]["miopen-perf-db-records"], json!({"gfx1100": 5}));
}

/// An SQLite perf DB without a `perf_db` table: listed without records, a problem, exit 1.
#[test]
fn sqlite_db_without_its_table_is_a_problem() {
    let tree = Tree::new();
    let rel = format!("{MIOPEN_DB}/gfx90a68.db");
    sqlite_db(&tree, &rel, "config", 5);
    let snap = snapshot(&tree, 1);
    assert_eq!(
        *artifact(&snap, &rel),
        json!({"family": "miopen", "role": "perf-db", "format": "sqlite", "name_target": "gfx90a",
               "miopen": {"cu_count": 104}})
    );
    assert_eq!(problems(&snap), [(rel, "sqlite: no such table: perf_db".to_string())]);
    assert_eq!(snap["families"], json!({}));
}

/// A `.db` outside any MIOpen folder is not a MIOpen database (`.db` alone is not distinctive),
/// while `.kdb` is, wherever it lies.
#[test]
fn plain_db_suffix_needs_a_miopen_folder() {
    let tree = Tree::new();
    tree.file("var/cache/gfx90a68.db.txt", &text_db(2));
    sqlite_db(&tree, "var/cache/gfx1100_48.db", "perf_db", 2);
    sqlite_db(&tree, "var/cache/gfx1100_48.kdb", "kern_db", 2);
    let snap = snapshot(&tree, 0);
    assert_eq!(file_paths(&snap), ["var/cache/gfx1100_48.kdb"]);
    assert_eq!(artifact(&snap, "var/cache/gfx1100_48.kdb")["miopen"]["records"], 2);
}

// ---------------------------------------------------------------------------------------------
// 2. Tensile per-arch folders
// ---------------------------------------------------------------------------------------------

/// Files in `library/<target>/` and `library/<target>-xnack±/` whose names carry no target take
/// the folder's; a name that carries one keeps its own.
#[test]
fn tensile_per_arch_folders_name_the_target() {
    let tree = Tree::new();
    let sub = "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk.dat";
    tree.file(format!("{ROCBLAS_LIB}/gfx90a/{sub}"), &tensile_index(&["gfx90a"], 3));
    tree.file(format!("{ROCBLAS_LIB}/gfx90a-xnack+/Kernels.so-000.hsaco"), &co(GFX90A, XNACK_ON, 2));
    tree.file(format!("{ROCBLAS_LIB}/gfx90a-xnack-/TensileManifest.txt"), b"a.dat\nb.co\n");
    tree.file(
        format!("{ROCBLAS_LIB}/gfx90a/TensileLibrary_lazy_gfx1030.dat"),
        &tensile_index(&["gfx1030"], 1),
    );
    tree.file(format!("{ROCBLAS_LIB}/notatarget/{sub}"), &tensile_index(&["gfx900"], 1));

    let snap = snapshot(&tree, 0);
    assert_eq!(
        *artifact(&snap, &format!("{ROCBLAS_LIB}/gfx90a/{sub}")),
        json!({"family": "tensile", "role": "sub-library", "format": "msgpack",
               "name_target": "gfx90a", "tensile": {"library": "rocblas", "solutions": 3}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{ROCBLAS_LIB}/gfx90a-xnack+/Kernels.so-000.hsaco")),
        json!({"family": "tensile", "role": "source-kernels", "format": "elf",
               "name_target": "gfx90a", "name_variant": "xnack+", "content_targets": ["gfx90a"], "tensile": {"library": "rocblas"}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{ROCBLAS_LIB}/gfx90a-xnack-/TensileManifest.txt")),
        json!({"family": "tensile", "role": "manifest", "format": "text",
               "name_target": "gfx90a", "name_variant": "xnack-", "tensile": {"library": "rocblas"}})
    );
    // The name wins over the folder.
    assert_eq!(
        *artifact(&snap, &format!("{ROCBLAS_LIB}/gfx90a/TensileLibrary_lazy_gfx1030.dat")),
        json!({"family": "tensile", "role": "lazy-index", "format": "msgpack",
               "name_target": "gfx1030", "content_targets": ["gfx1030"], "tensile": {"library": "rocblas"}})
    );
    // A folder that names no target gives none.
    let none = artifact(&snap, &format!("{ROCBLAS_LIB}/notatarget/{sub}"));
    assert_eq!((none["role"].as_str(), none.get("name_target")), (Some("sub-library"), None), "{none:#}");
    assert_eq!(snap["families"]["rocblas-files"], json!({"gfx90a": 3, "gfx1030": 1}));
    assert_eq!(snap["mismatches"], json!([]));
}

// ---------------------------------------------------------------------------------------------
// 3. `.dat.zlib` and the merged index
// ---------------------------------------------------------------------------------------------

#[test]
fn tensile_zlib_lazy_index_and_merged_index_serve_their_hardware_rows() {
    let tree = Tree::new();
    let lazy = zlib(&tensile_index(&["gfx1100"], 50));
    tree.file(format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat.zlib"), &lazy);
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary.dat"), &tensile_index(&["gfx90a", "gfx1030"], 2000));

    let snap = snapshot(&tree, 0);
    assert_eq!(
        *artifact(&snap, &format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat.zlib")),
        json!({"family": "tensile", "role": "lazy-index", "format": "zlib",
               "name_target": "gfx1100", "content_targets": ["gfx1100"], "tensile": {"library": "hipblaslt"}})
    );
    assert_eq!(snap["summary"]["kinds"]["zlib"], 1);
    assert_eq!(
        *artifact(&snap, &format!("{ROCBLAS_LIB}/TensileLibrary.dat")),
        json!({"family": "tensile", "role": "merged-index", "format": "msgpack",
               "content_targets": ["gfx90a", "gfx1030"], "tensile": {"library": "rocblas"}})
    );
    assert_eq!(snap["families"]["rocblas-files"], json!({"gfx90a": 1, "gfx1030": 1}));
    assert_eq!(snap["families"]["hipblaslt-files"], json!({"gfx1100": 1}));
    assert_eq!(snap["mismatches"], json!([]));
}

/// A `.dat.zlib` whose stream is cut short is still listed, with a problem, and serves no target:
/// Tensile's `LoadLibraryFile` loads nothing from it (issue 33: not counted by its name).
#[test]
fn truncated_dat_zlib_is_a_problem() {
    let tree = Tree::new();
    let lazy = zlib(&tensile_index(&["gfx1100"], 50));
    let rel = format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat.zlib");
    tree.file(&rel, &lazy[..lazy.len() / 2]);
    let snap = snapshot(&tree, 1);
    let a = artifact(&snap, &rel);
    assert_eq!((a["format"].as_str(), &a["content_targets"]), (Some("zlib"), &json!([])), "{a:#}");
    assert_eq!(a["tensile"]["unreadable"], true, "{a:#}");
    let p = problems(&snap);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, rel);
    assert!(p[0].1.starts_with("Tensile index: "), "{p:?}");
    // Counted for no target.
    assert!(snap["families"].get("hipblaslt-files").is_none(), "{:#}", snap["families"]);
}

// ---------------------------------------------------------------------------------------------
// 4. Firmware
// ---------------------------------------------------------------------------------------------

fn header(ucode: u32, ip: (u16, u16), size: u32) -> Value {
    json!({"ucode_version": ucode, "header_version": [1, 0], "ip_version": [ip.0, ip.1],
           "ucode_size": size - 256, "crc32": 0xdead_beef_u32})
}

#[test]
fn compressed_firmware_prefixes_headers_and_links() {
    let tree = Tree::new();
    tree.file(
        format!("{FIRMWARE}/vega10_me.bin.zst"),
        &zstd::bulk::compress(&firmware_blob(167, (9, 0), 4096), 3).expect("zstd"),
    );
    tree.file(format!("{FIRMWARE}/gc_11_0_0_mec.bin.xz"), &xz(&firmware_blob(530, (11, 0), 8192)));
    tree.file(format!("{FIRMWARE}/vega10_pfp.bin"), &firmware_blob(185, (9, 0), 2048));
    tree.file(format!("{FIRMWARE}/psp_13_0_0_sos.bin"), &firmware_blob(0x0027_0001, (13, 0), 1024));
    tree.symlink("vega10_me.bin.zst", format!("{FIRMWARE}/vega10_mec2.bin"));

    let snap = snapshot(&tree, 0);
    assert_eq!(
        *artifact(&snap, &format!("{FIRMWARE}/vega10_me.bin.zst")),
        json!({"family": "firmware", "role": "blob", "format": "zstd", "name_target": "gfx900",
               "firmware": {"prefix": "vega10", "dir": "amdgpu", "header": header(167, (9, 0), 4096)}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{FIRMWARE}/gc_11_0_0_mec.bin.xz")),
        json!({"family": "firmware", "role": "blob", "format": "xz", "name_target": "gfx1100",
               "firmware": {"prefix": "gc_11_0_0", "dir": "amdgpu", "header": header(530, (11, 0), 8192)}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{FIRMWARE}/vega10_pfp.bin")),
        json!({"family": "firmware", "role": "blob", "format": "raw", "name_target": "gfx900",
               "firmware": {"prefix": "vega10", "dir": "amdgpu", "header": header(185, (9, 0), 2048)}})
    );
    assert_eq!(
        *artifact(&snap, &format!("{FIRMWARE}/psp_13_0_0_sos.bin")),
        json!({"family": "firmware", "role": "blob", "format": "raw",
               "firmware": {"prefix": "psp_13_0_0", "dir": "amdgpu", "header": header(0x0027_0001, (13, 0), 1024)}})
    );

    // The link is listed among links, with what its name says, and not among files.
    let l = link(&snap, &format!("{FIRMWARE}/vega10_mec2.bin"));
    assert_eq!(l["target"], "vega10_me.bin.zst");
    assert_eq!(l["artifact"]["family"], "firmware");
    assert_eq!(l["artifact"]["firmware"]["prefix"], "vega10");
    assert_eq!(l["artifact"]["name_target"], "gfx900");
    assert!(!file_paths(&snap).iter().any(|p| p.ends_with("vega10_mec2.bin")), "{:?}", file_paths(&snap));
    assert_eq!(snap["links"].as_array().map(Vec::len), Some(1));
    assert_eq!(snap["summary"]["symlinks"], 1);

    // Two regular vega10 files; the link is not counted, the psp blob names no target.
    assert_eq!(snap["families"]["firmware-blobs"], json!({"gfx900": 2, "gfx1100": 1}));
    assert_eq!(snap["mismatches"], json!([]));
}

/// A `.bin.zst` / `.bin.xz` with the right magic and a broken stream: listed, no header, a
/// problem, exit 1.
#[test]
fn corrupt_compressed_firmware_is_a_problem() {
    let tree = Tree::new();
    let mut zst = b"\x28\xb5\x2f\xfd".to_vec();
    zst.extend_from_slice(&[0x5a; 60]);
    tree.file(format!("{FIRMWARE}/vega10_me.bin.zst"), &zst);
    let mut x = b"\xfd7zXZ\0".to_vec();
    x.extend_from_slice(&[0xa5; 60]);
    tree.file(format!("{FIRMWARE}/gc_11_0_0_mec.bin.xz"), &x);

    let snap = snapshot(&tree, 1);
    let zs = artifact(&snap, &format!("{FIRMWARE}/vega10_me.bin.zst"));
    assert_eq!(
        (zs["format"].as_str(), zs.get("firmware").and_then(|f| f.get("header"))),
        (Some("zstd"), None),
        "{zs:#}"
    );
    let xa = artifact(&snap, &format!("{FIRMWARE}/gc_11_0_0_mec.bin.xz"));
    assert_eq!(
        (xa["format"].as_str(), xa.get("firmware").and_then(|f| f.get("header"))),
        (Some("xz"), None),
        "{xa:#}"
    );
    let p = problems(&snap);
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(p[0].0, format!("{FIRMWARE}/gc_11_0_0_mec.bin.xz"));
    assert!(p[0].1.starts_with("compressed firmware: xz: "), "{p:?}");
    assert_eq!(p[1].0, format!("{FIRMWARE}/vega10_me.bin.zst"));
    assert!(p[1].1.starts_with("compressed firmware: zstd: "), "{p:?}");
    // Still counted by name.
    assert_eq!(snap["families"]["firmware-blobs"], json!({"gfx900": 1, "gfx1100": 1}));
}

/// A `.bin.zst` that is not zstd at all: listed as the raw blob it is, and reported, since the
/// kernel's loader would not inflate it.
#[test]
fn firmware_named_zst_without_zstd_data_is_a_problem() {
    let tree = Tree::new();
    tree.file(format!("{FIRMWARE}/vega10_me.bin.zst"), &[0x5a; 64]);
    let snap = snapshot(&tree, 1);
    assert_eq!(
        *artifact(&snap, &format!("{FIRMWARE}/vega10_me.bin.zst")),
        json!({"family": "firmware", "role": "blob", "format": "raw", "name_target": "gfx900", "firmware": {"prefix": "vega10", "dir": "amdgpu"}})
    );
    assert_eq!(
        problems(&snap),
        [(
            format!("{FIRMWARE}/vega10_me.bin.zst"),
            "named as compressed firmware, but holds no zstd or xz data".to_string()
        )]
    );
}

/// Firmware names outside `firmware/amdgpu` or `firmware/radeon` are not firmware.
#[test]
fn firmware_needs_a_firmware_folder() {
    let tree = Tree::new();
    tree.file("tmp/amdgpu/vega10_me.bin", &firmware_blob(1, (9, 0), 1024));
    tree.file("lib/firmware/radeon/tahiti_me.bin", &[0x11; 256]);
    tree.file("lib/firmware/updates/amdgpu/vega10_me.bin", &firmware_blob(2, (9, 0), 1024));
    let snap = snapshot(&tree, 0);
    assert_eq!(
        file_paths(&snap),
        ["lib/firmware/radeon/tahiti_me.bin", "lib/firmware/updates/amdgpu/vega10_me.bin"]
    );
    assert_eq!(artifact(&snap, "lib/firmware/updates/amdgpu/vega10_me.bin")["name_target"], "gfx900");
    assert_eq!(
        *artifact(&snap, "lib/firmware/radeon/tahiti_me.bin"),
        json!({"family": "firmware", "role": "blob", "format": "raw", "name_target": "gfx600", "firmware": {"prefix": "tahiti", "dir": "radeon"}})
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Names that lie
// ---------------------------------------------------------------------------------------------

/// (a) a copy named for gfx1010 holding gfx1030 code; (b) a link named for gfx1010 leading to a
/// gfx1030 index; (c) honest links (name and content agree), which are no mismatch.
fn lying_tree() -> Tree {
    let tree = Tree::new();
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_gfx1010.co"), &co(GFX1030, 0, 2));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat"), &tensile_index(&["gfx1030"], 1));
    tree.symlink("TensileLibrary_lazy_gfx1030.dat", format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat"));
    tree.file(format!("{ROCBLAS_LIB}/gfx1100/TensileLibrary_gfx1100.co"), &co(GFX1100, 0, 1));
    tree.symlink("gfx1100/TensileLibrary_gfx1100.co", format!("{ROCBLAS_LIB}/TensileLibrary_gfx1100.co"));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx90a.dat"), &tensile_index(&["gfx90a"], 1));
    tree.symlink(
        "../library/TensileLibrary_lazy_gfx90a.dat",
        format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx90a-xnack+.dat"),
    );
    tree
}

#[test]
fn names_that_lie_copies_and_links() {
    let tree = lying_tree();
    let snap = snapshot(&tree, 0);
    let root = tree.root_str();
    assert_eq!(
        snap["mismatches"],
        json!([
            {"root": 0, "path": format!("{ROCBLAS_LIB}/TensileLibrary_gfx1010.co"),
             "name_target": "gfx1010", "content_targets": ["gfx1030"]},
            {"root": 0, "path": format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat"),
             "name_target": "gfx1010", "content_targets": ["gfx1030"],
             "via_link": format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat")},
        ]),
        "{:#}",
        snap["mismatches"]
    );
    // The copy counts for what it holds, not for what it is called.
    assert_eq!(snap["families"]["rocblas-files"], json!({"gfx1030": 2, "gfx90a": 1, "gfx1100": 1}));
    let paths: Vec<&str> =
        snap["links"].as_array().expect("links").iter().filter_map(|l| l["path"].as_str()).collect();
    assert_eq!(
        paths,
        [
            format!("{ROCBLAS_LIB}/TensileLibrary_gfx1100.co"),
            format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat"),
            format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx90a-xnack+.dat"),
        ]
    );

    let want = [
        format!("  {root}/{ROCBLAS_LIB}/TensileLibrary_gfx1010.co: named for gfx1010, but serves gfx1030"),
        format!(
            "  {root}/{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat (a link to \
             {ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat): named for gfx1010, but serves gfx1030"
        ),
    ];
    // Without a width limit, one line per name.
    let run = tree.scan(&["--compare", "gfx1010,gfx1030", "--wide"]);
    run.expect_code(0);
    let at = run.stdout.find("Names that lie (2):").unwrap_or_else(|| panic!("{}", run.stdout));
    let lines: Vec<&str> = run.stdout[at..].lines().skip(1).collect();
    assert_eq!(lines, want, "{}", run.stdout);
    // Fitted to 100 columns, each entry wraps at spaces and continues under a 4-space indent.
    let run = tree.scan(&["--compare", "gfx1010,gfx1030"]);
    run.expect_code(0);
    let at = run.stdout.find("Names that lie (2):").unwrap_or_else(|| panic!("{}", run.stdout));
    let lines: Vec<&str> = run.stdout[at..].lines().skip(1).collect();
    assert!(lines.len() > 2, "these entries are longer than 100 columns:\n{}", run.stdout);
    assert!(lines.iter().all(|l| l.chars().count() <= 100 && *l == l.trim_end()), "{}", run.stdout);
    let mut entries: Vec<String> = Vec::new();
    for line in &lines {
        match (line.strip_prefix("    "), entries.last_mut()) {
            (Some(more), Some(entry)) => {
                assert!(!more.starts_with(' '), "{line:?}");
                entry.push(' ');
                entry.push_str(more);
            }
            _ => {
                assert!(line.starts_with("  /"), "{line:?}");
                entries.push(line.to_string());
            }
        }
    }
    assert_eq!(entries, want, "{}", run.stdout);
    let md = tree.scan(&["--compare", "gfx1010", "--format", "markdown"]);
    md.expect_code(0);
    assert!(md.stdout.contains("### Names that lie (2):\n- "), "{}", md.stdout);
}

/// A link's content is not read, so its artifact cannot have a content format: docs/schema.md
/// lists `link` among the formats, and `family::detect_link` builds `format: "link"` for links
/// to Tensile code files ("Links to code files carry no content kind of their own"). That branch
/// is never reached (`detect` already accepts every such name, as if its content were
/// MessagePack), so a link named `.co` says `"format": "msgpack"`. Fails until fixed.
#[test]
fn tensile_links_have_format_link() {
    let tree = lying_tree();
    let snap = snapshot(&tree, 0);
    let formats: Vec<(&str, &str)> = snap["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| (l["path"].as_str().unwrap_or(""), l["artifact"]["format"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        formats,
        [
            (format!("{ROCBLAS_LIB}/TensileLibrary_gfx1100.co").as_str(), "link"),
            (format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1010.dat").as_str(), "link"),
            (format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx90a-xnack+.dat").as_str(), "link"),
        ]
    );
}

/// docs/schema.md: "Only content convicts a name: a link to a file known only by its own name
/// (firmware blobs, which linux-firmware shares across chips on purpose) is never a mismatch."
#[test]
fn links_to_files_known_only_by_name_are_no_mismatch() {
    let tree = Tree::new();
    // linux-firmware style: one chip's blob linked under another chip's name.
    tree.file(format!("{FIRMWARE}/raven_me.bin"), &firmware_blob(1, (9, 1), 1024));
    tree.symlink("raven_me.bin", format!("{FIRMWARE}/vega10_me.bin"));
    // A Tensile sub-library (content not read) linked under another target's name.
    let sub = "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk";
    tree.file(format!("{ROCBLAS_LIB}/{sub}_gfx1030.dat"), &tensile_index(&["gfx1030"], 1));
    tree.symlink(format!("{sub}_gfx1030.dat"), format!("{ROCBLAS_LIB}/{sub}_gfx1031.dat"));
    let snap = snapshot(&tree, 0);
    assert_eq!(snap["links"].as_array().map(Vec::len), Some(2), "{:#}", snap["links"]);
    assert_eq!(snap["mismatches"], json!([]), "{:#}", snap["mismatches"]);
}

// ---------------------------------------------------------------------------------------------
// 6. Device-lib bitcode
// ---------------------------------------------------------------------------------------------

#[test]
fn device_lib_bitcode_needs_bitcode_content() {
    let tree = Tree::new();
    let mut bc = b"BC\xC0\xDE".to_vec();
    bc.extend_from_slice(&[0x35, 0x14, 0, 0, 5, 0, 0, 0, 0x62, 0x0c, 0x30, 0x24]);
    tree.file(format!("{BITCODE}/oclc_isa_version_1030.bc"), &bc);
    tree.file(format!("{BITCODE}/oclc_isa_version_9999.bc"), &bc);
    tree.file(format!("other/{BITCODE}/oclc_isa_version_1030.bc"), b"; ModuleID = 'not bitcode'\n");
    tree.file(format!("{BITCODE}/ocml.bc"), &bc);

    let snap = snapshot(&tree, 0);
    assert_eq!(
        file_paths(&snap),
        [format!("{BITCODE}/oclc_isa_version_1030.bc"), format!("{BITCODE}/oclc_isa_version_9999.bc")]
    );
    assert_eq!(
        *artifact(&snap, &format!("{BITCODE}/oclc_isa_version_1030.bc")),
        json!({"family": "bitcode", "role": "isa", "format": "bitcode", "name_target": "gfx1030"})
    );
    assert_eq!(
        *artifact(&snap, &format!("{BITCODE}/oclc_isa_version_9999.bc")),
        json!({"family": "bitcode", "role": "isa", "format": "bitcode"})
    );
    assert_eq!(snap["summary"]["kinds"]["llvm-bitcode"], 3);
    assert_eq!(snap["families"], json!({"device-lib-bitcode": {"gfx1030": 1}}));
}

// ---------------------------------------------------------------------------------------------
// 7. `--compare`
// ---------------------------------------------------------------------------------------------

/// One or two of every family for gfx900 and gfx1100, plus gfx1030 and gfx90a files that a
/// comparison of gfx900 and gfx1100 must leave out.
fn compare_tree() -> Tree {
    let tree = Tree::new();
    let host = host_elf(&[HostSection::hip_fatbin(&hip_bundle(&[
        ("gfx900", &co(GFX900, 0, 1)),
        ("gfx1100", &co(GFX1100, 0, 1)),
    ]))]);
    tree.file("opt/rocm/lib/libamdhip64.so", &host);
    tree.file("opt/rocm/lib/kernels/vadd.co", &co(GFX900, 0, 3));
    tree.file("opt/rocm/lib/kernels/vadd90a.co", &co(GFX90A, 0, 3));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx900.dat"), &tensile_index(&["gfx900"], 2));
    tree.file(format!("{ROCBLAS_LIB}/TensileLibrary_lazy_gfx1030.dat"), &tensile_index(&["gfx1030"], 2));
    tree.file(
        format!("{HIPBLASLT_LIB}/TensileLibrary_lazy_gfx1100.dat.zlib"),
        &zlib(&tensile_index(&["gfx1100"], 2)),
    );
    tree.file(format!("{MIOPEN_DB}/gfx900_56.db.txt"), &text_db(3));
    tree.file(format!("{MIOPEN_DB}/gfx1100_48.HIP.fdb.txt"), &text_db(2));
    sqlite_db(&tree, &format!("{MIOPEN_DB}/gfx900_56.kdb"), "kern_db", 4);
    tree.file(format!("{MIOPEN_DB}/gfx1100.tn.model"), b"{\"model\": 1}\n");
    tree.file(format!("{FIRMWARE}/vega10_me.bin"), &firmware_blob(1, (9, 0), 1024));
    tree.file(format!("{FIRMWARE}/gc_11_0_0_mec.bin"), &firmware_blob(2, (11, 0), 1024));
    tree.file(format!("{FIRMWARE}/gc_11_0_0_pfp.bin"), &firmware_blob(3, (11, 0), 1024));
    let bc = b"BC\xC0\xDE\x35\x14\0\0";
    tree.file(format!("{BITCODE}/oclc_isa_version_900.bc"), bc);
    tree.file(format!("{BITCODE}/oclc_isa_version_1100.bc"), bc);
    tree.file(
        "lib/aotriton.images/amd-gfx90a/flash/attn_fwd/FONLY__x___gfx90a.aks2",
        &gfxscan::parse::aotriton::testing::aks2(&[("attn_fwd--Arch_gfx90a", b"\x7fELF")]),
    );
    tree
}

/// `(row key, gfx900, gfx1100)` the compare tree holds.
const WANT: [(&str, u64, u64); 13] = [
    ("host-library-code-objects", 1, 1),
    ("standalone-code-objects", 1, 0),
    ("runtime-internal-code-objects", 0, 0),
    ("rocblas-files", 1, 0),
    ("hipblaslt-files", 0, 1),
    ("miopen-perf-db-records", 3, 0),
    ("miopen-find-db-records", 0, 2),
    ("miopen-kernel-db-entries", 4, 0),
    ("miopen-tuning-models", 0, 1),
    ("miopen-unread-find-db-records", 0, 0),
    ("firmware-blobs", 1, 2),
    ("device-lib-bitcode", 1, 1),
    ("aotriton-kernel-archives", 0, 0),
];

#[test]
fn compare_rows_follow_family_rows() {
    let keys: Vec<&str> = FAMILY_ROWS.iter().map(|r| r.key).collect();
    let want: Vec<&str> = WANT.iter().map(|(k, _, _)| *k).collect();
    assert_eq!(keys, want, "FAMILY_ROWS changed: update WANT");
}

#[test]
fn compare_csv_has_exact_counts() {
    let tree = compare_tree();
    let run = tree.scan(&["--compare", "gfx900,gfx1100", "--format", "csv"]);
    run.expect_code(0);
    let mut want = String::from("family,gfx900,gfx1100\n");
    for (k, a, b) in WANT {
        want.push_str(&format!("{k},{a},{b}\n"));
    }
    assert_eq!(run.stdout, want);
    // Targets keep the order they were asked in.
    let swapped = tree.scan(&["--compare", "gfx1100,gfx900", "--format", "csv"]);
    let mut want = String::from("family,gfx1100,gfx900\n");
    for (k, a, b) in WANT {
        want.push_str(&format!("{k},{b},{a}\n"));
    }
    assert_eq!(swapped.stdout, want);
}

#[test]
fn compare_table_and_markdown() {
    let tree = compare_tree();
    let run = tree.scan(&["--compare", "gfx900,gfx1100"]);
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with(&format!("gfxscan {} · 1 root · ", env!("CARGO_PKG_VERSION"))),
        "{}",
        lines[0]
    );
    let at = lines.iter().position(|l| l.contains("LAYER")).unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(lines[at].split_whitespace().collect::<Vec<_>>(), ["LAYER", "gfx900", "gfx1100"]);
    let body = &lines[at + 1..at + 1 + FAMILY_ROWS.len()];
    for (line, (row, (key, a, b))) in body.iter().zip(FAMILY_ROWS.iter().zip(WANT)) {
        let label = row.label;
        let rest = line.trim_start().strip_prefix(label).unwrap_or_else(|| panic!("{key}: {line:?}"));
        let cell = |n: u64| if n == 0 { "—".to_string() } else { n.to_string() };
        assert_eq!(rest.split_whitespace().collect::<Vec<_>>(), [cell(a), cell(b)], "{key}: {line:?}");
    }
    assert!(lines.get(at + 1 + FAMILY_ROWS.len()).is_none_or(|l| l.trim().is_empty()), "{}", run.stdout);
    assert!(!run.stdout.contains("Names that lie"), "{}", run.stdout);

    let md = tree.scan(&["--compare", "gfx900,gfx1100", "--format", "markdown"]);
    md.expect_code(0);
    let rows: Vec<Vec<&str>> = md
        .stdout
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 2 + FAMILY_ROWS.len(), "{}", md.stdout);
    assert_eq!(rows[0], ["layer", "gfx900", "gfx1100"]);
    assert!(rows[1].iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')), "{:?}", rows[1]);
    for (row, (fam, (_, a, b))) in rows[2..].iter().zip(FAMILY_ROWS.iter().zip(WANT)) {
        let label = fam.label;
        let cell = |n: u64| if n == 0 { "—".to_string() } else { n.to_string() };
        assert_eq!(*row, [label.to_string(), cell(a), cell(b)]);
    }
}

#[test]
fn compare_json_keeps_exactly_the_compared_targets() {
    let tree = compare_tree();
    let run = tree.scan(&["--compare", "gfx900,gfx1100", "--json"]);
    run.expect_code(0);
    let snap = run.json();
    let mut want = serde_json::Map::new();
    for (k, a, b) in WANT {
        want.insert(k.to_string(), json!({"gfx900": a, "gfx1100": b}));
    }
    assert_eq!(snap["families"], Value::Object(want));
    // The rest of the snapshot is the plain scan's.
    let (_, plain) = tree.scan_json(&[]);
    assert_eq!(plain["files"], snap["files"]);
    assert_eq!(plain["families"]["rocblas-files"], json!({"gfx900": 1, "gfx1030": 1}));
    assert_eq!(plain["families"]["standalone-code-objects"], json!({"gfx900": 1, "gfx90a": 1}));
}

#[test]
fn compare_unknown_target_is_fatal() {
    let tree = compare_tree();
    let run = tree.scan(&["--compare", "gfx9999"]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("--compare: unknown GPU target \"gfx9999\""), "{}", run.stderr);
}

#[test]
fn compare_without_targets_lists_those_present_in_the_natural_order() {
    let tree = compare_tree();
    let run = tree.scan(&["--compare", "--format", "csv"]);
    run.expect_code(0);
    let header = run.stdout.lines().next().expect("header");
    // Generation, then number: not the alphabetical order, nor EF_AMDGPU_MACH's.
    assert_eq!(header, "family,gfx900,gfx90a,gfx1030,gfx1100");
    assert_eq!(run.stdout.lines().count(), 1 + FAMILY_ROWS.len());
    // At 100 columns the labels are cut ("…") to leave room for the targets; blocks of targets
    // come only when even that is not enough. Read in turn, they give the targets in order.
    let table = tree.scan(&["--compare"]);
    table.expect_code(0);
    let heads: Vec<Vec<&str>> = table
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("LAYER"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(table.stdout.contains('…'), "long labels are cut to fit:\n{}", table.stdout);
    assert!(heads.iter().all(|h| h[0] == "LAYER" && h.len() > 1), "{heads:?}");
    let across: Vec<&str> = heads.iter().flat_map(|h| h[1..].iter().copied()).collect();
    assert_eq!(across, ["gfx900", "gfx90a", "gfx1030", "gfx1100"], "{}", table.stdout);
    assert!(table.stdout.lines().all(|l| l.chars().count() <= 100), "{}", table.stdout);
    // Without a width limit, one block holds them all.
    let wide = tree.scan(&["--compare", "--wide"]);
    wide.expect_code(0);
    let heads: Vec<&str> = wide.stdout.lines().filter(|l| l.trim_start().starts_with("LAYER")).collect();
    assert_eq!(heads.len(), 1, "{}", wide.stdout);
    assert_eq!(
        heads[0].split_whitespace().collect::<Vec<_>>(),
        ["LAYER", "gfx900", "gfx90a", "gfx1030", "gfx1100"]
    );
}

/// Nothing outside the families: the view still has every row, and every cell is a dash.
#[test]
fn compare_on_a_tree_without_artifacts() {
    let tree = Tree::new();
    tree.file("readme.txt", b"nothing here");
    let run = tree.scan(&["--compare", "gfx900", "--format", "csv"]);
    run.expect_code(0);
    let want: String = std::iter::once("family,gfx900\n".to_string())
        .chain(FAMILY_ROWS.iter().map(|r| format!("{},0\n", r.key)))
        .collect();
    assert_eq!(run.stdout, want);
}
