//! Walking: which files a scan looks at.
//!
//! walkdir enumerates each root on one thread (cheap); the scanner reads in parallel. Only
//! regular files become candidates: FIFOs, sockets and devices are never opened, symlinks are
//! counted and not followed unless asked (then walkdir detects loops). Everything that cannot
//! be walked becomes a problem with its path, and the walk goes on.

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use walkdir::DirEntryExt;

use crate::model::{Problem, RelPath};

/// The places ROCm, Ollama and the amdgpu firmware live, scanned when no root is given.
pub const DEFAULT_ROOTS: &[&str] =
    &["/opt/rocm", "/opt/rocm-*", "/usr/lib/ollama", "/usr/local/lib/ollama", "/lib/firmware/amdgpu"];

/// A root to scan: as the user named it, and the real path behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub given: PathBuf,
    pub real: PathBuf,
}

/// The default roots that exist, with `/opt/rocm-*` expanded, in a stable order.
pub fn default_roots() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pat in DEFAULT_ROOTS {
        if let Some(prefix) = pat.strip_suffix('*') {
            let (dir, stem) = prefix.rsplit_once('/').unwrap_or(("/", prefix));
            let mut found: Vec<PathBuf> = fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(stem))
                .map(|e| e.path())
                .collect();
            found.sort();
            out.extend(found);
        } else if Path::new(pat).exists() {
            out.push(PathBuf::from(pat));
        }
    }
    out
}

/// Resolves roots to real paths, keeping the first of any that lead to the same tree.
///
/// A root that does not exist is an error for the caller to report.
pub fn resolve_roots(given: &[PathBuf]) -> Result<Vec<Root>, String> {
    let mut roots: Vec<Root> = Vec::new();
    for g in given {
        let real = fs::canonicalize(g).map_err(|e| format!("{}: {e}", g.display()))?;
        if !roots.iter().any(|r| r.real == real) {
            roots.push(Root { given: g.clone(), real });
        }
    }
    Ok(roots)
}

/// A regular file to read.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Index of its root.
    pub root: usize,
    /// Full path to open.
    pub path: PathBuf,
    /// Path relative to the root.
    pub rel: PathBuf,
    /// Inode number from the directory listing: names sharing one may be hard links to one file.
    pub ino: u64,
    /// A symbolic link to a regular file, met with `--follow-links`: opened through the link.
    pub followed: bool,
}

/// A symbolic link met and not followed.
#[derive(Debug, Clone)]
pub struct Link {
    /// Index of its root.
    pub root: usize,
    /// Full path of the link itself.
    pub path: PathBuf,
    /// Path relative to the root.
    pub rel: PathBuf,
    /// Where it points, as stored.
    pub target: PathBuf,
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    pub candidates: Vec<Candidate>,
    pub links: Vec<Link>,
    pub symlinks: u64,
    pub problems: Vec<Problem>,
}

fn special_kind(ft: &fs::FileType) -> Option<&'static str> {
    if ft.is_fifo() {
        Some("fifo")
    } else if ft.is_socket() {
        Some("socket")
    } else if ft.is_block_device() {
        Some("block device")
    } else if ft.is_char_device() {
        Some("character device")
    } else {
        None
    }
}

/// Walks every root; `tick` is called once per entry (for a progress counter).
pub fn walk(roots: &[Root], follow_links: bool, tick: &dyn Fn()) -> Walked {
    let mut out = Walked::default();
    for (i, root) in roots.iter().enumerate() {
        // Relative to the root; empty for the root itself (also when the root is a file).
        let rel_of =
            |p: &Path| -> PathBuf { p.strip_prefix(&root.real).map(Path::to_path_buf).unwrap_or_default() };
        for entry in walkdir::WalkDir::new(&root.real).follow_links(follow_links) {
            tick();
            let entry = match entry {
                Ok(e) => e,
                Err(err) => {
                    let rel = err.path().map(rel_of).unwrap_or_default();
                    let message = match err.loop_ancestor() {
                        Some(a) => format!("symlink loop back to {}", rel_of(a).display()),
                        None => err.io_error().map_or_else(|| err.to_string(), |e| e.to_string()),
                    };
                    out.problems.push(Problem { path: RelPath::new(i, rel.as_os_str()), message });
                    continue;
                }
            };
            let ft = entry.file_type();
            let rel = rel_of(entry.path());
            if ft.is_symlink() {
                out.symlinks += 1;
                let target = fs::read_link(entry.path()).unwrap_or_default();
                out.links.push(Link { root: i, path: entry.into_path(), rel, target });
            } else if ft.is_file() {
                // The type comes from the directory listing; the size from fstat after opening:
                // no second stat per file.
                let (ino, followed) = (entry.ino(), entry.path_is_symlink());
                out.candidates.push(Candidate { root: i, path: entry.into_path(), rel, ino, followed });
            } else if let Some(kind) = special_kind(&ft) {
                out.problems.push(Problem {
                    path: RelPath::new(i, rel.as_os_str()),
                    message: format!("not a regular file ({kind}): not opened"),
                });
            }
        }
    }
    out
}
