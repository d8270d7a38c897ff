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
pub mod dynamic;
pub mod elf;
pub mod firmware;
pub mod host;
pub mod kpack;
pub mod ldcache;
pub mod magic;
pub mod miopen;
pub mod modinfo;
pub mod msgpack;
pub mod offload;
pub mod package;
pub mod pe;
pub mod release;
pub mod tensile;
pub mod therock;

pub use crate::decode::{check_range, ByteSource, ParseError, Prefetched, Result, Shared, Slice, MAX_READ};

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
    /// target table does not know (named by their ELF, as a full read names them) and of the
    /// generic target a wanted processor falls back to (loaded only with the generic version
    /// its ELF states); other generic targets' entries come from the table. HIP 5.x's
    /// unbundler picks by the ELF's target instead; an entry whose ELF names another processor
    /// than its ID can then differ from a full read only toward MISSING: an entry read from its
    /// table serves the processor its ID names, never a wanted one.
    Tables { wanted: &'w [String], targets: &'w crate::vocab::targets::Targets },
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
