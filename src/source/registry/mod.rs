//! Images straight from a registry: the pull side of the OCI distribution spec, without a
//! daemon and without writing anything. `resolve` probes `/v2/`, authenticates as the
//! registry's challenge asks (anonymous or with `docker login`'s credentials), reads the
//! manifest (an index or Docker manifest list is narrowed to one platform) and hands back the
//! image's layers as [`Blob`]s; each blob is fetched when it is opened and checked against its
//! digest and size as it streams (the last read of a blob that does not match fails).

pub mod auth;
pub mod blob;
pub mod reference;

use std::io::{self, Read};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use auth::{Challenge, Credentials};
pub use blob::Blob;
pub use reference::{parse_image_ref, ImageRef, Platform};

/// The manifest kinds asked for, OCI and Docker's (the `Accept` header of a manifest request).
const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.oci.image.manifest.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.docker.distribution.manifest.v2+json";
/// The largest manifest, index, config or token document read (the distribution registry
/// refuses manifests over 4 MiB).
const MAX_DOCUMENT: u64 = 4 << 20;
/// Most times one request is sent again after `429` or `503`.
const MAX_RETRIES: u32 = 4;
/// Longest wait a `Retry-After` is honoured for; longer ones end the request.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// Indexes nested in indexes followed at most.
const MAX_INDEX_DEPTH: u32 = 4;

/// How images are fetched.
#[derive(Debug, Clone, Default)]
pub struct Fetching {
    /// The platform an image index is narrowed to.
    pub platform: Platform,
    /// Registries spoken to over plain HTTP (`--insecure-registry HOST[:PORT]`).
    pub insecure: Vec<String>,
    /// The largest layer member held whole in memory while it is read, so that a parser that
    /// reads it backwards (an ELF's section table sits at its end) does not fetch the layer
    /// again (see `source::origin::ReplaySource`); set from the scan's memory aim.
    pub hold: u64,
}

/// Why an image could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{url}: {why}")]
    Unreachable { url: String, why: String },
    #[error("{what}: not found (404) in {registry}")]
    NotFound { what: String, registry: String },
    #[error("{what}: access denied ({status}){hint}")]
    Denied { what: String, status: u16, hint: String },
    #[error("{what}: the registry answered {status}")]
    Status { what: String, status: u16 },
    #[error("{what}: {why}")]
    Document { what: String, why: String },
    #[error("{0}: no manifest for platform {1} (it has: {2}); --platform chooses another")]
    NoPlatform(String, String, String),
    #[error("Docker configuration {path}: {why}")]
    Config { path: String, why: String },
}

/// A registry session for one repository: where it is, and the authorization it holds.
pub struct Client {
    agent: ureq::Agent,
    base: String,
    image: ImageRef,
    credentials: Option<Credentials>,
    authorization: Mutex<Option<String>>,
    /// Told each count of blob bytes received (a progress bar).
    meter: OnceLock<Meter>,
}

/// What is told each count of bytes received.
pub type Meter = Arc<dyn Fn(u64) + Send + Sync>;

/// An image resolved to one manifest: what it is and its layers, bottom first.
pub struct RemoteImage {
    pub reference: ImageRef,
    /// The digest of the image manifest read (for an index: the entry chosen).
    pub digest: String,
    /// The digest of the index it was chosen from, when the reference named one.
    pub index_digest: Option<String>,
    /// The platform: the index entry's, else the image config's.
    pub platform: Option<String>,
    /// `oci-image` or `docker-image`, by the manifest's media type.
    pub format: &'static str,
    pub layers: Vec<Arc<Blob>>,
}

impl RemoteImage {
    /// Tells `meter` of every count of layer bytes received from now on.
    pub fn on_bytes(&self, meter: Meter) {
        if let Some(b) = self.layers.first() {
            let _ = b.client.meter.set(meter);
        }
    }
}

/// Reads the credentials `docker login` stored for `registry`, if any.
fn stored_credentials(registry: &str) -> Result<Option<Credentials>, RegistryError> {
    let env = |k: &str| std::env::var(k).ok();
    let Some(path) = auth::docker_config_path(&env) else { return Ok(None) };
    let text = match crate::source::file::read_small(&path, MAX_DOCUMENT) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RegistryError::Config { path: path.display().to_string(), why: e.to_string() }),
    };
    auth::credentials_for(&text, registry)
        .map_err(|why| RegistryError::Config { path: path.display().to_string(), why })
}

