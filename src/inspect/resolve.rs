//! Resolution: raw code-object facts to targets, through `targets.toml`.
//!
//! The processor comes from `EF_AMDGPU_MACH` for code object V3+ and from the ISA note for V2.
//! The canonical target ID follows ROCm (clr `hip_code_object.cpp`, ROCr `amd_hsa_code.cpp`):
//! V3 single bits mean on, and an unset bit means off where the processor supports the feature;
//! V4+ two-bit fields mean unsupported/any/off/on and only off and on are written; features go
//! in the order sramecc, xnack. A machine value the table does not know stays visible as
//! `unknown-0x5c`; it is never dropped.

use crate::parse::elf::CodeObject;
use crate::parse::elf::Header;
use crate::vocab::target_id::{target_id, Setting};
use crate::vocab::targets::Targets;

/// `EF_AMDGPU_MACH` mask.
pub const EF_AMDGPU_MACH: u32 = 0xff;
/// V3 feature bits.
pub const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
pub const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;
/// V4+ feature fields and their values.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
/// Generic version field (V6+).
pub const EF_AMDGPU_GENERIC_VERSION_OFFSET: u32 = 24;

/// The target a code object is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Processor name (`gfx90a`, `gfx11-generic`, `unknown-0x5c`).
    pub processor: String,
    /// Canonical target ID (`gfx90a:sramecc+:xnack-`).
    pub target_id: String,
    /// Generic version (V6+ generic code objects), else `None`.
    pub generic_version: Option<u8>,
    /// True when the table knows the processor.
    pub known: bool,
}

/// Name for a machine value the table lacks.
pub fn unknown_mach(mach: u32) -> String {
    format!("unknown-{mach:#04x}")
}

fn v4_setting(flags: u32, mask: u32) -> Setting {
    let unit = mask & mask.wrapping_neg(); // lowest set bit of the field
    match (flags & mask) / unit {
        2 => Setting::Off,
        3 => Setting::On,
        _ => Setting::Any,
    }
}

/// Resolves the processor and target ID of a code object.
pub fn resolve_code_object(co: &CodeObject, targets: &Targets) -> Resolved {
    let h: &Header = &co.header;
    let version = h.code_object_version();
    if version == Some(2) {
        return resolve_v2(co, targets);
    }
    resolve_flags(h.e_flags, version, targets)
}

/// The processor, target ID and generic version `e_flags` state for a code object of
/// `version` 3 or later (V2 names its processor in a note instead).
pub fn resolve_flags(e_flags: u32, version: Option<u8>, targets: &Targets) -> Resolved {
    let mach = e_flags & EF_AMDGPU_MACH;
    let target = targets.by_mach(mach);
    let processor = target.map_or_else(|| unknown_mach(mach), |t| t.name.clone());
    let supports = |f: &str| target.is_some_and(|t| t.supports(f));
    let (sramecc, xnack) = if version == Some(3) {
        let bit = |mask: u32, f: &str| {
            if e_flags & mask != 0 {
                Setting::On
            } else if supports(f) {
                Setting::Off
            } else {
                Setting::Any
            }
        };
        (bit(EF_AMDGPU_FEATURE_SRAMECC_V3, "sramecc"), bit(EF_AMDGPU_FEATURE_XNACK_V3, "xnack"))
    } else {
        (v4_setting(e_flags, EF_AMDGPU_FEATURE_SRAMECC_V4), v4_setting(e_flags, EF_AMDGPU_FEATURE_XNACK_V4))
    };
    let generic_version = match version {
        Some(v) if v >= 6 => Some((e_flags >> EF_AMDGPU_GENERIC_VERSION_OFFSET) as u8).filter(|&g| g > 0),
        _ => None,
    };
    Resolved {
        target_id: target_id(&processor, sramecc, xnack),
        processor,
        generic_version,
        known: target.is_some(),
    }
}

/// V2: the processor is in `NT_AMD_HSA_ISA_VERSION`; old ISA versions imply features.
fn resolve_v2(co: &CodeObject, targets: &Targets) -> Resolved {
    let Some(v) = co.notes.isa_version else {
        let name = co.notes.isa_name.clone().unwrap_or_else(|| "unknown-v2".to_string());
        return Resolved { processor: name.clone(), target_id: name, generic_version: None, known: false };
    };
    if let Some((t, features)) = targets.by_v2_isa(v) {
        let target_id = if features.is_empty() { t.name.clone() } else { format!("{}:{features}", t.name) };
        return Resolved { processor: t.name.clone(), target_id, generic_version: None, known: true };
    }
    // Not in the table: the naming rule gfx + dec(major) + hex(minor) + hex(stepping).
    let name = format!("gfx{}{:x}{:x}", v.0, v.1, v.2);
    let known = targets.by_name(&name).is_some();
    Resolved { processor: name.clone(), target_id: name, generic_version: None, known }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::elf::parse_code_object;
    use crate::testing::{code_object, CodeObjectSpec};

    fn resolve(spec: CodeObjectSpec) -> Resolved {
        let bytes = code_object(&spec);
        let co = parse_code_object(&bytes, Some(bytes.len() as u64)).expect("parses");
        resolve_code_object(&co, &Targets::builtin())
    }

    #[test]
    fn v4_settings() {
        assert_eq!(resolve(CodeObjectSpec::v4(0x3f, 0x100 | 0x400, &[])).target_id, "gfx90a");
        assert_eq!(resolve(CodeObjectSpec::v4(0x3f, 0x300, &[])).target_id, "gfx90a:xnack+");
        assert_eq!(resolve(CodeObjectSpec::v4(0x3f, 0x200 | 0xc00, &[])).target_id, "gfx90a:sramecc+:xnack-");
        assert_eq!(resolve(CodeObjectSpec::v4(0x41, 0, &[])).target_id, "gfx1100");
    }

    #[test]
    fn v3_unset_bits_mean_off_where_supported() {
        assert_eq!(resolve(CodeObjectSpec::new(1, 0x2f, &[])).target_id, "gfx906:sramecc-:xnack-");
        assert_eq!(resolve(CodeObjectSpec::new(1, 0x2f | 0x100, &[])).target_id, "gfx906:sramecc-:xnack+");
        assert_eq!(resolve(CodeObjectSpec::new(1, 0x36, &[])).target_id, "gfx1030");
    }

    #[test]
    fn generic_version_and_unknown_machines() {
        let r = resolve(CodeObjectSpec::new(4, 0x54 | (1 << 24), &[]));
        assert_eq!((r.processor.as_str(), r.generic_version), ("gfx11-generic", Some(1)));
        let r = resolve(CodeObjectSpec::new(4, 0xfe, &[]));
        assert_eq!(r.processor, "unknown-0xfe");
        assert!(!r.known);
    }

    #[test]
    fn v2_processor_from_the_isa_note() {
        let r = resolve(CodeObjectSpec::v2((9, 0, 0), &[]));
        assert_eq!(r.processor, "gfx900");
        let r = resolve(CodeObjectSpec::v2((8, 0, 3), &[]));
        assert_eq!(r.processor, "gfx803");
    }
}
