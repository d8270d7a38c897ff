//! Archives: packages and images read as the trees they would unpack to, without unpacking.
//!
//! A `.deb` (`ar` + `data.tar.*`), a `.whl`/`.zip`, a `.tar` (plain, gzip, zstd or xz) or a
//! container image (`docker save` archive or OCI layout) is a tree of members; each regular
//! member goes through the same inspection as a file on disk (`inspect::inspect`), under its
//! path inside the archive. Nothing is written anywhere. This module holds what every format
//! shares (detection, the member visit, gathering results in extraction order); `tar`, `zip` and
//! `image` walk their formats.
//!
//! Bytes come from a `source::origin::Origin`: a range of a file, memory, or the decompressed form of another
//! origin, which can always be opened again from its start. Members of random-access origins
//! (a plain tar or a stored zip member on disk) are read in place; members of streams up to
//! [`IN_MEMORY`] are read once into memory and inspected in parallel while the stream goes on;
//! larger ones are inspected through a `ReplaySource`, which reads forward from the live
//! stream and, when a parser reads backwards (an ELF's section table sits at its end), opens the
//! origin again: a few passes of decompression, never the member in memory. An xz stream of
//! several blocks (as Debian builds `data.tar.xz`) is opened at the block holding an offset,
//! through its index, so such jumps cost one block. Every byte inflated counts against one
//! `Budget` per top-level archive, so a decompression bomb ends as a problem.
//!
//! Extraction semantics decide what a member is: the last entry at a path wins, hard links are
//! the files they name, and an image is its final file system — layers applied bottom up through
//! a `LayerIndex`, top layer first when the image is on disk, in two passes over the stream
//! when it arrives compressed whole.

mod error;
mod image;
mod tar;
mod zip;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex};

use crate::decode::Budget;
use crate::families;
use crate::inspect::{inspect, Found, LinkSeen, Reading};
use crate::model::{ArchiveRecord, Package, RelPath};
use crate::parse::archive::{parse_ar, parse_tar_header, TarBlock, TAR_BLOCK};
use crate::parse::magic::{classify, Kind};
use crate::parse::package::{parse_deb_control, MAX_METADATA};
use crate::parse::ByteSource;
use crate::source::digest::{sha256_of, Tee};
use crate::source::origin::Origin;
use crate::vocab::codec::Codec;
pub use error::ArchiveError;
pub use image::{expand_if_image, expand_layout_dir, expand_registry_image, is_layout_dir, layout_size};
use image::{expand_streamed_image, starts_like_image};
use tar::{expand_tar, tar_stream};
use zip::expand_zip;

/// Members of a stream up to this size are read into memory and inspected in parallel.
pub const IN_MEMORY: u64 = 32 << 20;
/// Most archives nested in one another (a wheel in a tarball in an image is 3).
pub const MAX_DEPTH: u32 = 4;
/// Largest GNU long name or PAX header read.
const MAX_TAR_META: u64 = 1 << 20;
/// Largest JSON document of an image (manifest, index) read.
const MAX_IMAGE_JSON: u64 = 16 << 20;

/// Checks a finished archive against the budget. Over it, which members were read before
/// the budget ran out depends on thread timing, so none are kept: the archive is one problem.
pub fn settle(budget: &Budget, found: Found, at: &RelPath) -> Found {
    if !budget.exhausted() {
        return found;
    }
    let mut f = Found::default();
    f.problem(at.clone(), budget.message());
    f
}

/// The kinds of archive gfxscan opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFormat {
    /// A Debian package: `ar` with `debian-binary` first.
    Deb,
    /// A zip archive (wheels).
    Zip,
    /// A tar archive, possibly compressed.
    Tar(Option<Codec>),
}

/// True when a 512-byte block is a tar header (its checksum holds).
fn is_tar_header(block: &[u8]) -> bool {
    matches!(parse_tar_header(block, 0), Ok(TarBlock::Header(_)))
}

