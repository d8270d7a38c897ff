//! Registry authentication: the `WWW-Authenticate` challenge a registry answers `401` with
//! (RFC 6750 `Bearer realm=…,service=…,scope=…`, or RFC 7617 `Basic`), and the credentials
//! `docker login` left in `$DOCKER_CONFIG/config.json` (else `~/.docker/config.json`): its
//! `auths` map, keyed by host or by URL, each `auth` the base64 of `user:password` (as
//! docker/cli's `configfile.ConfigFile.GetAuthConfig` reads it).

use base64::Engine;
use std::path::{Path, PathBuf};

/// What a registry asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// A token from `realm`, for `service` and `scope` (the distribution token protocol).
    Bearer { realm: String, service: Option<String>, scope: Option<String> },
    /// The user name and password on every request.
    Basic,
}

/// Reads a `WWW-Authenticate` header value; `None` for a scheme this client does not speak.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut realm = None;
    let mut service = None;
    let mut scope = None;
    for (k, v) in auth_params(params) {
        match k.to_ascii_lowercase().as_str() {
            "realm" => realm = Some(v),
            "service" => service = Some(v),
            "scope" => scope = Some(v),
            _ => {}
        }
    }
    Some(Challenge::Bearer { realm: realm?, service, scope })
}

/// `key=value` and `key="quoted, value"` pairs separated by commas (RFC 7235 auth-params).
fn auth_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else { break };
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (value, tail) = if let Some(q) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, q.get(end..).unwrap_or(""))
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after.get(..end).unwrap_or("").trim().to_string(), after.get(end..).unwrap_or(""))
        };
        out.push((key, value));
        rest = tail.trim_start().trim_start_matches(',').trim_start();
    }
    out
}

/// A user name and password for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials {{ user: {:?}, password: <hidden> }}", self.user)
    }
}

impl Credentials {
    /// The `Authorization` value for basic authentication.
    pub fn basic(&self) -> String {
        let raw = format!("{}:{}", self.user, self.password);
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(raw))
    }
}

/// The Docker configuration file: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
pub fn docker_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match env("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        Some(dir) => Some(Path::new(&dir).join("config.json")),
        None => env("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(".docker/config.json")),
    }
}

/// The credentials a Docker configuration file's `auths` hold for `registry` (as written in
/// the image reference: `docker.io` also matches Docker's `https://index.docker.io/v1/` key).
/// Keys may be a host or a URL of it (docker/cli `credentials.ConvertToHostname`).
pub fn credentials_for(config: &[u8], registry: &str) -> Result<Option<Credentials>, String> {
    let doc: serde_json::Value = serde_json::from_slice(config).map_err(|e| format!("not JSON: {e}"))?;
    let Some(auths) = doc.get("auths").and_then(|a| a.as_object()) else { return Ok(None) };
    let hostname = |key: &str| -> String {
        let k = key.strip_prefix("https://").or_else(|| key.strip_prefix("http://")).unwrap_or(key);
        k.split('/').next().unwrap_or(k).to_string()
    };
    let wanted =
        |h: &str| h == registry || (registry == super::reference::DOCKER_HUB && h == "index.docker.io");
    let Some(entry) = auths.iter().find(|(k, _)| wanted(&hostname(k))).map(|(_, v)| v) else {
        return Ok(None);
    };
    if let Some(auth) = entry.get("auth").and_then(|a| a.as_str()).filter(|a| !a.is_empty()) {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|e| format!("auths.{registry}.auth is not base64: {e}"))?;
        let text = String::from_utf8(raw).map_err(|_| format!("auths.{registry}.auth is not UTF-8"))?;
        let (user, password) =
            text.split_once(':').ok_or_else(|| format!("auths.{registry}.auth is not user:password"))?;
        return Ok(Some(Credentials { user: user.to_string(), password: password.to_string() }));
    }
    let field = |k: &str| entry.get(k).and_then(|v| v.as_str()).map(str::to_string);
    Ok(field("username").zip(field("password")).map(|(user, password)| Credentials { user, password }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn challenges_as_registries_send_them() {
        let h = r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:rocm/pytorch:pull""#;
        assert_eq!(
            parse_challenge(h),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
                scope: Some("repository:rocm/pytorch:pull".into()),
            })
        );
        let q = r#"bearer realm="http://a/t?x=1", scope="repository:a,b:pull""#;
        let Some(Challenge::Bearer { realm, scope, .. }) = parse_challenge(q) else { panic!() };
        assert_eq!((realm.as_str(), scope.as_deref()), ("http://a/t?x=1", Some("repository:a,b:pull")));
        assert_eq!(parse_challenge(r#"Basic realm="Registry Realm""#), Some(Challenge::Basic));
        assert_eq!(parse_challenge("Negotiate abc"), None);
        assert_eq!(parse_challenge("Bearer service=x"), None);
    }

    #[test]
    fn credentials_from_a_docker_config() {
        let auth = base64::engine::general_purpose::STANDARD.encode("ci:s3cr:et");
        let config = format!(
            r#"{{"auths": {{"https://localhost:5000/v2/": {{"auth": "{auth}"}}, "https://index.docker.io/v1/": {{"username": "u", "password": "p"}}}}}}"#
        );
        let c = credentials_for(config.as_bytes(), "localhost:5000").unwrap().unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str()), ("ci", "s3cr:et"));
        let d = credentials_for(config.as_bytes(), "docker.io").unwrap().unwrap();
        assert_eq!(d.user, "u");
        assert!(credentials_for(config.as_bytes(), "ghcr.io").unwrap().is_none());
        assert!(credentials_for(br#"{"auths": {"h": {"auth": "!!"}}}"#, "h").is_err());
        assert!(!format!("{c:?}").contains("s3cr"));
    }

    #[test]
    fn config_path_follows_docker_config() {
        let env = |k: &str| match k {
            "DOCKER_CONFIG" => Some("/etc/d".to_string()),
            "HOME" => Some("/home/u".to_string()),
            _ => None,
        };
        assert_eq!(docker_config_path(&env), Some(PathBuf::from("/etc/d/config.json")));
        let home = |k: &str| (k == "HOME").then(|| "/home/u".to_string());
        assert_eq!(docker_config_path(&home), Some(PathBuf::from("/home/u/.docker/config.json")));
    }
}
