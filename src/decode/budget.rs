//! The budgets decoding runs under: decoder memory (zstd windows, shared by the frames a scan
//! inflates at once, with decoders kept between frames), archive member bytes held in memory,
//! and how much one top-level archive may inflate. Each belongs to one scan's
//! [`super::Decoding`] or one archive, never to the process.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How much one top-level archive may inflate, all members, passes and nesting together: at
/// least 4 GiB, else 200 times its size (real packages inflate 3–10 times).
pub fn budget_for(size: u64) -> u64 {
    size.saturating_mul(200).max(4 << 30)
}

/// A running count of inflated bytes, shared by everything read out of one top-level archive.
pub struct Budget {
    used: AtomicU64,
    limit: u64,
}

impl Budget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Budget { used: AtomicU64::new(0), limit })
    }

    pub fn spend(&self, n: u64) -> io::Result<()> {
        let used = self.used.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if used > self.limit {
            return Err(io::Error::other(self.message()));
        }
        Ok(())
    }

    /// True once more was inflated than the budget allows.
    pub fn exhausted(&self) -> bool {
        self.used.load(Ordering::Relaxed) > self.limit
    }

    /// The problem an archive over its budget becomes.
    pub fn message(&self) -> String {
        format!(
            "archive inflates past {} bytes (200 times its size): a decompression bomb, or more than gfxscan reads; not read",
            self.limit
        )
    }
}

/// Most archive member bytes held in memory at once, waiting for inspection, across every
/// archive a scan reads at once.
pub const MEMBERS_IN_FLIGHT: u64 = 128 << 20;

/// Archive member bytes in memory now, read from streams and not yet inspected.
#[derive(Default)]
pub struct MemberBytes(AtomicU64);

impl MemberBytes {
    /// Reserves room for `adding` member bytes, if [`MEMBERS_IN_FLIGHT`] allows (always when
    /// nothing is in flight).
    pub fn reserve(&self, adding: u64) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now == 0 || now + adding <= MEMBERS_IN_FLIGHT).then_some(now + adding)
            })
            .is_ok()
    }

    /// Gives back room [`MemberBytes::reserve`] took.
    pub fn release(&self, n: u64) {
        self.0.fetch_sub(n, Ordering::AcqRel);
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
    cap: u64,
    /// Shares given back (or decoders kept) so far: a waiter that saw none fit waits for
    /// this to move.
    releases: std::sync::atomic::AtomicU64,
    /// Decoders kept after their frame with their windows, smallest share first; their shares
    /// stay counted as held.
    idle: std::sync::Mutex<Vec<Idle>>,
}

/// A decoder kept between frames, and the share of the budget it still holds.
struct Idle {
    decoder: Box<dyn std::any::Any + Send>,
    bytes: u64,
}

/// A share of the budget, given back when dropped.
pub struct WindowPermit<'b> {
    budget: &'b WindowBudget,
    bytes: u64,
}

impl WindowBudget {
    /// A budget for `threads` workers: what `target` (by default [`MEMORY_TARGET`]) leaves once
    /// the scan and each thread have their share, and never less than one 64 MiB window.
    pub fn new(threads: usize, target: u64) -> WindowBudget {
        let rest = target.saturating_sub(BASE_MEMORY);
        let cap = rest.saturating_sub(PER_THREAD_MEMORY * threads as u64).max(64 << 20);
        WindowBudget::with_cap(cap)
    }

