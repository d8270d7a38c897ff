//! The table of GPU targets (`targets.toml`): loading, validation and lookup.
//!
//! The built-in table is the top-level `targets.toml`, embedded at build time; `--targets FILE`
//! replaces it. Loading happens in two steps (the cargo-deny pattern): serde reads a
//! [`RawTargets`] that refuses unknown fields, then [`RawTargets::validate`] checks every rule and
//! reports all broken ones at once, each naming its entry. Code elsewhere holds no per-target
//! facts: it asks [`Targets`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::policy::Policy;

/// A `gfx_target_version` as its `(major, minor, stepping)`.
pub fn split_version(v: u32) -> (u32, u32, u32) {
    (v / 10000, v / 100 % 100, v % 100)
}

/// The processor name of an ISA version: `gfx` + decimal major + hex minor + hex stepping.
pub fn version_name((major, minor, step): (u32, u32, u32)) -> String {
    format!("gfx{major}{minor:x}{step:x}")
}

/// The built-in table's text.
pub const BUILTIN: &str = include_str!("../../targets.toml");

/// The only `schema` value this version understands.
pub const SCHEMA: u32 = 1;

/// Target features a processor can support, in canonical (alphabetical) order.
pub const FEATURES: [&str; 2] = ["sramecc", "xnack"];

/// One `[[target]]` as written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
// Strict when read from a file; open when written, as every document is (`crate::schema`).
#[schemars(!deny_unknown_fields)]
pub struct Target {
    /// Processor name as LLVM spells it (`gfx90a`, `gfx11-generic`, `cypress`).
    pub name: String,
    /// `EF_AMDGPU_MACH` value in `e_flags`.
    pub mach: u32,
    /// Generation (`gfx9`, `gfx10.3`, ...).
    pub family: String,
    /// The generic target whose code this processor runs, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic: Option<String>,
    /// True when the HIP runtime itself falls back to `generic` for this processor: clr
    /// `hipamd/src/hip_fatbin.cpp` `TargetGenericMap` lists it (ROCm 7.x). LLVM's generic
    /// targets cover more processors than the runtime maps (gfx940, gfx941, gfx1250: none in 7.2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hip_generic: bool,
    /// With `hip_generic`: the first HIP runtime line whose map has it, when that is not 6.4
    /// (where generic targets began): clr 6.4's map leaves out gfx1152 and gfx1153 (`"7.0"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hip_generic_since: Option<String>,
    /// On generic targets: the generic version LLVM emits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic_version: Option<u32>,
    /// Supported target features, a subset of [`FEATURES`] in that order.
    pub features: Vec<String>,
    /// KFD `gfx_target_version` of the processor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gfx_target_version: Option<u32>,
    /// The target whose ISA this one runs, the usual `HSA_OVERRIDE_GFX_VERSION` destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa_compatible: Option<String>,
    /// Linux amdgpu firmware name prefixes of this processor's graphics IP.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub firmware: Vec<String>,
    /// Code object V2 ISA versions (`major.minor.stepping[:features]`) naming this processor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub v2_isa: Vec<String>,
    /// AOTriton's group folders (`aotriton.images/amd-<pack>`) holding this processor's kernels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aotriton_packs: Vec<String>,
    /// PyTorch sends this target's GEMMs to hipBLASLt by default (see targets.toml's sources).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pytorch_hipblaslt: bool,
    /// Products built on this processor, as people know them (`Radeon RX 6700 XT`), most
    /// familiar first; the first is shown beside the target name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<String>,
    /// MIOpen database arch name when it differs from `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miopen: Option<String>,
    /// Where the facts come from.
    pub source: String,
}

impl Target {
    /// True for `gfx…-generic` targets.
    pub fn is_generic(&self) -> bool {
        self.name.ends_with("-generic")
    }

    /// True when the processor supports `feature` (`xnack` or `sramecc`).
    pub fn supports(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }
}

/// The file as read, before validation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTargets {
    schema: u32,
    #[serde(default)]
    target: Vec<Target>,
    #[serde(default)]
    release: Vec<super::policy::Release>,
    #[serde(default)]
    therock: Vec<super::policy::TheRockRelease>,
    #[serde(default)]
    therock_exclusion: Vec<super::policy::TheRockExclusion>,
    #[serde(default)]
    therock_family: Vec<super::policy::TheRockFamily>,
    #[serde(default)]
    build_filter: Vec<super::policy::BuildFilter>,
}

