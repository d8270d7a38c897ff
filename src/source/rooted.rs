//! Paths inside a root, as a program chrooted there sees them: every symbolic link resolved
//! inside the root (an absolute target starts again at the root, `..` stops at it), and small
//! files read from there without following a link out, opening a FIFO or a device, or reading
//! past a cap. The loader (`ld.so` in a root), `dlopen` and the kernel's side of a root
//! (modules, `modules.dep`, firmware) all look up files through it.

use std::collections::VecDeque;
use std::path::{Component, Path, PathBuf};

use crate::source::file::open_file;

/// Most symbolic links followed to resolve one path (the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;
/// Most names listed of one folder (configuration and module folders hold dozens).
const MAX_LISTED: usize = 100_000;

/// The path `abs` names inside `root`, every link resolved inside it (an absolute link target
/// starts again at the root, `..` stops at it); `None` when it does not exist.
pub fn in_root(root: &Path, abs: &Path) -> Option<PathBuf> {
    let mut todo: VecDeque<std::ffi::OsString> = components(abs).collect();
    let mut at = root.to_path_buf();
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        if part == ".." {
            if at != root {
                at.pop();
            }
            continue;
        }
        let next = at.join(&part);
        let meta = std::fs::symlink_metadata(&next).ok()?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let target = std::fs::read_link(&next).ok()?;
            if target.is_absolute() {
                at = root.to_path_buf();
            }
            for (i, c) in components(&target).enumerate() {
                todo.insert(i, c);
            }
        } else {
            at = next;
        }
    }
    Some(at)
}

/// The names in folder `dir` (inside `root`), sorted, at most [`MAX_LISTED`] of them (a
/// hostile folder of millions of names is not held whole); none when it is not there.
pub fn list_in_root(root: &Path, dir: &Path) -> Vec<String> {
    let Some(real) = in_root(root, dir) else { return Vec::new() };
    let mut names: Vec<String> = std::fs::read_dir(real)
        .into_iter()
        .flatten()
        .flatten()
        .take(MAX_LISTED)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The normal parts of a path, `..` kept, `.` and the root dropped.
fn components(p: &Path) -> impl Iterator<Item = std::ffi::OsString> + '_ {
    p.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some("..".into()),
        _ => None,
    })
}

/// True when `abs` names a regular file inside `root`.
pub fn is_file_in_root(root: &Path, abs: &Path) -> bool {
    in_root(root, abs).is_some_and(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
}

/// The bytes of the regular file `abs` names inside `root`, when it is one and holds at most
/// `cap` bytes: a FIFO or device named there is never opened (nor blocked on), a huge file never
/// read whole. Files that say size 0 and hold more (`/proc`) are read up to the cap.
pub fn read_in_root(root: &Path, abs: &Path, cap: u64) -> Option<Vec<u8>> {
    let file = in_root(root, abs)?;
    if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    // No link followed, never blocking, still a regular file once open.
    let src = open_file(&file, false).ok()?;
    let out = src.read_to_cap(cap).ok()?;
    (out.len() as u64 <= cap).then_some(out)
}
