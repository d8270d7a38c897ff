//! Target IDs: `processor[:sramecc±][:xnack±]` built, parsed and split. Whether code for one
//! target loads on a device is `vocab::runtime`'s one rule.

use serde::Serialize;

use crate::vocab::targets::{Target, Targets};

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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
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

/// Letters and digits only, lower case: how product names are compared (`RX 6700 XT`,
/// `rx6700xt` and `Radeon RX 6700 XT` all read `…rx6700xt`).
fn folded(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// The edit distance of two short names (for suggestions).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// A processor as people name it: its name (`gfx1031`, case folded), a product (`rx6700xt`,
/// `"RX 6700 XT"`, `Radeon VII`: `targets.toml` `products`, letters and digits compared), or
/// a KFD version in the `HSA_OVERRIDE_GFX_VERSION` spelling (`10.3.0`) or `gfx_target_version`
/// (`100300`). An unknown name is refused with the closest targets and their products.
pub fn resolve_processor<'t>(name: &str, targets: &'t Targets) -> Result<&'t Target, String> {
    // Compatibility forms (full-width `ＧＦＸ１１００`, ligatures) read as what they stand for.
    let name = &unicode_normalization::UnicodeNormalization::nfkc(name).collect::<String>();
    let lower = name.trim().to_ascii_lowercase();
    if let Some(t) = targets.by_name(&lower) {
        return Ok(t);
    }
    let version = match lower.split('.').map(|p| p.parse::<u32>().ok()).collect::<Option<Vec<u32>>>() {
        Some(v) if v.len() == 3 && v[1] < 100 && v[2] < 100 => Some(v[0] * 10000 + v[1] * 100 + v[2]),
        Some(v) if v.len() == 1 && v[0] >= 10000 => Some(v[0]),
        _ => None,
    };
    if let Some(t) = version.and_then(|v| targets.iter().find(|t| t.gfx_target_version == Some(v))) {
        return Ok(t);
    }
    let key = folded(name);
    let by_product: Vec<&Target> = targets
        .iter()
        .filter(|t| {
            key.len() >= 4 && t.products.iter().any(|p| folded(p) == key || folded(p).ends_with(&key))
        })
        .collect();
    let by_product = match by_product.is_empty() {
        true => by_family(name, targets),
        false => by_product,
    };
    match by_product.as_slice() {
        [one] => return Ok(one),
        [] => {}
        many => {
            let list: Vec<String> = many.iter().map(|t| described(t)).collect();
            return Err(format!("{name:?} names products of several targets: {}", list.join(", ")));
        }
    }
    let mut near: Vec<(usize, &Target)> =
        targets.iter().filter(|t| !t.is_generic()).map(|t| (distance(&lower, &t.name), t)).collect();
    near.sort_by_key(|(d, t)| (*d, targets.rank(&t.name)));
    let list: Vec<String> = near.iter().take(3).map(|(_, t)| described(t)).collect();
    Err(format!(
        "unknown GPU target {name:?}; closest: {} (a name, a product such as \"RX 6700 XT\", or a version such as 10.3.0; `gfxscan targets` lists them)",
        list.join(", ")
    ))
}

/// The targets with a product whose words hold `name`'s words in a row, a number among them:
/// a product family (`RX 7900` → the 7900 XTX, XT and GRE, all gfx1100).
fn by_family<'t>(name: &str, targets: &'t Targets) -> Vec<&'t Target> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let want = words(name);
    if !want.iter().any(|w| w.chars().any(|c| c.is_ascii_digit())) {
        return Vec::new();
    }
    targets
        .iter()
        .filter(|t| t.products.iter().any(|p| words(p).windows(want.len()).any(|run| run == want.as_slice())))
        .collect()
}

/// A target with its first product, for messages (`gfx1031 (Radeon RX 6700 XT)`).
fn described(t: &Target) -> String {
    match t.products.first() {
        Some(p) => format!("{} ({p})", t.name),
        None => t.name.clone(),
    }
}

/// Parses a target ID as users write it (`gfx1151`, `GFX90a:xnack+`, `gfx906:sramecc-:xnack+`,
/// or a product or version in place of the processor: `rx6700xt`, `10.3.0:xnack-`), case
/// folded. A generic target is refused: it is a kind of code object, not a GPU.
pub fn parse_target_id(s: &str, targets: &Targets) -> Result<DeviceTarget, String> {
    let s = &unicode_normalization::UnicodeNormalization::nfkc(s).collect::<String>();
    let lower = s.trim().to_ascii_lowercase();
    let mut parts = lower.split(':');
    let given = parts.next().unwrap_or("");
    let t = resolve_processor(s.trim().split(':').next().unwrap_or(given), targets)?;
    let processor = t.name.as_str();
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
        let slot = match name {
            "sramecc" => &mut sramecc,
            _ => &mut xnack,
        };
        // A target ID names each feature once (LLVM `AMDGPUUsage` "Target ID"; clang refuses
        // `gfx90a:xnack+:xnack-`): a second mention is an error, not the last one winning.
        if *slot != Setting::Any {
            return Err(format!("{s}: {name} is given twice; a target ID names each feature once"));
        }
        *slot = setting;
    }
    Ok(DeviceTarget::new(&t.name, sramecc, xnack))
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
