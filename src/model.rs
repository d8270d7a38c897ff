//! The snapshot: what a scan found, as the versioned JSON contract (`docs/schema.md`).
//!
//! Everything derives `Serialize + Deserialize` so `diff` can read snapshots back. Maps are
//! `BTreeMap`s, files and problems are sorted by root and raw path bytes, and nothing depends
//! on time or thread count, so the same tree always gives byte-identical JSON.

use std::collections::BTreeMap;

pub use indexmap::IndexMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use serde::{Deserialize, Serialize};

pub use crate::parse::aotriton::AotritonFacts;
use crate::parse::bundle::BundleFormat;
pub use crate::parse::firmware::{FirmwareFacts, FirmwareHeader};
use crate::parse::magic::Kind;
pub use crate::parse::miopen::MiopenFacts;
pub use crate::parse::package::{Ecosystem, Package};
pub use crate::parse::tensile::TensileFacts;
use crate::vocab::codec::Codec;

/// Version of the JSON contract. Bump on any change that an old reader would misread.
/// 2: a code object's place is a tagged `location` (1: `container` with bundle fields reused
/// for other containers), and each family's facts are its own object in the artifact (1: one
/// flat record for every family). Version 1 snapshots are still read ([`READS`]).
pub const SCHEMA_VERSION: u32 = 2;

/// The snapshot versions this build reads.
pub const READS: [u32; 2] = [1, SCHEMA_VERSION];

/// The tool that wrote a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tool {
    /// `gfxscan`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Tool {
    /// This build of gfxscan.
    pub fn current() -> Self {
        Tool { name: env!("CARGO_PKG_NAME").to_string(), version: env!("CARGO_PKG_VERSION").to_string() }
    }
}

/// A path relative to its root, kept exact.
///
/// `path` is the UTF-8 text; when the bytes are not UTF-8 it is a lossy rendering for people
/// and `path_hex` holds the exact bytes, hex-encoded.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct RelPath {
    /// Index into `roots`.
    pub root: usize,
    /// Path relative to the root, `/`-separated; empty when the root is the file itself.
    pub path: String,
    /// Exact bytes of a path that is not UTF-8, as lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^([0-9a-f]{2})+$"))]
    pub path_hex: Option<String>,
}

impl RelPath {
    /// A folder under root `root`, shown with a trailing `/` (`opt/rocm/lib/rocblas/library/`).
    pub fn folder(root: usize, dir: &str) -> Self {
        RelPath { root, path: format!("{dir}/"), path_hex: None }
    }

    /// The file `name` in the same folder as this one.
    pub fn beside(&self, name: &str) -> Self {
        let path = match self.dir() {
            "" => name.to_string(),
            dir => format!("{dir}/{name}"),
        };
        RelPath { root: self.root, path, path_hex: None }
    }

    /// The last part of the path (the file's name).
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// The folder the path is in, without a trailing `/` (empty at the root).
    pub fn dir(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(d, _)| d)
    }

    /// Builds the record for `rel` under root `root`.
    pub fn new(root: usize, rel: &OsStr) -> Self {
        let bytes = rel.as_bytes();
        match std::str::from_utf8(bytes) {
            Ok(s) => RelPath { root, path: s.to_string(), path_hex: None },
            Err(_) => RelPath {
                root,
                path: String::from_utf8_lossy(bytes).into_owned(),
                path_hex: Some(bytes.iter().map(|b| format!("{b:02x}")).collect()),
            },
        }
    }

    /// The exact path bytes.
    pub fn bytes(&self) -> Vec<u8> {
        match &self.path_hex {
            Some(h) => (0..h.len() / 2)
                .filter_map(|i| h.get(2 * i..2 * i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
                .collect(),
            None => self.path.as_bytes().to_vec(),
        }
    }

    /// The path for people: the root as given, joined with the relative path (which is empty
    /// when the root is the file itself).
    pub fn display(&self, roots: &[String]) -> String {
        let root = roots.get(self.root).map_or("", String::as_str);
        match (root, self.path.as_str()) {
            (r, "") => r.to_string(),
            ("", p) => p.to_string(),
            (r, p) if r.ends_with('/') => format!("{r}{p}"),
            (r, p) => format!("{r}/{p}"),
        }
    }

    /// Sort key: root, then exact bytes.
    pub fn sort_key(&self) -> (usize, Vec<u8>) {
        (self.root, self.bytes())
    }
}

impl Snapshot {
    /// Root `root` as given (empty for an index past the roots).
    pub fn root_given(&self, root: usize) -> &str {
        self.roots.get(root).map_or("", String::as_str)
    }

    /// The archives read as trees that hold `path` (`pkg.deb!/usr/lib/x.so`; any file of a
    /// root that is an archive itself), innermost first.
    pub fn archives_holding(&self, path: &RelPath) -> Vec<&ArchiveRecord> {
        let mut out: Vec<&ArchiveRecord> = self
            .archives
            .iter()
            .filter(|a| a.path.root == path.root && a.path.path != path.path)
            .filter(|a| a.path.path.is_empty() || path.path.starts_with(&format!("{}!/", a.path.path)))
            .collect();
        out.sort_by_key(|a| std::cmp::Reverse(a.path.path.len()));
        out
    }

    /// True for a member of an archive read as a tree: it has no path of its own on disk.
    pub fn is_archive_member(&self, path: &RelPath) -> bool {
        !self.archives_holding(path).is_empty()
    }
}

/// What kind of place a code object sits in (derived from its [`Location`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Container {
    /// The file is the code object.
    File,
    /// An entry of an offload bundle (standalone or in `.hip_fatbin`).
    Bundle,
    /// Raw data in a host ELF, or a fat-object bundle section.
    Embedded,
    /// An image of an LLVM OffloadBinary (the new offload driver: a standalone `.offload` file
    /// or a host binary's `.llvm.offloading` section).
    OffloadBinary,
    /// A kernel of a TheRock `.kpack` archive (device code split out of a host library).
    Kpack,
}

