//! Inspection of one item: a regular file or an archive member becomes its record — its kind by
//! magic, its code objects (standalone, bundle entries, `.hip_fatbin`, raw embedded objects)
//! resolved to targets, and its artifact family with the facts only its content can say.

mod code;
pub mod resolve;

use std::path::{Path, PathBuf};

use crate::decode::Decoding;
use crate::families;
use crate::model::{ArchiveRecord, FileRecord, Problem, RelPath, ReleaseSignal};
use crate::parse::bundle::parse_bundles_to;
use crate::parse::magic::{classify, Kind};
use crate::parse::offload::parse_offload_binaries_with;
use crate::parse::Depth;
use crate::parse::{ByteSource, Prefetched};
use crate::vocab::targets::Targets;
use code::Collector;

/// What reading one regular file (or archive member) gave.
#[derive(Debug, Clone)]
pub struct FileOutcome {
    pub path: RelPath,
    pub kind: Kind,
    pub size: u64,
    /// Boxed: most files have none, and an archive of many files holds an outcome per file.
    pub record: Option<Box<FileRecord>>,
    pub problems: Vec<String>,
    /// For TheRock's `share/therock/dist_info.json`: the targets it declares.
    pub declared_targets: Option<Vec<String>>,
    /// For rocm-core's version file or header: the release it states.
    pub release: Option<(ReleaseSignal, String)>,
}

impl FileOutcome {
    /// Puts a listed file's SHA-256 (`scan --digests`) in its record, or says why there is none.
    pub fn set_digest(&mut self, hash: Result<String, String>) {
        match (hash, &mut self.record) {
            (Ok(h), Some(r)) => r.sha256 = Some(h),
            (Err(e), _) => self.problems.push(e),
            (Ok(_), None) => {}
        }
    }

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
    /// Files that add nothing but to the counts (no record, no problem, nothing their name
    /// says): an archive of a million such members holds three numbers, not a million outcomes.
    pub counted: Counted,
    pub links: Vec<LinkSeen>,
    pub symlinks: u64,
    pub problems: Vec<Problem>,
    pub archives: Vec<ArchiveRecord>,
}

/// Files counted and nothing more: how many, their bytes, how many of each kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counted {
    pub files: u64,
    pub bytes: u64,
    pub kinds: std::collections::BTreeMap<Kind, u64>,
}

impl Counted {
    /// One more file of `kind` and `size`.
    pub fn add(&mut self, kind: Kind, size: u64) {
        self.files += 1;
        self.bytes += size;
        *self.kinds.entry(kind).or_default() += 1;
    }

    /// Both counts in one.
    pub fn merge(&mut self, other: Counted) {
        self.files += other.files;
        self.bytes += other.bytes;
        for (k, n) in other.kinds {
            *self.kinds.entry(k).or_default() += n;
        }
    }
}

impl Found {
    /// Adds a problem at `path`.
    pub fn problem(&mut self, path: RelPath, message: String) {
        self.problems.push(Problem { path, message });
    }

    /// Takes in everything `other` found.
    pub fn merge(&mut self, other: Found) {
        self.files.extend(other.files);
        self.counted.merge(other.counted);
        self.links.extend(other.links);
        self.symlinks += other.symlinks;
        self.problems.extend(other.problems);
        self.archives.extend(other.archives);
    }

    /// The kind and size of its one file when that file adds nothing but to the counts (see
    /// [`Found::counted`]) and nothing else was found.
    pub fn count_only(&self) -> Option<(Kind, u64)> {
        let alone = self.links.is_empty()
            && self.problems.is_empty()
            && self.archives.is_empty()
            && self.symlinks == 0;
        match self.files.as_slice() {
            [o] if alone
                && o.record.is_none()
                && o.problems.is_empty()
                && o.release.is_none()
                && o.declared_targets.is_none()
                && !o.kind.is_host_binary()
                && self.counted.files == 0 =>
            {
                Some((o.kind, o.size))
            }
            _ => None,
        }
    }

    /// What reading one file gave.
    pub fn one(file: FileOutcome) -> Found {
        Found { files: vec![file], ..Found::default() }
    }
}

/// How a scan reads its items: against which target table, how far into their code, and with
/// which decoding context (its budgets).
#[derive(Clone, Copy)]
pub struct Reading<'t> {
    pub targets: &'t Targets,
    pub depth: Depth<'t>,
    pub decoding: &'t Decoding,
    /// `scan --digests`: each listed file's SHA-256 is taken (`source::digest`).
    pub digests: bool,
}

/// The targets a TheRock `dist_info.json` declares (`parse::therock`), read whole if small.
fn dist_info(src: &dyn ByteSource) -> Result<Vec<String>, String> {
    let max = crate::parse::therock::MAX_DIST_INFO;
    if src.len() > max {
        return Err(format!("TheRock dist_info.json of {} bytes: not read (more than {max})", src.len()));
    }
    let bytes = src.read_at(0, src.len() as usize).map_err(|e| e.to_string())?;
    crate::parse::therock::dist_info_targets(&bytes)
}

