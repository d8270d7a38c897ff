//! How much memory this process may use: its cgroup's limits (v2 `memory.max` and
//! `memory.high`, less what the group already uses, the tightest of the group and its
//! ancestors; v1 `memory.limit_in_bytes`), and the kernel's `MemAvailable`. The scan sizes its
//! decoder budget from it (`vocab::codec::default_target`).

use std::fs;
use std::path::{Path, PathBuf};

/// Where the figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoomFrom {
    /// A cgroup v2 `memory.max` less the group's `memory.current`.
    CgroupMax,
    /// A cgroup v2 `memory.high` less the group's `memory.current`.
    CgroupHigh,
    /// A cgroup v1 `memory.limit_in_bytes` less `memory.usage_in_bytes`.
    CgroupV1,
    /// `/proc/meminfo`'s `MemAvailable`.
    MemAvailable,
}

impl RoomFrom {
    /// How a person would name it.
    pub fn name(self) -> &'static str {
        match self {
            RoomFrom::CgroupMax => "the cgroup's memory.max",
            RoomFrom::CgroupHigh => "the cgroup's memory.high",
            RoomFrom::CgroupV1 => "the cgroup's memory.limit_in_bytes",
            RoomFrom::MemAvailable => "MemAvailable",
        }
    }
}

/// Bytes the process may still use, and which limit said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub bytes: u64,
    pub from: RoomFrom,
}

/// The room this process has on this machine (`None` when nothing could be read).
pub fn room() -> Option<Room> {
    let cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let available = fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(mem_available);
    let mut best = available.map(|bytes| Room { bytes, from: RoomFrom::MemAvailable });
    let limits = cgroup_v2_limits(Path::new("/sys/fs/cgroup"), &cgroup)
        .into_iter()
        .chain(cgroup_v1_limit(Path::new("/sys/fs/cgroup/memory"), &cgroup));
    for r in limits {
        if best.is_none_or(|b| r.bytes < b.bytes) {
            best = Some(r);
        }
    }
    best
}

/// `MemAvailable` from the text of `/proc/meminfo`, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A limit file's value: bytes, or `None` for `max` (no limit) and anything unreadable.
pub fn limit(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// The folder of this process's v2 cgroup under `base`, from `/proc/self/cgroup` (`0::/path`);
/// `base` itself when that path is not there (a container without a cgroup namespace sees the
/// host's path, and its own group mounted at `base`).
fn v2_dir(base: &Path, cgroup: &str) -> Option<PathBuf> {
    let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let path = path.trim().trim_end_matches(" (deleted)").trim_start_matches('/');
    let dir = base.join(path);
    Some(if dir.is_dir() { dir } else { base.to_path_buf() })
}

/// The room each v2 limit leaves, from the process's group up to the root.
fn cgroup_v2_limits(base: &Path, cgroup: &str) -> Vec<Room> {
    let Some(mut dir) = v2_dir(base, cgroup) else { return Vec::new() };
    let mut out = Vec::new();
    loop {
        let read = |name: &str| fs::read_to_string(dir.join(name)).ok();
        let used = read("memory.current").as_deref().and_then(limit).unwrap_or(0);
        for (name, from) in [("memory.max", RoomFrom::CgroupMax), ("memory.high", RoomFrom::CgroupHigh)] {
            if let Some(l) = read(name).as_deref().and_then(limit) {
                out.push(Room { bytes: l.saturating_sub(used), from });
            }
        }
        if dir == base || !dir.pop() || !dir.starts_with(base) {
            break;
        }
    }
    out
}

/// The room a v1 memory limit leaves (a limit near 2^63 means none).
fn cgroup_v1_limit(base: &Path, cgroup: &str) -> Option<Room> {
    let path = cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "memory").then_some(path)
    })?;
    let dir = base.join(path.trim_end_matches(" (deleted)").trim_start_matches('/'));
    let dir = if dir.is_dir() { dir } else { base.to_path_buf() };
    let l = limit(&fs::read_to_string(dir.join("memory.limit_in_bytes")).ok()?)?;
    let used =
        fs::read_to_string(dir.join("memory.usage_in_bytes")).ok().as_deref().and_then(limit).unwrap_or(0);
    (l < 1 << 62).then(|| Room { bytes: l.saturating_sub(used), from: RoomFrom::CgroupV1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_limits_are_read_as_the_kernel_writes_them() {
        let meminfo = "MemTotal:       24610428 kB\nMemFree:         1234 kB\nMemAvailable:   23867564 kB\n";
        assert_eq!(mem_available(meminfo), Some(23_867_564 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(limit("max\n"), None);
        assert_eq!(limit("536870912\n"), Some(512 << 20));
    }

    #[test]
    fn the_tightest_cgroup_limit_up_the_tree_wins() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        let leaf = b.join("kubepods/pod1/ctr");
        fs::create_dir_all(&leaf).expect("mkdir");
        fs::write(leaf.join("memory.max"), "max\n").expect("write");
        fs::write(leaf.join("memory.current"), "104857600\n").expect("write");
        fs::write(b.join("kubepods/pod1/memory.max"), "1073741824\n").expect("write");
        fs::write(b.join("kubepods/pod1/memory.high"), "805306368\n").expect("write");
        let rooms = cgroup_v2_limits(b, "0::/kubepods/pod1/ctr\n");
        let tightest = rooms.iter().min_by_key(|r| r.bytes).expect("a limit");
        assert_eq!(*tightest, Room { bytes: 768 << 20, from: RoomFrom::CgroupHigh });
        assert!(cgroup_v2_limits(b, "1:name=systemd:/\n").is_empty(), "no v2 line, no limit");
        // A container without a cgroup namespace: the host's path is not under its mount,
        // whose own files are the group's.
        fs::write(b.join("memory.max"), "536870912\n").expect("write");
        let rooms = cgroup_v2_limits(b, "0::/kubepods/besteffort/podX/abc\n");
        assert_eq!(rooms, [Room { bytes: 512 << 20, from: RoomFrom::CgroupMax }]);
    }
}
