//! Compressed streams read as their inflated bytes: [`StreamSource`], a forward window over a
//! zstd or zlib stream that inflates on demand, and the inflaters behind it. A zstd decoder
//! takes its memory from the scan's window budget through an [`Inflater`].

use std::borrow::Cow;
use std::cell::RefCell;

use super::budget::WindowPermit;
use super::bytes::{check_range, ByteSource, ParseError, Result};
use super::frame::zstd_window;
use super::Inflater;
use crate::vocab::codec::Codec;

type ZstdDecoder = zstd::stream::raw::Decoder<'static>;

/// A zstd decoder, holding its share of the scan's window budget from its first input (the
/// frame header says the window) until it is dropped; then kept idle with its window for the
/// next frame that fits it ([`super::budget::WindowBudget::keep`]).
struct ZstdInflate<'i, 'd> {
    decoder: Option<ZstdDecoder>,
    permit: Option<WindowPermit<'d>>,
    inflater: &'i Inflater<'d>,
}

impl ZstdInflate<'_, '_> {
    /// Takes memory for a frame whose window is `window`: a kept decoder (reset for this
    /// frame), else a new one, and its share.
    fn obtain(&mut self, window: u64) -> Result<()> {
        let got = self.inflater.obtain(charge(window));
        let kept = got.decoder.and_then(|d| d.downcast::<ZstdDecoder>().ok()).and_then(|mut kept| {
            use zstd::stream::raw::Operation;
            kept.reinit().is_ok().then_some(*kept)
        });
        self.decoder = Some(match kept {
            Some(d) => d,
            None => new_zstd_decoder()?,
        });
        self.permit = Some(got.permit);
        Ok(())
    }
}

/// A zstd decoder that refuses frames whose window would need more than 128 MiB.
fn new_zstd_decoder() -> Result<ZstdDecoder> {
    let fail = |e: std::io::Error| ParseError::Decompress { what: "zstd", detail: e.to_string() };
    let mut d = zstd::stream::raw::Decoder::new().map_err(fail)?;
    d.set_parameter(zstd::stream::raw::DParameter::WindowLogMax(27)).map_err(fail)?;
    Ok(d)
}

impl Drop for ZstdInflate<'_, '_> {
    fn drop(&mut self) {
        if let (Some(permit), Some(decoder)) = (self.permit.take(), self.decoder.take()) {
            self.inflater.keep(Box::new(decoder), permit);
        }
    }
}

impl Inflate for ZstdInflate<'_, '_> {
    fn step(&mut self, input: &[u8], output: &mut [u8]) -> Result<Step> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        if self.decoder.is_none() {
            // A frame's first input says its window; one that says none (not a zstd frame, or
            // cut short) gets a decoder of its own, charged nothing: zstd refuses it.
            match zstd_window(input) {
                Some(w) => self.obtain(w)?,
                None => self.decoder = Some(new_zstd_decoder()?),
            }
        }
        let mut inb = InBuffer::around(input);
        let mut outb = OutBuffer::around(output);
        let decompress = |detail: String| ParseError::Decompress { what: "zstd payload", detail };
        let decoder = self.decoder.as_mut().ok_or_else(|| decompress("no decoder".to_string()))?;
        let hint = decoder.run(&mut inb, &mut outb).map_err(|e| decompress(e.to_string()))?;
        Ok(Step { consumed: inb.pos(), produced: outb.pos(), finished: hint == 0 })
    }
}

struct ZlibInflate(flate2::Decompress);

impl Inflate for ZlibInflate {
    fn step(&mut self, input: &[u8], output: &mut [u8]) -> Result<Step> {
        let (in0, out0) = (self.0.total_in(), self.0.total_out());
        let status = self
            .0
            .decompress(input, output, flate2::FlushDecompress::None)
            .map_err(|e| ParseError::Decompress { what: "zlib payload", detail: e.to_string() })?;
        Ok(Step {
            consumed: (self.0.total_in() - in0) as usize,
            produced: (self.0.total_out() - out0) as usize,
            finished: status == flate2::Status::StreamEnd,
        })
    }
}

/// Bytes a decoder is charged beside its window: the stream's own buffers and the part of the
/// output a reader keeps.
pub const DECODER_OVERHEAD: u64 = 8 << 20;

/// What a decoder of a frame with this window is charged: the window and its overhead (a
/// header may claim any size: the charge saturates, and the budget caps it).
pub fn charge(window: u64) -> u64 {
    window.saturating_add(DECODER_OVERHEAD)
}

