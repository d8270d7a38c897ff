//! Image references and platforms as people type them: `HOST/NAME[:TAG|@DIGEST]` and
//! `OS/ARCH[/VARIANT]`, normalised as Docker's `distribution/reference` package does
//! (normalize.go `splitDockerDomain`: a first component with a `.` or `:`, `localhost`, or an
//! upper-case letter names the registry; else Docker Hub; `index.docker.io` is `docker.io`;
//! on Docker Hub a one-component name is `library/NAME`; no tag and no digest is `:latest`).

use std::fmt;

/// The registry Docker Hub names are served from (`reference.DefaultDomain`).
pub const DOCKER_HUB: &str = "docker.io";
/// Docker Hub's old name (`reference.legacyDefaultDomain`), read as [`DOCKER_HUB`].
const LEGACY_DOCKER_HUB: &str = "index.docker.io";
/// Where Docker Hub's registry API lives (`registry.IndexHostname` → `registry-1.docker.io`).
const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// An image in a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// The registry as written (`localhost:5000`, `docker.io`).
    pub registry: String,
    /// The repository inside it (`rocm/pytorch`, `library/ubuntu`).
    pub repository: String,
    /// The tag, when the reference names one (`latest` when it names neither tag nor digest).
    pub tag: Option<String>,
    /// The manifest digest, when the reference pins one (`sha256:…`).
    pub digest: Option<String>,
}

impl ImageRef {
    /// The host (and port) the registry API answers on.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// What a manifest request names: the digest when pinned, else the tag.
    pub fn manifest_ref(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).unwrap_or("latest")
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Reads `HOST/NAME[:TAG|@DIGEST]` (also `NAME:TAG@DIGEST`); `Err` says what is wrong.
pub fn parse_image_ref(text: &str) -> Result<ImageRef, String> {
    let bad = |why: &str| format!("image reference {text:?}: {why}");
    if text.is_empty() || text.len() > 4096 {
        return Err(bad("empty or too long"));
    }
    let (rest, digest) = match text.split_once('@') {
        Some((r, d)) => (r, Some(parse_digest(d).map_err(|e| bad(&e))?)),
        None => (text, None),
    };
    // A tag follows the last `:` after the last `/` (a `:` before it is a registry's port).
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest.get(slash..).and_then(|last| last.rfind(':')) {
        Some(i) => (rest.get(..slash + i).unwrap_or(rest), rest.get(slash + i + 1..).map(str::to_string)),
        None => (rest, None),
    };
    if let Some(t) = &tag {
        check_tag(t).map_err(|e| bad(&e))?;
    }
    let (mut registry, mut repository) = match name.split_once('/') {
        Some((first, path))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.bytes().any(|b| b.is_ascii_uppercase()) =>
        {
            (first.to_string(), path.to_string())
        }
        _ => (DOCKER_HUB.to_string(), name.to_string()),
    };
    if registry == LEGACY_DOCKER_HUB {
        registry = DOCKER_HUB.to_string();
    }
    if registry == DOCKER_HUB && !repository.contains('/') {
        repository = format!("library/{repository}");
    }
    check_host(&registry).map_err(|e| bad(&e))?;
    check_repository(&repository).map_err(|e| bad(&e))?;
    let tag = if tag.is_none() && digest.is_none() { Some("latest".to_string()) } else { tag };
    Ok(ImageRef { registry, repository, tag, digest })
}

/// `sha256:` and 64 lower-case hex digits: the only digest gfxscan checks bytes against (and
/// what registries use), so the only one it takes — a pin it could not check is refused, not
/// fetched unchecked.
pub fn parse_digest(d: &str) -> Result<String, String> {
    let hex = d
        .strip_prefix("sha256:")
        .ok_or_else(|| format!("{d:?} is not a sha256 digest (sha256: and 64 hex digits)"))?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(format!("{d:?} is not a digest (sha256: and 64 lower-case hex digits)"));
    }
    Ok(d.to_string())
}

/// A tag: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn check_tag(t: &str) -> Result<(), String> {
    let mut b = t.bytes();
    let first = b.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
    if first && t.len() <= 128 && b.all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(&c)) {
        Ok(())
    } else {
        Err(format!("tag {t:?} is not a tag ([A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})"))
    }
}

/// A registry host: a name or address, an optional port.
fn check_host(h: &str) -> Result<(), String> {
    let (name, port) = match h.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(']') || h.starts_with('[') => (n, Some(p)),
        _ => (h, None),
    };
    let name_ok =
        !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || b".-[]:".contains(&c));
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
    if name_ok && port_ok {
        Ok(())
    } else {
        Err(format!("registry {h:?} is not a host[:port]"))
    }
}

