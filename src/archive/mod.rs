//! Archives: packages and images read as the trees they would unpack to, without unpacking.
//!
//! A `.deb` (`ar` + `data.tar.*`), a `.whl`/`.zip`, a `.tar` (plain, gzip, zstd or xz) or a
//! container image (`docker save` archive or OCI layout) is a tree of members; each regular
//! member goes through the same inspection as a file on disk (`scan::inspect`), under its path
//! inside the archive. Nothing is written anywhere.
//!
//! Bytes come from an [`Origin`]: a range of a file, memory, or the decompressed form of another
//! origin, which can always be opened again from its start. Members of random-access origins
//! (a plain tar or a stored zip member on disk) are read in place; members of streams up to
//! [`IN_MEMORY`] are read once into memory and inspected in parallel while the stream goes on;
//! larger ones are inspected through a [`ReplaySource`], which reads forward from the live
//! stream and, when a parser reads backwards (an ELF's section table sits at its end), opens the
//! origin again: a few passes of decompression, never the member in memory. An xz stream of
//! several blocks (as Debian builds `data.tar.xz`) is opened at the block holding an offset,
//! through its index, so such jumps cost one block. Every byte inflated counts against one
//! [`Budget`] per top-level archive, so a decompression bomb ends as a problem.
//!
//! Extraction semantics decide what a member is: the last entry at a path wins, hard links are
//! the files they name, and an image is its final file system — layers applied bottom up through
//! a `LayerIndex`, top layer first when the image is on disk, in two passes over the stream
//! when it arrives compressed whole.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::families;
use crate::inspect::{inspect, Found, LinkSeen};
use crate::model::{ArchiveRecord, RelPath};
use crate::parse::archive::{
    link_escapes, member_path, parse_ar, parse_pax, parse_tar_header, TarBlock, TarHeader, TarType, TAR_BLOCK,
};
use crate::parse::magic::{classify, Kind};
use crate::parse::ByteSource;
use crate::source::origin::{Budget, Metered, Origin, SourceReader, JUMP};
use crate::vocab::codec::Codec;
use crate::vocab::targets::Targets;

/// Members of a stream up to this size are read into memory and inspected in parallel.
pub const IN_MEMORY: u64 = 32 << 20;
/// Most member bytes held in memory at once, waiting for inspection, across every archive a
/// scan reads at once.
const IN_FLIGHT: u64 = 128 << 20;

/// Member bytes in memory now, read from streams and not yet inspected.
static IN_FLIGHT_BYTES: AtomicU64 = AtomicU64::new(0);
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
pub enum Format {
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
pub fn detect(kind: Kind, head: &[u8], origin: &Arc<Origin>, budget: &Arc<Budget>) -> Option<Format> {
    match kind {
        Kind::Zip => Some(Format::Zip),
        Kind::Tar => Some(Format::Tar(None)),
        Kind::Ar => {
            let name = head.get(8..24)?;
            name.starts_with(b"debian-binary").then_some(Format::Deb)
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
            is_tar_header(&block).then_some(Format::Tar(Some(codec)))
        }
        _ => None,
    }
}

/// What one archive walk needs: the target table, the budget, how deep it is nested, and the
/// path of the archive itself (root and relative path) under which members are reported.
#[derive(Clone)]
pub struct Ctx<'t> {
    pub targets: &'t Targets,
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
            let same_name_facts =
                families::detect_link(&path, ctx.targets) == families::detect_link(&target, ctx.targets);
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
pub fn expand(origin: Arc<Origin>, format: Format, ctx: &Ctx) -> Found {
    let record = |format: String| ArchiveRecord { path: ctx.base.clone(), format, members: 0, layers: None };
    let result = match format {
        Format::Deb => expand_deb(&origin, ctx),
        Format::Zip => expand_zip(&origin, ctx, record("zip".into())),
        Format::Tar(None) if origin.random().is_some() => match expand_if_image(&origin, ctx) {
            Some(found) => return found,
            None => expand_tar(&origin, ctx, record("tar".into())),
        },
        Format::Tar(codec) => {
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
        f.problem(ctx.base.clone(), e);
        f
    })
}

fn expand_deb(origin: &Arc<Origin>, ctx: &Ctx) -> Result<Found, String> {
    let src = origin.source(None);
    let members = parse_ar(&*src).map_err(|e| format!("Debian package: {e}"))?;
    drop(src);
    let data = members
        .iter()
        .find(|m| m.name.starts_with("data.tar"))
        .ok_or("Debian package without a data.tar member")?;
    let inner = Arc::new(origin.range(data.offset, data.size));
    let stream = tar_stream(&inner, &ctx.budget)?
        .ok_or_else(|| format!("Debian package: {} is neither tar nor gzip, zstd or xz", data.name))?;
    let name = format!("deb:{}", data.name);
    let record = ArchiveRecord { path: ctx.base.clone(), format: name, members: 0, layers: None };
    expand_tar(&stream, ctx, record)
}

fn read_head(origin: &Origin) -> Result<Vec<u8>, String> {
    let mut head = Vec::with_capacity(TAR_BLOCK);
    origin
        .open()
        .and_then(|r| r.take(TAR_BLOCK as u64).read_to_end(&mut head))
        .map_err(|e| format!("cannot read: {e}"))?;
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
    let src = origin.source(live);
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
            if origin.random().is_none() && format == Format::Zip {
                let mut f = Found::default();
                f.problem(
                    at,
                    format!("zip archive over {IN_MEMORY} bytes inside a compressed stream: not opened"),
                );
                return f;
            }
            drop(src);
            let inner =
                Ctx { targets: ctx.targets, budget: ctx.budget.clone(), depth: ctx.depth + 1, base: at };
            return expand(origin.clone(), format, &inner);
        }
    }
    let mut found = Found::default();
    found.files.push(inspect(&*src, &head, path, None, at, ctx.targets));
    found
}

