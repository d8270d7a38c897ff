//! Rescans (`--reuse`): a file unchanged since an earlier snapshot of its root takes the facts
//! that snapshot holds instead of being read again, as git's index spares the files whose
//! `stat` has not changed.
//!
//! Unchanged means the same device, inode, size, and modification and change times to the
//! nanosecond (no user can set a change time back). Three rules keep that sound:
//! - a file whose times lie within [`RACY`] of the start of the scan that read it is not
//!   recorded: changed again within its file system's timestamp granularity after being read,
//!   it could keep its times and size. This is git's racy-git rule (`is_racy_timestamp` in
//!   git's read-cache.c), applied when the snapshot is written rather than when it is read:
//!   git compares with the index file's own time, which a copied snapshot does not keep;
//! - facts depend on the code that read them, on the target table and on who read them: a
//!   snapshot made by another build ([`reader`]), with another table or as another user or
//!   groups gives nothing, and neither does one without digests to a scan that takes them;
//! - facts must be what this scan would find: a scan that reads less (`check`) takes only facts
//!   without problems (a whole scan finds problems in entries `check` never reads), and a file
//!   with several names only when the name it shares its bytes with is the one this scan gives
//!   (a renamed folder or reordered roots change it without changing the file);
//! - only what may not change without its `stat` changing is recorded: not an archive (its facts
//!   span its members), not a file whose facts hold a problem (it may be a passing I/O error).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::inspect::FileOutcome;
use crate::model::{FileIdentity, FileRecord, Identities, RelPath, ReleaseSignal, Snapshot};
use crate::parse::magic::Kind;
use crate::source::digest::hex;
use crate::source::file::FileId;
use crate::source::walk::Stat;
use crate::vocab::targets::Targets;

/// How long before a scan's start a file must have last changed to be recorded.
pub const RACY: Duration = Duration::from_secs(2);

/// The build that reads facts: its version and a digest of its sources (`build.rs`).
pub fn reader() -> String {
    format!("{}+{}", env!("CARGO_PKG_VERSION"), env!("GFXSCAN_SOURCES"))
}

/// What earlier snapshots hold of one file.
#[derive(Debug)]
struct Kept {
    id: FileId,
    kind: Kind,
    record: Option<FileRecord>,
    problems: Vec<String>,
    declared_targets: Option<Vec<String>>,
    release: Option<(ReleaseSignal, String)>,
}

/// What a scan would find of a file, besides its facts: what facts taken from a snapshot must
/// agree with.
#[derive(Debug, Clone, Copy)]
pub struct Want<'a> {
    /// For each root of this scan, its index in [`Earlier`] ([`Earlier::roots_of`]).
    pub roots: &'a [Option<usize>],
    /// The scan reads less than a whole scan (`check`, `diff --only`: `parse::Depth::Tables`):
    /// it would not find every problem a whole scan finds, so only facts without problems
    /// are taken.
    pub clean: bool,
    /// The name this scan gives as the one the file shares its bytes with (`hard_link_of`):
    /// the first in path order of the names with its inode, `None` for that first name or a
    /// file with one name. A record that says otherwise (a folder renamed, roots reordered)
    /// is not taken.
    pub hard_link_of: Option<&'a RelPath>,
}

/// The facts earlier snapshots hold, by root name and path.
#[derive(Debug, Default)]
pub struct Earlier {
    /// The roots, as named.
    roots: Vec<String>,
    /// Each file, its root an index into `roots`; taken out when used (each path is met once).
    files: HashMap<RelPath, Mutex<Option<Kept>>>,
}

/// Why a snapshot given to `--reuse` gives nothing, or how much it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// It does not exist (yet: the first scan writes it).
    Absent,
    /// It could not be read as a snapshot (why).
    Unreadable(String),
    /// It records no identities: not written by a scan with `--reuse`.
    NoIdentities,
    /// Another build of gfxscan read its facts (its build is named).
    OtherReader(String),
    /// Its facts were read with another target table.
    OtherTargets,
    /// Its files were read as another user, or with other groups or capabilities (those named;
    /// empty when it does not say): a file this scan may not open would be taken as read.
    OtherCredentials(String),
    /// It has no digests and this scan takes them.
    NoDigests,
    /// None of its roots is a root of this scan.
    OtherRoots,
    /// This many files' identities were taken.
    Files(usize),
    /// Nothing changed since it was written: its document is this scan's (`cmd::scan`).
    Unchanged,
}

