//! The kernel's side of a root: per kernel release, the amdgpu driver modprobe loads
//! (`lib/modules/<release>/…/amdgpu.ko`, plain, `.ko.xz` or `.ko.zst`, under `lib/` or merged
//! `usr/lib/`, or built in), its kernel's configuration (`boot/config-<release>`), and whether a
//! firmware file is in the root; the running system's kernel and its driver's parameters. Every
//! path is looked up inside the root, links resolved there (`source::rooted`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::decode::{budget_for, Budget};
use crate::model::{DriverRecord, Problem, RelPath};
use crate::parse::modinfo::{builtin_modinfo, parse_modinfo, ModInfo};
use crate::source::origin::Origin;
use crate::source::rooted::{in_root, is_file_in_root, list_in_root, read_in_root};
use crate::vocab::codec::Codec;

/// Bytes a module may inflate to, four times over, before its reading stops (Linux 6.12's
/// amdgpu.ko is 30 MB).
const MAX_MODULE: u64 = 256 << 20;
/// Largest kernel configuration read.
const MAX_CONFIG: u64 = 4 << 20;
/// Largest `modules.dep`, `modules.builtin` or `modules.builtin.modinfo` read (6.12's
/// `modules.dep` is 0.6 MB).
const MAX_DEP: u64 = 8 << 20;
/// Folders below `updates/` or `extra/` looked into for a module, and entries looked at in all.
const MAX_DEPTH: u32 = 8;
const MAX_ENTRIES: usize = 100_000;
/// Kernel releases judged per root (a distribution keeps two or three).
const MAX_RELEASES: usize = 64;
/// The names of the amdgpu module: plain, `.xz`, `.zst` (scripts/Makefile.modinst).
const MODULE_NAMES: [&str; 3] = ["amdgpu.ko", "amdgpu.ko.xz", "amdgpu.ko.zst"];
/// Where kernels keep their modules, one folder a release.
const MODULE_BASES: [&str; 2] = ["/lib/modules", "/usr/lib/modules"];

/// The amdgpu driver of one kernel release found in a root.
#[derive(Debug)]
pub struct Module {
    /// Its path, relative to the root: the module, `modules.builtin.modinfo` for a built-in
    /// one, or the release folder for a kernel without one.
    pub path: PathBuf,
    /// How the release holds it.
    pub how: Holds,
    /// Its `.modinfo`, or why it could not be read (empty for [`Holds::Nothing`]).
    pub modinfo: Result<ModInfo, String>,
    /// Its kernel's configuration, when the root holds it.
    pub config: Option<String>,
    /// The name of its `lib/modules` folder: the release it serves.
    pub release: String,
}

/// How a kernel release holds its amdgpu driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// A loadable module.
    Module,
    /// Built into the kernel: its `.modinfo` is in `modules.builtin.modinfo`.
    BuiltIn,
    /// None: depmod's `modules.dep` names no amdgpu and `modules.builtin` does not list it
    /// (Ubuntu keeps amdgpu in `linux-modules-extra-<release>`).
    Nothing,
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

/// The driver records of every kernel release under `root` (root index `index`; of release
/// `only`, when given): each with the firmware its amdgpu declares and which of those the root
/// holds. A module that cannot be read is a problem at its path, and a record saying so.
pub fn drivers(root: &Path, index: usize, only: Option<&str>) -> (Vec<DriverRecord>, Vec<Problem>) {
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    let parameters = configured_parameters(root);
    for m in amdgpu_modules(root, only) {
        let path = RelPath::new(index, m.path.as_os_str());
        let (info, unreadable) = match m.modinfo {
            Ok(i) => (i, None),
            Err(e) => {
                problems.push(Problem { path: path.clone(), message: format!("kernel module: {e}") });
                (ModInfo::default(), Some(e))
            }
        };
        // A module's own word on its kernel, else its folder's name.
        let release = info.release().unwrap_or(&m.release).to_string();
        let loader = Loader::of(&release, m.config.as_deref());
        // A built-in driver's firmware built into the kernel is there whatever the root holds.
        let built_in_firmware = match m.how {
            Holds::BuiltIn => extra_firmware(m.config.as_deref()),
            Holds::Module | Holds::Nothing => Vec::new(),
        };
        let present = info
            .firmware
            .iter()
            .filter(|n| {
                built_in_firmware.contains(n)
                    || loader.places(n, &release).iter().any(|p| is_file_in_root(root, Path::new(p)))
            })
            .cloned()
            .collect();
        out.push(DriverRecord {
            path,
            release: Some(release.clone()),
            built_in: m.how == Holds::BuiltIn,
            absent: m.how == Holds::Nothing,
            unreadable,
            built_in_firmware,
            firmware_zstd: loader.zstd,
            firmware_xz: loader.xz,
            firmware: info.firmware,
            present,
            parameters: parameters.clone(),
            parameters_running: false,
        });
    }
    (out, problems)
}

