//! Byte origins: where the bytes of a file or archive member come from, so that they can be
//! read in place or opened again from their start — a range of a file, memory, or the
//! decompressed form of another origin — and the inflation [`Budget`] every byte decoded out of
//! one top-level archive counts against.
//!
//! A member of a stream is read through a [`ReplaySource`]: forward from the live stream, and,
//! when a parser reads backwards (an ELF's section table sits at its end), by opening the origin
//! again — a few passes of decompression, never the member in memory. An xz stream of several
//! blocks (as Debian builds `data.tar.xz`) is opened at the block holding an offset, through its
//! index, so such a jump costs one block.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{self, Read, Seek, SeekFrom};

use std::sync::Arc;

use crate::decode::Budget;
use crate::parse::archive::{xz_blocks, xz_tail_index, XzBlock};
use crate::parse::{check_range, ByteSource, ParseError, Slice};
use crate::source::file::FileSource;
use crate::vocab::codec::Codec;

/// Bytes a [`ReplaySource`] keeps behind its position, for parsers that step back a little.
const KEEP_BEHIND: u64 = 16 << 20;
/// The start of a member a [`ReplaySource`] keeps for good (headers are read again and again).
const KEEP_HEAD: u64 = 1 << 20;
/// Most times one member's stream is read from its start: the parsers read an ELF in two passes.
const MAX_PASSES: u32 = 4;
/// Most jumps within one member of a seekable stream (each decodes at most one xz block).
const MAX_JUMPS: u32 = 1024;
/// How far before a jump's target reading starts, for parsers that step back a little.
const JUMP_BACK: u64 = 1 << 20;

/// Where a stream of bytes comes from, so that it can be opened again from its start.
#[derive(Clone)]
pub enum Origin {
    /// A byte range of a file (random access).
    File { file: Arc<FileSource>, offset: u64, len: u64 },
    /// Bytes in memory (random access).
    Memory { data: Arc<Vec<u8>>, offset: u64, len: u64 },
    /// The decompressed form of another origin; `len` is its size when known. An xz file of
    /// several blocks on random access has them listed, to start decoding at any block.
    Decoded {
        inner: Arc<Origin>,
        codec: Codec,
        len: Option<u64>,
        budget: Arc<Budget>,
        blocks: Option<Arc<XzSeek>>,
    },
    /// A byte range of a stream.
    Range { inner: Arc<Origin>, offset: u64, len: u64 },
    /// A layer blob in a registry: fetched afresh each time it is opened, its digest checked
    /// when it is read to its end.
    Remote(Arc<crate::source::registry::Blob>),
}

/// Where each block of a multi-block xz file starts, compressed and not.
pub struct XzSeek {
    blocks: Vec<XzBlock>,
    index_at: u64,
    flags: [u8; 2],
}

/// A gap a reader jumps over (by opening at the target) rather than reads through, when its
/// origin can start anywhere cheaply.
pub const JUMP: u64 = 8 << 20;

impl Origin {
    /// The decompressed form of `inner`. For xz on random access, the block index is read
    /// (a few bytes at the end) so that readers can start near any offset.
    pub fn decoded(inner: Arc<Origin>, codec: Codec, len: Option<u64>, budget: &Arc<Budget>) -> Origin {
        let blocks = match (codec, inner.random()) {
            (Codec::Xz, Some(src)) => {
                xz_blocks(&*src).filter(|(b, _)| b.len() > 1).and_then(|(blocks, index_at)| {
                    let h = src.read_at(6, 2).ok()?;
                    Some(Arc::new(XzSeek { blocks, index_at, flags: [*h.first()?, *h.get(1)?] }))
                })
            }
            _ => None,
        };
        Origin::Decoded { inner, codec, len, budget: budget.clone(), blocks }
    }

    /// True when opening it at an offset costs little more than at its start.
    pub fn seekable(&self) -> bool {
        match self {
            Origin::File { .. } | Origin::Memory { .. } => true,
            Origin::Decoded { blocks, .. } => blocks.is_some(),
            Origin::Range { inner, .. } => inner.seekable(),
            Origin::Remote(_) => false,
        }
    }

