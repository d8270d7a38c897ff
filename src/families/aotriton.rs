//! AOTriton: the kernel images of PyTorch's flash and memory-efficient attention on ROCm,
//! installed beside `libaotriton_v2.so` as `aotriton.images/amd-<pack>/<family>/<kernel>/*.aks2`
//! (AOTriton 0.8 to 0.12), with the build's `amd-<pack>/__signature__` (0.12 on). Since 0.13
//! the archives are entries of `amd-<pack>/<family>/<kernel>.zip`, judged as if unpacked
//! beside it (`unpacks_in_place`). Verified against ROCm/aotriton:
//!
//! * `v3src/packed_kernel_common.cc` `locate_aotriton_images`: the folder is
//!   `aotriton.images` next to the library (`KERNEL_STORAGE_V2_BASE`); `v3src/CMakeLists.txt`
//!   installs it to `lib/`.
//! * `python/gpu_targets.py` (`v3python/` before 0.13) `AOTRITON_ARCH_TO_PACK` and
//!   `AOTRITON_ARCH_TO_DIRECTORY`: the folder is `amd-` and a pack, one processor (`gfx90a`,
//!   `gfx942`, `gfx950`, `gfx1250`) or a group: `gfx11xx` (0.10: gfx1100, gfx1101, gfx1150,
//!   gfx1151; 0.11 adds gfx1102, gfx1103), `gfx110x` (0.12 on: gfx1100 to gfx1103), `gfx115x`
//!   (gfx1150 to gfx1153), `gfx120x` (gfx1200, gfx1201).
//! * No tuning database is installed: the `tuning_database.sqlite3` of the source tree is
//!   compiled into the library's dispatch tables at build time.
//!
//! What a missing folder costs is PyTorch's (pytorch/pytorch): `sdp_utils.cpp`
//! `check_flash_attention_hardware_support` and `check_mem_efficient_hardware_support` ask
//! `aotriton::v2::flash::check_gpu`, which knows only the architectures libaotriton was built
//! for; `select_sdp_backend` then takes the next backend, the math path, with no warning. On an
//! architecture it was built for, a missing image fails in AOTriton
//! (`on_device_kernel.cc` `OnDeviceKernel::load_for_device`: `hipErrorInvalidImage`) and
//! `flash_attn/aot/mha_all_aot.hip` `mha_fwd_aot` does not check the error
//! (`hipError_t err; // TODO: Error handling`).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Component as PathPart, Path};

use super::{files_of, Cataloger, Content, Item, Library};
use super::{FactsError, Row};
use crate::model::{AotritonFacts, Artifact, Family, FileRecord, Role, Storage};
use crate::parse::aotriton::{is_aks2, parse_aks2_directory, parse_aks2_header, MAX_DIRECTORY};
use crate::parse::{ByteSource, ParseError};
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::units::thousands;
use crate::vocab::verdict::{Cost, GapRule, LibraryKind, Verdict};

/// The AOTriton family.
pub struct Aotriton;

/// The folder AOTriton reads its images from (`KERNEL_STORAGE_V2_BASE`).
pub const IMAGES_DIR: &str = "aotriton.images";

/// PyTorch `sdp_utils.cpp` `check_flash_attention_hardware_support` / `select_sdp_backend`,
/// `mha_all_aot.hip` `mha_fwd_aot`: no images for the GPU, no AOTriton attention.
pub const NO_IMAGES: GapRule = GapRule {
    cost: Cost::FailsItsUsers,
    consequence: "PyTorch's flash and memory-efficient attention (SDPA) cannot use AOTriton on this GPU: \
                  with libaotriton not built for it, SDPA silently falls back to the slower math path; \
                  built for it but without images, the kernels fail to load and PyTorch does not check the error",
};

const ROWS: &[Row] = &[Row {
    key: "aotriton-kernel-archives",
    label: "AOTriton kernel archives (AKS2)",
    column: "aotriton",
    within: None,
    gap: Some(&NO_IMAGES),
}];

