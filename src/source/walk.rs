//! Walking: which files a scan looks at.
//!
//! Folders are listed in parallel on the scan's own workers, and each regular file is handed to
//! the reader as soon as its folder lists it, with one `stat` relative to that folder: its size
//! and identity, no open. Nothing is held per file once it is handed over, so a tree of a
//! million files is walked in the memory of its widest folders. Only regular files become
//! candidates: FIFOs, sockets and devices are never opened, symlinks are counted and not
//! followed unless asked (then loops are detected). Everything that cannot be walked becomes
//! a problem with its path, and the walk goes on.

use std::ffi::{CStr, OsStr};
use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, OFlags, RawDir};

use crate::model::{Problem, RelPath};
use crate::source::file::FileId;

/// The places ROCm, Ollama and the amdgpu firmware live, scanned when no root is given.
pub const DEFAULT_ROOTS: &[&str] =
    &["/opt/rocm", "/opt/rocm-*", "/usr/lib/ollama", "/usr/local/lib/ollama", "/lib/firmware/amdgpu"];

/// A root to scan: as the user named it, the real path behind it, and what it was named as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub given: PathBuf,
    /// Empty for an image in a registry.
    pub real: PathBuf,
    pub kind: RootKind,
}

/// What a root was named as: a path, whose content decides how it is read, or a source by
/// name as syft spells them (`registry:`, `oci-dir:`, `docker-archive:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootKind {
    Path,
    /// `oci-dir:PATH`: an OCI image layout folder, read as its image.
    OciDir,
    /// `docker-archive:PATH`: a `docker save` archive (or OCI tarball), read as its image.
    DockerArchive,
    /// `registry:HOST/NAME[:TAG|@DIGEST]`: an image fetched from its registry.
    Registry(crate::source::registry::ImageRef),
}

/// Splits a root's source prefix from what follows it: `registry:`, `oci-dir:` and
/// `docker-archive:` always name a source (a path that starts so is written `./registry:…`).
pub fn root_kind(given: &Path) -> Result<(RootKind, &Path), String> {
    let Some(text) = given.to_str() else { return Ok((RootKind::Path, given)) };
    if let Some(image) = text.strip_prefix("registry:") {
        let r = crate::source::registry::parse_image_ref(image)?;
        return Ok((RootKind::Registry(r), Path::new("")));
    }
    for (prefix, kind) in [("oci-dir:", RootKind::OciDir), ("docker-archive:", RootKind::DockerArchive)] {
        if let Some(path) = text.strip_prefix(prefix) {
            return Ok((kind, Path::new(path)));
        }
    }
    Ok((RootKind::Path, given))
}

/// The default roots that exist, with `/opt/rocm-*` expanded, in a stable order.
pub fn default_roots() -> Vec<PathBuf> {
    default_roots_under(Path::new("/"))
}

/// [`DEFAULT_ROOTS`] under `base` (`/` on a live system) that exist.
pub fn default_roots_under(base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pat in DEFAULT_ROOTS {
        let pat = base.join(pat.trim_start_matches('/'));
        let pat = pat.to_string_lossy();
        if let Some(prefix) = pat.strip_suffix('*') {
            let (dir, stem) = prefix.rsplit_once('/').unwrap_or(("/", prefix));
            let mut found: Vec<PathBuf> = fs::read_dir(if dir.is_empty() { "/" } else { dir })
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(stem))
                .map(|e| e.path())
                .collect();
            found.sort();
            out.extend(found);
        } else if Path::new(pat.as_ref()).exists() {
            out.push(PathBuf::from(pat.as_ref()));
        }
    }
    out
}

/// What `check` looks at without a ROOT, under `base`: the install `/opt/rocm` leads to and
/// Ollama's folders; every other `/opt/rocm-*` is returned second, as not checked (a leftover
/// old ROCm must not fail the check of the one in use). Firmware holds no library to check.
pub fn check_roots_under(base: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let all = default_roots_under(base);
    let current = fs::canonicalize(base.join("opt/rocm")).ok();
    let mut checked = Vec::new();
    let mut not_checked = Vec::new();
    for root in all {
        let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let real = fs::canonicalize(&root).ok();
        if name == "rocm" {
            checked.push(root);
        } else if name.starts_with("rocm-") {
            if real.is_none() || real != current {
                not_checked.push(root);
            }
        } else if name == "ollama" {
            checked.push(root);
        }
    }
    (checked, not_checked)
}