/// A repository: `/`-separated components of lower-case letters and digits, joined by `.`,
/// `_`, `__` or runs of `-` (the OCI distribution spec's name grammar).
fn check_repository(r: &str) -> Result<(), String> {
    let component = |c: &str| {
        let b = c.as_bytes();
        let edge = |x: Option<&u8>| x.is_some_and(|x| x.is_ascii_lowercase() || x.is_ascii_digit());
        edge(b.first())
            && edge(b.last())
            && b.iter().all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || b"._-".contains(x))
            && !c.contains("..")
            && !c.contains("___")
    };
    if !r.is_empty() && r.len() <= 255 && r.split('/').all(component) {
        Ok(())
    } else {
        Err(format!("repository {r:?} is not a repository name (lower-case, [a-z0-9._-] between slashes)"))
    }
}

/// A platform an image index is asked for: `OS/ARCH[/VARIANT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl Default for Platform {
    fn default() -> Self {
        Platform { os: "linux".into(), architecture: "amd64".into(), variant: None }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Platform {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split('/').collect();
        let ok =
            |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
        match parts.as_slice() {
            [os, arch] if ok(os) && ok(arch) => {
                Ok(Platform { os: os.to_string(), architecture: arch.to_string(), variant: None })
            }
            [os, arch, v] if ok(os) && ok(arch) && ok(v) => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: Some(v.to_string()),
            }),
            _ => Err(format!("{s:?} is not a platform (OS/ARCH[/VARIANT], e.g. linux/amd64)")),
        }
    }
}

impl Platform {
    /// True when an index entry's platform is this one. A variant asked for must match; none
    /// asked takes any (as containerd's default matcher does for amd64, which has none).
    pub fn matches(&self, os: Option<&str>, architecture: Option<&str>, variant: Option<&str>) -> bool {
        os == Some(self.os.as_str())
            && architecture == Some(self.architecture.as_str())
            && self.variant.as_deref().is_none_or(|v| variant == Some(v))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn r(s: &str) -> ImageRef {
        parse_image_ref(s).unwrap()
    }

    #[test]
    fn names_normalise_as_docker_does() {
        let u = r("ubuntu");
        assert_eq!(
            (u.registry.as_str(), u.repository.as_str(), u.tag.as_deref()),
            ("docker.io", "library/ubuntu", Some("latest"))
        );
        assert_eq!(u.api_host(), "registry-1.docker.io");
        let p = r("rocm/pytorch:rocm6.4_ubuntu24.04");
        assert_eq!((p.registry.as_str(), p.repository.as_str()), ("docker.io", "rocm/pytorch"));
        assert_eq!(p.tag.as_deref(), Some("rocm6.4_ubuntu24.04"));
        let l = r("localhost:5000/gfx/sample:v1");
        assert_eq!(
            (l.registry.as_str(), l.repository.as_str(), l.tag.as_deref()),
            ("localhost:5000", "gfx/sample", Some("v1"))
        );
        let h = r("localhost/sample");
        assert_eq!((h.registry.as_str(), h.tag.as_deref()), ("localhost", Some("latest")));
        let d = format!("ghcr.io/a/b@sha256:{}", "a".repeat(64));
        let d = r(&d);
        assert_eq!((d.registry.as_str(), d.tag.as_deref()), ("ghcr.io", None));
        assert_eq!(d.manifest_ref(), format!("sha256:{}", "a".repeat(64)));
        assert_eq!(r("ghcr.io/a/b:t").to_string(), "ghcr.io/a/b:t");
        // Review finding: Docker Hub names written with the domain, its old name, and an
        // upper-case first component (a registry, in Docker's rules).
        assert_eq!(r("docker.io/ubuntu").repository, "library/ubuntu");
        let old = r("index.docker.io/rocm/pytorch");
        assert_eq!((old.registry.as_str(), old.repository.as_str()), ("docker.io", "rocm/pytorch"));
        assert_eq!(r("Foo/bar").registry, "Foo");
        assert!(
            parse_image_ref(&format!("a/b@sha512:{}", "a".repeat(128))).is_err(),
            "an unchecked algorithm"
        );
    }

    #[test]
    fn malformed_references_say_why() {
        for bad in ["", "UPPER/Case", "a/b:", "a/b:-x", "a/b@sha256:abc", "host:99999/a", "a//b", "a/b@md5"] {
            assert!(parse_image_ref(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn platforms_parse_and_match() {
        let p: Platform = "linux/arm64/v8".parse().unwrap();
        assert!(p.matches(Some("linux"), Some("arm64"), Some("v8")));
        assert!(!p.matches(Some("linux"), Some("arm64"), None));
        let d = Platform::default();
        assert!(d.matches(Some("linux"), Some("amd64"), Some("v3")));
        assert!(!d.matches(Some("windows"), Some("amd64"), None));
        assert!("linux".parse::<Platform>().is_err());
    }
}
