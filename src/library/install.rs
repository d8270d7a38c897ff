//! Installs: which install a library belongs to, from its path alone. Pure.
//!
//! `check` gives one verdict per install, so a leftover old ROCm never fails the check of the
//! new one, and two roots are never mixed into one answer. An install is the nearest enclosing
//! one of, innermost first: a Python distribution (`…/site-packages/<package>`, or
//! `dist-packages`; TheRock's `rocm-sdk` packages together are one install), an Ollama folder (`…/ollama`), a ROCm prefix (`…/rocm` or `…/rocm-<version>`),
//! a system prefix (`…/usr`, Debian's packages), else the root itself (a folder, a package or
//! an image given as ROOT).

use serde::Serialize;

/// What kind of install a path lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InstallKind {
    /// `/opt/rocm`, `/opt/rocm-7.2.0`.
    Rocm,
    /// A distribution's `/usr` (Debian's ROCm packages).
    System,
    /// One package in a Python environment's `site-packages`.
    Python,
    /// TheRock's `rocm-sdk` wheels in one Python environment (`_rocm_sdk_core`,
    /// `_rocm_sdk_libraries_<family>`, `_rocm_sdk_devel`, `rocm_sdk`): one ROCm, split over packages.
    RocmSdk,
    /// An Ollama folder with its bundled libraries.
    Ollama,
    /// A root that is none of the above.
    Root,
}

impl InstallKind {
    /// Its word, as the JSON spells it.
    pub fn word(self) -> &'static str {
        match self {
            InstallKind::Rocm => "rocm",
            InstallKind::System => "system",
            InstallKind::Python => "python",
            InstallKind::RocmSdk => "rocm-sdk",
            InstallKind::Ollama => "ollama",
            InstallKind::Root => "root",
        }
    }
}

/// True when `path` (an install's, as shown) is a version folder of AMD's HIP SDK for Windows
/// (`…/AMD/ROCm/6.2`).
pub fn is_hip_sdk_install(path: &str) -> bool {
    let mut parts = path.trim_end_matches('/').rsplit('/');
    let (name, parent) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    is_hip_sdk_dir(parent, name)
}

/// The install a library belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
pub struct Install {
    /// Its path, as shown (the root as given, joined with the folders inside it).
    pub path: String,
    pub kind: InstallKind,
}

impl Install {
    /// `library` (a displayed path) named inside this install: without the install's path and
    /// the `/` or `!/` (an archive's members) after it; as it is when it lies elsewhere.
    pub fn inner<'a>(&self, library: &'a str) -> &'a str {
        let base = self.path.trim_end_matches('/');
        let rest =
            library.strip_prefix(base).and_then(|r| r.strip_prefix("!/").or_else(|| r.strip_prefix('/')));
        rest.filter(|r| !r.is_empty()).unwrap_or(library)
    }
}

/// True for the packages TheRock's `rocm`, `rocm-sdk-core`, `rocm-sdk-devel` and
/// `rocm-sdk-libraries-<family>` wheels install (`_rocm_sdk_core`, `_rocm_sdk_devel`,
/// `_rocm_sdk_libraries_gfx1151`, `rocm_sdk`).
fn is_rocm_sdk_package(name: &str) -> bool {
    name.starts_with("_rocm_sdk_") || name == "rocm_sdk" || name.starts_with("rocm_sdk_")
}

/// True for the version folder of AMD's HIP SDK for Windows (`…/AMD/ROCm/6.2`), which keeps
/// its DLLs and `rocblas/library` in `bin`.
fn is_hip_sdk_dir(parent: &str, name: &str) -> bool {
    parent == "ROCm" && name.starts_with(|c: char| c.is_ascii_digit())
}

/// True for `rocm` and `rocm-<version>` (`rocm-7.2.0`, `rocm-6.4.1-123`).
fn is_rocm_dir(name: &str) -> bool {
    name == "rocm" || name.strip_prefix("rocm-").is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
}

/// The kind of install a root is by its own name (`/opt/rocm-7.2.0`, `/usr/lib/ollama`).
fn root_kind(root: &str) -> InstallKind {
    let mut names = root.trim_end_matches('/').rsplit('/');
    let (name, parent) = (names.next().unwrap_or(""), names.next().unwrap_or(""));
    if matches!(parent, "site-packages" | "dist-packages") || is_wheel(name) {
        InstallKind::Python
    } else if name == "ollama" {
        InstallKind::Ollama
    } else if is_rocm_dir(name) {
        InstallKind::Rocm
    } else if name == "usr" {
        InstallKind::System
    } else {
        InstallKind::Root
    }
}

