//! AOTriton Kernel Storage V2 (AKS2): the archives AOTriton (PyTorch's flash and
//! memory-efficient attention kernels for ROCm) installs under `aotriton.images/amd-<pack>/`.
//!
//! Verified against ROCm/aotriton (tags 0.8b to 0.13b and HEAD 30ae9671):
//!
//! * Writer: `python/aks2.py` (`v3python/aks2.py` before 0.13) `AKS2.write`: `"AKS2"`, then
//!   three native-endian (little-endian on every ROCm host) `u32`s — total uncompressed size,
//!   number of kernels, directory size — then one xz stream (`lzma.LZMACompressor()`) holding
//!   the directory and, after it, the kernel images.
//! * Directory entry (`directory_entry_blob`): five `u32`s — shared memory size, threads per
//!   block, image offset (from the end of the directory), image size, file name length
//!   including its NUL — then the name and its NUL. A kernel that failed to compile is an
//!   entry with image size 0 (`load_hsaco`).
//! * Reader: `v3src/packed_kernel_common.cc` `PackedKernel::PackedKernel` (`AKS2_Header`,
//!   `AKS2_Metadata`): refuses a bad magic, decodes the stream into `uncompressed_size` bytes,
//!   walks `number_of_kernels` entries and fails unless they end exactly at `directory_size`.
//!
//! Since 0.13 the `.aks2` files of one kernel are stored (uncompressed) in a ZIP,
//! `amd-<pack>/<family>/<kernel>.zip` (`python/flatzip.py` `build_zip`), each entry an AKS2
//! archive. The archive walk reads those entries as members, but judges their family by their
//! name inside the ZIP, which holds no `aotriton.images` folder: they are not attributed yet.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use serde::{Deserialize, Serialize};

use super::{le32, ByteSource, ParseError, Result};

/// What only an AOTriton file has.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AotritonFacts {
    /// The processors a pack folder serves (`amd-gfx110x` is gfx1100 to gfx1103), when the
    /// folder names a pack rather than one processor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack_targets: Option<Vec<String>>,
    /// The kernels an AKS2 archive's directory lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernels: Option<u64>,
}

/// First four bytes of an AKS2 archive (`AKS2_MAGIC`).
pub const AKS2_MAGIC: &[u8; 4] = b"AKS2";
/// Length of the uncompressed header.
pub const AKS2_HEADER_LEN: u64 = 16;
/// Length of a directory entry before its name (`_AKS2_DirectoryEntry_BaseSize`).
pub const AKS2_ENTRY_BASE: u64 = 20;
/// Most directory bytes gfxscan inflates from one archive.
pub const MAX_DIRECTORY: u64 = 64 << 20;

/// The uncompressed header of an AKS2 archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aks2Header {
    /// Size of the directory and the kernel images once inflated.
    pub uncompressed_size: u32,
    /// Number of directory entries (kernels, including empty ones).
    pub kernels: u32,
    /// Size of the directory once inflated.
    pub directory_size: u32,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aks2Entry {
    pub shared_memory: u32,
    pub threads: u32,
    /// Offset of the image from the end of the directory.
    pub offset: u32,
    /// Size of the image; 0 for a kernel that failed to compile.
    pub image_size: u32,
    /// The kernel's name (its HSACO stem), lossy UTF-8.
    pub name: String,
}

/// True when `head` starts like an AKS2 archive.
pub fn is_aks2(head: &[u8]) -> bool {
    head.starts_with(AKS2_MAGIC)
}

/// Reads and checks the 16-byte header: the magic, a directory no larger than the content, and
/// room in the directory for every entry it counts (each is at least 21 bytes).
pub fn parse_aks2_header(src: &dyn ByteSource) -> Result<Aks2Header> {
    let b = src.read_at(0, AKS2_HEADER_LEN as usize)?;
    if !is_aks2(&b) {
        return Err(ParseError::Malformed { what: "AKS2 magic", offset: 0 });
    }
    let field =
        |at: usize| le32(&b, at).ok_or(ParseError::Truncated { what: "AKS2 header", offset: at as u64 });
    let (uncompressed_size, kernels, directory_size) = (field(4)?, field(8)?, field(12)?);
    if directory_size > uncompressed_size {
        return Err(ParseError::Malformed { what: "AKS2 directory larger than its content", offset: 12 });
    }
    if u64::from(kernels) * (AKS2_ENTRY_BASE + 1) > u64::from(directory_size) {
        return Err(ParseError::Malformed { what: "AKS2 kernel count beyond its directory", offset: 8 });
    }
    Ok(Aks2Header { uncompressed_size, kernels, directory_size })
}