/// Resolves roots to real paths, keeping the first of any that lead to the same tree.
///
/// A root that does not exist, or that cannot be read (a folder that cannot be listed, a file
/// that cannot be opened), is an error for the caller to report — not an empty install — and
/// so is a root inside another (`scan sample sample/opt`): its files would be counted twice.
pub fn resolve_roots(given: &[PathBuf]) -> Result<Vec<Root>, String> {
    let mut roots: Vec<Root> = Vec::new();
    for g in given {
        let (kind, path) = root_kind(g)?;
        if let RootKind::Registry(_) = kind {
            // One image however it is spelled (`a` is `docker.io/library/a:latest`).
            if !roots.iter().any(|r| r.kind == kind) {
                roots.push(Root { given: g.clone(), real: PathBuf::new(), kind });
            }
            continue;
        }
        let real = fs::canonicalize(path).map_err(|e| format!("{}: {e}", g.display()))?;
        let is_dir = fs::metadata(&real).is_ok_and(|m| m.is_dir());
        match kind {
            RootKind::OciDir if !is_dir => return Err(format!("{}: not a folder", g.display())),
            RootKind::DockerArchive if is_dir => {
                return Err(format!("{}: a folder, not an archive", g.display()))
            }
            _ => {}
        }
        let readable = match fs::metadata(&real) {
            Ok(m) if m.is_dir() => fs::read_dir(&real).map(|_| ()),
            // Opened as the scan opens files: never blocking on a FIFO.
            Ok(m) if m.is_file() => crate::source::file::open_file(&real, false).map(|_| ()),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        readable.map_err(|e| format!("cannot read {}: {e}", g.display()))?;
        if roots.iter().any(|r| r.real == real) {
            continue;
        }
        let nested = |r: &&Root| {
            !matches!(r.kind, RootKind::Registry(_))
                && (real.starts_with(&r.real) || r.real.starts_with(&real))
        };
        if let Some(r) = roots.iter().find(nested) {
            let (inner, outer) = if real.starts_with(&r.real) { (g, &r.given) } else { (&r.given, g) };
            return Err(format!(
                "{} lies inside {}: its files would be counted twice; name only one of them",
                inner.display(),
                outer.display()
            ));
        }
        roots.push(Root { given: g.clone(), real, kind });
    }
    Ok(roots)
}

/// What one `stat` of a regular file said: all a rule needs before opening it, and the
/// identity a hard link or an unchanged file is known by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Device, inode, size, modification and change times: `source::file::FileId`.
    pub id: FileId,
    /// Names the file has: more than one, and another name may be read instead.
    pub links: u64,
}

impl Stat {
    // The kernel's field types differ by architecture (`st_nlink` is 32 bits on aarch64).
    #[allow(clippy::useless_conversion)]
    fn of(st: &rustix::fs::Stat) -> Stat {
        // The kernel's fields, widened as `std::os::unix::fs::MetadataExt` widens them.
        let id = (
            st.st_dev,
            st.st_ino,
            u64::try_from(st.st_size).unwrap_or(0),
            i64::try_from(st.st_mtime).unwrap_or(i64::MAX),
            i64::try_from(st.st_mtime_nsec).unwrap_or(0),
            i64::try_from(st.st_ctime).unwrap_or(i64::MAX),
            i64::try_from(st.st_ctime_nsec).unwrap_or(0),
        );
        Stat { id, links: u64::from(st.st_nlink) }
    }

    /// What `std::fs::metadata` said, as the walk's `stat` says it.
    pub fn of_metadata(m: &fs::Metadata) -> Stat {
        Stat { id: crate::source::file::file_id(m), links: m.nlink() }
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.id.2
    }

    /// Its inode number.
    pub fn ino(&self) -> u64 {
        self.id.1
    }
}

/// A regular file to read.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Index of its root.
    pub root: usize,
    /// Path relative to the root (the full path is built when the file is opened, see
    /// [`Candidate::path`]).
    pub rel: Box<Path>,
    /// What `stat` said when the walk met it.
    pub stat: Stat,
    /// A symbolic link to a regular file, met with `--follow-links`: opened through the link.
    pub followed: bool,
}

impl Candidate {
    /// The full path to open, under its root's real path (the root itself when `rel` is empty).
    pub fn path(&self, roots: &[Root]) -> PathBuf {
        let base = roots.get(self.root).map_or(Path::new(""), |r| r.real.as_path());
        if self.rel.as_os_str().is_empty() {
            base.to_path_buf()
        } else {
            base.join(&self.rel)
        }
    }
}