/// Resolves `image` to one manifest for `how.platform`, and its layers.
pub fn resolve(image: &ImageRef, how: &Fetching) -> Result<RemoteImage, RegistryError> {
    let insecure = how.insecure.iter().any(|h| h == &image.registry || h == image.api_host());
    let scheme = if insecure { "http" } else { "https" };
    let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::PlatformVerifier).build();
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(tls)
        .max_redirects(10)
        // A redirect within the registry keeps its authorization; one to another host (blob
        // storage) or down to plain HTTP never does.
        .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(120)))
        .timeout_per_read(Some(Duration::from_secs(120)))
        .user_agent(concat!("gfxscan/", env!("CARGO_PKG_VERSION")))
        .build();
    let client = Arc::new(Client {
        agent: config.into(),
        base: format!("{scheme}://{}", image.api_host()),
        image: image.clone(),
        credentials: stored_credentials(&image.registry)?,
        authorization: Mutex::new(None),
        meter: OnceLock::new(),
    });
    client.probe()?;
    let (mut body, mut digest, mut media) = client.manifest(image.manifest_ref())?;
    let mut index_digest = None;
    let mut platform = None;
    for _ in 0..MAX_INDEX_DEPTH {
        let doc = json(&body, &digest)?;
        let media_type = doc.get("mediaType").and_then(|m| m.as_str()).map(str::to_string).or(media.clone());
        if !is_index(media_type.as_deref(), &doc) {
            let image = image_of(&client, &doc, digest, index_digest, platform, media_type.as_deref())
                .and_then(|i| same_platform(i, &how.platform));
            return image.map(|mut i| {
                for b in &mut i.layers {
                    if let Some(b) = Arc::get_mut(b) {
                        b.hold = how.hold;
                    }
                }
                i
            });
        }
        let (chosen, said) = choose(&doc, &how.platform, image)?;
        index_digest.get_or_insert(digest);
        platform = Some(said);
        (body, digest, media) = client.manifest(&chosen)?;
        if digest != chosen {
            return Err(RegistryError::Document {
                what: format!("{image}: manifest {chosen}"),
                why: format!("its bytes are {digest}: the registry sent another manifest"),
            });
        }
    }
    Err(RegistryError::Document { what: image.to_string(), why: "indexes nested too deep".into() })
}

/// An image that is not in an index is refused when its configuration names another platform
/// than the one asked for (as containerd's pull does: "no match for platform in manifest").
fn same_platform(image: RemoteImage, want: &Platform) -> Result<RemoteImage, RegistryError> {
    let Some(p) = image.platform.as_deref().filter(|_| image.index_digest.is_none()) else {
        return Ok(image);
    };
    let mut parts = p.split('/');
    let (os, arch, variant) = (parts.next(), parts.next(), parts.next());
    if want.matches(os, arch, variant) {
        Ok(image)
    } else {
        Err(RegistryError::NoPlatform(image.reference.to_string(), want.to_string(), p.to_string()))
    }
}

fn json(body: &[u8], what: &str) -> Result<serde_json::Value, RegistryError> {
    serde_json::from_slice(body)
        .map_err(|e| RegistryError::Document { what: what.to_string(), why: e.to_string() })
}

/// True for an OCI index or a Docker manifest list: by its media type when that is one of the
/// manifest kinds, else by its shape (`manifests` and no `layers`: an index served as
/// `application/json`).
fn is_index(media_type: Option<&str>, doc: &serde_json::Value) -> bool {
    match media_type {
        Some(m) if m.contains("image.index") || m.contains("manifest.list") => true,
        Some(m) if m.contains("image.manifest") || m.contains("distribution.manifest.v2") => false,
        _ => doc.get("manifests").is_some() && doc.get("layers").is_none(),
    }
}