impl Earlier {
    /// What `snapshots` hold for the roots of this scan (`roots`, as given: a root is the same
    /// when it is named the same), and for each snapshot what it gave.
    pub fn of(
        snapshots: Vec<Snapshot>,
        roots: &[String],
        targets: &Targets,
        digests: bool,
    ) -> (Earlier, Vec<Taken>) {
        let mut earlier = Earlier::default();
        let taken = snapshots.into_iter().map(|s| earlier.add(s, roots, targets, digests)).collect();
        (earlier, taken)
    }

    fn add(&mut self, snap: Snapshot, roots: &[String], targets: &Targets, digests: bool) -> Taken {
        let Some(ids) = snap.identities else { return Taken::NoIdentities };
        if ids.reader != reader() {
            return Taken::OtherReader(ids.reader);
        }
        if ids.targets != targets.digest {
            return Taken::OtherTargets;
        }
        let here = crate::source::file::credentials();
        if ids.credentials.as_deref() != Some(here.as_str()) {
            return Taken::OtherCredentials(ids.credentials.unwrap_or_default());
        }
        if digests && !ids.digests {
            return Taken::NoDigests;
        }
        if !snap.roots.iter().any(|r| roots.contains(r)) {
            return Taken::OtherRoots;
        }
        // This index of each of the snapshot's roots.
        let root_of: Vec<usize> = snap.roots.iter().map(|r| self.root_named(r)).collect();
        let here = |p: RelPath| Some(RelPath { root: *root_of.get(p.root)?, ..p });
        let mut by_path: HashMap<RelPath, Kept> = HashMap::with_capacity(ids.files.len());
        for f in ids.files {
            let Some(path) = here(f.path) else { continue };
            let kept = Kept {
                id: (f.dev, f.ino, f.size, f.mtime[0], f.mtime[1], f.ctime[0], f.ctime[1]),
                kind: f.kind,
                record: None,
                problems: Vec::new(),
                declared_targets: None,
                release: None,
            };
            by_path.insert(path, kept);
        }
        for mut r in snap.files {
            if !digests {
                r.sha256 = None;
            }
            // The name it shares its bytes with, under this index of its root.
            r.hard_link_of = r.hard_link_of.and_then(here);
            if let Some(k) = here(r.path.clone()).and_then(|p| by_path.get_mut(&p)) {
                k.record = Some(r);
            }
        }
        for p in snap.problems {
            if let Some(k) = here(p.path).and_then(|p| by_path.get_mut(&p)) {
                k.problems.push(p.message);
            }
        }
        for d in snap.declared_targets {
            if let Some(k) = here(d.path).and_then(|p| by_path.get_mut(&p)) {
                k.declared_targets = Some(d.targets);
            }
        }
        // A library's name states its release again when it is counted (`aggregate::Tally::add`).
        for m in snap.rocm_releases.into_iter().filter(|m| m.signal != ReleaseSignal::RocmCoreLibrary) {
            if let Some(k) = here(m.path).and_then(|p| by_path.get_mut(&p)) {
                k.release = Some((m.signal, m.version));
            }
        }
        let n = by_path.len();
        self.files.extend(by_path.into_iter().map(|(p, k)| (p, Mutex::new(Some(k)))));
        Taken::Files(n)
    }

    fn root_named(&mut self, name: &str) -> usize {
        self.roots.iter().position(|r| r == name).unwrap_or_else(|| {
            self.roots.push(name.to_string());
            self.roots.len() - 1
        })
    }

    /// For each root of a scan, as named, its index here (`None`: nothing is known of it).
    pub fn roots_of(&self, named: &[String]) -> Vec<Option<usize>> {
        named.iter().map(|n| self.roots.iter().position(|r| r == n)).collect()
    }

