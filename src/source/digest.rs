//! SHA-256 of a listed file's bytes (`scan --digests`): read through its byte source in
//! large pieces, or taken from a stream as it goes by.
//!
//! Hashing reads whole files, so it only ever runs when asked. A file on disk and an archive
//! member held in memory or in place are hashed through their [`ByteSource`]; a member read
//! live from a compressed stream is hashed by a [`Tee`] on that stream, whatever the parsers
//! read of it, and then by the rest of the member drained through it — one pass over its
//! bytes, never a second decompression.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

use crate::decode::ByteSource;

/// How much is read at a time.
const PIECE: usize = 1 << 20;

/// What a problem says when a listed file could not be hashed; the CycloneDX writer finds
/// such problems by it.
pub const NOT_HASHED: &str = "SHA-256 not computed";

/// Lowercase hex of a finished hash.
pub fn hex(hasher: Sha256) -> String {
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of every byte of `src`, or why it could not be read.
pub fn sha256_of(src: &dyn ByteSource) -> Result<String, String> {
    let mut hasher = Sha256::new();
    let len = src.len();
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(PIECE as u64) as usize;
        let piece = src.read_at(at, n).map_err(|e| format!("{NOT_HASHED}: {e}"))?;
        hasher.update(&piece);
        // Nothing before this piece is read again: a stream may let it go.
        src.release_before(at);
        at += n as u64;
    }
    Ok(hex(hasher))
}

/// A reader that hashes every byte it passes on, in order: the live stream of an archive
/// member, whose bytes the parsers read forward once.
pub struct Tee<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Tee<R> {
    pub fn new(inner: R) -> Self {
        Tee { inner, hasher: Sha256::new() }
    }

    /// Reads what is left of the stream through the hash, and gives the hash of it all.
    pub fn finish(mut self) -> Result<String, String> {
        io::copy(&mut self, &mut io::sink()).map_err(|e| format!("{NOT_HASHED}: {e}"))?;
        Ok(hex(self.hasher))
    }
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FIPS 180-2's "abc" example, through both ways of hashing.
    #[test]
    fn both_ways_give_the_standard_digest_of_abc() {
        let want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_of(&b"abc".to_vec()).expect("hashed"), want);
        let mut tee = Tee::new(&b"abc"[..]);
        let mut first = [0u8; 1];
        tee.read_exact(&mut first).expect("one byte");
        assert_eq!(tee.finish().expect("hashed"), want);
    }
}
