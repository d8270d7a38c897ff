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

/// The runtime whose rules the verdicts follow where an install ships none, for people and JSON.
pub const ASSUMED_RUNTIME: &str =
    "ROCm 7.x HIP runtime (clr hip_fatbin.cpp ExtractFatBinaryUsingCOMGR, comgr lookUpCodeObject)";

/// Whose matching rules a verdict follows: an install's own HIP runtime (`libamdhip64`), by its
/// version, or ROCm 7.x where it ships none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runtime {
    /// ROCm 7.x, or no runtime in the install: comgr, with the generic fallback.
    #[default]
    Rocm7,
    /// HIP 6.4: comgr for bundles without generic code; bundles holding generic code go to its
    /// legacy unbundler (clr amd-staging "SWDEV-447973 - Support generic targets", in 6.4's
    /// `libamdhip64` as the log line "offload bundle contains generic target code object"),
    /// whose picks gfxscan has not read: they are judged by 7.x's rules, and the install says so.
    Rocm64,
    /// HIP 6.0-6.3: comgr `lookUpCodeObject` only (`HIP_USE_RUNTIME_UNBUNDLER` default false),
    /// no generic targets (clr rocm-6.2.x and the 6.3 release branches have no generic map).
    Rocm6,
    /// HIP 5.x: the legacy runtime unbundler (the default up to 5.7, clr hip_code_object.cpp
    /// `getTripleTargetID`), which reads a `hip`/`hcc` entry's target from its ELF, so pre-4.1
    /// IDs load; no generic targets.
    Rocm5,
}

impl Runtime {
    /// The rules of a HIP runtime of `version` (`6.4.43484`, `7`): by major, then minor.
    pub fn of_version(version: &str) -> Runtime {
        let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next().flatten(), parts.next().flatten()) {
            (Some(m), _) if m <= 5 => Runtime::Rocm5,
            (Some(6), Some(n)) if n >= 4 => Runtime::Rocm64,
            (Some(6), _) => Runtime::Rocm6,
            _ => Runtime::Rocm7,
        }
    }

    /// True when the runtime asks for generic code besides the device's own.
    pub fn has_generic(self) -> bool {
        matches!(self, Runtime::Rocm7 | Runtime::Rocm64)
    }

    /// True when bundle entries are matched by their IDs (comgr), not by their ELF.
    fn matches_entry_ids(self) -> bool {
        self != Runtime::Rocm5
    }

    /// What its rules are, in a line.
    pub fn rules(self) -> &'static str {
        match self {
            Runtime::Rocm7 => "comgr: native code before generic, generic only with the device's features, bundle entry IDs of five parts",
            Runtime::Rocm64 => "comgr for bundles without generic code; bundles with generic code go to its legacy unbundler, judged here by ROCm 7.x's rules",
            Runtime::Rocm6 => "comgr: bundle entry IDs of five parts, no generic targets",
            Runtime::Rocm5 => "the legacy runtime unbundler: targets read from each entry's ELF (pre-4.1 bundle IDs load), no generic targets",
        }
    }
}

/// The version a HIP runtime library's file name gives (`libamdhip64.so.6.4.43484` → `6.4.43484`,
/// `amdhip64_7.dll` → `7`), or `None` for any other name.
pub fn hip_runtime_version(file_name: &str) -> Option<String> {
    let digits = |v: &str| {
        !v.is_empty() && v.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let lower = file_name.to_ascii_lowercase();
    let v = match lower.strip_prefix("libamdhip64.so.") {
        Some(v) => v,
        None => lower.strip_prefix("amdhip64_")?.strip_suffix(".dll")?,
    };
    digits(v).then(|| v.to_string())
}

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
    /// Generic code, under a runtime with no generic fallback (HIP before 6.4).
    NoGenericInRuntime(String),
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
            NearMiss::NoGenericInRuntime(generic) => format!(
                "{generic} code is there, but this install's HIP runtime asks for no generic target (HIP before 6.4)"
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
    rest.trim_end_matches('\0').splitn(5, '-').nth(4).filter(|target| !target.is_empty())
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
    runtime_generic(processor, targets).and_then(|(g, refused)| refused.is_none().then_some(g))
}

/// The generic target the runtime asks comgr for besides `processor`'s own (clr
/// `hip_fatbin.cpp` `TargetToGeneric`), whether or not comgr then takes it: the one rule of
/// generic fallback, read by the parsers to know which entries a verdict may rest on.
pub fn fallback_generic<'t>(processor: &str, targets: &'t Targets) -> Option<&'t str> {
    runtime_generic(processor, targets).map(|(g, _)| g)
}

