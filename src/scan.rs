//! The parallel driver: walk the roots, read every candidate once on a pool of `-j` threads
//! (hard links share one read), expand archives after the plain files, and hand the tallies to
//! `aggregate` for the snapshot.
//!
//! Files are opened and read by `source::file` (no link following, no blocking, positioned
//! reads) and inspected by `inspect`. A file that fails becomes a [`Problem`] and the scan goes
//! on. Results are sorted afterwards, so the thread count never changes the output.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{bail, Context};
use rayon::prelude::*;

use crate::aggregate::{self, Tally};
use crate::archive;
use crate::decode::{budget_for, Budget, Decoding};
use crate::families;
use crate::inspect::{inspect, FileOutcome, Found, LinkSeen, Reading, FAMILY_HEAD};
use crate::model::{FileIdentity, LinkRecord, Problem, RelPath, Snapshot};
use crate::parse::magic::{classify, Kind, SNIFF_LEN};
use crate::parse::{ByteSource, Depth};
use crate::reuse::{identity, Earlier, Survey, Want};
use crate::source::file::{file_id, open_file, FileId};
use crate::source::origin::Origin;
use crate::source::registry::{Fetching, RemoteImage};
use crate::source::walk::{resolve_roots, walk, Candidate, Other, Root, RootKind, Walk, Walked};
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
    /// With `follow_links`: walk into other file systems too (else stay on each root's).
    pub cross_file_systems: bool,
    /// Memory to aim under; `None` = [`crate::vocab::codec::MEMORY_TARGET`].
    pub max_memory: Option<u64>,
    /// `check`: the processors of the GPUs checked. The scan then reads only what verdicts
    /// need ([`Depth::Tables`]); `None` reads every fact (`scan`).
    pub check_for: Option<Vec<String>>,
    /// Only these files and folders (real paths inside the roots) are walked, each under the
    /// root it is in: what a program loads (`check --exe`); `None` walks each root whole.
    pub parts: Option<Vec<PathBuf>>,
    /// `scan --digests`: take each listed file's SHA-256 (reads listed files whole).
    pub digests: bool,
    /// `--reuse`: the facts of files unchanged since earlier snapshots, taken instead of read.
    pub reuse: Option<Arc<Earlier>>,
    /// What the snapshot records for a later `--reuse`.
    pub recording: Recording,
    /// How `registry:` roots are fetched.
    pub fetching: Fetching,
}

impl ScanConfig {
    /// A scan of `roots` as `gfxscan scan ROOT…` makes it with no options: every fact, the whole
    /// of each root, links not followed, one thread per core.
    pub fn of(roots: Vec<PathBuf>) -> ScanConfig {
        ScanConfig {
            roots,
            threads: None,
            follow_links: false,
            cross_file_systems: false,
            max_memory: None,
            check_for: None,
            parts: None,
            digests: false,
            reuse: None,
            recording: Recording::Off,
            fetching: Fetching::default(),
        }
    }

    /// The same, on `threads` worker threads.
    pub fn with_threads(self, threads: usize) -> ScanConfig {
        ScanConfig { threads: Some(threads), ..self }
    }

    /// How far this scan reads: every fact, or for `check` only what the verdicts of the GPUs
    /// it names need.
    pub fn depth<'a>(&'a self, targets: &'a Targets) -> Depth<'a> {
        self.check_for.as_deref().map_or(Depth::Facts, |wanted| Depth::Tables { wanted, targets })
    }
}

/// What a scan records in its snapshot for a later `--reuse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recording {
    Off,
    /// Each plain file's identity and, with the options that shape `scan`'s JSON, a rescan key
    /// when every file met was recorded ([`rescan_key`]).
    Rescan(crate::reuse::ScanOptions),
}

impl Recording {
    fn identities(&self) -> bool {
        *self != Recording::Off
    }

    fn options(&self) -> Option<&str> {
        match self {
            Recording::Rescan(o) => Some(o),
            Recording::Off => None,
        }
    }
}

/// Progress events, for a progress bar the caller draws.
pub trait Progress: Sync {
    /// One file was read (files are read as the walk finds them: no total is known before).
    fn file_done(&self) {}
    /// A problem was found (for a live warning).
    fn problem(&self, _roots: &[String], _p: &Problem) {}
    /// An image of `bytes` compressed bytes is about to be fetched: what to call with each
    /// count of bytes received.
    fn image(&self, _name: &str, _bytes: u64) -> Arc<dyn Fn(u64) + Send + Sync> {
        Arc::new(|_| {})
    }
}

