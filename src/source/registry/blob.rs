//! Layer blobs, fetched as they are read and never believed unchecked.
//!
//! The first read of a blob ([`Blob::open_first`], the layer walk's) hashes it whole and fails
//! at its end unless its size and SHA-256 are the manifest's; as it goes it records the hash of
//! each [`PIECE`] of it. Any later read ([`Blob::open_at`]: a parser reading a member backwards,
//! a hard link read again) fetches the blob again, and each piece it gets is held until it has
//! been checked against the hash the first read recorded for that piece: a registry that sends
//! other bytes the second time is caught before a byte of them is used. A later read past what
//! the first read has reached, or after the first read failed its check, fails.

use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::{Client, Meter};

/// Bytes hashed as one piece by a blob's first read: what a later read checks at a time.
pub const PIECE: u64 = 64 << 10;

/// One layer blob.
pub struct Blob {
    pub(super) client: Arc<Client>,
    pub digest: String,
    pub size: u64,
    /// Members of this layer up to this size are held whole while they are read.
    pub hold: u64,
    /// What the first read has passed; emptied when it fails its check.
    pieces: Mutex<Pieces>,
}

/// The hash of each whole piece a blob's first read has passed, and the bytes it has of the
/// piece it is in.
#[derive(Default)]
struct Pieces {
    whole: Vec<[u8; 32]>,
    partial: Vec<u8>,
}

impl Blob {
    pub(super) fn new(client: Arc<Client>, digest: String, size: u64) -> Blob {
        Blob { client, digest, size, hold: 0, pieces: Mutex::new(Pieces::default()) }
    }

    /// The first read: hashed whole (its end fails unless size and digest hold) and piece by
    /// piece, for later reads to be checked against.
    pub fn open_first(self: &Arc<Self>) -> io::Result<BlobReader> {
        if let Ok(mut p) = self.pieces.lock() {
            *p = Pieces::default();
        }
        Ok(BlobReader {
            body: self.fetch(0)?.0,
            blob: self.clone(),
            whole: Sha256::new(),
            read: 0,
            checked: false,
            meter: self.client.meter.get().cloned(),
        })
    }

    /// A later read from byte `at`, each piece checked against the first read's hash of it
    /// before it is used. Fetched from the piece holding `at` where the registry serves ranges.
    pub fn open_at(self: &Arc<Self>, at: u64) -> io::Result<Rechecked> {
        let first = at / PIECE;
        let (body, start) = self.fetch(first * PIECE)?;
        let from = start / PIECE;
        let mut r = Rechecked {
            body,
            blob: self.clone(),
            index: from,
            buf: Vec::new(),
            pos: 0,
            meter: self.client.meter.get().cloned(),
        };
        // Whole pieces before the one holding `at` are read (when the registry sent them) and
        // checked, then the bytes of that piece before `at` skipped.
        let skip = at - from * PIECE;
        if io::copy(&mut (&mut r).take(skip), &mut io::sink())? < skip {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "layer ends before the member"));
        }
        Ok(r)
    }

    /// `GET` the blob, from byte `at` when it is not 0 and the registry answers the range.
    fn fetch(&self, at: u64) -> io::Result<(Box<dyn Read + Send>, u64)> {
        let url = format!("{}/v2/{}/blobs/{}", self.client.base, self.client.image.repository, self.digest);
        let range = (at > 0).then(|| format!("bytes={at}-"));
        let response =
            self.client.get_with(&url, None, range.as_deref(), &self.digest).map_err(io::Error::other)?;
        // A `206` whose range starts where asked starts there; anything else is the whole blob.
        let start = match response.status().as_u16() {
            206 => response
                .headers()
                .get("content-range")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("bytes "))
                .and_then(|v| v.split('-').next())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&s| s == at)
                .ok_or_else(|| {
                    io::Error::other(format!("blob {}: a range answer for another range", self.digest))
                })?,
            _ => 0,
        };
        Ok((Box::new(response.into_body().into_reader()), start))
    }

    /// Checks piece `index` as fetched again: true when it is what the first read had; `buf`
    /// is cut to what the first read has of it when that read is still inside it. `None`: the
    /// first read has not reached it.
    fn check(&self, index: u64, buf: &mut Vec<u8>) -> Option<bool> {
        let p = self.pieces.lock().ok()?;
        let i = usize::try_from(index).ok()?;
        if let Some(h) = p.whole.get(i) {
            return Some(<[u8; 32]>::from(Sha256::digest(&*buf)) == *h);
        }
        if i != p.whole.len() || p.partial.is_empty() {
            return None;
        }
        let n = p.partial.len().min(buf.len());
        buf.truncate(n);
        Some(buf.as_slice() == p.partial.get(..n).unwrap_or_default())
    }
}

