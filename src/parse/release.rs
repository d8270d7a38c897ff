//! The ROCm release an install says it is: rocm-core's version file, its version header, and
//! the version its library's name encodes.
//!
//! rocm-core (ROCm/rocm-core `CMakeLists.txt`) writes `<prefix>/.info/version` (the release,
//! `6.4.1`, with the build number after a `-` in AMD's packages: `6.4.1-83`), installs
//! `include/rocm-core/rocm_version.h` with `ROCM_VERSION_MAJOR`/`_MINOR`/`_PATCH`, and names
//! its library `librocm-core.so.1.0.<LIBPATCH>`, where `utils.cmake` makes LIBPATCH
//! major × 10000 + minor × 100 + patch (60401 for 6.4.1). The HIP runtime's own version
//! (`libamdhip64.so.6.4.43484`) is not a release number: `vocab::policy` maps it.

/// rocm-core's version file, from an install's top.
pub const INFO_VERSION: &str = ".info/version";

/// rocm-core's version header, from an install's top.
pub const VERSION_HEADER: &str = "include/rocm-core/rocm_version.h";

/// The most of either file read: real ones are a few hundred bytes.
pub const MAX_VERSION_FILE: u64 = 16 << 10;

use crate::vocab::policy::is_version as is_release;

/// The release `.info/version` states: its first line, less a `-build` suffix.
pub fn info_version(bytes: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "ROCm .info/version is not text".to_string())?;
    let line = text.lines().next().unwrap_or("").trim();
    let version = line.split('-').next().unwrap_or("");
    if is_release(version) {
        Ok(version.to_string())
    } else {
        Err(format!("ROCm .info/version {:?} is not a release number", shorten(line)))
    }
}

/// The release `rocm_version.h` defines (`ROCM_VERSION_MAJOR` …).
pub fn version_header(bytes: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(bytes);
    let define = |name: &str| {
        text.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("#define") && words.next() == Some(name)).then(|| words.next()).flatten()
        })
    };
    let parts = ["ROCM_VERSION_MAJOR", "ROCM_VERSION_MINOR", "ROCM_VERSION_PATCH"].map(define);
    match parts {
        [Some(a), Some(b), Some(c)] if is_release(&format!("{a}.{b}.{c}")) => Ok(format!("{a}.{b}.{c}")),
        _ => Err("rocm_version.h does not define ROCM_VERSION_MAJOR, _MINOR and _PATCH as numbers".into()),
    }
}

/// The release `librocm-core.so.1.0.<LIBPATCH>` encodes (`60401` → `6.4.1`).
pub fn rocm_core_version(file_name: &str) -> Option<String> {
    release_of_libpatch(file_name.strip_prefix("librocm-core.so.1.0.")?)
}

/// The release a LIBPATCH number spells (utils.cmake: major × 10000 + minor × 100 + patch):
/// five or six digits.
fn release_of_libpatch(libpatch: &str) -> Option<String> {
    if !(5..=6).contains(&libpatch.len()) || !libpatch.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = libpatch.parse().ok()?;
    Some(format!("{}.{}.{}", n / 10000, n / 100 % 100, n % 100))
}

/// The release an AMD ROCm package's version carries: `<module version>.<release version>-<build
/// id>` (rocm-install-on-linux docs/reference/package-manager-integration.rst @docs/6.2.4:
/// "`50400` points to the ROCm 5.4.0 release"), as in `4.4.1.60401-83~22.04` → `6.4.1`. `None`
/// for other versions (Debian's own packages: `6.4.4-4`).
pub fn amd_package_release(version: &str) -> Option<String> {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.split('-').next()?;
    let parts: Vec<&str> = upstream.split('.').collect();
    match parts.as_slice() {
        [_, _, _, .., last] if parts.len() >= 4 => release_of_libpatch(last),
        _ => None,
    }
}

fn shorten(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_file_gives_its_release_without_the_build() {
        assert_eq!(info_version(b"6.4.1-83\n").as_deref(), Ok("6.4.1"));
        assert_eq!(info_version(b"7.2.0\n").as_deref(), Ok("7.2.0"));
        assert_eq!(info_version(b"6.2.0.60200\n").as_deref(), Ok("6.2.0.60200"));
        for bad in [&b""[..], b"six\n", b"6.4\n", b"\xff\xfe", b"6.4.1.2.3"] {
            assert!(info_version(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_header_gives_major_minor_patch() {
        let h = b"#ifndef _ROCM_VERSION_H_\n#define ROCM_VERSION_MAJOR   6\n#define ROCM_VERSION_MINOR 4\n#define ROCM_VERSION_PATCH 1\n#define ROCM_BUILD_INFO \"6.4.1.0-83\"\n";
        assert_eq!(version_header(h).as_deref(), Ok("6.4.1"));
        assert!(version_header(b"#define ROCM_VERSION_MAJOR 6\n").is_err());
        assert!(version_header(b"#define ROCM_VERSION_MAJOR @VERSION_MAJOR@\n#define ROCM_VERSION_MINOR 1\n#define ROCM_VERSION_PATCH 0").is_err());
    }

    #[test]
    fn an_amd_package_version_carries_its_release() {
        assert_eq!(amd_package_release("4.4.1.60401-83~22.04").as_deref(), Some("6.4.1"));
        assert_eq!(amd_package_release("5.4.22801.50400-72").as_deref(), Some("5.4.0"));
        assert_eq!(amd_package_release("1:6.4.1.60401-83").as_deref(), Some("6.4.1"));
        assert_eq!(amd_package_release("6.4.4-4"), None, "Debian's own");
        assert_eq!(amd_package_release("6.4.4.1-4"), None);
    }

    #[test]
    fn the_library_name_encodes_the_release_as_utils_cmake_does() {
        assert_eq!(rocm_core_version("librocm-core.so.1.0.60401").as_deref(), Some("6.4.1"));
        assert_eq!(rocm_core_version("librocm-core.so.1.0.70200").as_deref(), Some("7.2.0"));
        assert_eq!(rocm_core_version("librocm-core.so.1"), None);
        assert_eq!(rocm_core_version("librocm-core.so.1.0.6x401"), None);
    }
}