/// A stream inflating `input[in_start..in_end]` with `codec` (zstd or zlib: the only codecs of
/// bundles, OffloadBinaries and Tensile files, `llvm::compression::Format`), whose output must
/// not exceed `declared`; zstd decoders take their memory through `inflater`.
pub(super) fn stream<'a, 'd>(
    inflater: &'a Inflater<'d>,
    input: &'a dyn ByteSource,
    (in_start, in_end): (u64, u64),
    codec: Codec,
    declared: u64,
) -> Result<StreamSource<'a>> {
    let inflate: Box<dyn Inflate + 'a> = match codec {
        Codec::Zstd => Box::new(ZstdInflate { decoder: None, permit: None, inflater }),
        Codec::Zlib => Box::new(ZlibInflate(flate2::Decompress::new(true))),
        other => {
            return Err(ParseError::Decompress {
                what: "stream",
                detail: format!("{} is no bundle codec", other.name()),
            })
        }
    };
    Ok(StreamSource::new(input, in_start, in_end, inflate, declared))
}

/// The zlib stream `input[in_start..in_end]`, whose output must not exceed `declared`. A zlib
/// window is 32 KiB: it needs no share of a budget.
pub fn zlib(input: &dyn ByteSource, (in_start, in_end): (u64, u64), declared: u64) -> StreamSource<'_> {
    StreamSource::new(input, in_start, in_end, Box::new(ZlibInflate(flate2::Decompress::new(true))), declared)
}

/// One step of a streaming decompressor: how much input it took, output it gave, and whether
/// the compressed stream has ended.
struct Step {
    pub consumed: usize,
    pub produced: usize,
    pub finished: bool,
}

/// A streaming decompressor (zstd or zlib) driven by [`StreamSource`].
trait Inflate {
    fn step(&mut self, input: &[u8], output: &mut [u8]) -> Result<Step>;
}

/// The largest window a [`StreamSource`] keeps in memory at once.
pub const MAX_STREAM_WINDOW: u64 = 64 << 20;

const IN_CHUNK: usize = 256 << 10;
/// The first compressed read of a stream; each next read is as large as all before it, up to
/// [`IN_CHUNK`].
const FIRST_IN_CHUNK: usize = 16 << 10;
const OUT_CHUNK: usize = 256 << 10;
/// The first output buffer of a stream (see `StreamState::fill`).
const FIRST_OUT_CHUNK: usize = 16 << 10;

/// A forward-only view of a decompressed stream, addressed like the uncompressed bytes.
///
/// It inflates on demand and keeps only a window in memory: reads below the last
/// [`ByteSource::release_before`] mark fail, bytes skipped over are inflated and dropped. Memory
/// therefore stays at one window (at most [`MAX_STREAM_WINDOW`]) plus the codec's buffers,
/// whatever the header claims.
pub struct StreamSource<'a> {
    state: RefCell<StreamState<'a>>,
    declared: u64,
}

struct StreamState<'a> {
    input: &'a dyn ByteSource,
    in_start: u64,
    in_pos: u64,
    in_end: u64,
    inbuf: Vec<u8>,
    inbuf_pos: usize,
    inflate: Box<dyn Inflate + 'a>,
    /// The decoder's output buffer, allocated once per stream (not per read: a fresh zeroed
    /// chunk per step cost as much as a tenth of the inflating).
    out: Vec<u8>,
    window: Vec<u8>,
    window_base: u64,
    mark: u64,
    finished: bool,
}

impl<'a> StreamSource<'a> {
    /// A stream inflating `input[in_start..in_end]`, whose output must not exceed `declared`.
    fn new(
        input: &'a dyn ByteSource,
        in_start: u64,
        in_end: u64,
        inflate: Box<dyn Inflate + 'a>,
        declared: u64,
    ) -> Self {
        StreamSource {
            state: RefCell::new(StreamState {
                input,
                in_start,
                in_pos: in_start,
                in_end: in_end.min(input.len()),
                inbuf: Vec::new(),
                inbuf_pos: 0,
                inflate,
                out: Vec::new(),
                window: Vec::new(),
                window_base: 0,
                mark: 0,
                finished: false,
            }),
            declared,
        }
    }

    /// Inflates to the end of the stream, dropping the output, and returns how many compressed
    /// bytes the stream occupied (its exact end, for formats without a stored size) and how many
    /// bytes it inflated to.
    pub fn drain(&self) -> Result<(u64, u64)> {
        let mut st = self.state.borrow_mut();
        // Nothing after this is read: keep no output at all.
        st.mark = u64::MAX;
        st.fill(self.declared, u64::MAX)?;
        Ok((st.consumed(), st.window_base + st.window.len() as u64))
    }
}