/// The `amd-<pack>` folder right under `aotriton.images` in `path`, with the file below it:
/// the pack's name (`gfx942`, `gfx110x`).
fn pack_of(path: &Path) -> Option<String> {
    let parts: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            PathPart::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let at = parts.iter().position(|n| n.eq_ignore_ascii_case(IMAGES_DIR))?;
    // The pack folder, and the file somewhere below it.
    if parts.len() < at + 3 {
        return None;
    }
    let pack = parts.get(at + 1)?.to_str()?.strip_prefix("amd-")?;
    pack.starts_with("gfx").then(|| pack.to_string())
}

/// The processors a pack serves: its group's, or the one it names.
fn pack_processors(pack: &str, targets: &Targets) -> (Option<String>, Option<Vec<String>>) {
    // A group pack names its processors in targets.toml (`aotriton_packs`).
    let mut members: Vec<String> = targets
        .iter()
        .filter(|t| t.aotriton_packs.iter().any(|p| p.eq_ignore_ascii_case(pack)))
        .map(|t| t.name.clone())
        .collect();
    members.sort();
    match members.is_empty() {
        false => (None, Some(members)),
        true => (targets.by_name(pack).map(|t| t.name.clone()), None),
    }
}

/// The `aotriton.images` folder of a `/`-separated path.
fn images_dir(path: &str) -> Option<String> {
    let mut at = 0;
    for part in path.split('/') {
        if part.eq_ignore_ascii_case(IMAGES_DIR) {
            return path.get(..at + part.len()).map(str::to_string);
        }
        at += part.len() + 1;
    }
    None
}

/// Kernels listed in an AKS2 archive: its header's count, confirmed by walking its inflated
/// directory.
pub fn count_kernels(src: &dyn ByteSource) -> Result<u64, ParseError> {
    let header = parse_aks2_header(src)?;
    let want = u64::from(header.directory_size);
    if want > MAX_DIRECTORY {
        return Err(ParseError::TooLarge { what: "AKS2 directory", claimed: want, limit: MAX_DIRECTORY });
    }
    let decode = |e: std::io::Error| ParseError::Decompress { what: "AKS2 xz stream", detail: e.to_string() };
    // An `.xz` stream only, as `PackedKernel` decodes (`lzma_stream_decoder`), under the shared
    // memory limit: a hostile header may ask for a 4 GiB dictionary.
    let mut dir = Vec::new();
    crate::decode::xz_reader(Reader { src, at: 16 }, false)
        .map_err(decode)?
        .take(want)
        .read_to_end(&mut dir)
        .map_err(decode)?;
    Ok(parse_aks2_directory(&dir, &header)?.len() as u64)
}

/// A forward reader over a byte source.
struct Reader<'a> {
    src: &'a dyn ByteSource,
    at: u64,
}

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let chunk = self.src.read_up_to(self.at, buf.len().min(64 << 10)).map_err(std::io::Error::other)?;
        let n = chunk.len();
        buf.get_mut(..n).ok_or_else(|| std::io::Error::other("short buffer"))?.copy_from_slice(&chunk);
        self.at += n as u64;
        Ok(n)
    }
}

impl Cataloger for Aotriton {
    fn family(&self) -> Family {
        Family::Aotriton
    }

    /// A file below `aotriton.images/amd-<pack>/` that is an AKS2 archive by content (a link by
    /// its `.aks2` name), or the pack's `__signature__` (text).
    fn detect(&self, path: &Path, name: &str, content: Content, targets: &Targets) -> Option<Artifact> {
        let pack = pack_of(path)?;
        let head = match content {
            Content::File(_, head) => head,
            Content::Link => b"",
        };
        let role = if name == "__signature__" && (content.is_link() || content.is_text()) {
            Role::ImageSignature
        } else if is_aks2(head) || (content.is_link() && name.ends_with(".aks2")) {
            Role::KernelArchive
        } else {
            return None;
        };
        let (name_target, pack_targets) = pack_processors(&pack, targets);
        let plain = if role == Role::KernelArchive { Storage::Aks2 } else { Storage::Text };
        Some(Artifact {
            family: Some(Family::Aotriton),
            role,
            format: content.storage(plain),
            name_target,
            aotriton: pack_targets.map(|p| AotritonFacts { pack_targets: Some(p), kernels: None }),
            ..Artifact::default()
        })
    }