/// No progress reporting.
pub struct Silent;
impl Progress for Silent {}

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
    format: archive::ArchiveFormat,
    path: RelPath,
}

impl PendingArchive {
    fn expand(&self, reading: Reading<'_>) -> Found {
        let src = match open_file(&self.disk, self.followed) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                let mut f = Found::default();
                f.problem(self.path.clone(), e.to_string());
                return f;
            }
        };
        let budget = Budget::new(budget_for(src.len));
        let ctx = archive::Ctx { reading, budget: budget.clone(), depth: 0, base: self.path.clone() };
        archive::settle(&budget, archive::expand(Arc::new(Origin::file(src)), self.format, &ctx), &self.path)
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

/// Reads one candidate, found on disk at `disk`; also says which file it opened, for its hard
/// links.
fn read_file(c: &Candidate, disk: &Path, reading: Reading<'_>) -> (Read, Option<Opened>) {
    let path = RelPath::new(c.root, c.rel.as_os_str());
    let failed = |path: RelPath, size: u64, message: String| {
        Read::Done(Found::one(FileOutcome {
            path,
            kind: Kind::Other,
            size,
            record: None,
            problems: vec![message],
            declared_targets: None,
            release: None,
        }))
    };
    if let Some(found) = judged_by_name(c, disk, &path, reading.depth) {
        return (Read::Done(found), None);
    }
    // An empty file is judged by its name alone (a `.tar.gz` that is empty is still a broken
    // promise): `stat` said it holds nothing, so it is not opened.
    if c.stat.size() == 0 {
        let empty: &[u8] = &[];
        if let Some(broken) = broken_promise(disk, empty) {
            return (failed(path, 0, broken), None);
        }
        let outcome = inspect(&Vec::new(), empty, disk, Some(disk), path, reading);
        return (Read::Done(Found::one(outcome)), None);
    }
    let src = match open_file(disk, c.followed) {
        Ok(s) => s,
        Err(e) => return (failed(path, 0, e.to_string()), None),
    };
    // At Depth::Tables every file's facts are a few scattered reads (a bundle's table, a code
    // object's header, an index): no readahead, from the first read on.
    if matches!(reading.depth, Depth::Tables { .. }) {
        src.read_scattered();
    }
    let head = match src.read_up_to(0, SNIFF_LEN) {
        Ok(h) => h.into_owned(),
        Err(e) => return (failed(path, src.len, e.to_string()), None),
    };
    let kind = classify(&head);
    if let Some(broken) = broken_promise(disk, &head) {
        return (failed(path, src.len, broken), None);
    }
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
                    disk: disk.to_path_buf(),
                    followed: c.followed,
                    format,
                    path,
                })),
                None,
            );
        }
        let found =
            Found::one(hashed(inspect(&*src, &head, disk, Some(disk), path, reading), &*src, reading));
        return (Read::Done(found), Some(Opened::new(src.id, head)));
    }
    let found = Found::one(hashed(inspect(&src, &head, disk, Some(disk), path, reading), &src, reading));
    (Read::Done(found), Some(Opened::new(src.id, head)))
}

/// A name that promises an archive its first bytes do not keep (a page saved by a failed
/// download, an empty file): the problem to report.
fn broken_promise(disk: &Path, head: &[u8]) -> Option<String> {
    let name = disk.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let kind = classify(head);
    let (what, _) = archive::promised_by_name(&name).filter(|(_, kinds)| !kinds.contains(&kind))?;
    Some(archive::broken_promise(what, head))
}

/// At [`Depth::Tables`], a file whose name alone gives the verdict what it needs (a MIOpen
/// database of a GPU not being checked, `families::miopen::judged_by_name`): its record, made
/// from its name and size, unopened.
fn judged_by_name(c: &Candidate, disk: &Path, path: &RelPath, depth: Depth<'_>) -> Option<Found> {
    let Depth::Tables { wanted, targets } = depth else { return None };
    let size = c.stat.size();
    let artifact = families::miopen::judged_by_name(disk, size, wanted, targets)?;
    let kind = if artifact.format == crate::model::Storage::Sqlite { Kind::Sqlite } else { Kind::Other };
    let record = crate::model::FileRecord {
        path: path.clone(),
        kind,
        size,
        bundles: 0,
        code_objects: Vec::new(),
        artifact: Some(artifact),
        kpack_ref: None,
        hard_link_of: None,
        sha256: None,
    };
    Some(Found::one(FileOutcome {
        path: path.clone(),
        kind,
        size,
        record: Some(Box::new(record)),
        problems: Vec::new(),
        declared_targets: None,
        release: None,
    }))
}

