//! `registry:` roots against Debian's real registry (distribution's `docker-registry`), images
//! pushed to it by skopeo from OCI layouts built here out of real files (the sample). `.ci/run`
//! starts two registries on localhost and names them: `GFXSCAN_TEST_REGISTRY` (`HOST:PORT`,
//! anonymous) and `GFXSCAN_TEST_REGISTRY_AUTH` (`HOST:PORT USER PASSWORD`, htpasswd basic
//! authentication). Without them (and skopeo) each test says it is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::archives::{file, gz, sha256, tar_of};
use crate::util::{file_paths, gfxscan, problems, skipped, Run, Tree};

/// The anonymous registry and skopeo, or `None` (said skipped).
fn registry() -> Option<(String, String)> {
    let host = std::env::var("GFXSCAN_TEST_REGISTRY").ok().filter(|s| !s.is_empty());
    let skopeo = crate::util::find_tool("GFXSCAN_SKOPEO", "skopeo", "--version");
    match (host, skopeo) {
        (Some(h), Some(s)) => Some((h, s)),
        _ => {
            skipped("no registry (GFXSCAN_TEST_REGISTRY, started by .ci/run) or no skopeo");
            None
        }
    }
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample")
}

/// The sample as one uncompressed layer tar (its files, folders and links, as `tar -C sample .`),
/// the same bytes on every machine: entries sorted, times, owners and modes normalised (0644,
/// 0755 for executables and folders), no sparse members (image builders write none: Go's
/// archive/tar cannot; the sample's firmware files are sparse on disk), so that its digest, and
/// the digests the docs' examples print, do not depend on the clone.
pub(crate) fn sample_layer() -> Vec<u8> {
    use std::os::unix::fs::PermissionsExt;
    let root = sample();
    let mut paths: Vec<PathBuf> = walk(&root);
    paths.sort();
    let mut b = tar::Builder::new(Vec::new());
    for p in paths {
        let rel = p.strip_prefix(&root).expect("under the sample");
        let meta = std::fs::symlink_metadata(&p).expect("stat");
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        if meta.file_type().is_symlink() {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            b.append_link(&mut h, rel, std::fs::read_link(&p).expect("readlink")).expect("link");
        } else if meta.is_dir() {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            b.append_data(&mut h, rel, std::io::empty()).expect("folder");
        } else {
            let data = std::fs::read(&p).expect("read");
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(if meta.permissions().mode() & 0o111 != 0 { 0o755 } else { 0o644 });
            h.set_size(data.len() as u64);
            b.append_data(&mut h, rel, data.as_slice()).expect("file");
        }
    }
    b.into_inner().expect("tar")
}

/// Every path under `dir` (not `dir` itself), links not followed.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("list").flatten() {
        let p = e.path();
        out.push(p.clone());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        }
    }
    out
}

/// An image in an OCI layout folder: its manifest's digest. Layers are gzip-compressed.
struct Layout {
    dir: PathBuf,
    manifests: Vec<Value>,
}

