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

    /// The codec of a name as [`Codec::name`] gives it.
    pub fn from_name(name: &str) -> Option<Codec> {
        [Codec::Gzip, Codec::Zlib, Codec::Deflate, Codec::Zstd, Codec::Xz]
            .into_iter()
            .find(|c| c.name() == name)
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

/// What a zstd frame header says (RFC 8878 §3.1.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZstdFrameHeader {
    /// The window the descriptor states (none for a single-segment frame).
    pub window: Option<u64>,
    /// The content size, when the header states it.
    pub content_size: Option<u64>,
    /// Bytes of the header: magic, descriptor, window, dictionary ID, content size.
    pub len: u64,
    /// A 4-byte content checksum follows the last block.
    pub checksum: bool,
}

/// The zstd frame header at the start of `head`; `None` when `head` is not one (or is cut).
pub fn zstd_frame_header(head: &[u8]) -> Option<ZstdFrameHeader> {
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
    let dict = [0, 1, 2, 4][usize::from(fhd & 3)];
    let rest = rest.get(dict..)?;
    let (fcs_len, content_size) = match (fhd >> 6, single) {
        (0, false) => (0, None),
        (0, true) => (1, rest.first().map(|&b| u64::from(b))),
        (1, _) => (2, rest.get(..2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])) + 256)),
        (2, _) => {
            (4, rest.get(..4).and_then(|b| b.try_into().ok()).map(|b| u64::from(u32::from_le_bytes(b))))
        }
        _ => (8, rest.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)),
    };
    if fcs_len > 0 && content_size.is_none() {
        return None;
    }
    let len = 5 + u64::from(!single) + dict as u64 + fcs_len;
    Some(ZstdFrameHeader { window, content_size, len, checksum: fhd & 0x04 != 0 })
}

/// The memory a zstd frame's decoder holds: its window, bounded by the frame's content size
/// when the header states it (RFC 8878 §3.1.1.1; zstd sizes its buffer as the lesser). `None`
/// when `head` is not the start of a zstd frame.
pub fn zstd_window(head: &[u8]) -> Option<u64> {
    let h = zstd_frame_header(head)?;
    match (h.window, h.content_size) {
        (Some(w), Some(c)) => Some(w.min(c)),
        (Some(w), None) => Some(w),
        (None, c) => c,
    }
}

/// The peak memory a scan aims to stay under when the machine says nothing of its memory.
pub const MEMORY_TARGET: u64 = 200 << 20;

/// The least and the most a scan aims under by default, whatever the machine.
const DEFAULT_TARGET_RANGE: (u64, u64) = (100 << 20, 2 << 30);

/// The memory a scan aims under when `--max-memory` does not say: a quarter of the room the
/// process has (its cgroup's limits, else `MemAvailable`), at least 100 MiB and at most 2 GiB,
/// so a machine with memory to spare inflates two or more 128 MiB windows side by side and a
/// small container stays small; [`MEMORY_TARGET`] when the room is unknown.
pub fn default_target(room: Option<u64>) -> u64 {
    let (least, most) = DEFAULT_TARGET_RANGE;
    room.map_or(MEMORY_TARGET, |r| (r / 4).clamp(least, most))
}

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
    /// Shares given back (or decoders kept) so far: a waiter that saw none fit waits for
    /// this to move.
    releases: std::sync::atomic::AtomicU64,
    /// Decoders kept after their frame with their windows and shares, smallest first.
    idle: std::sync::Mutex<Vec<Allocation>>,
}

/// The process's budget of decoder memory: large windows wait for each other, small ones run
/// beside them, so memory stays bounded whatever the thread count.
pub static WINDOWS: WindowBudget = WindowBudget {
    held: std::sync::Mutex::new(0),
    freed: std::sync::Condvar::new(),
    cap: std::sync::atomic::AtomicU64::new(MEMORY_TARGET - BASE_MEMORY - 2 * PER_THREAD_MEMORY),
    releases: std::sync::atomic::AtomicU64::new(0),
    idle: std::sync::Mutex::new(Vec::new()),
};

