//! Firmware: the Linux amdgpu (and radeon) blobs a GPU needs before any code runs, named by
//! codename (`vega10_*`) or IP version (`gc_11_0_0_*`), raw or compressed with zstd or xz. Each
//! blob counts for the target its prefix names in `targets.toml`; its common header, when it has
//! one, gives the ucode version. Firmware is no library a program loads: `check` gives it no
//! verdict.

use std::path::Path;

use super::{has_component, Cataloger, Content, Item, Library};
use super::{FactsError, Row};
use crate::model::{Artifact, Family, FirmwareFacts, Role, Storage};
use crate::parse::firmware::{inflate_firmware, parse_firmware_header};
use crate::vocab::codec::Codec;
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::verdict::{Cost, GapRule, Verdict};

/// Largest compressed firmware blob read whole to reach its header.
const MAX_COMPRESSED_FIRMWARE: u64 = 64 << 20;

/// The firmware family.
pub struct Firmware;

/// A firmware file name's prefix: an IP version (`gc_11_0_0`, `psp_13_0_10`, `vcn_4_0_6_1`,
/// `dcn_3_5`) when the name has two or more numeric parts in a row; else the longest codename
/// in targets.toml (`sienna_cichlid`, `raven`); else its first part (`banks`, `BONAIRE`).
pub fn firmware_prefix(file_name: &str, targets: &Targets) -> String {
    let stem = file_name.trim_end_matches(".zst").trim_end_matches(".xz");
    let stem = stem.strip_suffix(".bin").unwrap_or(stem);
    let parts: Vec<&str> = stem.split('_').collect();
    let numeric =
        |i: usize| parts.get(i).is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    for i in 1..parts.len() {
        if numeric(i) && numeric(i + 1) {
            let mut end = i + 1;
            while numeric(end + 1) {
                end += 1;
            }
            return parts[..=end].join("_");
        }
    }
    targets
        .firmware_prefixes()
        .filter(|p| stem == *p || stem.strip_prefix(p).is_some_and(|r| r.starts_with('_')))
        .max_by_key(|p| p.len())
        .map_or_else(|| parts.first().copied().unwrap_or(stem).to_string(), str::to_string)
}

/// The firmware folder (`amdgpu`, `radeon`) a path lies directly in, if it is under `firmware/`.
fn firmware_dir(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let name = dir.file_name()?.to_str()?;
    (matches!(name, "amdgpu" | "radeon") && has_component(dir, &["firmware"])).then(|| name.to_string())
}

/// No firmware for the GPU: the amdgpu kernel driver's `amdgpu_ucode_request` fails for its
/// blobs, so the GPU does not come up (no KFD node, no `/dev/kfd` device for it). No library
/// verdict judges firmware; the rule is the absence's cost for `explain`'s layer row.
pub const NO_FIRMWARE: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "the amdgpu driver cannot load the GPU's firmware (\"failed to load firmware\" in dmesg): the GPU does not come up",
};

const ROWS: &[Row] = &[Row {
    key: "firmware-blobs",
    label: "firmware blobs",
    column: "firmware",
    within: None,
    gap: Some(&NO_FIRMWARE),
}];

impl Cataloger for Firmware {
    fn family(&self) -> Family {
        Family::Firmware
    }

    fn detect(&self, path: &Path, name: &str, content: Content, targets: &Targets) -> Option<Artifact> {
        let dir = firmware_dir(path)?;
        let prefix = firmware_prefix(name, targets);
        let name_target = targets.by_firmware(&prefix).map(|t| t.name.clone());
        Some(Artifact {
            family: Some(Family::Firmware),
            role: Role::Blob,
            format: content.storage(Storage::Raw),
            name_target,
            firmware: Some(FirmwareFacts { prefix: Some(prefix), dir: Some(dir), header: None }),
            ..Artifact::default()
        })
    }

    /// The common header, inflating a compressed blob whole first (up to a cap).
    fn facts(&self, a: &mut Artifact, item: &Item, problems: &mut Vec<FactsError>) {
        let src = item.src;
        let header = match a.format {
            Storage::Compressed(codec @ (Codec::Zstd | Codec::Xz))
                if src.len() <= MAX_COMPRESSED_FIRMWARE =>
            {
                let blob = src
                    .read_at(0, src.len() as usize)
                    .map_err(|e| e.to_string())
                    .and_then(|d| inflate_firmware(&d, codec));
                match blob {
                    Ok(blob) => parse_firmware_header(&blob, blob.len() as u64),
                    Err(e) => {
                        problems.push(FactsError::CompressedFirmware(e));
                        None
                    }
                }
            }
            Storage::Raw => {
                let name = item.name.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
                if name.ends_with(".zst") || name.ends_with(".xz") {
                    problems.push(FactsError::NotCompressedFirmware);
                }
                parse_firmware_header(item.head, src.len())
            }
            _ => None,
        };
        a.firmware.get_or_insert_with(FirmwareFacts::default).header = header;
    }

    fn rows(&self) -> &'static [Row] {
        ROWS
    }

    fn tally(&self, _f: &crate::model::FileRecord, _a: &Artifact) -> Option<(&'static str, u64)> {
        Some((ROWS[0].key, 1))
    }

    /// A firmware folder is one library of the model (the kernel driver's, judged by no verdict).
    fn library_dir(&self, path: &str) -> Option<String> {
        Some(super::parent(path))
    }

    fn loaded_by_programs(&self) -> bool {
        false
    }

    /// Firmware is loaded by the kernel driver, not by a program: no verdict.
    fn verdict(&self, _lib: &Library, _dev: &DeviceTarget) -> Option<Verdict> {
        None
    }

    /// `firmware:amdgpu` or `firmware:radeon`.
    fn identity(&self, a: &Artifact) -> String {
        format!("firmware:{}", a.firmware.as_ref().and_then(|f| f.dir.as_deref()).unwrap_or("amdgpu"))
    }
}