/// Decides from a file's first bytes (up to 512) whether it is an archive gfxscan opens. Compressed
/// data is an archive only when it inflates to a tar header.
pub fn detect(kind: Kind, head: &[u8], origin: &Arc<Origin>, budget: &Arc<Budget>) -> Option<ArchiveFormat> {
    match kind {
        Kind::Zip => Some(ArchiveFormat::Zip),
        Kind::Tar => Some(ArchiveFormat::Tar(None)),
        Kind::Ar => {
            let name = head.get(8..24)?;
            name.starts_with(b"debian-binary").then_some(ArchiveFormat::Deb)
        }
        Kind::Gzip | Kind::Zstd | Kind::Xz => {
            let codec = kind.codec()?;
            let decoded = Origin::Decoded {
                inner: origin.clone(),
                codec,
                len: None,
                budget: budget.clone(),
                blocks: None,
            };
            let mut block = Vec::with_capacity(TAR_BLOCK);
            decoded.open().ok()?.take(TAR_BLOCK as u64).read_to_end(&mut block).ok()?;
            is_tar_header(&block).then_some(ArchiveFormat::Tar(Some(codec)))
        }
        _ => None,
    }
}

/// The archive a file's name promises (`torch-2.5.whl`, `librocblas4_6.4.deb`,
/// `rocm.tar.zst`), as the format people call it and the kinds whose magic would keep that
/// promise; `None` for other names.
pub fn promised_by_name(name: &str) -> Option<(&'static str, &'static [Kind])> {
    let lower = name.to_ascii_lowercase();
    const RULES: &[(&str, &str, &[Kind])] = &[
        (".whl", "a wheel (zip)", &[Kind::Zip]),
        (".zip", "a zip archive", &[Kind::Zip]),
        (".deb", "a Debian package (ar)", &[Kind::Ar]),
        (".tar.gz", "a gzip tarball", &[Kind::Gzip]),
        (".tgz", "a gzip tarball", &[Kind::Gzip]),
        (".tar.zst", "a zstd tarball", &[Kind::Zstd]),
        (".tar.xz", "an xz tarball", &[Kind::Xz]),
        (".tar", "a tar archive", &[Kind::Tar]),
    ];
    RULES.iter().find(|(ext, _, _)| lower.ends_with(ext)).map(|(_, what, kinds)| (*what, *kinds))
}

/// Why a file whose name promises an archive is not one, from its first bytes: empty, a text
/// page (what a failed download saves: `starts with "<!DOCTYPE html"`), or other bytes.
pub fn broken_promise(what: &str, head: &[u8]) -> String {
    let start = if head.is_empty() {
        "it is empty".to_string()
    } else if crate::parse::magic::looks_like_text(head) {
        let text: String =
            String::from_utf8_lossy(&head[..head.len().min(40)]).lines().next().unwrap_or("").into();
        format!("it starts with {text:?}")
    } else {
        let bytes: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("it starts with bytes {}", bytes.join(" "))
    };
    format!("named as {what}, but not one: {start} (a download that failed or did not finish?)")
}

/// What one archive walk needs: the target table, the budget, how deep it is nested, and the
/// path of the archive itself (root and relative path) under which members are reported.
#[derive(Clone)]
pub struct Ctx<'t> {
    /// The target table, how far members are read, and the scan's decoding context.
    pub reading: Reading<'t>,
    pub budget: Arc<Budget>,
    pub depth: u32,
    pub base: RelPath,
}

impl Ctx<'_> {
    /// The report path of a member: the archive's own path, `!/`, the member's (just the member's
    /// path when the archive is the root itself).
    fn member(&self, path: &Path) -> RelPath {
        if path.as_os_str().is_empty() {
            return self.base.clone();
        }
        let mut bytes = self.base.bytes();
        if !bytes.is_empty() {
            bytes.extend_from_slice(b"!/");
        }
        bytes.extend_from_slice(path.as_os_str().as_bytes());
        RelPath::new(self.base.root, OsStr::from_bytes(&bytes))
    }
}

/// A regular member inspected, with its place in the archive's order.
struct Collected {
    seq: u64,
    path: PathBuf,
    found: Found,
}

/// A hard link entry: its sequence number, its path, the path it names and that file's bytes.
type HardLink = (u64, PathBuf, PathBuf, Arc<Origin>);