/// A validated table with its indexes.
#[derive(Debug, Clone)]
pub struct Targets {
    list: Vec<Target>,
    by_mach: BTreeMap<u32, usize>,
    by_name: BTreeMap<String, usize>,
    by_v2_isa: BTreeMap<(u32, u32, u32), (usize, String)>,
    /// Each target's place in the natural order ([`natural_order`]).
    natural: BTreeMap<String, usize>,
    /// Vendor policy: releases, TheRock, build filters.
    policy: Policy,
    /// Where the table came from: `built-in` or a path.
    pub origin: String,
    /// The SHA-256 of the table's text, as hex: facts read with one table are reused
    /// (`scan --reuse`) only by a scan with the same table.
    pub digest: String,
}

/// The target table as `targets --json` writes it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct TargetsDocument<'a> {
    /// Where the table came from: `built-in`, or the path given with `--targets`.
    pub origin: &'a str,
    /// Every target, in the table's order.
    pub targets: Vec<&'a Target>,
    /// Vendor policy: which releases list which targets, TheRock's targets, build filters.
    pub policy: &'a Policy,
}

impl Targets {
    /// The table as its JSON document.
    pub fn document(&self) -> TargetsDocument<'_> {
        TargetsDocument { origin: &self.origin, targets: self.list.iter().collect(), policy: &self.policy }
    }

    /// Vendor policy (`vocab::policy`).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }
}