/// The index entry for `platform`: its digest and its platform as text.
fn choose(
    doc: &serde_json::Value,
    platform: &Platform,
    image: &ImageRef,
) -> Result<(String, String), RegistryError> {
    let bad = |why: &str| RegistryError::Document { what: image.to_string(), why: why.to_string() };
    let entries =
        doc.get("manifests").and_then(|m| m.as_array()).ok_or_else(|| bad("index without manifests"))?;
    let said = |e: &serde_json::Value| {
        let f = |k: &str| e.pointer(&format!("/platform/{k}")).and_then(|v| v.as_str()).map(str::to_string);
        (f("os"), f("architecture"), f("variant"))
    };
    let text = |(os, arch, variant): &(Option<String>, Option<String>, Option<String>)| {
        let mut t = format!("{}/{}", os.as_deref().unwrap_or("?"), arch.as_deref().unwrap_or("?"));
        if let Some(v) = variant {
            t.push('/');
            t.push_str(v);
        }
        t
    };
    for e in entries {
        let p = said(e);
        if platform.matches(p.0.as_deref(), p.1.as_deref(), p.2.as_deref()) {
            let d =
                e.get("digest").and_then(|d| d.as_str()).ok_or_else(|| bad("index entry without digest"))?;
            let d = reference::parse_digest(d).map_err(|why| bad(&why))?;
            return Ok((d, text(&p)));
        }
    }
    let mut have: Vec<String> = entries.iter().map(|e| text(&said(e))).collect();
    have.dedup();
    Err(RegistryError::NoPlatform(image.to_string(), platform.to_string(), have.join(", ")))
}

/// The image a manifest describes: its layers as blobs.
fn image_of(
    client: &Arc<Client>,
    doc: &serde_json::Value,
    digest: String,
    index_digest: Option<String>,
    platform: Option<String>,
    media_type: Option<&str>,
) -> Result<RemoteImage, RegistryError> {
    let what = format!("{}@{digest}", client.image);
    let bad = |why: &str| RegistryError::Document { what: what.clone(), why: why.to_string() };
    if doc.get("schemaVersion").and_then(|v| v.as_u64()) != Some(2) {
        return Err(bad("not a schema 2 image manifest (schema 1 manifests are not read)"));
    }
    let layers =
        doc.get("layers").and_then(|l| l.as_array()).ok_or_else(|| bad("manifest without layers"))?;
    let mut blobs = Vec::new();
    for l in layers {
        let d = l.get("digest").and_then(|d| d.as_str()).ok_or_else(|| bad("layer without digest"))?;
        let d = reference::parse_digest(d).map_err(|why| bad(&why))?;
        if !d.starts_with("sha256:") {
            return Err(bad(&format!("layer {d}: only sha256 digests are checked")));
        }
        let size = l.get("size").and_then(|s| s.as_u64()).ok_or_else(|| bad("layer without size"))?;
        blobs.push(Arc::new(Blob::new(client.clone(), d, size)));
    }
    let format = if media_type.is_some_and(|m| m.contains("docker")) { "docker-image" } else { "oci-image" };
    let platform = match platform {
        Some(p) => Some(p),
        None => client.config_platform(doc)?,
    };
    Ok(RemoteImage { reference: client.image.clone(), digest, index_digest, platform, format, layers: blobs })
}

impl Client {
    /// `GET /v2/`: is it a registry, and what authentication does it ask for.
    fn probe(&self) -> Result<(), RegistryError> {
        let url = format!("{}/v2/", self.base);
        self.get(&url, None, "the registry").map(|_| ())
    }

