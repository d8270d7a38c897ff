//! Compression codecs: one name for each way ROCm artifacts are compressed, wherever it occurs
//! (package payloads, image layers, compressed offload bundles, firmware, Tensile `.dat.zlib`,
//! saved snapshots), and the streaming decoder for each.

use std::io::{self, Read};

use serde::{Deserialize, Serialize};

/// A compression format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Codec {
    Gzip,
    /// A zlib stream (RFC 1950): CCOB method 0, Tensile `.dat.zlib`.
    Zlib,
    /// Raw deflate (RFC 1951), as zip stores it.
    Deflate,
    /// Zstandard: CCOB method 1, `.tar.zst`, `.bin.zst` firmware.
    Zstd,
    Xz,
}

impl Codec {
    /// Its name in messages and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Gzip => "gzip",
            Codec::Zlib => "zlib",
            Codec::Deflate => "deflate",
            Codec::Zstd => "zstd",
            Codec::Xz => "xz",
        }
    }

    /// A reader of `input` decompressed (gzip and xz streams of several members are read whole).
    pub fn decoder<'a>(self, input: Box<dyn Read + 'a>) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match self {
            Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
            Codec::Zlib => Box::new(flate2::read::ZlibDecoder::new(input)),
            Codec::Deflate => Box::new(flate2::read::DeflateDecoder::new(input)),
            Codec::Zstd => Box::new(zstd::stream::read::Decoder::new(input)?),
            Codec::Xz => xz_decoder(input, true)?,
        })
    }
}

/// The most memory an xz stream's decoder may take. xz's largest preset (`-9`) needs 65 MiB;
/// a hostile header may ask for a 4 GiB dictionary, which liblzma's default (no limit) would
/// allocate.
pub const XZ_MEMLIMIT: u64 = 256 << 20;

/// A reader of the `.xz` stream `input` decompressed under [`XZ_MEMLIMIT`] (only the `.xz`
/// format, never legacy `.lzma`); `concatenated` reads every stream of a multi-stream file.
pub fn xz_decoder<'a, R: Read + 'a>(input: R, concatenated: bool) -> io::Result<Box<dyn Read + 'a>> {
    let flags = if concatenated { liblzma::stream::CONCATENATED } else { 0 };
    let stream = liblzma::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, flags).map_err(io::Error::other)?;
    Ok(Box::new(liblzma::read::XzDecoder::new_stream(input, stream)))
}