/// A bundle's format in JSON: `plain`, or `ccob-v<version>`.
impl Serialize for BundleFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            BundleFormat::Plain => s.serialize_str("plain"),
            BundleFormat::Ccob(v) => s.collect_str(&format_args!("ccob-v{v}")),
        }
    }
}

impl schemars::JsonSchema for BundleFormat {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BundleFormat".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A bundle's format: `plain`, or `ccob-v<version>` for a compressed one.",
            "type": "string",
            "pattern": "^(plain|ccob-v[0-9]+)$"
        })
    }
}

impl<'de> Deserialize<'de> for BundleFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.strip_prefix("ccob-v").map(str::parse::<u16>) {
            _ if text == "plain" => Ok(BundleFormat::Plain),
            Some(Ok(v)) => Ok(BundleFormat::Ccob(v)),
            _ => Err(serde::de::Error::custom(format!("unknown bundle format {text:?}"))),
        }
    }
}

/// One AMDGPU code object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "AnyCodeObject")]
// The schema is of what is written; version 1's form is read too (`AnyCodeObject`).
#[schemars(!try_from)]
pub struct CodeObjectRecord {
    /// Processor (`gfx90a`, `gfx11-generic`, `unknown-0x5c`).
    pub processor: String,
    /// Canonical target ID (`gfx90a:xnack+`).
    pub target_id: String,
    /// Code object version 2..6; `null` for non-HSA objects.
    pub code_object_version: Option<u8>,
    /// Size of the ELF in bytes (uncompressed).
    pub size: u64,
    /// Kernel count; `null` when nothing in the object says.
    pub kernels: Option<u64>,
    /// Where it sits, with what only that kind of place has.
    pub location: Location,
    /// File offset of the object; for compressed bundles, its offset in the inflated bundle.
    pub offset: u64,
    /// Raw `e_flags`.
    pub e_flags: u32,
    /// Generic version of a generic-target object (V6+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic_version: Option<u8>,
    /// Code object V2: the ISA version its note states (`8.0.0`), from which `processor` was
    /// named through `targets.toml` `v2_isa`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa_version: Option<String>,
}

impl CodeObjectRecord {
    /// What the code object is for, as the runtime matches it (`vocab::runtime`): comgr
    /// matches a bundle entry by its ID, other code by its ELF.
    pub fn code_target(&self) -> crate::vocab::runtime::CodeTarget<'_> {
        let (entry_id, compressed) = match &self.location {
            Location::BundleEntry { entry_id, compression, .. } => {
                (Some(entry_id.as_str()), compression.is_some())
            }
            _ => (None, false),
        };
        crate::vocab::runtime::CodeTarget {
            target_id: &self.target_id,
            generic_version: self.generic_version,
            entry_id,
            compressed,
        }
    }
}

/// Where a code object sits in its file: one variant per kind of place, each with its own facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "in", rename_all = "kebab-case")]
pub enum Location {
    /// The file is the code object.
    File,
    /// An entry of an offload bundle (standalone, in `.hip_fatbin`, in a PE `.hip_fat`, or kept
    /// as data in another section).
    BundleEntry {
        /// The bundle entry ID as stored (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`).
        entry_id: String,
        /// File offset of the bundle holding it.
        bundle_offset: u64,
        /// `plain`, `ccob-v1`, `ccob-v2`, `ccob-v3`.
        format: BundleFormat,
        /// `zstd` or `zlib`, for compressed bundles.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compression: Option<Codec>,
        /// For a compressed bundle: its stored and inflated sizes, so the bytes an entry costs on
        /// disk can be told (`size` × stored ÷ inflated).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bundle_sizes: Option<(u64, u64)>,
    },
    /// Raw data inside a host binary, or a fat-object section `__CLANG_OFFLOAD_BUNDLE__<id>`.
    Embedded {
        /// The bundle entry ID a fat-object section is named with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        section_entry_id: Option<String>,
    },
    /// An image of an LLVM OffloadBinary (new offload driver: a standalone `.offload` file or a
    /// host binary's `.llvm.offloading` section).
    OffloadImage {
        /// `<triple>-<arch>` of the image.
        image: String,
        /// File offset of its region (0 for a standalone file, else the section's).
        region_offset: u64,
        /// `zstd` or `zlib` for an image of a compressed OffloadBinary (its `offset` then counts
        /// in the inflated binary).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compression: Option<Codec>,
    },
    /// A kernel of a TheRock `.kpack` archive.
    KpackKernel {
        /// The archive key `<binary>#<index>`.
        key: String,
    },
}

impl Location {
    /// The kind of place.
    pub fn container(&self) -> Container {
        match self {
            Location::File => Container::File,
            Location::BundleEntry { .. } => Container::Bundle,
            Location::Embedded { .. } => Container::Embedded,
            Location::OffloadImage { .. } => Container::OffloadBinary,
            Location::KpackKernel { .. } => Container::Kpack,
        }
    }
}

impl CodeObjectRecord {
    /// The kind of place it sits in.
    pub fn container(&self) -> Container {
        self.location.container()
    }

    /// The ID it is stored under: a bundle entry's or a fat-object section's entry ID, an
    /// OffloadBinary image's `<triple>-<arch>`, a kpack kernel's key.
    pub fn stored_id(&self) -> Option<&str> {
        match &self.location {
            Location::BundleEntry { entry_id, .. } => Some(entry_id),
            Location::Embedded { section_entry_id } => section_entry_id.as_deref(),
            Location::OffloadImage { image, .. } => Some(image),
            Location::KpackKernel { key } => Some(key),
            Location::File => None,
        }
    }

