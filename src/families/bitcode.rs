//! Device-library bitcode: `oclc_isa_version_<isa>.bc`, the per-ISA file comgr links when code
//! is compiled at run time (hipRTC, OpenCL, MIOpen's kernels). Its absence costs only runtime
//! compilation: prebuilt code is unaffected.

use std::collections::BTreeSet;
use std::path::Path;

use super::Row;
use super::{file_name, files_of, parent, Cataloger, Content, Library};
use crate::model::{Artifact, Family, Role, Storage};
use crate::parse::magic::Kind;
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::verdict::{Cost, GapRule, LibraryKind, Verdict};

/// The device-library bitcode family.
pub struct Bitcode;

/// comgr links `oclc_isa_version_<isa>.bc` when compiling at run time (hipRTC, MIOpen's runtime
/// kernels, OpenCL).
pub const NO_BITCODE: GapRule = GapRule {
    cost: Cost::FailsItsUsers,
    consequence: "runtime compilation (hipRTC, OpenCL, MIOpen's kernels) fails for this GPU; prebuilt code is unaffected",
};

const ROWS: &[Row] = &[Row {
    key: "device-lib-bitcode",
    label: "device-lib bitcode files",
    column: "bitcode",
    within: None,
    gap: Some(&NO_BITCODE),
}];

impl Cataloger for Bitcode {
    fn family(&self) -> Family {
        Family::Bitcode
    }

    fn detect(&self, _path: &Path, name: &str, content: Content, targets: &Targets) -> Option<Artifact> {
        let isa = name.strip_prefix("oclc_isa_version_")?.strip_suffix(".bc")?;
        if content.kind() != Kind::LlvmBitcode && !content.is_link() {
            return None;
        }
        Some(Artifact {
            family: Some(Family::Bitcode),
            role: Role::Isa,
            format: content.storage(Storage::Bitcode),
            name_target: targets.by_name(&format!("gfx{isa}")).map(|t| t.name.clone()),
            ..Artifact::default()
        })
    }

    fn rows(&self) -> &'static [Row] {
        ROWS
    }

    fn tally(&self, _f: &crate::model::FileRecord, _a: &Artifact) -> Option<(&'static str, u64)> {
        Some((ROWS[0].key, 1))
    }

    fn library_dir(&self, path: &str) -> Option<String> {
        Some(parent(path))
    }

    fn verdict(&self, lib: &Library, dev: &DeviceTarget) -> Option<Verdict> {
        let arch = dev.processor.as_str();
        let here = files_of(lib, Family::Bitcode);
        let name = |f: &&crate::model::FileRecord| f.artifact.as_ref().and_then(|a| a.name_target.clone());
        let mine = here.iter().find(|f| name(f).as_deref() == Some(arch));
        let (rule, detail) = match mine {
            None => (Some(&NO_BITCODE), format!("no device-library bitcode for {arch}")),
            Some(f) => (None, format!("{} present", file_name(&f.path.path))),
        };
        let mut v = Verdict::judged(lib.display(), LibraryKind::Family(Family::Bitcode), rule, detail, arch);
        if rule.is_some() {
            v.available = here.iter().filter_map(name).collect::<BTreeSet<_>>().into_iter().collect();
        }
        Some(v)
    }

    fn identity(&self, _a: &Artifact) -> String {
        "bitcode".into()
    }
}
