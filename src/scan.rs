//! Scanning: walk → read → classify → parse → resolve, in parallel, into a sorted [`Snapshot`].
//!
//! This and `walk` are the only modules that touch files. Each file is opened without following
//! links and without blocking (a FIFO swapped in after the walk cannot hang the scan), checked
//! to be regular, and read only where a parser asks: the first bytes for the magic, then headers,
//! tables and notes through positioned reads. A file that fails becomes a [`Problem`] and the
//! scan goes on. Results are sorted afterwards, so the thread count never changes the output.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags};

use anyhow::{bail, Context};
use rayon::prelude::*;

use crate::aggregate::summarize_targets;
use crate::archive::{self, budget_for, Budget, Origin};
use crate::families;
use crate::inspect::resolve::resolve_code_object;
use crate::model::{
    ArchiveRecord, Artifact, CodeObjectRecord, Container, Family, FileRecord, LinkRecord, Problem, RelPath,
    Snapshot, Summary, Tool, SCHEMA_VERSION,
};
use crate::parse::bundle::inflate_stream;
use crate::parse::bundle::{parse_bundles, Bundle, BundleFormat, Bundles};
use crate::parse::elf::{parse_code_object, CodeObject};
use crate::parse::firmware::{inflate_firmware, parse_firmware_header};
use crate::parse::host::parse_host_elf;
use crate::parse::magic::{classify, Kind, SNIFF_LEN};
use crate::parse::miopen::{count_text_records, parse_lfs_pointer};
use crate::parse::tensile::{parse_extop_archs, parse_solution_map, parse_tensile_index};
use crate::parse::{check_range, push_unique, ByteSource, ParseError};
use crate::source::walk::{resolve_roots, walk, Candidate, Root};
use crate::vocab::codec::Codec;
use crate::vocab::targets::Targets;

/// What to scan and how.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    /// Roots as the user named them.
    pub roots: Vec<PathBuf>,
    /// Worker threads; `None` = one per core.
    pub threads: Option<usize>,
    /// Follow symbolic links (loops are detected).
    pub follow_links: bool,
}

/// Progress events, for a progress bar the caller draws.
pub trait Progress: Sync {
    /// The walk met one more entry.
    fn walked(&self) {}
    /// The walk finished with `n` files to read.
    fn reading(&self, _n: u64) {}
    /// One file was read.
    fn file_done(&self) {}
    /// A problem was found (for a live warning).
    fn problem(&self, _roots: &[String], _p: &Problem) {}
}

/// No progress reporting.
pub struct Silent;
impl Progress for Silent {}

/// A file read through positioned reads: the scanner's [`ByteSource`].
pub struct FileSource {
    file: File,
    len: u64,
    /// Which file this is, whatever name opened it, and as it was when opened.
    id: FileId,
}

/// A file's identity and state: device, inode, size, and modification and change times (s, ns).
/// The times tell a file from a later one given a freed inode number: a new file, or a link
/// count that changed, sets a new change time.
type FileId = (u64, u64, u64, i64, i64, i64, i64);

fn file_id(m: &std::fs::Metadata) -> FileId {
    (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec())
}

impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, ParseError> {
        check_range(self.len, offset, len, "file data")?;
        // Every read lands in fresh spare capacity, never zero-filled first: zeroing was a
        // quarter of a whole scan's instructions (callgrind), for bytes pread overwrites anyway.
        let mut buf: Vec<u8> = Vec::with_capacity(len);
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let Ok(at) = libc::off_t::try_from(at) else {
                return Err(ParseError::Io { offset: at, detail: "offset too large".into() });
            };
            // SAFETY: `buf` owns `len` bytes of capacity; pread writes at most `len - done`
            // bytes starting `done` bytes in, all inside that allocation, and nothing reads
            // them until the loop has filled all `len` and `set_len` below publishes them.
            let n = unsafe {
                libc::pread(self.file.as_raw_fd(), buf.as_mut_ptr().add(done).cast(), len - done, at)
            };
            match n {
                n if n > 0 => done += n as usize,
                0 => {
                    return Err(ParseError::Truncated {
                        what: "file (it shrank while being read)",
                        offset: at as u64,
                    })
                }
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(ParseError::Io { offset: at as u64, detail: e.to_string() });
                    }
                }
            }
        }
        // SAFETY: the loop above initialised exactly `len` bytes.
        unsafe { buf.set_len(len) };
        Ok(Cow::Owned(buf))
    }

    fn will_need(&self, offset: u64, len: u64) {
        // A length of 0 would mean "to the end of the file".
        let (Ok(offset), Ok(len @ 1..)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return;
        };
        // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open. Its
        // result is ignored: advice that does not take changes nothing but speed.
        unsafe { libc::posix_fadvise(self.file.as_raw_fd(), offset, len, libc::POSIX_FADV_WILLNEED) };
    }
}

