//! Compression codecs: one name for each way ROCm artifacts are compressed, wherever it occurs
//! (package payloads, image layers, compressed offload bundles, firmware, Tensile `.dat.zlib`,
//! saved snapshots). Their decoders are `decode`'s.

use serde::{Deserialize, Serialize};

/// A compression format.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
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
    /// Every codec.
    pub const ALL: [Codec; 5] = [Codec::Gzip, Codec::Zlib, Codec::Deflate, Codec::Zstd, Codec::Xz];

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

    /// The codec of a name as [`Codec::name`] gives it.
    pub fn from_name(name: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == name)
    }
}