    /// The code group it belongs to, of which a GPU needs one object: its bundle's offset, its
    /// OffloadBinary region's, 0 for a kpack kernel; `None` for code taken whole.
    pub fn group(&self) -> Option<u64> {
        match &self.location {
            Location::BundleEntry { bundle_offset, .. } => Some(*bundle_offset),
            Location::OffloadImage { region_offset, .. } => Some(*region_offset),
            Location::KpackKernel { .. } => Some(0),
            Location::File | Location::Embedded { .. } => None,
        }
    }

    /// Where its bytes lie in its file, as a code object URI's range names them (offset,
    /// size); none when they are stored compressed (a compressed bundle or OffloadBinary) or
    /// in a kpack archive, where no range of the file is the object.
    pub fn file_range(&self) -> Option<(u64, u64)> {
        let stored_whole = match &self.location {
            Location::File | Location::Embedded { .. } => true,
            Location::BundleEntry { compression, .. } | Location::OffloadImage { compression, .. } => {
                compression.is_none()
            }
            Location::KpackKernel { .. } => false,
        };
        stored_whole.then_some((self.offset, self.size))
    }

    /// A compressed bundle's stored and inflated sizes.
    pub fn bundle_sizes(&self) -> Option<(u64, u64)> {
        match &self.location {
            Location::BundleEntry { bundle_sizes, .. } => *bundle_sizes,
            _ => None,
        }
    }
}

/// A code object as a version 1 snapshot wrote it, or as version 2 does: read into
/// [`CodeObjectRecord`] with its [`Location`] rebuilt from v1's `container` and bundle fields.
#[derive(Deserialize)]
struct AnyCodeObject {
    processor: String,
    target_id: String,
    code_object_version: Option<u8>,
    size: u64,
    kernels: Option<u64>,
    #[serde(default)]
    location: Option<Location>,
    #[serde(default)]
    container: Option<Container>,
    #[serde(default)]
    bundle_entry_id: Option<String>,
    #[serde(default)]
    bundle_format: Option<BundleFormat>,
    #[serde(default)]
    compression: Option<Codec>,
    #[serde(default)]
    bundle_offset: Option<u64>,
    #[serde(default)]
    bundle_sizes: Option<(u64, u64)>,
    offset: u64,
    e_flags: u32,
    #[serde(default)]
    generic_version: Option<u8>,
    #[serde(default)]
    isa_version: Option<String>,
}

impl AnyCodeObject {
    /// The v2 location, or the one v1's fields describe.
    fn location(&mut self) -> Result<Location, String> {
        if let Some(l) = self.location.take() {
            return Ok(l);
        }
        let id = self.bundle_entry_id.take();
        Ok(match self.container.ok_or("a code object without location or container")? {
            Container::File => Location::File,
            Container::Bundle => Location::BundleEntry {
                entry_id: id.unwrap_or_default(),
                bundle_offset: self.bundle_offset.unwrap_or(0),
                format: self.bundle_format.unwrap_or(BundleFormat::Plain),
                compression: self.compression,
                bundle_sizes: self.bundle_sizes,
            },
            Container::Embedded => Location::Embedded { section_entry_id: id },
            Container::OffloadBinary => Location::OffloadImage {
                image: id.unwrap_or_default(),
                region_offset: self.bundle_offset.unwrap_or(0),
                compression: self.compression,
            },
            Container::Kpack => Location::KpackKernel { key: id.unwrap_or_default() },
        })
    }
}

impl TryFrom<AnyCodeObject> for CodeObjectRecord {
    type Error = String;

    fn try_from(mut a: AnyCodeObject) -> Result<Self, String> {
        let location = a.location()?;
        Ok(CodeObjectRecord {
            processor: a.processor,
            target_id: a.target_id,
            code_object_version: a.code_object_version,
            size: a.size,
            kernels: a.kernels,
            location,
            offset: a.offset,
            e_flags: a.e_flags,
            generic_version: a.generic_version,
            isa_version: a.isa_version,
        })
    }
}

/// A HIP runtime library a tree ships, and its version as its file name gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HipRuntime {
    #[serde(flatten)]
    pub path: RelPath,
    /// `6.4.43484` from `libamdhip64.so.6.4.43484`; `7` from `libamdhip64.so.7` or
    /// `amdhip64_7.dll`.
    pub version: String,
}

/// How an install states its ROCm release (`parse::release`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseSignal {
    /// rocm-core's `.info/version`.
    InfoVersion,
    /// rocm-core's `include/rocm-core/rocm_version.h`.
    VersionHeader,
    /// The name of rocm-core's library, `librocm-core.so.1.0.<LIBPATCH>`.
    RocmCoreLibrary,
}

/// A file that states the ROCm release of its install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReleaseMark {
    #[serde(flatten)]
    pub path: RelPath,
    /// The release it states (`6.4.1`).
    pub version: String,
    pub signal: ReleaseSignal,
}

/// The targets an install declares it was built for: TheRock's `dist_info.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeclaredTargets {
    /// The file that declares them (`…/share/therock/dist_info.json`).
    #[serde(flatten)]
    pub path: RelPath,
    /// The targets, in the file's order (`dist_amdgpu_targets`).
    pub targets: Vec<String>,
}

