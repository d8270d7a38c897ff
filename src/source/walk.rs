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
    default_roots_under(Path::new("/"))
}

/// [`DEFAULT_ROOTS`] under `base` (`/` on a live system) that exist.
pub fn default_roots_under(base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pat in DEFAULT_ROOTS {
        let pat = base.join(pat.trim_start_matches('/'));
        let pat = pat.to_string_lossy();
        if let Some(prefix) = pat.strip_suffix('*') {
            let (dir, stem) = prefix.rsplit_once('/').unwrap_or(("/", prefix));
            let mut found: Vec<PathBuf> = fs::read_dir(if dir.is_empty() { "/" } else { dir })
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(stem))
                .map(|e| e.path())
                .collect();
            found.sort();
            out.extend(found);
        } else if Path::new(pat.as_ref()).exists() {
            out.push(PathBuf::from(pat.as_ref()));
        }
    }
    out
}

/// What `check` looks at without a ROOT, under `base`: the install `/opt/rocm` leads to and
/// Ollama's folders; every other `/opt/rocm-*` is returned second, as not checked (a leftover
/// old ROCm must not fail the check of the one in use). Firmware holds no library to check.
pub fn check_roots_under(base: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let all = default_roots_under(base);
    let current = fs::canonicalize(base.join("opt/rocm")).ok();
    let mut checked = Vec::new();
    let mut not_checked = Vec::new();
    for root in all {
        let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let real = fs::canonicalize(&root).ok();
        if name == "rocm" {
            checked.push(root);
        } else if name.starts_with("rocm-") {
            if real.is_none() || real != current {
                not_checked.push(root);
            }
        } else if name == "ollama" {
            checked.push(root);
        }
    }
    (checked, not_checked)
}

/// Resolves roots to real paths, keeping the first of any that lead to the same tree.
///
/// A root that does not exist, or that cannot be read (a folder that cannot be listed, a file
/// that cannot be opened), is an error for the caller to report — not an empty install — and
/// so is a root inside another (`scan sample sample/opt`): its files would be counted twice.
pub fn resolve_roots(given: &[PathBuf]) -> Result<Vec<Root>, String> {
    let mut roots: Vec<Root> = Vec::new();
    for g in given {
        let real = fs::canonicalize(g).map_err(|e| format!("{}: {e}", g.display()))?;
        let readable = match fs::metadata(&real) {
            Ok(m) if m.is_dir() => fs::read_dir(&real).map(|_| ()),
            // Opened as the scan opens files: never blocking on a FIFO.
            Ok(m) if m.is_file() => crate::source::file::open_file(&real, false).map(|_| ()),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        readable.map_err(|e| format!("cannot read {}: {e}", g.display()))?;
        if roots.iter().any(|r| r.real == real) {
            continue;
        }
        if let Some(r) = roots.iter().find(|r| real.starts_with(&r.real) || r.real.starts_with(&real)) {
            let (inner, outer) = if real.starts_with(&r.real) { (g, &r.given) } else { (&r.given, g) };
            return Err(format!(
                "{} lies inside {}: its files would be counted twice; name only one of them",
                inner.display(),
                outer.display()
            ));
        }
        roots.push(Root { given: g.clone(), real });
    }
    Ok(roots)
}

/// A regular file to read.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Index of its root.
    pub root: usize,
    /// Path relative to the root (the full path is built when the file is opened: a walk of
    /// millions of files keeps one short name each, see [`Candidate::path`]).
    pub rel: Box<Path>,
    /// Inode number from the directory listing: names sharing one may be hard links to one file.
    pub ino: u64,
    /// A symbolic link to a regular file, met with `--follow-links`: opened through the link.
    pub followed: bool,
}

impl Candidate {
    /// The full path to open, under its root's real path (the root itself when `rel` is empty).
    pub fn path(&self, roots: &[Root]) -> PathBuf {
        let base = roots.get(self.root).map_or(Path::new(""), |r| r.real.as_path());
        if self.rel.as_os_str().is_empty() {
            base.to_path_buf()
        } else {
            base.join(&self.rel)
        }
    }
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
    /// FIFOs, sockets and device nodes met inside the roots (skipped, counted).
    pub special: u64,
    /// With `--follow-links`: links followed to a place outside their root (its path in the
    /// root, and the real path it leads to). What lies there is scanned as part of the root.
    pub left_root: Vec<(usize, PathBuf, PathBuf)>,
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

/// Where a followed link leads when that is outside `root` (`None` inside it, or when the
/// target cannot be resolved: walkdir then reports the entry itself).
fn leaves(link: &Path, root: &Path) -> Option<PathBuf> {
    let real = fs::canonicalize(link).ok()?;
    (!real.starts_with(root)).then_some(real)
}

fn device(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| m.dev())
}

/// Walks every root; `tick` is called once per entry (for a progress counter).
/// With `follow_links`, the walk stays on each root's file system unless `cross_file_systems`
/// (a link into /proc or another mount is not walked, as `find -xdev`).
pub fn walk(
    roots: &[Root],
    parts: Option<&[PathBuf]>,
    follow_links: bool,
    cross_file_systems: bool,
    tick: &dyn Fn(),
) -> Walked {
    let mut out = Walked::default();
    for (i, root) in roots.iter().enumerate() {
        // Only the parts inside this root, when the walk is given parts; else the whole root.
        let starts: Vec<PathBuf> = match parts {
            Some(p) => p.iter().filter(|p| p.starts_with(&root.real)).cloned().collect(),
            None => vec![root.real.clone()],
        };
        for start in starts {
            walk_from(&mut out, (i, root), &start, follow_links, cross_file_systems, tick);
        }
    }
    out
}

