//! Tar archives, read as one stream: entries with GNU long names, PAX records, sparse headers
//! and hard links applied as GNU tar extracts them; regular members inspected in place, in
//! memory (in parallel) or through a replay of the stream.

use super::ArchiveError;
use crate::parse::magic::{classify, Kind};
use crate::vocab::codec::Codec;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{read_head, visit, Bytes, Ctx, Gather, IN_MEMORY, MAX_TAR_META};
use crate::decode::Budget;
use crate::inspect::Found;
use crate::model::ArchiveRecord;
use crate::parse::archive::{
    link_escapes, member_path, parse_pax, parse_tar_header, PaxOverrides, TarBlock, TarHeader, TarType,
    TAR_BLOCK,
};
use crate::source::origin::{Origin, JUMP};

/// Reads a tar archive sequentially from its origin.
pub(super) struct TarStream<'a> {
    pub(super) origin: &'a Origin,
    pub(super) reader: Box<dyn Read + 'a>,
    pub(super) pos: u64,
}

impl TarStream<'_> {
    pub(super) fn read_full(&mut self, buf: &mut [u8]) -> io::Result<usize> {
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

    pub(super) fn skip(&mut self, n: u64) -> io::Result<()> {
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

    pub(super) fn read_meta(&mut self, size: u64) -> io::Result<Vec<u8>> {
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

pub(super) fn padding(size: u64) -> u64 {
    (TAR_BLOCK as u64 - size % TAR_BLOCK as u64) % TAR_BLOCK as u64
}

/// The live bytes of one tar member, read forward from the archive stream.
pub(super) struct MemberReader<'s, 'a> {
    pub(super) tar: &'s mut TarStream<'a>,
    pub(super) left: u64,
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
pub(super) struct TarEntry {
    pub(super) header: TarHeader,
    /// Offset of its data in the stream.
    pub(super) data: u64,
    /// Bytes its data takes in the stream, padding included.
    pub(super) stored: u64,
    pub(super) sparse: bool,
}

/// Most extension blocks an old GNU sparse header may chain.
pub(super) const MAX_SPARSE_BLOCKS: u32 = 4096;

/// Reads the next entry's headers, applying GNU long names and PAX records.
pub(super) fn next_entry(tar: &mut TarStream) -> Result<Option<TarEntry>, ArchiveError> {
    let mut long_name = None;
    let mut long_link = None;
    let mut pax = None;
    loop {
        let at = tar.pos;
        let mut block = [0u8; TAR_BLOCK];
        let n = tar.read_full(&mut block).map_err(|source| ArchiveError::HeaderRead { at, source })?;
        if n == 0 {
            return Ok(None);
        }
        if n < TAR_BLOCK {
            return Err(ArchiveError::HeaderTruncated { at });
        }
        let mut h = match parse_tar_header(&block, at)? {
            TarBlock::End => return Ok(None),
            TarBlock::Header(h) => h,
        };
        let meta = |tar: &mut TarStream, h: &TarHeader| {
            tar.read_meta(h.size).map_err(|source| ArchiveError::HeaderRead { at, source })
        };
        match h.kind {
            TarType::GnuLongName => long_name = Some(meta(tar, &h)?),
            TarType::GnuLongLink => long_link = Some(meta(tar, &h)?),
            TarType::Pax => {
                pax = Some(parse_pax(&meta(tar, &h)?).map_err(|source| ArchiveError::Pax { at, source })?)
            }
            TarType::PaxGlobal => {
                meta(tar, &h)?;
            }
            _ => {
                let sparse = apply_extensions(&mut h, long_name, long_link, pax);
                skip_sparse_extensions(tar, &block, &h, at)?;
                let stored = stored_size(tar, &h, at)?;
                return Ok(Some(TarEntry { header: h, data: tar.pos, stored, sparse }));
            }
        }
    }
}

/// Applies a GNU long name and link and a PAX record to the header they precede; true when the
/// member is sparse.
fn apply_extensions(
    h: &mut TarHeader,
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax: Option<PaxOverrides>,
) -> bool {
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
    sparse
}

/// Skips the extension blocks an old GNU sparse header chains, which its size does not count.
fn skip_sparse_extensions(
    tar: &mut TarStream,
    block: &[u8],
    h: &TarHeader,
    at: u64,
) -> Result<(), ArchiveError> {
    let mut extended = h.kind == TarType::Sparse && block.get(482).is_some_and(|&b| b != 0);
    let mut blocks = 0;
    while extended {
        blocks += 1;
        let mut ext = [0u8; TAR_BLOCK];
        if blocks > MAX_SPARSE_BLOCKS || tar.read_full(&mut ext)? < TAR_BLOCK {
            return Err(ArchiveError::SparseExtensions { at });
        }
        extended = ext.get(504).is_some_and(|&b| b != 0);
    }
    Ok(())
}

/// The bytes a member's data takes in the stream, padding included, checked against the size
/// of the stream when it is known.
fn stored_size(tar: &TarStream, h: &TarHeader, at: u64) -> Result<u64, ArchiveError> {
    let stored = h
        .size
        .checked_add(padding(h.size))
        .filter(|&n| tar.pos.checked_add(n).is_some())
        .ok_or(ArchiveError::SizeOutOfRange { at, size: h.size })?;
    if let Some(len) = tar.origin.known_len() {
        if tar.pos + h.size > len {
            return Err(ArchiveError::MemberPastEnd { at, size: h.size, left: len - tar.pos });
        }
    }
    Ok(stored)
}

/// What an entry type becomes on extraction: GNU dump folders (`D`) are folders; other types
/// GNU tar does not know (all but volume labels, `V`) are regular files.
pub(super) fn extracted_kind(kind: TarType) -> TarType {
    match kind {
        TarType::Other(b'D') => TarType::Dir,
        k => k,
    }
}

/// Decides per member path whether a member is read (images hide what later layers replaced).
pub(super) type Visible<'v> = &'v (dyn Fn(&Path) -> bool + Sync);

pub(super) fn expand_tar(
    stream: &Arc<Origin>,
    ctx: &Ctx,
    record: ArchiveRecord,
) -> Result<Found, ArchiveError> {
    let gather = Gather::default();
    if let Err(e) = walk_tar(stream, None, 0, ctx, &gather, &|_| true, &mut |_, _| {}) {
        gather.problem(ctx, Path::new(""), e.to_string());
    }
    Ok(gather.finish(ctx, record))
}

/// Walks a tar stream: every member is checked, inspected (in parallel where it was read into
/// memory) and gathered; `seen` hears of every member name (for image layers). `live` is the
/// stream when the caller already has it open (an image layer read as it streams by); member
/// sequence numbers start after `first_seq`. An error is what stopped the walk: members before
/// it are gathered.
#[allow(clippy::too_many_arguments)]
pub(super) fn walk_tar<'a>(
    stream: &'a Arc<Origin>,
    live: Option<Box<dyn Read + 'a>>,
    first_seq: u64,
    ctx: &Ctx,
    gather: &Gather,
    visible: Visible,
    seen: &mut dyn FnMut(&Path, &TarType),
) -> Result<(), ArchiveError> {
    let reader = match live {
        Some(r) => r,
        None => stream.open().map_err(ArchiveError::Open)?,
    };
    let mut tar = TarStream { origin: stream, reader, pos: 0 };
    let random = stream.random().is_some();
    // Every regular file so far, visible or not: what a later hard link may name (where its
    // data starts and its size: an origin is made only for a file a link names).
    let mut files: HashMap<PathBuf, (u64, u64)> = HashMap::new();
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
        let Some(path) = entry_path(&entry.header, ctx, gather) else {
            if let Err(e) = tar.skip(entry.stored) {
                failure = Some(ArchiveError::Read(e));
                break;
            }
            continue;
        };
        let kind = extracted_type(entry.header.kind, &path, visible, ctx, gather);
        seen(&path, &kind);
        let wanted = visible(&path);
        if wanted && !matches!(kind, TarType::Dir | TarType::Other(_)) {
            gather.claim(seq, &path);
        }
        let mut consumed = 0u64;
        let h = &entry.header;
        if matches!(kind, TarType::File | TarType::Sparse) && (entry.sparse || kind == TarType::Sparse) {
            if wanted {
                gather.problem(ctx, &path, "sparse tar member: its data is not stored as-is, not read".into())
            }
        } else if kind == TarType::File {
            let origin = Arc::new(stream.range(entry.data, h.size));
            files.insert(path.clone(), (entry.data, h.size));
            let member = Member { origin, seq, path: &path, size: h.size };
            match wanted.then(|| regular_member(scope, &mut tar, member, random, ctx, gather)) {
                Some(Ok(n)) => consumed = n,
                Some(Err(e)) => {
                    failure = Some(e);
                    break;
                }
                None => {}
            }
        } else if wanted {
            other_member(kind, h, seq, &path, (stream, &files), ctx, gather);
        }
        if let Err(source) = tar.skip(entry.stored.saturating_sub(consumed)) {
            failure = Some(ArchiveError::Member { path, source });
            break;
        }
    });
    match failure {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// The path an entry extracts to, or `None` (with a problem when the name is unsafe).
fn entry_path(h: &TarHeader, ctx: &Ctx, gather: &Gather) -> Option<PathBuf> {
    match member_path(&h.name) {
        Ok(p) => p,
        Err(why) => {
            let shown = PathBuf::from(OsStr::from_bytes(&h.name));
            gather.problem(ctx, &shown, why.to_string());
            None
        }
    }
}

/// What an entry extracts as: GNU tar extracts entry types it does not know as regular files;
/// so does this walk, saying so.
fn extracted_type(kind: TarType, path: &Path, visible: Visible, ctx: &Ctx, gather: &Gather) -> TarType {
    match extracted_kind(kind) {
        TarType::Other(c) if c != b'V' => {
            if visible(path) {
                let shown = char::from(c).escape_default();
                let note = format!(
                    "unknown tar entry type '{shown}': read as a regular file, as GNU tar extracts it"
                );
                gather.problem(ctx, path, note);
            }
            TarType::File
        }
        k => k,
    }
}

/// A regular member to inspect: its bytes, its place in the archive's order, and its path.
struct Member<'p> {
    origin: Arc<Origin>,
    seq: u64,
    path: &'p Path,
    size: u64,
}

/// Inspects a regular member: in place on another thread when the origin is random-access, read
/// into memory and inspected on another thread when small (and room allows), else live from the
/// stream. Returns how many of its bytes were taken from the stream.
fn regular_member<'s, 't: 's>(
    scope: &rayon::Scope<'s>,
    tar: &mut TarStream,
    m: Member,
    random: bool,
    ctx: &Ctx<'t>,
    gather: &'s Gather,
) -> Result<u64, ArchiveError> {
    let (origin, seq, size) = (m.origin, m.seq, m.size);
    if random {
        let (path, ctx) = (m.path.to_path_buf(), ctx.clone());
        scope.spawn(move |_| gather.add(seq, path.clone(), visit(&origin, Bytes::InPlace, &path, &ctx)));
        return Ok(0);
    }
    if size > IN_MEMORY {
        let mut live = MemberReader { tar, left: size };
        let found = visit(&origin, Bytes::Live(Box::new(&mut live)), m.path, ctx);
        gather.add(seq, m.path.to_path_buf(), found);
        return Ok(size - live.left);
    }
    let mut data = vec![0u8; size as usize];
    match tar.read_full(&mut data) {
        Ok(n) if n as u64 == size => {}
        Ok(_) => return Err(ArchiveError::TruncatedInside(m.path.to_path_buf())),
        Err(source) => return Err(ArchiveError::Member { path: m.path.to_path_buf(), source }),
    }
    let data = Arc::new(data);
    // Over the scan's room for member bytes in memory, the member is inspected on this thread
    // instead of queued: waiting would either stall or, running queued work while waiting,
    // nest archive inside archive on one stack.
    let members = ctx.reading.decoding.members();
    if !members.reserve(size) {
        gather.add(seq, m.path.to_path_buf(), visit(&origin, Bytes::Memory(data), m.path, ctx));
    } else {
        let (path, ctx) = (m.path.to_path_buf(), ctx.clone());
        scope.spawn(move |_| {
            let n = data.len() as u64;
            gather.add(seq, path.clone(), visit(&origin, Bytes::Memory(data), &path, &ctx));
            ctx.reading.decoding.members().release(n);
        });
    }
    Ok(size)
}

/// A member that is not a regular file: links are recorded (a symbolic link that leaves the
/// tree, or a hard link to no earlier member, is a problem); special files are problems.
fn other_member(
    kind: TarType,
    h: &TarHeader,
    seq: u64,
    path: &Path,
    (stream, files): (&Arc<Origin>, &HashMap<PathBuf, (u64, u64)>),
    ctx: &Ctx,
    gather: &Gather,
) {
    match kind {
        TarType::Symlink => {
            if link_escapes(path, &h.link) {
                let to = String::from_utf8_lossy(&h.link);
                gather.problem(ctx, path, format!("symbolic link to {to}: it leaves the archive's tree"));
            }
            gather.link(seq, path, &h.link);
        }
        TarType::HardLink => {
            match member_path(&h.link).ok().flatten().and_then(|t| files.get(&t).map(|o| (t, o))) {
                Some((target, &(data, size))) => {
                    gather.hard_link(seq, path, &target, Arc::new(stream.range(data, size)))
                }
                None => gather.problem(
                    ctx,
                    path,
                    format!("hard link to {}, which no earlier member is", String::from_utf8_lossy(&h.link)),
                ),
            }
        }
        TarType::Special(what) => {
            gather.problem(ctx, path, format!("not a regular file ({what}): not opened"))
        }
        _ => {}
    }
}

/// The tar stream an origin holds, by its first bytes: itself, or its gzip/zstd/xz decoding;
/// `None` when it is neither tar nor compressed.
pub(super) fn tar_stream(
    origin: &Arc<Origin>,
    budget: &Arc<Budget>,
) -> Result<Option<Arc<Origin>>, ArchiveError> {
    let head = read_head(origin)?;
    Ok(layer_codec(&head).map(|codec| match codec {
        Some(c) => Arc::new(Origin::decoded(origin.clone(), c, None, budget)),
        None => origin.clone(),
    }))
}

/// Lists a random-access tar's members by path (regular files only), for image detection.
pub(super) fn list_tar(stream: &Arc<Origin>) -> Result<BTreeMap<String, Arc<Origin>>, ArchiveError> {
    let mut tar = TarStream { origin: stream, reader: stream.open()?, pos: 0 };
    let mut out = BTreeMap::new();
    while let Some(e) = next_entry(&mut tar)? {
        let h = &e.header;
        if let (TarType::File, Ok(Some(p))) = (h.kind, member_path(&h.name)) {
            out.insert(p.to_string_lossy().into_owned(), Arc::new(stream.range(e.data, h.size)));
        }
        tar.skip(e.stored)?;
    }
    Ok(out)
}

/// The first `max` bytes of the regular member at `path` of a tar stream (read in one pass,
/// the rest left unread), or why there are none.
pub(super) fn read_file(stream: &Arc<Origin>, path: &Path, max: u64) -> Result<Vec<u8>, ArchiveError> {
    let mut tar = TarStream { origin: stream, reader: stream.open()?, pos: 0 };
    while let Some(e) = next_entry(&mut tar)? {
        let h = &e.header;
        if h.kind == TarType::File && member_path(&h.name).ok().flatten().as_deref() == Some(path) {
            let mut data = Vec::new();
            let n = h.size.min(max);
            (&mut tar.reader).take(n).read_to_end(&mut data)?;
            if (data.len() as u64) < n {
                return Err(ArchiveError::ShortMember(path.to_path_buf()));
            }
            return Ok(data);
        }
        tar.skip(e.stored)?;
    }
    Err(ArchiveError::NotInArchive(path.to_path_buf()))
}

/// How a tar stream whose first bytes are `head` is stored: plain (`Some(None)`), compressed
/// whole (`Some(Some(codec))`), or not a tar stream at all (`None`).
pub(super) fn layer_codec(head: &[u8]) -> Option<Option<Codec>> {
    let kind = classify(head);
    match kind.codec() {
        Some(c) => Some(Some(c)),
        None if kind == Kind::Tar => Some(None),
        None => None,
    }
}
