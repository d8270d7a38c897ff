//! Which ROCm release an install is: what its own files state (rocm-core's version file,
//! header or library name), else the release an AMD package's version carries, else what its
//! HIP runtime's version maps to in `targets.toml`'s release table (one HIP version can be two
//! releases: 6.4.2 and 6.4.3 both ship 6.4.43484).

use serde::Serialize;

use super::install::{install_of, Install};
use super::Model;
use crate::model::{Ecosystem, ReleaseSignal, Snapshot};
use crate::parse::release::amd_package_release;
use crate::vocab::policy::{Platform, Policy};

/// Where an install's release was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseSource {
    InfoVersion,
    VersionHeader,
    RocmCoreLibrary,
    /// The version of the AMD package (`.deb`) the install was read from.
    Package,
    /// The HIP runtime's version, looked up in the release table.
    HipRuntime,
}

impl From<ReleaseSignal> for ReleaseSource {
    fn from(s: ReleaseSignal) -> Self {
        match s {
            ReleaseSignal::InfoVersion => ReleaseSource::InfoVersion,
            ReleaseSignal::VersionHeader => ReleaseSource::VersionHeader,
            ReleaseSignal::RocmCoreLibrary => ReleaseSource::RocmCoreLibrary,
        }
    }
}

/// An install's ROCm release, as far as its files tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct InstallRelease {
    /// What the file states: a release (`6.4.1`) or, for a HIP runtime, its version.
    pub stated: String,
    /// The file that states it, as shown.
    pub path: String,
    pub source: ReleaseSource,
    /// The releases it is, newest first: one for a stated release, those whose HIP runtime
    /// has this version otherwise; empty when the release table has none.
    pub releases: Vec<String>,
    /// The system it runs on: Windows for AMD's HIP SDK folder or a HIP runtime DLL.
    pub platform: Platform,
    /// A version the table does not list, taken by its release line: what was not found and
    /// which release stands for it (`7.2.x: HIP build 53211 is not in the table; its newest 7.2
    /// release is 7.2.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

/// The release of `install`: its first stated release (a version file before a header, a
/// header before a library name), else the version of the AMD package it was read from, else
/// its HIP runtime's; `None` when none is there.
pub fn release_of(model: &Model, install: &Install, policy: &Policy) -> Option<InstallRelease> {
    let platform = platform_of(model, install);
    let mut found = stated_release(model, install, policy)?;
    found.platform = platform;
    Some(found)
}

/// Windows for AMD's HIP SDK folder (`…/AMD/ROCm/6.2`) or an install whose HIP runtime is a DLL.
fn platform_of(model: &Model, install: &Install) -> Platform {
    let dll = model.hip_runtime_of(install).is_some_and(|r| r.path.file_name().ends_with(".dll"));
    if dll || crate::library::install::is_hip_sdk_install(&install.path) {
        Platform::Windows
    } else {
        Platform::Linux
    }
}

/// [`release_of`] without its platform.
fn stated_release(model: &Model, install: &Install, policy: &Policy) -> Option<InstallRelease> {
    let snap = model.snapshot();
    let one_program = model.context().one_program;
    let in_install =
        |root: usize, path: &str| &install_of(snap.root_given(root), path) == install || one_program;
    let stated = snap
        .rocm_releases
        .iter()
        .filter(|m| in_install(m.path.root, &m.path.display(&snap.roots)))
        .min_by_key(|m| m.signal);
    if let Some(m) = stated {
        let three = m.version.split('.').take(3).collect::<Vec<&str>>().join(".");
        let listed =
            policy.release(Platform::Linux, &three).is_some() || policy.therock_release(&three).is_some();
        let mut found = InstallRelease {
            stated: m.version.clone(),
            path: m.path.display(&snap.roots),
            source: m.signal.into(),
            releases: vec![three],
            platform: Platform::Linux,
            line: None,
        };
        if !listed {
            by_line(&mut found, policy);
        }
        return Some(found);
    }
    if let Some(r) = package_release(snap, install, policy) {
        return Some(r);
    }
    let hip = model.hip_runtime_of(install)?;
    let mut releases: Vec<String> =
        policy.releases_with_hip(&hip.version).iter().flat_map(|r| r.versions.iter().cloned()).collect();
    releases.sort_by_key(|v| std::cmp::Reverse(crate::vocab::policy::version_key(v)));
    let mut found = InstallRelease {
        stated: hip.version.clone(),
        path: hip.path.display(&snap.roots),
        source: ReleaseSource::HipRuntime,
        releases,
        platform: Platform::Linux,
        line: None,
    };
    if found.releases.is_empty() {
        by_line(&mut found, policy);
    }
    Some(found)
}

/// A version the table does not list (a HIP build, a patch release) taken as the newest release
/// of its line the table does list, said so; unchanged when the table has none of that line.
fn by_line(found: &mut InstallRelease, policy: &Policy) {
    let Some(newest) = policy.newest_of_line(Platform::Linux, &found.stated) else { return };
    let mut parts = found.stated.split('.');
    let line = format!("{}.{}", parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let what = match found.source {
        ReleaseSource::HipRuntime => format!("HIP build {}", parts.next().unwrap_or_default()),
        _ => found.stated.clone(),
    };
    found.line =
        Some(format!("{line}.x: {what} is not in the table; its newest {line} release there is {newest}"));
    found.releases = vec![newest];
}

/// The release of the AMD `.deb` an install was read from (`rocblas_4.4.1.60401-83…`): an
/// install inside a package is the package's. Only a release the table knows (AMD's or
/// TheRock's) is taken: any package versioned `a.b.c.NNNNN` would decode to some number.
fn package_release(snap: &Snapshot, install: &Install, policy: &Policy) -> Option<InstallRelease> {
    let known =
        |v: &String| policy.release(Platform::Linux, v).is_some() || policy.therock_release(v).is_some();
    snap.archives.iter().find_map(|a| {
        let p = a.package.as_ref().filter(|p| p.ecosystem == Ecosystem::Deb)?;
        let shown = a.path.display(&snap.roots);
        let inside = install.path == shown || install.path.starts_with(&format!("{shown}!/"));
        let release = inside.then(|| amd_package_release(&p.version)).flatten().filter(known)?;
        Some(InstallRelease {
            stated: format!("{} {}", p.name, p.version),
            path: shown,
            source: ReleaseSource::Package,
            releases: vec![release],
            platform: Platform::Linux,
            line: None,
        })
    })
}