/// A blob's first read: hashed as it streams; its end is an error unless the bytes had the
/// declared size and digest.
pub struct BlobReader {
    body: Box<dyn Read + Send>,
    blob: Arc<Blob>,
    whole: Sha256,
    read: u64,
    checked: bool,
    meter: Option<Meter>,
}

impl BlobReader {
    /// Reads what is left and checks the whole blob against its digest.
    pub fn finish(&mut self) -> io::Result<()> {
        io::copy(self, &mut io::sink()).map(|_| ())
    }

    /// Keeps what the pieces need of `got`: each whole piece's hash, the partial one's bytes.
    fn record(&self, mut got: &[u8]) {
        let Ok(mut p) = self.blob.pieces.lock() else { return };
        while !got.is_empty() {
            let take = (PIECE as usize - p.partial.len()).min(got.len());
            let (now, rest) = got.split_at(take);
            p.partial.extend_from_slice(now);
            got = rest;
            if p.partial.len() as u64 == PIECE {
                let hash = Sha256::digest(&p.partial).into();
                p.whole.push(hash);
                p.partial.clear();
            }
        }
    }

    /// At the blob's end, checked: the last piece is whole.
    fn close(&self) {
        if let Ok(mut p) = self.blob.pieces.lock() {
            if !p.partial.is_empty() {
                let hash = Sha256::digest(&p.partial).into();
                p.whole.push(hash);
                p.partial.clear();
            }
        }
    }

    fn fail(&self, kind: io::ErrorKind, why: String) -> io::Error {
        if let Ok(mut p) = self.blob.pieces.lock() {
            *p = Pieces::default();
        }
        io::Error::new(kind, why)
    }
}

impl Read for BlobReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.body.read(buf)?;
        if let Some(m) = &self.meter {
            m(n as u64);
        }
        let got = buf.get(..n).unwrap_or_default();
        self.read += n as u64;
        let blob = self.blob.clone();
        let digest = &blob.digest;
        if self.read > self.blob.size {
            let why = format!("blob {digest} is longer than its declared {} bytes", self.blob.size);
            return Err(self.fail(io::ErrorKind::InvalidData, why));
        }
        self.whole.update(got);
        self.record(got);
        if n == 0 && !buf.is_empty() && !self.checked {
            if self.read < self.blob.size {
                let why = format!("blob {digest} ends after {} of its {} bytes", self.read, self.blob.size);
                return Err(self.fail(io::ErrorKind::UnexpectedEof, why));
            }
            let hex: String = self.whole.clone().finalize().iter().map(|b| format!("{b:02x}")).collect();
            if *digest != format!("sha256:{hex}") {
                let why = format!("blob {digest} does not match its digest (its bytes are sha256:{hex})");
                return Err(self.fail(io::ErrorKind::InvalidData, why));
            }
            self.close();
            self.checked = true;
        }
        Ok(n)
    }
}

/// A later read of a blob: each piece fetched whole, checked against the first read's hash of
/// it, then served.
pub struct Rechecked {
    body: Box<dyn Read + Send>,
    blob: Arc<Blob>,
    /// The piece `buf` holds (or the next one, before the first).
    index: u64,
    buf: Vec<u8>,
    pos: usize,
    meter: Option<Meter>,
}

impl Rechecked {
    /// Fetches and checks the next piece; false at the blob's end.
    fn next_piece(&mut self) -> io::Result<bool> {
        if !self.buf.is_empty() {
            self.index += 1;
        }
        let start = self.index * PIECE;
        if start >= self.blob.size {
            self.buf.clear();
            return Ok(false);
        }
        let len = PIECE.min(self.blob.size - start) as usize;
        self.buf.resize(len, 0);
        self.body
            .read_exact(&mut self.buf)
            .map_err(|e| io::Error::new(e.kind(), format!("blob {} read again: {e}", self.blob.digest)))?;
        if let Some(m) = &self.meter {
            m(len as u64);
        }
        self.pos = 0;
        match self.blob.check(self.index, &mut self.buf) {
            Some(true) if !self.buf.is_empty() => Ok(true),
            Some(true) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "blob {} read again past what its checked first read reached (byte {start})",
                    self.blob.digest
                ),
            )),
            Some(false) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("blob {} read again is not what it was (bytes {start}..)", self.blob.digest),
            )),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "blob {} read again past what its checked first read reached (byte {start})",
                    self.blob.digest
                ),
            )),
        }
    }
}

impl Read for Rechecked {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.pos >= self.buf.len() && !self.next_piece()? {
            return Ok(0);
        }
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(out.len());
        out.get_mut(..n).unwrap_or_default().copy_from_slice(rest.get(..n).unwrap_or_default());
        self.pos += n;
        Ok(n)
    }
}
