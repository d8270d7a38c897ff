//! The kernel's side of a root: its amdgpu driver modules (`lib/modules/<release>/kernel/
//! drivers/gpu/drm/amd/amdgpu/amdgpu.ko`, plain, `.ko.xz` or `.ko.zst`, under `lib/` or merged
//! `usr/lib/`), each kernel's configuration (`boot/config-<release>`), and whether a firmware
//! file is in the root, symbolic links followed inside the root (an absolute link is read
//! against the root, as the kernel would see it there).

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::decode::{budget_for, Budget};
use crate::model::{DriverRecord, Problem, RelPath};
use crate::parse::modinfo::{builtin_modinfo, parse_modinfo, ModInfo, MAX_MODINFO};
use crate::source::origin::Origin;
use crate::vocab::codec::Codec;

/// Bytes a module may inflate to, four times over, before its reading stops (Linux 6.12's
/// amdgpu.ko is 30 MB).
const MAX_MODULE: u64 = 256 << 20;
/// Largest kernel configuration read.
const MAX_CONFIG: u64 = 4 << 20;
/// Most symbolic links followed for one firmware name.
const MAX_LINKS: u32 = 16;
/// Largest `modules.dep` or `modules.builtin` read (6.12's `modules.dep` is 0.6 MB).
const MAX_DEP: u64 = 32 << 20;
/// Folders below `updates/` or `extra/` looked into for a module, and entries read of each.
const MAX_DEPTH: u32 = 8;
const MAX_ENTRIES: usize = 100_000;
/// The names of the amdgpu module: plain, `.xz`, `.zst` (scripts/Makefile.modinst).
const MODULE_NAMES: [&str; 3] = ["amdgpu.ko", "amdgpu.ko.xz", "amdgpu.ko.zst"];

/// One amdgpu module found in a root.
#[derive(Debug)]
pub struct Module {
    /// Its path, relative to the root.
    pub path: PathBuf,
    /// Its `.modinfo`, or why it could not be read.
    pub modinfo: Result<ModInfo, String>,
    /// Its kernel's configuration, when the root holds it.
    pub config: Option<String>,
    /// The name of its `lib/modules` folder: the release it serves.
    pub release: String,
    /// Built into the kernel, not a module (`path` is `modules.builtin.modinfo`).
    pub built_in: bool,
}

/// How the kernel's firmware loader finds a file (drivers/base/firmware_loader/main.c):
/// `_request_firmware` tries the plain name, then `.zst` (`CONFIG_FW_LOADER_COMPRESS_ZSTD`,
/// Linux 5.19+), then `.xz` (`CONFIG_FW_LOADER_COMPRESS_XZ`, 5.3+), each suffix through every
/// folder of `fw_path[]` before the next: `/lib/firmware/updates/<release>`,
/// `/lib/firmware/updates`, `/lib/firmware/<release>`, `/lib/firmware`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loader {
    pub zstd: bool,
    pub xz: bool,
}

impl Loader {
    /// The loader of kernel `release`: from its configuration (`/boot/config-<release>`) when
    /// there is one, else by version (Debian's 6.1 has xz only, so the version alone is a guess
    /// the configuration overrides).
    pub fn of(release: &str, config: Option<&str>) -> Loader {
        if let Some(c) = config {
            let set = |key: &str| c.lines().any(|l| l.trim() == format!("{key}=y"));
            return Loader {
                zstd: set("CONFIG_FW_LOADER_COMPRESS_ZSTD"),
                xz: set("CONFIG_FW_LOADER_COMPRESS_XZ"),
            };
        }
        let v = version(release);
        Loader { zstd: v >= (5, 19), xz: v >= (5, 3) }
    }

    /// Where file `name` (`amdgpu/gc_11_5_1_pfp.bin`) may be, relative to the root, in the
    /// order the kernel looks (with merged `/usr`, `lib/` is `usr/lib/`: both are tried).
    pub fn places(&self, name: &str, release: &str) -> Vec<String> {
        let mut suffixes = vec![""];
        if self.zstd {
            suffixes.push(".zst");
        }
        if self.xz {
            suffixes.push(".xz");
        }
        let folders = [
            format!("firmware/updates/{release}"),
            "firmware/updates".to_string(),
            format!("firmware/{release}"),
            "firmware".to_string(),
        ];
        let mut out = Vec::new();
        for s in suffixes {
            for f in &folders {
                for base in ["lib", "usr/lib"] {
                    out.push(format!("{base}/{f}/{name}{s}"));
                }
            }
        }
        out
    }
}

/// `major.minor` of a kernel release (`6.12.117+deb13-amd64` → (6, 12)).
pub fn version(release: &str) -> (u32, u32) {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let n = |p: Option<&str>| p.and_then(|s| s.parse().ok()).unwrap_or(0);
    (n(parts.next()), n(parts.next()))
}