/// A symbolic link met and not followed.
#[derive(Debug, Clone)]
pub struct Link {
    /// Index of its root.
    pub root: usize,
    /// Full path of the link itself.
    pub path: PathBuf,
    /// Path relative to the root.
    pub rel: PathBuf,
    /// Where it points, as stored.
    pub target: PathBuf,
}

/// What a walk found besides the files it handed over.
#[derive(Debug, Default)]
pub struct Walked {
    pub links: Vec<Link>,
    pub symlinks: u64,
    /// FIFOs, sockets and device nodes met inside the roots (skipped, counted).
    pub special: u64,
    /// With `--follow-links` and not `--cross-file-systems`: folders left unwalked for lying on
    /// another file system than their root's.
    pub other_file_systems: u64,
    /// With `--follow-links`: links followed to a place outside their root (its path in the
    /// root, and the real path it leads to). What lies there is scanned as part of the root.
    pub left_root: Vec<(usize, PathBuf, PathBuf)>,
    pub problems: Vec<Problem>,
}

fn special_kind(ft: FileType) -> Option<&'static str> {
    match ft {
        FileType::Fifo => Some("fifo"),
        FileType::Socket => Some("socket"),
        FileType::BlockDevice => Some("block device"),
        FileType::CharacterDevice => Some("character device"),
        _ => None,
    }
}

/// Where a followed link leads when that is outside `root` (`None` inside it, or when the
/// target cannot be resolved).
fn leaves(link: &Path, root: &Path) -> Option<PathBuf> {
    let real = fs::canonicalize(link).ok()?;
    (!real.starts_with(root)).then_some(real)
}

/// How a walk goes: its options and what it hands its findings to.
pub struct Walk<'a> {
    /// Follow symbolic links (loops are detected and reported).
    pub follow_links: bool,
    /// With `follow_links`: walk into other file systems too (else stay on each root's, as
    /// `find -xdev`).
    pub cross_file_systems: bool,
    /// Roots not walked: read another way (an OCI image layout is read as its image).
    pub skip: &'a [usize],
    /// Called with the regular files met, a folder's worth at a time (at most [`BATCH`]), on
    /// whichever worker walked that folder.
    pub files: &'a (dyn Fn(Vec<Candidate>) + Sync),
    /// When given, called with each folder listed (before its entries) and each special file
    /// met: its root's index, its path below the root, and which it is. What a rescan key
    /// gathers besides files and links.
    pub others: Option<&'a OthersSeen<'a>>,
}

/// What a walk calls with the folders and special files it meets.
pub type OthersSeen<'f> = dyn Fn(usize, &Path, Other) + Sync + 'f;

/// A folder or special file a walk met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Other {
    Folder,
    /// A FIFO, socket or device node (`fifo`, `socket`, `block device`, `character device`).
    Special(&'static str),
}

/// Files handed over at once: a folder of thousands (rocBLAS's library) is read in parallel
/// while it is still being listed, and a folder of millions is never held whole.
pub const BATCH: usize = 512;

/// Room for one `getdents64` call's entries.
const LISTING: usize = 32 * 1024;

/// Folders waiting to be listed, at most: past this, a subfolder is listed at once by the worker
/// that met it, so a folder of a million subfolders never queues a million tasks.
const QUEUED: usize = 4096;

/// One root being walked, shared by the workers walking its folders.
struct RootWalk<'a> {
    index: usize,
    root: &'a Root,
    walk: &'a Walk<'a>,
    /// Its device, when the walk must stay on it.
    stay_on: Option<u64>,
    found: Mutex<Walked>,
    /// Folders spawned and not yet started (see [`QUEUED`]).
    queued: AtomicUsize,
}

/// A folder to list: its path on disk, its path below the root, and with `--follow-links` the
/// folders above it.
struct Folder {
    dir: PathBuf,
    rel: PathBuf,
    above: Option<Arc<Above>>,
}

/// What listing one folder met: files not yet handed over, and subfolders that found the queue
/// full, to be listed by the same worker once this folder is closed.
struct Met<'t> {
    files: Vec<Candidate>,
    folders: &'t mut Vec<Folder>,
}