/// The firmware a kernel carries in its own image (`CONFIG_EXTRA_FIRMWARE`, space-separated).
fn extra_firmware(config: Option<&str>) -> Vec<String> {
    let line = config.and_then(|c| c.lines().find_map(|l| l.trim().strip_prefix("CONFIG_EXTRA_FIRMWARE=")));
    line.map(|v| v.trim_matches('"').split_whitespace().map(str::to_string).collect()).unwrap_or_default()
}

/// The running system's kernel, as `check` without a ROOT reads it.
#[derive(Debug, Clone, Default)]
pub struct RunningKernel {
    /// The system's root: `/` (or `check --sysfs-root`).
    pub system: PathBuf,
    /// Its release: `proc/sys/kernel/osrelease`, what `uname -r` prints.
    pub release: Option<String>,
    /// The amdgpu driver of that release in the system's `lib/modules` (root index 0), or of
    /// every release when none is known, each with the parameters it runs with.
    pub drivers: Vec<DriverRecord>,
}

/// The parameters of amdgpu that decide which firmware it asks for.
const PARAMETERS: [&str; 4] = ["mes", "mes_kiq", "uni_mes", "fw_load_type"];

/// The kernel running on the system whose root is `system`: its release and its amdgpu
/// driver, with the parameters it runs with — a loaded driver's (`sys/module/amdgpu/
/// parameters`), else those the system would give it (`modprobe.d`, then the kernel's command
/// line). A root with no `proc/` (an image) runs no kernel: each of its kernels' drivers is
/// judged.
pub fn running(system: &Path) -> RunningKernel {
    let small = |abs: &str| {
        read_in_root(system, Path::new(abs), 4096).map(|b| String::from_utf8_lossy(&b).trim().to_string())
    };
    // A release names one folder: anything else is not believed.
    let release = small("/proc/sys/kernel/osrelease")
        .filter(|r| !r.is_empty() && !r.contains('/') && r != "." && r != "..");
    let (mut drivers, _) = drivers(system, 0, release.as_deref());
    let loaded = in_root(system, Path::new("/sys/module/amdgpu")).is_some_and(|p| p.is_dir());
    // A loaded driver's own parameters stand in for what the system sets; else the kernel's
    // command line goes on top of `modprobe.d` (already in each record).
    let running: Vec<(String, String)> = match loaded {
        true => PARAMETERS
            .iter()
            .filter_map(|p| small(&format!("/sys/module/amdgpu/parameters/{p}")).map(|v| (p.to_string(), v)))
            .collect(),
        false => {
            let cmdline = read_in_root(system, Path::new("/proc/cmdline"), 64 << 10).unwrap_or_default();
            command_line_parameters(&String::from_utf8_lossy(&cmdline))
        }
    };
    for d in &mut drivers {
        if loaded {
            d.parameters.clear();
        }
        d.parameters.extend(running.iter().cloned());
        d.parameters_running = loaded;
    }
    RunningKernel { system: system.to_path_buf(), release, drivers }
}

