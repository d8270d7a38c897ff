//! Classification: what a file is, from its first bytes, never from its name alone.
//!
//! A `.hsaco` may be a bundle, a `.co` is usually a CCOB, a `.so` may carry none of either:
//! only the magic decides. The rules live in one table, [`KINDS`], checked in order.

use crate::vocab::codec::Codec;
use serde::{Deserialize, Serialize};

/// What a file is, as far as gfxscan cares.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An AMDGPU ELF code object (`e_machine` 224).
    AmdgpuElf,
    /// Any other ELF: a host library or program that may carry device code.
    HostElf,
    /// An uncompressed offload bundle.
    OffloadBundle,
    /// A compressed offload bundle (`CCOB`).
    CompressedOffloadBundle,
    /// An LLVM offload binary (`.llvm.offloading`, new offload driver).
    OffloadBinary,
    /// A TheRock kpack archive of split device code.
    Kpack,
    /// A Windows PE image (`.dll`, `.pyd`, `.exe`), which may carry HIP fat binaries.
    Pe,
    /// An SQLite database (MIOpen perf or kernel DB).
    Sqlite,
    /// bzip2, zstd, xz, gzip data.
    Bzip2,
    Zstd,
    Xz,
    Gzip,
    /// zlib stream (hipBLASLt `.dat.zlib`).
    Zlib,
    /// An `ar` archive (Debian packages, static libraries).
    Ar,
    /// A zip archive (Python wheels).
    Zip,
    /// A tar archive.
    Tar,
    /// A 7-Zip archive (not read).
    SevenZip,
    /// An RPM package (not read).
    Rpm,
    /// LLVM bitcode (device libraries).
    LlvmBitcode,
    /// A git-lfs pointer left where a real file should be.
    GitLfsPointer,
    /// Anything else.
    Other,
}

impl Kind {
    /// The codec a whole stream of this kind is compressed with (zlib and raw deflate have no
    /// magic that can be trusted alone, and are never guessed).
    pub fn codec(self) -> Option<Codec> {
        match self {
            Kind::Gzip => Some(Codec::Gzip),
            Kind::Zstd => Some(Codec::Zstd),
            Kind::Xz => Some(Codec::Xz),
            _ => None,
        }
    }

    /// For containers gfxscan does not open, the name of their format: a file of this kind
    /// outside an artifact family is a problem ("not read: bzip2"), never silence.
    pub fn unread_format(self) -> Option<&'static str> {
        match self {
            Kind::Bzip2 => Some("bzip2"),
            Kind::SevenZip => Some("7z"),
            Kind::Rpm => Some("RPM"),
            _ => None,
        }
    }

    /// True for host binaries a program loads (an ELF, a PE `.dll`/`.pyd`/`.exe`): their device
    /// code is a host library's, whatever the platform.
    pub fn is_host_binary(self) -> bool {
        matches!(self, Kind::HostElf | Kind::Pe)
    }

    /// True for kinds that can hold AMDGPU code objects.
    pub fn may_hold_device_code(self) -> bool {
        matches!(self, Kind::AmdgpuElf | Kind::HostElf | Kind::OffloadBundle | Kind::CompressedOffloadBundle)
    }
}

/// Bytes a classification looks at: one tar header block.
pub const SNIFF_LEN: usize = 512;

/// One rule: a magic at offset 0, and an optional extra check on the first bytes.
pub struct Rule {
    pub magic: &'static [u8],
    pub check: Option<fn(&[u8]) -> bool>,
    pub kind: Kind,
}

