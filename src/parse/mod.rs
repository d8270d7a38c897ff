//! Parsers: raw facts out of bytes, nothing else.
//!
//! Every parser here reads through [`ByteSource`], which is a plain `[u8]` in tests and fuzzing,
//! a positioned file reader in the scanner, and a forward window over a decompression stream for
//! compressed bundles. Parsers do no file-system IO, print nothing and know nothing of
//! `targets.toml`: they return raw facts (e_flags, note contents, bundle entry IDs) that
//! `resolve` turns into targets. They read only the bytes a fact needs, check every length and
//! offset against the data before using it, never allocate by an untrusted size, and never
//! panic: malformed input is a [`ParseError`] that names what was wrong and where.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

pub mod aotriton;
pub mod archive;
pub mod bundle;
pub mod elf;
pub mod firmware;
pub mod host;
pub mod kpack;
pub mod magic;
pub mod miopen;
pub mod msgpack;
pub mod offload;
pub mod pe;
pub mod tensile;

use std::borrow::Cow;
use std::cell::RefCell;

use thiserror::Error;

/// The largest single read a parser may ask for. Anything bigger is a sign of a lying header.
pub const MAX_READ: u64 = 256 << 20;

/// Why a parse failed. Holds no paths: the scanner adds the path when it reports the problem.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The data ends before a structure the headers promise.
    #[error("{what} truncated at offset {offset:#x}")]
    Truncated { what: &'static str, offset: u64 },
    /// A structure is present but its contents are impossible.
    #[error("{what} at offset {offset:#x}")]
    Malformed { what: &'static str, offset: u64 },
    /// A header claims a size beyond what gfxscan will read or inflate.
    #[error("{what} claims {claimed} bytes, over the limit of {limit}")]
    TooLarge { what: &'static str, claimed: u64, limit: u64 },
    /// The compressed payload of a bundle is corrupt.
    #[error("{what}: {detail}")]
    Decompress { what: &'static str, detail: String },
    /// The underlying reader failed.
    #[error("read failed at offset {offset:#x}: {detail}")]
    Io { offset: u64, detail: String },
}

impl ParseError {
    /// The same error with its offset counted from `base` earlier: from a bundle's start to
    /// its region's, from a region's to the file's.
    pub fn rebased(self, base: u64) -> ParseError {
        match self {
            ParseError::Truncated { what, offset } => {
                ParseError::Truncated { what, offset: offset.saturating_add(base) }
            }
            ParseError::Malformed { what, offset } => {
                ParseError::Malformed { what, offset: offset.saturating_add(base) }
            }
            ParseError::Io { offset, detail } => {
                ParseError::Io { offset: offset.saturating_add(base), detail }
            }
            other => other,
        }
    }
}

/// How far a parser reads into the code it meets.
#[derive(Debug, Clone, Copy, Default)]
pub enum Depth<'w> {
    /// Every fact: each code object's headers and notes (`scan`).
    #[default]
    Facts,
    /// What the runtime's choice of code needs (`check`): a bundle entry whose ID comgr reads
    /// as a known processor's target ID is taken from the bundle table alone, its code object
    /// neither inflated nor read (clr's `ExtractFatBinaryUsingCOMGR` and comgr's
    /// `lookUpCodeObject` pick a bundle's code by entry ID). Entries for the `wanted`
    /// processors (the GPUs being checked) are read to their ELF headers all the same: a
    /// verdict rests on them, so a broken one must be seen; so are entries of processors the
    /// target table does not know and of generic targets (named by their ELF, as a full read
    /// names them). HIP 5.x's unbundler picks by the ELF's target instead; an entry whose ELF
    /// names another processor than its ID can then differ from a full read only toward
    /// MISSING: an entry read from its table serves the processor its ID names, never a wanted one.
    Tables { wanted: &'w [String], targets: &'w crate::vocab::targets::Targets },
}

/// Shorthand used by every parser.
pub type Result<T> = std::result::Result<T, ParseError>;

/// Random access to the bytes of one artifact: the only way parsers see data.
pub trait ByteSource {
    /// Total length in bytes (for a stream, the length its header declares).
    fn len(&self) -> u64;

    /// Exactly `len` bytes at `offset`, or an error; never a short read.
    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>>;

    /// True when the source holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Up to `len` bytes at `offset`, fewer at the end of the source.
    fn read_up_to(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        let avail = self.len().saturating_sub(offset).min(len as u64) as usize;
        self.read_at(offset, avail)
    }

    /// Lets a forward-only source drop everything before `offset`: no later read goes below it.
    fn release_before(&self, _offset: u64) {}

    /// Says that `[offset, offset + len)` will be read soon, in order: a file can have the
    /// kernel fetch exactly that range ahead in large reads. Changes nothing but speed.
    fn will_need(&self, _offset: u64, _len: u64) {}

    /// The same bytes as a source several threads may read at once (a file read with `pread`,
    /// bytes in memory), so independent parts of it can be parsed in parallel; `None` for
    /// forward-only streams.
    fn shared(&self) -> Option<Shared<'_>> {
        None
    }
}

/// A window of a source that threads may read at the same time (see [`ByteSource::shared`]).
#[derive(Clone, Copy)]
pub struct Shared<'a> {
    inner: &'a (dyn ByteSource + Sync),
    base: u64,
    len: u64,
}

