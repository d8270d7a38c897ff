//! How the HIP runtime picks a device's code object from a code group: the one matching rule
//! every view (check, diff, merge, the library matrix, findings, prune, Tensile code files) uses.
//!
//! Read from ROCm 7.x's clr `hipamd/src/hip_fatbin.cpp` `FatBinaryInfo::ExtractFatBinaryUsingCOMGR`
//! and comgr `comgr-metadata.cpp` `lookUpCodeObject` / `isCompatibleIsaName`:
//! - The runtime asks for the device's full ISA name, features included
//!   (`amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-`: ROCr always states the modes a processor
//!   supports), and for its generic target from `TargetToGeneric`, which puts the device's
//!   features back on (`gfx9-generic:sramecc+:xnack-`). comgr `parseTargetIdentifier` refuses a
//!   name with a feature its processor does not support, so that query matches nothing: a gfx906
//!   never loads gfx9-generic code. Which processors the runtime maps, and to which generic, is
//!   `targets.toml` data (`generic` with `hip_generic`; features per processor).
//! - Native code wins over generic code whatever their order in the bundle (the per-device
//!   `if native … else if generic` in `ExtractFatBinaryUsingCOMGR`); within one query the first
//!   compatible entry in bundle order.
//! - comgr matches a bundle entry by its ID: the offload kind (`hip`, `hipv4`, `hcc`) split off,
//!   the rest must have five `-`-separated parts (`amdgcn-amd-amdhsa--gfx906:xnack-`). Pre-ROCm-4.1
//!   IDs (`hip-amdgcn-amd-amdhsa-gfx900`, four parts) never match; only the legacy runtime
//!   unbundler, the default up to ROCm 5.7 and gone in 7.x, read their ELF instead.
//! - Features: a feature the entry leaves out matches either mode; one it states must equal the
//!   device's. A device whose mode gfxscan was not told is taken to match either.
//!
//! SPIR-V entries (`hip-spirv64-amd-amdhsa--amdgcnspirv`, JIT-compiled third) are not code
//! objects gfxscan reads, so they never serve here: a verdict errs toward MISSING, never OK.

use crate::vocab::target_id::{processor_of, settings, DeviceTarget, Setting};
use crate::vocab::targets::Targets;

/// The runtime whose rules the verdicts follow, for people and for JSON. Older runtimes match
/// otherwise: ROCm 6.4 hands bundles holding generic code to its legacy unbundler (ELF targets,
/// ROCr's compatibility rule), 6.0-6.3 know no generic targets, and up to 5.7 the legacy
/// unbundler was the default and read pre-4.1 IDs.
pub const ASSUMED_RUNTIME: &str =
    "ROCm 7.x HIP runtime (clr hip_fatbin.cpp ExtractFatBinaryUsingCOMGR, comgr lookUpCodeObject)";

/// What a code object is for, as the runtime matches it.
#[derive(Debug, Clone, Copy)]
pub struct CodeTarget<'a> {
    /// Its target ID as its ELF says (`gfx90a:xnack-`).
    pub target_id: &'a str,
    /// Its generic version, for code built for a generic target.
    pub generic_version: Option<u8>,
    /// The bundle entry ID comgr matches, for bundle entries; `None` for code the runtime takes
    /// as a whole ELF (embedded or standalone objects, kpack kernels).
    pub entry_id: Option<&'a str>,
}

/// How a code object serves a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    /// Built for the device's processor.
    Native,
    /// Built for the generic target the runtime asks for besides the device's own.
    Generic,
}

/// Why code that looks meant for a device never loads on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NearMiss {
    /// A bundle entry ID comgr cannot parse (pre-ROCm-4.1, four parts).
    OldEntryId(String),
    /// Generic code for a device whose processor has a feature the generic target lacks.
    GenericLacksFeature { generic: String, feature: String },
}

impl NearMiss {
    /// One line for people.
    pub fn explain(&self, dev: &DeviceTarget) -> String {
        match self {
            NearMiss::OldEntryId(id) => format!(
                "its {} code is in bundle entries with pre-ROCm-4.1 IDs ({id}): comgr needs five parts after the offload kind, so the ROCm 6.0+ runtime never matches them (they loaded only through the legacy unbundler, default up to ROCm 5.7)",
                dev.processor
            ),
            NearMiss::GenericLacksFeature { generic, feature } => format!(
                "{generic} code is there, but the runtime asks for {generic} with the device's features ({}) and {generic} has no {feature}: comgr refuses the query",
                dev.processor_features_shown()
            ),
        }
    }
}

