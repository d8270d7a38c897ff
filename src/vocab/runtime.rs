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
    /// HIP 6.4.1 onward (6.4.x): which unbundler a code group goes to depends on the group
    /// ([`Unbundler64`]): comgr for uncompressed bundles without generic code; the legacy
    /// runtime unbundler for uncompressed bundles holding any generic code object; comgr's
    /// unbundle action for compressed ones, asked for native code and then generic.
    Rocm64,
    /// HIP 6.4.0: as [`Runtime::Rocm64`], but a compressed bundle is asked for the device's own
    /// code only (generic requests came in 6.4.1, clr "SWDEV-508802 - Support generic target in
    /// compressed fatbin").
    Rocm640,
    /// HIP 6.0-6.3: comgr `lookUpCodeObject` only (`HIP_USE_RUNTIME_UNBUNDLER` default false),
    /// no generic targets (clr rocm-6.2.x and the 6.3 release branches have no generic map).
    Rocm6,
    /// HIP 5.x: the legacy runtime unbundler (the default up to 5.7, clr hip_code_object.cpp
    /// `getTripleTargetID`), which reads a `hip`/`hcc` entry's target from its ELF, so pre-4.1
    /// IDs load; no generic targets.
    Rocm5,
}

impl Runtime {
    /// The rules of a HIP runtime of `version` (`6.4.43484`, `7`): by major, then minor; a
    /// 6.4 build the release table gives to 6.4.0 (or, not in the table, no later than its
    /// build) follows 6.4.0's rules.
    pub fn of_version(version: &str, targets: &Targets) -> Runtime {
        let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next().flatten(), parts.next().flatten(), parts.next().flatten()) {
            (Some(m), _, _) if m <= 5 => Runtime::Rocm5,
            (Some(6), Some(4), build) if is_6_4_0(build, targets) => Runtime::Rocm640,
            (Some(6), Some(n), _) if n >= 4 => Runtime::Rocm64,
            (Some(6), _, _) => Runtime::Rocm6,
            _ => Runtime::Rocm7,
        }
    }

    /// True when the runtime maps processors to generic targets at all (HIP 6.4 on).
    pub fn has_generic(self) -> bool {
        !matches!(self, Runtime::Rocm6 | Runtime::Rocm5)
    }

    /// The release line whose generic map the runtime uses (`hip_generic_since` is held to it).
    fn generic_line(self) -> (u32, u32) {
        match self {
            Runtime::Rocm64 | Runtime::Rocm640 => (6, 4),
            _ => (7, 0),
        }
    }

    /// True when bundle entries are matched by their IDs (comgr), not by their ELF.
    fn matches_entry_ids(self) -> bool {
        self != Runtime::Rocm5
    }

    /// What its rules are, in a line.
    pub fn rules(self) -> &'static str {
        match self {
            Runtime::Rocm7 => "comgr: native code before generic, generic only with the device's features, bundle entry IDs of five parts",
            Runtime::Rocm64 => "HIP 6.4: comgr for uncompressed bundles without generic code (no generic query); its legacy unbundler for uncompressed bundles holding generic code (first compatible entry in bundle order, generic code by the 6.4 map without comgr's feature refusal); comgr's unbundle action for compressed bundles (native, then generic); judged for one GPU per process",
            Runtime::Rocm640 => "HIP 6.4.0: as 6.4.1 on, but compressed bundles are asked for the device's own code only; judged for one GPU per process",
            Runtime::Rocm6 => "comgr: bundle entry IDs of five parts, no generic targets",
            Runtime::Rocm5 => "the legacy runtime unbundler: targets read from each entry's ELF (pre-4.1 bundle IDs load), no generic targets",
        }
    }
}

/// True when a HIP 6.4 runtime of `build` is 6.4.0: the release table gives that build to
/// 6.4.0, or (a build it does not list) one no later than 6.4.0's.
fn is_6_4_0(build: Option<u32>, targets: &Targets) -> bool {
    let policy = targets.policy();
    let first = policy.releases.iter().find(|r| r.versions.iter().any(|v| v == "6.4.0"));
    let first_build = first.and_then(|r| r.hip.as_deref()?.rsplit('.').next()?.parse::<u32>().ok());
    match (build, first_build) {
        (Some(b), Some(f)) => {
            let listed = policy.releases_with_hip(&format!("6.4.{b}"));
            match listed.first() {
                Some(r) => r.versions.iter().any(|v| v == "6.4.0"),
                None => b <= f,
            }
        }
        _ => false,
    }
}

