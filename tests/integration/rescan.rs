//! Rescans (`--reuse`, issue 38): a file unchanged since a snapshot takes its facts from it, a
//! file changed in any way is read again, and the output is byte-identical to a fresh scan's.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::determinism::busy_tree;
use crate::fixtures::{co, hip_bundle, mixed, GFX1100, GFX900};
use crate::util::{gfxscan, Run, Tree};

/// Past `gfxscan::reuse::RACY`: files written before it count as settled.
fn settle() {
    std::thread::sleep(gfxscan::reuse::RACY + Duration::from_millis(200));
}

/// `scan ROOT --json --reuse SNAP -o OUT` (quiet), with `extra` arguments.
fn rescan(tree: &Tree, snap: &Path, out: &Path, extra: &[&str]) -> Run {
    let (snap, out) = (snap.to_string_lossy(), out.to_string_lossy());
    let mut args = vec!["scan", "--json", "--reuse", &snap, "-o", &out];
    args.extend_from_slice(extra);
    let root = tree.root_str();
    args.push(&root);
    gfxscan(args)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).expect("snapshot")).expect("JSON")
}

fn without_identities(mut v: Value) -> Value {
    v.as_object_mut().expect("object").remove("identities");
    v
}

fn identity_paths(v: &Value) -> Vec<String> {
    let files = v["identities"]["files"].as_array().cloned().unwrap_or_default();
    files.iter().filter_map(|f| f["path"].as_str().map(str::to_string)).collect()
}

fn kernels_of(v: &Value, path: &str) -> Vec<u64> {
    let f = crate::util::file_record(v, path);
    f["code_objects"].as_array().expect("objects").iter().filter_map(|o| o["kernels"].as_u64()).collect()
}

struct Snaps {
    _dir: tempfile::TempDir,
    first: PathBuf,
    again: PathBuf,
}

fn snaps() -> Snaps {
    let dir = tempfile::tempdir().expect("temp dir");
    let (first, again) = (dir.path().join("first.json"), dir.path().join("again.json"));
    Snaps { _dir: dir, first, again }
}

#[test]
fn an_unchanged_rescan_is_byte_identical_to_a_fresh_scan() {
    let m = busy_tree();
    settle();
    let s = snaps();
    let first = rescan(&m.tree, &s.first, &s.first, &["-j", "3"]);
    assert_eq!(first.code, 1, "the tree has broken files: {}", first.stderr);
    assert!(first.stderr.contains("does not exist yet: every file is read"), "{}", first.stderr);
    let snap = read_json(&s.first);
    // Every plain file is recorded but those with a problem (read again each time): not
    // archives (none here), not the FIFO or the link.
    let n = snap["summary"]["files"].as_u64().expect("files");
    let troubled: std::collections::BTreeSet<&str> =
        snap["problems"].as_array().expect("problems").iter().filter_map(|p| p["path"].as_str()).collect();
    assert!(troubled.len() >= 12);
    let known = identity_paths(&snap);
    assert_eq!(known.len() + troubled.len(), n as usize);
    assert!(known.iter().all(|k| !troubled.contains(k.as_str())));
    // The facts are a plain scan's.
    let plain = m.tree.scan(&["--json"]);
    assert_eq!(without_identities(snap.clone()), plain.json());
    let again = rescan(&m.tree, &s.first, &s.again, &["-j", "1"]);
    assert_eq!(again.code, first.code);
    assert!(again.stderr.contains(&format!("knows {} files", known.len())), "{}", again.stderr);
    assert!(std::fs::read(&s.first).ok() == std::fs::read(&s.again).ok(), "a rescan differs");
}

