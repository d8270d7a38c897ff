//! Target IDs: `processor[:sramecc±][:xnack±]` built, parsed and split. Whether code for one
//! target loads on a device is `vocab::runtime`'s one rule.

use serde::Serialize;

use crate::vocab::targets::Targets;

/// The processor of a target ID (`gfx90a:xnack-` → `gfx90a`).
pub fn processor_of(target_id: &str) -> &str {
    target_id.split(':').next().unwrap_or(target_id)
}

/// A feature setting as a code object states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Setting {
    /// Not stated: runs either way ("any", or the processor lacks the feature).
    Any,
    Off,
    On,
}

/// Builds `processor[:sramecc±][:xnack±]` from settings.
pub fn target_id(processor: &str, sramecc: Setting, xnack: Setting) -> String {
    let mut id = processor.to_string();
    for (name, s) in [("sramecc", sramecc), ("xnack", xnack)] {
        match s {
            Setting::On => id.push_str(&format!(":{name}+")),
            Setting::Off => id.push_str(&format!(":{name}-")),
            Setting::Any => {}
        }
    }
    id
}

/// A GPU target with feature settings as far as known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceTarget {
    pub processor: String,
    #[serde(skip)]
    pub sramecc: Setting,
    #[serde(skip)]
    pub xnack: Setting,
    /// Canonical target ID (`gfx90a:sramecc+:xnack-`); unknown features are left out.
    pub target_id: String,
}

impl DeviceTarget {
    /// A target with the settings known of it; its target ID is built from them.
    pub fn new(processor: &str, sramecc: Setting, xnack: Setting) -> Self {
        DeviceTarget {
            processor: processor.to_string(),
            sramecc,
            xnack,
            target_id: target_id(processor, sramecc, xnack),
        }
    }
}

/// Parses a target ID as users write it (`gfx1151`, `GFX90a:xnack+`, `gfx906:sramecc-:xnack+`),
/// case folded. A generic target is refused: it is a kind of code object, not a GPU.
pub fn parse_target_id(s: &str, targets: &Targets) -> Result<DeviceTarget, String> {
    let lower = s.trim().to_ascii_lowercase();
    let mut parts = lower.split(':');
    let processor = parts.next().unwrap_or("");
    let t = targets
        .by_name(processor)
        .ok_or_else(|| format!("unknown GPU target {processor:?} (see `gfxscan targets`)"))?;
    if t.is_generic() {
        let members: Vec<&str> = targets
            .iter()
            .filter(|d| d.generic.as_deref() == Some(processor))
            .map(|d| d.name.as_str())
            .collect();
        return Err(format!(
            "{processor} is a generic code-object target, not a GPU; did you mean {}?",
            members.join(", ")
        ));
    }
    let (mut sramecc, mut xnack) = (Setting::Any, Setting::Any);
    for f in parts {
        let (name, setting) = match (f.strip_suffix('+'), f.strip_suffix('-')) {
            (Some(n), _) => (n, Setting::On),
            (_, Some(n)) => (n, Setting::Off),
            _ => return Err(format!("{s}: feature {f:?} needs + or -")),
        };
        if !t.supports(name) {
            return Err(format!("{s}: {processor} has no {name:?} feature"));
        }
        match name {
            "sramecc" => sramecc = setting,
            _ => xnack = setting,
        }
    }
    Ok(DeviceTarget::new(&t.name, sramecc, xnack))
}

/// A `gfx_target_version` as its `(major, minor, stepping)`.
pub fn split_version(v: u32) -> (u32, u32, u32) {
    (v / 10000, v / 100 % 100, v % 100)
}

/// The processor name of an ISA version: `gfx` + decimal major + hex minor + hex stepping.
pub fn version_name((major, minor, step): (u32, u32, u32)) -> String {
    format!("gfx{major}{minor:x}{step:x}")
}

/// The sramecc and xnack settings a target ID states (`gfx90a:xnack-` → any, off).
pub fn settings(target_id: &str) -> (Setting, Setting) {
    let (mut s, mut x) = (Setting::Any, Setting::Any);
    for f in target_id.split(':').skip(1) {
        let v = if f.ends_with('+') { Setting::On } else { Setting::Off };
        if f.starts_with("sramecc") {
            s = v;
        } else if f.starts_with("xnack") {
            x = v;
        }
    }
    (s, x)
}
