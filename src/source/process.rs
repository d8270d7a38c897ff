//! A running process as `/proc` shows it: the program it runs, the files it has mapped (the
//! libraries the loader and its `dlopen` calls really loaded), its environment, and the root it
//! sees (a container's, for a process in one).

use std::path::PathBuf;

/// What `/proc/<pid>` tells of a process.
#[derive(Debug, Clone)]
pub struct Process {
    pub pid: u32,
    /// The root its paths are inside: `/` for a process of this machine's mount namespace,
    /// `/proc/<pid>/root` for one in a container.
    pub root: PathBuf,
    /// Its program, as the process sees it.
    pub exe: String,
    /// The files it has mapped, in the order of their first mapping, as the process sees them;
    /// a file deleted since it was mapped is marked so.
    pub mapped: Vec<Mapped>,
    /// Its environment.
    pub env: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    pub path: String,
    pub deleted: bool,
}

/// Reads process `pid`; an error that says why it cannot be read (gone, not permitted). A path
/// that is no UTF-8 is read as its lossy text.
pub fn read_process(pid: u32) -> Result<Process, String> {
    let dir = PathBuf::from(format!("/proc/{pid}"));
    if zombie(&dir) {
        return Err(format!(
            "process {pid} is a zombie: it has exited and its parent has not reaped it, so no program or library of it is left to read"
        ));
    }
    let why = |what: &str, e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => format!("process {pid}: no such process (gone, or never was)"),
        std::io::ErrorKind::PermissionDenied => {
            format!("process {pid}: its {what} cannot be read: {}", denied())
        }
        _ => format!("process {pid}: its {what} cannot be read: {e}"),
    };
    let maps = std::fs::read(dir.join("maps")).map_err(|e| why("memory map", e))?;
    let maps = String::from_utf8_lossy(&maps);
    let environ = std::fs::read(dir.join("environ")).map_err(|e| why("environment", e))?;
    let exe = std::fs::read_link(dir.join("exe")).map_err(|e| why("program", e))?;
    // The kernel shows `maps` and `exe` paths from the reader's root: within this mount
    // namespace they are this machine's paths (a chrooted process's too); a process of another
    // namespace (a container) is read through its root.
    let same_ns = std::fs::read_link(dir.join("ns/mnt")).ok() == std::fs::read_link("/proc/self/ns/mnt").ok();
    let root = if same_ns { PathBuf::from("/") } else { dir.join("root") };
    Ok(Process {
        pid,
        root,
        exe: exe.to_string_lossy().trim_end_matches(" (deleted)").to_string(),
        mapped: parse_maps(&maps),
        env: parse_environ(&environ),
    })
}

/// True when `/proc/<pid>/stat` says the process is a zombie (state `Z`, after the
/// parenthesised name, which may itself hold spaces and parentheses: proc(5)).
fn zombie(dir: &std::path::Path) -> bool {
    let stat = std::fs::read(dir.join("stat")).unwrap_or_default();
    let after = stat.iter().rposition(|&b| b == b')').and_then(|i| stat.get(i + 2));
    after == Some(&b'Z')
}

/// Why the kernel refuses another process's memory map: reading it takes ptrace's read right
/// (proc(5) `/proc/pid/maps`: `PTRACE_MODE_READ_FSCREDS`), which Yama, a security module or a
/// non-dumpable (setuid) process can withhold even from root.
fn denied() -> String {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok();
    let yama = scope
        .as_deref()
        .map(str::trim)
        .map_or_else(String::new, |s| format!("kernel.yama.ptrace_scope = {s}; "));
    // SAFETY: geteuid has no preconditions and cannot fail.
    match unsafe { libc::geteuid() } {
        0 => format!(
            "permission denied although running as root: the kernel refuses the ptrace read right ({yama}Yama scope 3 refuses everyone; an AppArmor or SELinux policy, a /proc mounted with hidepid, or a process of another user namespace can too)"
        ),
        _ => format!(
            "permission denied: reading another process's memory map takes the ptrace read right ({yama}run as the process's user; a setuid or otherwise non-dumpable process, or Yama scope 2, needs root)"
        ),
    }
}

/// The files of a `/proc/<pid>/maps` text, each once, in order: the sixth field of a line,
/// when it is a path (not `[heap]`, `[vdso]`, an anonymous mapping).
pub fn parse_maps(text: &str) -> Vec<Mapped> {
    let mut out: Vec<Mapped> = Vec::new();
    for line in text.lines() {
        // address perms offset dev inode path — the path may hold spaces.
        let mut rest = line;
        for _ in 0..5 {
            rest = rest.trim_start().split_once(' ').map_or("", |(_, r)| r);
        }
        let path = rest.trim_start();
        if !path.starts_with('/') {
            continue;
        }
        let (path, deleted) = match path.strip_suffix(" (deleted)") {
            Some(p) => (p, true),
            None => (path, false),
        };
        if !out.iter().any(|m| m.path == path) {
            out.push(Mapped { path: path.to_string(), deleted });
        }
    }
    out
}

/// The variables of a `/proc/<pid>/environ` block (NUL-separated `NAME=VALUE`).
pub fn parse_environ(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|&b| b == 0)
        .filter_map(|v| {
            let v = String::from_utf8_lossy(v);
            let (k, val) = v.split_once('=')?;
            (!k.is_empty()).then(|| (k.to_string(), val.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_name_each_file_once_in_order() {
        let text = "\
55d0c000-55d0d000 r--p 00000000 08:01 1234 /usr/bin/prog
7f00-7f01 r-xp 00001000 08:01 99 /opt/my libs/libgpu.so.1
7f01-7f02 r--p 00000000 08:01 99 /opt/my libs/libgpu.so.1
7f02-7f03 rw-p 00000000 00:00 0 
7f03-7f04 r--p 00000000 08:01 77 /tmp/libold.so (deleted)
7ffd-7ffe r-xp 00000000 00:00 0                          [vdso]
";
        let got = parse_maps(text);
        let paths: Vec<(&str, bool)> = got.iter().map(|m| (m.path.as_str(), m.deleted)).collect();
        assert_eq!(
            paths,
            [("/usr/bin/prog", false), ("/opt/my libs/libgpu.so.1", false), ("/tmp/libold.so", true)]
        );
        assert_eq!(
            parse_environ(b"A=1\0B=x=y\0\0=bad\0"),
            [("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
    }

    #[test]
    fn this_process_reads() {
        let me = read_process(std::process::id()).expect("self");
        assert_eq!(me.root, std::path::Path::new("/"));
        assert!(!me.mapped.is_empty() && !me.env.is_empty());
        assert!(read_process(u32::MAX).unwrap_err().contains("no such process"));
    }
}