/// With `--digests`, a listed file's outcome with its SHA-256 (or the problem saying why not).
fn hashed(mut outcome: FileOutcome, src: &dyn ByteSource, reading: Reading<'_>) -> FileOutcome {
    if reading.digests && outcome.record.is_some() {
        outcome.set_digest(crate::source::digest::sha256_of(src));
    }
    outcome
}

/// For each candidate, the candidate it may be a hard link to: of the names with the same
/// inode number, the first in path order; [`read_link`] confirms it is the same file before sharing.
/// Found by sorting (inode, index) pairs: 16 bytes a name for the moment, 8 kept, where a hash
/// map of a million names would hold ~40 MB.
fn hard_link_leaders(candidates: &[Candidate]) -> Vec<Option<u32>> {
    let mut leaders = vec![None; candidates.len()];
    let Ok(_) = u32::try_from(candidates.len()) else { return leaders };
    let mut by_ino: Vec<(u64, u32)> = candidates.iter().zip(0u32..).map(|(c, i)| (c.stat.ino(), i)).collect();
    by_ino.sort_unstable();
    // Byte order of the path: the order the snapshot lists files in.
    let rel = |i: u32| {
        use std::os::unix::ffi::OsStrExt;
        candidates.get(i as usize).map(|c| (c.root, c.rel.as_os_str().as_bytes()))
    };
    for run in by_ino.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
        // The first name in path order leads, whatever order the directories listed them in.
        let Some(first) = run.iter().map(|(_, i)| *i).min_by_key(|&i| rel(i)) else { continue };
        for &(_, i) in run.iter().filter(|(_, i)| *i != first) {
            if let Some(slot) = leaders.get_mut(i as usize) {
                *slot = Some(first);
            }
        }
    }
    leaders
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
    (c, disk): (&Candidate, &Path),
    (lead, leader): (&Candidate, &Path),
    kept: Option<&(FileOutcome, Opened)>,
    reading: Reading<'_>,
) -> Read {
    let targets = reading.targets;
    let same = kept.filter(|(outcome, opened)| {
        let family =
            |p: &Path| families::detect(p, families::Content::File(outcome.kind, &opened.head), targets);
        disk.file_name() == leader.file_name()
            && std::fs::symlink_metadata(disk).is_ok_and(|m| m.is_file() && file_id(&m) == opened.id)
            && family(disk) == family(leader)
    });
    match same {
        Some((outcome, _)) => {
            let mut outcome = outcome.clone();
            outcome.set_path(RelPath::new(c.root, c.rel.as_os_str()));
            if let Some(r) = &mut outcome.record {
                r.hard_link_of = Some(RelPath::new(lead.root, lead.rel.as_os_str()));
            }
            Read::Done(Found::one(outcome))
        }
        None => read_file(c, disk, reading).0,
    }
}

/// One worker's share of the reading: its tally, the archives it found (expanded later, in
/// path order), and the results it keeps for hard links to the files it read.
#[derive(Default)]
struct Part {
    tally: Tally,
    pending: Vec<PendingArchive>,
    kept: Vec<(usize, FileOutcome, Opened)>,
    /// With [`Recording::Rescan`]: the plain files read, as `stat` showed them.
    identities: Vec<FileIdentity>,
    /// With [`Recording::Rescan`]: everything the walk met, for the rescan key.
    survey: Survey,
}

