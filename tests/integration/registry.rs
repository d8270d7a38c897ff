//! `registry:` roots against a registry served in this process: the distribution protocol's
//! pull side as a registry speaks it (probe, bearer tokens from a token server, basic
//! authentication, manifests by tag and digest, indexes, blobs, `429`), and every way a
//! registry or its network fails (404, 401, a blob that is not its digest, one shorter than its
//! manifest says, a server that stops mid-layer, an index without the platform). The same
//! images pushed to Debian's real registry by skopeo are tested in `registry_real`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::archives::{final_fs, layers, oci_layout, sha256, tar_of, write_dir};
use crate::util::{file_paths, gfxscan, problems, Run, Tree};

/// How a blob is served wrong.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// One byte changed: the bytes are not the digest's.
    Corrupt,
    /// Served whole as far as HTTP goes, but shorter than the manifest's size for it.
    Short,
    /// `Content-Length` says it all, then the connection closes halfway.
    Stop,
    /// The first request gets the blob; later ones the same length of other bytes.
    ForgeLater,
}

/// What the registry asks of clients.
#[derive(Clone)]
pub enum Auth {
    None,
    /// Bearer tokens from `/token`, given for this user and password.
    Bearer(String, String),
    /// Basic authentication with this user and password.
    Basic(String, String),
}

#[derive(Default)]
struct Served {
    manifests: HashMap<String, (String, Vec<u8>)>,
    blobs: HashMap<String, Vec<u8>>,
    faults: HashMap<String, Fault>,
    /// Requests answered `429` before the next is served.
    throttle: u32,
    /// Blobs are answered with a redirect to `/storage/DIGEST`, served without authentication
    /// (as a registry sends clients to its blob storage).
    redirect: bool,
    requests: Vec<String>,
    /// Requests to `/storage/` that carried an `Authorization` header.
    leaked: u32,
    /// Blob requests with a `Range` header.
    ranges: u32,
}

/// A registry on 127.0.0.1, serving from memory, one thread per connection.
pub struct Fake {
    pub host: String,
    served: Arc<Mutex<Served>>,
}