/// A share of the budget, given back when dropped.
pub struct WindowPermit {
    budget: &'static WindowBudget,
    bytes: u64,
}

impl WindowBudget {
    /// Sizes the budget for `threads` workers: what `target` (by default [`MEMORY_TARGET`])
    /// leaves once the scan and each thread have their share, and never less than one 64 MiB
    /// window.
    pub fn size_for(&self, threads: usize, target: u64) -> u64 {
        let rest = target.saturating_sub(BASE_MEMORY);
        let cap = rest.saturating_sub(PER_THREAD_MEMORY * threads as u64).max(64 << 20);
        self.cap.store(cap, std::sync::atomic::Ordering::Relaxed);
        cap
    }

    /// Takes `bytes` (at most the whole budget) if they fit beside what others hold now; a
    /// request for the whole budget or more fits only when nothing is held.
    fn try_take(&'static self, bytes: u64, cap: u64) -> Option<WindowPermit> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        (*held == 0 || *held + bytes <= cap).then(|| {
            *held += bytes;
            WindowPermit { budget: self, bytes }
        })
    }

    /// Memory for a decoder whose window needs `bytes` (at most the whole budget): an idle
    /// decoder whose share covers them (its window is reused, not mapped and faulted in
    /// again), else a new share once it fits beside what others hold, idle decoders given back
    /// first. A request for the whole budget or more runs alone. Memory taken ahead for this
    /// thread's next decoder ([`WindowBudget::run_within`]) is given instead.
    pub fn obtain(&'static self, bytes: u64) -> Allocation {
        if let Some(a) = PREPAID.with(|p| p.borrow_mut().take()) {
            return a;
        }
        loop {
            let seen = self.releases();
            if let Some(a) = self.try_obtain(bytes) {
                return a;
            }
            self.wait_release(seen);
        }
    }

    /// [`WindowBudget::obtain`] without waiting.
    pub fn try_obtain(&'static self, bytes: u64) -> Option<Allocation> {
        let cap = self.cap.load(std::sync::atomic::Ordering::Relaxed);
        let bytes = bytes.min(cap);
        if let Some(kept) = self.take_idle(bytes) {
            return Some(kept);
        }
        loop {
            if let Some(permit) = self.try_take(bytes, cap) {
                return Some(Allocation { decoder: None, permit });
            }
            // Idle windows give way to a frame that needs the memory, when freeing them is
            // enough: not while frames in progress hold the rest.
            let evicted = {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                let idle_bytes: u64 = idle.iter().map(|a| a.permit.bytes).sum();
                let held = *self.held.lock().unwrap_or_else(|e| e.into_inner());
                let active = held.saturating_sub(idle_bytes);
                (active == 0 || active + bytes <= cap).then(|| idle.pop()).flatten()
            };
            drop(evicted?);
        }
    }

    /// Frees every idle decoder and its window (when the reading is done).
    pub fn drain_idle(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        drop(idle);
    }

    /// The idle decoder with the smallest share that covers `bytes` (they are kept smallest
    /// first).
    fn take_idle(&self, bytes: u64) -> Option<Allocation> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let best = idle.iter().position(|a| a.permit.bytes >= bytes)?;
        Some(idle.remove(best))
    }

    /// Keeps a decoder whose frame is done, with its share, for the next frame that fits its
    /// window; small ones are let go (the allocator reuses their memory anyway).
    pub fn keep(&'static self, decoder: Box<dyn std::any::Any + Send>, permit: WindowPermit) {
        if permit.bytes < LARGE_SHARE {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.push(Allocation { decoder: Some(decoder), permit });
        idle.sort_by_key(|a| a.permit.bytes);
        drop(idle);
        // A waiter may take it: counted as a release.
        let _held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        self.releases.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.freed.notify_all();
    }

    /// How many shares have been given back so far.
    fn releases(&self) -> u64 {
        self.releases.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until a share is given back after `seen` releases (at once if one already was).
    fn wait_release(&self, seen: u64) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while self.releases() == seen {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Runs `work(i)` for every index of `charges` on the current thread pool, each once its
    /// decoder charge fits the budget (0: none), and returns the results in index order. A
    /// worker takes the first pending item that fits, looking a little ahead, so a large window
    /// that must wait does not hold back the small ones behind it: list scheduling within the
    /// budget, where blocking in order left one of two threads idle.
    pub fn run_within<T: Send>(
        &'static self,
        charges: &[u64],
        work: impl Fn(usize) -> T + Sync,
    ) -> Vec<Option<T>> {
        // Largest windows first: they run one after another (reusing one window) while the
        // other threads take the frames that fit beside them, instead of being left to the end
        // with every other thread idle.
        let mut order: Vec<usize> = (0..charges.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(charges.get(i).copied().unwrap_or(0)));
        let pending = std::sync::Mutex::new(order.into_iter().collect::<std::collections::VecDeque<usize>>());
        let results: Vec<std::sync::Mutex<Option<T>>> =
            charges.iter().map(|_| std::sync::Mutex::new(None)).collect();
        let worker = || loop {
            let seen = self.releases();
            let picked = {
                let mut queue = pending.lock().unwrap_or_else(|e| e.into_inner());
                if queue.is_empty() {
                    return;
                }
                let fits = |i: usize| match charges.get(i).copied().unwrap_or(0) {
                    0 => Some(None),
                    c => self.try_obtain(c).map(Some),
                };
                let found =
                    queue.iter().take(LOOK_AHEAD).enumerate().find_map(|(k, &i)| Some((k, i, fits(i)?)));
                // Else the smallest, which fits soonest.
                let found = found.or_else(|| {
                    let k = queue.len().checked_sub(1)?;
                    let i = *queue.get(k)?;
                    Some((k, i, fits(i)?))
                });
                found.map(|(k, i, permit)| {
                    queue.remove(k);
                    (i, permit)
                })
            };
            match picked {
                Some((i, permit)) => {
                    let out = with_prepaid(permit, || work(i));
                    if let Some(slot) = results.get(i) {
                        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                    }
                }
                None => self.wait_release(seen),
            }
        };
        rayon::scope(|s| {
            for _ in 1..rayon::current_num_threads() {
                s.spawn(|_| worker());
            }
            worker();
        });
        results.into_iter().map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner())).collect()
    }
}