/// An unchanged file's facts come from the snapshot, not the file: edited there, the edit is
/// what the rescan reports; once the file is touched, it is read again.
#[test]
fn unchanged_files_take_their_facts_from_the_snapshot_and_touched_ones_are_read() {
    let m = mixed();
    settle();
    let s = snaps();
    rescan(&m.tree, &s.first, &s.first, &[]).expect_code(0);
    let path = "lib/rocblas/kernels.hsaco";
    let mut edited = read_json(&s.first);
    let files = edited["files"].as_array_mut().expect("files");
    let f = files.iter_mut().find(|f| f["path"] == path).expect("record");
    f["code_objects"][0]["kernels"] = Value::from(999u64);
    std::fs::write(&s.first, serde_json::to_vec(&edited).expect("JSON")).expect("write");
    rescan(&m.tree, &s.first, &s.again, &[]).expect_code(0);
    assert_eq!(kernels_of(&read_json(&s.again), path), [999, 2, 3]);
    // Touched: the same bytes, a new modification time: read again.
    let file = std::fs::File::options().write(true).open(m.tree.path(path)).expect("open");
    file.set_modified(SystemTime::now()).expect("touch");
    rescan(&m.tree, &s.first, &s.again, &[]).expect_code(0);
    assert_eq!(kernels_of(&read_json(&s.again), path), [1, 2, 3]);
}

/// Changed in place, replaced, truncated, touched, or changed with its times set back: each is
/// read again, and the rescan says what a fresh scan says.
#[test]
fn files_changed_in_any_way_are_read_again() {
    let tree = Tree::new();
    let names = ["in-place.co", "replaced.co", "truncated.co", "touched.co", "restored.co", "same.co"];
    for n in names {
        tree.file(n, &co(GFX900, 0, 2));
    }
    settle();
    let s = snaps();
    rescan(&tree, &s.first, &s.first, &[]).expect_code(0);
    let other = co(GFX1100, 0, 2);
    assert_eq!(other.len(), co(GFX900, 0, 2).len(), "same size, other target");
    let times = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).expect("mtime");
    let set_back = |p: &Path, t: SystemTime| {
        std::fs::File::options().write(true).open(p).and_then(|f| f.set_modified(t)).expect("set time");
    };
    // In place, its modification time set back: only the change time tells.
    let p = tree.path("in-place.co");
    let t = times(&p);
    std::fs::write(&p, &other).expect("write");
    set_back(&p, t);
    // Replaced by a new file renamed over it, with the old time.
    let p = tree.path("replaced.co");
    let t = times(&p);
    let new = tree.path("new.tmp");
    std::fs::write(&new, &other).expect("write");
    set_back(&new, t);
    std::fs::rename(&new, &p).expect("rename");
    // Truncated.
    std::fs::File::options()
        .write(true)
        .open(tree.path("truncated.co"))
        .and_then(|f| f.set_len(100))
        .expect("truncate");
    // Touched.
    set_back(&tree.path("touched.co"), SystemTime::now());
    // Changed, then every time it shows set back as it was.
    let p = tree.path("restored.co");
    let t = times(&p);
    std::fs::write(&p, &other).expect("write");
    set_back(&p, t);
    let re = rescan(&tree, &s.first, &s.again, &[]);
    let fresh_out = s.first.with_file_name("fresh.json");
    let fresh = rescan(&tree, &s.first.with_file_name("absent.json"), &fresh_out, &[]);
    assert_eq!(re.code, fresh.code, "{}", re.stderr);
    let (re, fresh) = (read_json(&s.again), read_json(&fresh_out));
    assert_eq!(without_identities(re.clone()), without_identities(fresh));
    for n in ["in-place.co", "replaced.co", "restored.co"] {
        let f = crate::util::file_record(&re, n);
        assert_eq!(f["code_objects"][0]["processor"], "gfx1100", "{n} read again");
    }
    assert!(re["problems"].as_array().expect("problems").iter().any(|p| p["path"] == "truncated.co"));
    // The unchanged one is recorded (the racy rule itself: `reuse::identity`'s unit test).
    assert!(identity_paths(&re).iter().any(|p| p == "same.co"));
}