/// A file that holds device code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileRecord {
    /// Root index and relative path.
    #[serde(flatten)]
    pub path: RelPath,
    /// What the file is, by its magic.
    pub kind: Kind,
    /// Size in bytes.
    pub size: u64,
    /// Offload bundles found in the file.
    #[serde(default)]
    pub bundles: u64,
    /// Its code objects, in file order.
    pub code_objects: Vec<CodeObjectRecord>,
    /// What it is beyond code objects: a Tensile, MIOpen, firmware or bitcode file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// A host library whose device code was split out into `.kpack` archives (TheRock): where
    /// the runtime looks for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kpack_ref: Option<KpackRef>,
    /// Another name of the very same file (a hard link, read once): the first of its names in
    /// path order. Its bytes are on disk once, under that name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_link_of: Option<RelPath>,
    /// With `scan --digests`: the SHA-256 of the file's bytes (an archive member's, as
    /// extracted), lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// The `.rocm_kpack_ref` of a kpack-split host library, and its code-object indexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KpackRef {
    /// The library's key in the archives' tables (`lib/librocblas.so.5`).
    pub kernel_name: String,
    /// Archive paths, relative to the library's folder; `@GFXARCH@` stands for the GPU's
    /// target ID or a less specific one.
    pub search_paths: Vec<String>,
    /// Indexes of its code objects (one per HIPK wrapper): each is looked up as
    /// `<kernel_name>#<index>`.
    pub code_objects: Vec<u64>,
}

/// What a file is within its artifact family.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Firmware: a blob the kernel driver loads.
    Blob,
    /// Device-library bitcode: `oclc_isa_version_<isa>.bc`.
    Isa,
    /// MIOpen: a system performance database.
    PerfDb,
    /// MIOpen: a system find database.
    FindDb,
    /// MIOpen: a system kernel (binary cache) database.
    KernelDb,
    /// MIOpen: a per-arch tuning model.
    TuningModel,
    /// MIOpen: a user find database.
    UserFindDb,
    /// MIOpen: a user performance database.
    UserPerfDb,
    /// MIOpen: a user kernel database.
    UserKernelDb,
    /// Tensile: `TensileLibrary_lazy_<arch>.dat`, opened by the device's name.
    LazyIndex,
    /// Tensile: `TensileLibrary_<arch>.dat`.
    Index,
    /// Tensile: the merged `TensileLibrary.dat`.
    MergedIndex,
    /// Tensile: a sub-library of a lazy index.
    SubLibrary,
    /// Tensile: a `_fallback` sub-library.
    FallbackLibrary,
    /// Tensile: a `_fallback` code file.
    FallbackCode,
    /// Tensile: a code-object file.
    #[default]
    Code,
    /// Tensile: `Kernels.so-000-<arch>.hsaco`, source kernels.
    SourceKernels,
    /// Tensile: `TensileManifest.txt`.
    Manifest,
    /// hipBLASLt: `TensileLiteLibrary_lazy_Mapping.dat`, solution index → code-object library.
    SolutionMap,
    /// hipBLASLt: `hipblasltExtOpLibrary.dat`, the extension operations' index.
    ExtopIndex,
    /// AOTriton: an AKS2 kernel archive (`aotriton.images/amd-<pack>/<family>/<kernel>/*.aks2`).
    KernelArchive,
    /// AOTriton: `aotriton.images/amd-<pack>/__signature__`, the build's JSON signature.
    ImageSignature,
}

impl Role {
    /// An index a Tensile library is opened through, in rocBLAS's lookup order.
    pub const INDEXES: [Role; 3] = [Role::LazyIndex, Role::Index, Role::MergedIndex];

    /// True for the index roles.
    pub fn is_index(self) -> bool {
        Role::INDEXES.contains(&self)
    }

    /// True for MIOpen's databases (system and user; not tuning models).
    pub fn is_database(self) -> bool {
        matches!(
            self,
            Role::PerfDb
                | Role::FindDb
                | Role::KernelDb
                | Role::UserFindDb
                | Role::UserPerfDb
                | Role::UserKernelDb
        )
    }

    /// True for MIOpen's kernel databases, whose rows are `kern_db` entries.
    pub fn is_kernel_db(self) -> bool {
        matches!(self, Role::KernelDb | Role::UserKernelDb)
    }
}

/// How an artifact file is stored. Compression is a [`Codec`], the one enum of compressions;
/// in JSON a compressed file's storage is its codec's name (`zstd`, `xz`, `zlib`, `gzip`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Storage {
    /// Bytes as they are used (firmware).
    #[default]
    Raw,
    /// Text (MIOpen text databases, `TensileManifest.txt`).
    Text,
    /// MessagePack (Tensile indexes).
    Msgpack,
    /// A model file, opaque.
    Model,
    Elf,
    /// An offload bundle.
    Bundle,
    /// A compressed offload bundle.
    Ccob,
    Sqlite,
    /// Compressed whole with a codec gfxscan decodes (`.bin.zst` firmware, `.dat.zlib`).
    Compressed(Codec),
    /// bzip2, which gfxscan does not decode (MIOpen's source forms).
    Bzip2,
    /// A git-lfs pointer in place of the file.
    GitLfsPointer,
    /// LLVM bitcode.
    Bitcode,
    /// An AOTriton Kernel Storage V2 archive (`AKS2` header, xz-compressed directory and images).
    Aks2,
    /// A symbolic link (no content of its own).
    Link,
}

impl Storage {
    /// Every storage without a codec, by its JSON name.
    const PLAIN: [(Storage, &'static str); 12] = [
        (Storage::Raw, "raw"),
        (Storage::Text, "text"),
        (Storage::Msgpack, "msgpack"),
        (Storage::Model, "model"),
        (Storage::Elf, "elf"),
        (Storage::Bundle, "bundle"),
        (Storage::Ccob, "ccob"),
        (Storage::Sqlite, "sqlite"),
        (Storage::Bzip2, "bzip2"),
        (Storage::GitLfsPointer, "git-lfs-pointer"),
        (Storage::Bitcode, "bitcode"),
        (Storage::Aks2, "aks2"),
    ];

    /// Its name in messages, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Storage::Compressed(c) => c.name(),
            Storage::Link => "link",
            s => Storage::PLAIN.iter().find(|(p, _)| *p == s).map_or("raw", |(_, n)| n),
        }
    }

    /// The storage a JSON name stands for.
    pub fn from_name(name: &str) -> Option<Storage> {
        if name == "link" {
            return Some(Storage::Link);
        }
        let plain = Storage::PLAIN.iter().find(|(_, n)| *n == name).map(|(s, _)| *s);
        plain.or_else(|| Codec::from_name(name).map(Storage::Compressed))
    }
}