/// The folders modprobe reads its configuration from, first wins for a file name (kmod
/// libkmod-config.c `kmod_config_new`, man modprobe.d).
const MODPROBE_DIRS: [&str; 5] = [
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/lib/modprobe.d",
    "/usr/lib/modprobe.d",
];

/// The amdgpu parameters a root's modprobe configuration sets (`options amdgpu NAME=VALUE …`),
/// of those that decide its firmware, in the order modprobe applies them (files by name).
pub fn configured_parameters(root: &Path) -> Vec<(String, String)> {
    let mut files: std::collections::BTreeMap<String, PathBuf> = std::collections::BTreeMap::new();
    for dir in MODPROBE_DIRS {
        for name in list_in_root(root, Path::new(dir)).into_iter().filter(|n| n.ends_with(".conf")).take(1024)
        {
            files.entry(name.clone()).or_insert_with(|| Path::new(dir).join(name));
        }
    }
    let mut out = Vec::new();
    for path in files.values() {
        let Some(text) = read_in_root(root, path, 1 << 20) else { continue };
        for line in String::from_utf8_lossy(&text).lines() {
            let mut words = line.split_whitespace();
            if words.next() != Some("options") || words.next() != Some("amdgpu") {
                continue;
            }
            out.extend(words.filter_map(|w| known_parameter(w, "")));
        }
    }
    out
}

/// The amdgpu parameters the kernel's command line sets (`amdgpu.NAME=VALUE`).
fn command_line_parameters(cmdline: &str) -> Vec<(String, String)> {
    cmdline.split_whitespace().filter_map(|w| known_parameter(w, "amdgpu.")).collect()
}

/// `PREFIX NAME=VALUE` as a parameter that decides firmware, else none.
fn known_parameter(word: &str, prefix: &str) -> Option<(String, String)> {
    let (name, value) = word.strip_prefix(prefix)?.split_once('=')?;
    // The kernel takes `-` and `_` alike in parameter names (kernel/params.c `parameq`).
    let name = name.replace('-', "_");
    PARAMETERS.contains(&name.as_str()).then(|| (name, value.to_string()))
}

/// Every kernel release under `root` (release `only`, when given) with what it holds of amdgpu
/// (see [`module_of_release`]), each release once however its folder is reached.
pub fn amdgpu_modules(root: &Path, only: Option<&str>) -> Vec<Module> {
    let mut out = Vec::new();
    // With merged `/usr`, `lib` is a link to `usr/lib`: the same release is met under both,
    // and links may lead many release folders, or modules, to one: each is read once.
    let (mut seen, mut modules) = (std::collections::HashSet::new(), std::collections::HashSet::new());
    for base in MODULE_BASES {
        for release in list_in_root(root, Path::new(base)) {
            if only.is_some_and(|o| o != release) || seen.len() >= MAX_RELEASES {
                continue;
            }
            let dir = Path::new(base).join(&release);
            let Some(real) = in_root(root, &dir).filter(|d| d.is_dir()) else { continue };
            let Ok(meta) = real.metadata() else { continue };
            if !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            let Some((p, how)) = module_of_release(root, &dir) else { continue };
            let id = p.metadata().map(|m| (m.dev(), m.ino())).ok();
            if how == Holds::Module && id.is_some_and(|id| !modules.insert(id)) {
                continue;
            }
            let rel = p.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| p.clone());
            let config =
                read_in_root(root, &Path::new("/boot").join(format!("config-{release}")), MAX_CONFIG)
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
            let modinfo = match how {
                Holds::Module => read_modinfo(&p),
                Holds::BuiltIn => read_in_root(root, &dir.join("modules.builtin.modinfo"), MAX_DEP)
                    .map(|b| builtin_modinfo(&b, "amdgpu"))
                    .ok_or_else(|| "modules.builtin.modinfo: not a readable file".to_string()),
                Holds::Nothing => Ok(ModInfo::default()),
            };
            out.push(Module { path: rel, how, modinfo, config, release });
        }
    }
    out
}