/// A snapshot that cannot vouch for these facts gives nothing, says why, and the scan reads
/// everything.
#[test]
fn a_snapshot_that_cannot_vouch_gives_nothing() {
    let m = mixed();
    settle();
    let s = snaps();
    rescan(&m.tree, &s.first, &s.first, &[]).expect_code(0);
    let fresh = read_json(&s.first);
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit); 6] = [
        ("another build of gfxscan", |v| v["identities"]["reader"] = "0.0.1+0000".into()),
        // Review finding: a file root could read and this user cannot would be taken as read.
        ("read as another user", |v| {
            v["identities"]["credentials"] = "euid=65534 egid=65534 groups=[]".into()
        }),
        ("does not say who read it", |v| {
            v["identities"].as_object_mut().expect("identities").remove("credentials");
        }),
        ("another target table", |v| v["identities"]["targets"] = "00".into()),
        ("is of other roots", |v| v["roots"][0] = "/elsewhere".into()),
        ("records no file identities", |v| {
            v.as_object_mut().expect("object").remove("identities");
        }),
    ];
    for (why, edit) in cases {
        let mut v = fresh.clone();
        // A fact that would show if it were taken.
        let files = v["files"].as_array_mut().expect("files");
        files.iter_mut().for_each(|f| f["code_objects"][0]["kernels"] = Value::from(999u64));
        edit(&mut v);
        std::fs::write(&s.again, serde_json::to_vec(&v).expect("JSON")).expect("write");
        let out = s.first.with_file_name("out.json");
        let run = rescan(&m.tree, &s.again, &out, &[]);
        assert!(run.stderr.contains(why), "{why}: {}", run.stderr);
        assert_eq!(without_identities(read_json(&out)), without_identities(fresh.clone()), "{why}");
    }
    // A snapshot that disagrees with itself (a file's size changed after gfxscan wrote it)
    // is not believed: said, and everything read.
    let mut v = fresh.clone();
    v["files"][0]["size"] = Value::from(1u64);
    std::fs::write(&s.again, serde_json::to_vec(&v).expect("JSON")).expect("write");
    let out = s.first.with_file_name("out.json");
    let run = rescan(&m.tree, &s.again, &out, &[]);
    assert!(run.stderr.contains("disagrees with itself"), "{}", run.stderr);
    assert_eq!(without_identities(read_json(&out)), without_identities(fresh.clone()));
    // Not JSON at all: said, and everything read.
    std::fs::write(&s.again, b"not a snapshot").expect("write");
    let out = s.first.with_file_name("out.json");
    let run = rescan(&m.tree, &s.again, &out, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("cannot be reused"), "{}", run.stderr);
    // A scan that takes digests takes nothing from a snapshot without them.
    let run = rescan(&m.tree, &s.first, &out, &["--digests"]);
    assert!(run.stderr.contains("has no digests"), "{}", run.stderr);
}

/// `check` and `diff` take facts from the same snapshot and say what they say without it.
#[test]
fn check_and_diff_say_the_same_with_a_reused_snapshot() {
    let m = busy_tree();
    settle();
    let s = snaps();
    rescan(&m.tree, &s.first, &s.first, &[]);
    let (root, snap) = (m.tree.root_str(), s.first.to_string_lossy().to_string());
    for gpu in ["gfx1100", "gfx900", "gfx1151"] {
        let plain = gfxscan(["check", "-q", "--json", "--gpu", gpu, &root]);
        let reused = gfxscan(["check", "-q", "--json", "--gpu", gpu, "--reuse", &snap, &root]);
        assert_eq!(plain.code, reused.code);
        assert!(plain.stdout == reused.stdout, "check --gpu {gpu} differs with --reuse");
    }
    let plain = gfxscan(["diff", "-q", "--json", &snap, &root]);
    let reused = gfxscan(["diff", "-q", "--json", "--reuse", &snap, &snap, &root]);
    assert_eq!(plain.code, reused.code);
    assert!(plain.stdout == reused.stdout, "diff differs with --reuse");
}

/// Review finding: `check` reads only the checked GPU's entries, so a whole scan's problem in an
/// entry `check` never reads must not make `check --reuse` say INCOMPLETE where `check` says OK.
#[test]
fn check_takes_no_problem_it_would_not_have_found() {
    let tree = Tree::new();
    let bundle = hip_bundle(&[("gfx1100", &co(GFX1100, 0, 2)), ("gfx1030", &crate::util::garbage(4096, 7))]);
    tree.file("lib/libx.hsaco", &bundle);
    settle();
    let s = snaps();
    let first = rescan(&tree, &s.first, &s.first, &[]);
    assert_eq!(first.code, 1, "a whole scan finds the broken entry: {}", first.stdout);
    let (root, snap) = (tree.root_str(), s.first.to_string_lossy().to_string());
    let plain = gfxscan(["check", "-q", "--json", "--gpu", "gfx1100", &root]);
    let reused = gfxscan(["check", "-q", "--json", "--gpu", "gfx1100", "--reuse", &snap, &root]);
    assert_eq!(plain.code, 0, "{}", plain.stdout);
    assert_eq!(reused.code, plain.code, "{}", reused.stdout);
    assert!(plain.stdout == reused.stdout);
}

