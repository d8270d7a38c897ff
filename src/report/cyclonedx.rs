//! `scan --format cyclonedx`: the snapshot as a CycloneDX 1.6 JSON BOM, to merge with the SBOM
//! syft makes of the same tree.
//!
//! One component per listed file (the files with device code or GPU data): `library` for host
//! libraries and code-object files, `firmware` for firmware blobs, `data` for Tensile, MIOpen
//! and other GPU data. A file's component is keyed as syft keys the same file: its `name` is
//! the path from the scanned root with a leading `/`, as syft's `ToFormatModel`
//! (`syft/format/common/cyclonedxhelpers/to_format_model.go`) names file components, and it
//! carries `syft:location:0:path` with that path, as syft's `EncodeComponent`
//! (`syft/format/internal/cyclonedxutil/helpers/component.go`) encodes a package's locations:
//! both BOMs can be joined on path. Syft's `bom-ref`s are hashes of its own coordinates, so
//! ours are our own (`file:<root>:/<path>`) and never collide with them.
//!
//! Components are flat, as syft writes them. Each archive gfxscan read is a component too: a
//! `.deb` or a wheel a `library` with its `purl` (the purl spec's `deb` and `pypi` types), any
//! other archive a `file`; `dependencies` tie an archive to its members. A member's own
//! component names the package it came from in `gfxscan:package-purl`, not as its `purl`: a
//! purl is the package's identity, and a vulnerability scanner would report one advisory per
//! file that claimed it. GPU facts are properties in the
//! `gfxscan:` namespace: one `gfxscan:target` per processor served, in the natural target
//! order, then target IDs, family, role and counts.
//!
//! The BOM is deterministic: the timestamp is `SOURCE_DATE_EPOCH`'s when it is set, and absent
//! otherwise. It has no `serialNumber` (optional in 1.6): the specification asks a serial
//! number to be unique even for unchanged content, which a deterministic output cannot be.

use std::io::Write;

use serde::Serialize;

use crate::model::{ArchiveRecord, Ecosystem, Family, FileRecord, Package, RelPath, Snapshot};
use crate::source::digest::NOT_HASHED;
use crate::vocab::targets::Targets;

/// The whole BOM: the fields of bom-1.6.schema.json it uses.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Bom {
    bom_format: &'static str,
    spec_version: &'static str,
    version: u32,
    metadata: Metadata,
    components: Vec<Component>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dependencies: Vec<Dependency>,
}

/// `metadata`: when, by what tool, about what.
#[derive(Serialize)]
struct Metadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
    tools: Tools,
    component: Component,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    properties: Vec<Property>,
}

/// `metadata.tools`, in 1.6's form: the tools as components.
#[derive(Serialize)]
struct Tools {
    components: Vec<Component>,
}

/// The component types the BOM uses (`component.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum ComponentType {
    Application,
    Library,
    Firmware,
    Data,
    File,
}

#[derive(Serialize)]
struct Component {
    #[serde(rename = "type")]
    kind: ComponentType,
    #[serde(rename = "bom-ref", skip_serializing_if = "Option::is_none")]
    bom_ref: Option<String>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    purl: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hashes: Vec<Hash>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    properties: Vec<Property>,
}

impl Component {
    fn new(kind: ComponentType, bom_ref: Option<String>, name: String) -> Self {
        Component {
            kind,
            bom_ref,
            name,
            version: None,
            purl: None,
            hashes: Vec::new(),
            properties: Vec::new(),
        }
    }

    fn property(&mut self, name: &str, value: impl ToString) {
        self.properties.push(Property { name: name.to_string(), value: value.to_string() });
    }
}

#[derive(Serialize)]
struct Hash {
    alg: &'static str,
    content: String,
}

#[derive(Serialize)]
struct Property {
    name: String,
    value: String,
}