/// The results of one archive, gathered from the walk and its parallel inspections. Extraction
/// keeps the last entry at each path, whatever its type: `claims` holds, per path, the sequence
/// number of the last entry and how many there were, and only entries that are last count.
#[derive(Default)]
struct Gather {
    members: Mutex<Vec<Collected>>,
    /// Members that add nothing but to the counts ([`Found::count_only`]): where each is and
    /// what it counts as.
    counted: Mutex<Vec<(u64, PathBuf, Kind, u64)>>,
    claims: Mutex<HashMap<PathBuf, (u64, u32)>>,
    links: Mutex<Vec<(u64, PathBuf, Vec<u8>)>>,
    hard_links: Mutex<Vec<HardLink>>,
    found: Mutex<Found>,
}

impl Gather {
    /// Records that entry `seq` (of any type but a folder) sits at `path`.
    fn claim(&self, seq: u64, path: &Path) {
        if let Ok(mut c) = self.claims.lock() {
            let e = c.entry(path.to_path_buf()).or_insert((seq, 0));
            e.0 = e.0.max(seq);
            e.1 += 1;
        }
    }

    fn add(&self, seq: u64, path: PathBuf, found: Found) {
        if let Some((kind, size)) = found.count_only() {
            if let Ok(mut c) = self.counted.lock() {
                c.push((seq, path, kind, size));
            }
            return;
        }
        if let Ok(mut m) = self.members.lock() {
            m.push(Collected { seq, path, found });
        }
    }

    fn problem(&self, ctx: &Ctx, path: &Path, message: String) {
        if let Ok(mut f) = self.found.lock() {
            f.problem(ctx.member(path), message);
        }
    }

    fn link(&self, seq: u64, path: &Path, target: &[u8]) {
        if let Ok(mut l) = self.links.lock() {
            l.push((seq, path.to_path_buf(), target.to_vec()));
        }
    }

    /// Takes in what `other` gathered (one layer's members, read into a gather of their own
    /// until the layer proved to be what its digest says).
    fn absorb(&self, other: Gather) {
        let mut claims = other.claims.into_inner().unwrap_or_default();
        if let Ok(mut c) = self.claims.lock() {
            for (path, (seq, n)) in claims.drain() {
                let e = c.entry(path).or_insert((seq, 0));
                e.0 = e.0.max(seq);
                e.1 += n;
            }
        }
        if let Ok(mut m) = self.members.lock() {
            m.extend(other.members.into_inner().unwrap_or_default());
        }
        if let Ok(mut c) = self.counted.lock() {
            c.extend(other.counted.into_inner().unwrap_or_default());
        }
        if let Ok(mut l) = self.links.lock() {
            l.extend(other.links.into_inner().unwrap_or_default());
        }
        if let Ok(mut h) = self.hard_links.lock() {
            h.extend(other.hard_links.into_inner().unwrap_or_default());
        }
        if let Ok(mut f) = self.found.lock() {
            f.merge(other.found.into_inner().unwrap_or_default());
        }
    }

    fn hard_link(&self, seq: u64, path: &Path, target: &Path, origin: Arc<Origin>) {
        if let Ok(mut h) = self.hard_links.lock() {
            h.push((seq, path.to_path_buf(), target.to_path_buf(), origin));
        }
    }

