//! Linux amdgpu firmware: the common header every blob of the current driver starts with.
//!
//! `struct common_firmware_header` (linux `drivers/gpu/drm/amd/amdgpu/amdgpu_ucode.h`), 32 bytes
//! little-endian: `u32 size_bytes` (header and image), `u32 header_size_bytes`,
//! `u16 header_version_major, minor`, `u16 ip_version_major, minor`, `u32 ucode_version`,
//! `u32 ucode_size_bytes`, `u32 ucode_array_offset_bytes`, `u32 crc32`. Older blobs (SI/CIK
//! microcode, some SMC images) have no such header: they parse to `None`, not an error.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use crate::vocab::codec::Codec;
use serde::{Deserialize, Serialize};

use super::{le16, le32};

/// What only a firmware file has: its name's prefix, its folder, its common header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FirmwareFacts {
    /// Name prefix (`vega10`, `gc_11_0_0`, `psp_13_0_0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Folder (`amdgpu` or `radeon`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The common header, when the blob has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<FirmwareHeader>,
}

/// Bytes of the common header.
pub const HEADER_LEN: usize = 32;

/// The facts of an amdgpu firmware blob's common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FirmwareHeader {
    /// `ucode_version`: what changes between two releases of the same blob.
    pub ucode_version: u32,
    /// `header_version_major.minor`.
    pub header_version: (u16, u16),
    /// `ip_version_major.minor` as the blob states it.
    pub ip_version: (u16, u16),
    /// `ucode_size_bytes`.
    pub ucode_size: u32,
    /// `crc32` of the image.
    pub crc32: u32,
}

/// Reads the common header of a blob whose (uncompressed) size is `size`, if it has one.
///
/// A header is only believed when its sizes agree with each other and with the blob.
pub fn parse_firmware_header(head: &[u8], size: u64) -> Option<FirmwareHeader> {
    let size_bytes = le32(head, 0)?;
    let header_size = le32(head, 4)?;
    let ucode_size = le32(head, 20)?;
    let array_offset = le32(head, 24)?;
    let plausible = u64::from(size_bytes) == size
        && (HEADER_LEN as u32..=size_bytes).contains(&header_size)
        && u64::from(array_offset) + u64::from(ucode_size) <= size
        && le16(head, 8)? >= 1;
    plausible.then_some(FirmwareHeader {
        ucode_version: le32(head, 16)?,
        header_version: (le16(head, 8)?, le16(head, 10)?),
        ip_version: (le16(head, 12)?, le16(head, 14)?),
        ucode_size,
        crc32: le32(head, 28)?,
    })
}

/// The most a compressed firmware blob may inflate to (the largest real ones are a few MB).
pub const MAX_FIRMWARE: usize = 64 << 20;

/// Inflates a `.bin.zst` or `.bin.xz` blob whole (one stream, as the kernel's firmware loader
/// reads it), refusing more than [`MAX_FIRMWARE`] bytes.
pub fn inflate_firmware(data: &[u8], codec: Codec) -> Result<Vec<u8>, String> {
    use std::io::{Read, Write};
    /// A sink that refuses to grow past the cap (xz has no output limit of its own).
    struct Capped(Vec<u8>);
    impl Write for Capped {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + b.len() > MAX_FIRMWARE {
                return Err(std::io::Error::other(format!("inflates past {MAX_FIRMWARE} bytes")));
            }
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped(Vec::new());
    let limit = MAX_FIRMWARE as u64 + 1;
    match codec {
        Codec::Xz => {
            let mut d = crate::decode::xz_reader(data, false).map_err(|e| format!("xz: {e}"))?.take(limit);
            std::io::copy(&mut d, &mut out).map_err(|e| format!("xz: {e}"))?;
        }
        Codec::Zstd => {
            let d = zstd::stream::read::Decoder::new(data).map_err(|e| format!("zstd: {e}"))?;
            std::io::copy(&mut d.take(limit), &mut out).map_err(|e| format!("zstd: {e}"))?;
        }
        other => return Err(format!("{}: firmware is compressed with zstd or xz only", other.name())),
    }
    Ok(out.0)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::firmware_blob;

    #[test]
    fn reads_a_common_header() {
        let blob = firmware_blob(167, (9, 0), 4096);
        let h = parse_firmware_header(&blob, blob.len() as u64).expect("has a header");
        assert_eq!((h.ucode_version, h.ip_version, h.header_version), (167, (9, 0), (1, 0)));
    }

    #[test]
    fn compressed_blobs_inflate_under_a_cap() {
        let blob = firmware_blob(42, (11, 0), 8192);
        let z = zstd::bulk::compress(&blob, 3).unwrap();
        assert_eq!(inflate_firmware(&z, Codec::Zstd).unwrap(), blob);
        let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 6);
        std::io::Write::write_all(&mut enc, &blob).unwrap();
        let x = enc.finish().unwrap();
        assert_eq!(inflate_firmware(&x, Codec::Xz).unwrap(), blob);
        let bomb = zstd::bulk::compress(&vec![0u8; MAX_FIRMWARE + 10], 19).unwrap();
        assert!(inflate_firmware(&bomb, Codec::Zstd).is_err());
        assert!(inflate_firmware(b"not xz at all", Codec::Xz).is_err());
        // Found by fuzzing: lzma-rs 0.3 overflowed on an xz index whose backward size is
        // u32::MAX (`(backward_size + 1) << 2`); liblzma reports it as corrupt data.
        let mut bad = x.clone();
        let n = bad.len();
        bad[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(inflate_firmware(&bad, Codec::Xz).is_err());
    }

    #[test]
    fn sizes_that_disagree_mean_no_header() {
        let blob = firmware_blob(1, (11, 0), 4096);
        assert!(parse_firmware_header(&blob, blob.len() as u64 + 1).is_none());
        assert!(parse_firmware_header(&blob[..10], 4096).is_none());
        assert!(parse_firmware_header(&[0u8; 64], 64).is_none());
    }
}