/// The generic target the runtime asks for besides the device's own, with the feature comgr
/// refuses in that query when the processor has one the generic target lacks.
fn runtime_generic<'t>(processor: &str, targets: &'t Targets) -> Option<(&'t str, Option<&'t String>)> {
    let t = targets.by_name(processor).filter(|t| t.hip_generic)?;
    let g = t.generic.as_deref()?;
    let gt = targets.by_name(g)?;
    Some((g, t.features.iter().find(|f| !gt.supports(f))))
}

/// How the runtime would load `code` on `dev`, if it would.
pub fn loads(code: CodeTarget, dev: &DeviceTarget, targets: &Targets, rt: Runtime) -> Option<Via> {
    let id = match code.entry_id {
        Some(e) if rt.matches_entry_ids() => comgr_target(e)?,
        _ => code.target_id,
    };
    let processor = processor_of(id);
    // Most code of a group is for other processors: the cheap tests first.
    let native = processor == dev.processor;
    let generic_code = || targets.by_name(processor).is_some_and(|t| t.is_generic());
    if !native && !generic_code() || !features_agree(id, dev) {
        return None;
    }
    if native {
        return Some(Via::Native);
    }
    let generic = generic_of(&dev.processor, targets).filter(|_| rt.has_generic())?;
    (processor == generic && code.generic_version.is_some_and(|g| g >= 1)).then_some(Via::Generic)
}

/// The code object a device loads from one code group (one fat binary, one file): native
/// before generic, each the first in group order.
pub fn pick<'g, T>(
    group: &'g [T],
    code: impl Fn(&T) -> CodeTarget,
    dev: &DeviceTarget,
    targets: &Targets,
    rt: Runtime,
) -> Option<(&'g T, Via)> {
    [Via::Native, Via::Generic].into_iter().find_map(|via| {
        group.iter().find(|c| loads(code(c), dev, targets, rt) == Some(via)).map(|c| (c, via))
    })
}