    /// For bytes that come from a registry: the largest member a reader holds whole rather
    /// than fetch the layer again to read it backwards. `None` for bytes that come from here.
    pub fn remote_hold(&self) -> Option<u64> {
        match self {
            Origin::Remote(blob) => Some(blob.hold),
            Origin::Decoded { inner, .. } | Origin::Range { inner, .. } => inner.remote_hold(),
            Origin::File { .. } | Origin::Memory { .. } => None,
        }
    }

    /// A whole file.
    pub fn file(file: Arc<FileSource>) -> Origin {
        let len = file.len();
        Origin::File { file, offset: 0, len }
    }

    /// `len` bytes from `offset` of this origin.
    pub fn range(self: &Arc<Self>, offset: u64, len: u64) -> Origin {
        match &**self {
            Origin::File { file, offset: o, .. } => {
                Origin::File { file: file.clone(), offset: o + offset, len }
            }
            Origin::Memory { data, offset: o, .. } => {
                Origin::Memory { data: data.clone(), offset: o + offset, len }
            }
            Origin::Range { inner, offset: o, .. } => {
                Origin::Range { inner: inner.clone(), offset: o + offset, len }
            }
            Origin::Decoded { .. } | Origin::Remote(_) => Origin::Range { inner: self.clone(), offset, len },
        }
    }

    /// Its length, when known without reading it.
    pub fn known_len(&self) -> Option<u64> {
        match self {
            Origin::File { len, .. } | Origin::Memory { len, .. } | Origin::Range { len, .. } => Some(*len),
            Origin::Decoded { len, .. } => *len,
            Origin::Remote(blob) => Some(blob.size),
        }
    }

    /// Random access to it, when it is a range of a file or of memory.
    pub fn random(&self) -> Option<Box<dyn ByteSource + '_>> {
        match self {
            Origin::File { file, offset, len } => Some(Box::new(Slice::new(&**file, *offset, *len))),
            Origin::Memory { data, offset, len } => Some(Box::new(Slice::new(&**data, *offset, *len))),
            _ => None,
        }
    }

    /// Opens it for reading from its start.
    pub fn open(&self) -> io::Result<Box<dyn Read + '_>> {
        self.open_at(0)
    }

    /// Opens it for reading from `at`: directly on random access, from the nearest xz block
    /// before it on a seekable stream, else from the start, skipping.
    pub fn open_at(&self, at: u64) -> io::Result<Box<dyn Read + '_>> {
        let eof = || io::Error::new(io::ErrorKind::UnexpectedEof, "stream ends before the member");
        match self {
            Origin::File { .. } | Origin::Memory { .. } => {
                let len = self.known_len().unwrap_or(0);
                let mut r =
                    SourceReader::new(self.random().ok_or_else(|| io::Error::other("no source"))?, len);
                r.seek(SeekFrom::Start(at))?;
                Ok(Box::new(r))
            }
            Origin::Decoded { inner, codec, len, budget, blocks } => {
                let (decoded, start): (Box<dyn Read>, u64) = match blocks.as_deref() {
                    Some(seek) => {
                        let i =
                            seek.blocks.partition_point(|b| b.uncompressed_offset <= at).saturating_sub(1);
                        let first = seek.blocks.get(i).ok_or_else(eof)?;
                        let head = inner.open_at(0)?.take(12);
                        let body = inner.open_at(first.offset)?.take(seek.index_at - first.offset);
                        let tail = io::Cursor::new(xz_tail_index(&seek.blocks, i, seek.flags));
                        let stream = Box::new(head.chain(body).chain(tail));
                        (crate::decode::xz_reader(stream, false)?, first.uncompressed_offset)
                    }
                    _ => (crate::decode::reader(*codec, inner.open()?)?, 0),
                };
                let mut r: Box<dyn Read> =
                    Box::new(Metered { inner: decoded, budget: budget.clone(), produced: start, cap: *len });
                let skip = at - start;
                if io::copy(&mut (&mut r).take(skip), &mut io::sink())? < skip {
                    return Err(eof());
                }
                Ok(r)
            }
            Origin::Range { inner, offset, len } => {
                Ok(Box::new(inner.open_at(offset + at)?.take(len.saturating_sub(at))))
            }
            Origin::Remote(blob) => Ok(Box::new(blob.open_at(at)?)),
        }
    }

    /// A [`ByteSource`] over it: random access where it has it, else a [`ReplaySource`].
    pub fn source<'a>(&'a self, live: Option<Box<dyn Read + 'a>>) -> Box<dyn ByteSource + 'a> {
        match self.random() {
            Some(s) => s,
            None => Box::new(ReplaySource::new(self, self.known_len().unwrap_or(u64::MAX), live)),
        }
    }
}