#[derive(Serialize)]
struct Dependency {
    #[serde(rename = "ref")]
    reference: String,
    #[serde(rename = "dependsOn")]
    depends_on: Vec<String>,
}

/// Writes the BOM of `snap`. `created` is `SOURCE_DATE_EPOCH` (seconds since 1970), the only
/// time the BOM may state.
pub fn write_cyclonedx(
    snap: &Snapshot,
    targets: &Targets,
    created: Option<u64>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut components: Vec<Component> = snap.archives.iter().map(|a| archive_component(snap, a)).collect();
    components.extend(snap.files.iter().map(|f| file_component(snap, f, targets)));
    let bom = Bom {
        bom_format: "CycloneDX",
        spec_version: "1.6",
        version: 1,
        metadata: metadata(snap, created),
        components,
        dependencies: dependencies(snap),
    };
    super::write_json(out, &bom)
}

fn metadata(snap: &Snapshot, created: Option<u64>) -> Metadata {
    let mut tool = Component::new(ComponentType::Application, None, snap.tool.name.clone());
    tool.version = Some(snap.tool.version.clone());
    let mut scanned = Component::new(ComponentType::File, Some("roots".into()), snap.roots.join(", "));
    for r in &snap.roots {
        scanned.property("gfxscan:root", r);
    }
    let mut properties = Vec::new();
    if !snap.problems.is_empty() {
        // Files that could not be read: the BOM may lack components.
        properties.push(Property { name: "gfxscan:problems".into(), value: snap.problems.len().to_string() });
    }
    Metadata {
        timestamp: created.map(rfc3339),
        tools: Tools { components: vec![tool] },
        component: scanned,
        properties,
    }
}

/// Seconds since 1970 as an RFC 3339 UTC time (`2024-05-01T12:00:00Z`), through the civil
/// calendar (H. Hinnant's `civil_from_days`).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// A path as syft names a file: from the scanned root, with a leading `/`; a root that is the
/// file itself, as given.
fn syft_path(snap: &Snapshot, p: &RelPath) -> String {
    if p.path.is_empty() {
        return snap.root_given(p.root).to_string();
    }
    format!("/{}", p.path)
}

fn file_ref(p: &RelPath) -> String {
    format!("file:{}:/{}", p.root, p.path)
}

fn archive_ref(p: &RelPath) -> String {
    format!("archive:{}:/{}", p.root, p.path)
}

/// What a file is, as CycloneDX types components.
fn component_type(f: &FileRecord) -> ComponentType {
    let family = f.artifact.as_ref().and_then(|a| a.family);
    if family == Some(Family::Firmware) {
        ComponentType::Firmware
    } else if !f.code_objects.is_empty() || f.bundles > 0 || f.kpack_ref.is_some() {
        ComponentType::Library
    } else {
        ComponentType::Data
    }
}