impl Serialize for Storage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for Storage {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Storage".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let plain = Storage::PLAIN.iter().map(|(s, _)| *s).chain([Storage::Link]);
        let names: Vec<&str> = plain.chain(Codec::ALL.map(Storage::Compressed)).map(Storage::name).collect();
        schemars::json_schema!({
            "description": "How an artifact file is stored; a compressed file's storage is its codec's name.",
            "type": "string",
            "enum": names
        })
    }
}

impl<'de> Deserialize<'de> for Storage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Storage::from_name(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown storage {text:?}")))
    }
}

pub use crate::vocab::library::{Component, Family};

/// A file's place in an artifact family and the facts that decide which targets it serves:
/// what every family's files have, and each family's own facts as its own type (read by its
/// cataloger from the file: `families::<family>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "AnyArtifact")]
// The schema is of what is written; version 1's flat form is read too (`AnyArtifact`).
#[schemars(!try_from)]
pub struct Artifact {
    pub family: Option<Family>,
    /// What the file is within its family.
    pub role: Role,
    /// How it is stored.
    pub format: Storage,
    /// The target its name (or its folder's name) claims, resolved through targets.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_target: Option<String>,
    /// Target-feature variant the name states (`xnack+`, `xnack-`, `nosramecc`, `sramecc`, `xnack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_variant: Option<String>,
    /// The targets its content serves, when the content says (index processors, code objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_targets: Option<Vec<String>>,
    /// A git-lfs pointer stored in place of the file (any family): the size of the file it
    /// stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lfs_size: Option<u64>,
    /// Tensile's own facts (rocBLAS, hipBLASLt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensile: Option<TensileFacts>,
    /// MIOpen's own facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miopen: Option<MiopenFacts>,
    /// Firmware's own facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<FirmwareFacts>,
    /// AOTriton's own facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aotriton: Option<AotritonFacts>,
}

/// An artifact as version 2 writes it, or as version 1 did (every family's facts in one flat
/// record): read into [`Artifact`], v1's fields moved into their family's facts.
#[derive(Deserialize)]
struct AnyArtifact {
    family: Option<Family>,
    role: Role,
    format: Storage,
    #[serde(default)]
    name_target: Option<String>,
    #[serde(default)]
    name_variant: Option<String>,
    #[serde(default)]
    content_targets: Option<Vec<String>>,
    #[serde(default)]
    lfs_size: Option<u64>,
    #[serde(default)]
    tensile: Option<TensileFacts>,
    #[serde(default)]
    miopen: Option<MiopenFacts>,
    #[serde(default)]
    firmware: Option<FirmwareFacts>,
    #[serde(default)]
    aotriton: Option<AotritonFacts>,
    // Version 1's flat fields.
    #[serde(default)]
    library: Option<Component>,
    #[serde(default)]
    lists_targets: Option<Vec<String>>,
    #[serde(default)]
    pack_targets: Option<Vec<String>>,
    #[serde(default)]
    placeholders: Vec<String>,
    #[serde(default)]
    solutions: Option<u64>,
    #[serde(default)]
    entries: Option<u64>,
    #[serde(default)]
    any_processor: bool,
    #[serde(default)]
    cu_count: Option<u32>,
    #[serde(default)]
    records: Option<u64>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    firmware_dir: Option<String>,
    #[serde(default)]
    header: Option<FirmwareHeader>,
}

impl TryFrom<AnyArtifact> for Artifact {
    type Error = String;

    fn try_from(a: AnyArtifact) -> Result<Self, String> {
        // Version 1's flat fields, when it wrote any: a version 2 artifact without its family's
        // facts reads back as written (no facts), so a snapshot read and written again is the
        // same bytes (`--reuse` takes records from one).
        let flat = a.library.is_some()
            || a.lists_targets.is_some()
            || a.pack_targets.is_some()
            || !a.placeholders.is_empty()
            || a.solutions.is_some()
            || a.entries.is_some()
            || a.any_processor
            || a.cu_count.is_some()
            || a.records.is_some()
            || a.prefix.is_some()
            || a.firmware_dir.is_some()
            || a.header.is_some();
        let v1 = |f: Family| flat && a.family == Some(f);
        let tensile = a.tensile.or_else(|| {
            v1(Family::Tensile).then_some(TensileFacts {
                library: a.library,
                lists_targets: a.lists_targets,
                placeholders: a.placeholders,
                solutions: a.solutions,
                entries: a.entries,
                any_processor: a.any_processor,
                unreadable: false,
            })
        });
        let miopen = a.miopen.or_else(|| {
            v1(Family::Miopen).then_some(MiopenFacts { cu_count: a.cu_count, records: a.records })
        });
        let firmware = a.firmware.or_else(|| {
            v1(Family::Firmware).then_some(FirmwareFacts {
                prefix: a.prefix,
                dir: a.firmware_dir,
                header: a.header,
            })
        });
        let aotriton = a.aotriton.or_else(|| {
            v1(Family::Aotriton).then_some(AotritonFacts { pack_targets: a.pack_targets, kernels: a.records })
        });
        Ok(Artifact {
            family: a.family,
            role: a.role,
            format: a.format,
            name_target: a.name_target,
            name_variant: a.name_variant,
            content_targets: a.content_targets,
            lfs_size: a.lfs_size,
            tensile,
            miopen,
            firmware,
            aotriton,
        })
    }
}