/// Review finding: a hard link's record names the name it shares its bytes with. A folder
/// renamed, or roots named in another order, changes that name without changing the file:
/// the rescan says what a fresh scan says.
#[test]
fn hard_links_name_the_same_first_name_as_a_fresh_scan() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let bytes = hip_bundle(&[("gfx1100", &co(GFX1100, 0, 2))]);
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    std::fs::write(a.join("x.hsaco"), &bytes).expect("write");
    std::fs::hard_link(a.join("x.hsaco"), b.join("x.hsaco")).expect("link");
    settle();
    let s = snaps();
    let (snap, out) = (s.first.to_string_lossy().to_string(), s.again.to_string_lossy().to_string());
    let root = dir.path().to_string_lossy().to_string();
    let scan = |extra: &[&str]| {
        let mut args = vec!["scan", "-q", "--json"];
        args.extend_from_slice(extra);
        gfxscan(args)
    };
    scan(&["--reuse", &snap, "-o", &snap, &root]).expect_code(0);
    // `a` renamed `z`: `b` is now the first name.
    std::fs::rename(&a, dir.path().join("z")).expect("rename");
    scan(&["--reuse", &snap, "-o", &out, &root]).expect_code(0);
    let fresh = scan(&[&root]);
    assert_eq!(without_identities(read_json(&s.again)), fresh.json());
    assert_eq!(crate::util::file_record(&fresh.json(), "z/x.hsaco")["hard_link_of"]["path"], "b/x.hsaco");
    // Two roots, named in the other order.
    let (b, z) = (b.to_string_lossy().to_string(), dir.path().join("z").to_string_lossy().to_string());
    scan(&["--reuse", &snap, "-o", &snap, &b, &z]).expect_code(0);
    scan(&["--reuse", &snap, "-o", &out, &z, &b]).expect_code(0);
    assert_eq!(without_identities(read_json(&s.again)), scan(&[&z, &b]).json());
}

/// The stderr line of a rescan that found nothing changed (`reuse::Taken::Unchanged`).
const UNCHANGED: &str = "it is this scan's JSON";

/// A tree unchanged since its snapshot is not read again: the walk's `stat`s make the snapshot's
/// rescan key again, and the snapshot's document is the output, at any thread count — and it is
/// what a scan that reads every file writes.
#[test]
fn an_unchanged_tree_writes_its_snapshot_again_without_reading_it() {
    let m = mixed();
    m.tree.symlink("foo.txt", "link-to-foo");
    settle();
    let s = snaps();
    rescan(&m.tree, &s.first, &s.first, &[]).expect_code(0);
    let snap = read_json(&s.first);
    let key = snap["identities"]["rescan_key"].as_str().expect("a rescan key").to_string();
    assert_eq!(key.len(), 64);
    for j in ["1", "3"] {
        let again = rescan(&m.tree, &s.first, &s.again, &["-j", j]);
        again.expect_code(0);
        assert!(again.stderr.contains(UNCHANGED), "-j {j}: {}", again.stderr);
        assert!(std::fs::read(&s.first).ok() == std::fs::read(&s.again).ok(), "-j {j}: differs");
    }
    // What a scan that reads every file writes, with the same key.
    let fresh = s.first.with_file_name("fresh.json");
    rescan(&m.tree, &s.first.with_file_name("absent.json"), &fresh, &[]).expect_code(0);
    assert!(std::fs::read(&fresh).ok() == std::fs::read(&s.first).ok(), "a fresh scan differs");
    // The document is passed on, not made again: a fact changed in it and sealed again (as only
    // gfxscan seals) is what the rescan writes.
    let mut text = std::fs::read_to_string(&s.first).expect("snapshot");
    let sealed = snap["identities"]["document_sha256"].as_str().expect("sealed").to_string();
    text = text.replace(&sealed, gfxscan::reuse::UNSEALED).replacen("\"kernels\": 1,", "\"kernels\": 9,", 1);
    let mut bytes = text.into_bytes();
    gfxscan::reuse::seal(&mut bytes);
    std::fs::write(&s.first, &bytes).expect("write");
    let again = rescan(&m.tree, &s.first, &s.again, &[]);
    assert!(again.stderr.contains(UNCHANGED), "{}", again.stderr);
    assert!(std::fs::read(&s.again).expect("out") == bytes);
}