    /// The kernel count of an AKS2 archive.
    fn facts(&self, a: &mut Artifact, item: &Item, problems: &mut Vec<FactsError>) {
        if a.role == Role::KernelArchive && a.format == Storage::Aks2 {
            match count_kernels(item.src) {
                Ok(n) => a.aotriton.get_or_insert_with(AotritonFacts::default).kernels = Some(n),
                Err(e) => problems.push(FactsError::AotritonArchive(e)),
            }
        }
    }

    fn rows(&self) -> &'static [Row] {
        ROWS
    }

    /// Archives count once for each processor they serve (an archive of a pack holds kernels
    /// for all of its processors, so its kernel count is no per-processor figure).
    fn tally(&self, _f: &FileRecord, a: &Artifact) -> Option<(&'static str, u64)> {
        (a.role == Role::KernelArchive).then_some((ROWS[0].key, 1))
    }

    /// AOTriton 0.13 on packs each kernel's AKS2 archives into an uncompressed
    /// `amd-<pack>/<family>/<kernel>.zip` (`python/flatzip.py` `build_zip`): its members are
    /// that folder's archives.
    fn unpacks_in_place(&self, archive: &str) -> bool {
        archive.to_ascii_lowercase().ends_with(".zip") && pack_of(Path::new(archive)).is_some()
    }

    fn library_dir(&self, path: &str) -> Option<String> {
        images_dir(path)
    }

    /// AOTriton images are device code: a tree with only them is something to check.
    fn holds_device_code(&self) -> bool {
        true
    }

    fn verdict(&self, lib: &Library, dev: &DeviceTarget) -> Option<Verdict> {
        let arch = dev.processor.as_str();
        let archives: Vec<&FileRecord> = files_of(lib, Family::Aotriton)
            .into_iter()
            .filter(|f| f.artifact.as_ref().is_some_and(|a| a.role == Role::KernelArchive))
            .collect();
        let serves = |f: &&FileRecord| f.artifact.as_ref().map(Artifact::targets).unwrap_or_default();
        let mine: Vec<&&FileRecord> =
            archives.iter().filter(|f| serves(f).iter().any(|t| t == arch)).collect();
        let (rule, detail) = if mine.is_empty() {
            (Some(&NO_IMAGES), format!("no AOTriton kernel images for {arch}"))
        } else {
            let kernels: u64 = mine.iter().filter_map(|f| f.artifact.as_ref()?.records()).sum();
            let packs: BTreeSet<String> =
                mine.iter().filter_map(|f| pack_of(Path::new(&f.path.path))).collect();
            let packs: Vec<String> = packs.into_iter().map(|p| format!("amd-{p}/")).collect();
            (
                None,
                format!(
                    "{} AKS2 archives ({} kernels) in {}",
                    thousands(mine.len() as u64),
                    thousands(kernels),
                    packs.join(", ")
                ),
            )
        };
        let mut v = Verdict::judged(lib.display(), LibraryKind::Family(Family::Aotriton), rule, detail, arch);
        if rule.is_some() {
            v.available = archives.iter().flat_map(serves).collect::<BTreeSet<_>>().into_iter().collect();
        }
        Some(v)
    }

    fn identity(&self, _a: &Artifact) -> String {
        "aotriton".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::aotriton::testing::aks2;
    use crate::parse::magic::Kind;

    fn t() -> Targets {
        Targets::builtin()
    }

    #[test]
    fn gpu_targets_py_arch_to_directory_packs() {
        let t = t();
        let a = aks2(&[("k", b"x")]);
        let file = Content::File(Kind::Other, &a);
        let p = Path::new("/venv/lib/python3.12/site-packages/torch/lib/aotriton.images/amd-gfx942/flash/attn_fwd/FONLY__x___gfx942.aks2");
        let got = Aotriton.detect(p, "FONLY__x___gfx942.aks2", file, &t).expect("aks2");
        assert_eq!(
            (got.role, got.format, got.name_target.as_deref()),
            (Role::KernelArchive, Storage::Aks2, Some("gfx942"))
        );
        let p = Path::new("/opt/lib/aotriton.images/amd-gfx115x/flash/attn_fwd/FONLY__x___gfx115x.aks2");
        let got = Aotriton.detect(p, "FONLY__x___gfx115x.aks2", file, &t).expect("pack");
        assert_eq!(got.targets(), ["gfx1150", "gfx1151", "gfx1152", "gfx1153"]);
        let p = Path::new("lib/aotriton.images/amd-gfx11xx/flash/attn_fwd/FONLY__x___gfx11xx.aks2");
        assert!(Aotriton
            .detect(p, "x.aks2", file, &t)
            .expect("0.11 pack")
            .targets()
            .contains(&"gfx1151".into()));
    }

    #[test]
    fn membership_needs_the_folder_and_the_content() {
        let t = t();
        let a = aks2(&[("k", b"x")]);
        let file = Content::File(Kind::Other, &a);
        assert!(Aotriton.detect(Path::new("/x/amd-gfx942/flash/k.aks2"), "k.aks2", file, &t).is_none());
        assert!(Aotriton.detect(Path::new("/x/aotriton.images/gfx942/k.aks2"), "k.aks2", file, &t).is_none());
        let p = Path::new("/x/aotriton.images/amd-gfx942/flash/k.aks2");
        assert!(Aotriton.detect(p, "k.aks2", Content::File(Kind::Other, b"\x01\x02"), &t).is_none());
        assert_eq!(Aotriton.detect(p, "k.aks2", Content::Link, &t).map(|a| a.format), Some(Storage::Link));
        let s = Path::new("/x/aotriton.images/amd-gfx942/__signature__");
        let sig = Aotriton.detect(
            s,
            "__signature__",
            Content::File(Kind::Other, b"{\n  \"AOTRITON_GIT_SHA1\""),
            &t,
        );
        assert_eq!(sig.map(|a| (a.role, a.format)), Some((Role::ImageSignature, Storage::Text)));
    }

    #[test]
    fn images_dir_is_the_library() {
        assert_eq!(
            images_dir("torch/lib/aotriton.images/amd-gfx942/flash/a.aks2").as_deref(),
            Some("torch/lib/aotriton.images")
        );
        assert_eq!(
            images_dir("aotriton.images/amd-gfx942/__signature__").as_deref(),
            Some("aotriton.images")
        );
        assert_eq!(images_dir("lib/other/x"), None);
    }

    #[test]
    fn kernel_count_from_the_inflated_directory() {
        let a = aks2(&[("a", b"0123"), ("b", b""), ("c", b"45")]);
        assert_eq!(count_kernels(&a.as_slice()), Ok(3));
        assert!(count_kernels(&&a[..20]).is_err());
        let mut lying = a.clone();
        lying[8] = 2;
        assert!(count_kernels(&lying.as_slice()).is_err());
    }
    /// Found by the `aotriton` fuzz target: an `.lzma` (LZMA_Alone) header asking for a 4 GiB
    /// dictionary after an AKS2 header. Only `.xz` is decoded, under a memory limit.
    #[test]
    fn lzma_alone_stream_with_a_huge_dictionary_is_refused() {
        let data: &[u8] = b"\x41\x4b\x53\x32\x36\x01\x00\x00\x03\x00\x00\x00\x06\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x40\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x20\x00\x00\x00\x5b\x00\x00\x00\x61\x74\x74\x6e\x5f\x66\x77\x64\x2d\x53\x69\x67\x2d\x46\x5f\x5f\x5e\x66\x70\x31\x36\x40\x31\x36\x5f\x31\x32\x38\x5f\x46\x5f\x46\x5f\x30\x5f\x30\x5f\x5f\x50\x5f\x5f\x5f\x5f\x32\x34\x36\x30\x5f\x36\x34\x5f\x54\x72\x75\x65\x5f\x5f\x43\x4f\x5f\x5f\x77\x61\x76\x65\x30\x5f\x00\x00\x00\x00\x00\x00\xd6\xb4\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x67\x31\x2d\x2d\x41\x72\x63\x68\x5f\x67\x66\x78\x39\x34\x32\x00\x00\x00\x00\x81\x81\x81\x00\x00\x00\x81";
        assert!(count_kernels(&data).is_err());
    }
}