impl FileSource {
    /// Turns the kernel's readahead off for this file. A host library's facts are headers
    /// scattered through a `.hip_fatbin` of up to gigabytes, a few KiB every few dozen KiB:
    /// readahead fetched 128 KiB around each, four times the bytes on a cold cache, for no gain
    /// in time. Its sections searched whole are read in 4 MiB pieces, which need no readahead.
    /// (Code-object files keep readahead: their notes are one long run read in order, asked
    /// for ahead by [`ByteSource::will_need`]; without readahead their cold scan was slower.)
    fn read_scattered(&self) {
        // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open.
        // Its result is ignored: advice that does not take changes nothing but speed.
        unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    }
}

/// Opens a candidate for reading: no link following, no blocking, regular files only.
pub fn open_regular(path: &std::path::Path) -> std::io::Result<FileSource> {
    open_file(path, false)
}

/// [`open_regular`], following a last symbolic link when `follow` (a link the walk followed at
/// the user's request).
fn open_file(path: &std::path::Path, follow: bool) -> std::io::Result<FileSource> {
    let flags = if follow { 0 } else { libc::O_NOFOLLOW };
    let file =
        OpenOptions::new().read(true).custom_flags(flags | libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("no longer a regular file"));
    }
    Ok(FileSource { file, len: meta.len(), id: file_id(&meta) })
}

/// What reading one regular file (or archive member) gave.
#[derive(Debug, Clone)]
pub struct FileOutcome {
    pub path: RelPath,
    pub kind: Kind,
    pub size: u64,
    pub record: Option<FileRecord>,
    pub problems: Vec<String>,
}

impl FileOutcome {
    /// The same outcome under another path (a hard link's).
    pub fn set_path(&mut self, path: RelPath) {
        if let Some(r) = &mut self.record {
            r.path = path.clone();
        }
        self.path = path;
    }
}

/// A symbolic link met, in a walked tree or an archive.
#[derive(Debug, Clone)]
pub struct LinkSeen {
    pub path: RelPath,
    /// The path its family is judged by (its real path, or its path inside the archive).
    pub name: PathBuf,
    /// Where it points, as stored.
    pub target: String,
}

/// What reading one candidate gave: one file, or the members of an archive.
#[derive(Debug, Default)]
pub struct Found {
    pub files: Vec<FileOutcome>,
    pub links: Vec<LinkSeen>,
    pub symlinks: u64,
    pub problems: Vec<Problem>,
    pub archives: Vec<ArchiveRecord>,
}

impl Found {
    /// Adds a problem at `path`.
    pub fn problem(&mut self, path: RelPath, message: String) {
        self.problems.push(Problem { path, message });
    }

    /// Takes in everything `other` found.
    pub fn merge(&mut self, other: Found) {
        self.files.extend(other.files);
        self.links.extend(other.links);
        self.symlinks += other.symlinks;
        self.problems.extend(other.problems);
        self.archives.extend(other.archives);
    }

    fn one(file: FileOutcome) -> Found {
        Found { files: vec![file], ..Found::default() }
    }
}

fn format_name(f: BundleFormat) -> String {
    match f {
        BundleFormat::Plain => "plain".to_string(),
        BundleFormat::Ccob(v) => format!("ccob-v{v}"),
    }
}

/// Collects code objects and problems from parsed structures.
struct Collector<'t> {
    targets: &'t Targets,
    code_objects: Vec<CodeObjectRecord>,
    problems: Vec<String>,
    bundles: u64,
}