/// Walks `start`, a root or a part of it, recording what it finds relative to the root.
fn walk_from(
    out: &mut Walked,
    (i, root): (usize, &Root),
    start: &Path,
    follow_links: bool,
    cross_file_systems: bool,
    tick: &dyn Fn(),
) {
    // Relative to the root; empty for the root itself (also when the root is a file).
    let rel_of =
        |p: &Path| -> PathBuf { p.strip_prefix(&root.real).map(Path::to_path_buf).unwrap_or_default() };
    let stay = follow_links && !cross_file_systems;
    let root_device = device(&root.real);
    for entry in walkdir::WalkDir::new(start).follow_links(follow_links).same_file_system(stay) {
        tick();
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                let rel = err.path().map(rel_of).unwrap_or_default();
                let message = match err.loop_ancestor() {
                    // A loop back to the root itself has an empty relative path: say so.
                    Some(a) => match rel_of(a) {
                        r if r.as_os_str().is_empty() => "symlink loop back to the root".to_string(),
                        r => format!("symlink loop back to {}", r.display()),
                    },
                    None => err.io_error().map_or_else(|| err.to_string(), |e| e.to_string()),
                };
                out.problems.push(Problem { path: RelPath::new(i, rel.as_os_str()), message });
                continue;
            }
        };
        let ft = entry.file_type();
        let rel = rel_of(entry.path());
        if entry.path_is_symlink() && follow_links {
            // A folder on another file system is not descended into unless asked.
            let walked_into = |real: &Path| !(stay && ft.is_dir() && device(real) != root_device);
            if let Some(real) = leaves(entry.path(), &root.real).filter(|r| walked_into(r)) {
                out.left_root.push((i, rel.clone(), real));
            }
        }
        if ft.is_symlink() {
            out.symlinks += 1;
            let target = fs::read_link(entry.path()).unwrap_or_default();
            out.links.push(Link { root: i, path: entry.into_path(), rel, target });
        } else if ft.is_file() {
            // The type comes from the directory listing; the size from fstat after opening:
            // no second stat per file.
            let (ino, followed) = (entry.ino(), entry.path_is_symlink());
            out.candidates.push(Candidate { root: i, rel: rel.into_boxed_path(), ino, followed });
        } else if let Some(kind) = special_kind(&ft) {
            // Inside a tree a FIFO, socket or device is no file anyone installs: counted and
            // skipped. Named as a root itself, it is a problem: what was asked for is unread.
            if rel.as_os_str().is_empty() {
                out.problems.push(Problem {
                    path: RelPath::new(i, rel.as_os_str()),
                    message: format!("not a regular file ({kind}): not opened"),
                });
            } else {
                out.special += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_without_root_takes_the_current_rocm_and_ollama_only() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        for d in ["opt/rocm-6.2.0/lib", "opt/rocm-7.2.0/lib", "usr/lib/ollama", "lib/firmware/amdgpu"] {
            fs::create_dir_all(b.join(d)).expect("mkdir");
        }
        std::os::unix::fs::symlink("rocm-7.2.0", b.join("opt/rocm")).expect("symlink");
        let (checked, not) = check_roots_under(b);
        assert_eq!(checked, [b.join("opt/rocm"), b.join("usr/lib/ollama")]);
        assert_eq!(not, [b.join("opt/rocm-6.2.0")]);
        // `scan` still takes every default root that exists.
        assert_eq!(default_roots_under(b).len(), 5);
    }

    #[test]
    fn nested_roots_are_refused_and_equal_ones_merged() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        fs::create_dir_all(b.join("a/opt")).expect("mkdir");
        std::os::unix::fs::symlink("a", b.join("link")).expect("symlink");
        let err = resolve_roots(&[b.join("a"), b.join("a/opt")]).expect_err("nested");
        assert!(err.contains("lies inside"), "{err}");
        let err = resolve_roots(&[b.join("a/opt"), b.join("a")]).expect_err("nested, other order");
        assert!(
            err.contains(&format!("{} lies inside {}", b.join("a/opt").display(), b.join("a").display())),
            "{err}"
        );
        assert_eq!(resolve_roots(&[b.join("a"), b.join("link")]).expect("same tree").len(), 1);
    }

    #[test]
    fn links_followed_out_of_the_root_are_named_and_those_inside_are_not() {
        let base = tempfile::tempdir().expect("temp dir");
        let b = base.path();
        fs::create_dir_all(b.join("root/lib")).expect("mkdir");
        fs::create_dir_all(b.join("elsewhere/sub")).expect("mkdir");
        fs::write(b.join("elsewhere/sub/x.so"), b"x").expect("write");
        fs::write(b.join("root/lib/y.so"), b"y").expect("write");
        std::os::unix::fs::symlink(b.join("elsewhere"), b.join("root/out")).expect("symlink");
        std::os::unix::fs::symlink("y.so", b.join("root/lib/in.so")).expect("symlink");
        let roots = resolve_roots(&[b.join("root")]).expect("root");
        let walked = walk(&roots, None, true, false, &|| ());
        let real = fs::canonicalize(b.join("elsewhere")).expect("real");
        assert_eq!(walked.left_root, [(0, PathBuf::from("out"), real)]);
        // The file under the followed folder is read, once, as part of the root.
        assert_eq!(walked.candidates.len(), 3);
        // Without following, nothing leaves the root.
        assert!(walk(&roots, None, false, false, &|| ()).left_root.is_empty());
    }
}