    /// Keeps what extraction would keep (the last entry at each path), reads hard links as the
    /// files they name (under their own names, which decide their families), and returns
    /// everything with the archive's own record.
    fn finish(self, ctx: &Ctx, record: ArchiveRecord) -> Found {
        let mut found = self.found.into_inner().unwrap_or_default();
        let claims = self.claims.into_inner().unwrap_or_default();
        let last = |seq: u64, path: &Path| claims.get(path).is_some_and(|&(s, _)| s == seq);
        let mut dups: Vec<&PathBuf> = claims.iter().filter(|(_, &(_, n))| n > 1).map(|(p, _)| p).collect();
        dups.sort();
        for p in dups {
            found.problem(
                ctx.member(p),
                "duplicate member name: the last one is read, as extraction would keep it".into(),
            );
        }
        let mut record = record;
        let mut members = self.members.into_inner().unwrap_or_default();
        members.sort_by_key(|m| m.seq);
        let mut hard_links = self.hard_links.into_inner().unwrap_or_default();
        hard_links.sort_by_key(|h| h.0);
        // A hard link is the file it names, under its own name. Where its name says nothing
        // its target's does not (no family by name either way, or the same), the target's
        // result is taken; otherwise the bytes are read again — in place where the archive
        // allows, else by decoding the stream again, which the budget counts.
        let mut linked = Vec::new();
        for (seq, path, target, origin) in hard_links {
            if !last(seq, &path) {
                continue;
            }
            let same_name_facts = families::detect_link(&path, ctx.reading.targets)
                == families::detect_link(&target, ctx.reading.targets);
            let earlier = members.iter().rev().find(|m| m.seq < seq && m.path == target);
            match earlier {
                Some(m) if origin.random().is_none() && same_name_facts && m.found.archives.is_empty() => {
                    let mut files = m.found.files.clone();
                    for f in &mut files {
                        f.set_path(ctx.member(&path));
                    }
                    linked.push(Found { files, ..Found::default() });
                }
                _ => linked.push(visit(&origin, Bytes::InPlace, &path, ctx)),
            }
        }
        for m in members {
            if last(m.seq, &m.path) {
                record.members += 1;
                found.merge(m.found);
            }
        }
        for (seq, path, kind, size) in self.counted.into_inner().unwrap_or_default() {
            if last(seq, &path) {
                record.members += 1;
                found.counted.add(kind, size);
            }
        }
        for l in linked {
            record.members += 1;
            found.merge(l);
        }
        let mut links = self.links.into_inner().unwrap_or_default();
        links.sort_by_key(|l| l.0);
        for (seq, path, target) in links {
            if last(seq, &path) {
                found.symlinks += 1;
                found.links.push(LinkSeen {
                    path: ctx.member(&path),
                    name: path.clone(),
                    target: String::from_utf8_lossy(&target).into_owned(),
                });
            }
        }
        found.archives.push(record);
        found
    }
}

/// Expands one archive into what its members hold.
pub fn expand(origin: Arc<Origin>, format: ArchiveFormat, ctx: &Ctx) -> Found {
    let record = |format: String| ArchiveRecord {
        path: ctx.base.clone(),
        format,
        members: 0,
        layers: None,
        package: None,
        image: None,
    };
    let result = match format {
        ArchiveFormat::Deb => expand_deb(&origin, ctx),
        ArchiveFormat::Zip => expand_zip(&origin, ctx, record("zip".into())),
        ArchiveFormat::Tar(None) if origin.random().is_some() => match expand_if_image(&origin, ctx) {
            Some(found) => return found,
            None => expand_tar(&origin, ctx, record("tar".into())),
        },
        ArchiveFormat::Tar(codec) => {
            let name = codec.map_or("tar".to_string(), |c| format!("tar+{}", c.name()));
            let stream = match codec {
                Some(codec) => Arc::new(Origin::decoded(origin, codec, None, &ctx.budget)),
                None => origin,
            };
            // An image saved and then compressed whole (`docker save | gzip`): read in two passes.
            if starts_like_image(&stream) {
                if let Some(found) = expand_streamed_image(&stream, ctx) {
                    return found;
                }
            }
            expand_tar(&stream, ctx, record(name))
        }
    };
    result.unwrap_or_else(|e| {
        let mut f = Found::default();
        f.problem(ctx.base.clone(), e.to_string());
        f
    })
}

fn expand_deb(origin: &Arc<Origin>, ctx: &Ctx) -> Result<Found, ArchiveError> {
    let src = origin.source(None);
    let members = parse_ar(&*src).map_err(ArchiveError::DebContainer)?;
    drop(src);
    let data = members.iter().find(|m| m.name.starts_with("data.tar")).ok_or(ArchiveError::DebWithoutData)?;
    let inner = Arc::new(origin.range(data.offset, data.size));
    let stream =
        tar_stream(&inner, &ctx.budget)?.ok_or_else(|| ArchiveError::DebDataFormat(data.name.clone()))?;
    let name = format!("deb:{}", data.name);
    let (package, problem) = match deb_package(origin, &members, ctx) {
        Ok(p) => (Some(p), None),
        Err((at, why)) => (None, Some((ctx.member(Path::new(&at)), why))),
    };
    let record = ArchiveRecord {
        path: ctx.base.clone(),
        format: name,
        members: 0,
        layers: None,
        package,
        image: None,
    };
    let mut found = expand_tar(&stream, ctx, record)?;
    if let Some((at, why)) = problem {
        found.problem(at, format!("no package identity: {why}"));
    }
    Ok(found)
}