impl Collector<'_> {
    fn record(
        &mut self,
        co: &CodeObject,
        container: Container,
        offset: u64,
        bundle: Option<(&Bundle, u64, &str)>,
    ) {
        if let Some(defect) = &co.defect {
            let what = match bundle {
                Some((_, at, id)) => format!("bundle at {at:#x}, entry {id}"),
                None if container == Container::File => "code object".to_string(),
                None => format!("code object at {offset:#x}"),
            };
            self.problems.push(format!("{what}: {defect}"));
        }
        let r = resolve_code_object(co, self.targets);
        self.code_objects.push(CodeObjectRecord {
            processor: r.processor,
            target_id: r.target_id,
            code_object_version: co.header.code_object_version(),
            size: co.size,
            kernels: co.kernels(),
            container,
            bundle_entry_id: bundle.map(|(_, _, id)| id.to_string()),
            bundle_format: bundle.map(|(b, _, _)| format_name(b.format)),
            compression: bundle.and_then(|(b, _, _)| b.compression.map(|c| c.name().to_string())),
            bundle_offset: bundle.map(|(_, at, _)| at),
            offset,
            e_flags: co.header.e_flags,
            generic_version: r.generic_version,
            isa_version: (co.header.code_object_version() == Some(2))
                .then(|| co.notes.isa_version.map(|(a, b, c)| format!("{a}.{b}.{c}")))
                .flatten(),
        });
    }

    /// Records every entry of the bundles of a region that starts at file offset `base`.
    fn bundles(&mut self, base: u64, found: &Bundles, region: &str) {
        for b in &found.bundles {
            self.bundles += 1;
            let at = base + b.offset;
            for e in &b.entries {
                let Some(result) = &e.code_object else { continue };
                let offset = if b.compression.is_some() { e.table.offset } else { at + e.table.offset };
                match result {
                    Ok(co) => self.record(co, Container::Bundle, offset, Some((b, at, &e.table.id))),
                    Err(err) => {
                        self.problems.push(format!("{region}bundle at {at:#x}, entry {}: {err}", e.table.id))
                    }
                }
            }
            if let Some(err) = &b.error {
                self.problems.push(format!("{region}bundle at {at:#x}: {}", err.clone().rebased(base)));
            }
        }
        if let Some(err) = &found.stopped {
            self.problems.push(format!("{region}{}", err.clone().rebased(base)));
        }
    }
}

/// Bytes of the head that family detection and firmware headers look at.
const FAMILY_HEAD: usize = 64;

/// What reading a candidate's first bytes gave: a finished file, or an archive to expand.
enum Read {
    Done(Found),
    Archive(Box<PendingArchive>),
}

/// An archive found by its first bytes, expanded after the plain files (see [`scan`]). It is
/// opened again then: a tree of thousands of packages must not hold thousands of files open.
struct PendingArchive {
    disk: PathBuf,
    /// Opened through a symbolic link the walk followed.
    followed: bool,
    format: archive::Format,
    path: RelPath,
}

impl PendingArchive {
    fn expand(&self, targets: &Targets) -> Found {
        let src = match open_file(&self.disk, self.followed) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                let mut f = Found::default();
                f.problem(self.path.clone(), e.to_string());
                return f;
            }
        };
        let budget = Budget::new(budget_for(src.len));
        let ctx = archive::Ctx { targets, budget: budget.clone(), depth: 0, base: self.path.clone() };
        budget.settle(archive::expand(Arc::new(Origin::file(src)), self.format, &ctx), &self.path)
    }
}

/// What reading a file leaves for its hard links (see [`read_link`]): which file it was, and
/// the first bytes its family was judged by.
struct Opened {
    id: FileId,
    head: Vec<u8>,
}

impl Opened {
    fn new(id: FileId, mut head: Vec<u8>) -> Opened {
        head.truncate(FAMILY_HEAD);
        Opened { id, head }
    }
}

/// Reads one candidate; also says which file it opened, for its hard links.
fn read_file(c: &Candidate, targets: &Targets) -> (Read, Option<Opened>) {
    let path = RelPath::new(c.root, c.rel.as_os_str());
    let failed = |path: RelPath, size: u64, message: String| {
        Read::Done(Found::one(FileOutcome {
            path,
            kind: Kind::Other,
            size,
            record: None,
            problems: vec![message],
        }))
    };
    let src = match open_file(&c.path, c.followed) {
        Ok(s) => s,
        Err(e) => return (failed(path, 0, e.to_string()), None),
    };
    let head = match src.read_up_to(0, SNIFF_LEN) {
        Ok(h) => h.into_owned(),
        Err(e) => return (failed(path, src.len, e.to_string()), None),
    };
    let kind = classify(&head);
    if kind == Kind::HostElf {
        src.read_scattered();
    }
    if matches!(kind, Kind::Ar | Kind::Zip | Kind::Tar | Kind::Gzip | Kind::Zstd | Kind::Xz) {
        let src = Arc::new(src);
        let origin = Arc::new(Origin::file(src.clone()));
        let budget = Budget::new(budget_for(src.len));
        if let Some(format) = archive::detect(kind, &head, &origin, &budget) {
            return (
                Read::Archive(Box::new(PendingArchive {
                    disk: c.path.clone(),
                    followed: c.followed,
                    format,
                    path,
                })),
                None,
            );
        }
        let found = Found::one(inspect(&*src, &head, &c.path, Some(&c.path), path, targets));
        return (Read::Done(found), Some(Opened::new(src.id, head)));
    }
    let found = Found::one(inspect(&src, &head, &c.path, Some(&c.path), path, targets));
    (Read::Done(found), Some(Opened::new(src.id, head)))
}