    /// A budget of `cap` bytes.
    fn with_cap(cap: u64) -> WindowBudget {
        WindowBudget {
            held: std::sync::Mutex::new(0),
            freed: std::sync::Condvar::new(),
            cap,
            releases: std::sync::atomic::AtomicU64::new(0),
            idle: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The decoder memory it allows.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Takes `bytes` (at most the whole budget) if they fit beside what others hold now; a
    /// request for the whole budget or more fits only when nothing is held.
    fn try_take(&self, bytes: u64, cap: u64) -> Option<WindowPermit<'_>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        (*held == 0 || *held + bytes <= cap).then(|| {
            *held += bytes;
            WindowPermit { budget: self, bytes }
        })
    }

    /// Memory for a decoder whose window needs `bytes` (at most the whole budget): an idle
    /// decoder whose share covers them (its window is reused, not mapped and faulted in
    /// again), else a new share once it fits beside what others hold, idle decoders given back
    /// first. A request for the whole budget or more runs alone.
    pub fn obtain(&self, bytes: u64) -> Allocation<'_> {
        loop {
            let seen = self.releases();
            if let Some(a) = self.try_obtain(bytes) {
                return a;
            }
            self.wait_release(seen);
        }
    }

    /// [`WindowBudget::obtain`] without waiting.
    pub fn try_obtain(&self, bytes: u64) -> Option<Allocation<'_>> {
        let cap = self.cap;
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
                let idle_bytes: u64 = idle.iter().map(|a| a.bytes).sum();
                let held = *self.held.lock().unwrap_or_else(|e| e.into_inner());
                let active = held.saturating_sub(idle_bytes);
                (active == 0 || active + bytes <= cap).then(|| idle.pop()).flatten()
            };
            self.release(evicted?);
        }
    }

    /// Frees every idle decoder and its window (when the reading is done).
    pub fn drain_idle(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()));
        idle.into_iter().for_each(|i| self.release(i));
    }

    /// Frees an idle decoder and gives its share back.
    fn release(&self, idle: Idle) {
        drop(idle.decoder);
        drop(WindowPermit { budget: self, bytes: idle.bytes });
    }

    /// The idle decoder with the smallest share that covers `bytes` (they are kept smallest
    /// first).
    fn take_idle(&self, bytes: u64) -> Option<Allocation<'_>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let best = idle.iter().position(|a| a.bytes >= bytes)?;
        let Idle { decoder, bytes } = idle.remove(best);
        Some(Allocation { decoder: Some(decoder), permit: WindowPermit { budget: self, bytes } })
    }

    /// Keeps a decoder whose frame is done, with its share, for the next frame that fits its
    /// window: a large window is not mapped and faulted in again, a small decoder not built
    /// again (building one cost 7 % of a `check` that reads 717 frames' first blocks). At most
    /// [`MAX_IDLE`] are kept, the largest windows first.
    pub fn keep(&self, decoder: Box<dyn std::any::Any + Send>, permit: WindowPermit<'_>) {
        if !std::ptr::eq(permit.budget, self) {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let evicted = match idle.len() < MAX_IDLE {
            true => None,
            false if idle.first().is_some_and(|a| a.bytes < permit.bytes) => Some(idle.remove(0)),
            false => return,
        };
        // The share stays held, now by the idle decoder.
        let bytes = permit.bytes;
        std::mem::forget(permit);
        idle.push(Idle { decoder, bytes });
        idle.sort_by_key(|a| a.bytes);
        drop(idle);
        if let Some(e) = evicted {
            self.release(e);
        }
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
    pub fn run_within<'b, T: Send>(
        &'b self,
        charges: &[u64],
        work: impl Fn(usize, Option<Allocation<'b>>) -> T + Sync,
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
                    let out = work(i, permit);
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
pub struct Allocation<'b> {
    pub decoder: Option<Box<dyn std::any::Any + Send>>,
    pub permit: WindowPermit<'b>,
}

/// How many pending items a worker of [`WindowBudget::run_within`] looks through for one that
/// fits.
const LOOK_AHEAD: usize = 64;

/// The most decoders kept idle between frames.
const MAX_IDLE: usize = 8;

/// A share at least this large is a large window: its memory is given back to the system
/// when released.
const LARGE_SHARE: u64 = 32 << 20;

impl Drop for WindowPermit<'_> {
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
mod tests {
    use super::*;

    const M: u64 = 1 << 20;

    #[test]
    fn the_default_target_is_a_quarter_of_the_room_within_bounds() {
        assert_eq!(default_target(None), MEMORY_TARGET);
        assert_eq!(default_target(Some(24 << 30)), 2 << 30);
        assert_eq!(default_target(Some(2 << 30)), 512 << 20);
        assert_eq!(default_target(Some(256 << 20)), 100 << 20);
        // Two 128 MiB windows and their overhead fit beside a scan of two threads on a machine
        // with 4 GiB to spare.
        let cap = WindowBudget::new(2, default_target(Some(4 << 30))).cap();
        assert!(cap >= 2 * (128 << 20) + 2 * (8 << 20), "{cap}");
    }

    #[test]
    fn the_budget_lets_small_windows_share_and_a_large_one_wait() {
        let budget = WindowBudget::with_cap(100);
        let a = budget.obtain(40);
        let b = budget.obtain(40);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let big = budget.obtain(500); // more than the budget: runs alone
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
        });
        assert_eq!(*budget.held.lock().expect("lock"), 0, "every share given back");
    }

    /// Item 4 of issue 24: two scans in one process never share a budget by accident.
    #[test]
    fn two_budgets_do_not_wait_for_each_other() {
        let (one, other) = (WindowBudget::with_cap(100 * M), WindowBudget::with_cap(100 * M));
        let whole = one.obtain(100 * M);
        assert!(one.try_obtain(M).is_none(), "the first is full");
        let beside = other.try_obtain(100 * M).expect("the second has all its room");
        drop((whole, beside));
    }

    #[test]
    fn an_idle_decoder_is_reused_when_it_fits_and_gives_way_when_memory_is_short() {
        let budget = WindowBudget::with_cap(100 * M);
        let a = budget.obtain(60 * M);
        budget.keep(Box::new(7u32), a.permit);
        // A frame it covers takes it, window and share.
        let again = budget.obtain(50 * M);
        assert_eq!(again.decoder.and_then(|d| d.downcast::<u32>().ok()).map(|d| *d), Some(7));
        assert_eq!(again.permit.bytes, 60 * M);
        budget.keep(Box::new(8u32), again.permit);
        // A frame it does not cover and that does not fit beside it: the idle one is let go.
        let big = budget.obtain(90 * M);
        assert!(big.decoder.is_none());
        assert!(budget.idle.lock().expect("lock").is_empty());
        assert_eq!(*budget.held.lock().expect("lock"), 90 * M);
        drop(big);
        // Small decoders are kept too (building one costs more than its first block), up to
        // MAX_IDLE, and give their shares back when drained.
        for n in 0..MAX_IDLE as u64 + 3 {
            let small = budget.obtain(M + n);
            budget.keep(Box::new(n), small.permit);
        }
        let kept: Vec<u64> = budget.idle.lock().expect("lock").iter().map(|i| i.bytes - M).collect();
        assert_eq!(kept, (3..MAX_IDLE as u64 + 3).collect::<Vec<_>>(), "the largest kept");
        let reused = budget.obtain(M);
        assert_eq!(reused.decoder.and_then(|d| d.downcast::<u64>().ok()).map(|d| *d), Some(3));
        drop(reused.permit);
        budget.drain_idle();
        assert_eq!(*budget.held.lock().expect("lock"), 0);
    }

    #[test]
    fn a_share_of_another_budget_is_not_kept() {
        let (one, other) = (WindowBudget::with_cap(100 * M), WindowBudget::with_cap(100 * M));
        let a = other.obtain(10 * M);
        one.keep(Box::new(1u8), a.permit);
        assert!(one.idle.lock().expect("lock").is_empty());
        assert_eq!(*other.held.lock().expect("lock"), 0, "given back to its own budget");
    }

    /// A large window waiting for another must not hold back small frames queued behind it.
    #[test]
    fn run_within_lets_small_frames_pass_a_large_one_that_waits() {
        let budget = WindowBudget::with_cap(100 * M);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool");
        let order = std::sync::Mutex::new(Vec::new());
        let charges = [70 * M, 70 * M, 10 * M, 10 * M];
        let out = pool.install(|| {
            budget.run_within(&charges, |i, held| {
                assert!(held.is_some(), "each runs with its share taken");
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
        assert_eq!(*budget.held.lock().expect("lock"), 0);
    }
}