impl Artifact {
    /// The library that loads a Tensile file.
    pub fn component(&self) -> Option<Component> {
        self.tensile.as_ref().and_then(|t| t.library)
    }

    /// A Tensile index with a row for any processor.
    pub fn any_processor(&self) -> bool {
        self.tensile.as_ref().is_some_and(|t| t.any_processor)
    }

    /// The sub-libraries a lazy Tensile index names.
    pub fn placeholders(&self) -> &[String] {
        self.tensile.as_ref().map_or(&[], |t| t.placeholders.as_slice())
    }

    /// What the file holds, counted: a MIOpen database's records, an AOTriton archive's kernels.
    pub fn records(&self) -> Option<u64> {
        let m = self.miopen.as_ref().and_then(|m| m.records);
        m.or_else(|| self.aotriton.as_ref().and_then(|a| a.kernels))
    }

    /// A firmware blob's common header.
    pub fn firmware_header(&self) -> Option<FirmwareHeader> {
        self.firmware.as_ref().and_then(|f| f.header)
    }

    /// Tensile's facts, made when first set.
    pub fn tensile_mut(&mut self) -> &mut TensileFacts {
        self.tensile.get_or_insert_with(TensileFacts::default)
    }

    /// MIOpen's facts, made when first set.
    pub fn miopen_mut(&mut self) -> &mut MiopenFacts {
        self.miopen.get_or_insert_with(MiopenFacts::default)
    }

    /// The targets this file counts for: its content's when known (with its name's when a
    /// row serves any processor), else its name's (an AOTriton pack folder's processors).
    pub fn targets(&self) -> Vec<String> {
        match &self.content_targets {
            // An index with a row for any processor serves the target it is named for too.
            Some(t) if self.any_processor() => {
                let mut t = t.clone();
                if let Some(n) = self.name_target.as_ref().filter(|n| !t.contains(n)) {
                    t.push(n.clone());
                }
                t
            }
            Some(t) => t.clone(),
            None => match self.aotriton.as_ref().and_then(|a| a.pack_targets.as_ref()) {
                Some(p) => p.clone(),
                None => self.name_target.iter().cloned().collect(),
            },
        }
    }
}

/// A symbolic link met during the walk (followed only with `--follow-links`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkRecord {
    #[serde(flatten)]
    pub path: RelPath,
    /// Where it points, as stored.
    pub target: String,
    /// Its family by name, for links inside artifact folders (firmware, Tensile libraries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
}

/// A file (or link) whose name claims one target while its content serves others.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mismatch {
    #[serde(flatten)]
    pub path: RelPath,
    /// The target the name claims.
    pub name_target: String,
    /// The targets the content serves.
    pub content_targets: Vec<String>,
    /// For a link: the file it points to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via_link: Option<String>,
}

/// A map keyed by processor name, kept in the natural target order (`Targets::cmp`) so every
/// JSON map reads like the tables.
pub type TargetMap<V> = IndexMap<String, V>;

/// Totals for one processor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetCounts {
    /// Code objects for this processor.
    pub code_objects: u64,
    /// Kernels in them (objects with an unknown count add nothing).
    pub kernels: u64,
    /// Bytes of device code (uncompressed ELF sizes).
    pub bytes: u64,
    /// Files holding at least one of them.
    pub files: u64,
    /// Code objects per canonical target ID.
    pub target_ids: BTreeMap<String, u64>,
}

/// Something that could not be read or made sense of; the scan went on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Problem {
    /// Root index and relative path (empty for a root itself).
    #[serde(flatten)]
    pub path: RelPath,
    /// One line: what went wrong.
    pub message: String,
}

/// Counts over everything the scan looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// Regular files looked at.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files holding device code (those in `files`).
    pub files_with_device_code: u64,
    /// Code objects in all.
    pub code_objects: u64,
    /// Symbolic links met and not followed.
    pub symlinks: u64,
    /// FIFOs, sockets and device nodes inside the roots: not regular files, never opened.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub special_files: u64,
    /// Files per kind, by magic.
    #[schemars(with = "MapKeyedBy<Kind, u64>")]
    pub kinds: BTreeMap<Kind, u64>,
}

/// For `skip_serializing_if`: a count of zero is left out.
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The whole result of a scan: the JSON contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Snapshot {
    /// The version of the snapshot contract ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool that wrote it.
    pub tool: Tool,
    /// The roots as given (or as found by default).
    pub roots: Vec<String>,
    /// Counts over everything the scan looked at.
    pub summary: Summary,
    /// Files holding device code, sorted by root and path.
    pub files: Vec<FileRecord>,
    /// Totals per processor, in the natural target order.
    pub targets: TargetMap<TargetCounts>,
    /// Problems, sorted by root and path.
    pub problems: Vec<Problem>,
    /// Symbolic links inside artifact folders, sorted.
    #[serde(default)]
    pub links: Vec<LinkRecord>,
    /// Files and links whose name claims a target their content does not serve.
    #[serde(default)]
    pub mismatches: Vec<Mismatch>,
    /// Per artifact family, per target: how much there is (see docs/schema.md).
    #[serde(default)]
    pub families: IndexMap<String, TargetMap<u64>>,
    /// The targets the per-target tables were cut to (`scan --only`, `--compare`); absent for
    /// a whole snapshot. `diff` compares only these targets against such a snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filtered_to: Option<Vec<String>>,
    /// In a filtered view: each listed target whose generic target has code here (`gfx1151` →
    /// `gfx11-generic`), whose counts are then listed beside it.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub via_generic: TargetMap<String>,
    /// Archives read as trees (packages, wheels, tarballs, images), sorted; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archives: Vec<ArchiveRecord>,
    /// Ways the install is broken as shipped, found from its files alone; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// HIP runtimes the tree ships (`libamdhip64.so.<version>`, `amdhip64_<major>.dll`): the
    /// runtime whose matching rules apply to the libraries of its install. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hip_runtimes: Vec<HipRuntime>,
    /// TheRock installs' own word on the targets they were built for
    /// (`share/therock/dist_info.json`); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared_targets: Vec<DeclaredTargets>,
    /// Files that state their install's ROCm release (rocm-core's version file, header and
    /// library name); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rocm_releases: Vec<ReleaseMark>,
    /// With `--follow-links`: links followed to a place outside their root, with the real path
    /// each leads to. What lies there was scanned as part of the root. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links_out_of_root: Vec<LinkRecord>,
    /// `scan --reuse`: what each plain file was when it was read, for the next scan to tell
    /// which files are unchanged and take their facts from here. Absent without `--reuse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identities: Option<Identities>,
    /// The kernel's amdgpu driver modules in the roots (a root that is a whole system or its
    /// image: `lib/modules/<release>/…/amdgpu.ko*`), each with the firmware it declares and
    /// which of those files the root holds, found as the kernel's loader finds them. Absent
    /// when no root holds one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<DriverRecord>,
}