/// What one release folder (`dir`, absolute inside `root`) holds of amdgpu, as modprobe finds
/// it, with its real path: the module `modules.dep` names (depmod wrote it after its search
/// order, which puts `updates/` — where DKMS installs AMD's amdgpu-dkms — before the kernel's
/// own: kmod tools/depmod.c `cfg_load`); else, in a folder depmod never ran in (an unpacked
/// package), the first of `updates/`, `extra/` and `kernel/`; else a built-in amdgpu
/// (`modules.builtin`); else, where depmod ran, nothing; else (nothing to go by) none.
fn module_of_release(root: &Path, dir: &Path) -> Option<(PathBuf, Holds)> {
    let is_amdgpu = |p: &str| {
        Path::new(p).file_name().and_then(|n| n.to_str()).is_some_and(|n| MODULE_NAMES.contains(&n))
    };
    let dep = read_in_root(root, &dir.join("modules.dep"), MAX_DEP);
    if let Some(dep) = &dep {
        let text = String::from_utf8_lossy(dep);
        let named =
            text.lines().filter_map(|l| l.split_once(':')).map(|(m, _)| m.trim()).find(|m| is_amdgpu(m));
        if let Some(m) = named {
            // Relative to the release folder (absolute in kmod before 8), looked up in the root.
            let abs = if m.starts_with('/') { PathBuf::from(m) } else { dir.join(m) };
            if let Some(real) = in_root(root, &abs).filter(|p| p.is_file()) {
                return Some((real, Holds::Module));
            }
        }
    } else {
        let mut search = Search { budget: MAX_ENTRIES, seen: std::collections::HashSet::new() };
        for sub in ["updates", "extra"] {
            if let Some(p) = find_module(root, &dir.join(sub), 0, &mut search) {
                return Some((p, Holds::Module));
            }
        }
        let own = dir.join("kernel/drivers/gpu/drm/amd/amdgpu");
        let found = MODULE_NAMES.iter().find_map(|n| in_root(root, &own.join(n)).filter(|p| p.is_file()));
        if let Some(p) = found {
            return Some((p, Holds::Module));
        }
    }
    let builtin = read_in_root(root, &dir.join("modules.builtin"), MAX_DEP);
    if builtin.is_some_and(|b| String::from_utf8_lossy(&b).lines().any(|l| is_amdgpu(l.trim()))) {
        return Some((
            root.join(dir.strip_prefix("/").unwrap_or(dir)).join("modules.builtin.modinfo"),
            Holds::BuiltIn,
        ));
    }
    dep.map(|_| (root.join(dir.strip_prefix("/").unwrap_or(dir)), Holds::Nothing))
}

/// The first amdgpu module under `dir` (absolute inside `root`), by name order, at most
/// [`MAX_DEPTH`] folders down, each folder once however many links lead to it, and
/// `search.budget` entries looked at in all (none left: the search stops).
fn find_module(root: &Path, dir: &Path, depth: u32, search: &mut Search) -> Option<PathBuf> {
    let real = in_root(root, dir)?;
    let meta = real.metadata().ok().filter(|m| m.is_dir())?;
    if search.budget == 0 || !search.seen.insert((meta.dev(), meta.ino())) {
        return None;
    }
    let mut names: Vec<String> = std::fs::read_dir(&real)
        .ok()?
        .flatten()
        .take(search.budget)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    search.budget -= names.len();
    names.sort();
    let module = names
        .iter()
        .filter(|n| MODULE_NAMES.contains(&n.as_str()))
        .find_map(|n| in_root(root, &dir.join(n)).filter(|p| p.is_file()));
    if module.is_some() || depth >= MAX_DEPTH {
        return module;
    }
    names.iter().find_map(|n| find_module(root, &dir.join(n), depth + 1, search))
}

/// What a search for a module has left: entries it may still look at, folders it has seen.
struct Search {
    budget: usize,
    seen: std::collections::HashSet<(u64, u64)>,
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn exists_in(root: &Path, rel: &str) -> bool {
        is_file_in_root(root, Path::new(rel))
    }

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