impl Part {
    fn merge(mut self, other: Part) -> Part {
        self.tally = self.tally.merge(other.tally);
        self.pending.extend(other.pending);
        self.kept.extend(other.kept);
        self.identities.extend(other.identities);
        self.survey = self.survey.merge(other.survey);
        self
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
    // An OCI image layout given as a root is read as the image, not as a folder of blobs.
    let layouts: Vec<usize> = (0..roots.len())
        .filter(|&i| roots[i].kind != RootKind::DockerArchive && archive::is_layout_dir(&roots[i].real))
        .collect();
    for r in roots.iter().filter(|r| r.kind == RootKind::OciDir) {
        if !archive::is_layout_dir(&r.real) {
            bail!("{}: not an OCI image layout (no oci-layout and index.json in it)", r.given.display());
        }
    }
    // Images in registries are resolved to their manifests before anything is read: a name
    // that is not there, or access refused, fails the command as a root that does not exist.
    let mut images: Vec<(usize, RemoteImage)> = Vec::new();
    for (i, r) in roots.iter().enumerate() {
        if let RootKind::Registry(image) = &r.kind {
            // Half the memory aim for the one member of an image held whole at a time (images
            // are read one after another, members past `archive::IN_MEMORY` one at a time).
            let fetching = Fetching {
                hold: config.max_memory.unwrap_or(crate::decode::MEMORY_TARGET) / 2,
                ..config.fetching.clone()
            };
            let resolved = crate::source::registry::resolve(image, &fetching)
                .with_context(|| format!("{}", r.given.display()))?;
            images.push((i, resolved));
        }
    }
    let skip: Vec<usize> = layouts.iter().copied().chain(images.iter().map(|(i, _)| *i)).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads.unwrap_or(0))
        .build()
        .context("failed to start worker threads")?;
    // Decoders share this scan's memory budget, sized for the threads that may hold them.
    let target = config.max_memory.unwrap_or(crate::decode::MEMORY_TARGET);
    let decoding = Decoding::new(pool.current_num_threads(), target);
    let reading =
        Reading { targets, depth: config.depth(targets), decoding: &decoding, digests: config.digests };
    let began = std::time::SystemTime::now();
    let reader = Reader {
        reading,
        progress,
        given: &given,
        roots: &roots,
        earlier: config.reuse.as_deref().map(|e| (e, e.roots_of(&given))),
        recording: config.recording.identities().then_some(began),
    };
    let (mut tally, walked, identities, survey) = pool.install(|| {
        let (Part { mut tally, mut pending, identities, survey, .. }, walked) =
            reader.walk_and_read(config, &skip);
        pending.sort_by_cached_key(|a| a.path.sort_key());
        tally = tally.merge(reader.expand_archives(&pending, pool.current_num_threads().max(1)));
        for &i in &layouts {
            tally = tally.merge(reader.expand_layout(&roots, i));
        }
        for (i, image) in &images {
            tally = tally.merge(reader.expand_registry(*i, image));
        }
        (tally, walked, identities, survey)
    });
    let survey = walked_survey(survey, &walked);
    // The decoders kept for reuse are not needed past the reading.
    decoding.drain_idle();
    tally.summary.special_files += walked.special;
    tally.links_out_of_root.extend(walked.left_root.into_iter().map(|(root, rel, real)| LinkRecord {
        path: RelPath::new(root, rel.as_os_str()),
        target: real.to_string_lossy().into_owned(),
        artifact: None,
    }));
    for l in &walked.links {
        tally.summary.symlinks += 1;
        tally.links.push(LinkSeen {
            path: RelPath::new(l.root, l.rel.as_os_str()),
            name: l.path.clone(),
            target: l.target.to_string_lossy().into_owned(),
        });
    }
    tally.problems.extend(walked.problems);
    // `docker-archive:` promises an image: a root so named that read as anything else says so.
    for (i, r) in roots.iter().enumerate().filter(|(_, r)| r.kind == RootKind::DockerArchive) {
        let image = |a: &crate::model::ArchiveRecord| {
            a.path.root == i
                && a.path.bytes().is_empty()
                && matches!(a.format.as_str(), "docker-image" | "oci-image")
        };
        if !tally.archives.iter().any(image) {
            tally.problems.push(Problem {
                path: RelPath::new(i, OsStr::new("")),
                message: format!(
                    "{} is named docker-archive:, but is not a container image (no manifest.json, \
                     nor index.json with oci-layout): read as what it is",
                    r.given.display()
                ),
            });
        }
    }
    // The kernel's side of each root that is a whole system: its amdgpu modules and firmware.
    let mut drivers = Vec::new();
    for (i, r) in roots.iter().enumerate().filter(|(_, r)| r.kind == RootKind::Path && r.real.is_dir()) {
        if config.parts.is_some() {
            break;
        }
        let (found, problems) = crate::source::kernel::drivers(&r.real, i, None);
        drivers.extend(found);
        tally.problems.extend(problems);
    }
    let mut snap = aggregate::snapshot(tally, given, targets);
    snap.drivers = drivers;
    if config.recording.identities() {
        let recorded = identities.len() as u64;
        let mut ids = crate::reuse::identities(identities, targets, config.digests);
        // The key only when everything the JSON is made from is known again by `stat`: every
        // file met recorded (none racy, none an archive, none with a problem), no problem
        // anywhere, every root a folder or file walked here.
        let whole = survey.filter(|s| s.files == recorded && snap.problems.is_empty() && skip.is_empty());
        if let (Some(options), Some(s)) = (config.recording.options(), whole) {
            if let Some(key) = rescan_key(s, targets, options, &roots) {
                ids.rescan_key = Some(key);
                ids.document_sha256 = Some(crate::reuse::UNSEALED.to_string());
            }
        }
        snap.identities = Some(ids);
    }
    Ok(snap)
}