/// The unbundler a HIP 6.4 runtime hands a code group to (clr 6.4 `hip_fatbin.cpp`
/// `FatBinaryInfo::ExtractFatBinary` and `ExtractFatBinaryUsingCOMGR`, `HIP_USE_RUNTIME_UNBUNDLER`
/// and `HIP_ALWAYS_USE_NEW_COMGR_UNBUNDLING_ACTION` at their defaults, false).
///
/// What rests on reading rather than on clr itself: a group's entries are in the order of
/// their data (the table's order in every bundle clang-offload-bundler writes); a `hip`/`hcc`
/// entry's target is its ELF's as gfxscan resolves it (clr's legacy unbundler skips code object
/// V2 there); for compressed bundles from 6.4.1 the runtime's generic requests are read from
/// clr, what the bundler of the day returns for them is not; and the 6.4.0/6.4.1 split rests on
/// the release table's HIP build numbers. Verdicts are for one GPU per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unbundler64 {
    /// comgr `lookUpCodeObject`, asked for the device's ISA name only (no generic query):
    /// uncompressed bundles none of whose entries is a generic code object, and code taken
    /// whole (its ISA checked by rocclr `Isa::isCompatible`).
    Comgr,
    /// The legacy runtime unbundler (`hip_code_object.cpp` `extractCodeObjectFromFatBinary`):
    /// an uncompressed bundle any of whose entries' ELF is generic (`containGenericTarget`).
    Legacy,
    /// comgr's unbundle action (`extractCodeObjectFromFatBinaryUsingComgr`): compressed bundles.
    Compressed,
}