/// Reserves room for `adding` member bytes in memory, if the in-flight limit allows (always when
/// nothing is in flight). When it does not, the caller inspects the member on its own thread
/// instead of queueing it: waiting would either stall or, running queued work while waiting,
/// nest archive inside archive on one stack.
fn reserve_room(adding: u64) -> bool {
    IN_FLIGHT_BYTES
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
            (now == 0 || now + adding <= IN_FLIGHT).then_some(now + adding)
        })
        .is_ok()
}

/// Reads a tar archive sequentially from its origin.
struct TarStream<'a> {
    origin: &'a Origin,
    reader: Box<dyn Read + 'a>,
    pos: u64,
}

impl TarStream<'_> {
    fn read_full(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.reader.read(buf.get_mut(done..).unwrap_or_default()) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.pos += done as u64;
        Ok(done)
    }

    fn skip(&mut self, n: u64) -> io::Result<()> {
        let eof = || io::Error::new(io::ErrorKind::UnexpectedEof, "archive truncated inside a member");
        let target = self.pos.checked_add(n).ok_or_else(eof)?;
        if self.origin.known_len().is_some_and(|len| target > len) {
            return Err(eof());
        }
        if n >= JUMP && self.origin.seekable() {
            self.reader = self.origin.open_at(target)?;
            self.pos = target;
            return Ok(());
        }
        let got = io::copy(&mut (&mut self.reader).take(n), &mut io::sink())?;
        self.pos += got;
        if got < n {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "archive truncated inside a member"));
        }
        Ok(())
    }

    fn read_meta(&mut self, size: u64) -> io::Result<Vec<u8>> {
        if size > MAX_TAR_META {
            return Err(io::Error::other(format!(
                "tar metadata record of {size} bytes, over {MAX_TAR_META}"
            )));
        }
        let mut v = vec![0u8; size as usize];
        if self.read_full(&mut v)? < v.len() {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "archive truncated in a header"));
        }
        self.skip(padding(size))?;
        Ok(v)
    }
}

fn padding(size: u64) -> u64 {
    (TAR_BLOCK as u64 - size % TAR_BLOCK as u64) % TAR_BLOCK as u64
}

/// The live bytes of one tar member, read forward from the archive stream.
struct MemberReader<'s, 'a> {
    tar: &'s mut TarStream<'a>,
    left: u64,
}

impl Read for MemberReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        if n == 0 {
            // Never ask a decoder for nothing: zstd's reports that as an error.
            return Ok(0);
        }
        let got = self.tar.reader.read(buf.get_mut(..n).unwrap_or_default())?;
        self.left -= got as u64;
        self.tar.pos += got as u64;
        Ok(got)
    }
}

/// One header of a tar archive with its long-name and PAX records applied.
struct TarEntry {
    header: TarHeader,
    /// Offset of its data in the stream.
    data: u64,
    /// Bytes its data takes in the stream, padding included.
    stored: u64,
    sparse: bool,
}

/// Most extension blocks an old GNU sparse header may chain.
const MAX_SPARSE_BLOCKS: u32 = 4096;

/// Reads the next entry's headers, applying GNU long names and PAX records.
fn next_entry(tar: &mut TarStream) -> Result<Option<TarEntry>, String> {
    let mut long_name = None;
    let mut long_link = None;
    let mut pax = None;
    loop {
        let at = tar.pos;
        let mut block = [0u8; TAR_BLOCK];
        let n = tar.read_full(&mut block).map_err(|e| format!("tar header at {at:#x}: {e}"))?;
        if n == 0 {
            return Ok(None);
        }
        if n < TAR_BLOCK {
            return Err(format!("archive truncated in a tar header at {at:#x}"));
        }
        let mut h = match parse_tar_header(&block, at).map_err(|e| e.to_string())? {
            TarBlock::End => return Ok(None),
            TarBlock::Header(h) => h,
        };
        let meta = |tar: &mut TarStream, h: &TarHeader| {
            tar.read_meta(h.size).map_err(|e| format!("tar header at {at:#x}: {e}"))
        };
        match h.kind {
            TarType::GnuLongName => long_name = Some(meta(tar, &h)?),
            TarType::GnuLongLink => long_link = Some(meta(tar, &h)?),
            TarType::Pax => {
                pax = Some(parse_pax(&meta(tar, &h)?).map_err(|e| format!("tar PAX header at {at:#x}: {e}"))?)
            }
            TarType::PaxGlobal => {
                meta(tar, &h)?;
            }
            _ => {
                let trim = |mut v: Vec<u8>| {
                    while v.last() == Some(&0) {
                        v.pop();
                    }
                    v
                };
                let mut sparse = h.kind == TarType::Sparse;
                if let Some(n) = long_name {
                    h.name = trim(n);
                }
                if let Some(l) = long_link {
                    h.link = trim(l);
                }
                if let Some(p) = pax {
                    if let Some(n) = p.path {
                        h.name = n;
                    }
                    if let Some(l) = p.linkpath {
                        h.link = l;
                    }
                    if let (Some(s), TarType::File | TarType::Sparse | TarType::Other(_)) = (p.size, h.kind) {
                        h.size = s;
                    }
                    if let Some(n) = p.sparse_name {
                        h.name = n;
                    }
                    sparse |= p.sparse;
                }
                // Old GNU sparse headers chain extension blocks that the size does not count.
                let mut extended = h.kind == TarType::Sparse && block.get(482).is_some_and(|&b| b != 0);
                let mut blocks = 0;
                while extended {
                    blocks += 1;
                    let mut ext = [0u8; TAR_BLOCK];
                    if blocks > MAX_SPARSE_BLOCKS
                        || tar.read_full(&mut ext).map_err(|e| e.to_string())? < TAR_BLOCK
                    {
                        return Err(format!(
                            "GNU sparse header at {at:#x}: extension blocks truncated or too many"
                        ));
                    }
                    extended = ext.get(504).is_some_and(|&b| b != 0);
                }
                let stored = h
                    .size
                    .checked_add(padding(h.size))
                    .filter(|&n| tar.pos.checked_add(n).is_some())
                    .ok_or_else(|| format!("tar header at {at:#x}: member size {} out of range", h.size))?;
                if let Some(len) = tar.origin.known_len() {
                    if tar.pos + h.size > len {
                        return Err(format!(
                            "archive truncated: the member at {at:#x} claims {} bytes, {} remain",
                            h.size,
                            len - tar.pos
                        ));
                    }
                }
                return Ok(Some(TarEntry { header: h, data: tar.pos, stored, sparse }));
            }
        }
    }
}