/// Walks the inflated directory `dir` (at least `header.directory_size` bytes, the start of
/// the inflated stream) as `PackedKernel::PackedKernel` does: `header.kernels` entries that
/// must end exactly at `directory_size`, each image inside the content after the directory.
pub fn parse_aks2_directory(dir: &[u8], header: &Aks2Header) -> Result<Vec<Aks2Entry>> {
    let end = u64::from(header.directory_size);
    let images = u64::from(header.uncompressed_size) - end;
    let mut at = 0u64;
    let mut out = Vec::new();
    for _ in 0..header.kernels {
        let fixed = dir
            .get(at as usize..(at + AKS2_ENTRY_BASE) as usize)
            .filter(|_| at + AKS2_ENTRY_BASE <= end)
            .ok_or(ParseError::Truncated { what: "AKS2 directory entry", offset: at })?;
        let field = |i: usize| {
            le32(fixed, i * 4).ok_or(ParseError::Truncated { what: "AKS2 directory entry", offset: at })
        };
        let (shared_memory, threads, offset, image_size, name_len) =
            (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
        let name_at = at + AKS2_ENTRY_BASE;
        let next = name_at + u64::from(name_len);
        if name_len == 0 || next > end {
            return Err(ParseError::Malformed { what: "AKS2 file name length", offset: at + 16 });
        }
        let name = dir
            .get(name_at as usize..next as usize)
            .ok_or(ParseError::Truncated { what: "AKS2 file name", offset: name_at })?;
        let name = name.split(|&c| c == 0).next().unwrap_or_default();
        if u64::from(offset) + u64::from(image_size) > images {
            return Err(ParseError::Malformed { what: "AKS2 image beyond the content", offset: at + 8 });
        }
        out.push(Aks2Entry {
            shared_memory,
            threads,
            offset,
            image_size,
            name: String::from_utf8_lossy(name).into_owned(),
        });
        at = next;
    }
    if at != end {
        return Err(ParseError::Malformed { what: "AKS2 directory size", offset: 12 });
    }
    Ok(out)
}

/// Builds AKS2 archives the way `aks2.py` `AKS2.write` does, for tests and fuzz seeds.
#[cfg(any(test, feature = "fixtures"))]
pub mod testing {
    use std::io::Write;

    /// An AKS2 archive of `(name, image)` kernels (shared memory and threads made up).
    pub fn aks2(kernels: &[(&str, &[u8])]) -> Vec<u8> {
        let mut dir = Vec::new();
        let mut images = Vec::new();
        for (name, image) in kernels {
            let offset = images.len() as u32;
            for v in [if image.is_empty() { 0 } else { 16384 }, if image.is_empty() { 0 } else { 256 }] {
                dir.extend_from_slice(&u32::to_le_bytes(v));
            }
            dir.extend_from_slice(&offset.to_le_bytes());
            dir.extend_from_slice(&(image.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(name.len() as u32 + 1).to_le_bytes());
            dir.extend_from_slice(name.as_bytes());
            dir.push(0);
            images.extend_from_slice(image);
        }
        let mut out = b"AKS2".to_vec();
        out.extend_from_slice(&((dir.len() + images.len()) as u32).to_le_bytes());
        out.extend_from_slice(&(kernels.len() as u32).to_le_bytes());
        out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
        let _ = xz.write_all(&dir);
        let _ = xz.write_all(&images);
        out.extend_from_slice(&xz.finish().unwrap_or_default());
        out
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use std::io::Read;

    use super::testing::aks2;
    use super::*;

    fn inflate(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        liblzma::read::XzDecoder::new(&bytes[16..]).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn aks2_py_write_header_and_directory() {
        let a = aks2(&[
            ("attn_fwd-Sig-F__a--Arch_gfx942", b"\x7fELF0123"),
            ("attn_fwd-Sig-F__b--Arch_gfx942", b""),
        ]);
        let h = parse_aks2_header(&a.as_slice()).unwrap();
        assert_eq!(h.kernels, 2);
        let body = inflate(&a);
        assert_eq!(body.len() as u32, h.uncompressed_size);
        let entries = parse_aks2_directory(&body, &h).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].name, "attn_fwd-Sig-F__a--Arch_gfx942");
        assert_eq!((entries[0].image_size, entries[0].threads), (8, 256));
        assert_eq!((entries[1].image_size, entries[1].offset), (0, 8));
    }

    #[test]
    fn header_checks_like_packed_kernel() {
        assert!(parse_aks2_header(&b"AKS3\0\0\0\0\0\0\0\0\0\0\0\0".as_slice()).is_err());
        // Directory larger than the content.
        let mut h = b"AKS2".to_vec();
        for v in [10u32, 0, 11] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        assert!(parse_aks2_header(&h.as_slice()).is_err());
        // More kernels than the directory can hold.
        let mut h = b"AKS2".to_vec();
        for v in [100u32, 2, 41] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        assert!(parse_aks2_header(&h.as_slice()).is_err());
    }

    #[test]
    fn directory_must_end_at_directory_size() {
        let a = aks2(&[("k", b"abc")]);
        let mut h = parse_aks2_header(&a.as_slice()).unwrap();
        let body = inflate(&a);
        h.directory_size += 1;
        h.uncompressed_size += 1;
        assert!(parse_aks2_directory(&body, &h).is_err());
    }

    #[test]
    fn truncation_at_every_byte_is_an_error_never_a_panic() {
        let a = aks2(&[("one", b"0123456789"), ("two", b"")]);
        for n in 0..16 {
            assert!(parse_aks2_header(&&a[..n]).is_err(), "{n}");
        }
        let h = parse_aks2_header(&a.as_slice()).unwrap();
        let body = inflate(&a);
        for n in 0..h.directory_size as usize {
            assert!(parse_aks2_directory(&body[..n], &h).is_err(), "{n}");
        }
        assert!(parse_aks2_directory(&body[..h.directory_size as usize], &h).is_ok());
    }
}
