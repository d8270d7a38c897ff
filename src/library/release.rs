//! Which ROCm release an install is: what its own files state (rocm-core's version file,
//! header or library name), else what its HIP runtime's version maps to in `targets.toml`'s
//! release table (one HIP version can be two releases: 6.4.2 and 6.4.3 both ship 6.4.43484).

use serde::Serialize;

use super::install::{install_of, Install};
use super::runtime_of;
use crate::model::{ReleaseSignal, Snapshot};
use crate::vocab::policy::Policy;

/// Where an install's release was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseSource {
    InfoVersion,
    VersionHeader,
    RocmCoreLibrary,
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
}

/// The release of `install`: its first stated release in path order (a version file before a
/// header, a header before a library name), else its HIP runtime's; `None` when neither is
/// there.
pub fn release_of(snap: &Snapshot, install: &Install, policy: &Policy) -> Option<InstallRelease> {
    let in_install =
        |root: usize, path: &str| &install_of(snap.root_given(root), path) == install || snap.one_program;
    let stated = snap
        .rocm_releases
        .iter()
        .filter(|m| in_install(m.path.root, &m.path.display(&snap.roots)))
        .min_by_key(|m| m.signal);
    if let Some(m) = stated {
        let three: Vec<&str> = m.version.split('.').take(3).collect();
        return Some(InstallRelease {
            stated: m.version.clone(),
            path: m.path.display(&snap.roots),
            source: m.signal.into(),
            releases: vec![three.join(".")],
        });
    }
    let (_, hip) = runtime_of(snap, install);
    let hip = hip?;
    let mut releases: Vec<String> =
        policy.releases_with_hip(&hip.version).iter().flat_map(|r| r.versions.iter().cloned()).collect();
    releases.sort_by_key(|v| std::cmp::Reverse(crate::vocab::policy::version_key(v)));
    Some(InstallRelease {
        stated: hip.version.clone(),
        path: hip.path.display(&snap.roots),
        source: ReleaseSource::HipRuntime,
        releases,
    })
}