/// A `.deb`'s identity from the `control` file of its `control.tar[.gz|.xz|.zst]`, read up to
/// [`MAX_METADATA`] bytes (inflation counted against the archive's budget); or where in the
/// package it went wrong and why.
fn deb_package(
    origin: &Arc<Origin>,
    members: &[crate::parse::archive::ArMember],
    ctx: &Ctx,
) -> Result<Package, (String, String)> {
    let control = members
        .iter()
        .find(|m| m.name.starts_with("control.tar"))
        .ok_or(("control.tar".to_string(), "no control.tar member".to_string()))?;
    let at = |why: String| (format!("{}!/control", control.name), why);
    let inner = Arc::new(origin.range(control.offset, control.size));
    let stream = tar_stream(&inner, &ctx.budget)
        .map_err(|e| at(e.to_string()))?
        .ok_or_else(|| at("neither tar nor gzip, zstd or xz".into()))?;
    let bytes = tar::read_file(&stream, Path::new("control"), MAX_METADATA).map_err(|e| at(e.to_string()))?;
    parse_deb_control(&bytes).map_err(at)
}

fn read_head(origin: &Origin) -> Result<Vec<u8>, ArchiveError> {
    let mut head = Vec::with_capacity(TAR_BLOCK);
    origin
        .open()
        .and_then(|r| r.take(TAR_BLOCK as u64).read_to_end(&mut head))
        .map_err(ArchiveError::Open)?;
    Ok(head)
}

/// A member whose bytes are ready: in place, in memory, or on the live stream.
enum Bytes<'a> {
    InPlace,
    Memory(Arc<Vec<u8>>),
    Live(Box<dyn Read + 'a>),
}

/// Inspects one regular member, or expands it when it is an archive itself.
fn visit(origin: &Arc<Origin>, bytes: Bytes, path: &Path, ctx: &Ctx) -> Found {
    let at = ctx.member(path);
    let (memory, live) = match bytes {
        Bytes::Memory(data) => {
            let len = data.len() as u64;
            (Some(Arc::new(Origin::Memory { data, offset: 0, len })), None)
        }
        Bytes::Live(r) => (None, Some(r)),
        Bytes::InPlace => (None, None),
    };
    let origin = memory.as_ref().unwrap_or(origin);
    // With --digests, a live member is hashed as the parsers read it, then to its end.
    let (mut tee, live) = match live {
        Some(r) if ctx.reading.digests => (Some(Tee::new(r)), None),
        other => (None, other),
    };
    let teed = tee.is_some();
    let src = origin.source(match tee.as_mut() {
        Some(t) => Some(Box::new(t) as Box<dyn Read + '_>),
        None => live,
    });
    let head = match src.read_up_to(0, TAR_BLOCK) {
        Ok(h) => h.into_owned(),
        Err(e) => {
            let mut f = Found::default();
            f.problem(at, e.to_string());
            return f;
        }
    };
    let kind = classify(&head);
    if matches!(kind, Kind::Ar | Kind::Zip | Kind::Tar | Kind::Gzip | Kind::Zstd | Kind::Xz) {
        if let Some(format) = detect(kind, &head, origin, &ctx.budget) {
            if ctx.depth + 1 >= MAX_DEPTH {
                let mut f = Found::default();
                f.problem(at, format!("archive nested {MAX_DEPTH} deep: not opened"));
                return f;
            }
            if origin.random().is_none() && format == ArchiveFormat::Zip {
                let mut f = Found::default();
                f.problem(
                    at,
                    format!("zip archive over {IN_MEMORY} bytes inside a compressed stream: not opened"),
                );
                return f;
            }
            drop(src);
            let inner =
                Ctx { reading: ctx.reading, budget: ctx.budget.clone(), depth: ctx.depth + 1, base: at };
            return expand(origin.clone(), format, &inner);
        }
    }
    let mut found = Found::default();
    let name = crate::families::member_name(&ctx.base.path, path);
    let mut outcome = inspect(&*src, &head, &name, None, at, ctx.reading);
    if ctx.reading.digests && outcome.record.is_some() {
        let hash = if teed {
            drop(src);
            tee.map_or_else(|| Err("no stream".into()), Tee::finish)
        } else {
            sha256_of(&*src)
        };
        outcome.set_digest(hash);
    }
    found.files.push(outcome);
    found
}