/// The folders above one being walked with `--follow-links`: (device, inode, path relative
/// to the root) of each, nearest first, to tell a loop.
struct Above {
    dev: u64,
    ino: u64,
    rel: PathBuf,
    up: Option<Arc<Above>>,
}

impl Above {
    fn loop_to(&self, dev: u64, ino: u64) -> Option<&Path> {
        let mut at = Some(self);
        while let Some(a) = at {
            if a.dev == dev && a.ino == ino {
                return Some(&a.rel);
            }
            at = a.up.as_deref();
        }
        None
    }
}

/// Walks every root on the current rayon pool: folders are listed in parallel, and each
/// regular file is `stat`ed relative to its folder (no path lookup from the root, no open)
/// and handed to `walk.files`. `parts`, when given, are the only files and folders walked
/// (real paths, each under the root it is in). Returns when every folder has been walked.
pub fn walk(roots: &[Root], parts: Option<&[PathBuf]>, walk: &Walk<'_>) -> Walked {
    let mut out = Walked::default();
    for (index, root) in roots.iter().enumerate().filter(|(i, _)| !walk.skip.contains(i)) {
        let stay = walk.follow_links && !walk.cross_file_systems;
        let stay_on = stay.then(|| fs::metadata(&root.real).ok().map(|m| m.dev())).flatten();
        let rw = RootWalk {
            index,
            root,
            walk,
            stay_on,
            found: Mutex::new(Walked::default()),
            queued: AtomicUsize::new(0),
        };
        let starts: Vec<PathBuf> = match parts {
            Some(p) => p.iter().filter(|p| p.starts_with(&root.real)).cloned().collect(),
            None => vec![root.real.clone()],
        };
        rayon::scope(|scope| {
            for start in &starts {
                rw.start(scope, start);
            }
        });
        let found = rw.found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        out.links.extend(found.links);
        out.symlinks += found.symlinks;
        out.special += found.special;
        out.other_file_systems += found.other_file_systems;
        out.left_root.extend(found.left_root);
        out.problems.extend(found.problems);
    }
    out
}

impl<'a> RootWalk<'a> {
    fn rel_of(&self, p: &Path) -> PathBuf {
        p.strip_prefix(&self.root.real).map(Path::to_path_buf).unwrap_or_default()
    }