impl Fake {
    pub fn start(auth: Auth) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let host = format!("127.0.0.1:{}", listener.local_addr().expect("addr").port());
        let served = Arc::new(Mutex::new(Served::default()));
        let (s, h) = (served.clone(), host.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, auth, h) = (s.clone(), auth.clone(), h.clone());
                std::thread::spawn(move || serve(stream, &s, &auth, &h));
            }
        });
        Fake { host, served }
    }

    /// Stores an image's blobs and its manifest under `tag`; returns the manifest's digest.
    pub fn push(&self, repo: &str, tag: &str, layers: &[Vec<u8>], platform: (&str, &str)) -> String {
        let config = json!({"architecture": platform.1, "os": platform.0, "rootfs": {"type": "layers", "diff_ids": []}})
            .to_string()
            .into_bytes();
        let desc = |media: &str, blob: &[u8]| json!({"mediaType": media, "digest": format!("sha256:{}", sha256(blob)), "size": blob.len()});
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": desc("application/vnd.oci.image.config.v1+json", &config),
            "layers": layers.iter().map(|l| desc("application/vnd.oci.image.layer.v1.tar", l)).collect::<Vec<_>>(),
        })
        .to_string()
        .into_bytes();
        let mut s = self.served.lock().expect("lock");
        for b in layers.iter().chain([&config]) {
            s.blobs.insert(format!("sha256:{}", sha256(b)), b.clone());
        }
        let digest = format!("sha256:{}", sha256(&manifest));
        let media = "application/vnd.oci.image.manifest.v1+json".to_string();
        s.manifests.insert(format!("{repo}:{digest}"), (media.clone(), manifest.clone()));
        s.manifests.insert(format!("{repo}:{tag}"), (media, manifest));
        digest
    }

    /// Rewrites the manifest under `tag` and the index under `list` in Docker's media types (a
    /// schema 2 manifest and a manifest list), as `docker push` writes them.
    pub fn as_docker(&self, repo: &str, tag: &str, list: &str) -> String {
        let mut s = self.served.lock().expect("lock");
        let (_, body) = s.manifests.get(&format!("{repo}:{tag}")).cloned().expect("pushed");
        let mut doc: Value = serde_json::from_slice(&body).expect("json");
        doc["mediaType"] = json!("application/vnd.docker.distribution.manifest.v2+json");
        doc["config"]["mediaType"] = json!("application/vnd.docker.container.image.v1+json");
        for l in doc["layers"].as_array_mut().expect("layers") {
            l["mediaType"] = json!("application/vnd.docker.image.rootfs.diff.tar.gzip");
        }
        let body = doc.to_string().into_bytes();
        let digest = format!("sha256:{}", sha256(&body));
        let media = "application/vnd.docker.distribution.manifest.v2+json".to_string();
        s.manifests.insert(format!("{repo}:{digest}"), (media.clone(), body.clone()));
        s.manifests.insert(format!("{repo}:{tag}"), (media, body.clone()));
        let index = json!({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
            "manifests": [{"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": digest, "size": body.len(),
                           "platform": {"os": "linux", "architecture": "amd64"}}]})
        .to_string()
        .into_bytes();
        let list_digest = format!("sha256:{}", sha256(&index));
        let media = "application/vnd.docker.distribution.manifest.list.v2+json".to_string();
        s.manifests.insert(format!("{repo}:{list_digest}"), (media.clone(), index.clone()));
        s.manifests.insert(format!("{repo}:{list}"), (media, index));
        digest
    }

    /// An index under `tag` of the manifests `entries` names (digest, os, architecture).
    pub fn push_index(&self, repo: &str, tag: &str, entries: &[(&str, &str, &str)]) -> String {
        let mut s = self.served.lock().expect("lock");
        let manifests: Vec<Value> = entries
            .iter()
            .map(|(d, os, arch)| {
                let size = s.manifests.get(&format!("{repo}:{d}")).map_or(0, |m| m.1.len());
                json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": d, "size": size,
                       "platform": {"os": os, "architecture": arch}})
            })
            .collect();
        let index = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests})
            .to_string()
            .into_bytes();
        let digest = format!("sha256:{}", sha256(&index));
        let media = "application/vnd.oci.image.index.v1+json".to_string();
        s.manifests.insert(format!("{repo}:{digest}"), (media.clone(), index.clone()));
        s.manifests.insert(format!("{repo}:{tag}"), (media, index));
        digest
    }

    pub fn fault(&self, blob: &[u8], fault: Fault) {
        self.served.lock().expect("lock").faults.insert(format!("sha256:{}", sha256(blob)), fault);
    }

    pub fn redirect_blobs(&self) {
        self.served.lock().expect("lock").redirect = true;
    }

    pub fn ranges(&self) -> u32 {
        self.served.lock().expect("lock").ranges
    }

    pub fn leaked(&self) -> u32 {
        self.served.lock().expect("lock").leaked
    }

    pub fn throttle(&self, n: u32) {
        self.served.lock().expect("lock").throttle = n;
    }

    pub fn requests(&self) -> Vec<String> {
        self.served.lock().expect("lock").requests.clone()
    }

    pub fn root(&self, image: &str) -> String {
        format!("registry:{}/{image}", self.host)
    }
}