    /// The facts of the file at `path`, as an earlier snapshot holds them, when `stat` shows it
    /// unchanged since and they are what `want` says this scan would find; `None` when it must
    /// be read.
    pub fn take(&self, path: &RelPath, stat: &Stat, want: &Want<'_>) -> Option<FileOutcome> {
        let here = (*want.roots.get(path.root)?)?;
        let slot = self.files.get(&RelPath { root: here, ..path.clone() })?;
        let mut slot = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The name it shares its bytes with, under this scan's index of its root.
        let scan_root = |r: &RelPath| {
            let root = want.roots.iter().position(|h| *h == Some(r.root))?;
            Some(RelPath { root, ..r.clone() })
        };
        let linked = |k: &Kept| k.record.as_ref().and_then(|r| r.hard_link_of.as_ref()).map(scan_root);
        let fits = |k: &Kept| {
            k.id == stat.id
                && k.record.as_ref().is_none_or(|r| r.size == stat.size())
                && (!want.clean || k.problems.is_empty())
                && (k.record.is_none() || linked(k) == want.hard_link_of.map(|l| Some(l.clone())))
        };
        let k = slot.take_if(|k| fits(k))?;
        let record = k.record.map(|mut r| {
            r.path = path.clone();
            r.hard_link_of = want.hard_link_of.cloned();
            r
        });
        Some(FileOutcome {
            path: path.clone(),
            kind: k.kind,
            size: stat.size(),
            record: record.map(Box::new),
            problems: k.problems,
            declared_targets: k.declared_targets,
            release: k.release,
        })
    }
}

/// The identity to record of a plain file read as `kind`, or `None` when it changed too near
/// `began`, the start of the scan, to be told apart from a later change (see [`RACY`]).
pub fn identity(path: &RelPath, kind: Kind, stat: &Stat, began: SystemTime) -> Option<FileIdentity> {
    let (dev, ino, size, ms, mns, cs, cns) = stat.id;
    let at = |s: i64, ns: i64| {
        let secs = u64::try_from(s).ok()?;
        UNIX_EPOCH.checked_add(Duration::new(secs, u32::try_from(ns).ok()?))
    };
    let settled = |t: Option<SystemTime>| t.is_some_and(|t| t + RACY <= began);
    (settled(at(ms, mns)) && settled(at(cs, cns))).then(|| FileIdentity {
        path: path.clone(),
        kind,
        dev,
        ino,
        size,
        mtime: [ms, mns],
        ctime: [cs, cns],
    })
}

/// The identities a scan recorded, as its snapshot keeps them (no rescan key yet: see
/// [`Survey::key`]).
pub fn identities(mut files: Vec<FileIdentity>, targets: &Targets, digests: bool) -> Identities {
    files.sort_by_cached_key(|f| f.path.sort_key());
    Identities {
        reader: reader(),
        targets: targets.digest.clone(),
        digests,
        credentials: Some(crate::source::file::credentials()),
        rescan_key: None,
        document_sha256: None,
        files,
    }
}

/// What a walk met, gathered as it comes whatever the order folders were listed in: every
/// folder, every regular file with its `stat`, every symbolic link with its target, every special
/// file. With the scan's options it makes the rescan key ([`Survey::key`]): everything a scan's
/// JSON is made from, short of the bytes of files that `stat` shows unchanged.
///
/// Each item is kept as its SHA-256 (32 bytes); the key hashes them sorted, so workers gather
/// their own shares in any order. (A sum of the digests would need no memory, but a sum can be
/// steered to a chosen value by items whoever writes the tree chooses: link targets.)
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Survey {
    items: Vec<[u8; 32]>,
    /// Regular files met.
    pub files: u64,
}