/// For each candidate, the earlier candidate it may be a hard link to: the first one listed
/// with the same inode number; [`read_link`] confirms it is the same file before sharing.
fn hard_link_leaders(candidates: &[Candidate]) -> Vec<Option<usize>> {
    let mut first: HashMap<u64, usize> = HashMap::new();
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| first.get(&c.ino).copied().or_else(|| first.insert(c.ino, i).and(None)))
        .collect()
}

/// Reads `c`, a name that may be a hard link to `leader`, whose one file was read as `kept`
/// (`None` when the leader's result was not one file: an archive, or a file that could not be
/// opened or read). A hard link is the same bytes, so `c` takes the leader's result under its
/// own path when all of these hold; otherwise it is read on its own:
/// - `c` is still that very file, unchanged: `lstat` gives the device, inode, size and times
///   the leader's `fstat` gave;
/// - both names end in the same file name (names decide checks such as "named `.zst` but not
///   zstd" and the format a family expects);
/// - the family judged from each full path and the shared first bytes is the same (folders
///   decide families too: a `library` folder makes a Tensile file).
fn read_link(
    c: &Candidate,
    leader: &Candidate,
    kept: Option<&(FileOutcome, Opened)>,
    targets: &Targets,
) -> Read {
    let same = kept.filter(|(outcome, opened)| {
        let family =
            |p: &Path| families::detect(p, families::Content::File(outcome.kind, &opened.head), targets);
        c.path.file_name() == leader.path.file_name()
            && std::fs::symlink_metadata(&c.path).is_ok_and(|m| m.is_file() && file_id(&m) == opened.id)
            && family(&c.path) == family(&leader.path)
    });
    match same {
        Some((outcome, _)) => {
            let mut outcome = outcome.clone();
            outcome.set_path(RelPath::new(c.root, c.rel.as_os_str()));
            Read::Done(Found::one(outcome))
        }
        None => read_file(c, targets).0,
    }
}

/// What a scan has gathered: summary counts, the records of files worth reporting, problems,
/// links and archives. Files are counted and dropped as they come, unless they have a record.
#[derive(Default)]
struct Tally {
    summary: Summary,
    files: Vec<FileRecord>,
    problems: Vec<Problem>,
    links: Vec<LinkSeen>,
    archives: Vec<ArchiveRecord>,
}

impl Tally {
    fn add(&mut self, found: Found) {
        for o in found.files {
            self.summary.files += 1;
            self.summary.bytes += o.size;
            *self.summary.kinds.entry(o.kind).or_default() += 1;
            for message in o.problems {
                self.problems.push(Problem { path: o.path.clone(), message });
            }
            self.files.extend(o.record);
        }
        self.summary.symlinks += found.symlinks;
        self.links.extend(found.links);
        self.problems.extend(found.problems);
        self.archives.extend(found.archives);
    }

    /// Both tallies in one; everything is sorted at the end, so the order of merging is free.
    fn merge(mut self, other: Tally) -> Tally {
        self.summary.files += other.summary.files;
        self.summary.bytes += other.summary.bytes;
        self.summary.symlinks += other.summary.symlinks;
        for (kind, n) in other.summary.kinds {
            *self.summary.kinds.entry(kind).or_default() += n;
        }
        self.files.extend(other.files);
        self.problems.extend(other.problems);
        self.links.extend(other.links);
        self.archives.extend(other.archives);
        self
    }
}

/// One worker's share of the reading: its tally, the archives it found (expanded later, in
/// candidate order), and the results it keeps for hard links to the files it read.
#[derive(Default)]
struct Part {
    tally: Tally,
    pending: Vec<(usize, Box<PendingArchive>)>,
    kept: Vec<(usize, FileOutcome, Opened)>,
}

