//! The bytes parsers read: [`ByteSource`], random access to one artifact, and its views (a
//! window of another source, a prefetched head, a source several threads read at once), with
//! the error every read and parse gives.

use std::borrow::Cow;

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

    /// `inner`, whose first bytes `head` were read already (a file's sniffed head): reads
    /// within them cost no read of `inner`.
    pub fn already(inner: &'a dyn ByteSource, head: &[u8]) -> Self {
        let head = head.get(..head.len().min(inner.len() as usize)).unwrap_or_default().to_vec();
        Prefetched { inner, head }
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