impl<'a> Shared<'a> {
    /// All of `inner`.
    pub fn whole(inner: &'a (dyn ByteSource + Sync)) -> Self {
        Shared { inner, base: 0, len: inner.len() }
    }

    /// The part from `base` for `len` bytes, clipped.
    fn narrow(self, base: u64, len: u64) -> Self {
        let base = self.base.saturating_add(base).min(self.base + self.len);
        let len = len.min(self.base + self.len - base);
        Shared { inner: self.inner, base, len }
    }
}

impl ByteSource for Shared<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        check_range(self.len, offset, len, "data")?;
        self.inner.read_at(self.base + offset, len)
    }

    fn will_need(&self, offset: u64, len: u64) {
        self.inner.will_need(self.base.saturating_add(offset), len.min(self.len.saturating_sub(offset)));
    }

    fn shared(&self) -> Option<Shared<'_>> {
        Some(*self)
    }
}

/// Checks a requested range against a source length and the single-read limit.
pub fn check_range(total: u64, offset: u64, len: usize, what: &'static str) -> Result<()> {
    if len as u64 > MAX_READ {
        return Err(ParseError::TooLarge { what, claimed: len as u64, limit: MAX_READ });
    }
    match offset.checked_add(len as u64) {
        Some(end) if end <= total => Ok(()),
        _ => Err(ParseError::Truncated { what, offset }),
    }
}

impl ByteSource for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        check_range(<[u8]>::len(self) as u64, offset, len, "data")?;
        let start = offset as usize;
        self.get(start..start + len).map(Cow::Borrowed).ok_or(ParseError::Truncated { what: "data", offset })
    }
}

/// A reference or a box of a source is the same source.
macro_rules! forward_byte_source {
    ($($wrapper:ty),*) => {$(
        impl<T: ByteSource + ?Sized> ByteSource for $wrapper {
            fn len(&self) -> u64 {
                (**self).len()
            }

            fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
                (**self).read_at(offset, len)
            }

            fn release_before(&self, offset: u64) {
                (**self).release_before(offset)
            }

            fn will_need(&self, offset: u64, len: u64) {
                (**self).will_need(offset, len)
            }

            fn shared(&self) -> Option<Shared<'_>> {
                (**self).shared()
            }
        }
    )*};
}
forward_byte_source!(&T, Box<T>);

impl ByteSource for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        self.as_slice().read_at(offset, len)
    }

    fn shared(&self) -> Option<Shared<'_>> {
        Some(Shared::whole(self))
    }
}

/// A window `[base, base + len)` of another source, addressed from 0.
pub struct Slice<'a> {
    inner: &'a dyn ByteSource,
    base: u64,
    len: u64,
}

impl<'a> Slice<'a> {
    /// The part of `inner` from `base` for `len` bytes, clipped to what `inner` holds.
    pub fn new(inner: &'a dyn ByteSource, base: u64, len: u64) -> Self {
        let len = len.min(inner.len().saturating_sub(base));
        Slice { inner, base, len }
    }
}

impl ByteSource for Slice<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        check_range(self.len, offset, len, "data")?;
        self.inner.read_at(self.base + offset, len)
    }

    fn release_before(&self, offset: u64) {
        self.inner.release_before(self.base + offset);
    }

    fn will_need(&self, offset: u64, len: u64) {
        let len = len.min(self.len.saturating_sub(offset));
        if len > 0 {
            self.inner.will_need(self.base.saturating_add(offset), len);
        }
    }

    fn shared(&self) -> Option<Shared<'_>> {
        self.inner.shared().map(|s| s.narrow(self.base, self.len))
    }
}

/// A source whose first bytes were read once and are served from memory; reads beyond them
/// go to the inner source. Parsers that read many small headers near the start of an object
/// use it so each header costs no extra read.
pub struct Prefetched<'a> {
    inner: &'a dyn ByteSource,
    head: Vec<u8>,
}

impl<'a> Prefetched<'a> {
    /// Reads up to `len` bytes from the start of `inner` now.
    pub fn new(inner: &'a dyn ByteSource, len: usize) -> Result<Self> {
        let head = inner.read_up_to(0, len)?.into_owned();
        Ok(Prefetched { inner, head })
    }