/// One amdgpu kernel module and the firmware it may ask for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriverRecord {
    /// Root index and the module's path (`lib/modules/6.12.117+deb13-amd64/kernel/drivers/gpu/
    /// drm/amd/amdgpu/amdgpu.ko.xz`): of each release, the one modprobe loads (`updates/` before
    /// the kernel's own).
    #[serde(flatten)]
    pub path: RelPath,
    /// The kernel release it was built for (`vermagic`'s first word; for a built-in driver,
    /// its `lib/modules` folder's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// Built into the kernel, not a module: `path` is the release's `modules.builtin.modinfo`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub built_in: bool,
    /// The kernel has no amdgpu driver: depmod's `modules.dep` names none and
    /// `modules.builtin` does not list it; `path` is the release folder.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub absent: bool,
    /// Why the module could not be read (its problem says the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// For a built-in driver: the firmware its kernel carries in its own image
    /// (`CONFIG_EXTRA_FIRMWARE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub built_in_firmware: Vec<String>,
    /// Whether that kernel's loader takes `.zst` and `.xz` firmware: from its configuration
    /// (`boot/config-<release>`) when the root holds it, else by version.
    pub firmware_zstd: bool,
    pub firmware_xz: bool,
    /// The firmware files it declares (`MODULE_FIRMWARE`, `modinfo -F firmware`), in order.
    pub firmware: Vec<String>,
    /// Those of them the root holds, as the kernel's loader would find them.
    pub present: Vec<String>,
    /// The driver parameters that decide which files it asks for (`mes`, `mes_kiq`, `uni_mes`,
    /// `fw_load_type`) as the root sets them (`options amdgpu …` in `modprobe.d`; for the
    /// running system, the kernel's command line too, or a loaded driver's own); empty: the
    /// driver's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<(String, String)>,
    /// The parameters are a loaded driver's (`/sys/module/amdgpu/parameters`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parameters_running: bool,
}

/// The files a scan read, as `stat` showed them (`scan --reuse`), and what their facts depend
/// on besides their bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Identities {
    /// The build of gfxscan that read the facts: its version and a digest of its sources
    /// (`reuse::reader`). Facts read by another build are read again.
    pub reader: String,
    /// The target table the facts were read with (`vocab::targets::Targets::digest`): facts
    /// read with another table are read again.
    pub targets: String,
    /// Listed files carry their SHA-256 (`--digests`).
    pub digests: bool,
    /// Who the scan read as (`source::file::credentials`): what it could open depends on it, so
    /// a scan that reads as another user takes nothing from this snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    /// When every file met was recorded and nothing was amiss: what the JSON was made from
    /// (`reuse::Survey::key`). A rescan that finds the same key writes this document again
    /// without reading it further (`cmd::scan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^[0-9a-f]{64}$"))]
    pub rescan_key: Option<String>,
    /// With `rescan_key`: the SHA-256 of this whole document as written, these 64 digits read
    /// as zeros (`reuse::seal`). A document changed since is read as facts, never passed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^[0-9a-f]{64}$"))]
    pub document_sha256: Option<String>,
    /// Every plain file read whose facts hold no problem (not an archive), sorted by root and
    /// path; a file changed within [`crate::reuse::RACY`] of the scan is left out.
    pub files: Vec<FileIdentity>,
}

/// A file as `stat` showed it when it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileIdentity {
    #[serde(flatten)]
    pub path: RelPath,
    /// What its first bytes said it is.
    pub kind: Kind,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Last modification: seconds and nanoseconds since the epoch.
    pub mtime: [i64; 2],
    /// Last change of the inode (which no user can set back): seconds and nanoseconds.
    pub ctime: [i64; 2],
}

/// What kind of inconsistency a finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// A library's host code objects cover targets its Tensile library does not, or the
    /// reverse.
    HostTensileMismatch,
    /// A library lacks targets most of its sibling libraries in the same install have.
    SiblingLacksTarget,
    /// A lazy Tensile index names sub-libraries or code-object files that are absent.
    IndexNamesMissing,
    /// Tensile sub-libraries that no lazy index beside them names: never opened.
    NeverOpened,
    /// A TheRock install's declared targets (`dist_info.json`) and the code it ships differ.
    DeclaredTargetsDiffer,
    /// A file or link named for a target its content does not serve.
    NameLies,
    /// A kind this version does not know (a snapshot from a newer gfxscan): kept, not refused.
    #[serde(other)]
    Unknown,
}