/// A JSON enum's name (`host-elf`, `lazy-index`).
fn json_name(v: &impl Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn file_component(snap: &Snapshot, f: &FileRecord, targets: &Targets) -> Component {
    let name = syft_path(snap, &f.path);
    let mut c = Component::new(component_type(f), Some(file_ref(&f.path)), name.clone());
    // The package a file came from: the innermost package among the archives holding it.
    if let Some(p) = snap.archives_holding(&f.path).into_iter().find_map(|a| a.package.as_ref()) {
        c.property("gfxscan:package-purl", purl(p));
    }
    if let Some(h) = &f.sha256 {
        c.hashes.push(Hash { alg: "SHA-256", content: h.clone() });
    }
    c.property("syft:location:0:path", &name);
    c.property("gfxscan:root", snap.root_given(f.path.root));
    if let Some(hex) = &f.path.path_hex {
        c.property("gfxscan:path-hex", hex);
    }
    c.property("gfxscan:kind", json_name(&f.kind));
    let mut processors: Vec<String> = f.code_objects.iter().map(|o| o.processor.clone()).collect();
    let mut ids: Vec<String> = f.code_objects.iter().map(|o| o.target_id.clone()).collect();
    if let Some(a) = &f.artifact {
        processors.extend(a.targets());
    }
    for list in [&mut processors, &mut ids] {
        targets.sort(list);
        list.dedup();
    }
    for t in &processors {
        c.property("gfxscan:target", t);
    }
    for t in &ids {
        c.property("gfxscan:target-id", t);
    }
    if let Some(a) = &f.artifact {
        if let Some(family) = a.family {
            c.property("gfxscan:family", family.name());
        }
        c.property("gfxscan:role", json_name(&a.role));
        c.property("gfxscan:format", a.format.name());
    }
    if !f.code_objects.is_empty() {
        c.property("gfxscan:code-objects", f.code_objects.len());
        let kernels: u64 = f.code_objects.iter().filter_map(|o| o.kernels).sum();
        c.property("gfxscan:kernels", kernels);
    }
    if f.bundles > 0 {
        c.property("gfxscan:bundles", f.bundles);
    }
    c.property("gfxscan:size", f.size);
    if let Some(first) = &f.hard_link_of {
        c.property("gfxscan:hard-link-of", syft_path(snap, first));
    }
    if f.sha256.is_none() {
        let why = snap.problems.iter().find(|p| p.path == f.path && p.message.starts_with(NOT_HASHED));
        if let Some(p) = why {
            c.property("gfxscan:sha256-missing", &p.message);
        }
    }
    c
}

fn archive_component(snap: &Snapshot, a: &ArchiveRecord) -> Component {
    let path = syft_path(snap, &a.path);
    let mut c = match &a.package {
        Some(p) => {
            let mut c = Component::new(ComponentType::Library, Some(archive_ref(&a.path)), p.name.clone());
            c.version = Some(p.version.clone());
            c.purl = Some(purl(p));
            c
        }
        None => Component::new(ComponentType::File, Some(archive_ref(&a.path)), path.clone()),
    };
    // Where syft puts a package it finds in a `.deb` file: at the file.
    c.property("syft:location:0:path", &path);
    c.property("gfxscan:root", snap.root_given(a.path.root));
    c.property("gfxscan:archive", &a.format);
    c.property("gfxscan:members", a.members);
    c
}

/// Each archive and what it holds directly: its listed files and the archives inside it.
fn dependencies(snap: &Snapshot) -> Vec<Dependency> {
    let mut deps: Vec<Dependency> = snap
        .archives
        .iter()
        .map(|a| Dependency { reference: archive_ref(&a.path), depends_on: Vec::new() })
        .collect();
    let innermost = |p: &RelPath| snap.archives_holding(p).first().map(|a| archive_ref(&a.path));
    let held = snap
        .archives
        .iter()
        .filter_map(|a| innermost(&a.path).map(|h| (h, archive_ref(&a.path))))
        .chain(snap.files.iter().filter_map(|f| innermost(&f.path).map(|h| (h, file_ref(&f.path)))));
    for (holder, member) in held {
        if let Some(d) = deps.iter_mut().find(|d| d.reference == holder) {
            d.depends_on.push(member);
        }
    }
    deps.retain(|d| !d.depends_on.is_empty());
    for d in &mut deps {
        d.depends_on.sort();
    }
    deps
}

/// A package's purl, normalised as the purl spec's type definitions say
/// (`types/deb-definition.json`: vendor and name lowercased, `arch` qualifier;
/// `types/pypi-definition.json`: no namespace, name lowercased with runs of `-`, `_`, `.` one
/// `-`). Debian is the vendor named: a `.deb` does not say which distribution built it.
pub fn purl(p: &Package) -> String {
    match p.ecosystem {
        Ecosystem::Deb => {
            let arch = p.arch.as_deref().map(|a| format!("?arch={}", encode(a))).unwrap_or_default();
            format!("pkg:deb/debian/{}@{}{arch}", encode(&p.name.to_lowercase()), encode(&p.version))
        }
        Ecosystem::Pypi => format!("pkg:pypi/{}@{}", encode(&pypi_name(&p.name)), encode(&p.version)),
    }
}

/// A Python project name normalised (PEP 503): lowercase, each run of `-`, `_`, `.` one `-`.
fn pypi_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Percent-encodes a purl component: all but letters, digits, `.-_~` and the colon (purl
/// spec, "Character encoding": `+` becomes `%2B`, `1:2.3` stays).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(ecosystem: Ecosystem, name: &str, version: &str, arch: Option<&str>) -> Package {
        Package { ecosystem, name: name.into(), version: version.into(), arch: arch.map(str::to_string) }
    }

    /// The purl spec's own examples (types/deb-definition.json, types/pypi-definition.json).
    #[test]
    fn purls_match_the_spec_examples() {
        let deb = |n, v, a| purl(&pkg(Ecosystem::Deb, n, v, Some(a)));
        assert_eq!(deb("curl", "7.50.3-1", "i386"), "pkg:deb/debian/curl@7.50.3-1?arch=i386");
        assert_eq!(deb("attr", "1:2.4.47-2", "source"), "pkg:deb/debian/attr@1:2.4.47-2?arch=source");
        assert_eq!(deb("attr", "1:2.4.47-2+b1", "amd64"), "pkg:deb/debian/attr@1:2.4.47-2%2Bb1?arch=amd64");
        let py = |n, v| purl(&pkg(Ecosystem::Pypi, n, v, None));
        assert_eq!(py("Django", "1.11.1"), "pkg:pypi/django@1.11.1");
        assert_eq!(py("django_allauth", "12.23"), "pkg:pypi/django-allauth@12.23");
        assert_eq!(py("Torch.__ROCm", "2.5.1+rocm6.2"), "pkg:pypi/torch-rocm@2.5.1%2Brocm6.2");
    }

    /// The BOM of a snapshot given as JSON.
    fn bom_of(snap: serde_json::Value) -> serde_json::Value {
        let snap: Snapshot = serde_json::from_value(snap).expect("a snapshot");
        let mut out = Vec::new();
        write_cyclonedx(&snap, &Targets::builtin(), None, &mut out).expect("written");
        serde_json::from_slice(&out).expect("JSON")
    }

    /// With --digests, a file without its hash says why, from the problem the scan recorded.
    #[test]
    fn a_file_that_could_not_be_hashed_says_why() {
        let why = format!("{NOT_HASHED}: input/output error");
        let bom = bom_of(serde_json::json!({
            "schema_version": 2, "tool": {"name": "gfxscan", "version": "0"}, "roots": ["r"],
            "summary": {"files": 2, "bytes": 20, "files_with_device_code": 0, "code_objects": 0,
                        "symlinks": 0, "kinds": {}},
            "files": [
                {"root": 0, "path": "a.hsaco", "kind": "amdgpu-elf", "size": 10, "code_objects": [],
                 "sha256": "ab"},
                {"root": 0, "path": "b.hsaco", "kind": "amdgpu-elf", "size": 10, "code_objects": []}
            ],
            "targets": {}, "problems": [{"root": 0, "path": "b.hsaco", "message": why}]
        }));
        let c = &bom["components"];
        assert_eq!(c[0]["hashes"], serde_json::json!([{"alg": "SHA-256", "content": "ab"}]));
        assert!(c[1].get("hashes").is_none());
        let props = c[1]["properties"].as_array().expect("properties");
        let missing = props.iter().find(|p| p["name"] == "gfxscan:sha256-missing").expect("said");
        assert_eq!(missing["value"], why.as_str());
        assert_eq!(bom["metadata"]["properties"][0]["value"], "1", "one problem");
    }

    #[test]
    fn times_are_utc_in_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(253_402_300_799), "9999-12-31T23:59:59Z");
    }
}