impl Part {
    fn merge(mut self, other: Part) -> Part {
        self.tally = self.tally.merge(other.tally);
        self.pending.extend(other.pending);
        self.kept.extend(other.kept);
        self
    }
}

/// Inspects one regular file or archive member: its kind, code objects and family facts.
/// `name` is the path its family is judged by; `disk` its path on disk, when it has one.
pub fn inspect(
    src: &dyn ByteSource,
    head: &[u8],
    name: &Path,
    disk: Option<&Path>,
    path: RelPath,
    targets: &Targets,
) -> FileOutcome {
    let size = src.len();
    let kind = classify(head);
    let mut out = FileOutcome { path, kind, size, record: None, problems: Vec::new() };
    if size < 4 {
        out.kind = Kind::Other;
        return out;
    }
    let head = head.get(..FAMILY_HEAD).unwrap_or(head);
    let mut col = Collector { targets, code_objects: Vec::new(), problems: Vec::new(), bundles: 0 };
    match kind {
        Kind::AmdgpuElf => match parse_code_object(src, Some(size)) {
            Ok(co) => col.record(&co, Container::File, 0, None),
            Err(e) => col.problems.push(e.to_string()),
        },
        Kind::OffloadBundle | Kind::CompressedOffloadBundle => col.bundles(0, &parse_bundles(src), ""),
        Kind::HostElf => match parse_host_elf(src) {
            Ok(facts) => {
                if let Some((base, found)) = &facts.fatbin {
                    col.bundles(*base, found, ".hip_fatbin: ");
                }
                for (section, err) in &facts.unsearched {
                    col.problems.push(format!("{section} not searched for embedded code objects: {err}"));
                }
                for e in &facts.embedded {
                    match &e.code_object {
                        Ok(co) => {
                            let b = e.bundle_entry_id.as_deref();
                            col.record(co, Container::Embedded, e.offset, None);
                            if let (Some(id), Some(last)) = (b, col.code_objects.last_mut()) {
                                last.bundle_entry_id = Some(id.to_string());
                            }
                        }
                        Err(err) => col.problems.push(format!("code object at {:#x}: {err}", e.offset)),
                    }
                }
            }
            Err(e) => col.problems.push(e.to_string()),
        },
        _ => {}
    }
    // File order: a code object in a compressed bundle sits where its bundle does.
    col.code_objects.sort_by_key(|c| (c.bundle_offset.unwrap_or(c.offset), c.offset));
    let artifact = families::detect(name, families::Content::File(kind, head), targets).map(|mut a| {
        match a.family {
            Some(Family::Tensile) => {
                tensile_facts(&mut a, src, &col.code_objects, targets, &mut col.problems)
            }
            _ => gather_facts(&mut a, src, name, disk, head, &mut col.problems),
        }
        a
    });
    if let (None, Some(format)) = (&artifact, kind.unread_format()) {
        col.problems.push(format!(
            "not read: {format} (gfxscan does not open {format} data; unpack it and scan the result)"
        ));
    }
    out.problems = col.problems;
    if !col.code_objects.is_empty() || col.bundles > 0 || artifact.is_some() {
        out.record = Some(FileRecord {
            path: out.path.clone(),
            kind,
            size,
            bundles: col.bundles,
            code_objects: col.code_objects,
            artifact,
        });
    }
    out
}

/// Counts the rows of `table` in an SQLite database, opened read-only and immutable (no
/// locks, no journal or WAL files): SQLite reads only the table's b-tree pages.
fn sqlite_rows_on_disk(path: &Path, table: &str) -> Result<u64, String> {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&uri, flags).map_err(|e| format!("sqlite: {e}"))?;
    count_rows(&conn, table)
}

fn count_rows(conn: &Connection, table: &str) -> Result<u64, String> {
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
        .map_err(|e| format!("sqlite: {e}"))
}

/// Largest SQLite database without a path (an archive member) loaded into memory to count rows.
const SQLITE_IN_MEMORY: u64 = 256 << 20;

