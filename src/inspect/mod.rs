//! Inspection of one item: a regular file or an archive member becomes its record — its kind by
//! magic, its code objects (standalone, bundle entries, `.hip_fatbin`, raw embedded objects)
//! resolved to targets, and its artifact family with the facts only its content can say.

pub mod resolve;

use std::path::{Path, PathBuf};

use crate::families;
use crate::model::{ArchiveRecord, CodeObjectRecord, Container, FileRecord, Problem, RelPath};
use crate::parse::bundle::{parse_bundles, Bundle, Bundles};
use crate::parse::elf::{parse_code_object, CodeObject};
use crate::parse::host::parse_host_elf;
use crate::parse::magic::{classify, Kind};
use crate::parse::ByteSource;
use crate::vocab::targets::Targets;
use resolve::resolve_code_object;

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

    /// What reading one file gave.
    pub fn one(file: FileOutcome) -> Found {
        Found { files: vec![file], ..Found::default() }
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
            bundle_format: bundle.map(|(b, _, _)| b.format),
            compression: bundle.and_then(|(b, _, _)| b.compression),
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
pub const FAMILY_HEAD: usize = 64;

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
        let item = families::Item { src, name, disk, head, code_objects: &col.code_objects, targets };
        if let Some(family) = a.family {
            families::cataloger(family).facts(&mut a, &item, &mut col.problems);
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