impl StreamState<'_> {
    /// Compressed bytes consumed so far, counted from the stream's start.
    fn consumed(&self) -> u64 {
        self.in_pos - (self.inbuf.len() - self.inbuf_pos) as u64
    }

    /// Inflates until the window covers `need_end` or the stream ends.
    fn fill(&mut self, declared: u64, need_end: u64) -> Result<()> {
        // The output buffer is as large as the read needs, from FIRST_OUT_CHUNK to OUT_CHUNK: a
        // reader that wants a bundle's table does not map and zero 256 KiB for it (717 such
        // buffers were a tenth of a `check`).
        let have = self.window_base + self.window.len() as u64;
        let wanted = need_end.saturating_sub(have).clamp(FIRST_OUT_CHUNK as u64, OUT_CHUNK as u64) as usize;
        let mut out = std::mem::take(&mut self.out);
        if out.len() < wanted {
            out = vec![0u8; wanted.next_power_of_two().min(OUT_CHUNK)];
        }
        let filled = self.fill_with(&mut out, declared, need_end);
        self.out = out;
        filled
    }

    fn fill_with(&mut self, out: &mut [u8], declared: u64, need_end: u64) -> Result<()> {
        while self.window_base + (self.window.len() as u64) < need_end && !self.finished {
            // Drop what no later read may ask for.
            if self.mark > self.window_base {
                let drop = (self.mark - self.window_base).min(self.window.len() as u64) as usize;
                self.window.drain(..drop);
                self.window_base += drop as u64;
            }
            if self.inbuf_pos == self.inbuf.len() && self.in_pos < self.in_end {
                // Reads grow from FIRST_IN_CHUNK to IN_CHUNK: a reader that wants only a
                // bundle's table (its first inflated kilobytes) reads no more than that needs.
                let consumed = self.consumed().saturating_sub(self.in_start);
                let chunk = consumed.clamp(FIRST_IN_CHUNK as u64, IN_CHUNK as u64);
                let n = (self.in_end - self.in_pos).min(chunk) as usize;
                let chunk = self.input.read_at(self.in_pos, n)?.into_owned();
                self.in_pos += n as u64;
                self.inbuf = chunk;
                self.inbuf_pos = 0;
            }
            let input = self.inbuf.get(self.inbuf_pos..).unwrap_or(&[]);
            let step = self.inflate.step(input, out)?;
            self.inbuf_pos += step.consumed;
            let produced_end = self.window_base + self.window.len() as u64 + step.produced as u64;
            if produced_end > declared {
                return Err(ParseError::Malformed {
                    what: "compressed payload inflates past its declared size",
                    offset: declared,
                });
            }
            let produced = out.get(..step.produced).unwrap_or(&[]);
            // Bytes below the mark are skipped over, not kept.
            let keep_from = self.mark.saturating_sub(self.window_base + self.window.len() as u64);
            if (keep_from as usize) < produced.len() {
                if self.window.is_empty() {
                    self.window_base += keep_from;
                }
                self.window.extend_from_slice(produced.get(keep_from as usize..).unwrap_or(&[]));
            } else if self.window.is_empty() {
                self.window_base += produced.len() as u64;
            }
            if self.window.len() as u64 > MAX_STREAM_WINDOW {
                return Err(ParseError::TooLarge {
                    what: "read window in compressed payload",
                    claimed: self.window.len() as u64,
                    limit: MAX_STREAM_WINDOW,
                });
            }
            if step.finished {
                self.finished = true;
            } else if step.consumed == 0 && step.produced == 0 {
                if self.inbuf_pos == self.inbuf.len() && self.in_pos >= self.in_end {
                    return Err(ParseError::Truncated { what: "compressed payload", offset: self.in_pos });
                }
                return Err(ParseError::Decompress {
                    what: "compressed payload",
                    detail: "decoder made no progress".into(),
                });
            }
        }
        Ok(())
    }
}

impl ByteSource for StreamSource<'_> {
    fn len(&self) -> u64 {
        self.declared
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        check_range(self.declared, offset, len, "decompressed bundle")?;
        let mut st = self.state.borrow_mut();
        if offset < st.window_base || offset < st.mark {
            return Err(ParseError::Malformed { what: "backward read in a compressed stream", offset });
        }
        let end = offset + len as u64;
        st.fill(self.declared, end)?;
        let have_end = st.window_base + st.window.len() as u64;
        if have_end < end {
            return Err(ParseError::Truncated { what: "compressed payload", offset: have_end });
        }
        let start = (offset - st.window_base) as usize;
        let bytes = st.window.get(start..start + len).unwrap_or(&[]).to_vec();
        Ok(Cow::Owned(bytes))
    }

    fn read_up_to(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        // The declared length may be only a cap (a zlib file stores none): return what exists.
        let len = self.declared.saturating_sub(offset).min(len as u64) as usize;
        {
            let mut st = self.state.borrow_mut();
            st.fill(self.declared, offset + len as u64)?;
            let have_end = st.window_base + st.window.len() as u64;
            if have_end < offset + len as u64 && st.finished {
                let avail = have_end.saturating_sub(offset) as usize;
                drop(st);
                return self.read_at(offset, avail);
            }
        }
        self.read_at(offset, len)
    }

    fn release_before(&self, offset: u64) {
        let mut st = self.state.borrow_mut();
        if offset > st.mark {
            st.mark = offset;
        }
    }
}