    fn note(&self, f: impl FnOnce(&mut Walked)) {
        let mut found = self.found.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut found);
    }

    fn problem(&self, rel: &Path, message: String) {
        self.note(|w| w.problems.push(Problem { path: RelPath::new(self.index, rel.as_os_str()), message }));
    }

    /// Starts at a root, or a part of one: a folder is walked, a file handed over, anything
    /// else named as a root is a problem (what was asked for is unread).
    fn start<'s>(&'s self, scope: &rayon::Scope<'s>, start: &Path) {
        let rel = self.rel_of(start);
        let st = if self.walk.follow_links { rustix::fs::stat(start) } else { rustix::fs::lstat(start) };
        let st = match st {
            Ok(st) => st,
            Err(e) => return self.problem(&rel, std::io::Error::from(e).to_string()),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                let above = self
                    .walk
                    .follow_links
                    .then(|| Arc::new(Above { dev: st.st_dev, ino: st.st_ino, rel: rel.clone(), up: None }));
                self.folder(scope, Folder { dir: start.to_path_buf(), rel, above });
            }
            FileType::RegularFile => {
                let c = Candidate { root: self.index, rel: rel.into(), stat: Stat::of(&st), followed: false };
                (self.walk.files)(vec![c]);
            }
            FileType::Symlink => self.note(|w| w.symlinks += 1),
            ft => {
                let kind = special_kind(ft).unwrap_or("unknown file type");
                if rel.as_os_str().is_empty() {
                    self.problem(&rel, format!("not a regular file ({kind}): not opened"));
                } else {
                    self.note(|w| w.special += 1);
                }
            }
        }
    }

    /// Lists one folder: its subfolders are walked as tasks of their own, its files handed
    /// over in batches.
    fn folder<'s>(&'s self, scope: &rayon::Scope<'s>, first: Folder) {
        // Subfolders that found the queue full, listed here one after another: each folder is
        // closed before the next is opened, so a deep tree holds one descriptor a worker.
        let mut todo = vec![first];
        while let Some(f) = todo.pop() {
            self.list(scope, f, &mut todo);
        }
    }

    /// Lists one folder: files handed over in batches, subfolders spawned (or added to `todo`
    /// when the queue is full).
    fn list<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        Folder { dir, rel, above }: Folder,
        todo: &mut Vec<Folder>,
    ) {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = match rustix::fs::open(&dir, flags, rustix::fs::Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => return self.problem(&rel, std::io::Error::from(e).to_string()),
        };
        if let Some(others) = self.walk.others {
            others(self.index, &rel, Other::Folder);
        }
        let mut buf = Vec::with_capacity(LISTING);
        let mut listing = RawDir::new(&fd, buf.spare_capacity_mut());
        let mut met = Met { files: Vec::new(), folders: todo };
        while let Some(entry) = listing.next() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.problem(&rel, std::io::Error::from(e).to_string());
                    break;
                }
            };
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let ft = entry.file_type();
            self.entry(scope, (&fd, &dir, &rel), (name, ft), &above, &mut met);
            if met.files.len() >= BATCH {
                (self.walk.files)(std::mem::take(&mut met.files));
            }
        }
        if !met.files.is_empty() {
            (self.walk.files)(met.files);
        }
    }

    /// One entry of a folder.
    fn entry<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        (fd, dir, rel): (&OwnedFd, &Path, &Path),
        (name, ft): (&CStr, FileType),
        above: &Option<Arc<Above>>,
        met: &mut Met<'_>,
    ) {
        let name_os = OsStr::from_bytes(name.to_bytes());
        let child_rel = || rel.join(name_os);
        // A file system that does not fill in the type in its listing: `lstat` tells.
        let lstat = |flags| rustix::fs::statat(fd, name, flags);
        let (ft, st) = match ft {
            FileType::Unknown | FileType::RegularFile => match lstat(AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => (FileType::from_raw_mode(st.st_mode), Some(st)),
                Err(e) => return self.problem(&child_rel(), std::io::Error::from(e).to_string()),
            },
            ft => (ft, None),
        };
        match (ft, st) {
            (FileType::RegularFile, Some(st)) => {
                met.files.push(Candidate {
                    root: self.index,
                    rel: child_rel().into(),
                    stat: Stat::of(&st),
                    followed: false,
                });
            }
            (FileType::Directory, _) => {
                self.subfolder(scope, dir.join(name_os), child_rel(), above, None, met)
            }
            (FileType::Symlink, _) if self.walk.follow_links => {
                self.follow(scope, (fd, dir), name, child_rel(), above, met);
            }
            (FileType::Symlink, _) => {
                let target = rustix::fs::readlinkat(fd, name, Vec::new())
                    .map(|t| PathBuf::from(OsStr::from_bytes(t.as_bytes())))
                    .unwrap_or_default();
                let link = Link { root: self.index, path: dir.join(name_os), rel: child_rel(), target };
                self.note(|w| {
                    w.symlinks += 1;
                    w.links.push(link);
                });
            }
            (ft, _) => self.special(&child_rel(), ft),
        }
    }

    /// A subfolder, walked as a task of its own. With `--follow-links`, `st` is its `stat`
    /// when known: a folder that is one of its own ancestors is a loop, reported, and one on
    /// another file system is left unless the walk crosses them.
    fn subfolder<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        dir: PathBuf,
        rel: PathBuf,
        above: &Option<Arc<Above>>,
        st: Option<rustix::fs::Stat>,
        met: &mut Met<'_>,
    ) {
        let above = match above {
            Some(up) => {
                let Some(st) = st.or_else(|| rustix::fs::stat(&dir).ok()) else {
                    return self.problem(&rel, "cannot stat folder".to_string());
                };
                if let Some(a) = up.loop_to(st.st_dev, st.st_ino) {
                    let message = if a.as_os_str().is_empty() {
                        "symlink loop back to the root".to_string()
                    } else {
                        format!("symlink loop back to {}", a.display())
                    };
                    return self.problem(&rel, message);
                }
                if self.stay_on.is_some_and(|dev| dev != st.st_dev) {
                    return self.note(|w| w.other_file_systems += 1);
                }
                Some(Arc::new(Above {
                    dev: st.st_dev,
                    ino: st.st_ino,
                    rel: rel.clone(),
                    up: Some(up.clone()),
                }))
            }
            None => None,
        };
        let f = Folder { dir, rel, above };
        if self.queued.fetch_add(1, Ordering::Relaxed) < QUEUED {
            scope.spawn(move |scope| {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                self.folder(scope, f);
            });
        } else {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            met.folders.push(f);
        }
    }

    /// A symbolic link met with `--follow-links`: what it leads to is walked as if it stood
    /// there (a folder walked, a file handed over); a link that leads nowhere is a problem.
    fn follow<'s>(
        &'s self,
        scope: &rayon::Scope<'s>,
        (fd, dir): (&OwnedFd, &Path),
        name: &CStr,
        rel: PathBuf,
        above: &Option<Arc<Above>>,
        met: &mut Met<'_>,
    ) {
        let path = dir.join(OsStr::from_bytes(name.to_bytes()));
        let st = match rustix::fs::statat(fd, name, AtFlags::empty()) {
            Ok(st) => st,
            Err(e) => return self.problem(&rel, std::io::Error::from(e).to_string()),
        };
        let ft = FileType::from_raw_mode(st.st_mode);
        let other_fs = ft == FileType::Directory && self.stay_on.is_some_and(|dev| dev != st.st_dev);
        if !other_fs {
            if let Some(real) = leaves(&path, &self.root.real) {
                self.note(|w| w.left_root.push((self.index, rel.clone(), real)));
            }
        }
        match ft {
            FileType::Directory => self.subfolder(scope, path, rel, above, Some(st), met),
            FileType::RegularFile => {
                met.files.push(Candidate {
                    root: self.index,
                    rel: rel.into(),
                    stat: Stat::of(&st),
                    followed: true,
                });
            }
            ft => self.special(&rel, ft),
        }
    }

    /// A FIFO, socket or device node met (through a link, with `--follow-links`): counted, never
    /// opened, and told to `others`.
    fn special(&self, rel: &Path, ft: FileType) {
        if let Some(kind) = special_kind(ft) {
            self.note(|w| w.special += 1);
            if let Some(others) = self.walk.others {
                others(self.index, rel, Other::Special(kind));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks `roots` and gathers the files handed over, sorted by path.
    fn walk_all(roots: &[Root], follow_links: bool) -> (Walked, Vec<Candidate>) {
        let files = Mutex::new(Vec::new());
        let add = |batch: Vec<Candidate>| files.lock().expect("lock").extend(batch);
        let w = Walk { follow_links, cross_file_systems: false, skip: &[], files: &add, others: None };
        let walked = walk(roots, None, &w);
        let mut files = files.into_inner().expect("lock");
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        (walked, files)
    }

    #[test]
    fn check_without_root_takes_the_current_rocm_and_ollama_only() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        for d in ["opt/rocm-6.2.0/lib", "opt/rocm-7.2.0/lib", "usr/lib/ollama", "lib/firmware/amdgpu"] {
            fs::create_dir_all(b.join(d)).expect("mkdir");
        }
        std::os::unix::fs::symlink("rocm-7.2.0", b.join("opt/rocm")).expect("symlink");
        let (checked, not) = check_roots_under(b);
        assert_eq!(checked, [b.join("opt/rocm"), b.join("usr/lib/ollama")]);
        assert_eq!(not, [b.join("opt/rocm-6.2.0")]);
        // `scan` still takes every default root that exists.
        assert_eq!(default_roots_under(b).len(), 5);
    }

    #[test]
    fn nested_roots_are_refused_and_equal_ones_merged() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        fs::create_dir_all(b.join("a/opt")).expect("mkdir");
        std::os::unix::fs::symlink("a", b.join("link")).expect("symlink");
        let err = resolve_roots(&[b.join("a"), b.join("a/opt")]).expect_err("nested");
        assert!(err.contains("lies inside"), "{err}");
        let err = resolve_roots(&[b.join("a/opt"), b.join("a")]).expect_err("nested, other order");
        assert!(
            err.contains(&format!("{} lies inside {}", b.join("a/opt").display(), b.join("a").display())),
            "{err}"
        );
        assert_eq!(resolve_roots(&[b.join("a"), b.join("link")]).expect("same tree").len(), 1);
    }

    #[test]
    fn links_followed_out_of_the_root_are_named_and_those_inside_are_not() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        fs::create_dir_all(b.join("root/lib")).expect("mkdir");
        fs::create_dir_all(b.join("elsewhere/sub")).expect("mkdir");
        fs::write(b.join("elsewhere/sub/x.so"), b"x").expect("write");
        fs::write(b.join("root/lib/y.so"), b"y").expect("write");
        std::os::unix::fs::symlink(b.join("elsewhere"), b.join("root/out")).expect("symlink");
        std::os::unix::fs::symlink("y.so", b.join("root/lib/in.so")).expect("symlink");
        let roots = resolve_roots(&[b.join("root")]).expect("root");
        let (walked, files) = walk_all(&roots, true);
        let real = fs::canonicalize(b.join("elsewhere")).expect("real");
        assert_eq!(walked.left_root, [(0, PathBuf::from("out"), real)]);
        // The file under the followed folder is read, once, as part of the root.
        assert_eq!(files.len(), 3);
        // Without following, nothing leaves the root.
        assert!(walk_all(&roots, false).0.left_root.is_empty());
    }

    /// Each regular file is handed over once, with its `stat`, whatever the batching: a folder
    /// wider than a batch, nested folders, an empty file; FIFOs and links are counted, not
    /// handed over; a loop met while following links is a problem naming where it leads.
    #[test]
    fn every_file_is_handed_over_once_with_its_stat() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        fs::create_dir_all(b.join("root/wide")).expect("mkdir");
        fs::create_dir_all(b.join("root/a/b/c")).expect("mkdir");
        for i in 0..(BATCH * 2 + 7) {
            fs::write(b.join(format!("root/wide/f{i}")), b"x").expect("write");
        }
        fs::write(b.join("root/a/b/c/deep.so"), b"elf?").expect("write");
        fs::write(b.join("root/a/empty"), b"").expect("write");
        fs::hard_link(b.join("root/a/b/c/deep.so"), b.join("root/a/twin.so")).expect("link");
        std::os::unix::fs::symlink("b", b.join("root/a/up")).expect("symlink");
        std::os::unix::fs::symlink("..", b.join("root/a/b/c/loop")).expect("symlink");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            b.join("root/a/pipe"),
            FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .expect("fifo");
        let roots = resolve_roots(&[b.join("root")]).expect("root");
        let (walked, files) = walk_all(&roots, false);
        assert_eq!(files.len(), BATCH * 2 + 7 + 3);
        let mut names: Vec<_> = files.iter().map(|c| c.rel.clone()).collect();
        names.dedup();
        assert_eq!(names.len(), files.len(), "no file twice");
        let empty = files.iter().find(|c| c.rel.ends_with("empty")).expect("empty file");
        assert_eq!(empty.stat.size(), 0);
        let twin = files.iter().find(|c| c.rel.ends_with("twin.so")).expect("hard link");
        assert_eq!((twin.stat.links, twin.stat.size()), (2, 4));
        assert_eq!((walked.symlinks, walked.special, walked.problems.len()), (2, 1, 0));
        // Following links: `up` is walked as a folder, the loop back to `a/b` is a problem.
        let (walked, files) = walk_all(&roots, true);
        assert!(files.iter().any(|c| c.rel.as_ref() == Path::new("a/up/c/deep.so") && c.stat.links == 2));
        let loops: Vec<_> = walked.problems.iter().map(|p| p.message.as_str()).collect();
        assert!(loops.iter().all(|m| m.starts_with("symlink loop back to a")), "{loops:?}");
        assert!(!loops.is_empty());
    }

    /// A folder with more subfolders than may wait in the queue: the ones past it are listed by
    /// the worker that met them once that folder is closed, deep chains below them included
    /// (review finding: listing them inside it held a descriptor per level and overflowed the
    /// stack), and every file is still handed over once.
    #[test]
    fn a_folder_of_more_subfolders_than_the_queue_holds_is_walked_whole() {
        let base = tempfile::tempdir().expect("temp dir");
        let n = QUEUED + 300;
        for i in 0..n {
            let d = base.path().join(format!("root/d{i}"));
            fs::create_dir_all(&d).expect("mkdir");
            fs::write(d.join("f"), b"x").expect("write");
        }
        // A chain 600 folders deep under each of a few of them.
        for i in (0..n).step_by(1000) {
            let deep = base.path().join(format!("root/d{i}")).join("c/".repeat(600));
            fs::create_dir_all(&deep).expect("mkdir");
            fs::write(deep.join("deep"), b"x").expect("write");
        }
        let roots = resolve_roots(&[base.path().join("root")]).expect("root");
        // One worker: the queue fills while it lists, and the rest wait in its own list.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
        let (walked, files) = pool.install(|| walk_all(&roots, false));
        assert_eq!(files.len(), n + n.div_ceil(1000));
        assert!(walked.problems.is_empty());
    }
}