/// The driver records of every amdgpu module under `root` (root index `index`): each with the
/// firmware it declares and which of those the root holds; a module that cannot be read is
/// a problem at its path.
pub fn drivers(root: &Path, index: usize, only: Option<&str>) -> (Vec<DriverRecord>, Vec<Problem>) {
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    for m in amdgpu_modules(root, only) {
        let path = RelPath::new(index, m.path.as_os_str());
        let info = match m.modinfo {
            Ok(i) => i,
            Err(e) => {
                problems.push(Problem { path, message: format!("kernel module: {e}") });
                continue;
            }
        };
        // A module's own word on its kernel, else (built in) its folder's name.
        let release = info.release().unwrap_or(&m.release).to_string();
        let loader = Loader::of(&release, m.config.as_deref());
        let present = info
            .firmware
            .iter()
            .filter(|n| loader.places(n, &release).iter().any(|p| exists_in(root, p)))
            .cloned()
            .collect();
        out.push(DriverRecord {
            path,
            release: Some(release.clone()),
            built_in: m.built_in,
            firmware_zstd: loader.zstd,
            firmware_xz: loader.xz,
            firmware: info.firmware,
            present,
        });
    }
    (out, problems)
}

/// The running system's kernel, as `check` without a ROOT reads it.
#[derive(Debug, Clone, Default)]
pub struct RunningKernel {
    /// The system's root: `/` (or `check --sysfs-root`).
    pub system: PathBuf,
    /// Its release: `proc/sys/kernel/osrelease`, what `uname -r` prints.
    pub release: Option<String>,
    /// The amdgpu driver of that release in the system's `lib/modules` (root index 0), or of
    /// every release when none is known.
    pub drivers: Vec<DriverRecord>,
    /// What stopped the reading of that release's module.
    pub unreadable: Option<String>,
    /// The running driver's parameters that change what it asks for
    /// (`sys/module/amdgpu/parameters/{mes,uni_mes,fw_load_type}`), when amdgpu is loaded.
    pub parameters: Option<Vec<(String, String)>>,
}

/// The parameters of a loaded amdgpu that decide which firmware it asks for.
const PARAMETERS: [&str; 3] = ["mes", "uni_mes", "fw_load_type"];

/// The kernel running on the system whose root is `system`: its release, its amdgpu driver,
/// and that driver's parameters when it is loaded. A root with no `proc/` (an image) runs no
/// kernel: each of its kernels' drivers is judged.
pub fn running(system: &Path) -> RunningKernel {
    let small = |rel: &str| {
        crate::source::file::read_small(&system.join(rel), 4096)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
    };
    // A release names one folder: anything else is not believed.
    let release = small("proc/sys/kernel/osrelease")
        .filter(|r| !r.is_empty() && !r.contains('/') && r != "." && r != "..");
    // A system image with no `/proc` of its own: each of its kernels.
    let (drivers, problems) = drivers(system, 0, release.as_deref());
    let parameters = system.join("sys/module/amdgpu").is_dir().then(|| {
        PARAMETERS
            .iter()
            .filter_map(|p| small(&format!("sys/module/amdgpu/parameters/{p}")).map(|v| (p.to_string(), v)))
            .collect()
    });
    RunningKernel {
        system: system.to_path_buf(),
        release,
        drivers,
        unreadable: problems.first().map(|p| format!("{}: {}", p.path.path, p.message)),
        parameters,
    }
}

/// Every amdgpu driver under `root` (of kernel `only`, when given), by kernel release: per
/// release folder the one modprobe loads (see [`module_of_release`]).
pub fn amdgpu_modules(root: &Path, only: Option<&str>) -> Vec<Module> {
    let mut out = Vec::new();
    // With merged `/usr`, `lib` is a link to `usr/lib`: the same module is met under both.
    let mut seen = std::collections::HashSet::new();
    for base in ["lib/modules", "usr/lib/modules"] {
        let Ok(releases) = std::fs::read_dir(root.join(base)) else { continue };
        let mut releases: Vec<PathBuf> = releases.flatten().map(|e| e.path()).collect();
        releases.sort();
        for dir in releases {
            let release = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if only.is_some_and(|o| o != release) {
                continue;
            }
            let Some((p, how)) = module_of_release(root, &dir) else { continue };
            // A module that is a link is read where it leads; one met twice through a linked
            // folder is read once.
            let Ok(meta) = p.metadata() else { continue };
            if !meta.is_file() || !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            let rel = p.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| p.clone());
            let config =
                crate::source::file::read_small(&root.join(format!("boot/config-{release}")), MAX_CONFIG)
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
            let modinfo = match how {
                Found::Module => read_modinfo(&p),
                Found::BuiltIn => crate::source::file::read_small(&p, MAX_MODINFO)
                    .map_err(|e| e.to_string())
                    .map(|b| builtin_modinfo(&b, "amdgpu")),
            };
            out.push(Module { path: rel, modinfo, config, release, built_in: how == Found::BuiltIn });
        }
    }
    out
}