    /// The bytes read up front.
    pub fn head(&self) -> &[u8] {
        &self.head
    }
}

impl ByteSource for Prefetched<'_> {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn shared(&self) -> Option<Shared<'_>> {
        self.inner.shared()
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        let end = offset.saturating_add(len as u64);
        if end <= self.head.len() as u64 {
            let start = offset as usize;
            if let Some(b) = self.head.get(start..start + len) {
                return Ok(Cow::Borrowed(b));
            }
        }
        self.inner.read_at(offset, len)
    }

    fn release_before(&self, offset: u64) {
        self.inner.release_before(offset);
    }

    fn will_need(&self, offset: u64, len: u64) {
        self.inner.will_need(offset, len);
    }
}

/// Appends `item` unless `list` already holds it: an ordered set for short lists of names.
pub fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

/// Reads a little-endian `u16` at `at` from a slice already read.
pub(crate) fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// Reads a little-endian `u32` at `at` from a slice already read.
pub(crate) fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Reads a little-endian `u64` at `at` from a slice already read.
pub(crate) fn le64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Rounds `v` up to a multiple of `align` (a power of two), saturating.
pub(crate) fn align_up(v: u64, align: u64) -> u64 {
    v.checked_add(align - 1).map_or(u64::MAX, |x| x & !(align - 1))
}

/// One step of a streaming decompressor: how much input it took, output it gave, and whether
/// the compressed stream has ended.
pub(crate) struct Step {
    pub consumed: usize,
    pub produced: usize,
    pub finished: bool,
}

/// A streaming decompressor (zstd or zlib) driven by [`StreamSource`].
pub(crate) trait Inflate {
    fn step(&mut self, input: &[u8], output: &mut [u8]) -> Result<Step>;
}

/// The largest window a [`StreamSource`] keeps in memory at once.
pub const MAX_STREAM_WINDOW: u64 = 64 << 20;

const IN_CHUNK: usize = 256 << 10;
/// The first compressed read of a stream; each next read is as large as all before it, up to
/// [`IN_CHUNK`].
const FIRST_IN_CHUNK: usize = 16 << 10;
const OUT_CHUNK: usize = 256 << 10;

/// A forward-only view of a decompressed stream, addressed like the uncompressed bytes.
///
/// It inflates on demand and keeps only a window in memory: reads below the last
/// [`ByteSource::release_before`] mark fail, bytes skipped over are inflated and dropped. Memory
/// therefore stays at one window (at most [`MAX_STREAM_WINDOW`]) plus the codec's buffers,
/// whatever the header claims.
pub struct StreamSource<'a> {
    state: RefCell<StreamState<'a>>,
    declared: u64,
}

struct StreamState<'a> {
    input: &'a dyn ByteSource,
    in_start: u64,
    in_pos: u64,
    in_end: u64,
    inbuf: Vec<u8>,
    inbuf_pos: usize,
    inflate: Box<dyn Inflate + 'a>,
    /// The decoder's output buffer, allocated once per stream (not per read: a fresh zeroed
    /// chunk per step cost as much as a tenth of the inflating).
    out: Vec<u8>,
    window: Vec<u8>,
    window_base: u64,
    mark: u64,
    finished: bool,
}

impl<'a> StreamSource<'a> {
    /// A stream inflating `input[in_start..in_end]`, whose output must not exceed `declared`.
    pub(crate) fn new(
        input: &'a dyn ByteSource,
        in_start: u64,
        in_end: u64,
        inflate: Box<dyn Inflate + 'a>,
        declared: u64,
    ) -> Self {
        StreamSource {
            state: RefCell::new(StreamState {
                input,
                in_start,
                in_pos: in_start,
                in_end: in_end.min(input.len()),
                inbuf: Vec::new(),
                inbuf_pos: 0,
                inflate,
                out: Vec::new(),
                window: Vec::new(),
                window_base: 0,
                mark: 0,
                finished: false,
            }),
            declared,
        }
    }

    /// Inflates to the end of the stream, dropping the output, and returns how many compressed
    /// bytes the stream occupied (its exact end, for formats without a stored size) and how many
    /// bytes it inflated to.
    pub fn drain(&self) -> Result<(u64, u64)> {
        let mut st = self.state.borrow_mut();
        // Nothing after this is read: keep no output at all.
        st.mark = u64::MAX;
        st.fill(self.declared, u64::MAX)?;
        Ok((st.consumed(), st.window_base + st.window.len() as u64))
    }
}