impl Survey {
    /// A regular file (reached through a link the walk followed when `followed`).
    pub fn file(&mut self, root: usize, rel: &OsStr, id: FileId, followed: bool) {
        let (dev, ino, size, ms, mns, cs, cns) = id;
        // Seven 8-byte numbers and the followed flag, with no allocation per file.
        let mut numbers = [0u8; 57];
        let words = [dev, ino, size]
            .map(u64::to_le_bytes)
            .into_iter()
            .chain([ms, mns, cs, cns].map(i64::to_le_bytes));
        for (slot, word) in numbers.chunks_exact_mut(8).zip(words) {
            slot.copy_from_slice(&word);
        }
        numbers[56] = u8::from(followed);
        self.item(b'f', root, rel.as_bytes(), &numbers);
        self.files += 1;
    }

    /// A folder listed (an empty one is still a fact: a kernel's `lib/modules/<release>`).
    pub fn folder(&mut self, root: usize, rel: &OsStr) {
        self.item(b'd', root, rel.as_bytes(), &[]);
    }

    /// A symbolic link met and not followed, and where it points.
    pub fn link(&mut self, root: usize, rel: &OsStr, target: &OsStr) {
        self.item(b'l', root, rel.as_bytes(), target.as_bytes());
    }

    /// A link followed out of its root (`--follow-links`), and the real path it leads to.
    pub fn left_root(&mut self, root: usize, rel: &OsStr, real: &OsStr) {
        self.item(b'o', root, rel.as_bytes(), real.as_bytes());
    }

    /// A FIFO, socket or device node (never opened; a name that hides another, as a folder
    /// named `x.conf` in `modprobe.d` does).
    pub fn special(&mut self, root: usize, rel: &OsStr, kind: &str) {
        self.item(b's', root, rel.as_bytes(), kind.as_bytes());
    }

    fn item(&mut self, tag: u8, root: usize, a: &[u8], b: &[u8]) {
        let mut h = Sha256::new();
        h.update([tag]);
        h.update((root as u64).to_le_bytes());
        h.update((a.len() as u64).to_le_bytes());
        h.update(a);
        h.update(b);
        self.items.push(h.finalize().into());
    }

    /// Two workers' shares as one.
    pub fn merge(mut self, mut other: Survey) -> Survey {
        if self.items.len() < other.items.len() {
            std::mem::swap(&mut self.items, &mut other.items);
        }
        self.items.extend_from_slice(&other.items);
        self.files += other.files;
        self
    }

    /// The rescan key: this build, the target table, `options` (the command's options that
    /// shape its JSON, [`ScanOptions`]), who reads (`credentials`: what may be read depends on
    /// it), each root as named and where it leads, and what the walk met. Two scans with the
    /// same key write the same JSON: every file is unchanged by its `stat`, and so is everything
    /// else the JSON is made from.
    pub fn key(
        mut self,
        targets: &Targets,
        options: &str,
        credentials: &str,
        roots: &[(String, String)],
    ) -> String {
        let mut h = Sha256::new();
        for part in [KEY_VERSION, &reader(), &targets.digest, options, credentials] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        for (given, real) in roots {
            for part in [given, real] {
                h.update((part.len() as u64).to_le_bytes());
                h.update(part.as_bytes());
            }
        }
        h.update(self.files.to_le_bytes());
        h.update((self.items.len() as u64).to_le_bytes());
        self.items.sort_unstable();
        for item in &self.items {
            h.update(item);
        }
        hex(h)
    }
}

/// Changes when what the key covers changes.
const KEY_VERSION: &str = "gfxscan rescan key 3";

/// The options of `scan` that shape its JSON, as one text: a rescan key is made with them
/// (`cmd::scan` lists them; an option added there must be sorted in or out of this).
pub type ScanOptions = String;

/// The 64 hex digits `document_sha256` holds until the document is sealed ([`seal`]).
pub const UNSEALED: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How the sealed digest's field is written in the JSON (pretty-printed, as `report` writes it).
const SEAL_FIELD: &[u8] = b"\"document_sha256\": \"";