/// Anything a scan's JSON is made from, changed, and the scan runs: files added, removed,
/// touched, an empty folder, a link pointing elsewhere, a FIFO added or renamed, other options,
/// the root named otherwise, another output beside the JSON. Each says what a scan without the snapshot says.
#[test]
fn any_change_to_what_the_json_is_made_from_scans_again() {
    type Change = fn(&Tree);
    let changes: [(&str, Change, &[&str]); 12] = [
        // The same count of special files, under another name: a name it no longer hides.
        ("a FIFO renamed", |t| std::fs::rename(t.path("etc/pipe0"), t.path("etc/pipe1")).expect("mv"), &[]),
        // An empty folder is a fact too: a kernel's `lib/modules/<release>` is a driver record.
        ("an empty folder", |t| std::fs::create_dir_all(t.path("lib/modules/6.99.0")).expect("mkdir"), &[]),
        (
            "a file added",
            |t| {
                t.file("new.txt", b"");
            },
            &[],
        ),
        ("a file removed", |t| std::fs::remove_file(t.path("foo.txt")).expect("rm"), &[]),
        ("a file touched", |t| touch(&t.path("lib/a.co")), &[]),
        ("a link pointing elsewhere", |t| relink(t, "lib/a.co", "link-to-foo"), &[]),
        (
            "a FIFO",
            |t| {
                t.fifo("pipe");
            },
            &[],
        ),
        ("--only", |_| {}, &["--only", "gfx1100"]),
        ("--digests", |_| {}, &["--digests"]),
        ("--follow-links", |_| {}, &["--follow-links"]),
        ("a table beside the JSON", |_| {}, &["-o", "table=/dev/null"]),
        ("the root named otherwise", |_| {}, &[]),
    ];
    let trees: Vec<_> = changes
        .iter()
        .map(|_| {
            let m = mixed();
            m.tree.symlink("foo.txt", "link-to-foo");
            m.tree.fifo("etc/pipe0");
            m
        })
        .collect();
    settle();
    for ((what, change, extra), m) in changes.into_iter().zip(trees) {
        let s = snaps();
        rescan(&m.tree, &s.first, &s.first, &[]).expect_code(0);
        assert!(read_json(&s.first)["identities"]["rescan_key"].is_string(), "{what}");
        change(&m.tree);
        let root = match what {
            "the root named otherwise" => format!("{}/.", m.tree.root_str()),
            _ => m.tree.root_str(),
        };
        let (snap, out) = (s.first.to_string_lossy().to_string(), s.again.to_string_lossy().to_string());
        let mut args = vec!["scan", "--json", "--reuse", &snap, "-o", &out];
        args.extend_from_slice(extra);
        args.push(&root);
        let again = gfxscan(args.clone());
        assert!(!again.stderr.contains(UNCHANGED), "{what}: {}", again.stderr);
        let fresh_out = s.first.with_file_name("fresh.json").to_string_lossy().to_string();
        let absent = s.first.with_file_name("absent.json").to_string_lossy().to_string();
        args[3] = &absent;
        args[5] = &fresh_out;
        let fresh = gfxscan(args);
        assert_eq!(again.code, fresh.code, "{what}: {}", again.stderr);
        let (again, fresh) = (read_json(&s.again), read_json(Path::new(&fresh_out)));
        assert_eq!(without_identities(again), without_identities(fresh), "{what}");
    }
}

fn touch(p: &Path) {
    let later = SystemTime::now() + Duration::from_secs(1);
    std::fs::File::options().write(true).open(p).and_then(|f| f.set_modified(later)).expect("touch");
}

fn relink(t: &Tree, target: &str, link: &str) {
    std::fs::remove_file(t.path(link)).expect("rm link");
    t.symlink(target, link);
}