/// The version a `gfx` processor name spells: `gfx90a` → (9, 0, 10), `gfx1151` → (11, 5, 1).
/// The last two characters are the minor version and the stepping (a hex digit), the digits
/// before them the major version. `None` for other names (`cypress`, generic targets).
pub fn gfx_version(name: &str) -> Option<(u32, u32, u32)> {
    let digits = name.strip_prefix("gfx")?;
    if digits.len() < 3 || !digits.is_ascii() {
        return None;
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    let mut rest = rest.chars();
    let minor = rest.next()?.to_digit(10)?;
    let stepping = rest.next()?.to_digit(16)?;
    Some((major.parse().ok()?, minor, stepping))
}

/// The order people read targets in: generation, then number (gfx600 … gfx90a, gfx942,
/// gfx950, gfx1010 … gfx1201, gfx1250), names without a gfx version (R600-era) first in file
/// order, and each generic target right after the last processor that names it as its
/// `generic` (with its family). Unknown names sort after all of these (see [`Targets::rank`]).
pub fn natural_order(list: &[Target]) -> Vec<&str> {
    let mut specific: Vec<(usize, &Target)> = list.iter().filter(|t| !t.is_generic()).enumerate().collect();
    specific.sort_by_key(|(i, t)| (gfx_version(&t.name), *i));
    let mut out: Vec<&str> = Vec::with_capacity(list.len());
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    for (k, (_, t)) in specific.iter().enumerate() {
        out.push(&t.name);
        // A generic target follows the last of its processors in this order.
        if let Some(g) = t.generic.as_deref() {
            let later = specific[k + 1..].iter().any(|(_, u)| u.generic.as_deref() == Some(g));
            if !later && placed.insert(g) {
                out.push(g);
            }
        }
    }
    // Generic targets no processor names go last, in file order.
    out.extend(
        list.iter().filter(|t| t.is_generic() && !placed.contains(t.name.as_str())).map(|t| t.name.as_str()),
    );
    out
}

/// Parses `major.minor.stepping[:features]` from a `v2_isa` value.
fn parse_v2_isa(s: &str) -> Option<((u32, u32, u32), String)> {
    let (ver, feats) = s.split_once(':').map_or((s, ""), |(v, f)| (v, f));
    let mut it = ver.split('.').map(|p| p.parse::<u32>().ok());
    let v = (it.next()??, it.next()??, it.next()??);
    if it.next().is_some() {
        return None;
    }
    Some((v, feats.to_string()))
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !n.starts_with('-')
        && !n.ends_with('-')
}

/// What is wrong with one entry on its own: its name, machine value, features, generic fields.
fn entry_errors(t: &Target, who: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if !valid_name(&t.name) {
        errs.push(format!("{who}: name must be lowercase letters, digits and '-'"));
    }
    if !(1..=0xff).contains(&t.mach) {
        errs.push(format!("{who}: mach {:#x} is outside EF_AMDGPU_MACH (0x001..0x0ff)", t.mach));
    }
    let mut last = None;
    for f in &t.features {
        match FEATURES.iter().position(|k| k == f) {
            None => errs.push(format!("{who}: unknown feature {f:?} (known: sramecc, xnack)")),
            Some(p) if last.is_some_and(|l| p <= l) => {
                errs.push(format!("{who}: features must be unique and in the order sramecc, xnack"))
            }
            Some(p) => last = Some(p),
        }
    }
    if t.is_generic() {
        if t.generic.is_some() {
            errs.push(format!("{who}: a generic target cannot itself name a generic"));
        }
        if t.generic_version.is_none_or(|v| !(1..=255).contains(&v)) {
            errs.push(format!("{who}: generic targets need generic_version 1..255"));
        }
    } else if t.generic_version.is_some() {
        errs.push(format!("{who}: generic_version is only for generic targets"));
    }
    // The override takes the version as libhsakmt does (`check::devices::parse_override`).
    if let Some((major, _, _)) = t.gfx_target_version.map(split_version) {
        if major > 63 {
            errs.push(format!("{who}: gfx_target_version major {major} is out of range (at most 63)"));
        }
    }
    if t.hip_generic && t.generic.is_none() {
        errs.push(format!("{who}: hip_generic needs a generic target"));
    }
    match t.hip_generic_since.as_deref() {
        Some(_) if !t.hip_generic => errs.push(format!("{who}: hip_generic_since needs hip_generic")),
        Some(v) if !matches!(v.split_once('.'), Some((a, b)) if a.parse::<u8>().is_ok() && b.parse::<u8>().is_ok()) => {
            errs.push(format!("{who}: hip_generic_since {v:?} is not a release line (major.minor)"))
        }
        _ => {}
    }
    errs
}

impl RawTargets {
    /// Checks every rule; returns the table or every broken rule, each naming its entry.
    pub fn validate(self, origin: &str) -> Result<Targets, Vec<String>> {
        let mut errs = Vec::new();
        if self.schema != SCHEMA {
            errs.push(format!(
                "schema {} is not supported (this gfxscan reads schema {SCHEMA})",
                self.schema
            ));
        }
        if self.target.is_empty() {
            errs.push("no [[target]] entries".to_string());
        }
        let mut by_mach = BTreeMap::new();
        let mut by_name = BTreeMap::new();
        let mut by_v2_isa = BTreeMap::new();
        let mut firmware: BTreeMap<&str, &str> = BTreeMap::new();
        for (i, t) in self.target.iter().enumerate() {
            let who = format!("target {:?}", t.name);
            errs.extend(entry_errors(t, &who));
            if let Some(&j) = by_mach.get(&t.mach) {
                let other: &Target = &self.target[j];
                errs.push(format!("{who}: mach {:#04x} already used by {:?}", t.mach, other.name));
            } else {
                by_mach.insert(t.mach, i);
            }
            if by_name.insert(t.name.clone(), i).is_some() {
                errs.push(format!("{who}: name used twice"));
            }
            for p in &t.firmware {
                if let Some(prev) = firmware.insert(p.as_str(), t.name.as_str()) {
                    errs.push(format!("{who}: firmware prefix {p:?} already belongs to {prev:?}"));
                }
            }
            for v in &t.v2_isa {
                match parse_v2_isa(v) {
                    None => errs.push(format!("{who}: v2_isa {v:?} is not major.minor.stepping[:features]")),
                    Some((key, feats)) => {
                        if by_v2_isa.insert(key, (i, feats)).is_some() {
                            errs.push(format!("{who}: v2_isa {v:?} is listed twice"));
                        }
                    }
                }
            }
        }
        for t in &self.target {
            let who = format!("target {:?}", t.name);
            if let Some(g) = &t.generic {
                match by_name.get(g).map(|&j| &self.target[j]) {
                    Some(gt) if gt.is_generic() => {}
                    _ => errs.push(format!("{who}: generic {g:?} is not a generic target in the table")),
                }
            }
            if let Some(c) = &t.isa_compatible {
                if !by_name.contains_key(c) || c == &t.name {
                    errs.push(format!("{who}: isa_compatible {c:?} is not another target in the table"));
                }
            }
        }
        let policy = Policy {
            releases: self.release,
            therock: self.therock,
            therock_exclusions: self.therock_exclusion,
            therock_families: self.therock_family,
            build_filters: self.build_filter,
        };
        errs.extend(policy.errors(&|n| by_name.contains_key(n)));
        if !errs.is_empty() {
            return Err(errs);
        }
        let natural =
            natural_order(&self.target).into_iter().enumerate().map(|(i, n)| (n.to_string(), i)).collect();
        Ok(Targets {
            list: self.target,
            by_mach,
            by_name,
            by_v2_isa,
            natural,
            policy,
            origin: origin.to_string(),
            digest: String::new(),
        })
    }
}

impl Targets {
    /// Parses and validates a table from TOML text.
    pub fn from_toml(text: &str, origin: &str) -> Result<Targets, Vec<String>> {
        use sha2::Digest;
        let raw: RawTargets = toml::from_str(text).map_err(|e| vec![e.to_string().trim_end().to_string()])?;
        let digest = sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        raw.validate(origin).map(|t| Targets { digest, ..t })
    }

    /// The built-in table. It is tested to validate, so failure here is a build defect.
    pub fn builtin() -> Targets {
        match Targets::from_toml(BUILTIN, "built-in") {
            Ok(t) => t,
            Err(e) => unreachable!("built-in targets.toml is invalid: {e:?}"),
        }
    }

    /// Reads a table from a file; every error is reported, prefixed with the path.
    pub fn load(path: &Path) -> Result<Targets, Vec<String>> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| vec![format!("{origin}: {e}")])?;
        Targets::from_toml(&text, &origin)
            .map_err(|errs| errs.into_iter().map(|e| format!("{origin}: {e}")).collect())
    }

    /// Every target, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Target> {
        self.list.iter()
    }

    /// Number of targets.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when the table is empty (never, once validated).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The target with this `EF_AMDGPU_MACH` value.
    pub fn by_mach(&self, mach: u32) -> Option<&Target> {
        self.by_mach.get(&mach).map(|&i| &self.list[i])
    }

    /// The target with this processor name.
    pub fn by_name(&self, name: &str) -> Option<&Target> {
        self.by_name.get(name).map(|&i| &self.list[i])
    }

    /// Position of a processor in the natural order ([`natural_order`]); unknown names last.
    pub fn rank(&self, name: &str) -> usize {
        self.natural.get(name).copied().unwrap_or(usize::MAX)
    }

    /// Sorts target names into the natural order; unknown names last, by name.
    pub fn sort(&self, names: &mut [String]) {
        names.sort_by(|a, b| self.cmp(a, b));
    }

    /// Compares two target names or target IDs (`gfx90a:xnack+`) in the natural order of
    /// their processors, then by the whole text.
    pub fn cmp(&self, a: &str, b: &str) -> std::cmp::Ordering {
        let rank = |s: &str| self.rank(s.split(':').next().unwrap_or(s));
        (rank(a), a).cmp(&(rank(b), b))
    }

    /// The processor and implied features of a code object V2 ISA version.
    pub fn by_v2_isa(&self, v: (u32, u32, u32)) -> Option<(&Target, &str)> {
        self.by_v2_isa.get(&v).map(|(i, f)| (&self.list[*i], f.as_str()))
    }

    /// The longest target name that `s` starts with (MIOpen names run the CU count on:
    /// `gfx90878` is gfx908 with 0x78 CUs, so the longest known name must win).
    pub fn longest_prefix_of(&self, s: &str) -> Option<&Target> {
        self.list.iter().filter(|t| s.starts_with(t.name.as_str())).max_by_key(|t| t.name.len())
    }

    /// The target whose firmware prefixes include `prefix`.
    pub fn by_firmware(&self, prefix: &str) -> Option<&Target> {
        self.list.iter().find(|t| t.firmware.iter().any(|p| p == prefix))
    }

    /// Every firmware prefix in the table.
    pub fn firmware_prefixes(&self) -> impl Iterator<Item = &str> {
        self.list.iter().flat_map(|t| t.firmware.iter().map(String::as_str))
    }

    /// Processors whose generic target is `generic`.
    pub fn members_of(&self, generic: &str) -> BTreeSet<&str> {
        self.list.iter().filter(|t| t.generic.as_deref() == Some(generic)).map(|t| t.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_targets_validate() {
        let t = Targets::from_toml(BUILTIN, "built-in").expect("built-in table validates");
        assert!(t.len() >= 70);
        assert_eq!(t.by_mach(0x3f).map(|t| t.name.as_str()), Some("gfx90a"));
        assert_eq!(t.by_mach(0x4c).map(|t| t.name.as_str()), Some("gfx942"));
        assert_eq!(t.by_mach(0x41).map(|t| t.name.as_str()), Some("gfx1100"));
        assert_eq!(t.by_mach(0x30).map(|t| t.name.as_str()), Some("gfx908"));
        assert_eq!(t.by_name("gfx1100").and_then(|t| t.generic.as_deref()), Some("gfx11-generic"));
    }

    #[test]
    fn builtin_targets_are_sorted_by_mach() {
        let t = Targets::builtin();
        let machs: Vec<u32> = t.iter().map(|t| t.mach).collect();
        let mut sorted = machs.clone();
        sorted.sort_unstable();
        assert_eq!(machs, sorted, "keep targets.toml sorted by mach");
    }

    #[test]
    fn the_natural_order_is_generation_then_number_with_generics_beside_their_family() {
        let t = Targets::builtin();
        let order = natural_order(&t.list);
        assert_eq!(order.len(), t.len(), "every target has one place");
        let pos = |n: &str| order.iter().position(|x| *x == n).unwrap_or_else(|| panic!("{n} placed"));
        // The order the issue spells out, and the pairs EF_AMDGPU_MACH order gets wrong.
        let chain = [
            "gfx600",
            "gfx602",
            "gfx700",
            "gfx801",
            "gfx805",
            "gfx810",
            "gfx900",
            "gfx90a",
            "gfx90c",
            "gfx9-generic",
            "gfx940",
            "gfx942",
            "gfx950",
            "gfx9-4-generic",
            "gfx1010",
            "gfx1013",
            "gfx10-1-generic",
            "gfx1030",
            "gfx1036",
            "gfx10-3-generic",
            "gfx1100",
            "gfx1103",
            "gfx1150",
            "gfx1153",
            "gfx11-generic",
            "gfx1200",
            "gfx1201",
            "gfx12-generic",
            "gfx1250",
        ];
        for w in chain.windows(2) {
            assert!(pos(w[0]) < pos(w[1]), "{} before {}", w[0], w[1]);
        }
        // Every processor comes before its generic target, and every gfx name after R600-era names.
        for x in t.iter() {
            if let Some(g) = &x.generic {
                assert!(pos(&x.name) < pos(g), "{} before {g}", x.name);
            }
            if gfx_version(&x.name).is_none() && !x.is_generic() {
                assert!(pos(&x.name) < pos("gfx600"), "{} before gfx600", x.name);
            }
        }
        // rank() agrees with the order, and unknown names go last.
        assert!(t.rank("gfx1033") < t.rank("gfx1100") && t.rank("gfx1201") < t.rank("unknown-0x99"));
        let mut names =
            vec!["gfx1100".to_string(), "gfx805".into(), "zz".into(), "gfx90a".into(), "gfx1013".into()];
        t.sort(&mut names);
        assert_eq!(names, ["gfx805", "gfx90a", "gfx1013", "gfx1100", "zz"]);
    }

    #[test]
    fn gfx_versions_read_the_stepping_as_hex() {
        assert_eq!(gfx_version("gfx90a"), Some((9, 0, 10)));
        assert_eq!(gfx_version("gfx1151"), Some((11, 5, 1)));
        assert_eq!(gfx_version("gfx11-generic"), None);
        assert_eq!(gfx_version("cypress"), None);
        assert_eq!(gfx_version("gfx9"), None);
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let text = r#"
schema = 1
[[target]]
name = "gfx90a"
mach = 0x3f
family = "gfx9"
features = ["xnack", "sramecc"]
source = "x"
[[target]]
name = "gfx942"
mach = 0x3f
family = "gfx9.4"
generic = "gfx0-generic"
features = ["bogus"]
source = "x"
"#;
        let errs = Targets::from_toml(text, "t").expect_err("invalid");
        let all = errs.join("\n");
        assert!(all.contains(r#"target "gfx942": mach 0x3f already used by "gfx90a""#), "{all}");
        assert!(all.contains("unknown feature \"bogus\""), "{all}");
        assert!(all.contains("order sramecc, xnack"), "{all}");
        assert!(all.contains("gfx0-generic"), "{all}");
        assert_eq!(errs.len(), 4, "{all}");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let text = "schema = 1\n[[target]]\nname = \"gfx900\"\nmach = 0x2c\nfamily = \"gfx9\"\nfeatures = []\nsource = \"x\"\ncolour = \"red\"\n";
        let errs = Targets::from_toml(text, "t").expect_err("invalid");
        assert!(errs[0].contains("colour"), "{errs:?}");
    }

    #[test]
    fn v2_isa_lookup() {
        let t = Targets::builtin();
        let (target, _) = t.by_v2_isa((9, 0, 6)).expect("9.0.6 is in the table");
        assert_eq!(target.name, "gfx906");
    }
}