/// Where the sealed digest's 64 hex digits start in `text`: after its field, which only
/// `identities` has (a quote inside a JSON string is escaped, so no string holds the field).
fn seal_at(text: &[u8]) -> Option<usize> {
    let at = memchr::memmem::rfind(text, SEAL_FIELD)? + SEAL_FIELD.len();
    (text.len() >= at + 64 && text.get(at + 64) == Some(&b'"')).then_some(at)
}

/// The SHA-256 of `text` with the 64 digits at `at` read as zeros.
fn sealed_digest(text: &[u8], at: usize) -> String {
    let mut h = Sha256::new();
    h.update(&text[..at]);
    h.update(UNSEALED.as_bytes());
    h.update(&text[at + 64..]);
    hex(h)
}

/// Seals a scan's JSON that carries a rescan key: its `document_sha256` ([`UNSEALED`] until
/// now) becomes the SHA-256 of the whole document with those digits zero. A later rescan with
/// the same key takes the document as its own output only when the seal holds: a snapshot
/// changed after it was written is never passed on as this scan's output.
pub fn seal(text: &mut [u8]) {
    let Some(at) = seal_at(text) else { return };
    if &text[at..at + 64] != UNSEALED.as_bytes() {
        return;
    }
    let digest = sealed_digest(text, at);
    text[at..at + 64].copy_from_slice(digest.as_bytes());
}

/// The rescan key a scan JSON states, not yet held against its seal ([`seal_holds`]): read
/// first, so that a tree that changed costs no digest of the whole document.
pub fn stated_key(text: &[u8]) -> Option<&str> {
    const KEY_FIELD: &[u8] = b"\"rescan_key\": \"";
    let k = memchr::memmem::rfind(text, KEY_FIELD)? + KEY_FIELD.len();
    let key = std::str::from_utf8(text.get(k..k + 64)?).ok()?;
    (text.get(k + 64) == Some(&b'"') && key.bytes().all(|b| b.is_ascii_hexdigit())).then_some(key)
}

/// Whether a scan JSON is sealed and its seal holds: it is, every byte, a document this build
/// writes (it opens as a snapshot of this schema does) and was not changed since. The seal is a
/// checksum, not a signature: it tells a document edited or damaged after it was written, and
/// one that is not a snapshot at all, not a forgery made with gfxscan's own rules (which
/// `--reuse` cannot tell of the facts it takes file by file either).
pub fn seal_holds(text: &[u8]) -> bool {
    let head = format!(
        "{{\n  \"schema_version\": {},\n  \"tool\": {{\n    \"name\": \"gfxscan\",",
        crate::model::SCHEMA_VERSION
    );
    if !text.starts_with(head.as_bytes()) {
        return false;
    }
    let Some(at) = seal_at(text) else { return false };
    let said = &text[at..at + 64];
    said != UNSEALED.as_bytes() && sealed_digest(text, at).as_bytes() == said
}

#[cfg(test)]
mod tests {
    use super::*;

    /// git's racy rule, applied when writing: a file whose modification or change time lies
    /// within [`RACY`] of the scan's start is not recorded, one older is.
    #[test]
    fn a_file_changed_near_the_scan_is_not_recorded() {
        let began = SystemTime::now();
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        let stat = |m: SystemTime, c: SystemTime| Stat { id: (1, 2, 3, secs(m), 0, secs(c), 0), links: 1 };
        let path = RelPath::new(0, std::ffi::OsStr::new("f"));
        let old = began - Duration::from_secs(10);
        let near = began - Duration::from_millis(500);
        assert!(identity(&path, Kind::Other, &stat(old, old), began).is_some());
        assert!(identity(&path, Kind::Other, &stat(near, old), began).is_none(), "modified just now");
        assert!(identity(&path, Kind::Other, &stat(old, near), began).is_none(), "changed just now");
        assert!(identity(&path, Kind::Other, &stat(began + Duration::from_secs(60), old), began).is_none());
    }