/// Counts what a decoder produces against the budget, and against a declared size.
pub struct Metered<R> {
    inner: R,
    budget: Arc<Budget>,
    produced: u64,
    cap: Option<u64>,
}

impl<R> Metered<R> {
    /// `inner` metered against `budget`, and against `cap` bytes when the size is declared.
    pub fn new(inner: R, budget: Arc<Budget>, cap: Option<u64>) -> Self {
        Metered { inner, budget, produced: 0, cap }
    }
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.produced += n as u64; // counted from the stream's start, for the declared size
        if self.cap.is_some_and(|c| self.produced > c) {
            return Err(io::Error::other("member inflates past its declared size"));
        }
        self.budget.spend(n as u64)?;
        Ok(n)
    }
}

/// `Read + Seek` over a [`ByteSource`] (for the zip reader, SQLite and decoders).
pub struct SourceReader<S> {
    src: S,
    pos: u64,
    len: u64,
}

impl<S: ByteSource> SourceReader<S> {
    pub fn new(src: S, len: u64) -> Self {
        SourceReader { src, pos: 0, len }
    }
}

const CHUNK: usize = 256 << 10;

impl<S: ByteSource> Read for SourceReader<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.len.saturating_sub(self.pos)).min(buf.len().min(CHUNK) as u64) as usize;
        if n == 0 {
            return Ok(0);
        }
        let data = self.src.read_at(self.pos, n).map_err(io::Error::other)?;
        let n = data.len().min(n);
        buf.get_mut(..n).unwrap_or_default().copy_from_slice(data.get(..n).unwrap_or_default());
        self.pos += n as u64;
        Ok(n)
    }
}

impl<S: ByteSource> Seek for SourceReader<S> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek out of range"))?;
        Ok(self.pos)
    }
}

/// A member of a stream, addressed like a file, without holding it whole.
///
/// Reads go forward through the stream, keeping the member's first `KEEP_HEAD` bytes and the
/// last `KEEP_BEHIND` before the position; a read further back opens the origin again (at
/// most `MAX_PASSES` times). The first pass reads the live stream the archive walk is on.
pub struct ReplaySource<'a> {
    origin: &'a Origin,
    len: u64,
    /// Every byte read is kept (a member of a registry layer small enough to hold: reading it
    /// again would fetch the layer again).
    hold_all: bool,
    state: RefCell<Replay<'a>>,
}

struct Replay<'a> {
    reader: Option<Box<dyn Read + 'a>>,
    /// `reader` is the live stream the archive walk is on (the first pass).
    on_live: bool,
    /// The live stream, set aside while a reopened reader reads what lies before its position:
    /// reading goes back to it there, so the origin is read again only up to where the first
    /// pass had reached (bytes of a registry layer past that could not be checked yet).
    live: Option<(Box<dyn Read + 'a>, u64)>,
    /// One chunk, reused for every read from the stream.
    buf: Vec<u8>,
    pos: u64,
    passes: u32,
    jumps: u32,
    head: Vec<u8>,
    window: Vec<u8>,
    window_base: u64,
}

impl<'a> ReplaySource<'a> {
    pub fn new(origin: &'a Origin, len: u64, live: Option<Box<dyn Read + 'a>>) -> Self {
        let passes = u32::from(live.is_some());
        let on_live = live.is_some();
        let hold_all = origin.remote_hold().is_some_and(|h| len <= h);
        ReplaySource {
            origin,
            len,
            hold_all,
            state: RefCell::new(Replay {
                reader: live,
                on_live,
                live: None,
                buf: Vec::new(),
                pos: 0,
                passes,
                jumps: 0,
                head: Vec::new(),
                window: Vec::new(),
                window_base: 0,
            }),
        }
    }

    /// How many times the stream was read.
    pub fn passes(&self) -> u32 {
        self.state.borrow().passes
    }
}

impl Replay<'_> {
    fn served(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let end = offset + len as u64;
        if end <= self.head.len() as u64 {
            return self.head.get(offset as usize..end as usize);
        }
        let wend = self.window_base + self.window.len() as u64;
        if offset >= self.window_base && end <= wend {
            let s = (offset - self.window_base) as usize;
            return self.window.get(s..s + len);
        }
        None
    }
}