impl Unbundler64 {
    /// Where a HIP 6.4 runtime sends a group whose code objects are `codes`.
    pub fn of<'a>(mut codes: impl Iterator<Item = CodeTarget<'a>>) -> Unbundler64 {
        let mut generic = false;
        let mut bundle = false;
        for c in codes.by_ref() {
            if c.compressed {
                return Unbundler64::Compressed;
            }
            bundle |= c.entry_id.is_some();
            generic |= c.generic_version.is_some_and(|g| g >= 1);
        }
        if bundle && generic {
            Unbundler64::Legacy
        } else {
            Unbundler64::Comgr
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
    /// True for an entry of a compressed bundle (HIP 6.4 sends those to another unbundler).
    pub compressed: bool,
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
    /// Generic code in a compressed bundle, which HIP 6.4.0 asks for the device's own code only.
    NotAskedInCompressed(String),
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
            NearMiss::NotAskedInCompressed(generic) => format!(
                "{generic} code is there, but in a compressed bundle, which HIP 6.4.0 asks for the device's own code only (generic requests came in 6.4.1)"
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

/// How the runtime would load `code` on `dev`, if it would. Under HIP 6.4 a code object is
/// taken as its group's only one (which unbundler reads it depends on the group: [`pick`]).
pub fn loads(code: CodeTarget, dev: &DeviceTarget, targets: &Targets, rt: Runtime) -> Option<Via> {
    match rt {
        Runtime::Rocm64 | Runtime::Rocm640 => {
            loads_64(code, dev, targets, rt, Unbundler64::of(std::iter::once(code)))
        }
        _ => loads_by_comgr(code, dev, targets, rt),
    }
}

/// ROCm 7.x (and 5.x, 6.0-6.3, whose differences are [`Runtime::matches_entry_ids`] and
/// [`Runtime::has_generic`]): comgr, asked for the device's ISA and its generic target with
/// the device's features.
fn loads_by_comgr(code: CodeTarget, dev: &DeviceTarget, targets: &Targets, rt: Runtime) -> Option<Via> {
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

/// HIP 6.4, by the unbundler the code's group goes to (clr 6.4, read at the release branch's
/// 6.4.0 and 6.4.1 commits; see `targets.toml` "clr 6.4 generic map").
fn loads_64(
    code: CodeTarget,
    dev: &DeviceTarget,
    targets: &Targets,
    rt: Runtime,
    path: Unbundler64,
) -> Option<Via> {
    let map = |p: &str| generic_map(&dev.processor, targets, rt) == Some(p);
    let (id, generic) = match path {
        // comgr `lookUpCodeObject` with the device's ISA name only; code taken whole goes to the
        // device as it is and rocclr `Isa::isCompatible` accepts generic code of its family.
        Unbundler64::Comgr => match code.entry_id {
            Some(e) => (comgr_target(e)?, false),
            None => (code.target_id, code.generic_version.is_some_and(|g| g >= 1)),
        },
        // `getTripleTargetID`: a hipv4 entry by its ID, hip and hcc entries by their ELF;
        // `isCodeObjectCompatibleWithDevice`: generic by the ELF's generic version.
        Unbundler64::Legacy => (legacy_target(code)?, code.generic_version.is_some_and(|g| g >= 1)),
        // `extractCodeObjectFromFatBinaryUsingComgr`: the bundler matches the requested IDs;
        // 6.4.1 on requests the generic target too, and takes an ID naming "generic" as one.
        Unbundler64::Compressed => {
            let id = comgr_target(code.entry_id?)?;
            (id, rt == Runtime::Rocm64 && processor_of(id).contains("generic"))
        }
    };
    let processor = processor_of(id);
    if !features_agree(id, dev) {
        return None;
    }
    if processor == dev.processor && !generic {
        return Some(Via::Native);
    }
    // No comgr query with the device's features: a feature the generic target lacks is no
    // refusal here (a gfx906 loads gfx9-generic code).
    (generic && map(processor)).then_some(Via::Generic)
}

/// The target the legacy unbundler reads from an entry (clr 6.4 `hip_code_object.cpp`
/// `getTripleTargetID`, `isCodeObjectCompatibleWithDevice`): a `hipv4` entry's ID after
/// `amdgcn-amd-amdhsa--`, features only in the order sramecc, xnack (`getTargetIDValue`); a
/// `hip` or `hcc` entry's ELF (so pre-4.1 IDs load); nothing for other kinds.
fn legacy_target(code: CodeTarget<'_>) -> Option<&str> {
    let (kind, rest) = code.entry_id?.split_once('-')?;
    match kind {
        "hipv4" => {
            let id = rest.trim_end_matches('\0').strip_prefix("amdgcn-amd-amdhsa--")?;
            let mut parts = id.split(':').skip(1).peekable();
            let mut take =
                |name: &str| parts.next_if(|f| f.strip_prefix(name).is_some_and(|m| m == "+" || m == "-"));
            let _ = (take("sramecc"), take("xnack"));
            parts.next().is_none().then_some(id)
        }
        "hip" | "hcc" => Some(code.target_id),
        _ => None,
    }
}

/// The generic target `processor`'s device is mapped to by a runtime's own map (`hip_generic`,
/// from `hip_generic_since`, else 6.4).
fn generic_map<'t>(processor: &str, targets: &'t Targets, rt: Runtime) -> Option<&'t str> {
    let t = targets.by_name(processor).filter(|t| t.hip_generic)?;
    let since = t.hip_generic_since.as_deref().map_or((6, 4), |v| {
        let (a, b) = v.split_once('.').unwrap_or((v, "0"));
        (a.parse().unwrap_or(u32::MAX), b.parse().unwrap_or(0))
    });
    (since <= rt.generic_line()).then_some(t.generic.as_deref()?)
}

/// The code object a device loads from one code group (one fat binary, one file): native
/// before generic, each the first in group order — except for a group HIP 6.4 sends to its
/// legacy unbundler, which takes the first compatible entry in bundle order, generic or not
/// (`extractCodeObjectFromFatBinary` stops once every device of the process has code: for one
/// GPU, a generic entry before the native one wins).
pub fn pick<'g, T>(
    group: &'g [T],
    code: impl Fn(&T) -> CodeTarget,
    dev: &DeviceTarget,
    targets: &Targets,
    rt: Runtime,
) -> Option<(&'g T, Via)> {
    let path =
        matches!(rt, Runtime::Rocm64 | Runtime::Rocm640).then(|| Unbundler64::of(group.iter().map(&code)));
    let via_of = |c: &T| match path {
        Some(p) => loads_64(code(c), dev, targets, rt, p),
        None => loads_by_comgr(code(c), dev, targets, rt),
    };
    if path == Some(Unbundler64::Legacy) {
        return group.iter().find_map(|c| via_of(c).map(|v| (c, v)));
    }
    [Via::Native, Via::Generic]
        .into_iter()
        .find_map(|via| group.iter().find(|c| via_of(c) == Some(via)).map(|c| (c, via)))
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
            _ if rt == Runtime::Rocm640 && c.compressed => {
                Some(NearMiss::NotAskedInCompressed(g.to_string()))
            }
            // HIP 6.4 asks no query comgr could refuse for the feature.
            Some(_) if matches!(rt, Runtime::Rocm64 | Runtime::Rocm640) => None,
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
        CodeTarget { target_id: id, generic_version: generic, entry_id: entry, compressed: false }
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
        let of = |v: &str| Runtime::of_version(v, &t);
        assert_eq!(
            [of("5.7.31921"), of("6.2.41133"), of("6.4.43484"), of("7"), of("7.2.0")],
            [Runtime::Rocm5, Runtime::Rocm6, Runtime::Rocm64, Runtime::Rocm7, Runtime::Rocm7]
        );
        // The release table gives HIP 6.4.43482 to 6.4.0, 6.4.43483 to 6.4.1.
        assert_eq!(
            [of("6.4.43482"), of("6.4.43483"), of("6.4.43400")],
            [Runtime::Rocm640, Runtime::Rocm64, Runtime::Rocm640]
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

    /// A bundle entry as HIP 6.4 sees it: its ID, its ELF's target and generic version, and
    /// whether its bundle is compressed.
    fn entry<'a>(id: &'a str, elf: &'a str, generic: Option<u8>, compressed: bool) -> CodeTarget<'a> {
        CodeTarget { target_id: elf, generic_version: generic, entry_id: Some(id), compressed }
    }

    fn picked64(group: &[CodeTarget], d: &str, rt: Runtime) -> Option<(String, Via)> {
        let t = Targets::builtin();
        pick(group, |c| *c, &dev(d), &t, rt)
            .map(|(c, via)| (c.entry_id.unwrap_or(c.target_id).to_string(), via))
    }

    const G9: &str = "hipv4-amdgcn-amd-amdhsa--gfx9-generic";
    const G11: &str = "hipv4-amdgcn-amd-amdhsa--gfx11-generic";
    const N1100: &str = "hipv4-amdgcn-amd-amdhsa--gfx1100";

    /// clr 6.4 `ExtractFatBinary`: an uncompressed bundle holding generic code goes to the
    /// legacy unbundler, whose `isCodeObjectCompatibleWithDevice` maps the device to its generic
    /// target without comgr's feature check: a gfx906 loads gfx9-generic code (7.x: never);
    /// a feature the code states must still equal the device's.
    #[test]
    fn hip_6_4_legacy_unbundler_gives_gfx906_gfx9_generic_code() {
        for rt in [Runtime::Rocm64, Runtime::Rocm640] {
            let g = [entry(G9, "gfx9-generic", Some(1), false)];
            assert_eq!(picked64(&g, "gfx906:sramecc+:xnack-", rt), Some((G9.into(), Via::Generic)));
            let gx = [entry(
                "hipv4-amdgcn-amd-amdhsa--gfx9-generic:xnack-",
                "gfx9-generic:xnack-",
                Some(1),
                false,
            )];
            assert!(picked64(&gx, "gfx906:sramecc-:xnack-", rt).is_some());
            let gx = [entry(
                "hipv4-amdgcn-amd-amdhsa--gfx9-generic:xnack+",
                "gfx9-generic:xnack+",
                Some(1),
                false,
            )];
            assert_eq!(picked64(&gx, "gfx906:sramecc+:xnack-", rt), None);
        }
        let g = [entry(G9, "gfx9-generic", Some(1), false)];
        assert_eq!(picked64(&g, "gfx906:sramecc+:xnack-", Runtime::Rocm7), None);
    }

    /// `extractCodeObjectFromFatBinary` walks entries in bundle order and stops once every
    /// device of the process has code: for one GPU a generic entry listed first wins (7.x:
    /// native first); listed after the native one, it does not.
    #[test]
    fn hip_6_4_legacy_unbundler_takes_the_first_compatible_entry() {
        let first = [entry(G11, "gfx11-generic", Some(1), false), entry(N1100, "gfx1100", None, false)];
        assert_eq!(picked64(&first, "gfx1100", Runtime::Rocm64), Some((G11.into(), Via::Generic)));
        assert_eq!(picked64(&first, "gfx1100", Runtime::Rocm7), Some((N1100.into(), Via::Native)));
        let last = [entry(N1100, "gfx1100", None, false), entry(G11, "gfx11-generic", Some(1), false)];
        assert_eq!(picked64(&last, "gfx1100", Runtime::Rocm64), Some((N1100.into(), Via::Native)));
        let g906 = [
            entry(G9, "gfx9-generic", Some(1), false),
            entry("hipv4-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-", "gfx906:sramecc+:xnack-", None, false),
        ];
        assert_eq!(
            picked64(&g906, "gfx906:sramecc+:xnack-", Runtime::Rocm64),
            Some((G9.into(), Via::Generic))
        );
    }

    /// clr 6.4's generic map has no gfx1152 or gfx1153 (`hip_generic_since = "7.0"`).
    #[test]
    fn hip_6_4_maps_no_gfx1152_or_gfx1153() {
        let g = [entry(G11, "gfx11-generic", Some(1), false)];
        for d in ["gfx1152", "gfx1153"] {
            assert_eq!(picked64(&g, d, Runtime::Rocm64), None, "{d}");
            assert!(picked64(&g, d, Runtime::Rocm7).is_some(), "{d}");
        }
        assert!(picked64(&g, "gfx1151", Runtime::Rocm64).is_some());
    }

    /// `getTripleTargetID`: `hip` and `hcc` entries are read by their ELF in the legacy
    /// unbundler, so a pre-4.1 ID loads there (never through comgr) and an ELF stating another
    /// mode than its ID is refused; a `hipv4` ID needs its features in the order sramecc, xnack.
    #[test]
    fn hip_6_4_legacy_unbundler_reads_hip_entries_by_their_elf() {
        let g = entry(G9, "gfx9-generic", Some(1), false);
        let old = entry("hip-amdgcn-amd-amdhsa-gfx900", "gfx900:xnack-", None, false);
        assert_eq!(
            picked64(&[old, g], "gfx900:xnack-", Runtime::Rocm64),
            Some(("hip-amdgcn-amd-amdhsa-gfx900".into(), Via::Native))
        );
        assert_eq!(
            picked64(&[old], "gfx900:xnack-", Runtime::Rocm64),
            None,
            "no generic code: comgr, which never reads four parts"
        );
        let plus = entry("hip-amdgcn-amd-amdhsa--gfx906", "gfx906:sramecc+:xnack+", None, false);
        assert_eq!(
            picked64(&[plus, g], "gfx906:sramecc+:xnack-", Runtime::Rocm64),
            Some((G9.into(), Via::Generic))
        );
        let odd =
            entry("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-:sramecc+", "gfx90a:sramecc+:xnack-", None, false);
        let g94 = entry("hipv4-amdgcn-amd-amdhsa--gfx9-4-generic", "gfx9-4-generic", Some(1), false);
        assert_eq!(picked64(&[odd, g94], "gfx90a:sramecc+:xnack-", Runtime::Rocm64), None);
        assert!(
            picked64(&[odd], "gfx90a:sramecc+:xnack-", Runtime::Rocm64).is_some(),
            "comgr takes any order"
        );
    }

    /// Compressed bundles go to comgr's unbundle action: 6.4.0 asks for the device's own code
    /// only; 6.4.1 on also for its generic target, without comgr's feature check.
    #[test]
    fn hip_6_4_compressed_bundles_ask_for_generic_code_from_6_4_1() {
        let g = [entry(G11, "gfx11-generic", Some(1), true)];
        assert_eq!(picked64(&g, "gfx1100", Runtime::Rocm640), None);
        assert_eq!(picked64(&g, "gfx1100", Runtime::Rocm64), Some((G11.into(), Via::Generic)));
        let g9 = [entry(G9, "gfx9-generic", Some(1), true)];
        assert!(picked64(&g9, "gfx906:sramecc+:xnack-", Runtime::Rocm64).is_some());
        // Native before generic, whatever the order.
        let both = [entry(G11, "gfx11-generic", Some(1), true), entry(N1100, "gfx1100", None, true)];
        assert_eq!(picked64(&both, "gfx1100", Runtime::Rocm64), Some((N1100.into(), Via::Native)));
        let t = Targets::builtin();
        let miss = near_miss(&g, |c| *c, &dev("gfx1100"), &t, Runtime::Rocm640);
        assert_eq!(miss, Some(NearMiss::NotAskedInCompressed("gfx11-generic".into())));
    }

    /// Without generic code an uncompressed bundle goes to comgr, asked for the device's ISA
    /// only, as 6.0-6.3.
    #[test]
    fn hip_6_4_bundles_without_generic_code_go_to_comgr() {
        let g = [
            entry(N1100, "gfx1100", None, false),
            entry("hipv4-amdgcn-amd-amdhsa--gfx1030", "gfx1030", None, false),
        ];
        assert_eq!(
            picked64(&g, "gfx1030", Runtime::Rocm64),
            Some(("hipv4-amdgcn-amd-amdhsa--gfx1030".into(), Via::Native))
        );
        assert_eq!(picked64(&g, "gfx1151", Runtime::Rocm64), None);
    }
}