/// How a release folder holds its amdgpu driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// A loadable module, at the path given.
    Module,
    /// Built into the kernel: its `.modinfo` is in `modules.builtin.modinfo`, the path given.
    BuiltIn,
}

/// The amdgpu driver of one `lib/modules/<release>` folder, as modprobe finds it: the module
/// `modules.dep` names (depmod wrote it after its search order, which puts `updates/` — where
/// DKMS installs AMD's amdgpu-dkms — before the kernel's own: kmod tools/depmod.c `cfg_load`);
/// else, in a folder depmod never ran in (an unpacked package), the first of `updates/`,
/// `extra/` and `kernel/`; else the `.modinfo` of a built-in amdgpu (`modules.builtin`).
fn module_of_release(root: &Path, dir: &Path) -> Option<(PathBuf, Found)> {
    let is_amdgpu = |name: &str| MODULE_NAMES.contains(&name);
    if let Ok(dep) = crate::source::file::read_small(&dir.join("modules.dep"), MAX_DEP) {
        let text = String::from_utf8_lossy(&dep);
        let named = text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(m, _)| m.trim())
            .find(|m| Path::new(m).file_name().and_then(|n| n.to_str()).is_some_and(is_amdgpu));
        if let Some(m) = named {
            // Relative to the release folder (absolute in kmod before 8: read in the root);
            // a name that leads out of the root is not followed.
            let in_root = match m.strip_prefix('/') {
                Some(abs) => Some(PathBuf::from(abs)),
                None => dir.strip_prefix(root).ok().map(|d| d.join(m)),
            };
            return in_root.and_then(|r| normalise(&r)).map(|r| (root.join(r), Found::Module));
        }
    }
    for sub in ["updates", "extra"] {
        if let Some(p) = find_module(&dir.join(sub), 0) {
            return Some((p, Found::Module));
        }
    }
    let own = dir.join("kernel/drivers/gpu/drm/amd/amdgpu");
    if let Some(p) = MODULE_NAMES.iter().map(|n| own.join(n)).find(|p| p.symlink_metadata().is_ok()) {
        return Some((p, Found::Module));
    }
    let builtin = crate::source::file::read_small(&dir.join("modules.builtin"), MAX_DEP).ok()?;
    let listed = String::from_utf8_lossy(&builtin)
        .lines()
        .any(|l| Path::new(l.trim()).file_name().and_then(|n| n.to_str()).is_some_and(is_amdgpu));
    listed.then(|| (dir.join("modules.builtin.modinfo"), Found::BuiltIn))
}

/// The first amdgpu module under `dir`, by name order, at most [`MAX_DEPTH`] folders down.
fn find_module(dir: &Path, depth: u32) -> Option<PathBuf> {
    let mut entries: Vec<std::fs::DirEntry> =
        std::fs::read_dir(dir).ok()?.flatten().take(MAX_ENTRIES).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in &entries {
        if e.file_name().to_str().is_some_and(|n| MODULE_NAMES.contains(&n)) {
            return Some(e.path());
        }
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    entries
        .iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .find_map(|e| find_module(&e.path(), depth + 1))
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
    fn the_loader_looks_as_the_kernel_does() {
        let l = Loader::of(
            "6.1.0-57-amd64",
            Some("CONFIG_FW_LOADER_COMPRESS_XZ=y\n# CONFIG_FW_LOADER_COMPRESS_ZSTD is not set\n"),
        );
        assert_eq!(l, Loader { zstd: false, xz: true });
        assert_eq!(Loader::of("6.12.117", None), Loader { zstd: true, xz: true });
        assert_eq!(Loader::of("5.4.0", None), Loader { zstd: false, xz: true });
        let places = l.places("amdgpu/x.bin", "6.1.0-57-amd64");
        assert_eq!(places.first().unwrap(), "lib/firmware/updates/6.1.0-57-amd64/amdgpu/x.bin");
        assert_eq!(places.get(7).unwrap(), "usr/lib/firmware/amdgpu/x.bin");
        assert_eq!(places.last().unwrap(), "usr/lib/firmware/amdgpu/x.bin.xz");
        assert!(!places.iter().any(|p| p.ends_with(".zst")));
        assert_eq!(version("6.12.117+deb13-amd64"), (6, 12));
    }

    /// Review finding: on a merged-`/usr` root (`lib` → `usr/lib`, Debian 12 and later) the
    /// module was found twice, under `lib/modules` and `usr/lib/modules`.
    #[test]
    fn a_module_met_through_a_linked_lib_is_one_module() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let dir = r.join("usr/lib/modules/6.12.0/kernel/drivers/gpu/drm/amd/amdgpu");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("amdgpu.ko"), b"not a module").unwrap();
        std::os::unix::fs::symlink("usr/lib", r.join("lib")).unwrap();
        let found = amdgpu_modules(r, None);
        assert_eq!(found.len(), 1, "{found:?}");
    }

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