impl DeviceTarget {
    /// The device's stated features as the runtime appends them (`sramecc±:xnack±`), or the
    /// features its processor has when the modes are not known.
    fn processor_features_shown(&self) -> String {
        let shown: Vec<&str> = self.target_id.split(':').skip(1).collect();
        if shown.is_empty() {
            format!("{} states its modes", self.processor)
        } else {
            shown.join(":")
        }
    }
}

/// The target ID comgr reads from a bundle entry ID, or `None` when comgr cannot parse it or
/// skips its offload kind (comgr-metadata.cpp `lookUpCodeObject`: `hip`, `hipv4`, `hcc`;
/// `parseTargetIdentifier`: exactly five `-`-separated parts).
pub fn comgr_target(entry_id: &str) -> Option<&str> {
    let (kind, rest) = entry_id.split_once('-')?;
    if !matches!(kind, "hip" | "hipv4" | "hcc") {
        return None;
    }
    let parts: Vec<&str> = rest.trim_end_matches('\0').splitn(5, '-').collect();
    match parts.as_slice() {
        [_, _, _, _, target] if !target.is_empty() => Some(target),
        _ => None,
    }
}

/// The features a device states, each agreeing with what the code states: a feature the code
/// leaves out matches either mode; a mode gfxscan was not told matches either.
fn features_agree(code_id: &str, dev: &DeviceTarget) -> bool {
    let (s, x) = settings(code_id);
    let agree = |c: Setting, d: Setting| c == Setting::Any || d == Setting::Any || c == d;
    agree(s, dev.sramecc) && agree(x, dev.xnack)
}

/// The generic target whose code a device of `processor` loads when it has no code of its
/// own: the one the runtime maps it to, unless the processor has a feature the generic lacks.
pub fn generic_of<'t>(processor: &str, targets: &'t Targets) -> Option<&'t str> {
    runtime_generic(processor, targets)?.ok()
}

/// The generic target the runtime asks for besides the device's own, when the query is valid:
/// `Err` with the feature comgr refuses when the processor has one the generic target lacks.
fn runtime_generic<'t>(processor: &str, targets: &'t Targets) -> Option<Result<&'t str, String>> {
    let t = targets.by_name(processor).filter(|t| t.hip_generic)?;
    let g = t.generic.as_deref()?;
    let gt = targets.by_name(g)?;
    Some(match t.features.iter().find(|f| !gt.supports(f)) {
        Some(f) => Err(f.clone()),
        None => Ok(g),
    })
}

/// How the runtime would load `code` on `dev`, if it would.
pub fn loads(code: CodeTarget, dev: &DeviceTarget, targets: &Targets) -> Option<Via> {
    let id = match code.entry_id {
        Some(e) => comgr_target(e)?,
        None => code.target_id,
    };
    if !features_agree(id, dev) {
        return None;
    }
    let processor = processor_of(id);
    if processor == dev.processor {
        return Some(Via::Native);
    }
    let generic = generic_of(&dev.processor, targets)?;
    (processor == generic && code.generic_version.is_some_and(|g| g >= 1)).then_some(Via::Generic)
}

/// The code object a device loads from one code group (one fat binary, one file): native
/// before generic, each the first in group order.
pub fn pick<'g, T>(
    group: &'g [T],
    code: impl Fn(&T) -> CodeTarget,
    dev: &DeviceTarget,
    targets: &Targets,
) -> Option<(&'g T, Via)> {
    [Via::Native, Via::Generic]
        .into_iter()
        .find_map(|via| group.iter().find(|c| loads(code(c), dev, targets) == Some(via)).map(|c| (c, via)))
}