/// What a walk met, for the rescan key: each regular file's path and `stat`.
fn survey_of(batch: &[Candidate]) -> Survey {
    let mut s = Survey::default();
    for c in batch {
        s.file(c.root, c.rel.as_os_str(), c.stat.id, c.followed);
    }
    s
}

/// Gathers a folder or special file the walk met into `met` (see [`Survey::folder`],
/// [`Survey::special`]).
fn survey_other(met: &Mutex<Survey>, root: usize, rel: &Path, other: Other) {
    let mut met = lock(met);
    match other {
        Other::Folder => met.folder(root, rel.as_os_str()),
        Other::Special(kind) => met.special(root, rel.as_os_str(), kind),
    }
}

/// `s` with the rest of what the walk met (links, links out of the root); `None` when the walk
/// met a problem or left a folder on another file system unwalked (what it did not walk is not
/// known again by `stat`, and the kernel's side of a root reads through it).
fn walked_survey(mut s: Survey, walked: &Walked) -> Option<Survey> {
    if !walked.problems.is_empty() || walked.other_file_systems > 0 {
        return None;
    }
    for l in &walked.links {
        s.link(l.root, l.rel.as_os_str(), l.target.as_os_str());
    }
    for (root, rel, real) in &walked.left_root {
        s.left_root(*root, rel.as_os_str(), real.as_os_str());
    }
    Some(s)
}

/// Each root as named and where it leads, for the rescan key; `None` when a root is not a
/// folder or file walked here (an image: its layers are not known by `stat`).
fn key_roots(roots: &[Root]) -> Option<Vec<(String, String)>> {
    roots
        .iter()
        .map(|r| {
            let walked = r.kind == RootKind::Path && !archive::is_layout_dir(&r.real);
            walked.then(|| (r.given.display().to_string(), r.real.display().to_string()))
        })
        .collect()
}

/// The rescan key of a walk of `roots` ([`Survey::key`]), when they can have one ([`key_roots`]).
fn rescan_key(s: Survey, targets: &Targets, options: &str, roots: &[Root]) -> Option<String> {
    Some(s.key(targets, options, &crate::source::file::credentials(), &key_roots(roots)?))
}

/// The rescan key a scan with `config` would write, from a walk alone: every file `stat`ed,
/// none opened (`scan --reuse` compares it with its snapshot's). `None` when the roots cannot
/// have one (an image, a part of a root, a problem met walking).
pub fn survey(config: &ScanConfig, targets: &Targets) -> anyhow::Result<Option<String>> {
    let Some(options) = config.recording.options() else { return Ok(None) };
    let roots: Vec<Root> = resolve_roots(&config.roots).map_err(anyhow::Error::msg)?;
    let Some(named) = key_roots(&roots).filter(|_| !roots.is_empty() && config.parts.is_none()) else {
        return Ok(None);
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads.unwrap_or(0))
        .build()
        .context("failed to start worker threads")?;
    let met = Mutex::new(Survey::default());
    let files = |batch: Vec<Candidate>| {
        let s = survey_of(&batch);
        let mut met = lock(&met);
        *met = std::mem::take(&mut *met).merge(s);
    };
    let others = |root: usize, rel: &Path, other: Other| survey_other(&met, root, rel, other);
    let how = Walk {
        follow_links: config.follow_links,
        cross_file_systems: config.cross_file_systems,
        skip: &[],
        files: &files,
        others: Some(&others),
    };
    let walked = pool.install(|| walk(&roots, None, &how));
    let met = met.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let credentials = crate::source::file::credentials();
    Ok(walked_survey(met, &walked).map(|s| s.key(targets, options, &credentials, &named)))
}