/// Why code in a group that looks meant for `dev` does not load on it, when that is so.
pub fn near_miss<T>(
    group: &[T],
    code: impl Fn(&T) -> CodeTarget,
    dev: &DeviceTarget,
    targets: &Targets,
    rt: Runtime,
) -> Option<NearMiss> {
    let generic = runtime_generic(&dev.processor, targets);
    group.iter().map(&code).find_map(|c| {
        let p = processor_of(c.target_id);
        let unparsed = |e: &&str| rt.matches_entry_ids() && comgr_target(e).is_none() && p == dev.processor;
        if let Some(e) = c.entry_id.filter(unparsed) {
            return Some(NearMiss::OldEntryId(e.to_string()));
        }
        // Code for the generic target the runtime maps the device to, which it does not load.
        let (g, refused) = generic.filter(|(g, _)| *g == p)?;
        match refused {
            _ if !rt.has_generic() => Some(NearMiss::NoGenericInRuntime(g.to_string())),
            Some(f) => Some(NearMiss::GenericLacksFeature { generic: g.to_string(), feature: f.clone() }),
            None => None,
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
            assert_eq!(loads(g, &dev(d), &t, Runtime::Rocm7), None, "{d}");
            let miss = near_miss(&[g], |c| *c, &dev(d), &t, Runtime::Rocm7);
            assert!(
                matches!(miss, Some(NearMiss::GenericLacksFeature { ref feature, .. }) if feature == "sramecc")
            );
        }
        assert_eq!(loads(g, &dev("gfx900:xnack-"), &t, Runtime::Rocm7), Some(Via::Generic));
        let g94 = code("gfx9-4-generic", Some(1), None);
        assert_eq!(loads(g94, &dev("gfx942:sramecc+:xnack-"), &t, Runtime::Rocm7), Some(Via::Generic));
    }

    /// Generic code needs a generic version of at least 1, and a processor the runtime maps
    /// (gfx941 is in LLVM's gfx9-4-generic, not in clr's TargetGenericMap).
    #[test]
    fn generic_code_needs_the_runtime_map_and_a_version() {
        let t = Targets::builtin();
        assert_eq!(loads(code("gfx11-generic", None, None), &dev("gfx1151"), &t, Runtime::Rocm7), None);
        assert_eq!(
            loads(code("gfx11-generic", Some(1), None), &dev("gfx1151"), &t, Runtime::Rocm7),
            Some(Via::Generic)
        );
        assert_eq!(loads(code("gfx9-4-generic", Some(1), None), &dev("gfx941"), &t, Runtime::Rocm7), None);
    }

    /// Pre-4.1 IDs never match under comgr, whatever the ELF says.
    #[test]
    fn pre_4_1_entry_ids_never_match() {
        let t = Targets::builtin();
        let old = code("gfx900:xnack-", None, Some("hip-amdgcn-amd-amdhsa-gfx900"));
        assert_eq!(loads(old, &dev("gfx900"), &t, Runtime::Rocm7), None);
        assert!(matches!(
            near_miss(&[old], |c| *c, &dev("gfx900"), &t, Runtime::Rocm7),
            Some(NearMiss::OldEntryId(_))
        ));
        assert_eq!(near_miss(&[old], |c| *c, &dev("gfx1030"), &t, Runtime::Rocm7), None);
    }

    /// clr `ExtractFatBinaryUsingCOMGR`: native before generic, whatever the bundle order.
    #[test]
    fn native_code_wins_over_generic_code_listed_first() {
        let t = Targets::builtin();
        let group = [code("gfx11-generic", Some(1), None), code("gfx1151", None, None)];
        let (c, via) = pick(&group, |c| *c, &dev("gfx1151"), &t, Runtime::Rocm7).expect("loads");
        assert_eq!((c.target_id, via), ("gfx1151", Via::Native));
    }

    /// The install's own runtime decides: HIP 5.x's legacy unbundler reads pre-4.1 entries by
    /// their ELF; HIP 6.0-6.3 ask for no generic target; 6.4 and 7.x do.
    #[test]
    fn older_runtimes_match_by_their_own_rules() {
        let t = Targets::builtin();
        assert_eq!(hip_runtime_version("libamdhip64.so.6.4.43484").as_deref(), Some("6.4.43484"));
        assert_eq!(hip_runtime_version("amdhip64_7.dll").as_deref(), Some("7"));
        assert_eq!(hip_runtime_version("libamdhip64.so"), None);
        assert_eq!(hip_runtime_version("libamdhip64.so.6.4.43484.debug"), None);
        let of = |v: &str| Runtime::of_version(v);
        assert_eq!(
            [of("5.7.31921"), of("6.2.41133"), of("6.4.43484"), of("7"), of("7.2.0")],
            [Runtime::Rocm5, Runtime::Rocm6, Runtime::Rocm64, Runtime::Rocm7, Runtime::Rocm7]
        );
        let old = code("gfx900:xnack-", None, Some("hip-amdgcn-amd-amdhsa-gfx900"));
        assert_eq!(loads(old, &dev("gfx900"), &t, Runtime::Rocm5), Some(Via::Native));
        assert_eq!(loads(old, &dev("gfx900"), &t, Runtime::Rocm6), None);
        let g = code("gfx11-generic", Some(1), None);
        assert_eq!(loads(g, &dev("gfx1100"), &t, Runtime::Rocm6), None);
        assert_eq!(loads(g, &dev("gfx1100"), &t, Runtime::Rocm64), Some(Via::Generic));
        let miss = near_miss(&[g], |c| *c, &dev("gfx1100"), &t, Runtime::Rocm6);
        assert_eq!(miss, Some(NearMiss::NoGenericInRuntime("gfx11-generic".into())));
    }

    /// A feature the code states must equal the device's; one it leaves out matches either.
    #[test]
    fn stated_features_must_agree() {
        let t = Targets::builtin();
        let d = dev("gfx90a:sramecc+:xnack-");
        assert_eq!(loads(code("gfx90a:xnack+", None, None), &d, &t, Runtime::Rocm7), None);
        assert_eq!(loads(code("gfx90a", None, None), &d, &t, Runtime::Rocm7), Some(Via::Native));
        assert_eq!(
            loads(code("gfx90a:xnack+", None, None), &dev("gfx90a"), &t, Runtime::Rocm7),
            Some(Via::Native)
        );
    }
}