fn serve(stream: TcpStream, served: &Mutex<Served>, auth: &Auth, host: &str) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut authorization = None;
    let mut range: Option<usize> = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("authorization") {
                authorization = Some(v.trim().to_string());
            }
            if k.eq_ignore_ascii_case("range") {
                range = v
                    .trim()
                    .strip_prefix("bytes=")
                    .and_then(|r| r.strip_suffix('-'))
                    .and_then(|n| n.parse().ok());
            }
        }
    }
    let mut out = stream;
    let basic = |u: &str, p: &str| format!("Basic {}", b64(&format!("{u}:{p}")));
    let reply = |out: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]| {
        let mut head =
            format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let _ = out.write_all(head.as_bytes());
        let _ = out.write_all(body);
    };
    served.lock().expect("lock").requests.push(path.clone());
    if let Some(digest) = path.strip_prefix("/storage/") {
        let mut s = served.lock().expect("lock");
        s.leaked += u32::from(authorization.is_some());
        let blob = s.blobs.get(digest).cloned();
        drop(s);
        return match blob {
            Some(b) => reply(&mut out, "200 OK", &[], &b),
            None => reply(&mut out, "404 Not Found", &[], b""),
        };
    }
    if path.starts_with("/token") {
        let Auth::Bearer(u, p) = auth else { return reply(&mut out, "404 Not Found", &[], b"") };
        if authorization.as_deref() == Some(basic(u, p).as_str()) || (u.is_empty() && authorization.is_none())
        {
            return reply(&mut out, "200 OK", &[], br#"{"token": "t0k3n"}"#);
        }
        return reply(&mut out, "401 Unauthorized", &[], b"{}");
    }
    let challenge = match auth {
        Auth::None => None,
        Auth::Bearer(..) if authorization.as_deref() == Some("Bearer t0k3n") => None,
        Auth::Basic(u, p) if authorization.as_deref() == Some(basic(u, p).as_str()) => None,
        Auth::Bearer(..) => Some(format!(r#"Bearer realm="http://{host}/token",service="fake""#)),
        Auth::Basic(..) => Some(r#"Basic realm="fake""#.to_string()),
    };
    if let Some(c) = challenge {
        return reply(&mut out, "401 Unauthorized", &[("WWW-Authenticate", c)], b"{}");
    }
    let mut s = served.lock().expect("lock");
    if s.throttle > 0 && path != "/v2/" {
        s.throttle -= 1;
        drop(s);
        return reply(&mut out, "429 Too Many Requests", &[("Retry-After", "0".into())], b"");
    }
    if path == "/v2/" {
        drop(s);
        return reply(&mut out, "200 OK", &[], b"{}");
    }
    let rest = path.trim_start_matches("/v2/");
    if let Some((repo, reference)) = rest.split_once("/manifests/") {
        let found = s.manifests.get(&format!("{repo}:{reference}")).cloned();
        drop(s);
        return match found {
            Some((media, body)) => reply(&mut out, "200 OK", &[("Content-Type", media)], &body),
            None => reply(&mut out, "404 Not Found", &[], br#"{"errors":[{"code":"MANIFEST_UNKNOWN"}]}"#),
        };
    }
    if let Some((_, digest)) = rest.split_once("/blobs/") {
        let (blob, fault) = (s.blobs.get(digest).cloned(), s.faults.get(digest).copied());
        let redirect = s.redirect;
        let earlier = s.requests.iter().filter(|r| r.ends_with(digest)).count();
        s.ranges += u32::from(range.is_some());
        drop(s);
        if redirect && blob.is_some() {
            return reply(
                &mut out,
                "307 Temporary Redirect",
                // Another name of the same server: blob storage on another host.
                &[(
                    "Location",
                    format!(
                        "http://localhost:{}/storage/{digest}",
                        host.rsplit(':').next().unwrap_or_default()
                    ),
                )],
                b"",
            );
        }
        let Some(mut blob) = blob else { return reply(&mut out, "404 Not Found", &[], b"") };
        if let (Some(Fault::ForgeLater), true) = (fault, earlier > 1) {
            let mid = blob.len() / 2;
            if let Some(b) = blob.get_mut(mid) {
                *b ^= 0x20;
            }
        }
        if let Some(from) = range.filter(|&r| r > 0 && r < blob.len()) {
            let part = blob.get(from..).unwrap_or_default().to_vec();
            let header = ("Content-Range", format!("bytes {from}-{}/{}", blob.len() - 1, blob.len()));
            return reply(&mut out, "206 Partial Content", &[header], &part);
        }
        match fault {
            None | Some(Fault::ForgeLater) => reply(&mut out, "200 OK", &[], &blob),
            Some(Fault::Corrupt) => {
                let mid = blob.len() / 2;
                if let Some(b) = blob.get_mut(mid) {
                    *b ^= 0x20;
                }
                reply(&mut out, "200 OK", &[], &blob)
            }
            Some(Fault::Short) => {
                reply(&mut out, "200 OK", &[], blob.get(..blob.len() * 2 / 3).unwrap_or(&blob))
            }
            Some(Fault::Stop) => {
                let head =
                    format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n", blob.len());
                let _ = out.write_all(head.as_bytes());
                let _ = out.write_all(blob.get(..blob.len() / 2).unwrap_or(&blob));
                let _ = out.flush();
                let _ = out.shutdown(std::net::Shutdown::Both);
            }
        }
        return;
    }
    drop(s);
    reply(&mut out, "404 Not Found", &[], b"")
}

pub(crate) fn b64(s: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `gfxscan ARGS… --insecure-registry HOST` with `DOCKER_CONFIG` at `config` (an empty
/// folder when `None`: no stored credentials).
pub fn run_with(fake: &Fake, config: Option<&Tree>, args: &[&str]) -> Run {
    let empty = Tree::new();
    let dir = config.unwrap_or(&empty);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args(args)
        .args(["--insecure-registry", &fake.host])
        .env("DOCKER_CONFIG", dir.root())
        .env_remove("HOME");
    crate::util::run(cmd)
}

/// A Docker configuration with `user:password` for `host`.
pub fn docker_config(host: &str, user: &str, password: &str) -> Tree {
    let t = Tree::new();
    let auth = b64(&format!("{user}:{password}"));
    t.file("config.json", json!({"auths": {host: {"auth": auth}}}).to_string().as_bytes());
    t
}

fn the_image(fake: &Fake, tag: &str) -> String {
    fake.push("gfx/test", tag, &layers(), ("linux", "amd64"))
}

#[test]
fn a_registry_image_scans_as_its_oci_layout_and_as_its_final_tree() {
    let fake = Fake::start(Auth::None);
    let digest = the_image(&fake, "v1");
    let t = Tree::new();
    write_dir(&t, "final", &final_fs());
    write_dir(&t, "layout", &oci_layout());
    let tree = gfxscan(["scan", "--json", "-q", &t.path("final").to_string_lossy()]).json();
    let layout = gfxscan(["scan", "--json", "-q", &format!("oci-dir:{}", t.path("layout").display())]).json();
    let run = run_with(&fake, None, &["scan", "--json", "-q", &fake.root("gfx/test:v1")]);
    run.expect_code(0);
    let remote = run.json();
    assert_eq!(file_paths(&remote), ["A", "C", "d/y"], "{remote:#}");
    for (name, other) in [("tree", &tree), ("layout", &layout)] {
        assert_eq!(remote["files"], other["files"], "as the {name}");
        assert_eq!(remote["targets"], other["targets"], "as the {name}");
        assert_eq!(remote["summary"]["code_objects"], other["summary"]["code_objects"], "as the {name}");
    }
    assert_eq!(
        remote["archives"][0]["image"],
        json!({"registry": fake.host, "repository": "gfx/test", "tag": "v1", "digest": digest, "platform": "linux/amd64"})
    );
    // Each layer blob fetched once (and the config once, for the platform).
    let blobs: Vec<String> = fake.requests().into_iter().filter(|r| r.contains("/blobs/")).collect();
    assert_eq!(blobs.len(), 4, "{blobs:?}");
    // Pinned by digest: the same image, no tag.
    let run = run_with(&fake, None, &["scan", "--json", "-q", &fake.root(&format!("gfx/test@{digest}"))]);
    run.expect_code(0);
    assert_eq!(run.json()["files"], remote["files"]);
}

#[test]
fn bearer_tokens_with_stored_credentials_and_refused_ones() {
    let fake = Fake::start(Auth::Bearer("ci".into(), "s3cret".into()));
    the_image(&fake, "v1");
    let good = docker_config(&fake.host, "ci", "s3cret");
    let run = run_with(&fake, Some(&good), &["scan", "--json", "-q", &fake.root("gfx/test:v1")]);
    run.expect_code(0);
    assert_eq!(file_paths(&run.json()), ["A", "C", "d/y"]);
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.starts_with("/token?service=fake&scope=repository%3Agfx%2Ftest%3Apull")),
        "{:?}",
        fake.requests()
    );

    let bad = docker_config(&fake.host, "ci", "wrong");
    let out = bad.path("out.json");
    let run = run_with(
        &fake,
        Some(&bad),
        &["scan", "--json", "-q", "-o", &out.to_string_lossy(), &fake.root("gfx/test:v1")],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("access denied (401): the credentials stored for"), "{}", run.stderr);
    assert!(!out.exists(), "nothing written");
    let run = run_with(&fake, None, &["scan", "-q", &fake.root("gfx/test:v1")]);
    run.expect_code(2);
    assert!(run.stderr.contains("no credentials for"), "{}", run.stderr);
}

/// Blobs behind a redirect to storage are fetched there, without the registry's token; layers
/// compressed with gzip and zstd and plain read alike.
#[test]
fn redirects_to_blob_storage_and_every_layer_codec() {
    let fake = Fake::start(Auth::Bearer(String::new(), String::new()));
    let [one, two, three] = layers();
    let zst = zstd::encode_all(three.as_slice(), 3).expect("zstd");
    fake.push("gfx/test", "v1", &[crate::archives::gz(&one), two, zst], ("linux", "amd64"));
    fake.redirect_blobs();
    let run = run_with(&fake, None, &["scan", "--json", "-q", &fake.root("gfx/test:v1")]);
    run.expect_code(0);
    assert_eq!(file_paths(&run.json()), ["A", "C", "d/y"]);
    assert!(fake.requests().iter().filter(|r| r.starts_with("/storage/")).count() >= 3);
    assert_eq!(fake.leaked(), 0, "the registry's token went to blob storage");
}

#[test]
fn basic_authentication_from_the_docker_config() {
    let fake = Fake::start(Auth::Basic("u".into(), "p:w".into()));
    the_image(&fake, "v1");
    let run = run_with(
        &fake,
        Some(&docker_config(&fake.host, "u", "p:w")),
        &["scan", "--json", "-q", &fake.root("gfx/test:v1")],
    );
    run.expect_code(0);
    assert_eq!(file_paths(&run.json()), ["A", "C", "d/y"]);
}

#[test]
fn an_unknown_tag_fails_and_writes_nothing() {
    let fake = Fake::start(Auth::None);
    the_image(&fake, "v1");
    let t = Tree::new();
    let out = t.path("out.json");
    let run = run_with(&fake, None, &["scan", "-q", "-o", &out.to_string_lossy(), &fake.root("gfx/test:v9")]);
    run.expect_code(2);
    assert!(run.stderr.contains("manifest v9: not found (404)"), "{}", run.stderr);
    assert!(!out.exists());
}

/// Each broken layer is a problem naming its digest, and nothing in it is read: layer 2 (A for
/// gfx1100, the whiteout of B) is the broken one. Layer 1 below it is not read either (review
/// finding: it was, and B, deleted by layer 2, came back with A as layer 1 has it: a file
/// system the image never had); layer 3 above it stands.
#[test]
fn a_layer_that_is_not_its_digest_is_not_believed() {
    for (fault, says) in [
        (Fault::Corrupt, "does not match its digest"),
        (Fault::Short, "ends after"),
        (Fault::Stop, "ends after 2048 of its"),
    ] {
        let fake = Fake::start(Auth::None);
        the_image(&fake, "v1");
        let [_, two, _] = layers();
        fake.fault(&two, fault);
        let run = run_with(&fake, None, &["scan", "--json", "-q", &fake.root("gfx/test:v1")]);
        run.expect_code(1);
        let snap = run.json();
        let named = format!("sha256:{}", sha256(&two));
        let p = problems(&snap);
        assert!(
            p.iter()
                .any(|(path, m)| path == &named && m.contains(says) && m.contains("nothing in it is read")),
            "{p:?}"
        );
        let [one, _, _] = layers();
        let below = format!("sha256:{}", sha256(&one));
        assert!(p.iter().any(|(path, m)| path == &below && m.starts_with("layer not read")), "{p:?}");
        assert_eq!(file_paths(&snap), ["d/y"], "only layer 3: {snap:#}");
        // check never says OK of such an image.
        let check = run_with(&fake, None, &["check", "--gpu", "gfx942", "-q", &fake.root("gfx/test:v1")]);
        assert_ne!(check.code, 0, "{}", check.stdout);
    }
}

#[test]
fn an_index_is_narrowed_to_the_platform() {
    let fake = Fake::start(Auth::None);
    let amd = the_image(&fake, "amd");
    let arm = fake.push(
        "gfx/test",
        "arm",
        &[tar_of(&[crate::archives::file("only-arm", b"x".to_vec())])],
        ("linux", "arm64"),
    );
    fake.push_index("gfx/test", "multi", &[(&amd, "linux", "amd64"), (&arm, "linux", "arm64")]);
    fake.push_index("gfx/test", "armonly", &[(&arm, "linux", "arm64")]);
    let run = run_with(&fake, None, &["scan", "--json", "-q", &fake.root("gfx/test:multi")]);
    run.expect_code(0);
    let snap = run.json();
    assert_eq!(file_paths(&snap), ["A", "C", "d/y"]);
    let image = &snap["archives"][0]["image"];
    assert_eq!(
        (image["digest"].as_str(), image["platform"].as_str()),
        (Some(amd.as_str()), Some("linux/amd64"))
    );
    assert!(image["index_digest"].as_str().is_some_and(|d| d.starts_with("sha256:")));

    // A single image of another platform is refused as well (containerd: no match for platform).
    let run = run_with(&fake, None, &["scan", "-q", &fake.root("gfx/test:arm")]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("no manifest for platform linux/amd64 (it has: linux/arm64)"),
        "{}",
        run.stderr
    );
    let run = run_with(&fake, None, &["scan", "-q", &fake.root("gfx/test:armonly")]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("no manifest for platform linux/amd64 (it has: linux/arm64)"),
        "{}",
        run.stderr
    );
    let run = run_with(
        &fake,
        None,
        &["scan", "--json", "-q", "--platform", "linux/arm64", &fake.root("gfx/test:armonly")],
    );
    run.expect_code(0);
    assert_eq!(run.json()["archives"][0]["image"]["digest"].as_str(), Some(arm.as_str()));
}

#[test]
fn docker_media_types_read_as_oci_ones() {
    let fake = Fake::start(Auth::None);
    let [one, two, three] = layers();
    fake.push(
        "gfx/test",
        "v1",
        &[crate::archives::gz(&one), crate::archives::gz(&two), crate::archives::gz(&three)],
        ("linux", "amd64"),
    );
    let digest = fake.as_docker("gfx/test", "v1", "list");
    for tag in ["v1", "list"] {
        let run = run_with(&fake, None, &["scan", "--json", "-q", &fake.root(&format!("gfx/test:{tag}"))]);
        run.expect_code(0);
        let snap = run.json();
        assert_eq!(file_paths(&snap), ["A", "C", "d/y"], "{tag}");
        assert_eq!(snap["archives"][0]["format"], "docker-image");
        assert_eq!(snap["archives"][0]["image"]["digest"].as_str(), Some(digest.as_str()), "{tag}");
    }
}

#[test]
fn too_many_requests_are_waited_out() {
    let fake = Fake::start(Auth::None);
    the_image(&fake, "v1");
    fake.throttle(3);
    let run = run_with(&fake, None, &["scan", "--json", "-q", &fake.root("gfx/test:v1")]);
    run.expect_code(0);
    assert_eq!(file_paths(&run.json()), ["A", "C", "d/y"]);
}

#[test]
fn check_and_diff_of_two_tags() {
    let fake = Fake::start(Auth::None);
    let old = the_image(&fake, "v1");
    // v2 drops the gfx1100 layer: A is gfx906 again and B is back.
    let [one, _, three] = layers();
    let new = fake.push("gfx/test", "v2", &[one, three], ("linux", "amd64"));
    let run = run_with(
        &fake,
        None,
        &["diff", "--json", "-q", &fake.root("gfx/test:v1"), &fake.root("gfx/test:v2")],
    );
    let report = run.json();
    let text = report.to_string();
    assert!(text.contains(&old) && text.contains(&new), "both digests named: {report:#}");
    let run = run_with(&fake, None, &["diff", "-q", &fake.root("gfx/test:v1"), &fake.root("gfx/test:v2")]);
    assert!(run.stdout.contains(&old) && run.stdout.contains(&new), "{}", run.stdout);
    // `merge` takes registry images as sources, scanned as `scan` would write them.
    let merged = run_with(
        &fake,
        None,
        &["merge", "--json", "-q", "--gpu", "gfx1100", &fake.root("gfx/test:v1"), &fake.root("gfx/test:v2")],
    );
    let fleet = merged.json();
    let sources = fleet["sources"].as_array().cloned().unwrap_or_default();
    assert_eq!(sources.len(), 2, "{fleet:#}");
    assert!(
        sources.iter().all(|s| s["files"].as_u64().is_some_and(|f| f > 0) && s["verdict"].is_string()),
        "{fleet:#}"
    );
    assert_eq!(sources[0]["path"].as_str(), Some(fake.root("gfx/test:v1").as_str()));
    // `explain` of the image says what `explain` of its final tree says.
    let t2 = Tree::new();
    write_dir(&t2, "final", &final_fs());
    let root = fake.root("gfx/test:v1");
    let remote = run_with(&fake, None, &["explain", "gfx1100", "--json", "-q", &root]);
    let tree = gfxscan(["explain", "gfx1100", "--json", "-q", &t2.path("final").to_string_lossy()]);
    assert_eq!(remote.code, tree.code);
    assert_eq!(
        remote.stdout.replace(&root, "ROOT"),
        tree.stdout.replace(&*t2.path("final").to_string_lossy(), "ROOT")
    );
    // `check` of the image says what `check` of its final tree says.
    let t = Tree::new();
    write_dir(&t, "final", &final_fs());
    let root = fake.root("gfx/test:v1");
    let remote = run_with(&fake, None, &["check", "--gpu", "gfx1100", "-q", &root]);
    let tree = gfxscan(["check", "--gpu", "gfx1100", "-q", &t.path("final").to_string_lossy()]);
    assert_eq!(remote.code, tree.code, "{}\n{}", remote.stdout, tree.stdout);
    assert_eq!(
        remote.stdout.replace(&root, "ROOT"),
        tree.stdout.replace(&*t.path("final").to_string_lossy(), "ROOT")
    );
}

/// A 60 MiB host library: its fat binary (one gfx1100 code object) first, then 60 MiB of
/// `.rodata`, then its section table: read backwards by its parser.
fn big_library() -> Vec<u8> {
    use gfxscan::testing::{fatbin, host_elf, HostSection};
    let padding = vec![0u8; 60 << 20];
    let co = crate::fixtures::co(crate::fixtures::GFX1100, 0, 2);
    host_elf(&[
        HostSection::hip_fatbin(&fatbin(&[crate::fixtures::hip_bundle(&[("gfx1100", &co)])])),
        HostSection::rodata(".rodata", &padding),
    ])
}

/// A layer member past `archive::IN_MEMORY` whose parser reads it backwards (a host library: its
/// section table at the end, its fat binary before it) is held whole while it is read when it
/// fits half the memory aim, so the layer is fetched once; past that, the layer is fetched again
/// for each backward read (`source::origin::ReplaySource`). Either way the facts are the same.
#[test]
fn a_large_library_in_a_layer_is_fetched_once_when_memory_allows() {
    let lib = big_library();
    let layer = crate::archives::gz(&tar_of(&[crate::archives::file("lib/libbig.so", lib)]));
    let fake = Fake::start(Auth::None);
    fake.push("gfx/big", "v1", std::slice::from_ref(&layer), ("linux", "amd64"));
    let digest = format!("sha256:{}", sha256(&layer));
    let fetches = |fake: &Fake| fake.requests().iter().filter(|r| r.ends_with(&digest)).count();
    let held =
        run_with(&fake, None, &["scan", "--json", "-q", "--max-memory", "256M", &fake.root("gfx/big:v1")]);
    held.expect_code(0);
    assert_eq!(fetches(&fake), 1, "held whole: fetched once");
    let again =
        run_with(&fake, None, &["scan", "--json", "-q", "--max-memory", "100M", &fake.root("gfx/big:v1")]);
    again.expect_code(0);
    assert!(fetches(&fake) >= 3, "not held (50 MiB < 60 MiB): fetched again, {}", fetches(&fake));
    assert_eq!(held.json()["files"], again.json()["files"]);
    assert_eq!(held.json()["summary"]["code_objects"], 1);
}

/// A layer read again (a library its parser reads backwards, past what memory holds) is checked
/// piece by piece against its first, digest-checked read: a registry that sends other bytes the
/// second time is caught, never believed. Review finding: such bytes were believed (a forged
/// code object in the library counted). An uncompressed layer is read again from the piece
/// holding the member, with a range request.
#[test]
fn a_layer_read_again_is_checked_against_its_first_read() {
    let lib = big_library();
    let layer = tar_of(&[
        crate::archives::file("a/small.co", crate::fixtures::co(crate::fixtures::GFX900, 0, 1)),
        crate::archives::file("a/filler", vec![7u8; 300 << 10]),
        crate::archives::file("lib/libbig.so", lib),
    ]);
    let honest = Fake::start(Auth::None);
    honest.push("gfx/big", "v1", std::slice::from_ref(&layer), ("linux", "amd64"));
    let run = run_with(
        &honest,
        None,
        &["scan", "--json", "-q", "--max-memory", "100M", &honest.root("gfx/big:v1")],
    );
    run.expect_code(0);
    let want = run.json();
    assert!(honest.ranges() >= 1, "read again from the member's piece");

    let forged = Fake::start(Auth::None);
    forged.push("gfx/big", "v1", std::slice::from_ref(&layer), ("linux", "amd64"));
    forged.fault(&layer, Fault::ForgeLater);
    let run = run_with(
        &forged,
        None,
        &["scan", "--json", "-q", "--max-memory", "100M", &forged.root("gfx/big:v1")],
    );
    run.expect_code(1);
    let snap = run.json();
    let p = problems(&snap);
    assert!(
        p.iter().any(|(path, m)| path == "lib/libbig.so" && m.contains("read again is not what it was")),
        "{p:?}"
    );
    // What was read from checked bytes stands; nothing more (the forged bytes sit in .rodata).
    assert_eq!(snap["files"], want["files"]);
}

/// `docker-archive:` promises an image: a tar that is none is read as what it is, and says so;
/// `registry:a` and `registry:docker.io/library/a:latest` are one root.
#[test]
fn named_sources_keep_their_promises() {
    let t = Tree::new();
    t.file(
        "plain.tar",
        &tar_of(&[crate::archives::file("k.co", crate::fixtures::co(crate::fixtures::GFX900, 0, 1))]),
    );
    let run = gfxscan(["scan", "--json", "-q", &format!("docker-archive:{}", t.path("plain.tar").display())]);
    run.expect_code(1);
    let snap = run.json();
    assert_eq!(file_paths(&snap), ["k.co"]);
    assert!(problems(&snap).iter().any(|(_, m)| m.contains("is not a container image")), "{snap:#}");
    write_dir(&t, "layout", &oci_layout());
    let run = gfxscan(["scan", "--json", "-q", &format!("oci-dir:{}", t.path("layout").display())]);
    run.expect_code(0);
    let run = gfxscan(["scan", "-q", &format!("oci-dir:{}", t.path("plain.tar").display())]);
    run.expect_code(2);
    let fake = Fake::start(Auth::None);
    the_image(&fake, "latest");
    let run = run_with(
        &fake,
        None,
        &["scan", "--json", "-q", &fake.root("gfx/test"), &fake.root("gfx/test:latest")],
    );
    run.expect_code(0);
    assert_eq!(run.json()["roots"].as_array().map(Vec::len), Some(1));
}