impl Layout {
    fn new(dir: PathBuf) -> Layout {
        std::fs::create_dir_all(dir.join("blobs/sha256")).expect("layout");
        std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).expect("oci-layout");
        Layout { dir, manifests: Vec::new() }
    }

    fn blob(&self, bytes: &[u8], media: &str) -> Value {
        let d = sha256(bytes);
        std::fs::write(self.dir.join("blobs/sha256").join(&d), bytes).expect("blob");
        json!({"mediaType": media, "digest": format!("sha256:{d}"), "size": bytes.len()})
    }

    /// Adds an image of `layers` for `arch`, named `tag` in the index; its manifest digest.
    fn image(&mut self, tag: &str, layers: &[Vec<u8>], arch: &str) -> String {
        let config =
            json!({"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}});
        let config = self.blob(config.to_string().as_bytes(), "application/vnd.oci.image.config.v1+json");
        let layers: Vec<Value> =
            layers.iter().map(|l| self.blob(&gz(l), "application/vnd.oci.image.layer.v1.tar+gzip")).collect();
        let manifest = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": config, "layers": layers});
        let mut desc =
            self.blob(manifest.to_string().as_bytes(), "application/vnd.oci.image.manifest.v1+json");
        let digest = desc["digest"].as_str().unwrap_or_default().to_string();
        desc["platform"] = json!({"os": "linux", "architecture": arch});
        desc["annotations"] = json!({"org.opencontainers.image.ref.name": tag});
        self.manifests.push(desc);
        self.write_index();
        digest
    }

    /// Adds an index of the images tagged `tags`, named `tag`.
    fn index(&mut self, tag: &str, tags: &[&str]) {
        let entries: Vec<Value> = self
            .manifests
            .iter()
            .filter(|m| {
                tags.contains(&m["annotations"]["org.opencontainers.image.ref.name"].as_str().unwrap_or(""))
            })
            .map(|m| {
                let mut m = m.clone();
                m.as_object_mut().map(|o| o.remove("annotations"));
                m
            })
            .collect();
        let index = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries});
        let mut desc = self.blob(index.to_string().as_bytes(), "application/vnd.oci.image.index.v1+json");
        desc["annotations"] = json!({"org.opencontainers.image.ref.name": tag});
        self.manifests.push(desc);
        self.write_index();
    }

    fn write_index(&self) {
        let index = json!({"schemaVersion": 2, "manifests": self.manifests});
        std::fs::write(self.dir.join("index.json"), index.to_string()).expect("index.json");
    }
}

/// `skopeo copy` of `layout:tag` to `registry/repo:tag` (`--all`: every image of an index).
fn push(skopeo: &str, layout: &Path, tag: &str, dest: &str, creds: Option<&str>) {
    let mut cmd = Command::new(skopeo);
    cmd.args(["copy", "--all", "--quiet", "--dest-tls-verify=false"]);
    if let Some(c) = creds {
        cmd.args(["--dest-creds", c]);
    }
    cmd.arg(format!("oci:{}:{tag}", layout.display())).arg(format!("docker://{dest}"));
    let out = cmd.output().expect("skopeo runs");
    assert!(out.status.success(), "skopeo copy: {}", String::from_utf8_lossy(&out.stderr));
}

/// `gfxscan ARGS… --insecure-registry HOST` with no stored credentials, or `config`'s.
fn run(host: &str, config: Option<&Path>, args: &[&str]) -> Run {
    let empty = Tree::new();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args(args).args(["--insecure-registry", host]).env("DOCKER_CONFIG", config.unwrap_or(empty.root()));
    crate::util::run(cmd)
}

/// What a scan found, without where it was: files with their facts, code objects, targets.
fn facts(snap: &Value) -> Value {
    json!({"files": snap["files"], "targets": snap["targets"], "code_objects": snap["summary"]["code_objects"]})
}

/// A library of the sample that the whiteout image deletes.
const DELETED: &str = "opt/rocm/lib/libhsa-runtime64.so.1.13.0";

/// The images the docs' `console registry` examples name, pushed to `host`: `gfxscan/sample:v1`
/// (the sample) and `:v2` (the sample with a second layer deleting one library).
pub(crate) fn push_examples(host: &str) {
    let skopeo = crate::util::find_tool("GFXSCAN_SKOPEO", "skopeo", "--version").expect("skopeo");
    let t = Tree::new();
    pushed(&t, &skopeo, host, "gfxscan/sample");
}

/// The sample, and the sample with a second layer deleting one library, pushed as two tags;
/// a two-platform index of the sample; the layout they came from.
fn pushed(t: &Tree, skopeo: &str, host: &str, repo: &str) -> (PathBuf, String, String) {
    let base = sample_layer();
    let (dir, name) = DELETED.rsplit_once('/').unwrap_or(("", DELETED));
    let whiteout = tar_of(&[file(&format!("{dir}/.wh.{name}"), Vec::new())]);
    let mut layout = Layout::new(t.path("layout"));
    let one = layout.image("sample", std::slice::from_ref(&base), "amd64");
    let two = layout.image("deleted", &[base, whiteout], "amd64");
    layout.image("arm", &[tar_of(&[file("arm-only", b"x".to_vec())])], "arm64");
    layout.index("multi", &["deleted", "arm"]);
    for (tag, as_tag) in [
        ("sample", "sample"),
        ("deleted", "deleted"),
        ("multi", "multi"),
        ("sample", "v1"),
        ("deleted", "v2"),
    ] {
        push(skopeo, &layout.dir, tag, &format!("{host}/{repo}:{as_tag}"), None);
    }
    (layout.dir, one, two)
}

