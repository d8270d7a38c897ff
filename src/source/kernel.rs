//! The kernel's side of a root: its amdgpu driver modules (`lib/modules/<release>/kernel/
//! drivers/gpu/drm/amd/amdgpu/amdgpu.ko`, plain, `.ko.xz` or `.ko.zst`, under `lib/` or merged
//! `usr/lib/`), each kernel's configuration (`boot/config-<release>`), and whether a firmware
//! file is in the root, symbolic links followed inside the root (an absolute link is read
//! against the root, as the kernel would see it there).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::decode::{budget_for, Budget};
use crate::parse::modinfo::{parse_modinfo, ModInfo};
use crate::source::origin::Origin;
use crate::vocab::codec::Codec;

/// Bytes a module may inflate to, four times over, before its reading stops (Linux 6.12's
/// amdgpu.ko is 30 MB).
const MAX_MODULE: u64 = 256 << 20;
/// Largest kernel configuration read.
const MAX_CONFIG: u64 = 4 << 20;
/// Most symbolic links followed for one firmware name.
const MAX_LINKS: u32 = 16;

/// One amdgpu module found in a root.
#[derive(Debug)]
pub struct Module {
    /// Its path, relative to the root.
    pub path: PathBuf,
    /// Its `.modinfo`, or why it could not be read.
    pub modinfo: Result<ModInfo, String>,
    /// Its kernel's configuration, when the root holds it.
    pub config: Option<String>,
}

/// Every amdgpu module under `root`, by path.
pub fn amdgpu_modules(root: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    for base in ["lib/modules", "usr/lib/modules"] {
        let Ok(releases) = std::fs::read_dir(root.join(base)) else { continue };
        let mut releases: Vec<PathBuf> = releases.flatten().map(|e| e.path()).collect();
        releases.sort();
        for dir in releases {
            let release = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            for name in ["amdgpu.ko", "amdgpu.ko.xz", "amdgpu.ko.zst"] {
                let p = dir.join("kernel/drivers/gpu/drm/amd/amdgpu").join(name);
                // A link (`lib` → `usr/lib` seen twice) is the same module: read it once.
                if !p.symlink_metadata().is_ok_and(|m| m.is_file()) {
                    continue;
                }
                let rel = p.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| p.clone());
                let config =
                    crate::source::file::read_small(&root.join(format!("boot/config-{release}")), MAX_CONFIG)
                        .ok()
                        .map(|b| String::from_utf8_lossy(&b).into_owned());
                out.push(Module { path: rel, modinfo: read_modinfo(&p), config });
            }
        }
    }
    out
}

/// A module's `.modinfo`, read in place: through the section table, of the module itself or of
/// its decoded form. An `.xz` module of several blocks (Debian's 6.12 amdgpu.ko.xz has 10) is
/// decoded only in the blocks that hold the ELF header, the section table and `.modinfo`.
fn read_modinfo(path: &Path) -> Result<ModInfo, String> {
    let file = crate::source::file::open_regular(path).map_err(|e| e.to_string())?;
    let codec = match path.extension().and_then(|e| e.to_str()) {
        Some("xz") => Some(Codec::Xz),
        Some("zst") => Some(Codec::Zstd),
        _ => None,
    };
    let origin = Arc::new(Origin::file(Arc::new(file)));
    let read = |o: &Origin| parse_modinfo(&*o.source(None)).map_err(|e| e.to_string());
    match codec {
        None => read(&origin),
        Some(c) => {
            let budget = Budget::new(budget_for(origin.known_len().unwrap_or(0)).min(MAX_MODULE * 4));
            read(&Origin::decoded(origin, c, None, &budget))
        }
    }
}

/// True when `rel` (a path relative to the root) names a regular file there, links followed
/// inside the root.
pub fn exists_in(root: &Path, rel: &str) -> bool {
    let mut at = PathBuf::from(rel);
    for _ in 0..MAX_LINKS {
        let full = root.join(&at);
        match full.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => {
                let Ok(target) = std::fs::read_link(&full) else { return false };
                let next = if target.is_absolute() {
                    target.components().filter(|c| !matches!(c, Component::RootDir)).collect()
                } else {
                    at.parent().map(|p| p.join(&target)).unwrap_or(target)
                };
                let Some(inside) = normalise(&next) else { return false };
                at = inside;
            }
            Ok(m) => return m.is_file(),
            // A folder on the way may itself be a link (`lib` → `usr/lib`).
            Err(_) => match through_linked_folder(root, &at) {
                Some(p) if p != at => at = p,
                _ => return false,
            },
        }
    }
    false
}

/// `p` with `.` and `..` resolved, `None` when it leaves the root.
fn normalise(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// `rel` with its first folder that is a symbolic link replaced by where it leads (inside the
/// root), or `None` when no folder on the way is one.
fn through_linked_folder(root: &Path, rel: &Path) -> Option<PathBuf> {
    let mut prefix = PathBuf::new();
    let parts: Vec<Component> = rel.components().collect();
    for (i, c) in parts.iter().enumerate() {
        prefix.push(c);
        let full = root.join(&prefix);
        if full.symlink_metadata().ok()?.file_type().is_symlink() {
            let target = std::fs::read_link(&full).ok()?;
            let base = if target.is_absolute() {
                target.components().filter(|c| !matches!(c, Component::RootDir)).collect()
            } else {
                prefix.parent().map(|p| p.join(&target)).unwrap_or(target)
            };
            let mut next = normalise(&base)?;
            for rest in parts.get(i + 1..)? {
                next.push(rest);
            }
            return Some(next);
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn firmware_found_through_links_inside_the_root_only() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("usr/lib/firmware/amdgpu")).unwrap();
        std::os::unix::fs::symlink("usr/lib", r.join("lib")).unwrap();
        std::fs::write(r.join("usr/lib/firmware/amdgpu/a.bin"), b"x").unwrap();
        std::os::unix::fs::symlink("a.bin", r.join("usr/lib/firmware/amdgpu/b.bin")).unwrap();
        std::os::unix::fs::symlink("/usr/lib/firmware/amdgpu/a.bin", r.join("usr/lib/firmware/amdgpu/c.bin"))
            .unwrap();
        std::os::unix::fs::symlink("../../../../../../etc/passwd", r.join("usr/lib/firmware/amdgpu/d.bin"))
            .unwrap();
        std::os::unix::fs::symlink("e.bin", r.join("usr/lib/firmware/amdgpu/e.bin")).unwrap();
        assert!(exists_in(r, "lib/firmware/amdgpu/a.bin"), "through the lib link");
        assert!(exists_in(r, "usr/lib/firmware/amdgpu/b.bin"));
        assert!(exists_in(r, "usr/lib/firmware/amdgpu/c.bin"), "an absolute link, read in the root");
        assert!(!exists_in(r, "usr/lib/firmware/amdgpu/d.bin"), "leaves the root");
        assert!(!exists_in(r, "usr/lib/firmware/amdgpu/e.bin"), "a loop");
        assert!(!exists_in(r, "usr/lib/firmware/amdgpu/z.bin"));
    }
}