/// The release rocm-core's version file or header states (`parse::release`), read whole if
/// small; `None` for other files and for one that states no release (a stub, a template): it
/// only leaves the release unknown. A file that cannot be read is a problem.
fn release_file(src: &dyn ByteSource, name: &Path) -> Option<Result<(ReleaseSignal, String), String>> {
    use crate::parse::release::{
        info_version, version_header, INFO_VERSION, MAX_VERSION_FILE, VERSION_HEADER,
    };
    type Parser = fn(&[u8]) -> Result<String, String>;
    let (signal, parse): (ReleaseSignal, Parser) = if name.ends_with(INFO_VERSION) {
        (ReleaseSignal::InfoVersion, info_version)
    } else if name.ends_with(VERSION_HEADER) {
        (ReleaseSignal::VersionHeader, version_header)
    } else {
        return None;
    };
    if src.len() > MAX_VERSION_FILE {
        return Some(Err(format!(
            "ROCm version file of {} bytes: not read (more than {MAX_VERSION_FILE})",
            src.len()
        )));
    }
    match src.read_at(0, src.len() as usize) {
        Ok(bytes) => parse(&bytes).ok().map(|v| Ok((signal, v))),
        Err(e) => Some(Err(e.to_string())),
    }
}

/// Bytes of the head that family detection and firmware headers look at.
pub const FAMILY_HEAD: usize = 64;

/// Inspects one regular file or archive member: its kind, code objects and family facts.
/// `name` is the path its family is judged by; `disk` its path on disk, when it has one.
pub fn inspect<'t>(
    src: &dyn ByteSource,
    head: &[u8],
    name: &Path,
    disk: Option<&Path>,
    path: RelPath,
    reading: Reading<'t>,
) -> FileOutcome {
    let Reading { targets, depth, decoding, .. } = reading;
    // Headers at the start (a CCOB's, its zstd frame's, an ELF's) are read from the head.
    let pre = Prefetched::already(src, head);
    let src: &dyn ByteSource = &pre;
    let size = src.len();
    let kind = classify(head);
    let mut out = FileOutcome {
        path,
        kind,
        size,
        record: None,
        problems: Vec::new(),
        declared_targets: None,
        release: None,
    };
    match release_file(src, name) {
        Some(Ok(r)) => out.release = Some(r),
        Some(Err(e)) => out.problems.push(e),
        None => {}
    }
    if size < 4 {
        out.kind = Kind::Other;
        return out;
    }
    let head = head.get(..FAMILY_HEAD).unwrap_or(head);
    let mut col = Collector::new(reading, size);
    match kind {
        Kind::AmdgpuElf => col.standalone(src),
        Kind::OffloadBundle | Kind::CompressedOffloadBundle => {
            col.bundles(0, &parse_bundles_to(src, depth, &decoding.inflater()), "")
        }
        Kind::HostElf => col.host_elf(src),
        Kind::OffloadBinary => {
            col.offloading(src, 0, &parse_offload_binaries_with(src, &decoding.inflater()), "")
        }
        Kind::Kpack => col.kpack(src),
        Kind::Pe => col.pe(src),
        _ => {}
    }
    // File order: a code object in a compressed bundle sits where its bundle does.
    col.code_objects.sort_by_key(|c| (c.group().unwrap_or(c.offset), c.offset));
    let artifact = families::detect(name, families::Content::File(kind, head), targets).map(|mut a| {
        let item = families::Item { src, name, disk, head, code_objects: &col.code_objects, targets };
        if let Some(family) = a.family {
            let mut problems = Vec::new();
            families::cataloger(family).facts(&mut a, &item, &mut problems);
            col.problems.extend(problems.iter().map(ToString::to_string));
        }
        a
    });
    if let (None, Some(format)) = (&artifact, kind.unread_format()) {
        col.problems.push(format!(
            "not read: {format} (gfxscan does not open {format} data; unpack it and scan the result)"
        ));
    }
    if name.ends_with(crate::parse::therock::DIST_INFO) {
        match dist_info(src) {
            Ok(t) => out.declared_targets = Some(t),
            Err(e) => col.problems.push(e),
        }
    }
    out.problems = col.problems;
    if !col.code_objects.is_empty() || col.bundles > 0 || artifact.is_some() || col.kpack_ref.is_some() {
        out.record = Some(Box::new(FileRecord {
            path: out.path.clone(),
            kind,
            size,
            bundles: col.bundles,
            code_objects: col.code_objects,
            artifact,
            kpack_ref: col.kpack_ref,
            hard_link_of: None,
            sha256: None,
        }));
    }
    out
}