#[test]
fn registry_images_scan_as_their_layouts_and_trees() {
    let Some((host, skopeo)) = registry() else { return };
    let t = Tree::new();
    let (layout, one, two) = pushed(&t, &skopeo, &host, "gfxscan/real");
    let tree = gfxscan(["scan", "--json", "-q", &sample().to_string_lossy()]).json();
    let remote = run(&host, None, &["scan", "--json", "-q", &format!("registry:{host}/gfxscan/real:sample")]);
    remote.expect_code(0);
    let remote = remote.json();
    assert_eq!(facts(&remote), facts(&tree), "the image is the sample");
    assert_eq!(remote["archives"][0]["image"]["digest"].as_str(), Some(one.as_str()));
    assert_eq!(remote["archives"][0]["image"]["platform"].as_str(), Some("linux/amd64"));

    // The whiteout: the image is the sample without one library, as its layout says too.
    let deleted =
        run(&host, None, &["scan", "--json", "-q", &format!("registry:{host}/gfxscan/real:deleted")]);
    deleted.expect_code(0);
    let deleted = deleted.json();
    assert!(file_paths(&tree).iter().any(|p| p == DELETED));
    let want: Vec<String> = file_paths(&tree).into_iter().filter(|p| p != DELETED).collect();
    assert_eq!(file_paths(&deleted), want);
    assert_eq!(deleted["archives"][0]["image"]["digest"].as_str(), Some(two.as_str()));
    // The same layout as a tarball, named as a docker-archive: (an OCI tarball), and as oci-dir:.
    let mut b = tar::Builder::new(Vec::new());
    b.append_dir_all(".", &layout).expect("tar the layout");
    t.file("image.tar", &b.into_inner().expect("tar"));
    for named in
        [format!("docker-archive:{}", t.path("image.tar").display()), format!("oci-dir:{}", layout.display())]
    {
        // The layout's index names four tags; a layout is read by its only or linux/amd64 entry.
        let local = gfxscan(["scan", "--json", "-q", &named]);
        local.expect_code(0);
        assert_eq!(facts(&local.json()), facts(&tree), "{named} is the sample, as the registry's copy");
    }

    // The index: narrowed to linux/amd64 by default (the deleted image), or to arm64.
    let multi = run(&host, None, &["scan", "--json", "-q", &format!("registry:{host}/gfxscan/real:multi")]);
    multi.expect_code(0);
    let multi = multi.json();
    assert_eq!(file_paths(&multi), want);
    assert_eq!(multi["archives"][0]["image"]["digest"].as_str(), Some(two.as_str()));
    assert!(multi["archives"][0]["image"]["index_digest"].is_string());
    let arm = run(
        &host,
        None,
        &[
            "scan",
            "--json",
            "-q",
            "--platform",
            "linux/arm64",
            &format!("registry:{host}/gfxscan/real:multi"),
        ],
    );
    arm.expect_code(0);
    assert_eq!(arm.json()["archives"][0]["image"]["platform"].as_str(), Some("linux/arm64"));
    let none = run(
        &host,
        None,
        &["scan", "-q", "--platform", "linux/s390x", &format!("registry:{host}/gfxscan/real:multi")],
    );
    none.expect_code(2);
    assert!(none.stderr.contains("no manifest for platform linux/s390x"), "{}", none.stderr);
}