/// A snapshot changed after gfxscan wrote it is never passed on, even with its key intact: a
/// summary count edited (which no file's facts carry) is made again from the files.
#[test]
fn a_snapshot_changed_after_it_was_written_is_not_passed_on() {
    let m = mixed();
    settle();
    let s = snaps();
    rescan(&m.tree, &s.first, &s.first, &[]).expect_code(0);
    let text = std::fs::read_to_string(&s.first).expect("snapshot");
    let said = read_json(&s.first)["summary"]["files"].as_u64().expect("files");
    let edited = text.replacen(&format!("\"files\": {said},"), &format!("\"files\": {},", said + 5), 1);
    assert_ne!(edited, text);
    std::fs::write(&s.first, &edited).expect("write");
    let again = rescan(&m.tree, &s.first, &s.again, &[]);
    again.expect_code(0);
    assert!(!again.stderr.contains(UNCHANGED), "{}", again.stderr);
    assert_eq!(read_json(&s.again)["summary"]["files"].as_u64(), Some(said));
}

/// `--fail-on-findings` exits as the scan would when the tree is unchanged: 5 for an install
/// broken as shipped, whose snapshot is passed on.
#[test]
fn an_unchanged_rescan_exits_as_the_scan_does() {
    let tree = Tree::new();
    let lib = "opt/rocm/lib/rocblas/library";
    tree.file("opt/rocm/lib/librocblas.so.5.0", &crate::fixtures::host_lib(&[("gfx900", &co(GFX900, 0, 3))]));
    tree.file(
        format!("{lib}/TensileLibrary_lazy_gfx1100.dat"),
        &gfxscan::testing::tensile_index(&["gfx1100"], 2),
    );
    settle();
    let s = snaps();
    rescan(&tree, &s.first, &s.first, &["--fail-on-findings"]).expect_code(5);
    assert!(read_json(&s.first)["findings"].as_array().is_some_and(|f| !f.is_empty()));
    let again = rescan(&tree, &s.first, &s.again, &["--fail-on-findings"]);
    assert!(again.stderr.contains(UNCHANGED), "{}", again.stderr);
    again.expect_code(5);
    rescan(&tree, &s.first, &s.again, &[]).expect_code(0);
}

/// Review finding: a snapshot given as a pipe gives its bytes once. The look for an unchanged
/// tree leaves it alone, and its facts are still taken file by file.
#[test]
fn a_snapshot_read_from_a_pipe_still_gives_its_facts() {
    let m = mixed();
    settle();
    let s = snaps();
    rescan(&m.tree, &s.first, &s.first, &[]).expect_code(0);
    let bytes = std::fs::read(&s.first).expect("snapshot");
    let pipe = s.first.with_file_name("pipe.json");
    let c = std::ffi::CString::new(pipe.as_os_str().as_encoded_bytes()).expect("no NUL");
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = pipe.clone();
    // Written once; a second reader (the bug) would then find the pipe empty.
    std::thread::spawn(move || {
        let _ = std::fs::write(&writer, &bytes);
        let _ = std::fs::write(&writer, b"");
    });
    let run = rescan(&m.tree, &pipe, &s.again, &[]);
    run.expect_code(0);
    assert!(run.stderr.contains("knows "), "{}", run.stderr);
    assert!(std::fs::read(&s.first).ok() == std::fs::read(&s.again).ok());
}

/// Review finding: with `--follow-links`, a link to a FIFO counts as a special file; one added
/// changes the JSON, and so the key.
#[test]
fn a_followed_link_to_a_fifo_added_scans_again() {
    let tree = Tree::new();
    tree.file("f.co", &co(GFX900, 0, 1));
    tree.fifo("fifo");
    settle();
    let s = snaps();
    rescan(&tree, &s.first, &s.first, &["--follow-links"]).expect_code(0);
    tree.symlink("fifo", "link-to-fifo");
    let again = rescan(&tree, &s.first, &s.again, &["--follow-links"]);
    assert!(!again.stderr.contains(UNCHANGED), "{}", again.stderr);
    let fresh = s.first.with_file_name("fresh.json");
    rescan(&tree, &s.first.with_file_name("absent.json"), &fresh, &["--follow-links"]);
    assert_eq!(without_identities(read_json(&s.again)), without_identities(read_json(&fresh)));
    assert_eq!(read_json(&s.again)["summary"]["special_files"], 2);
}
