//! Decoding: the bytes parsers read ([`ByteSource`] and its views), compressed streams read as
//! their inflated bytes, and the budgets they run under. A scan makes one [`Decoding`] and
//! passes it down to every parser that inflates; nothing here is global, so two scans in one
//! process never share a budget, and a parser never decides on its own what runs in parallel:
//! it hands independent frames to [`Inflater::run_within`].

pub mod budget;
pub mod bytes;
pub mod frame;
pub mod stream;

use std::cell::RefCell;
use std::io::{self, Read};

pub use budget::{budget_for, Budget, MemberBytes, WindowBudget, MEMORY_TARGET};
pub use bytes::{check_range, ByteSource, ParseError, Prefetched, Result, Shared, Slice, MAX_READ};
pub use stream::{StreamSource, MAX_STREAM_WINDOW};

use crate::vocab::codec::Codec;
use budget::{Allocation, WindowPermit};

/// What one scan decodes with: the memory its zstd windows share (sized for its threads) and
/// the archive member bytes it holds in memory.
pub struct Decoding {
    windows: WindowBudget,
    members: MemberBytes,
}

impl Decoding {
    /// The context of a scan of `threads` workers aiming under `target` bytes of memory.
    pub fn new(threads: usize, target: u64) -> Decoding {
        Decoding { windows: WindowBudget::new(threads, target), members: MemberBytes::default() }
    }

    /// A handle for one worker's parsing (see [`Inflater`]).
    pub fn inflater(&self) -> Inflater<'_> {
        Inflater { decoding: self, prepaid: RefCell::new(None) }
    }

    /// The archive member bytes in memory.
    pub fn members(&self) -> &MemberBytes {
        &self.members
    }

    /// The decoder memory its windows may hold at once.
    pub fn window_cap(&self) -> u64 {
        self.windows.cap()
    }

    /// Frees the decoders kept between frames (when the reading is done).
    pub fn drain_idle(&self) {
        self.windows.drain_idle();
    }
}

impl Default for Decoding {
    /// One worker under [`MEMORY_TARGET`]: what a parser called on its own (a test, a fuzz
    /// target) decodes with.
    fn default() -> Decoding {
        Decoding::new(1, MEMORY_TARGET)
    }
}

/// One worker's handle on a [`Decoding`]: it makes the streams parsers read, and holds the
/// decoder memory taken ahead for the frame it was handed by [`Inflater::run_within`].
pub struct Inflater<'d> {
    decoding: &'d Decoding,
    prepaid: RefCell<Option<Allocation<'d>>>,
}

impl<'d> Inflater<'d> {
    /// The stream `input[span.0..span.1]` compressed with `codec` (zstd or zlib), read as its
    /// inflated bytes, which must not exceed `declared`.
    pub fn stream<'a>(
        &'a self,
        input: &'a dyn ByteSource,
        span: (u64, u64),
        codec: Codec,
        declared: u64,
    ) -> Result<StreamSource<'a>> {
        stream::stream(self, input, span, codec, declared)
    }

    /// Runs `work(i)` for every index of `charges` (what item `i`'s decoder will be charged; 0
    /// for none) on the current thread pool, each once its charge fits the budget, with an
    /// inflater holding that share; results in index order
    /// ([`WindowBudget::run_within`]).
    pub fn run_within<T: Send>(
        &self,
        charges: &[u64],
        work: impl Fn(usize, &Inflater<'d>) -> T + Sync,
    ) -> Vec<Option<T>> {
        let decoding = self.decoding;
        decoding
            .windows
            .run_within(charges, |i, share| work(i, &Inflater { decoding, prepaid: RefCell::new(share) }))
    }

    /// Memory for a decoder charged `bytes`: the share taken ahead for this worker's frame,
    /// else one from the budget (waiting until it fits).
    fn obtain(&self, bytes: u64) -> Allocation<'d> {
        match self.prepaid.borrow_mut().take() {
            Some(a) => a,
            None => self.decoding.windows.obtain(bytes),
        }
    }

    /// Keeps a decoder whose frame is done for the next frame that fits its window.
    fn keep(&self, decoder: Box<dyn std::any::Any + Send>, permit: WindowPermit<'d>) {
        self.decoding.windows.keep(decoder, permit);
    }
}

/// The most memory an xz stream's decoder may take. xz's largest preset (`-9`) needs 65 MiB;
/// a hostile header may ask for a 4 GiB dictionary, which liblzma's default (no limit) would
/// allocate.
pub const XZ_MEMLIMIT: u64 = 256 << 20;

/// A reader of `input` decompressed whole with `codec` (package payloads, image layers, saved
/// snapshots; gzip and xz streams of several members are read whole).
pub fn reader<'a>(codec: Codec, input: Box<dyn Read + 'a>) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match codec {
        Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
        Codec::Zlib => Box::new(flate2::read::ZlibDecoder::new(input)),
        Codec::Deflate => Box::new(flate2::read::DeflateDecoder::new(input)),
        Codec::Zstd => Box::new(zstd::stream::read::Decoder::new(input)?),
        Codec::Xz => xz_reader(input, true)?,
    })
}

/// A reader of the `.xz` stream `input` decompressed under [`XZ_MEMLIMIT`] (only the `.xz`
/// format, never legacy `.lzma`); `concatenated` reads every stream of a multi-stream file.
pub fn xz_reader<'a, R: Read + 'a>(input: R, concatenated: bool) -> io::Result<Box<dyn Read + 'a>> {
    let flags = if concatenated { liblzma::stream::CONCATENATED } else { 0 };
    let stream = liblzma::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, flags).map_err(io::Error::other)?;
    Ok(Box::new(liblzma::read::XzDecoder::new_stream(input, stream)))
}