/// The value behind a lock, whether or not a worker panicked holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What every worker of one scan shares: the target table and the progress reporter.
struct Reader<'a> {
    reading: Reading<'a>,
    progress: &'a dyn Progress,
    given: &'a [String],
    roots: &'a [Root],
    /// `--reuse`: facts of files unchanged since earlier snapshots, and the index there of
    /// each root of this scan.
    earlier: Option<(&'a Earlier, Vec<Option<usize>>)>,
    /// When identities are recorded: the time the scan began (see `reuse::RACY`).
    recording: Option<std::time::SystemTime>,
}

impl Reader<'_> {
    /// Tells the progress reporter of a finished candidate and its problems.
    fn report(&self, found: &Found) {
        for p in &found.problems {
            self.progress.problem(self.given, p);
        }
        for f in &found.files {
            for message in &f.problems {
                self.progress
                    .problem(self.given, &Problem { path: f.path.clone(), message: message.clone() });
            }
        }
        self.progress.file_done();
    }

    /// Folds one candidate's result into a worker's share: counted now, or an archive for later.
    fn take(&self, mut part: Part, read: Read) -> Part {
        match read {
            Read::Done(f) => {
                self.report(&f);
                part.tally.add(f);
            }
            Read::Archive(a) => part.pending.push(*a),
        }
        part
    }

    /// Reads a file with one name, or takes its facts from an earlier snapshot when it is
    /// unchanged since.
    fn read_plain(&self, mut part: Part, c: &Candidate) -> Part {
        let read = self
            .read_or_reuse(&mut part, c, Some(None), || read_file(c, &c.path(self.roots), self.reading).0);
        self.take(part, read)
    }

    /// `c`'s facts from an earlier snapshot when `stat` shows it unchanged since (`--reuse`)
    /// and `linked` is `Some`: the name this scan says it shares its bytes with (`None` for
    /// none); else what `read` gives. When identities are recorded, a plain file whose facts
    /// hold no problem is recorded in `part` (a file that could not be opened or read has one,
    /// and a problem may be a passing I/O error: such a file is read again next time).
    fn read_or_reuse(
        &self,
        part: &mut Part,
        c: &Candidate,
        linked: Option<Option<&RelPath>>,
        read: impl FnOnce() -> Read,
    ) -> Read {
        let path = RelPath::new(c.root, c.rel.as_os_str());
        let taken = self.earlier.as_ref().zip(linked).and_then(|((e, roots), hard_link_of)| {
            let clean = matches!(self.reading.depth, Depth::Tables { .. });
            e.take(&path, &c.stat, &Want { roots, clean, hard_link_of })
        });
        let read = match taken {
            Some(outcome) => Read::Done(Found::one(outcome)),
            None => read(),
        };
        if let (Some(began), Read::Done(f)) = (self.recording, &read) {
            if let ([one], true) = (f.files.as_slice(), f.archives.is_empty() && f.problems.is_empty()) {
                if one.problems.is_empty() {
                    part.identities.extend(identity(&path, one.kind, &c.stat, began));
                }
            }
        }
        read
    }

    /// Walks the roots and reads each file as its folder lists it, on this pool's workers.
    /// A file with more than one name waits for the end of the walk, when all its names are
    /// known, to be read once for all of them (see `read_files`).
    fn walk_and_read(&self, config: &ScanConfig, layouts: &[usize]) -> (Part, Walked) {
        let done = Mutex::new(Part::default());
        let linked = Mutex::new(Vec::new());
        let survey = config.recording.options().is_some();
        let files = |batch: Vec<Candidate>| {
            let met = if survey { survey_of(&batch) } else { Survey::default() };
            let (many, single): (Vec<Candidate>, Vec<Candidate>) =
                batch.into_iter().partition(|c| c.stat.links > 1);
            if !many.is_empty() {
                lock(&linked).extend(many);
            }
            let part = single
                .into_par_iter()
                .fold(Part::default, |part, c| self.read_plain(part, &c))
                .reduce(Part::default, Part::merge);
            let mut done = lock(&done);
            *done = std::mem::take(&mut *done).merge(Part { survey: met, ..part });
        };
        let listed = Mutex::new(Survey::default());
        let others = |root: usize, rel: &Path, other: Other| survey_other(&listed, root, rel, other);
        let how = Walk {
            follow_links: config.follow_links,
            cross_file_systems: config.cross_file_systems,
            skip: layouts,
            files: &files,
            others: survey.then_some(&others),
        };
        let walked = walk(self.roots, config.parts.as_deref(), &how);
        for p in &walked.problems {
            self.progress.problem(self.given, p);
        }
        let mut linked = linked.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        // In path order: which name leads does not hang on the order folders were listed in.
        linked.sort_by(|a, b| (a.root, &a.rel).cmp(&(b.root, &b.rel)));
        let done = done.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        let listed = Part { survey: std::mem::take(&mut *lock(&listed)), ..Part::default() };
        (done.merge(listed).merge(self.read_files(&linked)), walked)
    }

    /// Reads every candidate, in parallel. Each file is read once, however many hard links
    /// name it: the first name is read, then the others take its result (see `read_link`).
    /// Results are folded into tallies as they come, so a tree of millions of files holds only
    /// what its report needs.
    fn read_files(&self, cands: &[Candidate]) -> Part {
        let leaders = hard_link_leaders(cands);
        let followed: HashSet<usize> = leaders.iter().flatten().map(|&l| l as usize).collect();
        let mut first = (0..cands.len())
            .into_par_iter()
            .filter(|&i| leaders.get(i).is_some_and(Option::is_none))
            .fold(Part::default, |mut part, i| {
                let Some(c) = cands.get(i) else { return part };
                let mut opened = None;
                // A first name whose other names share its result is read: they need its bytes.
                let linked = (!followed.contains(&i)).then_some(None);
                let read = self.read_or_reuse(&mut part, c, linked, || {
                    let (read, o) = read_file(c, &c.path(self.roots), self.reading);
                    opened = o;
                    read
                });
                if let (Read::Done(f), Some(opened)) = (&read, opened) {
                    if followed.contains(&i) {
                        if let ([one], true) = (f.files.as_slice(), f.archives.is_empty()) {
                            part.kept.push((i, one.clone(), opened));
                        }
                    }
                }
                self.take(part, read)
            })
            .reduce(Part::default, Part::merge);
        let kept: HashMap<usize, (FileOutcome, Opened)> =
            std::mem::take(&mut first.kept).into_iter().map(|(i, o, id)| (i, (o, id))).collect();
        let later = (0..cands.len())
            .into_par_iter()
            .filter_map(|i| Some((i, (*leaders.get(i)?)? as usize)))
            .fold(Part::default, |mut part, (i, l)| {
                let (Some(c), Some(leader)) = (cands.get(i), cands.get(l)) else { return part };
                let lead = RelPath::new(leader.root, leader.rel.as_os_str());
                let read = self.read_or_reuse(&mut part, c, Some(Some(&lead)), || {
                    let (disk, lead) = (c.path(self.roots), leader.path(self.roots));
                    read_link((c, &disk), (leader, &lead), kept.get(&l), self.reading)
                });
                self.take(part, read)
            })
            .reduce(Part::default, Part::merge);
        first.merge(later)
    }

    /// Expands the archives found, after the plain files, by as many workers as there are
    /// threads, each one archive at a time: a thread waiting on its archive's members can then
    /// pick up only member work or another worker, never start an archive of its own, so
    /// memory is bounded by the thread count, not by the number of archives.
    fn expand_archives(&self, pending: &[PendingArchive], threads: usize) -> Tally {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let expanded = std::sync::Mutex::new(Tally::default());
        rayon::scope(|scope| {
            for _ in 0..threads.min(pending.len()) {
                scope.spawn(|_| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(a) = pending.get(i) else { break };
                    let f = a.expand(self.reading);
                    self.report(&f);
                    if let Ok(mut e) = expanded.lock() {
                        e.add(f);
                    }
                });
            }
        });
        expanded.into_inner().unwrap_or_default()
    }

    /// Reads root `i`, an image in a registry, as its layers stream in.
    fn expand_registry(&self, i: usize, image: &RemoteImage) -> Tally {
        let mut tally = Tally::default();
        let size = image.layers.iter().fold(0u64, |sum, b| sum.saturating_add(b.size));
        let bytes = self.progress.image(self.given.get(i).map_or("", String::as_str), size);
        image.on_bytes(bytes);
        let budget = Budget::new(budget_for(size));
        let ctx =
            archive::Ctx { reading: self.reading, budget, depth: 0, base: RelPath::new(i, OsStr::new("")) };
        let found = archive::expand_registry_image(image, &ctx);
        self.report(&found);
        tally.add(archive::settle(&ctx.budget, found, &ctx.base));
        tally
    }

    /// Reads root `i`, an OCI image layout folder, as the image it holds.
    fn expand_layout(&self, roots: &[Root], i: usize) -> Tally {
        let mut tally = Tally::default();
        let Some(r) = roots.get(i) else { return tally };
        let budget = Budget::new(budget_for(archive::layout_size(&r.real)));
        let ctx =
            archive::Ctx { reading: self.reading, budget, depth: 0, base: RelPath::new(i, OsStr::new("")) };
        if let Some(f) = archive::expand_layout_dir(&r.real, &ctx) {
            tally.add(f);
        }
        tally
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::{code_object, CodeObjectSpec};

    /// Review finding: with `--follow-links`, a folder on another file system is left unwalked,
    /// yet the kernel's side of a root reads through it (`boot/config-*` on its own mount): no
    /// key is made of such a walk, nor of one that met a problem.
    #[test]
    fn a_walk_that_left_anything_unwalked_makes_no_rescan_key() {
        let whole = Walked::default();
        assert!(walked_survey(Survey::default(), &whole).is_some());
        let mounted = Walked { other_file_systems: 1, ..Walked::default() };
        assert!(walked_survey(Survey::default(), &mounted).is_none());
        let problem = Problem { path: RelPath::new(0, OsStr::new("x")), message: "denied".into() };
        let troubled = Walked { problems: vec![problem], ..Walked::default() };
        assert!(walked_survey(Survey::default(), &troubled).is_none());
    }

    /// Review finding: a follower trusted device and inode alone. Between the leader's read and
    /// the follower's check, both names can go and a new file take the follower's name and the
    /// freed inode number (ext4 reuses them at once): it must be read, not given the old result.
    #[test]
    fn a_new_file_on_a_reused_inode_is_read_not_given_the_old_result() {
        let (targets, decoding) = (Targets::builtin(), Decoding::default());
        let reading = Reading { targets: &targets, depth: Depth::Facts, decoding: &decoding, digests: false };
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a/lib/k.co"), dir.path().join("b/lib/k.co"));
        for p in [&a, &b] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        }
        std::fs::write(&a, code_object(&CodeObjectSpec::v4(0x3f, 0, &["k1", "k2", "k3"]))).unwrap();
        std::fs::hard_link(&a, &b).unwrap();
        let cand = |p: &Path| Candidate {
            root: 0,
            rel: p.strip_prefix(dir.path()).unwrap().into(),
            stat: crate::source::walk::Stat::of_metadata(&std::fs::metadata(p).unwrap()),
            followed: false,
        };
        let (ca, cb) = (cand(&a), cand(&b));
        let (Read::Done(f), Some(opened)) = read_file(&ca, &a, reading) else { panic!("read") };
        let kept = (f.files[0].clone(), opened);
        // Unchanged, the follower takes the leader's result under its own path.
        let Read::Done(shared) = read_link((&cb, &b), (&ca, &a), Some(&kept), reading) else {
            panic!("read")
        };
        assert_eq!(shared.files[0].path, RelPath::new(0, cb.rel.as_os_str()));
        // Replaced, whatever inode the new file gets, it is read on its own.
        std::fs::remove_file(&a).unwrap();
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&b, code_object(&CodeObjectSpec::v4(0x30, 0, &["only"]))).unwrap();
        let kernels = |r: Read| match r {
            Read::Done(f) => f.files[0].record.as_ref().map(|r| r.code_objects[0].kernels),
            Read::Archive(_) => panic!("not an archive"),
        };
        assert_eq!(kernels(read_link((&cb, &b), (&ca, &a), Some(&kept), reading)), Some(Some(1)));
    }
}