    /// The manifest `reference` names: its bytes, digest and media type (from the header).
    fn manifest(&self, reference: &str) -> Result<(Vec<u8>, String, Option<String>), RegistryError> {
        let url = format!("{}/v2/{}/manifests/{reference}", self.base, self.image.repository);
        let what = format!("manifest {reference}");
        let response = self.get(&url, Some(MANIFEST_TYPES), &what)?;
        let media = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_string());
        let body = read_document(response, &what)?;
        let digest = sha256_hex(&body);
        if reference.starts_with("sha256:") && reference != digest {
            return Err(RegistryError::Document {
                what,
                why: format!("the registry sent a manifest whose bytes are {digest}"),
            });
        }
        Ok((body, digest, media))
    }

    /// The platform the image config names (`os`/`architecture`), for an image that is not
    /// in an index.
    fn config_platform(&self, manifest: &serde_json::Value) -> Result<Option<String>, RegistryError> {
        let Some(d) = manifest.pointer("/config/digest").and_then(|d| d.as_str()) else { return Ok(None) };
        let url = format!("{}/v2/{}/blobs/{d}", self.base, self.image.repository);
        let what = format!("{}: config {d}", self.image);
        let body = read_document(self.get(&url, None, &what)?, &what)?;
        if sha256_hex(&body) != d {
            return Err(RegistryError::Document { what, why: "does not match its digest".into() });
        }
        let doc = json(&body, &what)?;
        let f = |k: &str| doc.get(k).and_then(|v| v.as_str());
        Ok(f("os").zip(f("architecture")).map(|(os, arch)| match f("variant") {
            Some(v) => format!("{os}/{arch}/{v}"),
            None => format!("{os}/{arch}"),
        }))
    }

    /// One `GET`, authenticating when the registry challenges and waiting when it says so
    /// (`429`, `503` with `Retry-After`, a bounded number of times).
    fn get(
        &self,
        url: &str,
        accept: Option<&str>,
        what: &str,
    ) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        self.get_with(url, accept, None, what)
    }

    /// [`Client::get`] with a `Range` header.
    fn get_with(
        &self,
        url: &str,
        accept: Option<&str>,
        range: Option<&str>,
        what: &str,
    ) -> Result<ureq::http::Response<ureq::Body>, RegistryError> {
        let mut authenticated = false;
        let mut retries = 0;
        loop {
            let mut request = self.agent.get(url);
            if let Some(a) = accept {
                request = request.header("Accept", a);
            }
            if let Some(r) = range {
                request = request.header("Range", r);
            }
            if let Some(a) = self.authorization.lock().ok().and_then(|a| a.clone()) {
                request = request.header("Authorization", a);
            }
            let response = request.call().map_err(|e| self.unreachable(url, &e))?;
            let status = response.status().as_u16();
            match status {
                200..=299 => return Ok(response),
                401 if !authenticated => {
                    authenticated = true;
                    // The first challenge this client speaks, of however many the registry sent.
                    let challenge = response
                        .headers()
                        .get_all("www-authenticate")
                        .iter()
                        .filter_map(|v| v.to_str().ok())
                        .find(|v| auth::parse_challenge(v).is_some())
                        .map(str::to_string);
                    self.authenticate(challenge.as_deref(), what)?;
                }
                401 | 403 => return Err(self.denied(what, status)),
                404 => {
                    return Err(RegistryError::NotFound {
                        what: what.to_string(),
                        registry: self.image.registry.clone(),
                    })
                }
                429 | 502 | 503 | 504 if retries < MAX_RETRIES => {
                    retries += 1;
                    let wait = retry_after(header(&response, "retry-after").as_deref(), retries);
                    if wait > MAX_RETRY_WAIT {
                        return Err(RegistryError::Status { what: what.to_string(), status });
                    }
                    std::thread::sleep(wait);
                }
                _ => return Err(RegistryError::Status { what: what.to_string(), status }),
            }
        }
    }

    fn unreachable(&self, url: &str, e: &ureq::Error) -> RegistryError {
        let mut why = e.to_string();
        if self.base.starts_with("https:") {
            // rustls' words: a certificate it could not verify, or an answer that was no TLS
            // at all (a registry speaking plain HTTP).
            if why.contains("certificate") {
                why.push_str(
                    " (the registry's certificate is not trusted by this system's trust store; \
                     SSL_CERT_FILE names another CA bundle)",
                );
            } else if why.contains("InvalidContentType") || why.contains("corrupt message") {
                why.push_str(&format!(
                    " (a registry on plain HTTP needs --insecure-registry {})",
                    self.image.registry
                ));
            }
        }
        RegistryError::Unreachable { url: url.to_string(), why }
    }

    fn denied(&self, what: &str, status: u16) -> RegistryError {
        let hint = if self.credentials.is_some() {
            format!(": the credentials stored for {} were refused", self.image.registry)
        } else {
            format!(": no credentials for {} (docker login, or DOCKER_CONFIG)", self.image.registry)
        };
        RegistryError::Denied { what: what.to_string(), status, hint }
    }

    /// Answers a `401` challenge: a bearer token from its realm (with the stored credentials,
    /// else anonymous), or basic authentication.
    fn authenticate(&self, challenge: Option<&str>, what: &str) -> Result<(), RegistryError> {
        let value = match challenge.and_then(auth::parse_challenge) {
            Some(Challenge::Basic) => match &self.credentials {
                Some(c) => c.basic(),
                None => return Err(self.denied(what, 401)),
            },
            Some(Challenge::Bearer { realm, service, scope }) => {
                let scope = scope.unwrap_or_else(|| format!("repository:{}:pull", self.image.repository));
                format!("Bearer {}", self.token(&realm, service.as_deref(), &scope, what)?)
            }
            None => return Err(self.denied(what, 401)),
        };
        if let Ok(mut a) = self.authorization.lock() {
            *a = Some(value);
        }
        Ok(())
    }

    /// A token from the token server (the distribution token protocol: `GET realm?service=…&scope=…`).
    fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        what: &str,
    ) -> Result<String, RegistryError> {
        let mut url = realm.to_string();
        let mut sep = if url.contains('?') { '&' } else { '?' };
        for (k, v) in [("service", service), ("scope", Some(scope))] {
            if let Some(v) = v {
                url.push(sep);
                url.push_str(&format!("{k}={}", query_escape(v)));
                sep = '&';
            }
        }
        let mut request = self.agent.get(&url);
        if let Some(c) = &self.credentials {
            // Never down to plain HTTP: an HTTPS registry's credentials go only to an HTTPS
            // token server.
            if self.base.starts_with("https:") && !realm.starts_with("https:") {
                return Err(RegistryError::Document {
                    what: format!("token server {realm}"),
                    why: "not HTTPS: the stored credentials are not sent there".into(),
                });
            }
            request = request.header("Authorization", c.basic());
        }
        let response = request.call().map_err(|e| self.unreachable(&url, &e))?;
        match response.status().as_u16() {
            200..=299 => {}
            s @ (401 | 403) => return Err(self.denied(what, s)),
            s => return Err(RegistryError::Status { what: format!("token server {realm}"), status: s }),
        }
        let body = read_document(response, realm)?;
        let doc = json(&body, realm)?;
        doc.get("token")
            .or_else(|| doc.get("access_token"))
            .and_then(|t| t.as_str())
            .map(str::to_string)
            .ok_or_else(|| RegistryError::Document {
                what: format!("token server {realm}"),
                why: "no token in its answer".into(),
            })
    }
}

fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// How long to wait before retry `n`: `Retry-After` in seconds when given (an HTTP date is
/// not read), else 1, 2, 4, … seconds.
fn retry_after(value: Option<&str>, n: u32) -> Duration {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or_else(|| Duration::from_secs(1 << n.saturating_sub(1).min(5)))
}

/// A JSON document's body, at most [`MAX_DOCUMENT`] bytes.
fn read_document(response: ureq::http::Response<ureq::Body>, what: &str) -> Result<Vec<u8>, RegistryError> {
    let mut out = Vec::new();
    let read = response.into_body().into_reader().take(MAX_DOCUMENT + 1).read_to_end(&mut out);
    match read {
        Ok(_) if out.len() as u64 > MAX_DOCUMENT => Err(RegistryError::Document {
            what: what.to_string(),
            why: format!("larger than {MAX_DOCUMENT} bytes"),
        }),
        Ok(_) => Ok(out),
        Err(e) => Err(RegistryError::Document { what: what.to_string(), why: e.to_string() }),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay).
fn query_escape(v: &str) -> String {
    v.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn retry_waits_follow_retry_after_else_double() {
        assert_eq!(retry_after(Some("3"), 1), Duration::from_secs(3));
        assert_eq!(retry_after(None, 1), Duration::from_secs(1));
        assert_eq!(retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), 3), Duration::from_secs(4));
    }

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(query_escape("repository:a/b:pull"), "repository%3Aa%2Fb%3Apull");
    }
}