    /// The walk's workers gather their shares in any order: the same items make the same key,
    /// and any item changed, added or dropped makes another.
    #[test]
    fn the_rescan_key_is_the_same_whatever_the_order_and_changes_with_any_item() {
        let targets = Targets::builtin();
        let roots = [("r".to_string(), "/r".to_string())];
        let id = |n: i64| (1, 2, 3, n, 0, n, 0);
        let files = [("a", id(1)), ("b/c", id(2)), ("d", id(3))];
        let key = |s: &Survey| s.clone().key(&targets, "opts", "uid=0", &roots);
        let mut all = Survey::default();
        for (name, id) in files {
            all.file(0, OsStr::new(name), id, false);
        }
        all.link(0, OsStr::new("l"), OsStr::new("a"));
        all.folder(0, OsStr::new("b"));
        let mut one = Survey::default();
        one.link(0, OsStr::new("l"), OsStr::new("a"));
        one.file(0, OsStr::new("d"), id(3), false);
        let mut two = Survey::default();
        two.folder(0, OsStr::new("b"));
        two.file(0, OsStr::new("b/c"), id(2), false);
        two.file(0, OsStr::new("a"), id(1), false);
        assert_eq!(key(&all), key(&two.merge(one)));
        assert_eq!(all.files, 3);
        let changed = |f: &dyn Fn(&mut Survey)| {
            let mut s = all.clone();
            f(&mut s);
            key(&s)
        };
        assert_ne!(key(&all), changed(&|s| s.file(0, OsStr::new("e"), id(4), false)));
        assert_ne!(key(&all), changed(&|s| s.link(0, OsStr::new("m"), OsStr::new("a"))));
        assert_ne!(key(&all), changed(&|s| s.folder(0, OsStr::new("e"))));
        assert_ne!(key(&all), changed(&|s| s.special(0, OsStr::new("p"), "fifo")));
        assert_ne!(key(&all), all.clone().key(&targets, "other opts", "uid=0", &roots));
        assert_ne!(key(&all), all.clone().key(&targets, "opts", "uid=65534", &roots));
        let elsewhere = [("r".to_string(), "/elsewhere".to_string())];
        assert_ne!(key(&all), all.clone().key(&targets, "opts", "uid=0", &elsewhere));
        let mut moved = Survey::default();
        for (name, id) in files {
            moved.file(0, OsStr::new(name), if name == "d" { (1, 2, 3, 3, 1, 3, 0) } else { id }, false);
        }
        moved.link(0, OsStr::new("l"), OsStr::new("a"));
        moved.folder(0, OsStr::new("b"));
        assert_ne!(key(&all), key(&moved), "one nanosecond");
    }

    /// A sealed document states its key and its seal holds; any byte changed, or a document
    /// never sealed, does not hold.
    #[test]
    fn a_sealed_document_gives_its_key_only_as_written() {
        let key = "ab".repeat(32);
        let head = format!(
            "{{\n  \"schema_version\": {},\n  \"tool\": {{\n    \"name\": \"gfxscan\",\n    \"version\": \"0\"\n  }},\n",
            crate::model::SCHEMA_VERSION
        );
        let doc = format!(
            "{head}  \"identities\": {{\n    \"rescan_key\": \"{key}\",\n    \"document_sha256\": \"{UNSEALED}\",\n    \"files\": []\n  }}\n}}\n"
        );
        let mut sealed = doc.clone().into_bytes();
        assert!(!seal_holds(&sealed), "not yet sealed");
        assert_eq!(stated_key(&sealed), Some(key.as_str()));
        seal(&mut sealed);
        assert_ne!(sealed, doc.as_bytes());
        assert!(seal_holds(&sealed));
        let before = sealed.clone();
        seal(&mut sealed);
        assert_eq!(sealed, before, "sealed once");
        for i in [0, 5, sealed.len() - 2] {
            let mut changed = sealed.clone();
            changed[i] ^= 1;
            assert!(!seal_holds(&changed), "byte {i} changed");
        }
        assert!(!seal_holds(b"{}"));
        // Sealed, but not a snapshot this build writes.
        let mut other = doc.replace("gfxscan", "other").into_bytes();
        seal(&mut other);
        assert!(!seal_holds(&other));
        assert_eq!(stated_key(b"{}"), None);
    }
}