/// True for a Python wheel read as a tree (`torch-2.5.0+rocm6.2-cp311-…whl`): one
/// distribution, one install, whatever its members' paths.
fn is_wheel(name: &str) -> bool {
    name.trim_end_matches('!').to_ascii_lowercase().ends_with(".whl")
}

/// The install holding `path`, a library's displayed path; `root` is the displayed root it
/// was found under, which no install reaches above.
pub fn install_of(root: &str, path: &str) -> Install {
    let inner = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<&str> = inner.split('/').filter(|p| !p.is_empty()).collect();
    let at = |i: usize, kind| {
        // An archive read as a tree ends its part in `!` (`a.whl!/pkg/lib.so`): the install is
        // the archive.
        let joined = parts[..=i].join("/").trim_end_matches('!').to_string();
        let path = match root {
            "" => joined,
            r if r.ends_with('/') => format!("{r}{joined}"),
            r => format!("{r}/{joined}"),
        };
        Install { path, kind }
    };
    // The folders a library lies in: its last part is the library itself (or, for folder
    // libraries shown with a trailing `/`, nothing).
    let dirs = if path.ends_with('/') { parts.len() } else { parts.len().saturating_sub(1) };
    let found = (0..dirs).rev().find_map(|i| {
        let p = parts[i];
        if i > 0 && matches!(parts[i - 1], "site-packages" | "dist-packages") {
            return Some((
                i,
                if is_rocm_sdk_package(p) { InstallKind::RocmSdk } else { InstallKind::Python },
            ));
        }
        if p == "ollama" {
            return Some((i, InstallKind::Ollama));
        }
        // A wheel is one distribution, however many unrelated wheels share a folder.
        if is_wheel(p) {
            return Some((i, InstallKind::Python));
        }
        None
    });
    // A root that is itself a Python package or an Ollama folder holds its `rocm` folder.
    if found.is_none() && matches!(root_kind(root), InstallKind::Python | InstallKind::Ollama) {
        return Install { path: root.to_string(), kind: root_kind(root) };
    }
    let found = found
        .or_else(|| (0..dirs).rev().find(|&i| is_rocm_dir(parts[i])).map(|i| (i, InstallKind::Rocm)))
        .or_else(|| {
            (1..dirs).rev().find(|&i| is_hip_sdk_dir(parts[i - 1], parts[i])).map(|i| (i, InstallKind::Rocm))
        })
        .or_else(|| (0..dirs).rev().find(|&i| parts[i] == "usr").map(|i| (i, InstallKind::System)));
    match found {
        // The rocm-sdk packages are named together: `…/site-packages/_rocm_sdk_*`.
        Some((i, InstallKind::RocmSdk)) => {
            let mut install = at(i, InstallKind::RocmSdk);
            if let Some((dir, _)) = install.path.rsplit_once('/') {
                install.path = format!("{dir}/_rocm_sdk_*");
            }
            install
        }
        Some((i, kind)) => at(i, kind),
        None => Install { path: root.to_string(), kind: root_kind(root) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of wheels is an install per wheel (issue 23: 18 unrelated wheels were judged as
    /// one install), and a wheel named as the root is one Python install.
    #[test]
    fn kinds_are_named_as_the_json_names_them() {
        for k in [
            InstallKind::Rocm,
            InstallKind::System,
            InstallKind::Python,
            InstallKind::RocmSdk,
            InstallKind::Ollama,
            InstallKind::Root,
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.word());
        }
        assert!(is_hip_sdk_install("C/Program Files/AMD/ROCm/6.2"));
        assert!(!is_hip_sdk_install("opt/rocm"));
    }

    #[test]
    fn every_wheel_is_its_own_install() {
        let a = install_of("/dl", "/dl/cupy_rocm_5_0-13.3.0.whl/cupy/cuda/cub.so");
        let b = install_of("/dl", "/dl/cupy_rocm_4_0-10.6.0.whl/cupy/cuda/cub.so");
        assert_eq!((a.path.as_str(), a.kind), ("/dl/cupy_rocm_5_0-13.3.0.whl", InstallKind::Python));
        assert_ne!(a, b);
        // As scanned: the members of a wheel in a folder are `<wheel>!/<member>`.
        let c = install_of("wheels", "wheels/cupy_rocm_4_0-10.6.0.whl!/cupy/cuda/cub.so");
        assert_eq!((c.path.as_str(), c.kind), ("wheels/cupy_rocm_4_0-10.6.0.whl", InstallKind::Python));
        assert_eq!(c.inner("wheels/cupy_rocm_4_0-10.6.0.whl!/cupy/cuda/cub.so"), "cupy/cuda/cub.so");
        assert_eq!(a.inner("/dl/cupy_rocm_5_0-13.3.0.whl/cupy/cuda/cub.so"), "cupy/cuda/cub.so");
        assert_eq!(a.inner("/elsewhere/lib.so"), "/elsewhere/lib.so");
        let whole = install_of("/dl/x-1.0.whl", "/dl/x-1.0.whl/x/lib.so");
        assert_eq!((whole.path.as_str(), whole.kind), ("/dl/x-1.0.whl", InstallKind::Python));
    }

    /// AMD's HIP SDK for Windows: `C:\\Program Files\\AMD\\ROCm\\6.2\\bin\\rocblas.dll`, as scanned from
    /// an unpacked copy, is one ROCm install per version.
    #[test]
    fn the_hip_sdk_for_windows_is_a_rocm_install() {
        let i = install_of("/mnt/c", "/mnt/c/Program Files/AMD/ROCm/6.2/bin/rocblas/library/");
        assert_eq!((i.path.as_str(), i.kind), ("/mnt/c/Program Files/AMD/ROCm/6.2", InstallKind::Rocm));
    }

    /// TheRock wheels: `rocm-sdk-core` and `rocm-sdk-libraries-gfx1151` install two packages of
    /// one ROCm; a check judges them together, apart from torch beside them.
    #[test]
    fn rocm_sdk_packages_are_one_install() {
        let sp = "/venv/lib/python3.12/site-packages";
        let core = install_of("/venv", &format!("{sp}/_rocm_sdk_core/lib/libamdhip64.so"));
        let libs = install_of("/venv", &format!("{sp}/_rocm_sdk_libraries_gfx1151/lib/rocblas/library/"));
        assert_eq!(core, libs);
        assert_eq!(
            (core.path.as_str(), core.kind),
            (format!("{sp}/_rocm_sdk_*").as_str(), InstallKind::RocmSdk)
        );
        let torch = install_of("/venv", &format!("{sp}/torch/lib/libtorch_hip.so"));
        assert_eq!(torch.kind, InstallKind::Python);
    }

    fn of(root: &str, path: &str) -> (String, InstallKind) {
        let i = install_of(root, path);
        (i.path, i.kind)
    }

    #[test]
    fn libraries_group_by_their_install() {
        use InstallKind::*;
        assert_eq!(of("/", "/opt/rocm-6.2.0/lib/librocblas.so.4"), ("/opt/rocm-6.2.0".into(), Rocm));
        assert_eq!(of("/opt/rocm", "/opt/rocm/lib/rocblas/library/"), ("/opt/rocm".into(), Rocm));
        assert_eq!(of("sample", "sample/opt/rocm/lib/hipblaslt/library/"), ("sample/opt/rocm".into(), Rocm));
        assert_eq!(
            of("sample", "sample/venv/lib/python3.12/site-packages/jax_rocm7_plugin/_prng.so"),
            ("sample/venv/lib/python3.12/site-packages/jax_rocm7_plugin".into(), Python)
        );
        assert_eq!(of("r", "r/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/"), ("r/usr".into(), System));
        assert_eq!(
            of("/usr/lib/ollama", "/usr/lib/ollama/rocm/libggml-hip.so"),
            ("/usr/lib/ollama".into(), Ollama)
        );
        // A venv inside a ROCm prefix is its own install; a root that is one folder is one install.
        assert_eq!(
            of("x", "x/opt/rocm/lib/python3/site-packages/torch/lib/libtorch_hip.so"),
            ("x/opt/rocm/lib/python3/site-packages/torch".into(), Python)
        );
        assert_eq!(of("libs", "libs/libfoo.so"), ("libs".into(), Root));
        assert_eq!(of("libfoo.so", "libfoo.so"), ("libfoo.so".into(), Root));
        // No install reaches above its root, and a library named like a prefix is not one.
        assert_eq!(of("/opt/rocm/lib", "/opt/rocm/lib/librocm-core.so"), ("/opt/rocm/lib".into(), Root));
        assert_eq!(of("d", "d/rocm-smi"), ("d".into(), Root));
    }
}