impl ByteSource for ReplaySource<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> crate::parse::Result<Cow<'_, [u8]>> {
        check_range(self.len, offset, len, "archive member")?;
        let mut st = self.state.borrow_mut();
        if let Some(b) = st.served(offset, len) {
            return Ok(Cow::Owned(b.to_vec()));
        }
        let io_err = |e: io::Error, at: u64| ParseError::Io { offset: at, detail: e.to_string() };
        let have_from = if st.window.is_empty() { st.pos } else { st.window_base };
        let seekable = self.origin.seekable();
        let jump = seekable && offset > st.pos.saturating_add(JUMP);
        if st.reader.is_none() || offset < have_from || jump {
            // Reopen: at the offset (less a little, for parsers that step back) where the origin
            // can start anywhere; else from the start, which is a whole new pass.
            let start = if seekable { offset.saturating_sub(JUMP_BACK) } else { 0 };
            let (count, limit) =
                if seekable { (&mut st.jumps, MAX_JUMPS) } else { (&mut st.passes, MAX_PASSES) };
            if *count >= limit {
                return Err(ParseError::TooLarge {
                    what: "re-reads of a streamed archive member (its parser reads backwards)",
                    claimed: u64::from(*count) + 1,
                    limit: u64::from(limit),
                });
            }
            *count += 1;
            let reopened = self.origin.open_at(start).map_err(|e| io_err(e, start))?;
            if st.on_live && start < st.pos {
                let pos = st.pos;
                st.live = st.reader.take().map(|r| (r, pos));
            }
            st.on_live = false;
            st.reader = Some(reopened);
            st.pos = start;
            st.window.clear();
            st.window_base = start;
        }
        let end = offset + len as u64;
        // Read at least a chunk ahead: parsers often step forward a few bytes at a time.
        let ahead = end.max(st.pos.saturating_add(CHUNK as u64)).min(self.len);
        let st = &mut *st;
        if st.buf.is_empty() {
            st.buf = vec![0u8; CHUNK];
        }
        while st.pos < ahead {
            if st.live.as_ref().is_some_and(|(_, at)| *at == st.pos) {
                st.reader = st.live.take().map(|(r, _)| r);
                st.on_live = true;
            }
            // A reopened reader stops where the live stream was set aside.
            let until = st.live.as_ref().map_or(ahead, |(_, at)| ahead.min(*at.max(&st.pos)));
            let want = (until.max(st.pos + 1) - st.pos).min(CHUNK as u64) as usize;
            let Some(reader) = st.reader.as_mut() else { break };
            let n = match reader.read(st.buf.get_mut(..want).unwrap_or_default()) {
                Ok(0) if st.pos >= end => break,
                Ok(0) => return Err(ParseError::Truncated { what: "archive member", offset: st.pos }),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(e, st.pos)),
            };
            let got = st.buf.get(..n).unwrap_or_default();
            if st.pos < KEEP_HEAD && st.head.len() as u64 == st.pos {
                let take = (KEEP_HEAD - st.pos).min(n as u64) as usize;
                st.head.extend_from_slice(got.get(..take).unwrap_or_default());
            }
            let keep_from = if self.hold_all { 0 } else { offset.saturating_sub(KEEP_BEHIND) };
            if st.pos + n as u64 > keep_from {
                // The window holds one contiguous run of bytes: after a gap (bytes read through
                // and not kept), it starts again here.
                if st.window.is_empty() || st.window_base + st.window.len() as u64 != st.pos {
                    st.window.clear();
                    st.window_base = st.pos;
                    if self.hold_all {
                        // Held whole: grown once to its size, not doubled past it.
                        st.window.reserve_exact(self.len.saturating_sub(st.pos) as usize);
                    }
                }
                st.window.extend_from_slice(got);
                // Trim rarely: only once the window holds twice what it must keep.
                if st.window.len() as u64 > 2 * KEEP_BEHIND + CHUNK as u64 && st.window_base < keep_from {
                    let drop = ((keep_from - st.window_base) as usize).min(st.window.len());
                    st.window.drain(..drop);
                    st.window_base += drop as u64;
                }
            }
            st.pos += n as u64;
        }
        st.served(offset, len)
            .map(|b| Cow::Owned(b.to_vec()))
            .ok_or(ParseError::Truncated { what: "archive member", offset })
    }
}