#[test]
fn check_and_diff_against_a_real_registry() {
    let Some((host, skopeo)) = registry() else { return };
    let t = Tree::new();
    let (_, one, two) = pushed(&t, &skopeo, &host, "gfxscan/check");
    let root = format!("registry:{host}/gfxscan/check:sample");
    let sample_dir = sample().to_string_lossy().into_owned();
    for gpu in ["gfx1100", "gfx900", "all"] {
        let remote = run(&host, None, &["check", "--gpu", gpu, "--json", "-q", &root]);
        let tree = gfxscan(["check", "--gpu", gpu, "--json", "-q", &sample_dir]);
        assert_eq!(remote.code, tree.code, "check --gpu {gpu}");
        assert_eq!(
            remote.stdout.replace(&root, "ROOT"),
            tree.stdout.replace(&sample_dir, "ROOT"),
            "check --gpu {gpu}"
        );
    }
    let old = format!("registry:{host}/gfxscan/check:sample");
    let new = format!("registry:{host}/gfxscan/check:deleted");
    let d = run(&host, None, &["diff", "--json", "-q", "--fail-on-loss", &old, &new]);
    d.expect_code(1);
    let report = d.json();
    assert_eq!(report["old"]["images"][0]["digest"].as_str(), Some(one.as_str()));
    assert_eq!(report["new"]["images"][0]["digest"].as_str(), Some(two.as_str()));
    let text = run(&host, None, &["diff", "-q", &old, &new]);
    assert!(text.stdout.contains(&one) && text.stdout.contains(&two), "{}", text.stdout);
    // A registry image against the local tree it was made of: nothing changed.
    let same = run(&host, None, &["diff", "--json", "-q", "--fail-on-loss", &sample_dir, &old]);
    same.expect_code(0);
}

#[test]
fn a_registry_with_passwords() {
    let Some((_, skopeo)) = registry() else { return };
    let Some(spec) = std::env::var("GFXSCAN_TEST_REGISTRY_AUTH").ok().filter(|s| !s.is_empty()) else {
        return skipped("no registry with passwords (GFXSCAN_TEST_REGISTRY_AUTH, started by .ci/run)");
    };
    let mut words = spec.split_whitespace();
    let (Some(host), Some(user), Some(password)) = (words.next(), words.next(), words.next()) else {
        panic!("GFXSCAN_TEST_REGISTRY_AUTH is HOST:PORT USER PASSWORD, not {spec:?}")
    };
    let t = Tree::new();
    let mut layout = Layout::new(t.path("layout"));
    layout.image("v1", &[sample_layer()], "amd64");
    push(&skopeo, &layout.dir, "v1", &format!("{host}/gfxscan/auth:v1"), Some(&format!("{user}:{password}")));
    let config = |pw: &str| {
        let dir = t.path(format!("config-{pw}"));
        std::fs::create_dir_all(&dir).expect("config dir");
        let auth = crate::registry::b64(&format!("{user}:{pw}"));
        std::fs::write(dir.join("config.json"), json!({"auths": {host: {"auth": auth}}}).to_string())
            .expect("config");
        dir
    };
    let root = format!("registry:{host}/gfxscan/auth:v1");
    let good = run(host, Some(&config(password)), &["scan", "--json", "-q", &root]);
    good.expect_code(0);
    assert!(problems(&good.json()).is_empty());
    let out = t.path("out.json");
    let bad = run(host, Some(&config("wrong")), &["scan", "-q", "-o", &out.to_string_lossy(), &root]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("access denied (401)"), "{}", bad.stderr);
    assert!(!out.exists(), "nothing written");
    let anonymous = run(host, None, &["scan", "-q", &root]);
    anonymous.expect_code(2);
    assert!(anonymous.stderr.contains("no credentials for"), "{}", anonymous.stderr);
}