/// Why code in a group that looks meant for `dev` does not load on it, when that is so.
pub fn near_miss<T>(
    group: &[T],
    code: impl Fn(&T) -> CodeTarget,
    dev: &DeviceTarget,
    targets: &Targets,
) -> Option<NearMiss> {
    let generic = runtime_generic(&dev.processor, targets);
    group.iter().map(&code).find_map(|c| {
        let p = processor_of(c.target_id);
        match c.entry_id {
            Some(e) if comgr_target(e).is_none() && p == dev.processor => {
                Some(NearMiss::OldEntryId(e.to_string()))
            }
            _ => match &generic {
                Some(Err(feature)) if targets.by_name(&dev.processor)?.generic.as_deref() == Some(p) => {
                    Some(NearMiss::GenericLacksFeature { generic: p.to_string(), feature: feature.clone() })
                }
                _ => None,
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::target_id::parse_target_id;

    fn dev(s: &str) -> DeviceTarget {
        parse_target_id(s, &Targets::builtin()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn code<'a>(id: &'a str, generic: Option<u8>, entry: Option<&'a str>) -> CodeTarget<'a> {
        CodeTarget { target_id: id, generic_version: generic, entry_id: entry }
    }

    /// comgr `parseTargetIdentifier`: five parts after the offload kind; `lookUpCodeObject`
    /// skips kinds other than hip, hipv4 and hcc.
    #[test]
    fn comgr_reads_five_part_ids_only() {
        assert_eq!(comgr_target("hipv4-amdgcn-amd-amdhsa--gfx906:xnack-"), Some("gfx906:xnack-"));
        assert_eq!(comgr_target("hip-amdgcn-amd-amdhsa--gfx1100"), Some("gfx1100"));
        assert_eq!(comgr_target("hip-amdgcn-amd-amdhsa-gfx900"), None);
        assert_eq!(comgr_target("openmp-amdgcn-amd-amdhsa--gfx900"), None);
        assert_eq!(comgr_target("host-x86_64-unknown-linux-gnu-"), None);
    }

    /// clr `TargetToGeneric` re-appends the device's features; comgr refuses `sramecc` on
    /// gfx9-generic, so gfx906 never loads gfx9-generic code, whatever its modes.
    #[test]
    fn gfx906_never_loads_gfx9_generic_code() {
        let t = Targets::builtin();
        let g = code("gfx9-generic", Some(1), Some("hipv4-amdgcn-amd-amdhsa--gfx9-generic"));
        for d in ["gfx906:sramecc+:xnack-", "gfx906:sramecc-:xnack-", "gfx906"] {
            assert_eq!(loads(g, &dev(d), &t), None, "{d}");
            let miss = near_miss(&[g], |c| *c, &dev(d), &t);
            assert!(
                matches!(miss, Some(NearMiss::GenericLacksFeature { ref feature, .. }) if feature == "sramecc")
            );
        }
        assert_eq!(loads(g, &dev("gfx900:xnack-"), &t), Some(Via::Generic));
        let g94 = code("gfx9-4-generic", Some(1), None);
        assert_eq!(loads(g94, &dev("gfx942:sramecc+:xnack-"), &t), Some(Via::Generic));
    }

    /// Generic code needs a generic version of at least 1, and a processor the runtime maps
    /// (gfx941 is in LLVM's gfx9-4-generic, not in clr's TargetGenericMap).
    #[test]
    fn generic_code_needs_the_runtime_map_and_a_version() {
        let t = Targets::builtin();
        assert_eq!(loads(code("gfx11-generic", None, None), &dev("gfx1151"), &t), None);
        assert_eq!(loads(code("gfx11-generic", Some(1), None), &dev("gfx1151"), &t), Some(Via::Generic));
        assert_eq!(loads(code("gfx9-4-generic", Some(1), None), &dev("gfx941"), &t), None);
    }

    /// Pre-4.1 IDs never match under comgr, whatever the ELF says.
    #[test]
    fn pre_4_1_entry_ids_never_match() {
        let t = Targets::builtin();
        let old = code("gfx900:xnack-", None, Some("hip-amdgcn-amd-amdhsa-gfx900"));
        assert_eq!(loads(old, &dev("gfx900"), &t), None);
        assert!(matches!(near_miss(&[old], |c| *c, &dev("gfx900"), &t), Some(NearMiss::OldEntryId(_))));
        assert_eq!(near_miss(&[old], |c| *c, &dev("gfx1030"), &t), None);
    }

    /// clr `ExtractFatBinaryUsingCOMGR`: native before generic, whatever the bundle order.
    #[test]
    fn native_code_wins_over_generic_code_listed_first() {
        let t = Targets::builtin();
        let group = [code("gfx11-generic", Some(1), None), code("gfx1151", None, None)];
        let (c, via) = pick(&group, |c| *c, &dev("gfx1151"), &t).expect("loads");
        assert_eq!((c.target_id, via), ("gfx1151", Via::Native));
    }

    /// A feature the code states must equal the device's; one it leaves out matches either.
    #[test]
    fn stated_features_must_agree() {
        let t = Targets::builtin();
        let d = dev("gfx90a:sramecc+:xnack-");
        assert_eq!(loads(code("gfx90a:xnack+", None, None), &d, &t), None);
        assert_eq!(loads(code("gfx90a", None, None), &d, &t), Some(Via::Native));
        assert_eq!(loads(code("gfx90a:xnack+", None, None), &dev("gfx90a"), &t), Some(Via::Native));
    }
}