impl StreamState<'_> {
    /// Compressed bytes consumed so far, counted from the stream's start.
    fn consumed(&self) -> u64 {
        self.in_pos - (self.inbuf.len() - self.inbuf_pos) as u64
    }

    /// Inflates until the window covers `need_end` or the stream ends.
    fn fill(&mut self, declared: u64, need_end: u64) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        if out.len() != OUT_CHUNK {
            out = vec![0u8; OUT_CHUNK];
        }
        let filled = self.fill_with(&mut out, declared, need_end);
        self.out = out;
        filled
    }

    fn fill_with(&mut self, out: &mut [u8], declared: u64, need_end: u64) -> Result<()> {
        while self.window_base + (self.window.len() as u64) < need_end && !self.finished {
            // Drop what no later read may ask for.
            if self.mark > self.window_base {
                let drop = (self.mark - self.window_base).min(self.window.len() as u64) as usize;
                self.window.drain(..drop);
                self.window_base += drop as u64;
            }
            if self.inbuf_pos == self.inbuf.len() && self.in_pos < self.in_end {
                // Reads grow from FIRST_IN_CHUNK to IN_CHUNK: a reader that wants only a
                // bundle's table (its first inflated kilobytes) reads no more than that needs.
                let consumed = self.consumed().saturating_sub(self.in_start);
                let chunk = consumed.clamp(FIRST_IN_CHUNK as u64, IN_CHUNK as u64);
                let n = (self.in_end - self.in_pos).min(chunk) as usize;
                let chunk = self.input.read_at(self.in_pos, n)?.into_owned();
                self.in_pos += n as u64;
                self.inbuf = chunk;
                self.inbuf_pos = 0;
            }
            let input = self.inbuf.get(self.inbuf_pos..).unwrap_or(&[]);
            let step = self.inflate.step(input, out)?;
            self.inbuf_pos += step.consumed;
            let produced_end = self.window_base + self.window.len() as u64 + step.produced as u64;
            if produced_end > declared {
                return Err(ParseError::Malformed {
                    what: "compressed payload inflates past its declared size",
                    offset: declared,
                });
            }
            let produced = out.get(..step.produced).unwrap_or(&[]);
            // Bytes below the mark are skipped over, not kept.
            let keep_from = self.mark.saturating_sub(self.window_base + self.window.len() as u64);
            if (keep_from as usize) < produced.len() {
                if self.window.is_empty() {
                    self.window_base += keep_from;
                }
                self.window.extend_from_slice(produced.get(keep_from as usize..).unwrap_or(&[]));
            } else if self.window.is_empty() {
                self.window_base += produced.len() as u64;
            }
            if self.window.len() as u64 > MAX_STREAM_WINDOW {
                return Err(ParseError::TooLarge {
                    what: "read window in compressed payload",
                    claimed: self.window.len() as u64,
                    limit: MAX_STREAM_WINDOW,
                });
            }
            if step.finished {
                self.finished = true;
            } else if step.consumed == 0 && step.produced == 0 {
                if self.inbuf_pos == self.inbuf.len() && self.in_pos >= self.in_end {
                    return Err(ParseError::Truncated { what: "compressed payload", offset: self.in_pos });
                }
                return Err(ParseError::Decompress {
                    what: "compressed payload",
                    detail: "decoder made no progress".into(),
                });
            }
        }
        Ok(())
    }
}

impl ByteSource for StreamSource<'_> {
    fn len(&self) -> u64 {
        self.declared
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        check_range(self.declared, offset, len, "decompressed bundle")?;
        let mut st = self.state.borrow_mut();
        if offset < st.window_base || offset < st.mark {
            return Err(ParseError::Malformed { what: "backward read in a compressed stream", offset });
        }
        let end = offset + len as u64;
        st.fill(self.declared, end)?;
        let have_end = st.window_base + st.window.len() as u64;
        if have_end < end {
            return Err(ParseError::Truncated { what: "compressed payload", offset: have_end });
        }
        let start = (offset - st.window_base) as usize;
        let bytes = st.window.get(start..start + len).unwrap_or(&[]).to_vec();
        Ok(Cow::Owned(bytes))
    }

    fn read_up_to(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        // The declared length may be only a cap (a zlib file stores none): return what exists.
        let len = self.declared.saturating_sub(offset).min(len as u64) as usize;
        {
            let mut st = self.state.borrow_mut();
            st.fill(self.declared, offset + len as u64)?;
            let have_end = st.window_base + st.window.len() as u64;
            if have_end < offset + len as u64 && st.finished {
                let avail = have_end.saturating_sub(offset) as usize;
                drop(st);
                return self.read_at(offset, avail);
            }
        }
        self.read_at(offset, len)
    }

    fn release_before(&self, offset: u64) {
        let mut st = self.state.borrow_mut();
        if offset > st.mark {
            st.mark = offset;
        }
    }
}