/// One way an install is broken as shipped: what, where, and why it breaks a run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    pub kind: FindingKind,
    /// The library (or folder, ending in `/`) it is about.
    pub library: RelPath,
    /// The targets concerned, in the natural order.
    pub targets: Vec<String>,
    /// The files concerned (a missing file: where the library looks for it).
    pub paths: Vec<RelPath>,
    /// One line: what is inconsistent and what a run would meet.
    pub why: String,
}

/// An archive whose members were read in place of the archive itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArchiveRecord {
    /// Root index and path; members are reported under it (`<path>!/<member>`, or just
    /// `<member>` when the archive is the root).
    #[serde(flatten)]
    pub path: RelPath,
    /// `deb:data.tar.xz`, `zip`, `tar`, `tar+gzip`, `tar+zstd`, `tar+xz`, `docker-image`,
    /// `oci-image`.
    pub format: String,
    /// Regular members read (for an image, the files of its final file system).
    pub members: u64,
    /// Layers, for container images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<u32>,
    /// The package the archive is, as its own metadata names it: a `.deb`'s `control`, a
    /// wheel's `*.dist-info/METADATA`. Absent for other archives, and when that metadata could
    /// not be read (a problem then says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<Package>,
    /// For an image read from a registry (`registry:` root): where it came from. Absent for
    /// other archives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSource>,
}

/// Where an image read from a registry came from: the reference as resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ImageSource {
    /// The registry as the reference names it (`docker.io`, `localhost:5000`).
    pub registry: String,
    /// The repository (`rocm/pytorch`).
    pub repository: String,
    /// The tag asked for; absent when the reference named a digest only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The digest of the image manifest read (`sha256:…`): what was scanned, whatever the tag
    /// points at later.
    pub digest: String,
    /// The digest of the index (multi-platform image) it was chosen from; absent for an image
    /// that is not in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_digest: Option<String>,
    /// The platform (`linux/amd64`): the index entry's, else the image configuration's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
}

/// The schema of a map keyed by an enum's JSON words (`BTreeMap<Kind, u64>`), for a field's
/// `#[schemars(with = …)]`: its keys are held to `K`, its values to `V`.
pub struct MapKeyedBy<K, V>(std::marker::PhantomData<(K, V)>);

impl<K: schemars::JsonSchema, V: schemars::JsonSchema> schemars::JsonSchema for MapKeyedBy<K, V> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Map_of_{}_to_{}", K::schema_name(), V::schema_name()).into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "propertyNames": g.subschema_for::<K>(),
            "additionalProperties": g.subschema_for::<V>()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Codec, FindingKind, Storage};

    /// A snapshot from a newer gfxscan may carry kinds this one does not know: read, not refused.
    #[test]
    fn a_finding_kind_from_a_newer_version_is_kept_as_unknown() {
        let k: FindingKind = serde_json::from_str("\"index-names-missing\"").expect("known");
        assert_eq!(k, FindingKind::IndexNamesMissing);
        let k: FindingKind = serde_json::from_str("\"from-a-newer-version\"").expect("unknown kind read");
        assert_eq!(k, FindingKind::Unknown);
    }

    /// Version 1 code objects read into the location their `container` and bundle fields
    /// described, for every container.
    #[test]
    fn version_1_code_objects_read_into_locations() {
        let v1 = |container: &str, id: &str, offset: &str| {
            let text = format!(
                r#"{{"processor": "gfx942", "target_id": "gfx942", "code_object_version": 5, "size": 10,
                    "kernels": 1, "container": "{container}", "bundle_entry_id": {id},
                    "bundle_format": null, "compression": null, "bundle_offset": {offset},
                    "offset": 64, "e_flags": 76}}"#
            );
            serde_json::from_str::<super::CodeObjectRecord>(&text).expect("a v1 code object").location
        };
        use super::Location;
        assert_eq!(v1("file", "null", "null"), Location::File);
        assert_eq!(
            v1("offload-binary", r#""amdgcn-amd-amdhsa-gfx942""#, "4096"),
            Location::OffloadImage {
                image: "amdgcn-amd-amdhsa-gfx942".into(),
                region_offset: 4096,
                compression: None
            }
        );
        assert_eq!(v1("kpack", r#""lib/x.so#3""#, "0"), Location::KpackKernel { key: "lib/x.so#3".into() });
        assert_eq!(
            v1("embedded", r#""hipv4-amdgcn-amd-amdhsa--gfx942""#, "null"),
            Location::Embedded { section_entry_id: Some("hipv4-amdgcn-amd-amdhsa--gfx942".into()) }
        );
        assert!(matches!(
            v1("bundle", r#""hipv4-amdgcn-amd-amdhsa--gfx942""#, "8192"),
            Location::BundleEntry { bundle_offset: 8192, .. }
        ));
    }

    /// Storage and codecs do not overlap: a compressed file's storage is its codec, named in
    /// JSON as the codec is; every storage reads back as itself.
    #[test]
    fn storage_names_round_trip_and_compression_is_a_codec() {
        let all = [
            Storage::Raw,
            Storage::Text,
            Storage::Msgpack,
            Storage::Model,
            Storage::Elf,
            Storage::Bundle,
            Storage::Ccob,
            Storage::Sqlite,
            Storage::Bzip2,
            Storage::GitLfsPointer,
            Storage::Bitcode,
            Storage::Aks2,
            Storage::Link,
            Storage::Compressed(Codec::Zstd),
            Storage::Compressed(Codec::Xz),
            Storage::Compressed(Codec::Zlib),
            Storage::Compressed(Codec::Gzip),
        ];
        for s in all {
            let json = serde_json::to_string(&s).expect("serializes");
            assert_eq!(serde_json::from_str::<Storage>(&json).expect("reads"), s, "{json}");
        }
        assert_eq!(serde_json::to_string(&Storage::Compressed(Codec::Zstd)).expect("json"), "\"zstd\"");
        assert!(serde_json::from_str::<Storage>("\"lzma\"").is_err());
    }
}