/// The rules, first match wins. Sources: the ELF header (`e_machine` at 18, EM_AMDGPU = 224 in
/// LLVM `BinaryFormat/ELF.h`), clang `OffloadBundler.cpp` (`__CLANG_OFFLOAD_BUNDLE__`, `CCOB`),
/// LLVM `Object/OffloadBinary.h` (`10 FF 10 AD`), rocm-kpack (`KPAK`), the SQLite file format
/// (its 16-byte header string), and each compressor's own magic.
#[rustfmt::skip]
pub const KINDS: &[Rule] = &[
    Rule { magic: b"\x7fELF", check: Some(crate::parse::elf::is_amdgpu_elf), kind: Kind::AmdgpuElf },
    Rule { magic: b"\x7fELF", check: None, kind: Kind::HostElf },
    Rule { magic: b"__CLANG_OFFLOAD_BUNDLE__", check: None, kind: Kind::OffloadBundle },
    Rule { magic: b"CCOB", check: None, kind: Kind::CompressedOffloadBundle },
    Rule { magic: b"\x10\xff\x10\xad", check: None, kind: Kind::OffloadBinary },
    Rule { magic: b"KPAK", check: None, kind: Kind::Kpack },
    Rule { magic: b"MZ", check: Some(is_pe_image), kind: Kind::Pe },
    Rule { magic: b"SQLite format 3\0", check: None, kind: Kind::Sqlite },
    Rule { magic: b"BZh", check: None, kind: Kind::Bzip2 },
    Rule { magic: b"\x28\xb5\x2f\xfd", check: None, kind: Kind::Zstd },
    Rule { magic: b"\xfd7zXZ\0", check: None, kind: Kind::Xz },
    Rule { magic: b"\x1f\x8b", check: None, kind: Kind::Gzip },
    Rule { magic: b"version https://git-lfs.github.com/spec/", check: None, kind: Kind::GitLfsPointer },
    Rule { magic: b"BC\xc0\xde", check: None, kind: Kind::LlvmBitcode },
    Rule { magic: b"\xde\xc0\x17\x0b", check: None, kind: Kind::LlvmBitcode },
    Rule { magic: b"\x78", check: Some(is_zlib_header), kind: Kind::Zlib },
    Rule { magic: b"!<arch>\n", check: None, kind: Kind::Ar },
    Rule { magic: b"PK\x03\x04", check: None, kind: Kind::Zip },
    Rule { magic: b"PK\x05\x06", check: None, kind: Kind::Zip },
    Rule { magic: b"7z\xbc\xaf\x27\x1c", check: None, kind: Kind::SevenZip },
    Rule { magic: b"\xed\xab\xee\xdb", check: None, kind: Kind::Rpm },
    // tar has no magic at 0: its header block's checksum decides (ustar, GNU and v7 alike).
    Rule { magic: b"", check: Some(is_tar_block), kind: Kind::Tar },
];

/// A PE image: `MZ`, then `PE\0\0` where the DOS header's `e_lfanew` (at 0x3c) points, within
/// the bytes classification sees (the PE/COFF specification, "MS-DOS Stub").
fn is_pe_image(b: &[u8]) -> bool {
    let at = crate::parse::le32(b, 0x3c).map(|v| v as usize);
    at.and_then(|at| b.get(at..at.checked_add(4)?)).is_some_and(|sig| sig == b"PE\0\0")
}

fn is_tar_block(b: &[u8]) -> bool {
    matches!(crate::parse::archive::parse_tar_header(b, 0), Ok(crate::parse::archive::TarBlock::Header(_)))
}

/// RFC 1950: CM 8 (deflate), window up to 32 KiB, and the header checksum.
fn is_zlib_header(b: &[u8]) -> bool {
    match (b.first(), b.get(1)) {
        (Some(&cmf), Some(&flg)) => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(cmf) * 256 + u16::from(flg)) % 31 == 0
        }
        _ => false,
    }
}

/// True when the first bytes of a file read as text (no NUL, no control bytes but tab, CR, LF).
pub fn looks_like_text(head: &[u8]) -> bool {
    head.iter().all(|&b| b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r'))
}

/// Classifies a file from its first [`SNIFF_LEN`] bytes (fewer for short files).
pub fn classify(head: &[u8]) -> Kind {
    KINDS
        .iter()
        .find(|r| head.starts_with(r.magic) && r.check.is_none_or(|c| c(head)))
        .map_or(Kind::Other, |r| r.kind)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn magic_decides_not_the_name() {
        assert_eq!(classify(b"CCOB\x03\x00\x01\x00"), Kind::CompressedOffloadBundle);
        assert_eq!(classify(b"__CLANG_OFFLOAD_BUNDLE__\x02\0\0\0\0\0\0\0"), Kind::OffloadBundle);
        let mut elf = [0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[5] = 1;
        elf[18] = 62;
        assert_eq!(classify(&elf), Kind::HostElf);
        elf[18] = 224;
        assert_eq!(classify(&elf), Kind::AmdgpuElf);
        assert_eq!(classify(b""), Kind::Other);
        assert_eq!(classify(b"\x7fEL"), Kind::Other);
        assert_eq!(classify(b"\x78\x9c\x01\x02"), Kind::Zlib);
        assert_eq!(classify(b"\x78yz"), Kind::Other);
        assert_eq!(classify(b"BC\xc0\xde\x35\x14"), Kind::LlvmBitcode);
    }

    #[test]
    fn rules_with_the_same_magic_go_specific_first() {
        // A rule without a check must not shadow a later rule with the same magic.
        for (i, r) in KINDS.iter().enumerate() {
            for later in &KINDS[i + 1..] {
                if r.check.is_none() {
                    assert!(!later.magic.starts_with(r.magic), "{:?} shadows {:?}", r.kind, later.kind);
                }
            }
        }
    }
}