/// What an entry type becomes on extraction: GNU dump folders (`D`) are folders; other types
/// GNU tar does not know (all but volume labels, `V`) are regular files.
fn extracted_kind(kind: TarType) -> TarType {
    match kind {
        TarType::Other(b'D') => TarType::Dir,
        k => k,
    }
}

/// Decides per member path whether a member is read (images hide what later layers replaced).
type Visible<'v> = &'v (dyn Fn(&Path) -> bool + Sync);

fn expand_tar(stream: &Arc<Origin>, ctx: &Ctx, record: ArchiveRecord) -> Result<Found, String> {
    let gather = Gather::default();
    if let Err(e) = walk_tar(stream, None, 0, ctx, &gather, &|_| true, &mut |_, _| {}) {
        gather.problem(ctx, Path::new(""), e);
    }
    Ok(gather.finish(ctx, record))
}

/// Walks a tar stream: every member is checked, inspected (in parallel where it was read into
/// memory) and gathered; `seen` hears of every member name (for image layers). `live` is the
/// stream when the caller already has it open (an image layer read as it streams by); member
/// sequence numbers start after `first_seq`. An error is what stopped the walk: members before
/// it are gathered.
#[allow(clippy::too_many_arguments)]
fn walk_tar<'a>(
    stream: &'a Arc<Origin>,
    live: Option<Box<dyn Read + 'a>>,
    first_seq: u64,
    ctx: &Ctx,
    gather: &Gather,
    visible: Visible,
    seen: &mut dyn FnMut(&Path, &TarType),
) -> Result<(), String> {
    let reader = match live {
        Some(r) => r,
        None => stream.open().map_err(|e| format!("cannot read: {e}"))?,
    };
    let mut tar = TarStream { origin: stream, reader, pos: 0 };
    let random = stream.random().is_some();
    // Every regular file so far, visible or not: what a later hard link may name.
    let mut files: HashMap<PathBuf, Arc<Origin>> = HashMap::new();
    let mut seq = first_seq;
    let mut failure = None;
    rayon::in_place_scope(|scope| loop {
        let entry = match next_entry(&mut tar) {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        seq += 1;
        let h = &entry.header;
        let stored = entry.stored;
        let path = match member_path(&h.name) {
            Ok(Some(p)) => Some(p),
            Ok(None) => None,
            Err(why) => {
                let shown = PathBuf::from(OsStr::from_bytes(&h.name));
                gather.problem(ctx, &shown, why.to_string());
                None
            }
        };
        let Some(path) = path else {
            if let Err(e) = tar.skip(stored) {
                failure = Some(e.to_string());
                break;
            }
            continue;
        };
        // GNU tar extracts entry types it does not know as regular files; so does this walk.
        let kind = match extracted_kind(h.kind) {
            TarType::Other(c) if c != b'V' => {
                if visible(&path) {
                    let shown = char::from(c).escape_default();
                    let note = format!(
                        "unknown tar entry type '{shown}': read as a regular file, as GNU tar extracts it"
                    );
                    gather.problem(ctx, &path, note);
                }
                TarType::File
            }
            k => k,
        };
        seen(&path, &kind);
        let wanted = visible(&path);
        if wanted && !matches!(kind, TarType::Dir | TarType::Other(_)) {
            gather.claim(seq, &path);
        }
        let mut consumed = 0u64;
        match kind {
            TarType::File | TarType::Sparse if entry.sparse || kind == TarType::Sparse => {
                if wanted {
                    gather.problem(
                        ctx,
                        &path,
                        "sparse tar member: its data is not stored as-is, not read".into(),
                    )
                }
            }
            TarType::File => {
                let origin = Arc::new(stream.range(entry.data, h.size));
                files.insert(path.clone(), origin.clone());
                if !wanted {
                } else if random {
                    let (origin, path, ctx) = (origin.clone(), path.clone(), ctx.clone());
                    scope.spawn(move |_| {
                        gather.add(seq, path.clone(), visit(&origin, Bytes::InPlace, &path, &ctx))
                    });
                } else if h.size <= IN_MEMORY {
                    let mut data = vec![0u8; h.size as usize];
                    match tar.read_full(&mut data) {
                        Ok(n) if n as u64 == h.size => {}
                        Ok(_) => {
                            failure = Some(format!("archive truncated inside {}", path.display()));
                            break;
                        }
                        Err(e) => {
                            failure = Some(format!("{}: {e}", path.display()));
                            break;
                        }
                    }
                    consumed = h.size;
                    let data = Arc::new(data);
                    if !reserve_room(h.size) {
                        gather.add(seq, path.clone(), visit(&origin, Bytes::Memory(data), &path, ctx));
                    } else {
                        let (path, ctx) = (path.clone(), ctx.clone());
                        scope.spawn(move |_| {
                            let n = data.len() as u64;
                            gather.add(seq, path.clone(), visit(&origin, Bytes::Memory(data), &path, &ctx));
                            IN_FLIGHT_BYTES.fetch_sub(n, Ordering::AcqRel);
                        });
                    }
                } else {
                    let mut live = MemberReader { tar: &mut tar, left: h.size };
                    let found = visit(&origin, Bytes::Live(Box::new(&mut live)), &path, ctx);
                    consumed = h.size - live.left;
                    gather.add(seq, path.clone(), found);
                }
            }
            _ if !wanted => {}
            TarType::Symlink => {
                if link_escapes(&path, &h.link) {
                    let to = String::from_utf8_lossy(&h.link);
                    gather.problem(
                        ctx,
                        &path,
                        format!("symbolic link to {to}: it leaves the archive's tree"),
                    );
                }
                gather.link(seq, &path, &h.link);
            }
            TarType::HardLink => match member_path(&h.link)
                .ok()
                .flatten()
                .and_then(|t| files.get(&t).map(|o| (t, o)))
            {
                Some((target, origin)) => gather.hard_link(seq, &path, &target, origin.clone()),
                None => gather.problem(
                    ctx,
                    &path,
                    format!("hard link to {}, which no earlier member is", String::from_utf8_lossy(&h.link)),
                ),
            },
            TarType::Special(what) => {
                gather.problem(ctx, &path, format!("not a regular file ({what}): not opened"))
            }
            TarType::Dir | TarType::Other(_) | TarType::Sparse => {}
            TarType::GnuLongName | TarType::GnuLongLink | TarType::Pax | TarType::PaxGlobal => {}
        }
        if let Err(e) = tar.skip(stored.saturating_sub(consumed)) {
            failure = Some(format!("{}: {e}", path.display()));
            break;
        }
    });
    match failure {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

fn expand_zip(origin: &Arc<Origin>, ctx: &Ctx, record: ArchiveRecord) -> Result<Found, String> {
    let len = origin.known_len().unwrap_or(0);
    let src = origin.random().ok_or("zip archive without random access")?;
    let mut zip = zip::ZipArchive::new(SourceReader::new(src, len)).map_err(|e| format!("zip: {e}"))?;
    let gather = Gather::default();
    let mut members = Vec::new();
    for i in 0..zip.len() {
        let entry = match zip.by_index_raw(i) {
            Ok(e) => e,
            Err(e) => {
                gather.problem(ctx, Path::new(""), format!("zip entry {i}: {e}"));
                continue;
            }
        };
        let path = match member_path(entry.name_raw()) {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(why) => {
                gather.problem(ctx, &PathBuf::from(OsStr::from_bytes(entry.name_raw())), why.to_string());
                continue;
            }
        };
        if entry.is_dir() {
            continue;
        }
        let Some(start) = entry.data_start() else {
            gather.problem(ctx, &path, "zip entry without a local header".into());
            continue;
        };
        let (compressed, size, method) = (entry.compressed_size(), entry.size(), entry.compression());
        if start.checked_add(compressed).is_none_or(|end| end > len) {
            gather.problem(ctx, &path, "zip archive truncated: the member's data runs past its end".into());
            continue;
        }
        gather.claim(i as u64, &path);
        let raw = Arc::new(origin.range(start, compressed));
        let member = match method {
            m if m == zip::CompressionMethod::STORE && compressed == size => raw.range(0, size),
            m if m == zip::CompressionMethod::DEFLATE => {
                Origin::decoded(raw, Codec::Deflate, Some(size), &ctx.budget)
            }
            other => {
                gather.problem(ctx, &path, format!("zip compression {other}: not supported, not read"));
                continue;
            }
        };
        if entry.is_symlink() {
            drop(entry);
            let mut target = Vec::new();
            match member.open().and_then(|r| r.take(4096).read_to_end(&mut target)) {
                Ok(_) => {
                    if link_escapes(&path, &target) {
                        gather.problem(
                            ctx,
                            &path,
                            format!(
                                "symbolic link to {}: it leaves the archive's tree",
                                String::from_utf8_lossy(&target)
                            ),
                        );
                    }
                    gather.link(i as u64, &path, &target)
                }
                Err(e) => gather.problem(ctx, &path, format!("symbolic link: {e}")),
            }
            continue;
        }
        members.push((i as u64, path, Arc::new(member)));
    }
    drop(zip);
    use rayon::prelude::*;
    members.par_iter().for_each(|(seq, path, member)| {
        let bytes = if member.random().is_some() { Ok(Bytes::InPlace) } else { read_member(member) };
        match bytes {
            Ok(bytes) => gather.add(*seq, path.clone(), visit(member, bytes, path, ctx)),
            Err(e) => gather.problem(ctx, path, e),
        }
    });
    Ok(gather.finish(ctx, record))
}

/// A small compressed member read into memory (checked to inflate to exactly its declared
/// size); a large one is left to stream.
fn read_member(member: &Origin) -> Result<Bytes<'_>, String> {
    match member.known_len() {
        Some(n) if n <= IN_MEMORY => {
            let mut data = Vec::with_capacity(n as usize);
            // One byte more than declared, so that a member inflating past its size is caught.
            member.open().and_then(|r| r.take(n + 1).read_to_end(&mut data)).map_err(|e| e.to_string())?;
            if (data.len() as u64) < n {
                return Err(format!("member inflates to {} bytes, less than its declared {n}", data.len()));
            }
            Ok(Bytes::Memory(Arc::new(data)))
        }
        _ => Ok(Bytes::InPlace),
    }
}

/// A container image's layers, bottom first, as origins with their media kinds.
struct Layers {
    format: &'static str,
    layers: Vec<(String, Arc<Origin>)>,
}

/// Reads an image's layer list from the files of its top level (`manifest.json` of `docker save`,
/// else `index.json` of an OCI layout); `file` opens one by its path in the image archive.
fn image_layers(file: &dyn Fn(&str) -> Option<Arc<Origin>>) -> Result<Option<Layers>, String> {
    let json = |name: &str| -> Result<Option<serde_json::Value>, String> {
        let Some(origin) = file(name) else { return Ok(None) };
        let mut text = Vec::new();
        origin
            .open()
            .and_then(|r| r.take(MAX_IMAGE_JSON).read_to_end(&mut text))
            .map_err(|e| format!("{name}: {e}"))?;
        serde_json::from_slice(&text).map(Some).map_err(|e| format!("{name}: {e}"))
    };
    let blob = |digest: &str| -> Result<Arc<Origin>, String> {
        let (alg, hex) = digest.split_once(':').ok_or_else(|| format!("image digest {digest:?}"))?;
        if !alg.bytes().all(|b| b.is_ascii_alphanumeric()) || !hex.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(format!("image digest {digest:?}"));
        }
        file(&format!("blobs/{alg}/{hex}")).ok_or_else(|| format!("image blob {digest} is missing"))
    };
    if let Some(manifest) = json("manifest.json")? {
        let images = manifest.as_array().ok_or("manifest.json: not a list of images")?;
        if images.len() != 1 {
            return Err(format!(
                "manifest.json lists {} images; gfxscan reads archives of one",
                images.len()
            ));
        }
        let names = images
            .first()
            .and_then(|i| i.get("Layers"))
            .and_then(|l| l.as_array())
            .ok_or("manifest.json: no Layers")?;
        let mut layers = Vec::new();
        for n in names {
            let n = n.as_str().ok_or("manifest.json: a layer that is not a path")?;
            let origin = file(n).ok_or_else(|| format!("manifest.json names {n}, which is missing"))?;
            layers.push((n.to_string(), origin));
        }
        return Ok(Some(Layers { format: "docker-image", layers }));
    }
    let Some(index) = json("index.json")? else { return Ok(None) };
    if file("oci-layout").is_none() {
        return Ok(None);
    }
    // An index may point at further indexes (multi-platform images); follow to the first
    // image manifest for linux/amd64, or the only one.
    let mut index = index;
    for _ in 0..4 {
        let manifests =
            index.get("manifests").and_then(|m| m.as_array()).ok_or("index.json: no manifests")?;
        let pick = manifests
            .iter()
            .find(|m| {
                m.pointer("/platform/architecture").and_then(|a| a.as_str()) == Some("amd64")
                    && m.pointer("/platform/os").and_then(|a| a.as_str()) == Some("linux")
            })
            .or_else(|| (manifests.len() == 1).then(|| manifests.first()).flatten())
            .ok_or("OCI index: several manifests and none for linux/amd64")?;
        let digest =
            pick.get("digest").and_then(|d| d.as_str()).ok_or("OCI index: manifest without digest")?;
        let origin = blob(digest)?;
        let mut text = Vec::new();
        origin
            .open()
            .and_then(|r| r.take(MAX_IMAGE_JSON).read_to_end(&mut text))
            .map_err(|e| format!("{digest}: {e}"))?;
        let doc: serde_json::Value = serde_json::from_slice(&text).map_err(|e| format!("{digest}: {e}"))?;
        if let Some(layers) = doc.get("layers").and_then(|l| l.as_array()) {
            let mut out = Vec::new();
            for l in layers {
                let d =
                    l.get("digest").and_then(|d| d.as_str()).ok_or("OCI manifest: layer without digest")?;
                out.push((d.to_string(), blob(d)?));
            }
            return Ok(Some(Layers { format: "oci-image", layers: out }));
        }
        index = doc;
    }
    Err("OCI index nested too deep".into())
}

/// What each layer of an image holds, by the highest layer index that says so: enough to tell
/// whether a member of layer `i` survives into the final file system.
#[derive(Default)]
struct LayerIndex {
    /// Paths with an entry, and the highest layer with one.
    present: HashMap<PathBuf, usize>,
    /// Paths with a non-directory entry (which hides a lower folder's contents).
    not_dir: HashMap<PathBuf, usize>,
    /// Paths deleted (`.wh.<name>`).
    deleted: HashMap<PathBuf, usize>,
    /// Folders whose lower contents are hidden (`.wh..wh..opq`).
    opaque: HashMap<PathBuf, usize>,
}

impl LayerIndex {
    /// Records one entry of layer `layer`.
    fn note(&mut self, layer: usize, path: &Path, kind: &TarType) {
        let up = |m: &mut HashMap<PathBuf, usize>, p: PathBuf| {
            let e = m.entry(p).or_insert(layer);
            *e = (*e).max(layer);
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if name == OPAQUE {
            up(&mut self.opaque, parent);
        } else if let Some(gone) = name.strip_prefix(WHITEOUT) {
            up(&mut self.deleted, parent.join(gone));
        } else {
            up(&mut self.present, path.to_path_buf());
            if *kind != TarType::Dir {
                up(&mut self.not_dir, path.to_path_buf());
            }
        }
    }

    /// True when a layer above `layer` replaces, deletes or hides `path`.
    fn hides(&self, layer: usize, path: &Path) -> bool {
        let above = |m: &HashMap<PathBuf, usize>, p: &Path| m.get(p).is_some_and(|&l| l > layer);
        if above(&self.present, path) || above(&self.deleted, path) {
            return true;
        }
        path.ancestors()
            .skip(1)
            .any(|a| above(&self.opaque, a) || above(&self.deleted, a) || above(&self.not_dir, a))
    }

    /// True when a member of `layer` at `path` is part of the final file system.
    fn visible(&self, layer: usize, path: &Path) -> bool {
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        !name.starts_with(WHITEOUT) && !self.hides(layer, path)
    }
}

const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

/// Expands a container image: its layers, top first, each member read only when no layer above
/// replaced or deleted it, so the result is the image's final file system.
fn expand_image(layers: Layers, ctx: &Ctx) -> Found {
    let gather = Gather::default();
    let mut index = LayerIndex::default();
    let count = layers.layers.len();
    // Top layer first: when layer i is read, the index holds exactly the layers above it.
    for (i, (name, layer)) in layers.layers.iter().enumerate().rev() {
        let stream = match layer_stream(layer, ctx) {
            Ok(s) => s,
            Err(e) => {
                gather.problem(ctx, Path::new(name), format!("layer: {e}"));
                continue;
            }
        };
        let mut here = Vec::new();
        let visible = |p: &Path| index.visible(i, p);
        let result = walk_tar(&stream, None, layer_seq(i), ctx, &gather, &visible, &mut |p, kind| {
            here.push((p.to_path_buf(), *kind))
        });
        if let Err(e) = result {
            gather.problem(ctx, Path::new(name), format!("layer: {e}"));
        }
        for (p, kind) in here {
            index.note(i, &p, &kind);
        }
    }
    let record = image_record(ctx, layers.format, count);
    gather.finish(ctx, record)
}

/// Sequence numbers of layer `i`'s members: above every lower layer's.
fn layer_seq(i: usize) -> u64 {
    (i as u64) << 40
}

fn image_record(ctx: &Ctx, format: &str, layers: usize) -> ArchiveRecord {
    ArchiveRecord {
        path: ctx.base.clone(),
        format: format.to_string(),
        members: 0,
        layers: Some(layers as u32),
    }
}

/// A layer's tar stream: the layer itself, or its gzip/zstd/xz decoding (by magic).
fn layer_stream(layer: &Arc<Origin>, ctx: &Ctx) -> Result<Arc<Origin>, String> {
    tar_stream(layer, &ctx.budget)?.ok_or_else(|| "not a tarball".to_string())
}

/// The tar stream an origin holds, by its first bytes: itself, or its gzip/zstd/xz decoding;
/// `None` when it is neither tar nor compressed.
fn tar_stream(origin: &Arc<Origin>, budget: &Arc<Budget>) -> Result<Option<Arc<Origin>>, String> {
    let head = read_head(origin)?;
    Ok(layer_codec(&head).map(|codec| match codec {
        Some(c) => Arc::new(Origin::decoded(origin.clone(), c, None, budget)),
        None => origin.clone(),
    }))
}

/// A layer tarball read as it streams by: `head` (its first bytes, already read) then `live`,
/// decoded when compressed and metered against the budget, with the origin that reopens it.
/// `None` when it is neither tar nor compressed.
#[allow(clippy::type_complexity)]
fn live_layer<'a>(
    member: Arc<Origin>,
    head: Vec<u8>,
    live: &'a mut dyn Read,
    budget: &Arc<Budget>,
) -> Result<Option<(Arc<Origin>, Box<dyn Read + 'a>)>, String> {
    let Some(codec) = layer_codec(&head) else { return Ok(None) };
    let chained: Box<dyn Read + 'a> = Box::new(io::Cursor::new(head).chain(live));
    Ok(Some(match codec {
        Some(c) => {
            let inner = c.decoder(chained).map_err(|e| e.to_string())?;
            let meter = Metered::new(inner, budget.clone(), None);
            (Arc::new(Origin::decoded(member, c, None, budget)), Box::new(meter))
        }
        None => (member, chained),
    }))
}

/// True when a tar stream's first entry is named as `docker save` and OCI layouts name theirs
/// (`blobs/`, `oci-layout`, `manifest.json`, `index.json`, `repositories`, or a 64-hex-digit
/// layer folder or config): only then is an image looked for in a stream, which costs a pass.
fn starts_like_image(stream: &Arc<Origin>) -> bool {
    let Ok(reader) = stream.open() else { return false };
    let mut tar = TarStream { origin: stream, reader, pos: 0 };
    // The first entry with a name (tar run in the image folder starts with `./`).
    let name = loop {
        let Ok(Some(e)) = next_entry(&mut tar) else { return false };
        match member_path(&e.header.name) {
            Ok(Some(p)) => break p.to_string_lossy().into_owned(),
            _ if tar.skip(e.stored).is_ok() => continue,
            _ => return false,
        }
    };
    let hex64 = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    name.starts_with("blobs")
        || name.starts_with("sha256:")
        || ["oci-layout", "manifest.json", "index.json", "repositories"].contains(&name.as_str())
        || name.split(['/', '.']).next().is_some_and(hex64)
}

/// What the first pass over a streamed image keeps: its JSON documents, and each tarball
/// member's entry list (names and types only).
#[derive(Default)]
struct StreamedImage {
    json: HashMap<String, Arc<Vec<u8>>>,
    listings: HashMap<String, Vec<(PathBuf, TarType)>>,
    /// Where the last member of each name starts in the stream.
    data_at: HashMap<String, u64>,
    members: HashMap<String, Arc<Origin>>,
}

/// The tar stream of a layer member whose first bytes are `head`: itself, or its decoding.
fn layer_codec(head: &[u8]) -> Option<Option<Codec>> {
    let kind = classify(head);
    match kind.codec() {
        Some(c) => Some(Some(c)),
        None if kind == Kind::Tar => Some(None),
        None => None,
    }
}

/// Pass one over a streamed image: every member is read as it goes by, and nothing is kept but
/// JSON documents (up to [`MAX_IMAGE_JSON`]) and the entry lists of tarballs.
fn list_streamed_image(stream: &Arc<Origin>, budget: &Arc<Budget>) -> Result<StreamedImage, String> {
    let mut out = StreamedImage::default();
    let mut json_bytes = 0u64;
    let mut tar = TarStream { origin: stream, reader: stream.open().map_err(|e| e.to_string())?, pos: 0 };
    while let Some(e) = next_entry(&mut tar)? {
        let h = &e.header;
        let (TarType::File, Ok(Some(path))) = (h.kind, member_path(&h.name)) else {
            tar.skip(e.stored).map_err(|e| e.to_string())?;
            continue;
        };
        let name = path.to_string_lossy().into_owned();
        let member = Arc::new(stream.range(e.data, h.size));
        // The last member of a name is the one extraction keeps; pass two reads only it.
        out.members.insert(name.clone(), member.clone());
        out.data_at.insert(name.clone(), e.data);
        out.json.remove(&name);
        out.listings.remove(&name);
        let mut live = MemberReader { tar: &mut tar, left: h.size };
        let mut head = Vec::new();
        (&mut live).take(TAR_BLOCK as u64).read_to_end(&mut head).map_err(|e| e.to_string())?;
        let json = h.size <= MAX_IMAGE_JSON && matches!(head.first(), Some(b'{' | b'['));
        if json && json_bytes + h.size <= MAX_IMAGE_JSON {
            json_bytes += h.size;
            let mut data = head;
            live.read_to_end(&mut data).map_err(|e| e.to_string())?;
            out.json.insert(name, Arc::new(data));
        } else if json {
            return Err(format!("image JSON documents over {MAX_IMAGE_JSON} bytes in all"));
        } else if let Some((layer, reader)) = live_layer(member, head, &mut live, budget)? {
            let mut lt = TarStream { origin: &layer, reader, pos: 0 };
            let mut entries = Vec::new();
            // Entries before a failure still count (their whiteouts hide lower files, as on
            // disk); the failure itself is reported once, by pass two.
            while let Ok(Some(le)) = next_entry(&mut lt) {
                if let Ok(Some(p)) = member_path(&le.header.name) {
                    let kind = match extracted_kind(le.header.kind) {
                        TarType::Other(c) if c != b'V' => TarType::File,
                        k => k,
                    };
                    entries.push((p, kind));
                }
                if lt.skip(le.stored).is_err() {
                    break;
                }
            }
            drop(lt);
            out.listings.insert(name, entries);
        }
        let consumed = h.size - live.left;
        tar.skip(e.stored - consumed).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Expands an image that arrives as one stream (a compressed `docker save` archive or OCI
/// tarball) in two passes: one to list every layer and read the manifests, one to read each
/// layer as it streams by, keeping only what the layer index says survives. `None` when the
/// stream holds no image after all.
fn expand_streamed_image(stream: &Arc<Origin>, ctx: &Ctx) -> Option<Found> {
    // A stream that fails to list is read as a plain tarball, which reports why.
    let listed = list_streamed_image(stream, &ctx.budget).ok()?;
    let file = |name: &str| -> Option<Arc<Origin>> {
        match listed.json.get(name) {
            Some(data) => {
                Some(Arc::new(Origin::Memory { data: data.clone(), offset: 0, len: data.len() as u64 }))
            }
            None => listed.members.get(name).cloned(),
        }
    };
    let layers = match image_layers(&file) {
        Ok(Some(layers)) => layers,
        Ok(None) => return None,
        Err(_) if !listed.json.contains_key("index.json") && !listed.members.contains_key("oci-layout") => {
            return None
        }
        Err(e) => {
            let mut f = Found::default();
            f.problem(ctx.base.clone(), format!("container image: {e}"));
            return Some(f);
        }
    };
    // Layer names as the stream names them (OCI descriptors name blobs by digest).
    let member_name = |name: &str, origin: &Arc<Origin>| -> Option<String> {
        if listed.members.contains_key(name) {
            return Some(name.to_string());
        }
        listed.members.iter().find(|(_, o)| Arc::ptr_eq(o, origin)).map(|(n, _)| n.clone())
    };
    let gather = Gather::default();
    let mut index = LayerIndex::default();
    let mut top_of: HashMap<String, usize> = HashMap::new();
    for (i, (name, origin)) in layers.layers.iter().enumerate() {
        let Some(member) = member_name(name, origin) else { continue };
        match listed.listings.get(&member) {
            Some(entries) => {
                for (p, kind) in entries {
                    index.note(i, p, kind);
                }
            }
            None => gather.problem(ctx, Path::new(&member), "layer: not a tarball".into()),
        }
        top_of.insert(member, i);
    }
    // Pass two: each layer as it streams by (one that appears twice counts as its upper self).
    let second = (|| -> Result<(), String> {
        let mut tar = TarStream { origin: stream, reader: stream.open().map_err(|e| e.to_string())?, pos: 0 };
        while let Some(e) = next_entry(&mut tar)? {
            let h = &e.header;
            let name = member_path(&h.name).ok().flatten().map(|p| p.to_string_lossy().into_owned());
            let last = name.as_ref().is_some_and(|n| listed.data_at.get(n) == Some(&e.data));
            let (TarType::File, Some(i), true) =
                (h.kind, name.as_ref().and_then(|n| top_of.get(n)).copied(), last)
            else {
                tar.skip(e.stored).map_err(|e| e.to_string())?;
                continue;
            };
            let member = Arc::new(stream.range(e.data, h.size));
            let mut live = MemberReader { tar: &mut tar, left: h.size };
            let mut head = Vec::new();
            (&mut live).take(TAR_BLOCK as u64).read_to_end(&mut head).map_err(|e| e.to_string())?;
            if let Some((layer, reader)) = live_layer(member, head, &mut live, &ctx.budget)? {
                let visible = |p: &Path| index.visible(i, p);
                if let Err(err) =
                    walk_tar(&layer, Some(reader), layer_seq(i), ctx, &gather, &visible, &mut |_, _| {})
                {
                    gather.problem(
                        ctx,
                        Path::new(name.as_deref().unwrap_or_default()),
                        format!("layer: {err}"),
                    );
                }
            }
            let consumed = h.size - live.left;
            tar.skip(e.stored - consumed).map_err(|e| e.to_string())?;
        }
        Ok(())
    })();
    if let Err(e) = second {
        gather.problem(ctx, Path::new(""), e);
    }
    Some(gather.finish(ctx, image_record(ctx, layers.format, layers.layers.len())))
}

/// Lists a random-access tar's members by path (regular files only), for image detection.
fn list_tar(stream: &Arc<Origin>) -> Result<BTreeMap<String, Arc<Origin>>, String> {
    let mut tar = TarStream { origin: stream, reader: stream.open().map_err(|e| e.to_string())?, pos: 0 };
    let mut out = BTreeMap::new();
    while let Some(e) = next_entry(&mut tar)? {
        let h = &e.header;
        if let (TarType::File, Ok(Some(p))) = (h.kind, member_path(&h.name)) {
            out.insert(p.to_string_lossy().into_owned(), Arc::new(stream.range(e.data, h.size)));
        }
        tar.skip(e.stored).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// When a tar on disk is a `docker save` archive or an OCI layout, expands it as an image.
pub fn expand_if_image(origin: &Arc<Origin>, ctx: &Ctx) -> Option<Found> {
    origin.random()?;
    let listing = list_tar(origin).ok()?;
    if !listing.contains_key("manifest.json") && !listing.contains_key("oci-layout") {
        return None;
    }
    let file = |name: &str| listing.get(name).cloned();
    match image_layers(&file) {
        Ok(Some(layers)) => Some(expand_image(layers, ctx)),
        Ok(None) => None,
        // A `manifest.json` that is no image manifest: a plain tarball that happens to hold one.
        Err(_) if !listing.contains_key("oci-layout") => None,
        Err(e) => {
            let mut f = Found::default();
            f.problem(ctx.base.clone(), format!("container image: {e}"));
            Some(f)
        }
    }
}

/// True for a directory that is an OCI image layout (`oci-layout` and `index.json` in it).
pub fn is_layout_dir(dir: &Path) -> bool {
    dir.join("oci-layout").is_file() && dir.join("index.json").is_file()
}

/// When a directory is an OCI image layout, expands it as an image.
pub fn expand_layout_dir(dir: &Path, ctx: &Ctx) -> Option<Found> {
    if !is_layout_dir(dir) {
        return None;
    }
    let file = |name: &str| -> Option<Arc<Origin>> {
        let src = crate::source::file::open_regular(&dir.join(name)).ok()?;
        Some(Arc::new(Origin::file(Arc::new(src))))
    };
    let found = expand_layout(&file, ctx)?;
    Some(settle(&ctx.budget, found, &ctx.base))
}

/// The total size of an OCI layout's blobs: what its inflation budget is measured against.
pub fn layout_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir.join("blobs"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn expand_layout(file: &dyn Fn(&str) -> Option<Arc<Origin>>, ctx: &Ctx) -> Option<Found> {
    Some(match image_layers(&file) {
        Ok(Some(layers)) => expand_image(layers, ctx),
        Ok(None) => return None,
        Err(e) => {
            let mut f = Found::default();
            f.problem(ctx.base.clone(), format!("OCI image layout: {e}"));
            f
        }
    })
}
