//! Library identity across installs and versions: `librocblas.so.4` in `/opt/rocm-6.3.0/lib`
//! is the same library as `librocblas.so.5` in `/opt/rocm-7.2.0/lib` and Debian's
//! `usr/lib/x86_64-linux-gnu/librocblas.so.0.1`; an artifact folder is its family's unit
//! (`tensile:rocblas`, `miopen`). `diff` pairs libraries and files by it.

use crate::families::cataloger;
use crate::model::FileRecord;

/// Folder names that say where something is installed, not what it is.
const PREFIX_DIRS: &[&str] = &[
    "usr",
    "opt",
    "local",
    "lib",
    "lib64",
    "lib32",
    "x86_64-linux-gnu",
    "aarch64-linux-gnu",
    "rocm",
    "share",
];

fn version_like(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && s.bytes().any(|b| b.is_ascii_digit())
}

/// A folder name without a version (`rocm-6.3.0` → `rocm`, `llvm-17` → `llvm`).
fn unversioned(c: &str) -> &str {
    match c.rsplit_once('-') {
        Some((base, v)) if version_like(v) => base,
        _ => c,
    }
}

/// A library file name without its soversion (`librocblas.so.4.2` → `librocblas.so`).
fn unversioned_so(name: &str) -> &str {
    match name.find(".so.") {
        Some(i) if version_like(&name[i + 4..]) => &name[..i + 3],
        _ => name,
    }
}

/// The identity of a file across installs and versions.
///
/// Artifact families are folder units: `tensile:<rocblas|hipblaslt>`, `miopen`,
/// `firmware:<amdgpu|radeon>`, `bitcode`. Any other file: its path relative to the root with
/// install prefixes (`usr`, `opt`, `lib`, `x86_64-linux-gnu`, `rocm`, …), versions (`2.47.0`,
/// `rocm-6.3.0` → `rocm`) and everything up to `site-packages`/`dist-packages` removed, and its
/// soversion dropped.
pub fn identity(f: &FileRecord) -> String {
    match f.artifact.as_ref().and_then(|a| Some((a, a.family?))) {
        Some((a, family)) => cataloger(family).identity(a),
        None => path_identity(&f.path.path),
    }
}

/// The path part of [`identity`].
pub fn path_identity(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    let start =
        parts.iter().rposition(|p| *p == "site-packages" || *p == "dist-packages").map_or(0, |i| i + 1);
    let Some((name, dirs)) = parts[start..].split_last() else { return String::new() };
    let mut out: Vec<&str> = dirs
        .iter()
        .map(|d| unversioned(d))
        .filter(|d| !version_like(d) && !PREFIX_DIRS.contains(d) && !d.starts_with("python3"))
        .collect();
    out.push(unversioned_so(name));
    out.join("/")
}