/// Memory for one decoder: its share of the budget, and an idle decoder that already holds
/// that much window, when one was kept.
pub struct Allocation {
    pub decoder: Option<Box<dyn std::any::Any + Send>>,
    pub permit: WindowPermit,
}

/// How many pending items a worker of [`WindowBudget::run_within`] looks through for one that
/// fits.
const LOOK_AHEAD: usize = 64;

thread_local! {
    /// Memory taken for the next decoder this thread starts (see [`with_prepaid`]).
    static PREPAID: std::cell::RefCell<Option<Allocation>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `permit` standing for the first share this thread asks for (the frame it was
/// taken for); what `f` does not use is given back when it returns.
fn with_prepaid<R>(permit: Option<Allocation>, f: impl FnOnce() -> R) -> R {
    let had = PREPAID.with(|p| std::mem::replace(&mut *p.borrow_mut(), permit));
    let out = f();
    drop(PREPAID.with(|p| std::mem::replace(&mut *p.borrow_mut(), had)));
    out
}

/// A share at least this large is a large window: its decoder is kept idle after its frame
/// for the next frame it covers, and its memory is given back to the system when released.
const LARGE_SHARE: u64 = 32 << 20;

impl Drop for WindowPermit {
    fn drop(&mut self) {
        // glibc keeps freed buffers in per-thread arenas; a large window's would otherwise
        // stay with its thread (measured: 346 MB peak at -j 8 on hipBLASLt's library).
        #[cfg(target_env = "gnu")]
        if self.bytes >= LARGE_SHARE {
            // SAFETY: malloc_trim only returns free heap memory to the system.
            unsafe {
                libc::malloc_trim(0);
            }
        }
        let mut held = self.budget.held.lock().unwrap_or_else(|e| e.into_inner());
        *held = held.saturating_sub(self.bytes);
        self.budget.releases.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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

    macro_rules! budget {
        ($cap:expr) => {
            WindowBudget {
                held: std::sync::Mutex::new(0),
                freed: std::sync::Condvar::new(),
                cap: std::sync::atomic::AtomicU64::new($cap),
                releases: std::sync::atomic::AtomicU64::new(0),
                idle: std::sync::Mutex::new(Vec::new()),
            }
        };
    }

    #[test]
    fn the_default_target_is_a_quarter_of_the_room_within_bounds() {
        assert_eq!(default_target(None), MEMORY_TARGET);
        assert_eq!(default_target(Some(24 << 30)), 2 << 30);
        assert_eq!(default_target(Some(2 << 30)), 512 << 20);
        assert_eq!(default_target(Some(256 << 20)), 100 << 20);
        // Two 128 MiB windows and their overhead fit beside a scan of two threads on a machine
        // with 4 GiB to spare.
        static B: WindowBudget = budget!(0);
        let cap = B.size_for(2, default_target(Some(4 << 30)));
        assert!(cap >= 2 * (128 << 20) + 2 * (8 << 20), "{cap}");
    }

    #[test]
    fn the_budget_lets_small_windows_share_and_a_large_one_wait() {
        static B: WindowBudget = budget!(100);
        let a = B.obtain(40);
        let b = B.obtain(40);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let big = B.obtain(500); // more than the budget: runs alone
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

    #[test]
    fn an_idle_decoder_is_reused_when_it_fits_and_gives_way_when_memory_is_short() {
        const M: u64 = 1 << 20;
        static B: WindowBudget = budget!(100 * M);
        let a = B.obtain(60 * M);
        B.keep(Box::new(7u32), a.permit);
        // A frame it covers takes it, window and share.
        let again = B.obtain(50 * M);
        assert_eq!(again.decoder.and_then(|d| d.downcast::<u32>().ok()).map(|d| *d), Some(7));
        assert_eq!(again.permit.bytes, 60 * M);
        B.keep(Box::new(8u32), again.permit);
        // A frame it does not cover and that does not fit beside it: the idle one is let go.
        let big = B.obtain(90 * M);
        assert!(big.decoder.is_none());
        assert!(B.idle.lock().expect("lock").is_empty());
        assert_eq!(*B.held.lock().expect("lock"), 90 * M);
        drop(big);
        // Small decoders are not kept.
        let small = B.obtain(M);
        B.keep(Box::new(9u32), small.permit);
        assert!(B.idle.lock().expect("lock").is_empty());
        assert_eq!(*B.held.lock().expect("lock"), 0);
    }

    /// A large window waiting for another must not hold back small frames queued behind it.
    #[test]
    fn run_within_lets_small_frames_pass_a_large_one_that_waits() {
        const M: u64 = 1 << 20;
        static B: WindowBudget = budget!(100 * M);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool");
        let order = std::sync::Mutex::new(Vec::new());
        let charges = [70 * M, 70 * M, 10 * M, 10 * M];
        let out = pool.install(|| {
            B.run_within(&charges, |i| {
                let held = B.obtain(charges[i]);
                order.lock().expect("lock").push(i);
                std::thread::sleep(std::time::Duration::from_millis(if i < 2 { 150 } else { 10 }));
                drop(held);
                i * 10
            })
        });
        assert_eq!(out, [Some(0), Some(10), Some(20), Some(30)], "results in index order");
        let order = order.into_inner().expect("lock");
        let pos = |i: usize| order.iter().position(|&x| x == i).expect("ran");
        // While the first large one runs, the second waits and the small ones pass it.
        assert!(pos(2) < pos(1) && pos(3) < pos(1), "{order:?}");
        assert_eq!(*B.held.lock().expect("lock"), 0);
    }
}