/// Counts the rows of `table` in an SQLite database that has no path on disk: it is loaded
/// read-only into an in-memory database, up to [`SQLITE_IN_MEMORY`] bytes.
fn sqlite_rows_in_memory(src: &dyn ByteSource, table: &str) -> Result<u64, String> {
    let len = src.len();
    if len > SQLITE_IN_MEMORY {
        return Err(format!(
            "SQLite database of {len} bytes in an archive, over {SQLITE_IN_MEMORY}: rows not counted"
        ));
    }
    let mut conn = Connection::open_in_memory().map_err(|e| format!("sqlite: {e}"))?;
    conn.deserialize_read_exact("main", archive::SourceReader::new(src, len), len as usize, true)
        .map_err(|e| format!("sqlite: {e}"))?;
    count_rows(&conn, table)
}

/// Largest compressed firmware blob read whole to reach its header.
const MAX_COMPRESSED_FIRMWARE: u64 = 64 << 20;

/// Adds what only a Tensile file's content can say: the processors of its code objects, the
/// hardware rows of an index, the libraries a hipBLASLt solution map names, the architectures
/// of an ExtOp index. A fact that cannot be read is a problem; the artifact is still listed.
fn tensile_facts(
    a: &mut Artifact,
    src: &dyn ByteSource,
    cos: &[CodeObjectRecord],
    targets: &Targets,
    problems: &mut Vec<String>,
) {
    let known = |archs: Vec<String>| -> Vec<String> {
        archs.into_iter().filter_map(|x| targets.by_name(&x).map(|t| t.name.clone())).collect()
    };
    if !cos.is_empty() {
        let mut procs: Vec<String> = Vec::new();
        for c in cos {
            push_unique(&mut procs, &c.processor);
        }
        a.content_targets = Some(procs);
        return;
    }
    match (a.role.as_str(), a.format.as_str()) {
        ("solution-map", "msgpack") => match parse_solution_map(src) {
            Ok(m) => {
                a.entries = Some(m.libraries);
                a.lists_targets = Some(known(m.archs));
            }
            Err(e) => problems.push(format!("hipBLASLt solution map: {e}")),
        },
        // Its entries are per architecture, like an index's hardware rows.
        ("extop-index", "msgpack") => match parse_extop_archs(src) {
            Ok(archs) => a.content_targets = Some(known(archs)),
            Err(e) => problems.push(format!("hipBLASLt ExtOp index: {e}")),
        },
        ("lazy-index" | "index" | "merged-index", format) => {
            let index = match format {
                "msgpack" => parse_tensile_index(src),
                "zlib" => inflate_stream(src, Codec::Zlib).and_then(|s| parse_tensile_index(&s)),
                _ => return,
            };
            match index {
                Ok(idx) if idx.library_type.as_deref() == Some("Hardware") => {
                    a.content_targets = Some(idx.processors);
                    a.any_processor = idx.any_processor;
                }
                Ok(_) => {}
                Err(e) => problems.push(format!("Tensile index: {e}")),
            }
        }
        _ => {}
    }
}

/// Adds what only the content can say of MIOpen databases and firmware: record counts,
/// git-lfs pointer sizes, firmware headers. A fact that cannot be read is a problem; the
/// artifact is still listed.
fn gather_facts(
    a: &mut Artifact,
    src: &dyn ByteSource,
    path: &Path,
    disk: Option<&Path>,
    head: &[u8],
    problems: &mut Vec<String>,
) {
    match a.family {
        Some(Family::Miopen) => match a.format.as_str() {
            "sqlite" => {
                let table = if a.role.contains("kernel") { "kern_db" } else { "perf_db" };
                let rows = match disk {
                    Some(p) => sqlite_rows_on_disk(p, table),
                    None => sqlite_rows_in_memory(src, table),
                };
                match rows {
                    Ok(n) => a.records = Some(n),
                    Err(e) => problems.push(e),
                }
            }
            "text" if a.role.ends_with("-db") => match count_text_records(src) {
                Ok(n) => a.records = Some(n),
                Err(e) => problems.push(e.to_string()),
            },
            "git-lfs-pointer" => {
                a.lfs_size = src.read_up_to(0, 1024).ok().and_then(|t| parse_lfs_pointer(&t))
            }
            _ => {}
        },
        Some(Family::Firmware) => {
            a.header = match a.format.as_str() {
                "zstd" | "xz" if src.len() <= MAX_COMPRESSED_FIRMWARE => {
                    match src.read_at(0, src.len() as usize).map_err(|e| e.to_string()).and_then(|d| {
                        inflate_firmware(&d, if a.format == "xz" { Codec::Xz } else { Codec::Zstd })
                    }) {
                        Ok(blob) => parse_firmware_header(&blob, blob.len() as u64),
                        Err(e) => {
                            problems.push(format!("compressed firmware: {e}"));
                            None
                        }
                    }
                }
                "raw" => {
                    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
                    if name.ends_with(".zst") || name.ends_with(".xz") {
                        problems.push("named as compressed firmware, but holds no zstd or xz data".into());
                    }
                    parse_firmware_header(head, src.len())
                }
                _ => None,
            };
        }
        _ => {}
    }
}