/// HTTPS, the certificate checked against the trust store: the registry's CA named by
/// `SSL_CERT_FILE` (as the system store's bundle is found), else refused with why.
#[test]
fn an_https_registry_verified_against_the_trust_store() {
    let Some((_, skopeo)) = registry() else { return };
    let Some(spec) = std::env::var("GFXSCAN_TEST_REGISTRY_TLS").ok().filter(|s| !s.is_empty()) else {
        return skipped("no registry on HTTPS (GFXSCAN_TEST_REGISTRY_TLS, started by .ci/run)");
    };
    let Some((host, ca)) = spec.split_once(' ') else {
        panic!("GFXSCAN_TEST_REGISTRY_TLS is HOST:PORT CA.pem")
    };
    let t = Tree::new();
    let mut layout = Layout::new(t.path("layout"));
    layout.image("v1", &[sample_layer()], "amd64");
    push(&skopeo, &layout.dir, "v1", &format!("{host}/gfxscan/tls:v1"), None);
    let root = format!("registry:{host}/gfxscan/tls:v1");
    let empty = Tree::new();
    let scan = |ca: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        cmd.args(["scan", "--json", "-q", &root])
            .env("DOCKER_CONFIG", empty.root())
            .env_remove("SSL_CERT_DIR");
        match ca {
            Some(ca) => cmd.env("SSL_CERT_FILE", ca),
            None => cmd.env_remove("SSL_CERT_FILE"),
        };
        crate::util::run(cmd)
    };
    let trusted = scan(Some(ca));
    trusted.expect_code(0);
    let tree = gfxscan(["scan", "--json", "-q", &sample().to_string_lossy()]).json();
    assert_eq!(facts(&trusted.json()), facts(&tree));
    let untrusted = scan(None);
    untrusted.expect_code(2);
    assert!(untrusted.stderr.contains("not trusted by this system's trust store"), "{}", untrusted.stderr);
}

/// The real registry serving a corrupted and a cut blob, as its storage holds them: each a
/// problem naming the layer, nothing of it believed, exit 1. `.ci/run` names the anonymous
/// registry's storage folder (`GFXSCAN_TEST_REGISTRY_DATA`).
#[test]
fn a_real_registry_serving_a_broken_layer() {
    let Some((host, skopeo)) = registry() else { return };
    let Some(data) = std::env::var("GFXSCAN_TEST_REGISTRY_DATA").ok().filter(|s| !s.is_empty()) else {
        return skipped("no registry storage folder (GFXSCAN_TEST_REGISTRY_DATA, set by .ci/run)");
    };
    // Layers of their own (a stamp no other test's image has): blobs are shared by digest.
    let stamp = format!("{:?}-{}", std::time::SystemTime::now(), std::process::id());
    for (tag, cut) in [("corrupt", false), ("cut", true)] {
        let t = Tree::new();
        let mut layout = Layout::new(t.path("layout"));
        let base = tar_of(&[
            file("stamp", format!("{stamp}-{tag}").into_bytes()),
            file("k.co", crate::fixtures::co(crate::fixtures::GFX900, 0, 1)),
        ]);
        let top = tar_of(&[
            file("top.co", crate::fixtures::co(crate::fixtures::GFX1100, 0, 1)),
            file("stamp2", format!("{stamp}-{tag}-top").into_bytes()),
        ]);
        layout.image(tag, &[base, top.clone()], "amd64");
        push(&skopeo, &layout.dir, tag, &format!("{host}/gfxscan/broken:{tag}"), None);
        let digest = sha256(&gz(&top));
        let stored =
            Path::new(&data).join(format!("docker/registry/v2/blobs/sha256/{}/{digest}/data", &digest[..2]));
        let mut bytes = std::fs::read(&stored).expect("the stored blob");
        if cut {
            bytes.truncate(bytes.len() / 2);
        } else {
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x10;
        }
        std::fs::write(&stored, &bytes).expect("break the stored blob");
        let run =
            run(&host, None, &["scan", "--json", "-q", &format!("registry:{host}/gfxscan/broken:{tag}")]);
        run.expect_code(1);
        let snap = run.json();
        let p = problems(&snap);
        let named = format!("sha256:{digest}");
        let says = if cut { "ends after" } else { "does not match its digest" };
        assert!(p.iter().any(|(path, m)| path == &named && m.contains(says)), "{tag}: {p:?}");
        assert!(file_paths(&snap).is_empty(), "{tag}: nothing believed: {snap:#}");
    }
}
