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

/// The memory a zstd frame's decoder holds: its window, bounded by the frame's content size
/// when the header states it (RFC 8878 §3.1.1.1; zstd sizes its buffer as the lesser). `None`
/// when `head` is not the start of a zstd frame.
pub fn zstd_window(head: &[u8]) -> Option<u64> {
    let rest = head.strip_prefix(&[0x28, 0xb5, 0x2f, 0xfd][..])?;
    let (&fhd, rest) = rest.split_first()?;
    let single = fhd & 0x20 != 0;
    let (window, rest) = match single {
        true => (None, rest),
        false => {
            let (&wd, rest) = rest.split_first()?;
            let base = 1u64 << (10 + u32::from(wd >> 3));
            (Some(base + (base / 8) * u64::from(wd & 7)), rest)
        }
    };
    let rest = rest.get([0, 1, 2, 4][usize::from(fhd & 3)]..)?;
    let fcs = match (fhd >> 6, single) {
        (0, false) => None,
        (0, true) => rest.first().map(|&b| u64::from(b)),
        (1, _) => rest.get(..2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])) + 256),
        (2, _) => rest.get(..4).and_then(|b| b.try_into().ok()).map(|b| u64::from(u32::from_le_bytes(b))),
        _ => rest.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes),
    };
    match (window, fcs) {
        (Some(w), Some(c)) => Some(w.min(c)),
        (Some(w), None) => Some(w),
        (None, c) => c,
    }
}

/// The peak memory a scan aims to stay under, whatever the thread count.
pub const MEMORY_TARGET: u64 = 200 << 20;

/// What a scan holds besides decoders: the binary, the target table, records, the walk.
const BASE_MEMORY: u64 = 24 << 20;

/// What each worker thread holds besides its decoder (read buffers, its stack, its share of
/// the allocator's arenas); measured at -j 8 on hipBLASLt's library.
const PER_THREAD_MEMORY: u64 = 10 << 20;

/// The decoder memory in use, and a way to wait for some to be freed.
pub struct WindowBudget {
    held: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
    cap: std::sync::atomic::AtomicU64,
}

/// The process's budget of decoder memory: large windows wait for each other, small ones run
/// beside them, so memory stays bounded whatever the thread count.
pub static WINDOWS: WindowBudget = WindowBudget {
    held: std::sync::Mutex::new(0),
    freed: std::sync::Condvar::new(),
    cap: std::sync::atomic::AtomicU64::new(MEMORY_TARGET - BASE_MEMORY - 2 * PER_THREAD_MEMORY),
};

/// A share of the budget, given back when dropped.
pub struct WindowPermit {
    budget: &'static WindowBudget,
    bytes: u64,
}

impl WindowBudget {
    /// Sizes the budget for `threads` workers: what [`MEMORY_TARGET`] leaves once the scan and
    /// each thread have their share, and never less than one 64 MiB window.
    pub fn size_for(&self, threads: usize) -> u64 {
        let rest = MEMORY_TARGET - BASE_MEMORY;
        let cap = rest.saturating_sub(PER_THREAD_MEMORY * threads as u64).max(64 << 20);
        self.cap.store(cap, std::sync::atomic::Ordering::Relaxed);
        cap
    }

    /// Waits until `bytes` (at most the whole budget) fit beside what others hold, then takes
    /// them. A request for the whole budget or more runs alone.
    pub fn acquire(&'static self, bytes: u64) -> WindowPermit {
        let cap = self.cap.load(std::sync::atomic::Ordering::Relaxed);
        let bytes = bytes.min(cap);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while *held > 0 && *held + bytes > cap {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *held += bytes;
        WindowPermit { budget: self, bytes }
    }
}

/// A share at least this large gives its memory back to the system when released.
const TRIM_AT: u64 = 32 << 20;

impl Drop for WindowPermit {
    fn drop(&mut self) {
        // glibc keeps freed buffers in per-thread arenas; a large window's would otherwise
        // stay with its thread (measured: 346 MB peak at -j 8 on hipBLASLt's library).
        #[cfg(target_env = "gnu")]
        if self.bytes >= TRIM_AT {
            // SAFETY: malloc_trim only returns free heap memory to the system.
            unsafe {
                libc::malloc_trim(0);
            }
        }
        let mut held = self.budget.held.lock().unwrap_or_else(|e| e.into_inner());
        *held = held.saturating_sub(self.bytes);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;

    #[test]
    fn zstd_windows_are_read_from_the_frame_header_as_zstd_writes_it() {
        // Single segment: the content size is the window.
        let small = zstd::bulk::compress(&vec![7u8; 100_000], 3).expect("compress");
        assert_eq!(zstd_window(&small), Some(100_000));
        // A streamed frame without a content size: the window descriptor.
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 19).expect("encoder");
        enc.include_contentsize(false).expect("flag");
        std::io::Write::write_all(&mut enc, &vec![1u8; 3 << 20]).expect("write");
        let streamed = enc.finish().expect("finish");
        let w = zstd_window(&streamed).expect("a window");
        assert!(w.is_power_of_two() || w.is_multiple_of(1024), "{w}");
        assert!(w >= 1 << 20, "{w}");
        assert_eq!(zstd_window(b"not zstd"), None);
        assert_eq!(zstd_window(&[0x28, 0xb5, 0x2f, 0xfd]), None, "a header cut short says nothing");
        // Fuzz finding: an 8-byte content size of u64::MAX, single segment.
        let mut huge = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(zstd_window(&huge), Some(u64::MAX));
    }

    #[test]
    fn the_budget_lets_small_windows_share_and_a_large_one_wait() {
        static B: WindowBudget = WindowBudget {
            held: std::sync::Mutex::new(0),
            freed: std::sync::Condvar::new(),
            cap: std::sync::atomic::AtomicU64::new(100),
        };
        let a = B.acquire(40);
        let b = B.acquire(40);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let big = B.acquire(500); // more than the budget: runs alone
            tx.send(()).expect("send");
            drop(big);
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(100)).is_err(),
            "it waits while others hold"
        );
        drop(a);
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err(), "still one holder");
        drop(b);
        rx.recv_timeout(std::time::Duration::from_secs(5)).expect("runs once alone");
        waiter.join().expect("joined");
        assert_eq!(*B.held.lock().expect("lock"), 0, "every share given back");
    }
}