/// Scans the roots and returns the snapshot. Fails only when nothing can be scanned.
pub fn scan(config: &ScanConfig, targets: &Targets, progress: &dyn Progress) -> anyhow::Result<Snapshot> {
    let roots: Vec<Root> = resolve_roots(&config.roots).map_err(anyhow::Error::msg)?;
    if roots.is_empty() {
        bail!("no root to scan");
    }
    // Roots that lead to the same tree were merged: indexes refer to the ones kept.
    let given: Vec<String> = roots.iter().map(|r| r.given.display().to_string()).collect();
    let mut walked = walk(&roots, config.follow_links, &|| progress.walked());
    // An OCI image layout given as a root is read as the image, not as a folder of blobs.
    let layouts: Vec<usize> = (0..roots.len()).filter(|&i| archive::is_layout_dir(&roots[i].real)).collect();
    walked.candidates.retain(|c| !layouts.contains(&c.root));
    walked.links.retain(|l| !layouts.contains(&l.root));
    walked.problems.retain(|p| !layouts.contains(&p.path.root));
    progress.reading(walked.candidates.len() as u64);
    let mut problems = walked.problems;
    for p in &problems {
        progress.problem(&given, p);
    }

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads.unwrap_or(0))
        .build()
        .context("failed to start worker threads")?;
    let report = |found: &Found| {
        for p in &found.problems {
            progress.problem(&given, p);
        }
        for f in &found.files {
            for message in &f.problems {
                progress.problem(&given, &Problem { path: f.path.clone(), message: message.clone() });
            }
        }
        progress.file_done();
    };
    let threads = pool.current_num_threads().max(1);
    let mut tally = pool.install(|| {
        // Each file is read once, however many hard links name it: the first name is read,
        // then the others take its result (see `read_link`). Results are folded into tallies as
        // they come, so a tree of millions of files holds only what its report needs.
        let cands = &walked.candidates;
        let leaders = hard_link_leaders(cands);
        let followed: HashSet<usize> = leaders.iter().flatten().copied().collect();
        let take = |mut part: Part, i: usize, read: Read| {
            match read {
                Read::Done(f) => {
                    report(&f);
                    part.tally.add(f);
                }
                Read::Archive(a) => part.pending.push((i, a)),
            }
            part
        };
        let mut first = (0..cands.len())
            .into_par_iter()
            .filter(|&i| leaders.get(i).is_some_and(Option::is_none))
            .fold(Part::default, |mut part, i| {
                let Some(c) = cands.get(i) else { return part };
                let (read, opened) = read_file(c, targets);
                if let (Read::Done(f), Some(opened)) = (&read, opened) {
                    if followed.contains(&i) {
                        if let ([one], true) = (f.files.as_slice(), f.archives.is_empty()) {
                            part.kept.push((i, one.clone(), opened));
                        }
                    }
                }
                take(part, i, read)
            })
            .reduce(Part::default, Part::merge);
        let kept: HashMap<usize, (FileOutcome, Opened)> =
            std::mem::take(&mut first.kept).into_iter().map(|(i, o, id)| (i, (o, id))).collect();
        let later = (0..cands.len())
            .into_par_iter()
            .filter_map(|i| Some((i, (*leaders.get(i)?)?)))
            .fold(Part::default, |part, (i, l)| {
                let (Some(c), Some(leader)) = (cands.get(i), cands.get(l)) else { return part };
                let read = read_link(c, leader, kept.get(&l), targets);
                take(part, i, read)
            })
            .reduce(Part::default, Part::merge);
        let Part { mut tally, mut pending, .. } = first.merge(later);
        pending.sort_by_key(|(i, _)| *i);
        // Archives go after the plain files, read by as many workers as there are threads, each
        // one archive at a time: a thread waiting on its archive's members can then pick up only
        // member work or another worker, never start an archive of its own, so memory is bounded
        // by the thread count, not by the number of archives.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let expanded = std::sync::Mutex::new(Tally::default());
        rayon::scope(|scope| {
            for _ in 0..threads.min(pending.len()) {
                scope.spawn(|_| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((_, a)) = pending.get(i) else { break };
                    let f = a.expand(targets);
                    report(&f);
                    if let Ok(mut e) = expanded.lock() {
                        e.add(f);
                    }
                });
            }
        });
        tally = tally.merge(expanded.into_inner().unwrap_or_default());
        for &i in &layouts {
            let Some(r) = roots.get(i) else { continue };
            let budget = Budget::new(budget_for(archive::layout_size(&r.real)));
            let ctx = archive::Ctx { targets, budget, depth: 0, base: RelPath::new(i, OsStr::new("")) };
            if let Some(f) = archive::expand_layout_dir(&r.real, &ctx) {
                tally.add(f);
            }
        }
        tally
    });

    for l in &walked.links {
        tally.summary.symlinks += 1;
        tally.links.push(LinkSeen {
            path: RelPath::new(l.root, l.rel.as_os_str()),
            name: l.path.clone(),
            target: l.target.to_string_lossy().into_owned(),
        });
    }
    let Tally { mut summary, mut files, problems: found_problems, links: all_links, mut archives } = tally;
    problems.extend(found_problems);
    files.sort_by_cached_key(|f| f.path.sort_key());
    problems.sort_by_cached_key(|p| (p.path.sort_key(), p.message.clone()));
    summary.files_with_device_code = files.iter().filter(|f| !f.code_objects.is_empty()).count() as u64;
    summary.code_objects = files.iter().map(|f| f.code_objects.len() as u64).sum();
    let targets_summary = summarize_targets(&files);
    let mut links: Vec<LinkRecord> = all_links
        .iter()
        .filter_map(|l| {
            let artifact = families::detect_link(&l.name, targets)?;
            Some(LinkRecord { path: l.path.clone(), target: l.target.clone(), artifact: Some(artifact) })
        })
        .collect();
    links.sort_by_cached_key(|l| l.path.sort_key());
    archives.sort_by_cached_key(|a| a.path.sort_key());
    let mismatches = families::mismatches(&files, &links);
    let families = families::families_table(&files);
    Ok(Snapshot {
        schema_version: SCHEMA_VERSION,
        tool: Tool::current(),
        roots: given,
        summary,
        files,
        targets: targets_summary,
        problems,
        links,
        mismatches,
        families,
        filtered_to: None,
        via_generic: BTreeMap::new(),
        archives,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::{code_object, CodeObjectSpec};

    /// Review finding: a follower trusted device and inode alone. Between the leader's read and
    /// the follower's check, both names can go and a new file take the follower's name and the
    /// freed inode number (ext4 reuses them at once): it must be read, not given the old result.
    #[test]
    fn a_new_file_on_a_reused_inode_is_read_not_given_the_old_result() {
        let targets = Targets::builtin();
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a/lib/k.co"), dir.path().join("b/lib/k.co"));
        for p in [&a, &b] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        }
        std::fs::write(&a, code_object(&CodeObjectSpec::v4(0x3f, 0, &["k1", "k2", "k3"]))).unwrap();
        std::fs::hard_link(&a, &b).unwrap();
        let cand = |p: &Path| Candidate {
            root: 0,
            path: p.to_path_buf(),
            rel: p.strip_prefix(dir.path()).unwrap().to_path_buf(),
            ino: std::fs::metadata(p).unwrap().ino(),
            followed: false,
        };
        let (ca, cb) = (cand(&a), cand(&b));
        let (Read::Done(f), Some(opened)) = read_file(&ca, &targets) else { panic!("read") };
        let kept = (f.files[0].clone(), opened);
        // Unchanged, the follower takes the leader's result under its own path.
        let Read::Done(shared) = read_link(&cb, &ca, Some(&kept), &targets) else { panic!("read") };
        assert_eq!(shared.files[0].path, RelPath::new(0, cb.rel.as_os_str()));
        // Replaced, whatever inode the new file gets, it is read on its own.
        std::fs::remove_file(&a).unwrap();
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&b, code_object(&CodeObjectSpec::v4(0x30, 0, &["only"]))).unwrap();
        let kernels = |r: Read| match r {
            Read::Done(f) => f.files[0].record.as_ref().map(|r| r.code_objects[0].kernels),
            Read::Archive(_) => panic!("not an archive"),
        };
        assert_eq!(kernels(read_link(&cb, &ca, Some(&kept), &targets)), Some(Some(1)));
    }
}
